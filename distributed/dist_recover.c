/* distributed/dist_recover.c: finishing a distributed graph after ranks were lost.
 *
 * A compute whose run fails with CASK_ERR_PEER (a rank died, or another survivor says
 * so) does not return: on every survivor,
 *
 *   1. the local graph has stopped (the loss ended its waiting receives) and its
 *      transfers drained;
 *   2. the survivors agree on the new view (dist_membership.c): who is gone, epoch e;
 *      a rank fenced out returns CASK_ERR_PEER ("fenced out") here;
 *   3. the data of lost owners is adopted by survivors (dist_lineage.c);
 *   4. each tells the others what it delivered in the failed run (STATE: gathers that
 *      reached their root, data that reached home), so that all know the same;
 *   5. each builds the same recovery plan (dist_lineage.c: the tasks the missing
 *      outputs depend on, from their sources; placed on the survivors only);
 *   6. READY from every survivor (nobody sends data of the new plan before every
 *      receiver has it), then the plan runs like any run, with DONE/ABORT;
 *   7. a loss during 2-6 starts again at 2 (a new epoch).
 *
 * After a recovery the graph is planned again over the survivors at its next compute. */
#include "distributed/dist_recover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/log.h"

static cask_status restore_cpu(cask_task_ctx *ctx)
{
    const void *snap = dist_xfer_arg_of(ctx);
    memcpy(cask_task_buffer(ctx, 0), snap, cask_task_buffer_size(ctx, 0));
    return CASK_OK;
}

cask_status dist_recover_init(cask_dist *dist)
{
    cask_kernel_desc d = { .name = "dist_restore", .cpu = restore_cpu };
    cask_status st = cask_kernel_register(dist->rt, &d, &dist->k_restore);
    if (st)
        dist_fail(dist, "registering the restore kernel: %s", cask_status_string(st));
    if (!st && (st = dist_testkill_init(dist)))
        dist_fail(dist, "CASK_DIST_TEST_KILL / _FREEZE / _DROP_DONE: bad value");
    return st;
}

void dist_recover_free(cask_dist_graph *g)
{
    dist_recovery *rec = g->rec;
    if (!rec)
        return;
    dist_lineage_free_plan(rec);
    for (size_t i = 0; rec->snap && i < rec->nd; i++)
        free(rec->snap[i]);
    free(rec->snap);
    free(rec->touched);
    free(rec->first_reads);
    free(rec->done);
    free(rec->state_epoch);
    free(rec->state_run);
    free(rec->state_flags);
    free(rec->completed_run);
    free(rec->ready_epoch);
    free(rec->gone_why);
    free(rec->orphan);
    free(rec);
    g->rec = NULL;
}

static cask_status rec_create(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = calloc(1, sizeof *rec);
    if (!rec)
        return CASK_ERR_NOMEM;
    size_t n = (size_t)dist->size;
    rec->ndone = g->ngathers + dist->ndata;
    rec->done = calloc(rec->ndone ? rec->ndone : 1, 1);
    rec->state_epoch = calloc(n, sizeof *rec->state_epoch);
    rec->state_run = calloc(n, sizeof *rec->state_run);
    rec->state_flags = calloc(n, 1);
    rec->completed_run = calloc(n, sizeof *rec->completed_run);
    rec->ready_epoch = calloc(n, sizeof *rec->ready_epoch);
    rec->gone_why = calloc(n, sizeof *rec->gone_why);
    rec->orphan = calloc(dist->ndata ? dist->ndata : 1, 1);
    pthread_mutex_lock(&dist->mu);
    g->rec = rec;   /* handlers look at it */
    pthread_mutex_unlock(&dist->mu);
    cask_status st = CASK_ERR_NOMEM;
    if (rec->done && rec->state_epoch && rec->state_run && rec->state_flags &&
        rec->completed_run && rec->ready_epoch && rec->gone_why && rec->orphan)
        st = dist_lineage_prepare(g);
    if (st) {   /* none of it: the next compute tries again */
        pthread_mutex_lock(&dist->mu);
        dist_recover_free(g);
        pthread_mutex_unlock(&dist->mu);
    }
    return st;
}

