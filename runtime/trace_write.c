/* runtime/trace_write.c: writes a trace (trace.h) as Chrome trace-event JSON.
 *
 * Each track's events are sorted by time (GPU tracks record out of order), numbers are
 * formatted by hand into a buffer (a trace can hold millions of events: printf per field
 * would dominate shutdown), and names are escaped to valid JSON and valid UTF-8. Events go
 * one per line so that the file is greppable and diffs well. */
#include "runtime/trace_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jw {
    FILE *f;
    size_t n;
    int err;
    int first;    /* no event written yet: no separator before the next */
    char buf[1 << 16];
} jw;

static void jw_raw(jw *w, const char *s, size_t len);

/* Starts a new element of traceEvents. */
static void jw_next(jw *w)
{
    if (!w->first)
        jw_raw(w, ",\n", 2);
    w->first = 0;
}

static void jw_flush(jw *w)
{
    if (w->n && fwrite(w->buf, 1, w->n, w->f) != w->n)
        w->err = 1;
    w->n = 0;
}

static void jw_raw(jw *w, const char *s, size_t len)
{
    if (len > sizeof w->buf - w->n) {
        jw_flush(w);
        if (len > sizeof w->buf) {
            if (fwrite(s, 1, len, w->f) != len)
                w->err = 1;
            return;
        }
    }
    memcpy(w->buf + w->n, s, len);
    w->n += len;
}

static void jw_str(jw *w, const char *s)
{
    jw_raw(w, s, strlen(s));
}

static void jw_u64(jw *w, uint64_t v)
{
    char tmp[24];
    int i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    jw_raw(w, tmp + i, sizeof tmp - (size_t)i);
}

static void jw_i64(jw *w, int64_t v)
{
    if (v < 0) {
        jw_raw(w, "-", 1);
        jw_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        jw_u64(w, (uint64_t)v);
    }
}

/* A flow id: a number while a double holds it exactly (viewers written in JavaScript read
 * numbers as doubles), else a hex string, which Chrome and Perfetto both accept. */
static void jw_flow_id(jw *w, uint64_t id)
{
    static const char hex[] = "0123456789abcdef";
    if (id < (1ull << 53)) {
        jw_u64(w, id);
        return;
    }
    char tmp[20] = "\"0x";
    int n = 3;
    for (int sh = 60; sh >= 0; sh -= 4)
        if (n > 3 || (id >> sh) & 15)
            tmp[n++] = hex[(id >> sh) & 15];
    tmp[n++] = '"';
    jw_raw(w, tmp, (size_t)n);
}

/* ns as microseconds with three fraction digits: Chrome's unit, exact to the ns. */
static void jw_us(jw *w, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char frac[4] = { (char)('0' + a % 1000 / 100), (char)('0' + a % 100 / 10),
                     (char)('0' + a % 10), 0 };
    if (ns < 0)
        jw_raw(w, "-", 1);
    jw_u64(w, a / 1000);
    jw_raw(w, ".", 1);
    jw_raw(w, frac, 3);
}

/* Length of the valid UTF-8 sequence at p (2..4), or 0 if p does not start one. */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    int n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : lo;   /* no overlong forms */
        hi = c == 0xED ? 0x9F : hi;   /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : lo;
        hi = c == 0xF4 ? 0x8F : hi;   /* nothing past U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* s as a quoted JSON string; bytes that are not valid UTF-8 become U+FFFD. */
static void jw_esc(jw *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    jw_raw(w, "\"", 1);
    while (*p) {
        unsigned c = *p;
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run) {
            jw_raw(w, (const char *)run, (size_t)(p - run));
            continue;
        }
        c = *p;
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            jw_raw(w, e, 2);
        } else if (c == '\n') {
            jw_raw(w, "\\n", 2);
        } else if (c == '\t') {
            jw_raw(w, "\\t", 2);
        } else if (c == '\r') {
            jw_raw(w, "\\r", 2);
        } else if (c < 0x20) {
            char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
            jw_raw(w, e, 6);
        } else {
            int n = utf8_len(p);
            if (n) {
                jw_raw(w, (const char *)p, (size_t)n);
                p += n;
                continue;
            }
            jw_raw(w, "\\ufffd", 6);
        }
        p++;
    }
    jw_raw(w, "\"", 1);
}

