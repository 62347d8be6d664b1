/* subflow.h (internal): children a kernel spawns (cask_task_spawn), held until the kernel
 * returns, then launched at once. */
#ifndef CASK_RUNTIME_SUBFLOW_H
#define CASK_RUNTIME_SUBFLOW_H

#include "runtime/graph.h"
#include "runtime/data.h"

struct cask_task_ctx;

/* Sequential-task-flow state of one handle among the children of one parent. */
typedef struct subflow_data {
    cask_data *data;
    cask_task *last_writer;
    reader_list *readers;
} subflow_data;

typedef struct subflow {
    cask_task *parent;
    arena ar;                    /* children, edges, scratch: adopted by the graph at launch */
    cask_task **kids;            /* in spawn order (malloc) */
    size_t nkids, kids_cap;
    subflow_data *dv;            /* handles the children use (malloc, linear search) */
    size_t ndv, dv_cap;
} subflow;

/* After the kernel of ctx returned st: launches its children (st == CASK_OK) or drops
 * them, and frees the subflow. self is the worker that ran the kernel. */
void subflow_end(struct worker *self, struct cask_task_ctx *ctx, cask_status st);
/* cask_task_depend between two children not yet launched. */
cask_status subflow_depend(cask_task *after, cask_task *before);
/* A joined child finished: its failure becomes the parent's, and the last one finishes
 * the parent. */
void subflow_child_done(struct sched *s, struct worker *self, cask_task *child, cask_task *parent);

#endif
