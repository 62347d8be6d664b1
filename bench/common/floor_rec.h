/* floor_rec.h: the task record that the no-API floors build (bench-sched's floor rows,
 * sched_floor.c; bench-floor-layout too, until it was retired: bench/RESULTS.md): records
 * written in place, successors pushed as cask does (one inline, then arrays of 4, 8, 16,
 * ... from the same memory), predecessor counts kept. No checks, no calls. */
#ifndef CASK_BENCH_FLOOR_REC_H
#define CASK_BENCH_FLOOR_REC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct frec {
    struct frec *next;
    int32_t pending, indeg, nsucc, where;
    struct frec **succv;
    struct frec *succ1;       /* must follow succv: the inline slot */
    void *graph, *kernel;
    uint32_t id, ord;
    uint64_t rest[];          /* the other bytes of a bigger record, written as cask does */
} frec;                       /* 64 bytes */

/* Memory allocated and touched once, reused by every repetition (as the runtime's arena
 * pool is). */
typedef struct fmem {
    char *base, *cur, *end;
} fmem;

static inline void *fmem_take(fmem *m, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if ((size_t)(m->end - m->cur) < n) {
        fprintf(stderr, "bench: floor memory too small\n");
        exit(1);
    }
    void *p = m->cur;
    m->cur += n;
    return p;
}

/* A record of `bytes` (at least sizeof(frec)) at r: every field written once. */
static inline __attribute__((always_inline)) void frec_init(frec *r, size_t bytes, uint32_t id,
                                                            void *graph)
{
    r->next = NULL;
    r->pending = r->indeg = r->nsucc = 0;
    r->where = 1;
    r->succv = &r->succ1;
    r->succ1 = NULL;
    r->graph = graph;
    r->kernel = graph;
    r->id = r->ord = id;
    for (size_t i = 0; i < (bytes - sizeof(frec)) / 8; i++)
        r->rest[i] = 0;
}

/* The edge before -> after (a repeat of before's last is dropped); a full successor
 * array grows into m. */
static inline __attribute__((always_inline)) void frec_edge(fmem *m, frec *before, frec *after)
{
    int32_t n = before->nsucc;
    if (before->succv[n - 1] == after)
        return;
    if (__builtin_expect(n == 1 || (n >= 4 && (n & (n - 1)) == 0), 0)) {
        frec **v = fmem_take(m, (n == 1 ? 4 : 2 * (size_t)n) * sizeof *v);
        memcpy(v, before->succv, (size_t)n * sizeof *v);
        before->succv = v;
    }
    before->succv[n] = after;
    before->nsucc = n + 1;
    after->pending = ++after->indeg;
}

#endif
