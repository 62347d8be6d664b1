/* distributed/dist_steal_life.c: balancing while running, the state's life and the run hooks:
 * init (the environment knobs), the message handler's registration, the balancing
 * thread's start and stop (refusing what it had not run), finalize; a run's begin, its
 * local graph's end and its end (a failed run is remembered: tasks of it that peers
 * give this rank are answered with its failure, dist_steal_exec.c). */
#include "distributed/dist_steal_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/log.h"
#include "runtime/runtime.h"

/* ---- runs ---- */

void dist_steal_run_begin(cask_dist_graph *g)
{
    struct dist_steal *S = g->dist->stl;
    if (!S || !g->stl)
        return;
    g->stl->local_done = 0;
    atomic_store(&S->cur_run, (uint64_t)g->id << 32 | g->run);
    atomic_fetch_add(&S->active, 1);
    pthread_mutex_lock(&S->mu);
    pthread_cond_broadcast(&S->cv);
    pthread_mutex_unlock(&S->mu);
}

void dist_steal_local_done(cask_dist_graph *g)
{
    struct dist_steal *S = g->dist->stl;
    if (!S || !g->stl || g->stl->local_done)
        return;
    g->stl->local_done = 1;
    atomic_fetch_add(&S->active_done, 1);
}

void dist_steal_run_end(cask_dist_graph *g, cask_status st)
{
    struct dist_steal *S = g->dist->stl;
    if (S && st) {
        pthread_mutex_lock(&S->mu);
        steal_failed_run *f = &S->failed[S->failed_next];
        S->failed_next = (S->failed_next + 1) % STEAL_FAILED_RUNS;
        f->graph = g->id;
        f->run = g->run;
        f->st = st;
        snprintf(f->msg, sizeof f->msg, "%.*s", (int)sizeof f->msg - 1,
                 g->error[0] ? g->error : cask_status_string(st));
        pthread_mutex_unlock(&S->mu);
    }
    if (!S || !g->stl)
        return;
    if (g->stl->local_done)
        atomic_fetch_sub(&S->active_done, 1);
    g->stl->local_done = 0;
    pthread_mutex_lock(&S->mu);
    if (atomic_fetch_sub(&S->active, 1) == 1 && S->announced) {
        steal_tell_idle(S, 0, 0);   /* at once: the next run may begin before the thread looks */
        S->announced = 0;
    }
    pthread_mutex_unlock(&S->mu);
    size_t out = atomic_load(&g->stl->out), in = atomic_load(&g->stl->in);
    if (out || in)
        log_msg(g->dist->rt, CASK_LOG_INFO, "dist graph %u run %u rank %d: balancing: %zu "
                "tasks ran on other ranks, %zu of theirs ran here (so far)", g->id, g->run,
                g->dist->rank, out, in);
}

/* ---- life ---- */

