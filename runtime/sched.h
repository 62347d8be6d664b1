/* sched.h (internal): workers, their queues, and how ready tasks reach them. */
#ifndef CASK_SCHED_SCHED_H
#define CASK_SCHED_SCHED_H

#include <pthread.h>
#include <stdatomic.h>
#include "runtime/runtime.h"
#include "runtime/prio.h"
#include "runtime/queue_node.h"
#include "runtime/deque.h"
#include "runtime/notifier.h"

enum { WORKER_CPU = 0, WORKER_GPU = 1 };

struct gpu_worker;

typedef struct worker_counters {
    _Atomic uint64_t tasks_run, steals, steal_attempts, busy_ns, idle_ns;
    _Atomic uint64_t bytes_h2d, bytes_d2h, bytes_peer, evictions, spills;
} worker_counters;

typedef struct worker {
    int id;
    int kind;
    int device;                  /* GPU index, -1 for CPU */
    int core;
    struct sched *sched;
    sched_deque dq[SCHED_PRIO_LEVELS];
    unsigned level_mask;         /* owner only: levels that may be non-empty */
    _Atomic unsigned steal_mask; /* the same, published for thieves (a hint) */
    _Alignas(64) _Atomic(sched_node *) inbox;   /* MPSC stack, drained by the owner */
    _Atomic int64_t queued;      /* tasks placed here not yet started (GPU placement) */
    _Atomic int32_t queued_lvl[SCHED_PRIO_LEVELS];   /* the same by priority level (the
                                    cost model: what a task would wait behind here) */
    _Atomic(sched_node *) async_done;   /* asynchronous tasks that ended (MPSC stack) */
    int64_t async_pending;       /* owner: asynchronous tasks begun here, not finished */
    notifier note;
    int *victims;                /* same-kind workers, nearest first */
    int nvictims;
    pthread_t thread;
    int started;
    int inited;                  /* notifier initialised */
    worker_counters ctr;
    /* completions counted locally, flushed to the graph in batches */
    struct cask_graph *batch_graph;
    int64_t batch_count;
    int64_t batch_run;           /* of which actually ran (not skipped) */
    uint64_t run_count;          /* tasks run, published to ctr when idle */
    struct cask_task *dec_task;  /* big fan-in successor with decrements held back */
    int32_t dec_count;
    /* busy/idle accounting at transitions only (owner) */
    uint64_t mark_ns;
    int active;
    /* tasks bound to this worker's device: never stolen (owner only, FIFO) */
    sched_node *pinned_head, *pinned_tail;
    uint64_t rng;
    struct gpu_worker *gpu;
    /* GPU workers: when the work committed to the device is expected to end (ns,
       sched_now_ns clock; written by the owner, read by the other GPU workers) */
    _Atomic uint64_t busy_until_ns;
    struct trace_state *trace;   /* NULL unless tracing */
    struct dash_live *live;      /* NULL unless a dashboard is served */
    uint64_t last_end_ns;        /* end of the last traced task (flow arrows) */
    int last_track;              /* its track */
} worker;

typedef struct sched {
    cask_runtime *rt;
    int nworkers, ncpu, ngpu;
    worker *w;
    _Atomic int stop;
    _Atomic int nsleep[2];
    _Atomic uint32_t rr;
    /* each GPU's time for a task against the fastest GPU's, in millionths (0: not known),
     * from the last kernel timed on every GPU (gpu_note_speeds): how placement weighs a
     * GPU for a kernel not timed there yet */
    _Atomic uint32_t gpu_slow_ppm[CASK_MAX_GPUS];
    _Atomic uint64_t sim_origin_ns;   /* simulated GPUs: when the first task started on
                                         one (CASK_SIM_GPU_SLOW windows count from it) */
    _Atomic int64_t cpu_costed;  /* tasks the cost model sent to CPU workers, not yet
                                    finished (perfmodel.c) */
    _Atomic int ending;          /* cask_task_async_end calls under way (sched_destroy
                                    waits for them: they touch a worker after the task
                                    may have let its graph finish) */
} sched;

cask_status sched_create(cask_runtime *rt, sched **out);
cask_status sched_start(sched *s);
/* Stops and joins the workers (after the runtime waited for running graphs). */
void sched_destroy(sched *s);

/* Hands a submitted graph's roots to the workers. */
void sched_submit(sched *s, struct cask_graph *g);

/* The calling worker (NULL when called from outside) made t ready: place and queue it. */
void sched_ready(sched *s, worker *self, struct cask_task *t);

/* One predecessor of succ finished: the last one makes it ready. */
void sched_release(sched *s, worker *self, struct cask_task *succ);

/* t finished (or was skipped): release its successors and count it. */
void sched_complete(sched *s, worker *self, struct cask_task *t, int ran);

/* Counts one finished task of g; flushes batched counts when needed. */
void sched_count_done(worker *self, struct cask_graph *g, int64_t n, int64_t ran);
void sched_flush_batch(worker *self);

/* Wakes one sleeping worker of a kind / the given worker. */
void sched_wake_kind(sched *s, int kind);
void sched_wake_worker(worker *w);

/* The trace of a worker, NULL when not tracing. Built with -Dtracing=false, it is a
 * constant NULL and every tracing branch compiles away (to measure what the hooks cost
 * when tracing is off). */
#ifdef CASK_NO_TRACE
#define WORKER_TRACE(w) ((struct trace_state *)0)
#else
#define WORKER_TRACE(w) ((w)->trace)
#endif

/* Start of a worker thread: pins it, picks up the trace, starts its clocks. */
void sched_worker_enter(worker *w, const char *what);
/* Sleeps until woken (or returns at once with work found on a last look, or when
 * stopping): the task found, or NULL. */
struct cask_task *sched_sleep(worker *w);

/* Worker loops. */
void *worker_cpu_main(void *arg);
void *worker_gpu_main(void *arg);

/* Shared by both loops: next task from own deques, inbox or a steal (NULL if none). */
struct cask_task *sched_find_work(worker *w);
/* Owner: moves the inbox into the deques, where thieves can take from it. */
int sched_drain_inbox(worker *w);
/* Puts a ready task into w's own deque (owner only); returns that deque's size. */
int64_t sched_push_local(worker *w, struct cask_task *t);

/* Owner: the asynchronous tasks of w that ended (cask_task_async_end), oldest first,
 * linked through node.next; NULL if none. */
struct cask_task *sched_async_take(worker *w);

uint64_t sched_now_ns(void);
/* Busy/idle accounting: the worker found work / ran out of work. */
void sched_mark_active(worker *w);
void sched_mark_idle(worker *w);

#endif
