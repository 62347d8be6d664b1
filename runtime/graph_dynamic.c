/* graph_dynamic.c: adding tasks to a running graph, and telling futures that a task
 * finished.
 *
 * A static run pays nothing for this but one release store (the task's completion mark,
 * done_run) and one load of the graph's `dynamic` flag per task. The first time in a run
 * that something must hear of a task's completion (a task added with it as predecessor,
 * a future), the adder sets `dynamic` and issues membarrier(PRIVATE_EXPEDITED): every
 * worker either saw the flag on its next completion (and then closes the finishing
 * task's dyn list with an exchange, serving what was put there), or its completion mark
 * is visible to the adder, who then knows that the task is done. Where membarrier is
 * missing, completions use a full fence instead.
 *
 * Adds while running are serialised by the graph's lock: their access-mode dependencies
 * follow the order in which they took it (sequential task flow, as at build time). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include "runtime/graph_dynamic.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/sched.h"

int graph_dynamic_init(void)
{
#ifdef __SANITIZE_THREAD__
    return -1;   /* ThreadSanitizer models fences, not membarrier */
#else
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0)
        return -1;
    return 0;
#endif
}

void graph_go_dynamic(cask_graph *g)
{
    if (atomic_load(&g->dynamic))
        return;
    atomic_store(&g->dynamic, 1);
    /* with strong_fence, completions fence themselves; registration at start-up makes
     * the expedited command available, so it fails only on a kernel without it */
    if (!g->rt->strong_fence && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        log_msg(g->rt, CASK_LOG_WARN, "membarrier failed after registration: tasks added "
                "while graphs run may miss a predecessor's completion");
    atomic_thread_fence(memory_order_seq_cst);
}

int graph_dyn_link(cask_graph *g, uint32_t run, cask_task *pred, dyn_node *n)
{
    (void)g;
    if (atomic_load_explicit(&pred->done_run, memory_order_acquire) == run)
        return 0;
    uintptr_t head = atomic_load_explicit(&pred->dyn, memory_order_acquire);
    do {
        if (head == DYN_CLOSED(run))
            return 0;
        n->next = (head & 1u) ? NULL : (dyn_node *)head;   /* a stale mark is an empty list */
    } while (!atomic_compare_exchange_weak_explicit(&pred->dyn, &head, (uintptr_t)n,
                                                    memory_order_acq_rel, memory_order_acquire));
    return 1;
}

cask_status graph_task_status(const cask_task *t, uint32_t run, const char **msg)
{
    task_cold *c = task_cold_of(t);
    if (msg)
        *msg = NULL;
    if (c && c->status_run == run && c->status != CASK_OK) {
        if (msg)
            *msg = c->errmsg;
        return (cask_status)c->status;
    }
    /* skipped in that run: the graph failed before it could run */
    if ((t->flags & TASK_SKIPPED) && atomic_load_explicit(&((cask_task *)t)->done_run,
                                                          memory_order_acquire) == run)
        return CASK_ERR_CANCELLED;
    return CASK_OK;
}

void graph_dyn_complete(worker *self, cask_task *t)
{
    cask_graph *g = t->graph;
    uintptr_t old = atomic_exchange_explicit(&t->dyn, DYN_CLOSED(g->run), memory_order_acq_rel);
    if (!old || (old & 1u))
        return;
    dyn_node *rev = NULL;
    for (dyn_node *n = (dyn_node *)old; n;) {
        dyn_node *next = n->next;
        n->next = rev;
        rev = n;
        n = next;
    }
    sched *s = g->rt->sched;
    for (dyn_node *n = rev; n;) {
        dyn_node *next = n->next;   /* read before the hand-off */
        if (n->kind == DYN_SUCC)
            sched_release(s, self, (cask_task *)n->p);
        else
            future_complete((struct cask_future *)n->p, t);
        n = next;
    }
}

void graph_task_failed(cask_task *t, cask_status st, const char *msg)
{
    cask_graph *g = t->graph;
    pthread_mutex_lock(&g->lock);
    task_cold *c = task_cold_get(&g->ar, t);   /* (out of memory: the graph's error stays) */
    if (c && (c->status_run != g->run || c->status == CASK_OK)) {
        c->status = st;
        c->status_run = g->run;
        c->errmsg = msg ? arena_strdup(&g->ar, msg) : NULL;
    }
    pthread_mutex_unlock(&g->lock);
}

/* Makes d usable by running graph g (g->lock held): not acquired, not used by another
 * running graph; counted as used until g finishes. */
static cask_status take_data(cask_graph *g, cask_data *d, const char *name)
{
    if (d->listed_in == g->id)
        return CASK_OK;
    cask_runtime *rt = g->rt;
    pthread_mutex_lock(&rt->lock);
    if (d->acquired || atomic_load(&d->running) > 0) {
        pthread_mutex_unlock(&rt->lock);
        return log_error(rt, CASK_ERR_BUSY, "cask_graph_add_task(%s): data %s is %s", name,
                         d->name, d->acquired ? "acquired by the user" : "used by another running graph");
    }
    atomic_fetch_add(&d->running, 1);
    pthread_mutex_unlock(&rt->lock);
    if (graph_note_data(g, d)) {
        atomic_fetch_sub(&d->running, 1);
        return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", name);
    }
    return CASK_OK;
}

/* pred -> t for the next runs (g->late, merged into the arrays at the next check) and,
 * if pred may still be running, now. */
static int link_running(cask_graph *g, cask_task *pred, cask_task *t)
{
    if (pred == t)
        return 0;
    for (task_link *l = g->late; l && l->succ == t; l = l->next)   /* t's edges so far */
        if (l->pred == pred)
            return 0;
    task_link *e = arena_alloc(&g->ar, sizeof *e);
    dyn_node *n = arena_alloc(&g->ar, sizeof *n);
    if (!e || !n)
        return -1;
    e->pred = pred;
    e->succ = t;
    e->next = g->late;
    g->late = e;   /* not pred's array: the worker finishing pred may be reading it */
    t->indegree++;
    g->nedges++;
    n->kind = DYN_SUCC;
    n->p = t;
    atomic_fetch_add_explicit(&t->pending, 1, memory_order_relaxed);
    if (!graph_dyn_link(g, g->run, pred, n))
        atomic_fetch_sub_explicit(&t->pending, 1, memory_order_relaxed);
    return 0;
}

cask_status graph_add_running(cask_graph *g, const cask_task_desc *desc, cask_task **out)
{
    cask_runtime *rt = g->rt;
    if (desc->field_mask & CASK_TASK_DEPS)
        return log_error(rt, CASK_ERR_STATE, "cask_graph_add_task(%s): explicit deps while the "
                         "graph runs (tasks added while it runs take their order from access "
                         "modes)", desc->kernel ? desc->kernel->name : "?");
    pthread_mutex_lock(&g->lock);
    if (atomic_load(&g->state) != GRAPH_RUNNING) {
        /* it stopped running between the caller's look and the lock */
        pthread_mutex_unlock(&g->lock);
        return log_error(rt, CASK_ERR_STATE, "cask_graph_add_task: graph ended its run while "
                         "the task was added; add it again (build) or submit again");
    }
    /* join this run: only while something still holds it (the submission, a task) */
    int64_t r = atomic_load(&g->remaining);
    do {
        if (r <= 0) {
            pthread_mutex_unlock(&g->lock);
            return log_error(rt, CASK_ERR_STATE, "cask_graph_add_task: the graph is finishing "
                             "(cask_graph_wait ended its submission); wait, then add and submit again");
        }
    } while (!atomic_compare_exchange_weak(&g->remaining, &r, r + 1));
    cask_task *t = NULL;
    cask_status st = graph_make_task(g, NULL, desc, "cask_graph_add_task", &t);
    /* it would wait for a worker that does not exist */
    if (!st && !((task_can_cpu(t) && rt->ncpu > 0) || (task_can_gpu(t) && rt->ngpu > 0)))
        st = log_error(rt, CASK_ERR_UNSUPPORTED, "cask_graph_add_task(%s): no worker can "
                       "run it (%d CPU workers, %d GPUs)", task_name(t), rt->ncpu, rt->ngpu);
    for (int i = 0; !st && i < t->naccess; i++)
        st = take_data(g, t->access[i].data, task_name(t));
    if (!st) {   /* (a task that fails here is not counted: its place is taken again) */
        graph_append_running(g, t);
        graph_note_task(g, t);
    }
    if (st) {
        pthread_mutex_unlock(&g->lock);
        sched_count_done(NULL, g, 1, 0);   /* give back the count taken above */
        return st;
    }
    graph_go_dynamic(g);
    g->nadded++;
    atomic_store_explicit(&t->pending, 1, memory_order_relaxed);   /* held until linked */
    /* sequential task flow against the handles' state, as cask_graph_add_task at build */
    for (int i = 0; i < t->naccess && !st; i++) {
        cask_data *d = t->access[i].data;
        if (d->stf_graph != g->id) {
            d->stf_graph = g->id;
            d->last_writer = NULL;
            d->readers = NULL;
        }
        if (d->last_writer && link_running(g, d->last_writer, t))
            st = CASK_ERR_NOMEM;
        if (t->access[i].mode & CASK_WRITE) {
            for (reader_list *rl = d->readers; rl && !st; rl = rl->next)
                if (link_running(g, rl->task, t))
                    st = CASK_ERR_NOMEM;
            d->readers = NULL;
        } else if (!st) {
            reader_list *rl = arena_alloc(&g->ar, sizeof *rl);
            if (!rl) {
                st = CASK_ERR_NOMEM;
            } else {
                rl->task = t;
                rl->next = d->readers;
                d->readers = rl;
            }
        }
    }
    for (int i = 0; i < t->naccess; i++)
        if (t->access[i].mode & CASK_WRITE) {
            t->access[i].data->last_writer = t;
            t->access[i].data->readers = NULL;
        }
    pthread_mutex_unlock(&g->lock);
    if (st) {
        /* out of memory half-way: the task still runs (after what it was linked to) and
         * the graph fails, so that no later task uses a result it did not wait for */
        graph_fail(g, CASK_ERR_NOMEM, "cask_graph_add_task(%s): out of memory while "
                   "linking it to its predecessors", task_name(t));
    }
    if (out)
        *out = t;
    if (atomic_fetch_sub_explicit(&t->pending, 1, memory_order_acq_rel) == 1)
        sched_ready(rt->sched, NULL, t);
    return st ? log_error(rt, st, "cask_graph_add_task(%s)", task_name(t)) : CASK_OK;
}
