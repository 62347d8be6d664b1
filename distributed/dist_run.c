/* distributed/dist_run.c: running a planned distributed graph on this rank: the agreement
 * on the plan, this rank's local graph (its tasks and its transfers, dist_xfer.c), and
 * the end-of-run agreement (DONE, or ABORT from whoever failed), so that every rank
 * returns the same verdict and none waits for a rank that stopped. Also the handler of
 * control messages. */
#include "distributed/dist_impl.h"
#include "distributed/dist_steal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/log.h"
#include "runtime/runtime.h"   /* runtime_log_level */

/* ---- control messages ---- */

void dist_apply_ctrl(cask_dist_graph *g, int from, const dist_ctrl_hdr *h, const char *msg)
{
    switch (h->type) {
    case CTRL_PLAN:
        g->plan_seen[from] = 1;
        g->plan_hash[from] = h->value;
        g->plan_ep[from] = h->epoch;
        g->plan_st[from] = (cask_status)h->status;
        break;
    case CTRL_DONE:
        /* another view's run: a rank that misses a DONE this way either recovers the
         * run with the others (DONE again, in the new epoch) or learns by STATE that
         * every rank completed it (dist_recover.c) */
        if (h->epoch != g->dist->epoch || dist_testkill_drop_done(g->dist, g->id, from, h->run))
            break;
        if (h->run > g->done_from[from])
            g->done_from[from] = h->run;
        break;
    case CTRL_ABORT:
        if (h->epoch != g->dist->epoch)
            break;
        if (h->run > g->abort_run || (h->run == g->abort_run && h->epoch > g->abort_epoch)) {
            g->abort_run = h->run;
            g->abort_epoch = h->epoch;
            g->abort_from = from;
            g->abort_status = (cask_status)h->status;
            snprintf(g->abort_msg, sizeof g->abort_msg, "%s", msg && *msg ? msg : "failed");
        }
        break;
    case CTRL_READY:
        dist_recover_on_ready(g, from, h);
        break;
    default:
        break;
    }
}

