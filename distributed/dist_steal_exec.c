/* distributed/dist_steal_exec.c: balancing while running, the thief's side: a task taken from
 * a peer (its kernel and arguments are this rank's copy of the same graph's task; its
 * inputs come in the message, or from the inputs kept from earlier tasks of the same
 * run) runs as a one-task cask graph on this rank's workers, on the balancing thread,
 * which also tells the peers when this rank becomes idle or busy. The run hooks and
 * the state's life are in dist_steal_life.c. */
#include "distributed/dist_steal_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/deadline.h"
#include "runtime/log.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"    /* sleeping workers: idleness */

/* ---- the input cache ---- */

/* Drops the kept inputs of graph (of its runs before run; all: run 0), not in use. */
static void cache_drop(struct dist_steal *S, uint32_t graph, uint32_t run)
{
    for (steal_cached **pe = &S->cache; *pe;) {
        steal_cached *e = *pe;
        if (e->graph == graph && (run == 0 || e->run < run) && !e->refs) {
            *pe = e->next;
            free(e->buf);
            free(e);
        } else {
            pe = &e->next;
        }
    }
}

void steal_cache_drop_graph(struct dist_steal *S, uint32_t graph)
{
    pthread_mutex_lock(&S->mu);
    cache_drop(S, graph, 0);
    pthread_mutex_unlock(&S->mu);
}

static steal_cached *cache_find(struct dist_steal *S, uint32_t graph, uint32_t run,
                                uint32_t gid, uint32_t version)
{
    for (steal_cached *e = S->cache; e; e = e->next)
        if (e->graph == graph && e->run == run && e->gid == gid && e->version == version)
            return e;
    return NULL;
}

/* ---- taking a task ---- */

/* If run `run` of graph `graph` failed here, its failure for a task of it taken from a
 * peer: msg (len bytes) says so, returns the status; CASK_OK if not known failed. */
static cask_status failed_run(struct dist_steal *S, uint32_t graph, uint32_t run, char *msg,
                              size_t len)
{
    cask_status st = CASK_OK;
    pthread_mutex_lock(&S->mu);
    for (int i = 0; i < STEAL_FAILED_RUNS && !st; i++) {
        const steal_failed_run *f = &S->failed[i];
        if (f->graph && f->graph == graph && f->run == run) {
            st = f->st;
            snprintf(msg, len, "rank %d did not run it, its run had failed: %s",
                     S->dist->rank, f->msg);
        }
    }
    pthread_mutex_unlock(&S->mu);
    return st;
}

/* Answers a taken task that will not run here (this rank leaves the job). The run it
 * belongs to may have failed here already (the victim has not heard yet; its thief
 * left because of it): then that failure, the cause, not the leaving. */
void steal_refuse(struct dist_steal *S, tslot *ts)
{
    char msg[CASK_ERRMSG_LEN];
    cask_status st = failed_run(S, ts->graph, ts->run, msg, sizeof msg);
    if (!st) {
        st = CASK_ERR_PEER;
        snprintf(msg, sizeof msg, "rank %d left the job before running it", S->dist->rank);
    }
    steal_send_result(S, ts, st, msg);
}

#ifdef CASK_HAVE_UCX
static void enqueue(struct dist_steal *S, tslot *ts)
{
    pthread_mutex_lock(&S->mu);
    if (S->stop) {   /* the thread is gone: the victim must not wait for it */
        pthread_mutex_unlock(&S->mu);
        steal_refuse(S, ts);
        return;
    }
    ts->next = NULL;
    if (S->qtail)
        S->qtail->next = ts;
    else
        S->qhead = ts;
    S->qtail = ts;
    pthread_cond_broadcast(&S->cv);
    pthread_mutex_unlock(&S->mu);
}

static void inputs_landed(void *arg, cask_status st, const char *why)
{
    tslot *ts = arg;
    if (st) {
        char msg[256];
        snprintf(msg, sizeof msg, "receiving its inputs on rank %d: %s", ts->S->dist->rank, why);
        steal_send_result(ts->S, ts, st, msg);
        return;
    }
    enqueue(ts->S, ts);
}

