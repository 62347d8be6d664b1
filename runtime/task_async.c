/* task_async.c: tasks that end after their kernel returned (cask_task_async_begin /
 * _end). The end may come from any thread; it only queues the task on the worker that
 * ran it (a lock-free stack) and wakes that worker, which then finishes the task as it
 * finishes any other (coherence, write-backs, successors, counts): the worker's own
 * state is never touched from another thread. */
#include <stdio.h>
#include "runtime/sched.h"
#include "runtime/graph.h"
#include "runtime/task_ctx.h"

cask_task_async *cask_task_async_begin(cask_task_ctx *ctx)
{
    if (!ctx)
        return NULL;
    ctx->async = 1;
    return (cask_task_async *)ctx->task;
}

void cask_task_async_end(cask_task_async *token, cask_status st, const char *msg)
{
    cask_task *t = (cask_task *)token;
    if (!t)
        return;
    if (st) {
        char d[512], m[CASK_ERRMSG_LEN];
        graph_describe_task(t, d, sizeof d);
        snprintf(m, sizeof m, "%s failed: %s", d, msg && *msg ? msg : cask_status_string(st));
        graph_task_failed(t, st, m);
        graph_fail(t->graph, st, "%s", m);
    }
    sched *s = t->graph->rt->sched;
    worker *w = &s->w[t->last_worker];
    /* once t is published its graph may finish and the caller shut the runtime down:
     * sched_destroy waits until this call is out of the worker */
    atomic_fetch_add_explicit(&s->ending, 1, memory_order_acq_rel);
    sched_node *head = atomic_load_explicit(&w->async_done, memory_order_relaxed);
    do {
        t->node.next = head;
    } while (!atomic_compare_exchange_weak_explicit(&w->async_done, &head, &t->node,
                                                    memory_order_release, memory_order_relaxed));
    sched_wake_worker(w);
    atomic_fetch_sub_explicit(&s->ending, 1, memory_order_acq_rel);
}

cask_task *sched_async_take(worker *w)
{
    if (!atomic_load_explicit(&w->async_done, memory_order_relaxed))
        return NULL;
    sched_node *n = atomic_exchange_explicit(&w->async_done, NULL, memory_order_acquire);
    sched_node *rev = NULL;
    while (n) {
        sched_node *next = n->next;
        n->next = rev;
        rev = n;
        n = next;
    }
    return (cask_task *)rev;
}
