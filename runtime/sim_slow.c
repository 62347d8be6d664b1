/* sim_slow.c: see sim_slow.h. */
#include "runtime/sim_slow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static int parse_ms(const char *p, char **end, uint64_t *ns)
{
    errno = 0;
    double v = strtod(p, end);
    if (errno || *end == p || !(v >= 0) || v > 1e9)
        return -1;
    *ns = (uint64_t)(v * 1e6);
    return 0;
}

int sim_slow_parse(const char *s, sim_slow *out, int max, int *n, char *err, size_t errlen)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *e;
        errno = 0;
        long g = strtol(p, &e, 10);
        if (errno || e == p || *e != ':' || g < 0 || g >= SIM_SLOW_MAX) {
            snprintf(err, errlen, "\"%s\": expected GPU:FACTOR[:FROM_MS-[TO_MS]], GPU 0..%d",
                     p, SIM_SLOW_MAX - 1);
            return -1;
        }
        p = e + 1;
        double f = strtod(p, &e);
        if (e == p || !(f >= 1.0) || f > 1000.0) {
            snprintf(err, errlen, "GPU %ld: factor \"%s\": expected 1..1000", g, p);
            return -1;
        }
        p = e;
        sim_slow sl = { (int)g, f, 0, UINT64_MAX };
        if (*p == ':') {
            if (parse_ms(p + 1, &e, &sl.from_ns) || *e != '-') {
                snprintf(err, errlen, "GPU %ld: window \"%s\": expected FROM_MS-[TO_MS]", g, p + 1);
                return -1;
            }
            p = e + 1;
            if (*p && *p != ',') {
                if (parse_ms(p, &e, &sl.to_ns) || sl.to_ns <= sl.from_ns) {
                    snprintf(err, errlen, "GPU %ld: window end \"%s\": expected a time in ms "
                             "after its start", g, p);
                    return -1;
                }
                p = e;
            }
        }
        if (*p && *p != ',') {
            snprintf(err, errlen, "GPU %ld: unexpected \"%s\"", g, p);
            return -1;
        }
        for (int i = 0; i < *n; i++)
            if (out[i].gpu == sl.gpu) {
                snprintf(err, errlen, "GPU %ld named twice", g);
                return -1;
            }
        if (*n == max) {
            snprintf(err, errlen, "more than %d GPUs", max);
            return -1;
        }
        out[(*n)++] = sl;
        if (*p == ',')
            p++;
    }
    return 0;
}

uint64_t sim_slow_finish(const sim_slow *s, uint64_t origin_ns, uint64_t start_ns,
                         uint64_t work_ns)
{
    if (!s || s->factor <= 1.0)
        return start_ns + work_ns;
    uint64_t a = origin_ns + s->from_ns;
    uint64_t b = s->to_ns == UINT64_MAX ? UINT64_MAX : origin_ns + s->to_ns;
    uint64_t t = start_ns, rem = work_ns;
    if (t < a) {                       /* full speed before the window */
        uint64_t d = a - t < rem ? a - t : rem;
        t += d;
        rem -= d;
    }
    if (rem && t < b) {                /* 1/factor inside it */
        double need = (double)rem * s->factor;
        if (b == UINT64_MAX || need <= (double)(b - t))
            return t + (uint64_t)need;
        rem -= (uint64_t)((double)(b - t) / s->factor);
        t = b;
    }
    return t + rem;                    /* full speed after it */
}