cask_status dist_steal_init(cask_dist *dist, const cask_dist_config *cfg)
{
    const char *s = getenv("CASK_DIST_BALANCE");
    /* opt-in for now: the rank it made random gather graphs lose now and then was a
     * transport deadlock, fixed; a default that changes every job's behaviour should
     * first pass a chaos soak with it on (docs/distributed.md, Limits) */
    int balance = s && *s ? atoi(s) != 0 : 0;
    if (cfg && (cfg->field_mask & CASK_DIST_BALANCE))
        balance = cfg->balance != 0;
    double bw = 1e9;
    if ((s = getenv("CASK_DIST_BALANCE_BW")) && *s) {
        char *end;
        bw = strtod(s, &end);
        if (*end || !(bw > 0))
            return log_error(dist->rt, CASK_ERR_INVALID, "cask_dist_init: CASK_DIST_BALANCE_BW="
                             "%s: want a positive number of bytes per second", s);
    }
    int slow_rank = -1, spin = 0;
    double factor = 1;
    if ((s = getenv("CASK_DIST_SLOW_RANK")) && *s) {
        char *end;
        long r = strtol(s, &end, 10);
        if (end != s && *end == ':' && r >= 0 && r < dist->size &&
            (factor = strtod(end + 1, &end)) >= 1 && (!*end || !strcmp(end, ":spin") ||
                                                       !strcmp(end, ":sleep"))) {
            spin = !strcmp(end, ":spin");
            slow_rank = (int)r;
        } else {
            return log_error(dist->rt, CASK_ERR_INVALID, "cask_dist_init: CASK_DIST_SLOW_RANK="
                             "%s: want RANK:FACTOR[:sleep|:spin], a rank below %d and a factor "
                             ">= 1", s, dist->size);
        }
    }
    if ((!balance || dist->size == 1) && slow_rank < 0)
        return CASK_OK;   /* nothing to wrap: tasks run as the plan says, unwrapped */
    struct dist_steal *S = calloc(1, sizeof *S);
    if (!S)
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_init");
    S->dist = dist;
    S->balance = balance && dist->size > 1;
    S->bw = bw;
    S->slow_rank = slow_rank;
    S->slow_factor = factor;
    S->slow_spin = spin;
    pthread_mutex_init(&S->mu, NULL);
    pthread_cond_init(&S->cv, NULL);
    S->idle = calloc((size_t)dist->size, sizeof *S->idle);
    S->inflight = calloc((size_t)dist->size, sizeof *S->inflight);
    S->svc_ns = calloc((size_t)dist->size, sizeof *S->svc_ns);
    S->idle_seq = calloc((size_t)dist->size, sizeof *S->idle_seq);
    S->idle_run = calloc((size_t)dist->size, sizeof *S->idle_run);
    S->adv_hash = calloc((size_t)dist->size * STEAL_ADV, sizeof *S->adv_hash);
    S->adv_us = calloc((size_t)dist->size * STEAL_ADV, sizeof *S->adv_us);
    S->nvs = STEAL_CREDIT_MAX * (dist->size - 1);
    S->vs = calloc(S->nvs ? (size_t)S->nvs : 1, sizeof *S->vs);
    dist->stl = S;
    if (!S->idle || !S->inflight || !S->vs || !S->svc_ns || !S->idle_seq || !S->idle_run ||
        !S->adv_hash || !S->adv_us)
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_init");
    for (int i = 0; i < STEAL_CREDIT * (dist->size - 1); i++) {   /* room for what peers
                                                                  may give (more: made) */
        tslot *ts = calloc(1, sizeof *ts);
        if (!ts)
            return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_init");
        ts->S = S;
        ts->all_next = S->tall;
        S->tall = ts;
        ts->next = S->tfree;
        S->tfree = ts;
    }
    if (slow_rank == dist->rank)
        log_msg(dist->rt, CASK_LOG_WARN, "cask_dist_init: rank %d slowed on purpose: its task "
                "bodies take %gx as long (CASK_DIST_SLOW_RANK, %s)", dist->rank, factor,
                spin ? "spinning" : "sleeping");
    return CASK_OK;
}

void dist_steal_register(cask_dist *dist)
{
#ifdef CASK_HAVE_UCX
    if (dist->stl && dist->ucx)
        xport_ucx_set_handler(dist->ucx, DIST_AM_STEAL, steal_on_msg, dist->stl);
#else
    (void)dist;
#endif
}

cask_status dist_steal_start(cask_dist *dist)
{
    struct dist_steal *S = dist->stl;
    if (!S || !S->balance)
        return CASK_OK;
    if (pthread_create(&S->thread, NULL, steal_thread, S))
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_init: the balancing thread");
    S->thread_on = 1;
    return CASK_OK;
}

void dist_steal_stop(cask_dist *dist)
{
    struct dist_steal *S = dist->stl;
    if (!S)
        return;
    pthread_mutex_lock(&S->mu);
    S->stop = 1;
    pthread_cond_broadcast(&S->cv);
    pthread_mutex_unlock(&S->mu);
    if (S->thread_on)
        pthread_join(S->thread, NULL);
    S->thread_on = 0;
    /* Tasks taken and not run (their victims' runs failed, or this rank's did): their
     * victims must hear, before this rank says goodbye, that no result will come. */
    pthread_mutex_lock(&S->mu);
    tslot *q = S->qhead;
    S->qhead = S->qtail = NULL;
    if (S->deferred) {
        tslot *last = S->deferred;
        while (last->next)
            last = last->next;
        last->next = q;
        q = S->deferred;
        S->deferred = NULL;
    }
    pthread_mutex_unlock(&S->mu);
    while (q) {
        tslot *next = q->next;
        steal_refuse(S, q);
        q = next;
    }
}

void dist_steal_finalize(cask_dist *dist)
{
    struct dist_steal *S = dist->stl;
    if (!S)
        return;
    dist_steal_stop(dist);
    while (S->cache) {
        steal_cached *e = S->cache;
        S->cache = e->next;
        free(e->buf);
        free(e);
    }
    while (S->tall) {
        tslot *ts = S->tall;
        S->tall = ts->all_next;
        free(ts->args);
        free(ts->buf);
        free(ts->out);
        free(ts);
    }
    for (int i = 0; i < S->nvs; i++) {
        free(S->vs[i].in);
        free(S->vs[i].res);
    }
    free(S->vs);
    free((void *)S->idle);
    free(S->inflight);
    free(S->svc_ns);
    free(S->idle_seq);
    free((void *)S->idle_run);
    free((void *)S->adv_hash);
    free((void *)S->adv_us);
    pthread_mutex_destroy(&S->mu);
    pthread_cond_destroy(&S->cv);
    free(S);
    dist->stl = NULL;
}
