/* subflow.c: tasks that spawn tasks. A kernel's children are made in an arena of their
 * own (no lock while spawning), get their order among themselves from access modes and
 * explicit edges, and are launched when the kernel returns: the arena joins the graph's
 * (one lock), the graph's count grows by the number of children, and the children with
 * no predecessor are pushed on the worker's own deque. A joined child holds one count of
 * the parent's `join`: sched_complete finishes the parent only when it reaches zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/subflow.h"
#include "runtime/graph_dynamic.h"
#include "runtime/task_ctx.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/sched.h"

static subflow *subflow_get(cask_task_ctx *ctx)
{
    if (ctx->sub)
        return ctx->sub;
    subflow *sf = calloc(1, sizeof *sf);
    if (!sf)
        return NULL;
    sf->parent = ctx->task;
    arena_init(&sf->ar, &ctx->task->graph->rt->graph_pool);
    ctx->sub = sf;
    return sf;
}

static subflow_data *find_data(subflow *sf, cask_data *d)
{
    for (size_t i = 0; i < sf->ndv; i++)
        if (sf->dv[i].data == d)
            return &sf->dv[i];
    if (sf->ndv == sf->dv_cap) {
        size_t cap = sf->dv_cap ? sf->dv_cap * 2 : 8;
        subflow_data *n = realloc(sf->dv, cap * sizeof *n);
        if (!n)
            return NULL;
        sf->dv = n;
        sf->dv_cap = cap;
    }
    subflow_data *e = &sf->dv[sf->ndv++];
    e->data = d;
    e->last_writer = NULL;
    e->readers = NULL;
    return e;
}

cask_status cask_task_spawn(cask_task_ctx *ctx, const cask_task_desc *desc, uint32_t flags,
                            cask_task **out)
{
    if (!ctx || !desc)
        return CASK_ERR_INVALID;
    cask_task *parent = ctx->task;
    cask_graph *g = parent->graph;
    cask_runtime *rt = g->rt;
    if (ctx->device >= 0)
        return log_error(rt, CASK_ERR_UNSUPPORTED, "cask_task_spawn from task %s: only CPU "
                         "implementations may spawn tasks", task_name(parent));
    if (flags & ~(uint32_t)CASK_SPAWN_DETACHED)
        return log_error(rt, CASK_ERR_INVALID, "cask_task_spawn from task %s: unknown flags %#x",
                         task_name(parent), flags);
    subflow *sf = subflow_get(ctx);
    if (!sf)
        return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
    cask_task *t;
    cask_status st;
    if ((desc->field_mask & CASK_TASK_DEPS) && (st = graph_check_deps(g, sf, desc, "cask_task_spawn")))
        return st;
    if ((st = graph_make_task(g, &sf->ar, desc, "cask_task_spawn", &t)))
        return st;
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = t->access[i].data;
        if (d->listed_in != g->id)   /* handles the graph does not hold for this run */
            return log_error(rt, CASK_ERR_INVALID, "cask_task_spawn(%s) from task %s: data %s is "
                             "not used by the graph's tasks (children may use the parent's "
                             "data and data other tasks of the graph use)", task_name(t),
                             task_name(parent), d->name);
    }
    if (sf->nkids == sf->kids_cap) {
        size_t cap = sf->kids_cap ? sf->kids_cap * 2 : 8;
        cask_task **n = realloc(sf->kids, cap * sizeof *n);
        if (!n)
            return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
        sf->kids = n;
        sf->kids_cap = cap;
    }
    task_cold *c = task_cold_get(&sf->ar, t);
    if (!c)
        return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
    t->id = (uint32_t)sf->nkids;
    c->sub = sf;
    c->spawned = 1;
    c->parent = (flags & CASK_SPAWN_DETACHED) ? NULL : parent;
    /* sequential task flow among the siblings */
    for (int i = 0; i < t->naccess; i++) {
        subflow_data *e = find_data(sf, t->access[i].data);
        if (!e)
            return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
        if (e->last_writer && graph_add_edge(NULL, &sf->ar, e->last_writer, t))
            return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
        if (t->access[i].mode & CASK_WRITE) {
            for (reader_list *r = e->readers; r; r = r->next)
                if (graph_add_edge(NULL, &sf->ar, r->task, t))
                    return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
            e->readers = NULL;
        } else {
            reader_list *r = arena_alloc(&sf->ar, sizeof *r);
            if (!r)
                return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
            r->task = t;
            r->next = e->readers;
            e->readers = r;
        }
    }
    for (int i = 0; i < t->naccess; i++)
        if (t->access[i].mode & CASK_WRITE) {
            subflow_data *e = find_data(sf, t->access[i].data);
            e->last_writer = t;
            e->readers = NULL;
        }
    if (desc->field_mask & CASK_TASK_DEPS)   /* siblings of this subflow (checked above) */
        for (int i = 0; i < desc->ndeps; i++)
            if (graph_add_edge(NULL, &sf->ar, desc->deps[i], t))
                return log_error(rt, CASK_ERR_NOMEM, "cask_task_spawn from task %s", task_name(parent));
    sf->kids[sf->nkids++] = t;
    if (out)
        *out = t;
    return CASK_OK;
}

