/* dash_live.h (internal): what the live dashboard reads while the runtime runs: the
 * recent task slices of each worker (a ring per worker), tasks run and failed per
 * kernel, and the graphs computing now.
 *
 * Cost. Only a runtime started with a dashboard has a dash_live (rt->live); every hook
 * is behind `if (w->live)`. Counting tasks per kernel is a relaxed add into the
 * worker's own row (no sharing, no lock). Slices are recorded only while someone looks
 * (a page or a client read /api/stream in the last DASH_VIEW_NS): one relaxed load when
 * nobody does, and no clock read. Slices are timed with CLOCK_MONOTONIC_COARSE (read
 * from the vDSO page, never a system call, even in VMs whose precise clock traps;
 * measured: two precise reads a task cost 0.9 us on one such VM): its few ms of
 * resolution are finer than a pixel of the 10 s stream.
 *
 * Threads. Each ring has one writer, its worker; readers (the server's thread) copy
 * slices and keep those whose sequence number did not change while they copied (a
 * seqlock per slot), so a reader never blocks a worker. The graph registry is under
 * its own mutex, taken at a graph's submit and finish (not per task) and by readers. */
#ifndef CASK_RUNTIME_DASH_LIVE_H
#define CASK_RUNTIME_DASH_LIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "runtime/runtime.h"

#define DASH_RING 4096               /* slices kept per worker */
#define DASH_MAX_KERNELS 256         /* kernels counted one by one; later ones as the last */
#define DASH_MAX_GRAPHS 64           /* graphs shown at once */
#define DASH_VIEW_NS 5000000000ull   /* a viewer counts for 5 s after its last read */
#define DASH_RUNNING_STRIDE 16       /* int32s: 64 bytes */

typedef struct dash_slot {
    _Atomic uint64_t seq;            /* index + 1 once written; 0 while being written */
    _Atomic uint64_t t0, t1;         /* ns, CLOCK_MONOTONIC */
    _Atomic uint32_t kernel;         /* kernel id */
    _Atomic uint32_t lane;           /* lane index (dash_lane_*) | failed << 31 */
} dash_slot;

typedef struct dash_ring {
    _Alignas(64) _Atomic uint64_t head;   /* slices written so far */
    dash_slot slot[DASH_RING];
} dash_ring;

/* One slice as a reader got it. */
typedef struct dash_slice {
    uint64_t t0, t1;
    uint32_t kernel, lane;
    int failed;
} dash_slice;

/* A graph computing now, as the registry keeps it. */
typedef struct dash_graph {
    struct cask_graph *g;            /* NULL: free entry */
    uint32_t id;
    uint64_t ntasks, nedges, t_submit;
    uint32_t nkernels;               /* distinct kernels among its tasks (<= 8 listed) */
    uint32_t kernel_id[8];
    uint64_t kernel_tasks[8];
} dash_graph;

typedef struct dash_live {
    int nworkers, ncpu, ngpu, nstreams;
    _Atomic uint64_t view_until;     /* slices are recorded while now < view_until */
    dash_ring *ring;                 /* [nworkers] */
    _Atomic uint64_t *runs;          /* [nworkers][DASH_MAX_KERNELS] */
    _Atomic uint64_t *fails;
    _Atomic int32_t *running;        /* [nworkers * DASH_RUNNING_STRIDE]: kernel id
                                        running now (GPU: last issued while work is in
                                        flight), -1 none; one cache line a worker, as
                                        each writes its own twice a task */
    pthread_mutex_t mu;              /* graphs */
    dash_graph graphs[DASH_MAX_GRAPHS];
    uint64_t graphs_done, tasks_done_in_finished;
    dash_graph last_shape;           /* tasks per kernel of the last graph counted: a
                                        graph computed again is not walked again */
    uint64_t t_origin;               /* runtime start, ns */
} dash_live;

cask_status dash_live_create(cask_runtime *rt, dash_live **out);
void dash_live_destroy(dash_live *l);

/* Lanes: CPU worker i is lane i; GPU g has nstreams compute lanes, then its copy lanes
 * (h2d, d2h, peer) drawn from the byte counters. */
static inline uint32_t dash_lane_gpu(const dash_live *l, int gpu, int stream)
{
    if (stream >= l->nstreams)   /* the side stream's hand-offs: on the last stream's lane */
        stream = l->nstreams - 1;
    return (uint32_t)(l->ncpu + gpu * (l->nstreams + 3) + stream);
}
static inline uint32_t dash_nlanes(const dash_live *l)
{
    return (uint32_t)(l->ncpu + l->ngpu * (l->nstreams + 3));
}

/* The slices' clock (ns, CLOCK_MONOTONIC_COARSE). */
static inline uint64_t dash_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Is someone looking? 0 without a clock read when nobody has for a while: a reader sets
 * view_until, and the first worker to see it passed clears it. */
static inline int dash_viewed(dash_live *l)
{
    uint64_t until = atomic_load_explicit(&l->view_until, memory_order_relaxed);
    if (!until)
        return 0;
    if (dash_now_ns() < until)
        return 1;
    atomic_compare_exchange_strong_explicit(&l->view_until, &until, 0, memory_order_relaxed,
                                            memory_order_relaxed);
    return 0;
}

/* Worker w ran a task (failed: and it failed) of kernel k over [t0, t1] on lane (times
 * from dash_now_ns, taken only while dash_viewed): counted; recorded as a slice unless
 * t1 is 0. Worker only. */
static inline void dash_task(dash_live *l, int w, uint32_t k, uint32_t lane, uint64_t t0,
                             uint64_t t1, int failed)
{
    size_t kk = (size_t)w * DASH_MAX_KERNELS + (k < DASH_MAX_KERNELS ? k : DASH_MAX_KERNELS - 1);
    atomic_store_explicit(&l->runs[kk], atomic_load_explicit(&l->runs[kk], memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (failed)
        atomic_store_explicit(&l->fails[kk],
                              atomic_load_explicit(&l->fails[kk], memory_order_relaxed) + 1,
                              memory_order_relaxed);
    if (!t1)
        return;
    if (t1 < t0)          /* a GPU task's issue time comes from the precise clock */
        t1 = t0;
    dash_ring *r = &l->ring[w];
    uint64_t i = atomic_load_explicit(&r->head, memory_order_relaxed);
    dash_slot *s = &r->slot[i % DASH_RING];
    atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->t0, t0, memory_order_relaxed);
    atomic_store_explicit(&s->t1, t1, memory_order_relaxed);
    atomic_store_explicit(&s->kernel, k, memory_order_relaxed);
    atomic_store_explicit(&s->lane, lane | (failed ? 1u << 31 : 0), memory_order_relaxed);
    atomic_store_explicit(&s->seq, i + 1, memory_order_release);
    atomic_store_explicit(&r->head, i + 1, memory_order_release);
}

/* Worker w starts running a task of kernel k (k < 0: runs none now). Worker only. */
static inline void dash_running(dash_live *l, int w, int32_t k)
{
    atomic_store_explicit(&l->running[(size_t)w * DASH_RUNNING_STRIDE], k, memory_order_relaxed);
}

/* Reader: copies worker w's slices that ended after `since` (ns) into out (at most max),
 * oldest first; their number. */
size_t dash_read_slices(dash_live *l, int w, uint64_t since, dash_slice *out, size_t max);

/* Graph registry: a graph starts computing / has finished (its counts are final). */
void dash_graph_start(cask_runtime *rt, struct cask_graph *g);
void dash_graph_end(cask_runtime *rt, struct cask_graph *g);

#endif
