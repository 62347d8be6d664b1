/* graph_run.c: running a graph: submit (checks, data in use, roots to the workers), the
 * end of a run, waiting with an optional progress bar, and queries. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "runtime/graph.h"
#include "runtime/graph_replay.h"
#include "runtime/dash_live.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/sched.h"
static int called_from_worker(cask_runtime *rt)
{
    sched *s = rt->sched;
    pthread_t self = pthread_self();
    for (int i = 0; i < s->nworkers; i++)
        if (s->w[i].started && pthread_equal(s->w[i].thread, self))
            return 1;
    return 0;
}

/* rt->open_graphs: graphs holding their submission count (rt->lock held). */
static void open_link(cask_runtime *rt, cask_graph *g)
{
    g->open_prev = NULL;
    g->open_next = rt->open_graphs;
    if (rt->open_graphs)
        rt->open_graphs->open_prev = g;
    rt->open_graphs = g;
}

static void open_unlink(cask_runtime *rt, cask_graph *g)
{
    if (g->open_prev)
        g->open_prev->open_next = g->open_next;
    else
        rt->open_graphs = g->open_next;
    if (g->open_next)
        g->open_next->open_prev = g->open_prev;
    g->open_next = g->open_prev = NULL;
}

/* Ends g's submission: drops the count it held, so that the run ends once every task
 * added so far has finished. Returns whether it was open. */
static int close_submission(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    pthread_mutex_lock(&g->lock);   /* g->lock before rt->lock, as adds while running */
    pthread_mutex_lock(&rt->lock);
    int was = g->open;
    if (was) {
        g->open = 0;
        open_unlink(rt, g);
    }
    pthread_mutex_unlock(&rt->lock);
    pthread_mutex_unlock(&g->lock);
    if (was)
        sched_count_done(NULL, g, 1, 0);
    return was;
}

void graph_close_open(cask_runtime *rt)
{
    for (;;) {
        pthread_mutex_lock(&rt->lock);
        cask_graph *g = rt->open_graphs;
        pthread_mutex_unlock(&rt->lock);
        if (!g)
            return;
        close_submission(g);
    }
}

cask_status cask_graph_submit(cask_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    cask_runtime *rt = g->rt;
    pthread_mutex_lock(&g->lock);
    int running = atomic_load(&g->state) == GRAPH_RUNNING;
    pthread_mutex_unlock(&g->lock);
    if (running)
        return log_error(rt, CASK_ERR_STATE, "cask_graph_submit: graph already running");
    int prev_ok = g->status == CASK_OK;   /* (of the previous run: replays learn from it) */
    g->status = CASK_OK;
    g->error[0] = 0;
    atomic_store(&g->failed, 0);
    if (!g->roots_valid) {
        cask_status st = graph_check(g);
        if (st)
            return st;
        g->shape++;
    }
    /* data used by another running graph, or held by the user, cannot be used */
    pthread_mutex_lock(&rt->lock);
    for (size_t i = 0; i < g->ndatas; i++) {
        cask_data *d = g->datas[i];
        if (d->acquired || atomic_load(&d->running) > 0) {
            pthread_mutex_unlock(&rt->lock);
            return log_error(rt, CASK_ERR_BUSY, "cask_graph_submit: data %s is %s", d->name,
                             d->acquired ? "acquired by the user" : "used by a running graph");
        }
    }
    for (size_t i = 0; i < g->ndatas; i++)
        atomic_fetch_add(&g->datas[i]->running, 1);
    rt->ngraphs_running++;
    pthread_mutex_unlock(&rt->lock);

    if (g->dirty) {
        for (size_t s = 0; s < g->nslabs; s++) {
            cask_task *t = g->slabs[s];
            for (size_t i = 0, n = graph_slab_len(g, s); i < n; i++)
                atomic_store_explicit(&t[i].pending, t[i].indegree, memory_order_relaxed);
        }
        g->dirty = 0;   /* each task resets its own count when it finishes */
    }
    if (!g->ranges) {
        g->ranges = calloc((size_t)rt->sched->nworkers, sizeof *g->ranges);
        if (!g->ranges) {
            pthread_mutex_lock(&rt->lock);
            for (size_t i = 0; i < g->ndatas; i++)
                atomic_fetch_sub(&g->datas[i]->running, 1);
            rt->ngraphs_running--;
            pthread_cond_broadcast(&rt->graphs_cond);
            pthread_mutex_unlock(&rt->lock);
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_submit");
        }
    }
    /* the GPU work launched as one CUDA graph, completed by one stand-in task, or not */
    int replay = rt->cfg.graph_replay && rt->dev ? graph_replay_begin(g, prev_ok) : 0;
    atomic_store(&g->ntasks_run, 0);
    atomic_store(&g->ntasks_replayed, 0);
    /* every task (or the stand-in), and one more held by the submission until
     * cask_graph_wait: tasks may be added until then */
    atomic_store(&g->remaining, replay ? 2 : (int64_t)g->ntasks + 1);
    g->run++;
    g->strong_fence = rt->strong_fence;
    g->nadded = 0;
    atomic_store(&g->dynamic, g->want_dynamic);
    g->want_dynamic = 0;
    pthread_mutex_lock(&g->lock);
    pthread_mutex_lock(&rt->lock);
    atomic_store(&g->state, GRAPH_RUNNING);
    g->done = 0;
    g->open = 1;
    open_link(rt, g);
    pthread_mutex_unlock(&rt->lock);
    pthread_mutex_unlock(&g->lock);
    g->t_submit = sched_now_ns();
    if (rt->live)
        dash_graph_start(rt, g);
    if (replay)
        graph_replay_push(g);
    else if (g->nroots)
        sched_submit(rt->sched, g);
    return CASK_OK;
}