static int cmp_rec(const void *pa, const void *pb)
{
    const trace_rec *a = *(const trace_rec *const *)pa, *b = *(const trace_rec *const *)pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    /* At one ts, slices first (outer before inner) so that flows bind to them. */
    int ax = a->ph == 'X', bx = b->ph == 'X';
    if (ax != bx)
        return ax ? -1 : 1;
    if (ax && a->val != b->val)
        return a->val > b->val ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void write_args(jw *w, const trace_rec *r)
{
    const uint64_t *x = r->extra;
    char sep = '{';
    jw_str(w, ",\"args\":");
    if (r->fields & TRACE_ARG_TASK) {
        jw_raw(w, &sep, 1);
        jw_str(w, "\"task\":");
        jw_u64(w, *x++);
        sep = ',';
    }
    if (r->fields & TRACE_ARG_KERNEL) {
        jw_raw(w, &sep, 1);
        jw_str(w, "\"kernel\":");
        jw_esc(w, (const char *)(uintptr_t)*x++);
        sep = ',';
    }
    if (r->fields & TRACE_ARG_CHUNKS) {
        jw_raw(w, &sep, 1);
        jw_str(w, "\"chunks\":[");
        for (int i = 0; i < r->nchunks; i++) {
            if (i)
                jw_raw(w, ",", 1);
            jw_u64(w, *x++);
        }
        jw_raw(w, "]", 1);
        sep = ',';
    }
    if (r->fields & TRACE_ARG_BYTES) {
        jw_raw(w, &sep, 1);
        jw_str(w, "\"bytes\":");
        jw_u64(w, *x++);
        sep = ',';
    }
    if (r->fields & TRACE_ARG_DEVICE) {
        jw_raw(w, &sep, 1);
        jw_str(w, "\"device\":");
        jw_i64(w, (int64_t)*x++);
    }
    jw_raw(w, "}", 1);
}

static void write_rec(jw *w, const trace *t, const trace_rec *e, int tid, int pid)
{
    jw_next(w);
    jw_str(w, "{\"name\":");
    jw_esc(w, e->name);
    switch (e->ph) {
    case 'X': jw_str(w, ",\"cat\":\"cask\",\"ph\":\"X\""); break;
    case 's': jw_str(w, ",\"cat\":\"dep\",\"ph\":\"s\",\"id\":"); jw_flow_id(w, e->val); break;
    case 'f': jw_str(w, ",\"cat\":\"dep\",\"ph\":\"f\",\"bp\":\"e\",\"id\":"); jw_flow_id(w, e->val);
              break;
    case 'C': jw_str(w, ",\"ph\":\"C\""); break;
    default:  jw_str(w, ",\"cat\":\"cask\",\"ph\":\"i\",\"s\":\"t\""); break;
    }
    jw_str(w, ",\"ts\":");
    jw_us(w, (int64_t)(e->ts - t->origin_ns));
    if (e->ph == 'X') {
        jw_str(w, ",\"dur\":");
        jw_us(w, (int64_t)e->val);
    }
    jw_str(w, ",\"pid\":");
    jw_i64(w, pid);
    jw_str(w, ",\"tid\":");
    jw_i64(w, tid);
    if (e->ph == 'C') {
        double v;
        char num[40];
        memcpy(&v, &e->val, sizeof v);
        snprintf(num, sizeof num, "%.17g", isfinite(v) ? v : 0.0);
        jw_str(w, ",\"args\":{\"value\":");
        jw_str(w, num);
        jw_raw(w, "}", 1);
    } else if (e->fields) {
        write_args(w, e);
    }
    jw_raw(w, "}", 1);
}

static void write_meta(jw *w, const char *what, int pid, int tid, const char *name, int sort)
{
    jw_next(w);
    jw_str(w, "{\"name\":\"");
    jw_str(w, what);
    jw_str(w, "\",\"ph\":\"M\",\"pid\":");
    jw_i64(w, pid);
    jw_str(w, ",\"tid\":");
    jw_i64(w, tid);
    if (name) {
        jw_str(w, ",\"args\":{\"name\":");
        jw_esc(w, name);
    } else {
        jw_str(w, ",\"args\":{\"sort_index\":");
        jw_i64(w, sort);
    }
    jw_str(w, "}}");
}

static void write_metadata(jw *w, const trace *t)
{
    int multi = 0;
    for (int i = 0; i < t->ntracks; i++)
        multi |= t->tracks[i]->group != 0;
    for (int i = 0; i < t->ntracks; i++) {
        int g = t->tracks[i]->group, seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = t->tracks[j]->group == g;
        if (seen)
            continue;
        char dflt[32];
        const char *name = NULL;
        for (int k = 0; k < t->ngroups; k++)
            if (t->groups[k].group == g)
                name = t->groups[k].name;
        if (!name) {
            snprintf(dflt, sizeof dflt, multi ? "cask rank %d" : "cask", g);
            name = dflt;
        }
        write_meta(w, "process_name", g, 0, name, 0);
        write_meta(w, "process_sort_index", g, 0, NULL, g);
    }
    for (int i = 0; i < t->ntracks; i++) {
        write_meta(w, "thread_name", t->tracks[i]->group, i, t->tracks[i]->name, 0);
        write_meta(w, "thread_sort_index", t->tracks[i]->group, i, NULL, i);
    }
}

static cask_status write_track(jw *w, const trace *t, int i)
{
    const trace_track *tr = t->tracks[i];
    if (!tr->nevents)
        return CASK_OK;
    const trace_rec **v = malloc(tr->nevents * sizeof *v);
    if (!v)
        return CASK_ERR_NOMEM;
    size_t n = 0;
    for (const trace_block *b = tr->head; b; b = b->next)
        for (size_t off = 0; off < b->used;) {
            const trace_rec *r = (const trace_rec *)((const char *)b->data + off);
            v[n++] = r;
            off += trace_rec_size(r);
        }
    qsort(v, n, sizeof *v, cmp_rec);
    for (size_t k = 0; k < n; k++)
        write_rec(w, t, v[k], i, tr->group);
    free(v);
    return CASK_OK;
}

cask_status trace_write(trace *t)
{
    if (!t)
        return CASK_ERR_INVALID;
    if (t->written || !t->f)
        return CASK_ERR_STATE;
    jw *w = malloc(sizeof *w);
    if (!w)
        return CASK_ERR_NOMEM;
    w->f = t->f;
    w->n = 0;
    w->err = 0;
    w->first = 1;
    cask_status st = CASK_OK;
    jw_str(w, "{\"traceEvents\":[\n");
    write_metadata(w, t);
    for (int i = 0; i < t->ntracks && !st; i++)
        st = write_track(w, t, i);
    jw_str(w, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":\"cask\","
              "\"clock\":\"CLOCK_MONOTONIC\",\"clock_origin_ns\":\"");
    jw_u64(w, t->origin_ns);
    jw_str(w, "\",\"events\":\"");
    jw_u64(w, trace_event_count(t));
    jw_str(w, "\",\"dropped_events\":\"");
    jw_u64(w, trace_dropped_count(t));
    jw_raw(w, "\"", 1);
    for (int i = 0; i < t->ninfo; i++) {
        jw_raw(w, ",", 1);
        jw_esc(w, t->info[i].key);
        jw_raw(w, ":", 1);
        jw_esc(w, t->info[i].value);
    }
    jw_str(w, "}}\n");
    jw_flush(w);
    int err = w->err;
    free(w);
    if (fclose(t->f) != 0)
        err = 1;
    t->f = NULL;
    t->written = 1;
    if (st)
        return st;
    if (err) {
        fprintf(stderr, "cask: trace: cannot write %s: %s\n", t->path, strerror(errno));
        return CASK_ERR_IO;
    }
    return CASK_OK;
}