void steal_on_task(struct dist_steal *S, xport_ucx_msg *m, const steal_hdr *h)
{
    cask_dist *dist = S->dist;
    pthread_mutex_lock(&S->mu);
    tslot *ts = S->tfree;
    if (ts) {
        S->tfree = ts->next;
    } else if ((ts = calloc(1, sizeof *ts))) {   /* more than the credits allow: a spare */
        ts->S = S;
        ts->all_next = S->tall;
        S->tall = ts;
    }
    pthread_mutex_unlock(&S->mu);
    if (!ts)
        return;   /* out of memory: the victim fails when this rank is found dead */
    ts->victim = m->peer;
    ts->graph = h->graph;
    ts->run = h->run;
    ts->ticket = h->ticket;
    ts->index = h->index;
    ts->inmask = h->inmask;
    ts->keepmask = h->keepmask;
    char err[CASK_ERRMSG_LEN] = "";
    cask_status st = CASK_OK;
    pthread_mutex_lock(&dist->mu);
    cask_dist_graph *g = dist_find_graph(dist, h->graph);
    if (!g || !g->planned || g->plan_failed || h->index >= g->ntasks) {
        st = CASK_ERR_STATE;
        snprintf(err, sizeof err, "rank %d has no planned graph %u with task %u", dist->rank,
                 h->graph, h->index);
    } else {
        const dist_task *dt = &g->tasks[h->index];
        ts->kernel = dt->kernel;
        ts->naccess = dt->naccess;
        snprintf(ts->name, sizeof ts->name, "%s", dt->name ? dt->name : dt->kernel->name);
        for (int a = 0; a < dt->naccess; a++) {
            ts->mode[a] = dt->access[a].mode;
            ts->gid[a] = dt->access[a].gid;
            ts->size[a] = dist->data[dt->access[a].gid].bytes;
            ts->version[a] = h->version[a];
        }
        ts->args_size = dt->args_size;
        if (steal_grow(&ts->args, &ts->args_cap, dt->args_size ? dt->args_size : 1)) {
            st = CASK_ERR_NOMEM;
            snprintf(err, sizeof err, "rank %d: no memory for its arguments", dist->rank);
        } else if (dt->args_size) {
            memcpy(ts->args, dt->args, dt->args_size);
        }
        if (g->stl)
            atomic_fetch_add(&g->stl->in, 1);
    }
    pthread_mutex_unlock(&dist->mu);
    if (st) {   /* its run failed here, and the graph went since: that failure */
        char why[sizeof err];
        cask_status fst = failed_run(S, h->graph, h->run, why, sizeof why);
        if (fst) {
            st = fst;
            memcpy(err, why, sizeof err);
        }
    }
    /* layout: the inputs that came, packed as sent; then room for the outputs that
     * read nothing, and for those that read a kept input (run_taken copies it there:
     * written in place, the kept copy would no longer be the version it is kept as) */
    size_t off = 0;
    for (int a = 0; !st && a < ts->naccess; a++)
        if (ts->inmask & (1u << a)) {
            ts->off[a] = off;
            off += steal_align(ts->size[a]);
        }
    ts->inlen = off;
    for (int a = 0; !st && a < ts->naccess; a++)
        if (!(ts->mode[a] & CASK_READ) ||
            ((ts->mode[a] & CASK_WRITE) && !(ts->inmask & (1u << a)))) {
            ts->off[a] = off;
            off += steal_align(ts->size[a]);
        }
    if (!st && m->len != ts->inlen) {
        st = CASK_ERR_INVALID;
        snprintf(err, sizeof err, "rank %d expected %zu bytes of inputs, %zu came", dist->rank,
                 ts->inlen, m->len);
    }
    if (!st && steal_grow(&ts->buf, &ts->cap, off ? off : 1)) {
        st = CASK_ERR_NOMEM;
        snprintf(err, sizeof err, "rank %d: no memory for %zu bytes of inputs", dist->rank, off);
    }
    if (!st && ts->inlen) {
        st = xport_ucx_recv_into(m, ts->buf, inputs_landed, ts);
        if (!st)
            return;
        snprintf(err, sizeof err, "rank %d could not receive its inputs", dist->rank);
    }
    if (st)
        steal_send_result(S, ts, st, err);
    else
        enqueue(S, ts);
}
#endif

