/* graph_replay.c: replaying a graph computed again as one CUDA graph (graph_replay.h):
 * whether a graph can be replayed and where, the plan (order, predecessors, handles),
 * pinning its handles around a launch, and completing its tasks when the launch ends.
 * The CUDA calls are in replay_cuda.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/graph_replay.h"
#include "runtime/coherence.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/sched.h"

static int cmp_data(const void *a, const void *b)
{
    const replay_data *x = a, *y = b;
    return x->d < y->d ? -1 : x->d > y->d;
}

static int cmp_ord(const void *a, const void *b)
{
    const cask_task *x = *(cask_task *const *)a, *y = *(cask_task *const *)b;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static replay_data *find_data(graph_replay *p, cask_data *d)
{
    replay_data key = { .d = d };
    return bsearch(&key, p->data, p->ndata, sizeof key, cmp_data);
}

/* Drops what the plan learnt (its CUDA graph with it). */
static void plan_reset(cask_runtime *rt, graph_replay *p)
{
    if (p->x)
        replay_exec_destroy(rt, p->x);
    p->x = NULL;
    free(p->data);
    free(p->order);
    free(p->pred_start);
    free(p->pred);
    free(p->wb);
    p->data = NULL;
    p->order = NULL;
    p->pred_start = p->pred = NULL;
    p->wb = NULL;
    p->ndata = 0;
    p->recorded = 0;
    p->state = REPLAY_FRESH;
}

/* Whether every task of g can only run on a GPU and may be replayed. */
static int tasks_replayable(cask_graph *g)
{
    for (size_t i = 0; i < g->ntasks; i++) {
        cask_task *t = graph_task(g, i);
        if (!t->kernel->cuda || task_can_cpu(t) || (t->kernel->flags & CASK_KERNEL_NO_REPLAY) ||
            task_spawned(t) || task_sub(t))
            return 0;
    }
    return 1;
}

/* After a usual run of g that succeeded: where its tasks ran (one GPU for all, or no
 * replay), its order, predecessors and handles. 0, or -1 (not replayable, or out of
 * memory: the usual path). */