void *cask_task_scratch(cask_task_ctx *ctx, size_t size)
{
    if (!ctx || ctx->device >= 0)
        return NULL;
    subflow *sf = subflow_get(ctx);
    return sf ? arena_alloc(&sf->ar, size ? size : 1) : NULL;
}

cask_status subflow_depend(cask_task *after, cask_task *before)
{
    cask_graph *g = after->graph;
    struct subflow *sf = task_sub(after);
    if (!sf || sf != task_sub(before))
        return log_error(g->rt, CASK_ERR_INVALID, "cask_task_depend(%s after %s): a child of a "
                         "subflow may only depend on a sibling spawned by the same kernel "
                         "call, before that call returns", task_name(after), task_name(before));
    if (graph_add_edge(NULL, &sf->ar, before, after))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_task_depend");
    return CASK_OK;
}

static void subflow_free(subflow *sf)
{
    free(sf->kids);
    free(sf->dv);
    free(sf);
}

void subflow_end(worker *self, cask_task_ctx *ctx, cask_status st)
{
    subflow *sf = ctx->sub;
    ctx->sub = NULL;
    cask_task *parent = ctx->task;
    cask_graph *g = parent->graph;
    sched *s = g->rt->sched;
    int nw = s->nworkers;
    size_t n = sf->nkids, njoined = 0, nroots = 0;
    for (size_t i = 0; i < n && !st; i++) {
        cask_task *t = sf->kids[i];
        if (graph_compact_task(&sf->ar, t, nw, 0))
            st = CASK_ERR_NOMEM;
        if (st)
            break;
        task_cold *c = task_cold_of(t);   /* made at spawn */
        c->sub = NULL;
        njoined += c->parent != NULL;
        if (t->indegree == 0)   /* kids[] now lists the roots first, in spawn order */
            sf->kids[nroots++] = t;
    }
    /* the parent's count of joined children, made here while the arena is ours */
    task_cold *pc = NULL;
    if (!st && njoined && !(pc = task_cold_get(&sf->ar, parent)))
        st = CASK_ERR_NOMEM;
    pthread_mutex_lock(&g->lock);
    arena_adopt(&g->ar, &sf->ar);   /* children live until the graph is destroyed */
    pthread_mutex_unlock(&g->lock);
    if (st) {
        /* the children are dropped: none keeps the subflow freed here (kids[] past the
         * loop's stop holds those it did not reach; before it, tasks already cleared) */
        for (size_t i = 0; i < n; i++)
            task_cold_of(sf->kids[i])->sub = NULL;
        if (st == CASK_ERR_NOMEM)
            graph_fail(g, st, "task %s: out of memory launching its %zu children", task_name(parent), n);
        subflow_free(sf);
        return;
    }
    if (njoined)   /* before any child can finish */
        atomic_store_explicit(&pc->join, (int32_t)(1 + njoined), memory_order_relaxed);
    if (n)   /* the parent still counts, so the graph cannot end in between */
        atomic_fetch_add_explicit(&g->remaining, (int64_t)n, memory_order_relaxed);
    for (size_t i = 0; i < nroots; i++)
        sched_ready(s, self, sf->kids[i]);
    subflow_free(sf);
}

void subflow_child_done(sched *s, worker *self, cask_task *child, cask_task *parent)
{
    cask_graph *g = parent->graph;
    const char *msg = NULL;
    cask_status st = graph_task_status(child, g->run, &msg);
    task_cold *pc = task_cold_of(parent);   /* made with its join count (subflow_end) */
    if (st && st != CASK_ERR_CANCELLED) {
        pthread_mutex_lock(&g->lock);
        if (pc->status_run != g->run || pc->status == CASK_OK) {
            pc->status = st;
            pc->status_run = g->run;
            pc->errmsg = (char *)msg;   /* lives in the graph's arena */
        }
        pthread_mutex_unlock(&g->lock);
    }
    if (atomic_fetch_sub_explicit(&pc->join, 1, memory_order_acq_rel) == 1)
        sched_complete(s, self, parent, 1);
}
