/* cask/future.h: futures (one task's outcome, without waiting for the whole graph) and
 * subflows (tasks that add tasks from inside their kernel). */
#ifndef CASK_FUTURE_H
#define CASK_FUTURE_H

#include "cask/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- futures ---- */

/* The outcome of one task in one run of its graph: pending, then done with the task's
 * status. Owned by the graph: valid until cask_graph_destroy, no release call. Opaque. */
typedef struct cask_future cask_future;

/* Called once when the future is done, on the thread that finished the task (a worker)
 * or, for a future already done, on the thread of cask_future_then. Keep it short: it
 * must not wait (no cask_graph_wait, no cask_future_wait); it may add tasks to the graph
 * (cask_graph_add_task) and read the future. */
typedef void (*cask_future_fn)(cask_future *f, void *arg);

/* A future for task t: for the run under way if its graph is running (done at once if t
 * already finished in it), else for the graph's next run. The first future of a run
 * makes each completion of that run a few nanoseconds dearer (it publishes to futures);
 * runs without futures or tasks added while running pay nothing. Errors:
 * CASK_ERR_INVALID (NULL), CASK_ERR_NOMEM. Thread safe. */
cask_status cask_task_future(cask_task *t, cask_future **out);

/* A future for the last task of g that writes d, in the order tasks were added so far
 * (what a read of d added now would wait for). With no such task it is done at once with
 * CASK_OK. Same rules as cask_task_future. Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. */
cask_status cask_data_future(cask_graph *g, cask_data *d, cask_future **out);

/* 1 if the future is done, else 0 (and 0 for NULL). Never blocks. Thread safe. */
int cask_future_test(const cask_future *f);

/* Waits until the future is done and returns the task's status: CASK_OK, its failure
 * (CASK_ERR_TASK_FAILED, ...; for a task that spawned joined children, the first failure
 * among them), or CASK_ERR_CANCELLED if it was skipped because the graph had failed.
 * Returns at once with CASK_ERR_STATE when the future's run is not under way (graph not
 * submitted yet) and CASK_ERR_STATE from inside a task (a worker must not block). The
 * graph's own error (cask_graph_error) is unchanged by this call. Thread safe. */
cask_status cask_future_wait(cask_future *f);

/* The status of a done future (CASK_ERR_STATE while pending) and its message: "" when it
 * succeeded, else "task NAME (...) failed ...: why" as in cask_graph_error. The message
 * is valid until the graph is destroyed. Thread safe. */
cask_status cask_future_status(const cask_future *f);
const char *cask_future_error(const cask_future *f);

/* Calls fn(f, arg) once the future is done (at once if it is). One callback per future:
 * CASK_ERR_STATE if it has one. Thread safe. */
cask_status cask_future_then(cask_future *f, cask_future_fn fn, void *arg);

/* ---- subflows: tasks that spawn tasks ---- */

/* Flags of cask_task_spawn. */
enum cask_spawn_flag {
    /* The child is not joined: the parent's successors do not wait for it (the graph
     * does: cask_graph_wait returns once it finished). */
    CASK_SPAWN_DETACHED = 1u << 0
};

/* Inside a CPU kernel: adds a child task to the running graph. Children start when the
 * kernel returns CASK_OK (not if it fails: then they are dropped). A joined child (the
 * default) must finish, with its own joined children, before the parent counts as
 * finished: the parent's successors, futures and the graph's end wait for it, and its
 * failure is the parent's (seen by the parent's future). Children of one parent are
 * ordered among themselves by their access modes in the order they were spawned
 * (sequential task flow within the subflow), by cask_task_depend between two of
 * them before the kernel returns, and by CASK_TASK_DEPS naming siblings spawned
 * before (any other task there is CASK_ERR_INVALID); they get no dependency on other tasks (the parent
 * already waited for its inputs, and holds them: a child may use the parent's buffers,
 * and data created for the subflow). Children inherit the graph's error handling: once
 * the graph failed, children not started are skipped. Children may spawn children (a
 * recursion of any depth). Children run once per run of the parent and are not part of
 * the graph for later runs. *out (may be NULL) is valid until the graph is destroyed.
 * Errors: CASK_ERR_INVALID (NULL ctx/desc, bad descriptor as cask_graph_add_task),
 * CASK_ERR_UNSUPPORTED (from a CUDA implementation), CASK_ERR_NOMEM. Only the kernel's
 * own thread may call it, during the kernel. */
cask_status cask_task_spawn(cask_task_ctx *ctx, const cask_task_desc *desc, uint32_t flags,
                            cask_task **out);

/* Inside a CPU kernel: size bytes of memory (16-byte aligned, uninitialised) that stay valid
 * until the graph is destroyed, e.g. for the partial results of children. NULL if out of
 * memory, ctx is NULL or the kernel is a CUDA implementation. Only the kernel's own thread may call it, during the kernel. */
void *cask_task_scratch(cask_task_ctx *ctx, size_t size);

#ifdef __cplusplus
}
#endif
#endif