/* Runs ts as a one-task graph on this rank's workers and sends the outputs back. */
static void run_taken(struct dist_steal *S, tslot *ts)
{
    cask_runtime *rt = S->dist->rt;
    void *ptr[CASK_MAX_BUFFERS];
    steal_cached *pin[CASK_MAX_BUFFERS] = {0};
    cask_data *h[CASK_MAX_BUFFERS] = {0};
    cask_graph *lg = NULL;
    char msg[512] = "";
    cask_status st = CASK_OK;
    double t0 = dist_now_s();
    pthread_mutex_lock(&S->mu);
    cache_drop(S, ts->graph, ts->run);   /* runs before this one are over everywhere */
    for (int a = 0; a < ts->naccess && !st; a++) {
        uint32_t bit = 1u << a;
        if ((ts->mode[a] & CASK_READ) && !(ts->inmask & bit)) {
            steal_cached *e = cache_find(S, ts->graph, ts->run, ts->gid[a], ts->version[a]);
            if (!e) {
                st = CASK_ERR_STATE;
                snprintf(msg, sizeof msg, "its input %d (datum %u version %u) should have been "
                         "kept on rank %d and was not", a, ts->gid[a], ts->version[a],
                         S->dist->rank);
                break;
            }
            e->refs++;
            pin[a] = e;
            /* written: into a copy (made below, out of the lock), the kept one stays */
            ptr[a] = (ts->mode[a] & CASK_WRITE) ? ts->buf + ts->off[a] : e->buf;
        } else {
            ptr[a] = ts->buf + ts->off[a];
        }
    }
    pthread_mutex_unlock(&S->mu);
    for (int a = 0; a < ts->naccess && !st; a++)
        if (pin[a] && ptr[a] != pin[a]->buf)
            memcpy(ptr[a], pin[a]->buf, ts->size[a]);
    /* inputs that later tasks of this run will not bring again: keep a copy */
    for (int a = 0; a < ts->naccess && !st; a++) {
        uint32_t bit = 1u << a;
        if (!(ts->keepmask & bit) || !(ts->inmask & bit))
            continue;
        steal_cached *e = calloc(1, sizeof *e);
        void *b = e ? malloc(ts->size[a] ? ts->size[a] : 1) : NULL;
        if (!b) {
            free(e);
            st = CASK_ERR_NOMEM;
            snprintf(msg, sizeof msg, "rank %d: no memory to keep an input", S->dist->rank);
            break;
        }
        memcpy(b, ptr[a], ts->size[a]);
        *e = (steal_cached){ NULL, ts->graph, ts->run, ts->gid[a], ts->version[a], b,
                             ts->size[a], 0 };
        pthread_mutex_lock(&S->mu);
        e->next = S->cache;
        S->cache = e;
        pthread_mutex_unlock(&S->mu);
    }
    cask_access acc[CASK_MAX_BUFFERS];
    for (int a = 0; a < ts->naccess && !st; a++) {
        if ((st = cask_data_register(rt, ptr[a], ts->size[a], &h[a])))
            snprintf(msg, sizeof msg, "rank %d: registering buffer %d: %s", S->dist->rank, a,
                     cask_status_string(st));
        acc[a] = (cask_access){ h[a], ts->mode[a] };
    }
    if (!st && (st = cask_graph_create(rt, &lg)))
        snprintf(msg, sizeof msg, "rank %d: cask_graph_create: %s", S->dist->rank,
                 cask_status_string(st));
    if (!st) {
        /* before this rank's own ready tasks, if any: its victim waits for it */
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME | CASK_TASK_WHERE |
                                           CASK_TASK_PRIORITY,
                             .kernel = ts->kernel, .access = acc, .naccess = ts->naccess,
                             .args = ts->args, .args_size = ts->args_size, .name = ts->name,
                             .where = CASK_WHERE_CPU, .priority = 50 };
        double t1 = dist_now_s();
        if ((st = cask_graph_add_task(lg, &d, NULL)) || (st = cask_graph_compute(lg)))
            snprintf(msg, sizeof msg, "%s", cask_graph_error(lg));
        else
            steal_slow_down(S, dist_now_s() - t1);   /* a slowed thief is slow too */
    }
    size_t outlen = 0;
    for (int a = 0; a < ts->naccess; a++)
        if (ts->mode[a] & CASK_WRITE)
            outlen += steal_align(ts->size[a]);
    if (!st && steal_grow(&ts->out, &ts->out_cap, outlen ? outlen : 1)) {
        st = CASK_ERR_NOMEM;
        snprintf(msg, sizeof msg, "rank %d: no memory for its outputs", S->dist->rank);
    }
    size_t off = 0;
    for (int a = 0; a < ts->naccess && !st; a++) {
        if (!(ts->mode[a] & CASK_WRITE))
            continue;
        void *p;
        if ((st = cask_data_acquire(h[a], CASK_READ, &p))) {
            snprintf(msg, sizeof msg, "rank %d: reading output %d: %s", S->dist->rank, a,
                     cask_status_string(st));
            break;
        }
        memcpy(ts->out + off, p, ts->size[a]);
        cask_data_release(h[a]);
        off += steal_align(ts->size[a]);
    }
    ts->outlen = outlen;
    ts->exec_ns = (uint64_t)((dist_now_s() - t0) * 1e9);
    cask_graph_destroy(lg);
    for (int a = 0; a < ts->naccess; a++)
        cask_data_destroy(h[a]);
    pthread_mutex_lock(&S->mu);
    for (int a = 0; a < ts->naccess; a++)
        if (pin[a])
            pin[a]->refs--;
    pthread_mutex_unlock(&S->mu);
    LOG_DEBUG(rt, "dist rank %d: ran task %s for rank %d: %s", S->dist->rank, ts->name,
              ts->victim, st ? msg : "ok");
    steal_send_result(S, ts, st, msg);
}

