/* tests/dist/chaos_gen.h: the random distributed graphs of the chaos soak
 * (test_dist_chaos.c), and their sequential replay.
 *
 * A case is a pure function of (seed, number of ranks): every rank of an SPMD job calls
 * cg_generate with the same two numbers and gets the same data (sizes, owners, initial
 * content) and the same graphs (tasks, accesses, gathers, computes), as the sequential
 * task flow requires. The one kernel, cg_apply, mixes its inputs into its outputs with
 * an integer hash: the results are bit-exact, depend on every input and on the order of
 * the writes, so a plain C replay in one process (cg_apply on plain arrays, task after
 * task) is the reference every rank checks against. This file knows nothing of cask. */
#ifndef CASK_TESTS_DIST_CHAOS_GEN_H
#define CASK_TESTS_DIST_CHAOS_GEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    CG_MAXDATA = 24,
    CG_MAXTASKS = 96,      /* including the generators a reproducible graph adds */
    CG_MAXACC = 6,
    CG_MAXGRAPHS = 2,
    CG_MAXGATHERS = 6,
    CG_MAXCOMPUTES = 3
};

/* Access modes of a generated task (mapped to cask's by the test). */
enum cg_mode { CG_R = 1, CG_W = 2, CG_RW = 3 };

typedef struct cg_task {
    int nacc, nw;              /* accesses; the first nw are written (CG_W or CG_RW) */
    uint32_t gid[CG_MAXACC];   /* data, distinct within a task */
    int mode[CG_MAXACC];
    uint64_t salt;
    uint32_t rounds;           /* hash rounds per element: the task's cost */
    uint32_t nap_us;           /* the test's kernel sleeps this long first (a task that
                                  takes time without taking a core); no effect on data */
} cg_task;

typedef struct cg_graph {
    int ntasks;
    cg_task task[CG_MAXTASKS];
    int ngathers;
    uint32_t gather_gid[CG_MAXGATHERS];   /* distinct */
    int gather_root[CG_MAXGATHERS];
    int ncomputes;
} cg_graph;

typedef struct cg_spec {
    uint64_t seed;
    int nranks;
    int ndata;
    size_t len[CG_MAXDATA];    /* elements of uint64_t */
    int owner[CG_MAXDATA];
    int ngraphs;
    cg_graph graph[CG_MAXGRAPHS];
    int ncpu;                  /* workers per rank */
    int steal;                 /* cask_dist_config.steal */
    int barrier;               /* cask_dist_barrier after each compute */
    /* Every datum a graph uses is first written by a task that reads nothing (a
     * generator): no result depends on a rank's initial memory, and every compute of a
     * graph gives the same results, so lineage recovery can rebuild anything lost. */
    int reproducible;
} cg_spec;

/* What a rank needs before it joins the job (so before it knows the number of
 * ranks): its worker count and the balancer's setting, from the seed alone (the same
 * as cg_generate's). */
void cg_settings(uint64_t seed, int *ncpu, int *steal);

/* Fills s from (seed, nranks). Deterministic, the same on every machine. */
void cg_generate(cg_spec *s, uint64_t seed, int nranks);

/* The initial content of datum gid (len[gid] elements) into out. */
void cg_initial(const cg_spec *s, uint32_t gid, uint64_t *out);

/* Runs task t on buffers buf[i] of len[i] elements (i < t->nacc): each written buffer
 * becomes a hash of its old content (CG_RW; not read for CG_W), the task's salt, the
 * element index and every read buffer's element i % len. Written buffers do not read
 * each other, so the order in which a runtime fills them does not matter. */
void cg_apply(const cg_task *t, uint64_t *const *buf, const size_t *len);

/* The reference: state[gid] (len[gid] elements each) starts as cg_initial; each call
 * replays one compute of graph g on it, task after task. */
void cg_replay_compute(const cg_spec *s, int g, uint64_t **state);

/* FNV-1a of n bytes, chained from h (start with CG_FNV0). */
#define CG_FNV0 0xcbf29ce484222325ull
uint64_t cg_fnv(uint64_t h, const void *p, size_t n);

/* One line saying what the case is (for logs). */
void cg_describe(const cg_spec *s, FILE *f);

#endif