void dist_on_ctrl(cask_dist *dist, int from, const dist_ctrl_hdr *h, const char *msg)
{
    if (from < 0 || from >= dist->size)
        return;
    if (h->type == CTRL_MEMBER) {
        dist_member_on_msg(dist, from, h);
        return;
    }
    pthread_mutex_lock(&dist->mu);
    int out = dist->excluded[from], stale = out || h->epoch < dist->epoch;
    pthread_mutex_unlock(&dist->mu);
    if (h->type == CTRL_BARRIER && !out) {
        dist_on_barrier(dist, from, h->value);   /* of any view: it reached the barrier */
        return;
    }
    /* a fenced rank's, or an older view's, is dropped; but a LEAVE of any view counts,
     * and so does a PLAN: its epoch is kept, and a plan made for another view than this
     * rank's fails both with the lost rank named (cask_dist_graph_plan). Dropped, this
     * rank waited for that PLAN until the sender left, and named only the leaver (chaos
     * seed 606916636, UNEXPLAINED about 1 replay in 400). */
    if (stale && !((h->type == CTRL_LEAVE || h->type == CTRL_PLAN) && !out))
        return;
    if (h->type == CTRL_LEAVE) {
        if (h->graph) {   /* it leaves after that run failed there: the ABORT it repeats */
            dist_ctrl_hdr a = *h;
            a.type = CTRL_ABORT;
            dist_on_ctrl(dist, from, &a, msg);
            msg = NULL;
        }
        dist_on_leave(dist, from, msg);
        return;
    }
    LOG_DEBUG(dist->rt, "dist rank %d: control %u from rank %d (graph %u run %u)", dist->rank,
              h->type, from, h->graph, h->run);
    cask_task_async **tok = NULL;
    size_t ntok = 0;
    cask_status why = CASK_ERR_PEER;
    char abort_msg[sizeof ((cask_dist_graph *)0)->abort_msg] = "";
    int broke = 0;
    pthread_mutex_lock(&dist->mu);
    cask_dist_graph *g = dist_find_graph(dist, h->graph);
    if (g) {
        dist_apply_ctrl(g, from, h, msg);
        if (h->type == CTRL_ABORT && g->running && g->abort_run == g->run) {
            /* nothing more will come from that rank in this run */
            broke = 1;
            g->handlers_in++;
            tok = dist_xfer_take_waiting(g, &ntok);
            if (g->abort_status)
                why = g->abort_status;
            if (why == CASK_ERR_PEER && !dist->lost_heard[0])
                snprintf(dist->lost_heard, sizeof dist->lost_heard, "%.250s", g->abort_msg);
            snprintf(abort_msg, sizeof abort_msg, "%s", g->abort_msg);
        }
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
    if (broke) {
        dist_xfer_end_run(g, tok, ntok, why, abort_msg);
        pthread_mutex_lock(&dist->mu);
        g->handlers_in--;
        pthread_cond_broadcast(&dist->cv);
        pthread_mutex_unlock(&dist->mu);
    }
}

/* ---- waiting ---- */

cask_status dist_broken(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    if (dist_unagreed(dist)) {
        dist_graph_error(g, "%s", dist->fenced ? dist->fenced_msg : dist->err[0] ? dist->err :
                         "the membership of the job changed");
        return CASK_ERR_PEER;
    }
    if (g->abort_run && g->abort_run == g->run) {
        dist_graph_error(g, "%s", g->abort_msg);   /* says which rank failed and how */
        return g->abort_status ? g->abort_status : CASK_ERR_PEER;
    }
    if (g->send_status) {
        dist_graph_error(g, "rank %d: %s", dist->rank, g->send_msg);
        return g->send_status;
    }
    return dist_left_broken(g);
}

/* Waits (progress thread does the work) until ready or the run is broken. */
cask_status dist_wait_until(cask_dist_graph *g, dist_ready_fn ready, void *arg, int ignore_broken)
{
    cask_dist *dist = g->dist;
    double t0 = dist_now_s();
    cask_status st = CASK_OK;
    pthread_mutex_lock(&dist->mu);
    for (;;) {
        if (ready(g, arg))
            break;
        if (!ignore_broken && (st = dist_broken(g)))
            break;
        if (ignore_broken && (dist->nlost || dist_unagreed(dist)) && dist_now_s() - t0 > 30)
            break;   /* draining after a failure: UCX completes what it can */
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 1;
        pthread_cond_timedwait(&dist->cv, &dist->mu, &dl);
    }
    pthread_mutex_unlock(&dist->mu);
    g->comm_wait_s += dist_now_s() - t0;
    return st;
}

static int plans_in(cask_dist_graph *g, void *arg)
{
    (void)arg;
    for (int r = 0; r < g->dist->size; r++)
        if (r != g->dist->rank && !g->plan_seen[r] && !g->dist->excluded[r])
            return 0;
    return 1;
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
        if (r != g->dist->rank && g->done_from[r] < g->run && !g->dist->excluded[r])
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
    /* a loss not agreed yet: agree first, so that the plan leaves the lost ranks out */
    cask_status wst = dist_member_settle(dist);
    char aerr[512] = "";
    if (wst) {   /* fenced, or no view agreed: why, naming the lost ranks */
        pthread_mutex_lock(&dist->mu);
        dist_graph_error(g, "%s", dist->fenced ? dist->fenced_msg : dist->err[0] ? dist->err :
                         "the survivors did not agree on a view of the job");
        pthread_mutex_unlock(&dist->mu);
    }
    dist_testkill_plan_late(dist);
    if (!wst && dist->nexcluded && (wst = dist_lineage_adopt(dist, aerr, sizeof aerr)))
        dist_graph_error(g, "%s", aerr);   /* data declared for ranks lost since */
    cask_status st = wst ? wst : dist_plan(g);
    g->hash = dist_graph_hash(g);
    dist_recover_prepare(g);     /* before any rank can send a STATE for it */
    pthread_mutex_lock(&dist->mu);
    g->planned = 1;              /* from now on data for this graph is taken */
    pthread_mutex_unlock(&dist->mu);
    /* Every rank says whether it planned, and what it planned: the same graph? This is
     * also the barrier after which landing buffers exist everywhere. */
    dist_ctrl_all(dist, g->id, 0, CTRL_PLAN, (uint32_t)st, g->hash, NULL);
    /* a rank lost meanwhile: once the survivors agree, they wait for each other only
     * (a plan that still places tasks on the lost rank is recovered by the compute) */
    while (!wst && dist->size > 1) {
        wst = dist_wait_until(g, plans_in, NULL, 0);
        if (wst != CASK_ERR_PEER)
            break;
        pthread_mutex_lock(&dist->mu);
        int loss = dist_unagreed(dist) && !dist->fenced;
        pthread_mutex_unlock(&dist->mu);
        if (!loss || dist_member_settle(dist))
            break;
        wst = CASK_OK;   /* agreed: wait for the survivors' PLAN only */
    }
    if (!st && wst)
        st = wst;
    if (!st) {
        pthread_mutex_lock(&dist->mu);
        for (int r = 0; r < dist->size && !st; r++) {
            if (r == dist->rank || dist->excluded[r])
                continue;
            if (g->plan_st[r]) {
                st = g->plan_st[r];
                dist_graph_error(g, "rank %d could not plan the graph: %s", r, cask_status_string(st));
            } else if (g->plan_hash[r] != g->hash && g->plan_ep[r] != g->plan_epoch) {
                /* a rank was lost while the graph was planned, and the two ranks planned
                 * it for different views (one had adopted the lost rank's data already):
                 * the graphs differ by who owns what, not by what the program built */
                st = CASK_ERR_PEER;
                char lost[160];
                dist_excluded_list(dist, -1, 0, lost, sizeof lost);
                dist_graph_error(g, "rank %s lost while graph %u was planned: rank %d planned "
                          "it for view %u, rank %d for view %u", lost,
                          g->id, r, g->plan_ep[r], dist->rank, g->plan_epoch);
            } else if (g->plan_hash[r] != g->hash) {
                st = CASK_ERR_INVALID;
                dist_graph_error(g, "rank %d built another graph than rank %d (%zu tasks here): every "
                          "rank must declare the same data and add the same tasks in the same "
                          "order", r, dist->rank, g->ntasks);
            }
        }
        pthread_mutex_unlock(&dist->mu);
    }
    if (!st && g->nccl_transfers) {
        /* every rank agreed on a plan with NCCL transfers: all make the communicator */
        char err[512] = "";
        st = dist_nccl_ensure(dist, err, sizeof err);
        if (st)
            dist_graph_error(g, "rank %d: the NCCL communicator for GPU-to-GPU transfers: %s%s",
                      dist->rank, st == CASK_ERR_STATE ? "aborted after an earlier failure" : "",
                      err);
    }
    if (st) {
        g->plan_failed = 1;
        g->plan_status = st;
        log_error(dist->rt, st, "cask_dist_graph_plan: %s", g->error);
    }
    return st;
}

/* ---- one run ---- */

/* Runs the local graph. It ends when all its tasks did: a receive whose copy can no
 * longer come is ended with the failure (dist_xfer_take_waiting) by whoever learns it
 * (a lost peer, an ABORT), so this never waits for a rank that stopped. */
static cask_status run_once(cask_dist_graph *g)
{
    cask_status st = cask_graph_compute(g->local);
    dist_steal_local_done(g);   /* this rank is free to run others' tasks */
    if (st) {
        pthread_mutex_lock(&g->dist->mu);
        cask_status why = dist_broken(g);   /* a remote cause says more than ours */
        pthread_mutex_unlock(&g->dist->mu);
        if (!why || st == CASK_ERR_TASK_FAILED)
            dist_graph_error(g, "rank %d: %s", g->dist->rank, cask_graph_error(g->local));
        else
            st = why;
    }
    return st;
}

cask_status dist_run_local(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    cask_status st = run_once(g);
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
        st = dist_wait_until(g, all_done, NULL, 0);
    }
    dist_wait_until(g, sends_drained, NULL, 1);
    pthread_mutex_lock(&dist->mu);
    while (g->handlers_in)   /* a handler still ending this run's tasks uses g */
        pthread_cond_wait(&dist->cv, &dist->mu);
    pthread_mutex_unlock(&dist->mu);
    return st;
}

