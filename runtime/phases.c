/* runtime/phases.c: the clock of the start-up and shutdown phases and their line
 * (phases.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/phases.h"

uint64_t phases_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t phases_since_exec_ns(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');   /* the command's name may hold spaces */
    if (!p)
        return 0;
    /* after ")": the state (field 3) ... the start time (field 22) */
    unsigned long long start = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                      "%*d %*d %*d %llu", &start) != 1)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
        return 0;
    double up = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    double since = up - (double)start / (double)hz;
    return since > 0 ? (uint64_t)(since * 1e9) : 0;
}

static double ms(const runtime_phases *p, runtime_phase ph)
{
    return (double)p->ns[ph] * 1e-6;
}

/* The line is made whole, then written at once: the ranks of a job share a stderr. */
typedef struct line { char buf[1024]; size_t n; } line;

static void add(line *l, const char *fmt, double v)
{
    if (l->n < sizeof l->buf) {
        int k = snprintf(l->buf + l->n, sizeof l->buf - l->n, fmt, v);
        if (k > 0)
            l->n += (size_t)k;
    }
}

static void part(line *l, const runtime_phases *p, const char *name, runtime_phase ph)
{
    char fmt[48];
    snprintf(fmt, sizeof fmt, " %s %%.1f", name);
    add(l, fmt, ms(p, ph));
}

void phases_print(FILE *f, const runtime_phases *p)
{
    line l = { .n = 0 };
    double up = ms(p, PHASE_INIT) + ms(p, PHASE_JOIN) + ms(p, PHASE_BARRIER);
    double down = ms(p, PHASE_LEAVE) + ms(p, PHASE_SHUTDOWN);
    l.n = (size_t)snprintf(l.buf, sizeof l.buf, "cask: rank %d/%d phases (ms):", p->rank,
                           p->size > 0 ? p->size : 1);
    add(&l, " start-up %.1f", up);
    add(&l, " shutdown %.1f |", down);
    add(&l, " load %.1f |", ms(p, PHASE_LOAD));
    part(&l, p, "init", PHASE_INIT);
    part(&l, p, "topology", PHASE_TOPOLOGY);
    part(&l, p, "devices", PHASE_DEVICES);
    part(&l, p, "workers", PHASE_WORKERS);
    if (p->joined) {
        static const struct { const char *name; runtime_phase ph; } join[] = {
            { "| join", PHASE_JOIN }, { "boot", PHASE_BOOT },
            { "ucx-context", PHASE_UCX_CONTEXT }, { "ucx-worker", PHASE_UCX_WORKER },
            { "addresses", PHASE_ADDRESSES }, { "wire-up", PHASE_WIREUP },
            { "hello", PHASE_HELLO }, { "nccl", PHASE_NCCL }, { "routes", PHASE_ROUTES },
            { "| barrier", PHASE_BARRIER }, { "| leave", PHASE_LEAVE },
            { "graphs", PHASE_GRAPHS }, { "goodbye", PHASE_GOODBYE },
            { "endpoints", PHASE_ENDPOINTS }, { "ucx-teardown", PHASE_UCX_TEARDOWN },
            { "boot-barrier", PHASE_BOOT_BARRIER } };
        for (size_t i = 0; i < sizeof join / sizeof join[0]; i++)
            part(&l, p, join[i].name, join[i].ph);
    }
    part(&l, p, "| shutdown", PHASE_SHUTDOWN);
    if (l.n >= sizeof l.buf - 1)
        l.n = sizeof l.buf - 2;
    l.buf[l.n++] = '\n';
    fwrite(l.buf, 1, l.n, f);
}
