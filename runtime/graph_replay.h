/* graph_replay.h (internal): replaying the GPU work of a graph computed again with the
 * same shape as one CUDA graph (docs/guide.md, "Replaying GPU graphs").
 *
 * A graph whose tasks can only run on a GPU, all on one GPU, is run the usual way the
 * first time after it was built or changed, which says where each task runs. The next
 * submit records it: every task's CUDA implementation is called once, in topological
 * order, on a stream being captured, its work depending on the work of its
 * predecessors; the CUDA graph is instantiated and launched. Later submits of the same
 * graph launch it again. Before each launch every handle the graph uses is made valid
 * (or, if the graph writes it first, allocated) on that GPU and pinned there, as a
 * task's inputs are; if a handle now lives at another address (evicted, re-allocated)
 * the graph is recorded again and the executable graph updated in place
 * (cudaGraphExecUpdate), or instantiated anew where the update is refused. One stand-in
 * task on the GPU's worker waits for the launch and, when it ends, completes the
 * graph's tasks (done marks, counts, write-backs, unpinning), so traces, statistics,
 * failures and tasks added while it runs go through the worker as for any task.
 * Anything that does not fit (a CPU-capable task, tasks on several GPUs, a kernel that
 * cannot be captured, a handle that cannot be pinned) falls back to the usual path. */
#ifndef CASK_RUNTIME_GRAPH_REPLAY_H
#define CASK_RUNTIME_GRAPH_REPLAY_H

#include "runtime/graph.h"
#include "runtime/task_ctx.h"

struct worker;
struct replay_exec;

/* One handle the graph uses. */
typedef struct replay_data {
    struct cask_data *d;
    void *ptr;          /* its replica on the replay GPU when last recorded */
    uint8_t mode;       /* what the graph needs of it: CASK_READ if its first access
                           reads it, CASK_WRITE if any access writes it */
} replay_data;

enum { REPLAY_FRESH = 0, REPLAY_LEARN, REPLAY_READY, REPLAY_OFF };

typedef struct graph_replay {
    cask_task task;             /* the stand-in the GPU worker runs (flags TASK_REPLAY);
                                   first, so that the task gives the plan back */
    task_cold cold;             /* its name */
    char name[160];
    uint32_t shape;             /* g->shape this plan is for */
    int state;                  /* REPLAY_* */
    int device;                 /* the GPU every task ran on */
    int worker;                 /* its worker */
    size_t ntasks;              /* the graph's tasks when learnt (tasks added while it
                                   runs come after them) */
    size_t ndata;
    replay_data *data;          /* sorted by handle address */
    cask_task **order;          /* tasks in topological order */
    uint32_t *pred_start;       /* predecessors of task id i: pred[pred_start[i] ..] */
    uint32_t *pred;
    struct cask_data **wb;      /* write-backs of a completion (ndata) */
    struct replay_exec *x;      /* its CUDA graph, streams and event (replay_cuda.c) */
    int recorded;               /* x holds a graph recorded with data[].ptr */
    int launched;               /* a launch in flight: pins to release */
    uint64_t nreplays, nrecords, nupdates;
} graph_replay;

/* At submit (g not yet marked running, its handles counted as used): 1 if the run was
 * launched as a replay (the caller counts 1 task, the stand-in, and hands it to the
 * scheduler with graph_replay_push), 0 to run the graph the usual way. prev_ok: the
 * graph's previous run succeeded. Never fails the submit: a replay that cannot be made
 * leaves the run to the usual path. */
int graph_replay_begin(cask_graph *g, int prev_ok);
/* Hands the stand-in of a launched replay to its GPU's worker. */
void graph_replay_push(cask_graph *g);
/* The GPU worker finished the stand-in t (its launch ended, or failed: the graph says
 * so): marks the graph's tasks done, counts them, unpins the handles and starts the
 * write-backs of those written, returned in *wb (*nwb of them) for the worker to watch. */
void graph_replay_complete(struct worker *w, cask_task *t, struct cask_data ***wb, int *nwb);
/* Frees g's plan and its CUDA objects (graph destroyed, or the runtime shutting down). */
void graph_replay_free(cask_graph *g);

/* ---- replay_cuda.c: the CUDA side ---- */
/* Streams and event on gpu for a plan; CASK_ERR_UNSUPPORTED without CUDA. */
cask_status replay_exec_create(cask_runtime *rt, int gpu, struct replay_exec **out);
void replay_exec_destroy(cask_runtime *rt, struct replay_exec *x);
/* The stream that launches (pinning copies make it wait). */
void *replay_exec_stream(struct replay_exec *x);
/* Records p's tasks (p->recorded false, or their handles moved) into a CUDA graph and
 * instantiates it, or updates the executable graph in place (*updated). An error (a
 * kernel that cannot be captured: it synchronises, allocates, fails at enqueue, is
 * asynchronous or spawns) leaves no capture open; msg says which task and why. */
cask_status replay_record(cask_runtime *rt, graph_replay *p, int *updated, char *msg, size_t len);
/* Launches the executable graph and records the end event. */
cask_status replay_launch(cask_runtime *rt, graph_replay *p);
/* The stand-in's CUDA implementation: its stream waits for the launch's end event. */
cask_status replay_wait_cuda(cask_task_ctx *ctx);

#endif