void graph_finish(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    g->t_done = sched_now_ns();
    if (rt->live)
        dash_graph_end(rt, g);   /* before the waiter may free g */
    pthread_mutex_lock(&rt->lock);
    for (size_t i = 0; i < g->ndatas; i++)
        atomic_fetch_sub(&g->datas[i]->running, 1);
    rt->ngraphs_running--;
    pthread_cond_broadcast(&rt->graphs_cond);
    pthread_mutex_unlock(&rt->lock);
    pthread_mutex_lock(&g->lock);
    g->done = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);   /* last touch of g: the waiter may free it now */
}

/* Waits for g (locked) while drawing a progress bar on stderr: after the first second,
 * every 0.2 s, "tasks done/total, rate, ETA"; erased at the end. */
static void wait_with_progress(cask_graph *g)
{
    const uint64_t first = 1000000000ull, every = 200000000ull;
    int drawn = 0;
    while (!g->done) {
        uint64_t now = sched_now_ns();
        uint64_t next = now + (now - g->t_submit < first ? first - (now - g->t_submit) : every);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (next - now);
        ts.tv_sec = (time_t)(abs_ns / 1000000000ull);
        ts.tv_nsec = (long)(abs_ns % 1000000000ull);
        pthread_cond_timedwait(&g->cond, &g->lock, &ts);
        if (g->done)
            break;
        double el = (double)(sched_now_ns() - g->t_submit) * 1e-9;
        if (el < 1.0)
            continue;
        uint64_t run = atomic_load(&g->ntasks_run);
        double rate = run / el;
        double eta = rate > 0 ? (double)(g->ntasks - (run < g->ntasks ? run : g->ntasks)) / rate : 0;
        int width = 30, fill = g->ntasks ? (int)((double)run * width / (double)g->ntasks) : 0;
        if (fill > width) fill = width;
        fprintf(stderr, "\r[cask] [%.*s%*s] %llu/%zu tasks %.3g/s ETA %.1fs ", fill,
                "##############################", width - fill, "", (unsigned long long)run, g->ntasks,
                rate, eta);
        fflush(stderr);
        drawn = 1;
    }
    if (drawn) {
        fprintf(stderr, "\r%*s\r", 90, "");
        fflush(stderr);
    }
}

cask_status cask_graph_wait(cask_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    if (called_from_worker(g->rt))
        return log_error(g->rt, CASK_ERR_STATE, "cask_graph_wait called from a task");
    int progress = g->rt->cfg.progress;
    if (progress < 0)
        progress = isatty(fileno(stderr));
    close_submission(g);
    pthread_mutex_lock(&g->lock);
    if (progress)
        wait_with_progress(g);
    while (!g->done)
        pthread_cond_wait(&g->cond, &g->lock);
    if (g->nadded)   /* tasks added while running: check again before the next run */
        g->roots_valid = 0;
    atomic_store(&g->state, GRAPH_IDLE);
    cask_status st = g->status;
    pthread_mutex_unlock(&g->lock);
    if (st)
        log_error(g->rt, st, "%s", g->error);
    return st;
}

cask_status cask_graph_compute(cask_graph *g)
{
    cask_status st = cask_graph_submit(g);
    if (st)
        return st;
    return cask_graph_wait(g);
}

const char *cask_graph_error(const cask_graph *g)
{
    return g ? g->error : "";
}

cask_status cask_graph_query(const cask_graph *g, cask_graph_info *info)
{
    if (!g || !info)
        return CASK_ERR_INVALID;
    cask_graph *mg = (cask_graph *)g;
    pthread_mutex_lock(&mg->lock);   /* tasks may be added while it runs */
    info->ntasks = g->ntasks;
    info->nedges = g->nedges;
    pthread_mutex_unlock(&mg->lock);
    info->ntasks_run = atomic_load(&mg->ntasks_run);
    info->ntasks_replayed = atomic_load(&mg->ntasks_replayed);
    info->elapsed_s = g->t_done > g->t_submit ? (double)(g->t_done - g->t_submit) * 1e-9 : 0.0;
    return CASK_OK;
}

