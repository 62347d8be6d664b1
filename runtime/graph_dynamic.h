/* graph_dynamic.h (internal): what is published to a task that may be running: the
 * successors added to it and the futures waiting for it. */
#ifndef CASK_RUNTIME_GRAPH_DYNAMIC_H
#define CASK_RUNTIME_GRAPH_DYNAMIC_H

#include "runtime/graph.h"

enum { DYN_SUCC = 0, DYN_FUTURE = 1 };

/* An entry of a task's dyn list; allocated in the graph's arena (g->lock held). */
typedef struct dyn_node {
    struct dyn_node *next;
    uint32_t kind;
    void *p;             /* DYN_SUCC: cask_task *; DYN_FUTURE: cask_future * */
} dyn_node;

/* The value of a dyn list once its task finished in run `run`. */
#define DYN_CLOSED(run) ((((uintptr_t)(run)) << 1) | 1u)

/* With g->lock held: puts n on pred's dyn list unless pred already finished in run
 * (then returns 0: nothing will come); 1 if it was put. */
int graph_dyn_link(cask_graph *g, uint32_t run, cask_task *pred, dyn_node *n);

/* The status and message of t's last finish in run (OK and NULL if it did not fail). */
cask_status graph_task_status(const cask_task *t, uint32_t run, const char **msg);

/* A future's task finished (future.c). */
void future_complete(struct cask_future *f, cask_task *t);

#endif
