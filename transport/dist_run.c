/* transport/dist_run.c: running a planned distributed graph on this rank: the agreement
 * on the plan, then exchange step 0, phase 0, exchange 1, phase 1, ..., the final
 * exchange (results home and to gather roots), and the end-of-run agreement (DONE, or
 * ABORT from whoever failed), so that every rank returns the same verdict and none
 * waits for a rank that stopped. Also the handlers of data and control messages. */
#include "transport/dist_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/log.h"
#include "runtime/runtime.h"   /* runtime_log_level */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void set_error(cask_dist_graph *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_error(cask_dist_graph *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->error, sizeof g->error, fmt, ap);
    va_end(ap);
}

/* ---- control messages ---- */

void dist_apply_ctrl(cask_dist_graph *g, int from, const dist_ctrl_hdr *h, const char *msg)
{
    switch (h->type) {
    case CTRL_PLAN:
        g->plan_seen[from] = 1;
        g->plan_hash[from] = h->value;
        g->plan_st[from] = (cask_status)h->status;
        break;
    case CTRL_DONE:
        if (h->run > g->done_from[from])
            g->done_from[from] = h->run;
        break;
    case CTRL_ABORT:
        if (h->run > g->abort_run) {
            g->abort_run = h->run;
            g->abort_from = from;
            g->abort_status = (cask_status)h->status;
            snprintf(g->abort_msg, sizeof g->abort_msg, "%s", msg && *msg ? msg : "failed");
        }
        break;
    default:
        break;
    }
}