/* Called before the graph's PLAN goes out: no other rank can run the graph (and so
 * fail in it and send a STATE for it) before it has this rank's PLAN, so every STATE
 * finds the record. (Made at the first compute, it could come too late: a STATE for a
 * graph without one was dropped, and its sender waited for this rank's in vain.) A
 * failure here is left to the first compute, which tries again and reports it. */
void dist_recover_prepare(cask_dist_graph *g)
{
    if (g->dist->size >= 2 && g->dist->size <= 64 && !g->rec)
        (void)rec_create(g);
}

/* Frees the current plan (normal or recovery) once no message can land in it. */
static void drop_plan(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    pthread_mutex_lock(&dist->mu);
    g->planned = 0;   /* dist_on_data takes nothing for it any more */
    double t0 = dist_now_s();
    while (g->recvs_pending && dist_now_s() - t0 < 30) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 1;
        pthread_cond_timedwait(&dist->cv, &dist->mu, &dl);
    }
    /* The handlers that end a running compute's receives (a loss, an ABORT, a LEAVE,
     * dist_xfer_take_waiting) read the slots under mu while g->running, which stays set
     * through a recovery: they must not meet slots freed here (a survivor's ABORT came
     * while this rank re-planned, under ASan), nor a handler still ending tasks of the
     * local graph that dist_plan_free destroys. The slots leave g under mu, and are
     * freed after the plan's handles, some of which are registered over their landing
     * buffers: a buffer must outlive its handle (freed first, a handle whose chunk had
     * come into its GPU replica wrote it back into freed memory when destroyed; the
     * plan's copies are now discarded, without a write-back). Their GPU landing
     * replicas are unpinned first, as dist_plan_free does for slots still in g. */
    while (g->handlers_in)
        pthread_cond_wait(&dist->cv, &dist->mu);
    dist_slot **slots = g->slots;
    size_t nslots = g->nslots;
    g->slots = NULL;
    g->nslots = g->slots_cap = 0;
    pthread_mutex_unlock(&dist->mu);
    dist_gpux_unpin(dist, slots, nslots);
    dist_plan_free(g);
    dist_plan_free_slots(dist->rt, slots, nslots);
    g->replan = NULL;
    if (g->rec)
        dist_lineage_free_plan(g->rec);
}

static cask_status replan(cask_dist_graph *g, int recovery)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = g->rec;
    drop_plan(g);
    cask_status st = CASK_OK;
    if (recovery) {
        rec->saved_tasks = g->tasks;
        rec->saved_ntasks = g->ntasks;
        st = dist_lineage_plan(g);
        if (!st) {
            g->tasks = rec->xt;
            g->ntasks = rec->nxt;
            g->replan = &rec->rp;
        }
    }
    if (!st)
        st = dist_plan(g);
    if (recovery) {
        g->tasks = rec->saved_tasks;
        g->ntasks = rec->saved_ntasks;
    }
    pthread_mutex_lock(&dist->mu);
    g->planned = 1;
    pthread_mutex_unlock(&dist->mu);
    return st;
}

/* Grows a per-gid array of n entries of size sz to m, the new ones zero. */
static int grow(void *pp, size_t n, size_t m, size_t sz)
{
    char *p = realloc(*(void **)pp, m * sz);
    if (!p)
        return -1;
    memset(p + n * sz, 0, (m - n) * sz);
    *(void **)pp = p;
    return 0;
}

/* Data declared since the graph's first compute: its per-gid arrays made as long (the
 * graph uses none of them: nothing touched, nothing to snapshot, nothing home). */
static cask_status rec_fit(cask_dist_graph *g)
{
    dist_recovery *rec = g->rec;
    size_t n = rec->nd, m = g->dist->ndata;
    if (m <= n)
        return CASK_OK;
    pthread_mutex_lock(&g->dist->mu);   /* handlers write done */
    int bad = grow(&rec->touched, n, m, 1) || grow(&rec->first_reads, n, m, 1) ||
              grow(&rec->snap, n, m, sizeof *rec->snap) || grow(&rec->orphan, n, m, 1) ||
              grow(&rec->done, rec->ndone, g->ngathers + m, 1);
    if (!bad) {
        rec->nd = m;
        rec->ndone = g->ngathers + m;
    }
    pthread_mutex_unlock(&g->dist->mu);
    return bad ? CASK_ERR_NOMEM : CASK_OK;
}