/* Whether every input ts expects to find kept here is (under S->mu). Messages are not
 * ordered: a task may come before the one that brings an input it shares with it. */
static int kept_inputs_here(struct dist_steal *S, const tslot *ts)
{
    for (int a = 0; a < ts->naccess; a++)
        if ((ts->mode[a] & CASK_READ) && !(ts->inmask & (1u << a)) &&
            !cache_find(S, ts->graph, ts->run, ts->gid[a], ts->version[a]))
            return 0;
    return 1;
}

void steal_exec_queued(struct dist_steal *S)
{
    /* tasks put aside for an input still on its way go first (they came first) */
    if (S->deferred) {
        tslot *last = S->deferred;
        while (last->next)
            last = last->next;
        last->next = S->qhead;
        if (!S->qhead)
            S->qtail = last;
        S->qhead = S->deferred;
        S->deferred = NULL;
    }
    tslot *later = NULL;
    while (S->qhead && !S->stop) {
        tslot *ts = S->qhead;
        S->qhead = ts->next;
        if (!S->qhead)
            S->qtail = NULL;
        double now = dist_now_s();
        if (!kept_inputs_here(S, ts)) {
            if (ts->wait_t0 == 0)
                ts->wait_t0 = now;
            if (now - ts->wait_t0 < 30) {   /* then run_taken says what is missing */
                ts->next = later;
                later = ts;
                continue;
            }
        }
        ts->wait_t0 = 0;
        atomic_store(&S->exec_busy, 1);
        pthread_mutex_unlock(&S->mu);
        char msg[CASK_ERRMSG_LEN];
        cask_status st = failed_run(S, ts->graph, ts->run, msg, sizeof msg);
        if (st)   /* its run failed here: the victim's fails with the same cause */
            steal_send_result(S, ts, st, msg);
        else
            run_taken(S, ts);
        pthread_mutex_lock(&S->mu);
        atomic_store(&S->exec_busy, 0);
    }
    while (later) {   /* back in arrival order */
        tslot *ts = later;
        later = ts->next;
        ts->next = S->deferred;
        S->deferred = ts;
    }
}

/* ---- idleness ---- */

/* How idle this rank looks now: 0 busy; 2 a graph computes here and this rank has
 * room for others' work for sure: its local graph ended, or every CPU worker sleeps
 * (found nothing to run); 1 maybe: a worker runs none of its task bodies and none
 * started one since the last look (it may be moving data, or only be preempted between
 * two bodies on a loaded machine). The thread looks every 2 ms and announces idleness
 * when two looks in a row say at least maybe and one of them says sure. */
static int idle_now(struct dist_steal *S, uint64_t *last_started)
{
    uint64_t started = atomic_load(&S->started);
    int quiet = started == *last_started;
    *last_started = started;
    int act = atomic_load(&S->active);
    if (act <= 0)
        return 0;
    if (atomic_load(&S->active_done) >= act)
        return 2;
    cask_runtime *rt = S->dist->rt;
    int busy = atomic_load(&S->exec_busy);
    if (atomic_load(&rt->sched->nsleep[0]) + busy >= rt->ncpu)
        return 2;
    return quiet && atomic_load(&S->bodies) + busy < rt->ncpu;
}

void *steal_thread(void *arg)
{
    struct dist_steal *S = arg;
    int prev = 0;
    uint64_t last_started = 0;
    pthread_mutex_lock(&S->mu);
    while (!S->stop) {
        steal_exec_queued(S);
        pthread_mutex_unlock(&S->mu);
        int idle = idle_now(S, &last_started);
        int two = idle && prev && (idle == 2 || prev == 2);
        prev = idle;
        uint64_t run = atomic_load(&S->cur_run);
        pthread_mutex_lock(&S->mu);
        if (!idle) {
            if (S->announced) {
                steal_tell_idle(S, 0, 0);
                S->announced = 0;
            }
        } else if (two && (!S->announced || S->announced_run != run)) {
            LOG_DEBUG(S->dist->rt, "dist rank %d: idle", S->dist->rank);
            steal_tell_idle(S, 1, run);
            S->announced = 1;
            S->announced_run = run;
        }
        if (!S->qhead && !S->stop) {   /* deferred tasks are looked at again then */
            struct timespec dl;
            deadline_in(&dl, atomic_load(&S->active) > 0 || S->deferred ? 2 : 50);
            pthread_cond_timedwait(&S->cv, &S->mu, &dl);
        }
    }
    pthread_mutex_unlock(&S->mu);
    return NULL;
}
