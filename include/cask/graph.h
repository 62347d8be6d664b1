/* cask/graph.h: building a lazy task graph and running it. */
#ifndef CASK_GRAPH_H
#define CASK_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "cask/task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A graph of tasks, built lazily and run by cask_graph_compute. It can be run again
 * after it finished (same tasks, same dependencies). Opaque. */
typedef struct cask_graph cask_graph;
/* A task in a graph; owned by the graph. Opaque. */
typedef struct cask_task cask_task;

/* One buffer a task uses and how. */
typedef struct cask_access {
    cask_data *data;
    cask_access_mode mode;
} cask_access;

/* Where a task may run (cask_task_desc.where). */
enum cask_where { CASK_WHERE_ANY = 0, CASK_WHERE_CPU = 1, CASK_WHERE_GPU = 2 };

/* Bits of cask_task_desc.field_mask for the optional fields. */
enum cask_task_field {
    CASK_TASK_ARGS     = 1u << 0,
    CASK_TASK_PRIORITY = 1u << 1,
    CASK_TASK_NAME     = 1u << 2,
    CASK_TASK_WHERE    = 1u << 3,
    CASK_TASK_DEVICE   = 1u << 4,
    CASK_TASK_DEPS     = 1u << 5
};

typedef struct cask_task_desc {
    uint64_t field_mask;
    cask_kernel *kernel;          /* required */
    const cask_access *access;    /* naccess entries (copied); may be NULL if 0 */
    int naccess;                  /* at most CASK_MAX_BUFFERS */
    const void *args;             /* CASK_TASK_ARGS: copied into the graph */
    size_t args_size;             /* at most UINT32_MAX bytes (CASK_ERR_INVALID beyond) */
    int priority;                 /* CASK_TASK_PRIORITY: higher runs first; default 0.
                                     Ready tasks of a worker are served by priority
                                     level, levels being logarithmic buckets (0; +-1;
                                     +-2..3; +-4..7; ...; +-64 and beyond). Tasks that
                                     become ready together (successors of one task,
                                     roots) run in exact priority order. */
    const char *name;             /* CASK_TASK_NAME: copied; default kernel name */
    uint32_t where;               /* CASK_TASK_WHERE: cask_where; default ANY */
    int device;                   /* CASK_TASK_DEVICE: preferred GPU index */
    cask_task *const *deps;       /* CASK_TASK_DEPS: ndeps tasks it waits for, as if
                                     cask_task_depend(task, deps[i]) followed the add (a
                                     Dask-style graph: each task names its inputs); the
                                     array is read during the call only */
    int ndeps;
} cask_task_desc;

#define CASK_MAX_BUFFERS 16

/* Creates an empty graph. Errors: CASK_ERR_NOMEM. Thread safe. */
cask_status cask_graph_create(cask_runtime *rt, cask_graph **out);

/* Adds a task. Dependencies follow from the access modes in the order tasks are added
 * (sequential task flow, as StarPU): a task reading d waits for the last task that
 * wrote d; a task writing d waits for the last writer and every reader since. *out
 * (may be NULL) is valid until the graph is destroyed.
 * While the graph is not running: not thread safe for one graph (build it from one
 * thread). While it runs (from cask_graph_submit until cask_graph_wait ends the
 * submission): thread safe, from any thread and from its tasks; the task joins the run
 * under way and starts as soon as its predecessors finished. Adds are serialised and
 * their dependencies follow that serial order (tasks added by one thread are ordered as
 * that thread added them). Errors: CASK_ERR_INVALID (no kernel, NULL data, too many
 * buffers, mode 0, where excludes every implementation of the kernel, args_size past
 * UINT32_MAX), CASK_ERR_STATE
 * (the run is ending: cask_graph_wait already ended its submission and every task
 * finished), CASK_ERR_BUSY (running: a data handle new to the graph is acquired or used
 * by another running graph), CASK_ERR_UNSUPPORTED (running: no worker can run it),
 * CASK_ERR_NOMEM. With CASK_TASK_DEPS: CASK_ERR_INVALID (ndeps < 0, deps NULL with
 * ndeps > 0, a NULL task, a task of another graph or a subflow's child), CASK_ERR_STATE
 * (the graph is running: tasks added while it runs take their order from access modes);
 * nothing is added then. */
cask_status cask_graph_add_task(cask_graph *g, const cask_task_desc *desc, cask_task **out);

