/* tests/graph_helpers.h: what the test_graph_*.c files share: a runtime of CPU workers
 * only, adding a task with an int argument, a logical clock that tick_task advances so
 * that a test can say one task ended before another started, and a task that adds one
 * to an int64 buffer. Each file that includes it has its own clock. */
#ifndef CASK_TEST_GRAPH_HELPERS_H
#define CASK_TEST_GRAPH_HELPERS_H

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cask/cask.h"
#include "test_helpers.h"

static inline cask_runtime *start(int ncpu) { return start_runtime(ncpu, 0); }

/* Adds a task with an int argument and the given accesses. */
static inline cask_task *add(cask_graph *g, cask_kernel *k, int arg, const cask_access *acc,
                             int nacc)
{
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = acc,
                          .naccess = nacc, .args = &arg, .args_size = sizeof arg };
    cask_task *t = NULL;
    cask_status st = cask_graph_add_task(g, &td, &t);
    cr_assert_eq(st, CASK_OK, "add_task: %s", cask_status_string(st));
    return t;
}

/* A logical clock: every task takes a tick when it starts and when it ends, so "a ended
 * before b started" is end[a] < start[b]. */
static atomic_uint_fast64_t ticks;
#define MAX_TASKS 4096
static uint64_t started[MAX_TASKS], ended[MAX_TASKS];
static atomic_int runs[MAX_TASKS];

static inline void reset_clock(void)
{
    atomic_store(&ticks, 1);
    memset(started, 0, sizeof started);
    memset(ended, 0, sizeof ended);
    for (int i = 0; i < MAX_TASKS; i++)
        atomic_store(&runs[i], 0);
}

static inline cask_status tick_task(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id < 0 || id >= MAX_TASKS)
        return cask_task_fail(ctx, "bad id %d", id);
    started[id] = atomic_fetch_add(&ticks, 1);
    atomic_fetch_add(&runs[id], 1);
    if (id % 7 == 0)
        spin_ns(2000);
    ended[id] = atomic_fetch_add(&ticks, 1);
    return CASK_OK;
}

static inline void assert_before(int a, int b)
{
    cr_assert(ended[a] != 0 && started[b] != 0, "task %d or %d did not run", a, b);
    cr_assert_lt(ended[a], started[b], "task %d (end %llu) must finish before task %d "
                 "(start %llu)", a, (unsigned long long)ended[a], b,
                 (unsigned long long)started[b]);
}

/* [0] RW, one int64: += 1 */
static inline cask_status increment_task(cask_task_ctx *ctx)
{
    int64_t *v = cask_task_buffer(ctx, 0);
    *v += 1;
    return CASK_OK;
}

#endif