static int plan_learn(cask_graph *g, graph_replay *p)
{
    cask_runtime *rt = g->rt;
    sched *s = rt->sched;
    size_t n = g->ntasks;
    int dev = -1, wid = -1;
    for (size_t i = 0; i < n; i++) {
        cask_task *t = graph_task(g, i);
        if ((t->flags & (TASK_SKIPPED | TASK_WENT_ASYNC)) || t->last_worker < 0 ||
            t->last_worker >= s->nworkers)
            return -1;
        worker *w = &s->w[t->last_worker];
        if (w->kind != WORKER_GPU || (dev >= 0 && w->device != dev))
            return -1;
        dev = w->device;
        wid = w->id;
    }
    p->order = malloc(n * sizeof *p->order);
    p->pred_start = calloc(n + 1, sizeof *p->pred_start);
    p->data = calloc(g->ndatas ? g->ndatas : 1, sizeof *p->data);
    p->wb = calloc(g->ndatas ? g->ndatas : 1, sizeof *p->wb);
    if (!p->order || !p->pred_start || !p->data || !p->wb)
        return -1;
    size_t nedges = 0;
    for (size_t i = 0; i < n; i++) {
        cask_task *t = graph_task(g, i);
        p->order[i] = t;
        p->pred_start[i + 1] = p->pred_start[i] + (uint32_t)t->indegree;
        nedges += (size_t)t->indegree;
    }
    p->pred = malloc((nedges ? nedges : 1) * sizeof *p->pred);
    uint32_t *fill = malloc((n ? n : 1) * sizeof *fill);
    if (!p->pred || !fill) {
        free(fill);
        return -1;
    }
    memcpy(fill, p->pred_start, n * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        cask_task *t = graph_task(g, i);
        cask_task **sv = task_succ(t);
        for (int32_t k = 0; k < t->nsucc; k++) {
            uint32_t j = sv[k]->id;
            if (fill[j] >= p->pred_start[j + 1]) {   /* counts disagree: do not guess */
                free(fill);
                return -1;
            }
            p->pred[fill[j]++] = t->id;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (fill[i] != p->pred_start[i + 1]) {
            free(fill);
            return -1;
        }
    free(fill);
    qsort(p->order, n, sizeof *p->order, cmp_ord);
    p->ndata = g->ndatas;
    for (size_t i = 0; i < p->ndata; i++)
        p->data[i].d = g->datas[i];
    qsort(p->data, p->ndata, sizeof *p->data, cmp_data);
    uint8_t *seen = calloc(p->ndata ? p->ndata : 1, 1);
    if (!seen)
        return -1;
    for (size_t k = 0; k < n; k++) {   /* what the first access of each handle does */
        cask_task *t = p->order[k];
        for (int a = 0; a < t->naccess; a++) {
            replay_data *rd = find_data(p, t->access[a].data);
            if (!rd) {
                free(seen);
                return -1;
            }
            size_t di = (size_t)(rd - p->data);
            cask_access_mode m = t->access[a].mode;
            if (!seen[di] && (m & CASK_READ))
                rd->mode |= CASK_READ;
            seen[di] = 1;
            if (m & CASK_WRITE)
                rd->mode |= CASK_WRITE;
        }
    }
    free(seen);
    if (!rt->sim && replay_exec_create(rt, dev, &p->x))
        return -1;
    p->device = dev;
    p->worker = wid;
    p->ntasks = n;
    /* the stand-in task: bound to that GPU, no buffers, named for traces and errors */
    cask_task *st = &p->task;
    st->where = CASK_WHERE_GPU;
    st->level = SCHED_PRIO_MID;
    st->device = (int8_t)dev;
    st->last_worker = (int16_t)wid;
    st->flags = TASK_REPLAY;
    st->graph = g;
    st->id = UINT32_MAX;
    st->kernel = rt->replay_kernel;
    st->succ1 = NULL;
    snprintf(p->name, sizeof p->name, "replay of %zu tasks (graph %u, first kernel %s)", n,
             g->id, n ? p->order[0]->kernel->name : "-");
    p->cold.name = p->name;
    atomic_store_explicit(&st->cold, &p->cold, memory_order_release);
    return 0;
}

/* The stand-in's implementation on a simulated GPU: the plan's tasks' CPU
 * implementations, in its order, on the GPU's replicas, at once (a real GPU's stand-in
 * waits for the launch instead: replay_wait_cuda). So the plan, the pins and the
 * completion run in the unit tests too. A failing task fails the graph with its own
 * name; the tasks after it do not run. */
static cask_status replay_run_sim(cask_task_ctx *ctx)
{
    graph_replay *p = (graph_replay *)ctx->task;   /* the stand-in is the plan's first member */
    cask_graph *g = ctx->task->graph;
    for (size_t k = 0; k < p->ntasks; k++) {
        if (atomic_load_explicit(&g->failed, memory_order_relaxed))
            break;
        cask_task *t = p->order[k];
        cask_task_ctx c;
        task_ctx_init(&c, t, p->device, ctx->worker, NULL);
        for (int i = 0; i < t->naccess; i++) {
            cask_data *d = t->access[i].data;
            c.buf[i] = d->rep[1 + p->device].ptr;   /* pinned: it stays there */
            c.size[i] = d->bytes;
        }
        cask_status st = t->kernel->cpu(&c);
        if (!st && (c.async || c.sub))
            st = cask_task_fail(&c, "it %s while replayed (its kernel needs CASK_KERNEL_NO_REPLAY)",
                                c.async ? "went asynchronous" : "spawned tasks");
        if (st) {
            task_ctx_report(&c, st);
            break;
        }
    }
    return CASK_OK;
}

/* The runtime's stand-in kernel, registered on first use. */
static int replay_kernel(cask_runtime *rt)
{
    pthread_mutex_lock(&rt->lock);
    int have = rt->replay_kernel != NULL;
    pthread_mutex_unlock(&rt->lock);
    if (have)
        return 0;
    cask_kernel_desc kd = { .name = "cask.replay", .cpu = replay_run_sim,
                            .cuda = replay_wait_cuda, .flags = CASK_KERNEL_NO_REPLAY };
    cask_kernel *k;
    if (cask_kernel_register(rt, &kd, &k))
        return -1;
    pthread_mutex_lock(&rt->lock);
    if (!rt->replay_kernel)
        rt->replay_kernel = k;   /* (a second one, from a race, stays unused in the list) */
    pthread_mutex_unlock(&rt->lock);
    return 0;
}

/* Unpins the first n handles (a launch that did not happen). */
static void unpin(cask_runtime *rt, graph_replay *p, size_t n)
{
    cask_status st;
    for (size_t i = 0; i < n; i++)
        coh_replay_unpin(rt, p->data[i].d, p->device, 0, NULL, &st);
}

int graph_replay_begin(cask_graph *g, int prev_ok)
{
    cask_runtime *rt = g->rt;
    int on = rt->cfg.graph_replay < 0 ? !rt->sim : rt->cfg.graph_replay;
    if (!on || !rt->dev || g->ntasks == 0 || g->want_dynamic)
        return 0;
    graph_replay *p = g->replay;
    if (!p) {
        if (!(p = aligned_alloc(64, (sizeof *p + 63) & ~(size_t)63)))
            return 0;
        memset(p, 0, sizeof *p);
        p->shape = g->shape - 1;
        g->replay = p;
    }
    if (p->shape != g->shape) {   /* built anew or changed: the usual run says where */
        plan_reset(rt, p);
        p->shape = g->shape;
        p->state = REPLAY_LEARN;   /* (a graph computed once costs no more than this) */
        return 0;
    }
    if (p->state == REPLAY_OFF)
        return 0;
    if (p->state == REPLAY_LEARN) {
        if (!prev_ok)
            return 0;
        if (!tasks_replayable(g) || replay_kernel(rt) || plan_learn(g, p)) {
            plan_reset(rt, p);
            p->state = REPLAY_OFF;
            log_msg(rt, CASK_LOG_DEBUG, "graph %u: not replayed (a task may run on a CPU, "
                    "went asynchronous or was skipped, or its tasks ran on several GPUs)", g->id);
            return 0;
        }
        p->state = REPLAY_READY;
    }
    /* every handle valid (or, written first, allocated) on the GPU, pinned there */
    worker_counters *ctr = &rt->sched->w[p->worker].ctr;
    void *stream = rt->sim ? NULL : replay_exec_stream(p->x);   /* (simulated: copies now) */
    int moved = !p->recorded;
    for (size_t i = 0; i < p->ndata; i++) {
        replay_data *rd = &p->data[i];
        void *ptr = NULL;
        cask_status st = coh_replay_pin(rt, rd->d, p->device, (cask_access_mode)rd->mode, stream,
                                        ctr, &ptr);
        if (st) {   /* no room for all of it at once, or a copy failed: the usual path */
            unpin(rt, p, i);
            log_msg(rt, CASK_LOG_DEBUG, "graph %u: not replayed this time: data %s cannot be "
                    "pinned on GPU %d (%s)", g->id, rd->d->name, p->device, cask_status_string(st));
            return 0;
        }
        if (ptr != rd->ptr) {
            rd->ptr = ptr;
            moved = 1;
        }
    }
    if (rt->sim) {   /* a simulated GPU runs the plan on its worker (replay_run_sim) */
        p->launched = 1;
        p->nreplays++;
        return 1;
    }
    if (moved) {
        char msg[512] = "";
        int updated = 0;
        cask_status st = replay_record(rt, p, &updated, msg, sizeof msg);
        if (st) {
            unpin(rt, p, p->ndata);
            p->recorded = 0;
            p->state = REPLAY_OFF;   /* until the graph changes */
            log_msg(rt, CASK_LOG_INFO, "graph %u: not replayed: %s", g->id, msg);
            return 0;
        }
        p->recorded = 1;
        p->nrecords++;
        p->nupdates += (uint64_t)updated;
    }
    cask_status st = replay_launch(rt, p);
    if (st) {
        /* nothing was launched, or the launch failed: the device error shows again on
         * the usual path, which reports it with the task that meets it */
        unpin(rt, p, p->ndata);
        p->recorded = 0;
        return 0;
    }
    p->launched = 1;
    p->nreplays++;
    return 1;
}

void graph_replay_push(cask_graph *g)
{
    sched_ready(g->rt->sched, NULL, &g->replay->task);
}

void graph_replay_complete(worker *w, cask_task *t, cask_data ***wb, int *nwb)
{
    graph_replay *p = (graph_replay *)t;   /* the stand-in is the plan's first member */
    cask_graph *g = t->graph;
    cask_runtime *rt = g->rt;
    *nwb = 0;
    *wb = p->wb;
    int ok = !atomic_load_explicit(&g->failed, memory_order_relaxed);
    for (size_t i = 0; i < p->ndata; i++) {
        cask_status st;
        if (coh_replay_unpin(rt, p->data[i].d, p->device, (p->data[i].mode & CASK_WRITE) != 0,
                             &w->ctr, &st))
            p->wb[(*nwb)++] = p->data[i].d;
        else if (st)
            graph_fail(g, st, "write-back of data %s after %s failed", p->data[i].d->name, p->name);
    }
    p->launched = 0;
    /* the graph's tasks finished with the launch: done in this run (tasks added while it
     * ran wait on them), counted as run */
    for (size_t i = 0; i < p->ntasks; i++) {   /* (tasks added since are after them) */
        cask_task *t2 = graph_task(g, i);
        if (!ok || (t2->flags & TASK_SKIPPED))   /* a failed launch: cancelled, as skipped */
            t2->flags = ok ? t2->flags & ~TASK_SKIPPED : t2->flags | TASK_SKIPPED;
        graph_task_done(w, t2);
    }
    if (ok) {
        atomic_store_explicit(&g->ntasks_replayed, (uint64_t)p->ntasks, memory_order_relaxed);
        atomic_fetch_add_explicit(&g->ntasks_run, (uint64_t)p->ntasks - 1, memory_order_relaxed);
        w->run_count += p->ntasks - 1;   /* (the stand-in counts as the first) */
    }
}

void graph_replay_free(cask_graph *g)
{
    graph_replay *p = g->replay;
    if (!p)
        return;
    plan_reset(g->rt, p);
    free(p);
    g->replay = NULL;
}