/* Many tasks described by arrays, as a Dask graph is a table of tasks naming their inputs
 * (a graph exported from another system, one generated from an index): task i of the
 * batch runs kernels[i] (or kernel, for all) with its own copy of args_size bytes at
 * (const char *)args + i * args_size (args NULL: none), and waits for the tasks of the
 * same batch dep_index[dep_start[i]] .. dep_index[dep_start[i + 1] - 1] (indexes into
 * the batch, each below i; dep_start NULL: no edges). Edges to tasks outside the batch:
 * cask_task_depend on the handles in out. */
typedef struct cask_task_batch {
    size_t ntasks;
    cask_kernel *kernel;            /* every task's kernel, unless kernels */
    cask_kernel *const *kernels;    /* NULL, or ntasks kernels */
    const void *args;               /* NULL, or ntasks records of args_size bytes */
    size_t args_size;               /* at most UINT32_MAX */
    const uint32_t *dep_start;      /* NULL, or ntasks + 1 offsets into dep_index, not
                                       decreasing */
    const uint32_t *dep_index;      /* batch indexes */
} cask_task_batch;

/* Adds the batch's tasks to g in order, as if each were added by cask_graph_add_task with
 * its deps named (CASK_TASK_DEPS), in one call: no access modes, names or priorities
 * (give those through cask_graph_add_task). out (may be NULL) receives the ntasks
 * handles. The arrays are read during the call only. Not thread safe for one graph (as
 * building). Errors: CASK_ERR_INVALID (b NULL, no kernel for a task, a kernel that
 * runs nowhere, args_size past UINT32_MAX or without args, dep_start decreasing or
 * without dep_index, a dep not before its task, more tasks than a graph holds: 2^32),
 * CASK_ERR_STATE (the graph is running: tasks added while it runs take their order from
 * access modes), CASK_ERR_NOMEM; on any error nothing of the batch is added (out may have
 * been written). */
cask_status cask_graph_add_batch(cask_graph *g, const cask_task_batch *b, cask_task **out);

/* Adds an explicit edge: `after` waits for `before`. Both in g. A cycle is reported by
 * compute (CASK_ERR_CYCLE). Also between two children of one subflow before the kernel
 * that spawned them returns (cask/future.h). Errors: CASK_ERR_INVALID (different
 * graphs, same task, children of different subflows, a child and a task that is not its
 * sibling, a child whose kernel returned: it ran, or was dropped, in that run alone),
 * CASK_ERR_STATE (graph running). Not thread safe for one graph (as building). */
cask_status cask_task_depend(cask_task *after, cask_task *before);

/* Starts running the graph and returns at once; the graph stays open for
 * cask_graph_add_task until cask_graph_wait (or cask_shutdown) ends the submission.
 * Checks it first: CASK_ERR_CYCLE,
 * CASK_ERR_UNSUPPORTED (a task can run nowhere, e.g. CUDA-only without GPU),
 * CASK_ERR_BUSY (a data handle is used by another running graph or acquired),
 * CASK_ERR_STATE (already running). */
cask_status cask_graph_submit(cask_graph *g);

/* Ends the submission of a submitted graph and waits for every task added to it so far
 * (before the run and while it ran) to finish. Returns CASK_OK, or the first error of a task
 * (CASK_ERR_TASK_FAILED, CASK_ERR_CUDA, ...): then tasks not yet started are skipped,
 * running ones finish, and cask_graph_error tells which task failed and why. Data
 * written by tasks that ran keeps their results. Must not be called from a task. */
cask_status cask_graph_wait(cask_graph *g);

/* submit + wait. */
cask_status cask_graph_compute(cask_graph *g);

/* Message of the graph's last failure ("" if none); valid until the next submit or
 * destroy. */
const char *cask_graph_error(const cask_graph *g);

/* Counts of a graph. */
typedef struct cask_graph_info {
    size_t ntasks;
    size_t nedges;
    size_t ntasks_run;      /* in the last compute */
    size_t ntasks_replayed; /* of those, how many ran in a replay of the graph's recorded
                               GPU work (cask_config.graph_replay): all of them, or 0 */
    double elapsed_s;       /* wall time of the last compute, submit to finish */
} cask_graph_info;
cask_status cask_graph_query(const cask_graph *g, cask_graph_info *info);

/* Writes the graph in Graphviz dot: one node per task (coloured by kernel), one edge
 * per dependency; with_data also draws data handles as boxes. */
cask_status cask_graph_dot(const cask_graph *g, FILE *out, int with_data);

/* Frees the graph and its tasks (not the data or kernels). CASK_ERR_BUSY if running.
 * g may be NULL. */
cask_status cask_graph_destroy(cask_graph *g);

#ifdef __cplusplus
}
#endif
#endif