cask_status cask_dist_graph_compute(cask_dist_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    cask_dist *dist = g->dist;
    double t0 = dist_now_s();
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
    g->host_staging[(g->run + 1) & 1] = 0;   /* the next run's counter, from now on */
    g->send_status = CASK_OK;
    g->send_msg[0] = 0;
    pthread_mutex_unlock(&dist->mu);
    dist_nccl_run_start(g);
    g->error[0] = 0;
    g->comm_wait_s = 0;

    dist_steal_run_begin(g);
    st = dist_recover_begin(g);   /* re-plans after an earlier recovery; snapshots */
    if (!st)
        st = dist_run_local(g);
    else
        dist_ctrl_all(dist, g->id, g->run, CTRL_ABORT, (uint32_t)st, 0, g->error);
    pthread_mutex_lock(&dist->mu);
    int left = dist->nleft;   /* a rank finalized while others compute: a program that
                                 computes different graphs, not a loss to survive */
    pthread_mutex_unlock(&dist->mu);
    if (st == CASK_ERR_PEER && !left)
        st = dist_recover(g);   /* survivors agree, re-plan without the lost, finish */
    dist_steal_run_end(g, st);
    pthread_mutex_lock(&dist->mu);
    if (!st)
        g->ok_run = g->run;
    g->running = 0;
    pthread_mutex_unlock(&dist->mu);
    dist_recover_answer_late(g);   /* survivors that asked while this rank computed */
    g->elapsed_s = dist_now_s() - t0;
    if (st) {
        dist_leave_note_failure(g, st);
        log_error(dist->rt, st, "cask_dist_graph_compute: %s", g->error);
    }
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
    dist_steal_counts(g, &info->stolen_out, &info->stolen_in);
    info->elapsed_s = g->elapsed_s;
    info->comm_wait_s = g->comm_wait_s;
    info->transfers_gpu_ucx = g->transfers_gpu_ucx;
    info->transfers_nccl = g->transfers_nccl;
    pthread_mutex_lock(&g->dist->mu);
    info->host_staging_bytes = g->host_staging[g->run & 1];
    pthread_mutex_unlock(&g->dist->mu);
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
    dist_wait_until(g, sends_drained, NULL, 1);   /* late copies of a failed run */
    pthread_mutex_lock(&dist->mu);
    for (struct cask_dist_graph **pg = &dist->graphs; *pg; pg = &(*pg)->next)
        if (*pg == g) {
            *pg = g->next;
            break;
        }
    /* what it completed, for a survivor still in its last run when a rank is lost: it
     * asks, and "completed" (nothing is missing) is not "gone" (it cannot finish) */
    if (g->id > dist->ngone_ok) {
        uint32_t n = g->id + 16;
        uint32_t *p = realloc(dist->gone_ok_run, n * sizeof *p);
        if (p) {
            memset(p + dist->ngone_ok, 0, (n - dist->ngone_ok) * sizeof *p);
            dist->gone_ok_run = p;
            dist->ngone_ok = n;
        }
    }
    if (g->id >= 1 && g->id <= dist->ngone_ok)
        dist->gone_ok_run[g->id - 1] = g->ok_run;
    /* out of the list, no handler finds g any more; one that did may still end its
     * tasks (an ABORT or a loss heard while the compute returned from a recovery) */
    while (g->handlers_in)
        pthread_cond_wait(&dist->cv, &dist->mu);
    pthread_mutex_unlock(&dist->mu);
    dist_steal_graph_free(g);
    dist_plan_free(g);
    dist_recover_free(g);
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
    free(g->plan_ep);
    free(g);
    return CASK_OK;
}
