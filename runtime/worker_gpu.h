/* worker_gpu.h (internal): the state of a GPU worker, shared by its loop
 * (worker_gpu.c) and the execution on simulated GPUs (worker_gpu_sim.c). */
#ifndef CASK_SCHED_WORKER_GPU_H
#define CASK_SCHED_WORKER_GPU_H

#include <stdint.h>
#include "runtime/sched.h"
#include "runtime/gpu_commit.h"
#include "runtime/coherence.h"
#include "runtime/sim_slow.h"
#include "runtime/device.h"   /* DEV_EXTRA_STREAMS */

struct cask_task_ctx;

/* Tasks launched back to back on one stream share one completion event: a group of up
 * to GROUP_MAX, closed (event recorded) when the burst of ready tasks ends. With tracing
 * every task is its own group, with its own timing events. */
#define GROUP_MAX 8

typedef struct inflight {
    cask_task *t[GROUP_MAX];
    int ntasks;
    int open;            /* still taking tasks: event not recorded yet */
    void *ev;            /* completion of the whole group */
    void *ev_start;      /* timing, when tracing */
    void *ev_end;
    int stream;
    uint64_t t_issue;    /* host time the group was opened */
    uint64_t est_ns;     /* estimated service time of its tasks */
    uint64_t sim_start, sim_end;   /* simulated GPU: its virtual run */
} inflight;

/* In-flight depth: at least MIN_INFLIGHT tasks, more while the estimated work in flight
 * is under INFLIGHT_BUDGET_NS. Tiny tasks still fill the streams; long ones stay in the
 * deque, where an idle GPU can steal them. Tasks side by side on the streams finish
 * together, so the budget is counted above what they take (4 ms: with 2, each wave of
 * 0.7 ms tasks waited for the host to commit the next). Three long tasks rather than two:
 * on a GPU shared with another load, cask's share of it grows with its kernels there
 * (2 H200s, bench-knn hog: 1.03 of the static split with 2, 0.97-0.98 with 3, 1.01 with
 * 4, which also commits half of a GPU's share before anything is timed). Both can be set
 * at build time for experiments (-Dc_args=-DMIN_INFLIGHT=4; bench/RESULTS.md section
 * 17). */
#ifndef MIN_INFLIGHT
#define MIN_INFLIGHT 3
#endif
#ifndef INFLIGHT_BUDGET_NS
#define INFLIGHT_BUDGET_NS 4000000ull
#endif

typedef struct writeback {
    cask_data *d;
    cask_graph *g;
} writeback;

/* A traced copy waiting for its end event. */
typedef struct copy_rec {
    void *e0, *e1;
    int which;
    uint32_t data_id;
    size_t bytes;
} copy_rec;

typedef struct gpu_worker gpu_worker;

/* Copy tracer of a GPU worker: timing events around each asynchronous copy. */
typedef struct gpu_tracer {
    coh_tracer base;
    struct worker *w;
    void *pending_e0;
} gpu_tracer;

typedef struct gpu_worker {
    int gpu;
    int nstreams;
    int next_stream;
    int open_slot[32 + DEV_EXTRA_STREAMS];   /* per stream, the compute streams (at most
                            32) then the side, urgent and side-to-host ones (device.h):
                            index of its open group, or -1 */
    int group_max;
    inflight *slot;
    int nslots;
    int ninflight;
    int tasks_inflight;
    uint64_t est_inflight_ns;
    uint64_t dev_done_ns;          /* when the device last finished a group */
    gpu_est_sum est_sum;           /* the device time of groups since the last estimate */
    int declined;        /* left a task for a faster GPU in this round of the loop */
    uint64_t decline_deadline;     /* take it anyway after this (0: none) */
    const sim_slow *slow;          /* simulated GPU: its slowdown, NULL if none */
    writeback *wb;
    int nwb, wb_cap;
    void *ref_ev;        /* tracing: a timing event at a known host time */
    uint64_t ref_ns;
    gpu_tracer tracer;   /* tracing only */
    sched_node *deferred;   /* FIFO of tasks waiting for memory held by tasks in flight */
    sched_node *deferred_tail;
    copy_rec *copies;    /* traced copies in flight */
    int ncopies, copies_cap;
    void **ev_pool;      /* spare timing events */
    int npool, pool_cap;
} gpu_worker;

/* worker_gpu.c: finishes t (f: its group, NULL if it ran synchronously). */
void gpu_finish_one(worker *w, cask_task *t, inflight *f);

/* worker_gpu_sim.c: runs t on simulated GPU w with its inputs prepared (ctx), on stream
 * si: at once, or (slowed GPU) on the device's virtual clock as a group in flight. */
void gpu_sim_run(worker *w, cask_task *t, struct cask_task_ctx *ctx, int si);
/* 1 if the simulated group f has ended by now. */
int gpu_sim_done(const inflight *f, uint64_t now);
/* The worker waits a little instead of spinning: a simulated GPU up to 100 us (less if
 * a task in flight ends sooner), a real one 20 us (it left a task to another GPU). */
void gpu_wait_a_little(worker *w);
/* Sets up the simulated GPU's slowdown from the configuration. */
void gpu_sim_init(worker *w);

#endif
