/* tests/graph_build_helpers.h: what the test_graph_build*.c files share: tasks that count
 * their runs and note their place in the completion order, by their int argument
 * (count_task) or by their place in the graph (count_plain, for plain tasks, which carry
 * no argument). Each file that includes it has its own counts. */
#ifndef CASK_TEST_GRAPH_BUILD_HELPERS_H
#define CASK_TEST_GRAPH_BUILD_HELPERS_H

#include <stdatomic.h>

#include "cask/cask.h"
#include "test_helpers.h"
#include "runtime/task_ctx.h"   /* a plain task's id (it has no arguments to carry one) */

#define MAXN 50000

static _Atomic int runs[MAXN];     /* times each task ran (its int argument) */
static _Atomic int seq;            /* completion order */
static _Atomic int when[MAXN];     /* seq at which it last ran */

static inline cask_status count_task(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    atomic_fetch_add(&runs[id], 1);
    atomic_store(&when[id], atomic_fetch_add(&seq, 1));
    return CASK_OK;
}

static inline void reset_counts(void)
{
    for (int i = 0; i < MAXN; i++) {
        atomic_store(&runs[i], 0);
        atomic_store(&when[i], -1);
    }
    atomic_store(&seq, 0);
}

/* Plain tasks (deps alone: cask_graph_add_task's short path), which carry no argument:
 * the id is the task's place in the graph. */
static inline cask_status count_plain(cask_task_ctx *ctx)
{
    int id = (int)ctx->task->id;
    atomic_fetch_add(&runs[id], 1);
    atomic_store(&when[id], atomic_fetch_add(&seq, 1));
    return CASK_OK;
}

#endif
