/* future.c: futures on one task (cask/future.h). A future is a node on its task's dyn
 * list (graph_dynamic.c), served when the task finishes; waiters sleep on the graph's
 * condition variable, which graph_finish also signals, so a wait cannot outlive the run. */
#include <string.h>
#include "runtime/graph_dynamic.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/sched.h"

struct cask_future {
    cask_graph *g;
    cask_task *task;       /* NULL: done from the start (no writer) */
    uint32_t run;
    _Atomic int done;
    cask_status status;
    const char *msg;
    cask_future_fn fn;
    void *arg;
};

static const char skipped_msg[] = "skipped: the graph had failed before the task ran "
                                   "(cask_graph_error says why)";

void future_complete(cask_future *f, cask_task *t)
{
    cask_graph *g = f->g;
    const char *msg = NULL;
    cask_status st = graph_task_status(t, f->run, &msg);
    pthread_mutex_lock(&g->lock);
    f->status = st;
    f->msg = st == CASK_ERR_CANCELLED && !msg ? skipped_msg : msg;
    atomic_store_explicit(&f->done, 1, memory_order_release);
    cask_future_fn fn = f->fn;
    void *arg = f->arg;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    if (fn)
        fn(f, arg);
}

/* A new future on t (NULL: done at once), g->lock held. */
static cask_status make_future(cask_graph *g, cask_task *t, cask_future **out)
{
    cask_future *f = arena_alloc(&g->ar, sizeof *f);
    dyn_node *n = t ? arena_alloc(&g->ar, sizeof *n) : NULL;
    if (!f || (t && !n))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_task_future");
    memset(f, 0, sizeof *f);
    f->g = g;
    f->task = t;
    atomic_init(&f->done, 0);
    *out = f;
    if (!t) {
        f->run = g->run;
        atomic_store(&f->done, 1);
        return CASK_OK;
    }
    n->kind = DYN_FUTURE;
    n->p = f;
    if (atomic_load(&g->state) == GRAPH_RUNNING) {
        f->run = g->run;
        graph_go_dynamic(g);
        if (!graph_dyn_link(g, g->run, t, n)) {   /* finished already in this run */
            const char *msg = NULL;
            f->status = graph_task_status(t, f->run, &msg);
            f->msg = f->status == CASK_ERR_CANCELLED && !msg ? skipped_msg : msg;
            atomic_store(&f->done, 1);
        }
    } else {
        /* for the next run: no worker touches the list until then */
        f->run = g->run + 1;
        g->want_dynamic = 1;
        uintptr_t head = atomic_load_explicit(&t->dyn, memory_order_relaxed);
        n->next = (head & 1u) ? NULL : (dyn_node *)head;
        atomic_store_explicit(&t->dyn, (uintptr_t)n, memory_order_relaxed);
    }
    return CASK_OK;
}

cask_status cask_task_future(cask_task *t, cask_future **out)
{
    if (!t || !out)
        return CASK_ERR_INVALID;
    cask_graph *g = t->graph;
    pthread_mutex_lock(&g->lock);
    cask_status st = make_future(g, t, out);
    pthread_mutex_unlock(&g->lock);
    return st;
}

cask_status cask_data_future(cask_graph *g, cask_data *d, cask_future **out)
{
    if (!g || !d || !out)
        return CASK_ERR_INVALID;
    if (d->rt != g->rt)
        return log_error(g->rt, CASK_ERR_INVALID, "cask_data_future(%s): data of another runtime",
                         d->name);
    pthread_mutex_lock(&g->lock);
    cask_task *t = d->stf_graph == g->id ? d->last_writer : NULL;
    cask_status st = make_future(g, t, out);
    pthread_mutex_unlock(&g->lock);
    return st;
}

int cask_future_test(const cask_future *f)
{
    return f && atomic_load_explicit(&((cask_future *)f)->done, memory_order_acquire);
}

static int on_worker(cask_runtime *rt)
{
    sched *s = rt->sched;
    pthread_t self = pthread_self();
    for (int i = 0; i < s->nworkers; i++)
        if (s->w[i].started && pthread_equal(s->w[i].thread, self))
            return 1;
    return 0;
}

cask_status cask_future_wait(cask_future *f)
{
    if (!f)
        return CASK_ERR_INVALID;
    cask_graph *g = f->g;
    if (cask_future_test(f))
        return f->status;
    if (on_worker(g->rt))
        return log_error(g->rt, CASK_ERR_STATE, "cask_future_wait called from a task");
    pthread_mutex_lock(&g->lock);
    while (!atomic_load(&f->done)) {
        int under_way = atomic_load(&g->state) == GRAPH_RUNNING && g->run == f->run && !g->done;
        if (!under_way) {
            pthread_mutex_unlock(&g->lock);
            return log_error(g->rt, CASK_ERR_STATE, "cask_future_wait(%s): its run is not under "
                             "way (submit the graph first)", f->task ? task_name(f->task) : "-");
        }
        pthread_cond_wait(&g->cond, &g->lock);
    }
    cask_status st = f->status;
    pthread_mutex_unlock(&g->lock);
    return st;
}

cask_status cask_future_status(const cask_future *f)
{
    if (!f)
        return CASK_ERR_INVALID;
    return cask_future_test(f) ? f->status : CASK_ERR_STATE;
}

const char *cask_future_error(const cask_future *f)
{
    if (!cask_future_test(f) || !f->msg)
        return "";
    return f->msg;
}

cask_status cask_future_then(cask_future *f, cask_future_fn fn, void *arg)
{
    if (!f || !fn)
        return CASK_ERR_INVALID;
    cask_graph *g = f->g;
    pthread_mutex_lock(&g->lock);
    if (f->fn) {
        pthread_mutex_unlock(&g->lock);
        return log_error(g->rt, CASK_ERR_STATE, "cask_future_then: the future has a callback");
    }
    f->fn = fn;
    f->arg = arg;
    int done = atomic_load(&f->done);
    pthread_mutex_unlock(&g->lock);
    if (done)
        fn(f, arg);
    return CASK_OK;
}