cask_status dist_recover_begin(cask_dist_graph *g)
{
    cask_status st = CASK_OK;
    if (g->dist->size < 2 || g->dist->size > 64)
        return CASK_OK;   /* nothing to recover, or too many ranks to (no snapshots) */
    if (g->rec && !g->rec->computes && g->rec->ndone != g->ngathers + g->dist->ndata) {
        pthread_mutex_lock(&g->dist->mu);   /* data declared since the plan: made again */
        dist_recover_free(g);
        pthread_mutex_unlock(&g->dist->mu);
    }
    if ((!g->rec && (st = rec_create(g))) || (st = rec_fit(g))) {
        dist_graph_error(g, "rank %d: %s", g->dist->rank, cask_status_string(st));
        return st;
    }
    dist_recovery *rec = g->rec;
    rec->computes++;
    pthread_mutex_lock(&g->dist->mu);
    if (rec->done_run != g->run) {   /* keeps what others said of this run already */
        memset(rec->done, 0, rec->ndone ? rec->ndone : 1);
        rec->done_run = g->run;
    }
    pthread_mutex_unlock(&g->dist->mu);
    memset(rec->orphan, 0, g->dist->ndata ? g->dist->ndata : 1);
    if (g->replan && (st = replan(g, 0)))   /* after a recovery: the survivors' plan */
        return st;
    if (rec->computes == 1 && (st = dist_lineage_snapshot(g))) {
        dist_graph_error(g, "rank %d: snapshot of the graph's inputs: %s", g->dist->rank,
                         cask_status_string(st));
        return st;
    }
    if ((st = dist_lineage_check_lost(g))) {
        rec->hopeless = 1;
        return st;
    }
    char lost[160];
    pthread_mutex_lock(&g->dist->mu);
    int unagreed = dist_unagreed(g->dist);
    dist_excluded_list(g->dist, -1, 1, lost, sizeof lost);
    pthread_mutex_unlock(&g->dist->mu);
    if (unagreed) {
        /* a loss seen, or a newer view started by others, while this rank was between
         * computes (say after it completed a run that another rank is recovering): the
         * others will not run this plan, so its receives would wait for nothing */
        dist_graph_error(g, "rank %d: the job's membership changed before this compute "
                         "(rank %s lost)", g->dist->rank, lost);
        return CASK_ERR_PEER;
    }
    if (g->plan_epoch != g->dist->epoch) {
        /* ranks were lost between the plan and this compute: recover this run */
        dist_graph_error(g, "rank %d: the job lost ranks since the graph was planned "
                         "(rank %s lost so far)", g->dist->rank, lost);
        return CASK_ERR_PEER;
    }
    return st;
}

/* What this rank delivered in the run of the current plan: the gathers rooted here
 * whose destinations its deliver/copy tasks filled (only those: another root of the
 * same datum may not have got it yet), and the data that reached home here. */
static void note_done(cask_dist_graph *g)
{
    dist_recovery *rec = g->rec;
    pthread_mutex_lock(&g->dist->mu);   /* STATE handlers write the record too */
    if (rec->done_run != g->run) {
        /* The record holds a later run's: the others went on, completed this run and
         * said what they delivered in theirs (state_landed). This rank's deliveries of
         * this run are not that run's: marked there, a gather would pass for delivered
         * in a run where it was not, and the recovery would not make it again (a stale
         * destination). What this rank says of this run goes out under this run's
         * number, which the others drop as earlier than theirs. */
        pthread_mutex_unlock(&g->dist->mu);
        return;
    }
    for (size_t i = 0; i < g->nslots; i++) {
        dist_slot *s = g->slots[i];
        if (s->done_run != g->run)
            continue;
        for (size_t k = 0; s->dest && k < g->ngathers; k++)
            if (g->gathers[k].gid == s->gid && g->gathers[k].root == g->dist->rank)
                rec->done[k] = 1;
        if (s->home)
            rec->done[g->ngathers + s->gid] = 1;
    }
    for (size_t i = 0; i < g->ncopies; i++) {
        dist_local_copy *c = &g->copies[i];
        if (c->done_run != g->run)
            continue;
        for (size_t k = 0; c->dest && k < g->ngathers; k++)
            if (g->gathers[k].gid == c->gid && g->gathers[k].root == g->dist->rank)
                rec->done[k] = 1;
        if (c->to || !c->dest)   /* a copy home, or the mark of a result made there */
            rec->done[g->ngathers + c->gid] = 1;
    }
    pthread_mutex_unlock(&g->dist->mu);
}