void dist_on_ctrl(cask_dist *dist, int from, const dist_ctrl_hdr *h, const char *msg)
{
    if (from < 0 || from >= dist->size)
        return;
    if (h->type == CTRL_BARRIER) {
        dist_on_barrier(dist, h->value);
        return;
    }
    LOG_DEBUG(dist->rt, "dist rank %d: control %u from rank %d (graph %u run %u)", dist->rank,
              h->type, from, h->graph, h->run);
    pthread_mutex_lock(&dist->mu);
    cask_dist_graph *g = dist_find_graph(dist, h->graph);
    if (g) {
        dist_apply_ctrl(g, from, h, msg);
    } else if (h->graph > dist->next_graph) {   /* a graph this rank has yet to make */
        dist_early *e = calloc(1, sizeof *e);
        if (e) {
            e->from = from;
            e->h = *h;
            snprintf(e->msg, sizeof e->msg, "%s", msg ? msg : "");
            e->next = dist->early;
            dist->early = e;
        }
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}

/* ---- data messages ---- */

#ifdef CASK_HAVE_UCX
static void landed(void *arg, cask_status st, const char *why)
{
    dist_slot *s = arg;
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
    pthread_mutex_lock(&dist->mu);
    g->recvs_pending--;
    if (st == CASK_OK) {
        s->arrived_run = s->landing_run;
        g->arrived[s->landing_run & 1][s->exchange]++;
    } else if (!g->send_status) {
        g->send_status = st;
        snprintf(g->send_msg, sizeof g->send_msg, "%s", why ? why : cask_status_string(st));
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}
#endif

void dist_on_data(cask_dist *dist, int from, const dist_data_hdr *h, void *ucx_msg)
{
#ifdef CASK_HAVE_UCX
    xport_ucx_msg *m = ucx_msg;
    pthread_mutex_lock(&dist->mu);
    cask_dist_graph *g = dist_find_graph(dist, h->graph);
    dist_slot *s = g && g->planned ? dist_slot_find(g, h->gid, h->version) : NULL;
    int accept = s && s->from == from && (h->run == g->run || h->run == g->run + 1) &&
                 m->len == dist->data[h->gid].bytes && s->arrived_run != h->run;
    if (accept) {
        s->landing_run = h->run;
        g->recvs_pending++;
    }
    pthread_mutex_unlock(&dist->mu);
    if (!accept) {
        if (s && m->len != dist->data[h->gid].bytes)
            log_msg(dist->rt, CASK_LOG_WARN, "rank %d: chunk #%u from rank %d has %zu bytes, "
                    "expected %zu: dropped", dist->rank, h->gid, from, m->len,
                    dist->data[h->gid].bytes);
        return;   /* a stale run's copy, or a graph gone: dropped */
    }
    if (xport_ucx_recv_into(m, s->buf, landed, s) != CASK_OK)
        landed(s, CASK_ERR_INTERNAL, "xport_ucx_recv_into refused a landing buffer");
#else
    (void)dist; (void)from; (void)h; (void)ucx_msg;
#endif
}

#ifdef CASK_HAVE_UCX
static void sent(void *arg, cask_status st, const char *why)
{
    cask_dist_graph *g = arg;
    cask_dist *dist = g->dist;
    pthread_mutex_lock(&dist->mu);
    g->sends_pending--;
    if (st && !g->send_status) {
        g->send_status = st;
        snprintf(g->send_msg, sizeof g->send_msg, "%s", why ? why : cask_status_string(st));
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}
#endif

/* ---- waiting ---- */

typedef int (*ready_fn)(cask_dist_graph *g, void *arg);

/* Why this run cannot go on (under mu), or CASK_OK. */
static cask_status broken(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    if (dist->nlost) {
        set_error(g, "%s", dist->err);
        return CASK_ERR_PEER;
    }
    if (g->abort_run && g->abort_run == g->run) {
        set_error(g, "%s", g->abort_msg);   /* says which rank failed and how */
        return g->abort_status ? g->abort_status : CASK_ERR_PEER;
    }
    if (g->send_status) {
        set_error(g, "rank %d: %s", dist->rank, g->send_msg);
        return g->send_status;
    }
    return CASK_OK;
}

/* Waits (progress thread does the work) until ready or the run is broken. */
static cask_status wait_until(cask_dist_graph *g, ready_fn ready, void *arg, int ignore_broken)
{
    cask_dist *dist = g->dist;
    double t0 = now_s();
    cask_status st = CASK_OK;
    pthread_mutex_lock(&dist->mu);
    for (;;) {
        if (ready(g, arg))
            break;
        if (!ignore_broken && (st = broken(g)))
            break;
        if (ignore_broken && dist->nlost && now_s() - t0 > 30)
            break;   /* draining after a failure: UCX completes what it can */
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 1;
        pthread_cond_timedwait(&dist->cv, &dist->mu, &dl);
    }
    pthread_mutex_unlock(&dist->mu);
    g->comm_wait_s += now_s() - t0;
    return st;
}

static int plans_in(cask_dist_graph *g, void *arg)
{
    (void)arg;
    for (int r = 0; r < g->dist->size; r++)
        if (r != g->dist->rank && !g->plan_seen[r])
            return 0;
    return 1;
}

static int exchange_done(cask_dist_graph *g, void *arg)
{
    int e = *(int *)arg;
    return g->arrived[g->run & 1][e] >= g->expected_in[e] && g->sends_pending == 0;
}

static int sends_drained(cask_dist_graph *g, void *arg)
{
    (void)arg;
    return g->sends_pending == 0 && g->recvs_pending == 0;
}

static int all_done(cask_dist_graph *g, void *arg)
{
    (void)arg;
    for (int r = 0; r < g->dist->size; r++)
        if (r != g->dist->rank && g->done_from[r] < g->run)
            return 0;
    return 1;
}

/* ---- plan agreement ---- */

cask_status cask_dist_graph_plan(cask_dist_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    cask_dist *dist = g->dist;
    if (g->planned)
        return g->plan_failed ? g->plan_status : CASK_OK;
    cask_status st = dist_plan(g);
    g->hash = dist_graph_hash(g);
    pthread_mutex_lock(&dist->mu);
    g->planned = 1;              /* from now on data for this graph is taken */
    pthread_mutex_unlock(&dist->mu);
    /* Every rank says whether it planned, and what it planned: the same graph? This is
     * also the barrier after which landing buffers exist everywhere. */
    dist_ctrl_all(dist, g->id, 0, CTRL_PLAN, (uint32_t)st, g->hash, NULL);
    cask_status wst = dist->size > 1 ? wait_until(g, plans_in, NULL, 0) : CASK_OK;
    if (!st && wst)
        st = wst;
    if (!st) {
        pthread_mutex_lock(&dist->mu);
        for (int r = 0; r < dist->size && !st; r++) {
            if (r == dist->rank)
                continue;
            if (g->plan_st[r]) {
                st = g->plan_st[r];
                set_error(g, "rank %d could not plan the graph: %s", r, cask_status_string(st));
            } else if (g->plan_hash[r] != g->hash) {
                st = CASK_ERR_INVALID;
                set_error(g, "rank %d built another graph than rank %d (%zu tasks here): every "
                          "rank must declare the same data and add the same tasks in the same "
                          "order", r, dist->rank, g->ntasks);
            }
        }
        pthread_mutex_unlock(&dist->mu);
    }
    if (st) {
        g->plan_failed = 1;
        g->plan_status = st;
        log_error(dist->rt, st, "cask_dist_graph_plan: %s", g->error);
    }
    return st;
}

/* ---- one run ---- */

typedef struct acquired {
    cask_data *h;
    void *ptr;
} acquired;

static cask_status do_exchange(cask_dist_graph *g, int e, acquired *acq, size_t *nacq)
{
    cask_dist *dist = g->dist;
    cask_status st = CASK_OK;
    *nacq = 0;
#ifdef CASK_HAVE_UCX
    for (size_t i = 0; i < g->nsends && !st; i++) {
        dist_send *s = &g->sends[i];
        if (s->exchange != e)
            continue;
        void *ptr = NULL;
        for (size_t k = 0; k < *nacq; k++)
            if (acq[k].h == s->h)
                ptr = acq[k].ptr;
        if (!ptr) {
            st = cask_data_acquire(s->h, CASK_READ, &ptr);
            if (st) {
                set_error(g, "rank %d: reading chunk #%u to send it: %s", dist->rank, s->gid,
                          cask_status_string(st));
                break;
            }
            acq[(*nacq)++] = (acquired){ s->h, ptr };
        }
        dist_data_hdr h = { g->id, g->run, s->gid, s->version };
        pthread_mutex_lock(&dist->mu);
        g->sends_pending++;
        pthread_mutex_unlock(&dist->mu);
        st = xport_ucx_am_send(dist->ucx, s->to, DIST_AM_DATA, &h, sizeof h, ptr,
                               dist->data[s->gid].bytes, sent, g);
        if (st) {
            pthread_mutex_lock(&dist->mu);
            g->sends_pending--;
            pthread_mutex_unlock(&dist->mu);
            set_error(g, "rank %d: sending chunk #%u to rank %d: %s", dist->rank, s->gid, s->to,
                      st == CASK_ERR_PEER ? dist->err : cask_status_string(st));
        }
    }
#endif
    LOG_DEBUG(dist->rt, "dist graph %u run %u rank %d: exchange %d: waiting for %zu copies "
              "(%zu here) and %ld sends", g->id, g->run, dist->rank, e, g->expected_in[e],
              g->arrived[g->run & 1][e], g->sends_pending);
    if (!st)
        st = wait_until(g, exchange_done, &e, 0);
    if (st) {
        wait_until(g, sends_drained, NULL, 1);   /* buffers stay valid until sent */
    }
    for (size_t k = 0; k < *nacq; k++)
        cask_data_release(acq[k].h);
    *nacq = 0;
    if (st)
        return st;
    /* final copies that landed here */
    for (size_t i = 0; i < g->nslots; i++) {
        dist_slot *s = g->slots[i];
        if (s->exchange != e || (!s->home && !s->dest))
            continue;
        size_t bytes = dist->data[s->gid].bytes;
        if (s->dest)
            memcpy(s->dest, s->buf, bytes);
        if (s->home) {
            void *p;
            if ((st = cask_data_acquire(s->home, CASK_WRITE, &p))) {
                set_error(g, "rank %d: writing the result #%u home: %s", dist->rank, s->gid,
                          cask_status_string(st));
                return st;
            }
            memcpy(p, s->buf, bytes);
            cask_data_release(s->home);
        }
    }
    return CASK_OK;
}

static cask_status local_copies(cask_dist_graph *g)
{
    for (size_t i = 0; i < g->ncopies; i++) {
        dist_local_copy *c = &g->copies[i];
        void *src, *dst;
        size_t bytes = 0;
        cask_data_size(c->from, &bytes);
        cask_status st = cask_data_acquire(c->from, CASK_READ, &src);
        if (st) {
            set_error(g, "rank %d: reading a result copy: %s", g->dist->rank,
                      cask_status_string(st));
            return st;
        }
        if (c->dest)
            memcpy(c->dest, src, bytes);
        if (c->to) {
            st = cask_data_acquire(c->to, CASK_WRITE, &dst);
            if (!st) {
                memcpy(dst, src, bytes);
                cask_data_release(c->to);
            } else {
                set_error(g, "rank %d: writing a result home: %s", g->dist->rank,
                          cask_status_string(st));
            }
        }
        cask_data_release(c->from);
        if (st)
            return st;
    }
    return CASK_OK;
}

static cask_status run_once(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    cask_status st = CASK_OK;
    acquired *acq = calloc(g->nsends ? g->nsends : 1, sizeof *acq);
    if (!acq)
        return CASK_ERR_NOMEM;
    size_t nacq = 0;
    /* Copies landed in earlier runs may have left replicas on GPUs: drop them, so that
     * this run's copies (perhaps already landing) are the only valid ones. */
    if (g->run > 1)
        for (size_t i = 0; i < g->nslots; i++) {
            void *p;
            if (g->slots[i]->h && !cask_data_acquire(g->slots[i]->h, CASK_WRITE, &p))
                cask_data_release(g->slots[i]->h);
        }
    for (int e = 0; e <= g->nphases && !st; e++) {
        st = do_exchange(g, e, acq, &nacq);
        if (st || e == g->nphases || !g->phase[e])
            continue;
        st = cask_graph_compute(g->phase[e]);
        if (st)
            set_error(g, "rank %d, phase %d: %s", dist->rank, e, cask_graph_error(g->phase[e]));
    }
    if (!st)
        st = local_copies(g);
    free(acq);
    return st;
}

cask_status cask_dist_graph_compute(cask_dist_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    cask_dist *dist = g->dist;
    double t0 = now_s();
    cask_status st = cask_dist_graph_plan(g);
    if (st)
        return st;
    pthread_mutex_lock(&dist->mu);
    if (g->running) {
        pthread_mutex_unlock(&dist->mu);
        return log_error(dist->rt, CASK_ERR_STATE, "cask_dist_graph_compute: already running");
    }
    g->running = 1;
    g->run++;
    g->send_status = CASK_OK;
    g->send_msg[0] = 0;
    /* the next run's copies may land before this one ends: start counting them afresh */
    for (int e = 0; e <= g->nphases; e++)
        g->arrived[(g->run + 1) & 1][e] = 0;
    pthread_mutex_unlock(&dist->mu);
    g->error[0] = 0;
    g->comm_wait_s = 0;

    st = run_once(g);
    if (st) {
        /* Tell everybody, so that nobody waits for this rank's data or verdict. */
        pthread_mutex_lock(&dist->mu);
        int remote = g->abort_run && g->abort_run == g->run;
        pthread_mutex_unlock(&dist->mu);
        if (!remote)
            dist_ctrl_all(dist, g->id, g->run, CTRL_ABORT, (uint32_t)st, 0, g->error);
    } else if (dist->size > 1) {
        dist_ctrl_all(dist, g->id, g->run, CTRL_DONE, 0, 0, NULL);
        LOG_DEBUG(dist->rt, "dist graph %u run %u rank %d: done, waiting for the others",
                  g->id, g->run, dist->rank);
        st = wait_until(g, all_done, NULL, 0);
    }
    wait_until(g, sends_drained, NULL, 1);
    pthread_mutex_lock(&dist->mu);
    g->running = 0;
    pthread_mutex_unlock(&dist->mu);
    g->elapsed_s = now_s() - t0;
    if (st)
        log_error(dist->rt, st, "cask_dist_graph_compute: %s", g->error);
    return st;
}

const char *cask_dist_graph_error(const cask_dist_graph *g)
{
    return g ? g->error : "";
}

cask_status cask_dist_graph_task_rank(const cask_dist_graph *g, size_t index, int *rank)
{
    if (!g || !rank || index >= g->ntasks)
        return CASK_ERR_INVALID;
    if (!g->planned || g->plan_failed)
        return CASK_ERR_STATE;
    *rank = g->tasks[index].rank;
    return CASK_OK;
}

cask_status cask_dist_graph_query(const cask_dist_graph *g, cask_dist_graph_info *info)
{
    if (!g || !info)
        return CASK_ERR_INVALID;
    memset(info, 0, sizeof *info);
    info->ntasks = g->ntasks;
    info->ntasks_here = g->ntasks_here;
    info->nphases = (size_t)g->nphases;
    info->transfers_out = g->transfers_out;
    info->transfers_in = g->transfers_in;
    info->bytes_out = g->bytes_out;
    info->bytes_in = g->bytes_in;
    info->moved = g->moved;
    info->elapsed_s = g->elapsed_s;
    info->comm_wait_s = g->comm_wait_s;
    return CASK_OK;
}

cask_status cask_dist_graph_destroy(cask_dist_graph *g)
{
    if (!g)
        return CASK_OK;
    cask_dist *dist = g->dist;
    pthread_mutex_lock(&dist->mu);
    int running = g->running;
    pthread_mutex_unlock(&dist->mu);
    if (running)
        return log_error(dist->rt, CASK_ERR_BUSY, "cask_dist_graph_destroy: computing");
    wait_until(g, sends_drained, NULL, 1);   /* late copies of a failed run */
    pthread_mutex_lock(&dist->mu);
    for (struct cask_dist_graph **pg = &dist->graphs; *pg; pg = &(*pg)->next)
        if (*pg == g) {
            *pg = g->next;
            break;
        }
    pthread_mutex_unlock(&dist->mu);
    dist_plan_free(g);
    for (size_t i = 0; i < g->ntasks; i++) {
        free(g->tasks[i].access);
        free(g->tasks[i].local);
        free(g->tasks[i].args);
        free(g->tasks[i].name);
    }
    free(g->tasks);
    free(g->gathers);
    free(g->done_from);
    free(g->plan_seen);
    free(g->plan_hash);
    free(g->plan_st);
    free(g);
    return CASK_OK;
}
