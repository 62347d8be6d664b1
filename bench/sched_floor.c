/* bench/sched_floor.c: the floor under bench-sched --mode bcd's build figures on this
 * machine. The same shapes (and the same random DAG) built with no API at all: records
 * of B bytes written in place, one after the other, in memory allocated and touched once
 * and reused by every repetition (as the runtime's arena pool is); successors pushed as
 * cask does (one inline, then arrays of 4, 8, 16, ... from the same memory), predecessor
 * counts kept. No checks, no calls, no task list beyond the shape's own. What a builder
 * of B-byte tasks pays at the least here: a bcd build figure close to it is bound by the
 * machine, not by the runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_bench.h"
#include "common/timing.h"
#include "common/pmu.h"
#include "common/floor_rec.h"

static inline __attribute__((always_inline)) frec *rec_new(fmem *m, size_t bytes, uint32_t id)
{
    frec *r = fmem_take(m, bytes);
    __builtin_prefetch(m->cur + 8 * bytes, 1);
    frec_init(r, bytes, id, m);
    return r;
}

static inline __attribute__((always_inline)) void build(fmem *m, size_t bytes, enum shape s,
                                                        const options *o, const dag *d,
                                                        frec **t, long *ntasks)
{
    long T = o->tasks;
    uint32_t id = 0;
    switch (s) {
    case INDEPENDENT:
        for (long i = 0; i < T; i++)
            t[i] = rec_new(m, bytes, id++);
        *ntasks = T;
        break;
    case FANOUT: {
        frec *root = rec_new(m, bytes, id++), *sink = rec_new(m, bytes, id++);
        for (long i = 0; i < T; i++) {
            frec *x = rec_new(m, bytes, id++);
            frec_edge(m, root, x);
            frec_edge(m, x, sink);
        }
        *ntasks = T + 2;
        break;
    }
    case CHAINS: {
        long len = T / o->chains;
        for (int c = 0; c < o->chains; c++) {
            frec *prev = NULL;
            for (long i = 0; i < len; i++) {
                frec *x = rec_new(m, bytes, id++);
                if (prev)
                    frec_edge(m, prev, x);
                prev = x;
            }
        }
        *ntasks = len * o->chains;
        break;
    }
    case RANDOM:
        for (long i = 0; i < d->n; i++) {
            t[i] = rec_new(m, bytes, id++);
            for (int j = 0; j < d->npred[i]; j++)
                frec_edge(m, t[d->preds[i][j]], t[i]);
        }
        *ntasks = d->n;
        break;
    default:
        break;
    }
}

double bench_floor(enum shape s, const options *o, const dag *d, int bytes, long *ntasks,
                   char *pmu_out, size_t pmu_len)
{
    long n = s == RANDOM ? d->n : o->tasks + 2;
    /* records, and successor arrays: at most 3 * 8 bytes per edge (doubling), 2 per task
       but a fan-out's root (its array grows to n, copies included) */
    size_t size = (size_t)n * ((size_t)bytes + 64) + 32 * (size_t)n + (1u << 20);
    fmem m;
    m.base = malloc(size);
    frec **t = malloc((size_t)n * sizeof *t);
    double *v = malloc((size_t)o->reps * sizeof *v);
    if (!m.base || !t || !v) {
        fprintf(stderr, "bench-sched: out of memory\n");
        exit(1);
    }
    memset(m.base, 0, size);   /* touched once, as the pool's blocks are after a first graph */
    m.end = m.base + size;
    pmu pm;
    int counting = pmu_open(&pm) == 0;
    for (int r = -1; r < o->reps; r++) {   /* r = -1: warm-up */
        m.cur = m.base;
        if (r >= 0)
            pmu_start(&pm);
        double t0 = bench_now_s();
        if (bytes == 160)
            build(&m, 160, s, o, d, t, ntasks);
        else if (bytes == 96)
            build(&m, 96, s, o, d, t, ntasks);
        else
            build(&m, 64, s, o, d, t, ntasks);
        if (r >= 0) {
            v[r] = bench_now_s() - t0;
            pmu_stop(&pm);
        }
    }
    pmu_out[0] = 0;
    if (counting)
        pmu_json(&pm, (double)*ntasks * o->reps, pmu_out, pmu_len);
    pmu_close(&pm);
    double med = bench_median(v, o->reps);
    free(v);
    free(t);
    free(m.base);
    return med;
}
