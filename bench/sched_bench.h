/* bench/sched_bench.h: what the parts of bench-sched share: options, shapes, the random
 * DAG, the task body, and the output (one JSON line per measurement, a table at the end). */
#ifndef CASK_BENCH_SCHED_BENCH_H
#define CASK_BENCH_SCHED_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "cask/cask.h"

/* A cask call that must succeed: bench-sched exits naming it otherwise. */
#define CHECK(call)                                                                       \
    do {                                                                                  \
        cask_status st_ = (call);                                                         \
        if (st_ != CASK_OK) {                                                             \
            fprintf(stderr, "bench-sched: %s: %s\n", #call, cask_status_string(st_));     \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* ---- shapes ---- */

enum shape { INDEPENDENT, FANOUT, CHAINS, RANDOM, NSHAPES };
extern const char *shape_names[NSHAPES];

typedef struct options {
    int workers[64];
    int nworkers;
    long tasks;
    int reps;
    int cases[NSHAPES];
    int window;
    int chains;
    int sched;          /* -1: runtime default */
    int json_only;
    long work_ns;
    int bcd;            /* --mode bcd: build + compute + destroy per repetition */
    int peers;          /* PEER_* bits (--peers starpu,openmp) */
    int deps;           /* cask's edges: EDGES_* (--edges), or -1 (default) */
} options;
enum { PEER_STARPU = 1, PEER_OPENMP = 2 };
/* cask's edges (options.deps): by cask_task_depend, named at add (CASK_TASK_DEPS), the
 * first two (--edges both), from arrays (cask_graph_add_batch), all three */
enum { EDGES_DEPEND, EDGES_DEPS, EDGES_BOTH, EDGES_BATCH, EDGES_ALL };
extern const char *edges_names[EDGES_ALL + 1];   /* --edges values, as above */

/* The random DAG, shared by both implementations: preds[i][0..npred[i]-1]. */
typedef struct dag {
    long n;
    int32_t (*preds)[3];
    uint8_t *npred;
    int32_t *level;      /* depth: 0 for roots */
    long *by_level;      /* task ids sorted by level */
    long *level_start;   /* nlevels + 1 offsets into by_level */
    int nlevels;
} dag;


/* The task body every implementation calls: an empty call, or --work-ns of busy work. */
void bench_task_body(void);

/* Records one measurement: a JSON line on stdout now, a table row for the end. ratio > 0
 * is printed as "ratio_vs_baseline"; extra (may be NULL) is appended to the JSON object
 * (",\"key\":value..."); add_row 0 leaves the table to the caller. */
void bench_emit(const char *shape, int workers, const char *impl, long tasks, double sec,
                double ratio, long work_ns, const char *extra, int add_row);
void bench_table_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cask's side (sched.c): the kernel, a graph of shape s (exact task count in *ntasks),
 * and the median compute time of a graph built once and computed o->reps times. */
cask_status bench_empty_kernel(cask_task_ctx *ctx);
/* A runtime of `workers` CPU workers, no GPU (real or simulated), o->sched's policy if
 * set, and its empty kernel in *empty; exits on failure. */
cask_runtime *bench_start_cask(int workers, const options *o, cask_kernel **empty);
cask_graph *bench_build_graph(cask_runtime *rt, cask_kernel *k, enum shape s,
                              const options *o, const dag *d, long *ntasks);
double bench_time_cask(enum shape s, int workers, const options *o, const dag *d,
                       long *ntasks);

/* The task body both sides call, through a pointer the compiler cannot see through
 * (sched.c; --work-ns sets what it does). */
extern void (*volatile bench_empty_fn)(void);

/* The pthreads baseline (sched_baseline.c): the median time of o->reps runs of shape s
 * on `workers` threads, a static split with barriers. */
double bench_time_baseline(enum shape s, int workers, const options *o, const dag *d);

/* A shape as arrays for cask_graph_add_batch (sched_batch.c): made before the timed
 * builds (0, or -1 out of memory); a graph built from them in one call. */
typedef struct batch_arrays {
    size_t n;
    uint32_t *ds, *di;   /* dep_start, dep_index (NULL: no edges) */
} batch_arrays;
int bench_batch_make(enum shape s, const options *o, const dag *d, batch_arrays *ba);
void bench_batch_free(batch_arrays *ba);
cask_graph *bench_build_batch(cask_runtime *rt, cask_kernel *k, const batch_arrays *ba);

/* Build + compute + destroy mode (sched_build.c): a fresh graph per repetition, timed in
 * phases, then the peers that were found (sched_peers.c). */
void bench_bcd(const options *o, const dag *d);

/* Peers on the same shapes and body; each returns the median seconds of create + submit
 * + run of the whole shape, or a negative value when not built in. */
double peer_starpu(enum shape s, int workers, const options *o, const dag *d, long *ntasks);
double peer_openmp(enum shape s, int workers, const options *o, const dag *d, long *ntasks);
int peer_starpu_available(void);
int peer_openmp_available(void);

#endif