/* ---- the loop ---- */

cask_status dist_recover(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = g->rec;
    if (dist->size < 2 || !rec || rec->hopeless)
        return CASK_ERR_PEER;
    uint32_t failed_run = g->run;
    char err[768];
    dist_testkill_note_late(g->dist);
    note_done(g);
    cask_status st;
    int stop;
    for (int attempt = 1;; attempt++) {
        if ((st = dist_member_agree(dist, err, sizeof err))) {
            dist_graph_error(g, "%s", err);
            return st;
        }
        uint32_t epoch = dist->epoch;
        log_msg(dist->rt, CASK_LOG_WARN, "rank %d: graph %u run %u: recovering (attempt %d, "
                "epoch %u, %d ranks live)", dist->rank, g->id, failed_run, attempt, epoch,
                dist->size - dist->nexcluded);
        for (uint32_t gid = 0; gid < dist->ndata; gid++)
            if (dist->excluded[dist->data[gid].owner]) {
                rec->done[g->ngathers + gid] = 0;   /* its home is gone */
                rec->orphan[gid] = 1;
            }
        if ((st = dist_lineage_adopt(dist, err, sizeof err))) {
            dist_graph_error(g, "%s", err);
            return st;
        }
        dist_state_hdr h = { g->id, epoch, failed_run, STATE_RECOVERING, (uint32_t)rec->ndone };
        for (int r = 0; r < dist->size; r++)
            if (r != dist->rank && !dist->excluded[r])
                dist_rec_send_state(dist, r, &h, rec->done);
        if ((st = dist_rec_wait(g, 0, failed_run, failed_run, &stop)) && stop)
            return st;
        if (st)
            continue;   /* another loss: agree again */
        int completed = 0, gone = -1;
        pthread_mutex_lock(&dist->mu);
        for (int r = 0; r < dist->size; r++) {
            if (r == dist->rank || dist->excluded[r])
                continue;
            if (rec->completed_run[r] >= failed_run)
                completed = 1;
            else if (rec->state_run[r] == failed_run && rec->state_flags[r] == STATE_GONE)
                gone = r;
        }
        if (!completed && gone < 0)
            /* the recovery's run, only now: until this rank knows that it runs one, a
             * copy of the others' next run (they may have completed this one) must not
             * be taken for this run's (a gathered result lands straight in its
             * destination); late messages of the failed run drop by their epoch */
            g->run = failed_run + 1;
        pthread_mutex_unlock(&dist->mu);
        if (completed) {
            /* Every rank finished the run before the loss (a rank completes it only with
             * every rank's DONE); this one did not see some DONE before the view changed
             * (a DONE of the old epoch is dropped then). Nothing is missing, and this
             * rank's run stays the others' (it never took the recovery's number). The
             * plan still holds the lost ranks: the next compute recovers from its
             * start, with the same run number on every rank. */
            log_msg(dist->rt, CASK_LOG_WARN, "rank %d: graph %u run %u: completed on every "
                    "rank before the loss (epoch %u)", dist->rank, g->id, failed_run, epoch);
            return CASK_OK;
        }
        if (gone >= 0) {
            /* name the ranks lost too (the one that left usually failed because of
             * them) and its cause, which came with its STATE (it may have learnt of it
             * before this rank did, from a third rank whose ABORT is still on its way
             * here): "left" alone named neither the failing rank nor the lost data */
            char lost[160], why[DIST_GONE_WHY];
            pthread_mutex_lock(&dist->mu);
            dist_excluded_list(dist, gone, 0, lost, sizeof lost);
            snprintf(why, sizeof why, "%s", rec->gone_why[gone]);
            if (!why[0] && dist->left_by == gone && dist->left[gone])   /* its LEAVE said */
                snprintf(why, sizeof why, "%s", dist->left_why);
            pthread_mutex_unlock(&dist->mu);
            dist_graph_error(g, "rank %d left graph %u after the loss of rank %s%s%s: the "
                             "survivors cannot finish it without it", gone, g->id, lost,
                             why[0] ? ", failing with: " : "", why);
            return CASK_ERR_PEER;
        }
        int quiet = dist_testkill_give_up(dist);
        if (quiet) {
            char lost[160];
            pthread_mutex_lock(&dist->mu);
            dist_excluded_list(dist, -1, 0, lost, sizeof lost);
            pthread_mutex_unlock(&dist->mu);
            dist_graph_error(g, "rank %d: the test hook CASK_DIST_TEST_GIVE_UP, after the loss "
                             "of rank %s", dist->rank, lost);
            st = CASK_ERR_PEER;
        } else {
            st = replan(g, 1);
        }
        if (st) {
            if (!g->error[0])
                dist_graph_error(g, "rank %d: planning the recovery: %s", dist->rank,
                                 cask_status_string(st));
            /* the others wait for this rank's READY: they stop at once, with the cause */
            if (quiet != 2)
                dist_ctrl_all(dist, g->id, g->run, CTRL_ABORT, (uint32_t)st, 0, g->error);
            return st;
        }
        log_msg(dist->rt, CASK_LOG_WARN, "rank %d: graph %u: the recovery runs %zu of the %zu "
                "tasks of %u compute%s (%zu here, %zu sources loaded here)", dist->rank, g->id,
                rec->nrun, rec->nxt, rec->computes, rec->computes > 1 ? "s" : "",
                g->ntasks_here, rec->nloads);
        pthread_mutex_lock(&dist->mu);
        memset(g->done_from, 0, (size_t)dist->size * sizeof *g->done_from);
        /* an ABORT of the failed run, or of an earlier attempt's recovery run (the same
         * number), is not this attempt's; a survivor that gave up this one is kept */
        if (g->abort_run <= failed_run || g->abort_epoch != epoch)
            g->abort_run = 0;
        g->send_status = CASK_OK;
        g->send_msg[0] = 0;
        pthread_mutex_unlock(&dist->mu);
        g->error[0] = 0;
        dist_ctrl_all(dist, g->id, g->run, CTRL_READY, 0, 2ull * epoch, NULL);
        if ((st = dist_rec_wait(g, 1, 2 * epoch, failed_run, &stop)) && stop)
            return st;
        if (st)
            continue;
        st = dist_run_local(g);
        if (st == CASK_ERR_PEER) {
            note_done(g);
            continue;
        }
        if (st)
            return st;
        log_msg(dist->rt, CASK_LOG_WARN, "rank %d: graph %u recovered on %d ranks (epoch %u)",
                dist->rank, g->id, dist->size - dist->nexcluded, epoch);
        /* The next computes run every task on the survivors: that plan now, and nobody
         * sends data of the next run before every rank has it (a rank still finishing
         * this run would take it into this plan's slots). A loss now is met by the next
         * compute. */
        if ((st = replan(g, 0))) {
            dist_graph_error(g, "rank %d: planning the graph over the survivors: %s",
                             dist->rank, cask_status_string(st));
            return st;
        }
        dist_ctrl_all(dist, g->id, g->run, CTRL_READY, 0, 2ull * epoch + 1, NULL);
        if (dist_rec_wait(g, 1, 2 * epoch + 1, failed_run, &stop) && stop)
            g->error[0] = 0;   /* recovered: the next compute meets the loss or the leave */
        return CASK_OK;
    }
}
