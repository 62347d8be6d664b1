/* distributed/dist_recover_msg.c: the messages of a recovery (dist_recover.c) and the waits on
 * them: STATE (what each survivor delivered in the failed run, or that it completed the
 * run or is gone from it; answered from the handler by a rank not computing it) and
 * READY (a survivor has the recovery plan, or the next plan, in place). */
#include "distributed/dist_recover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef CASK_HAVE_UCX
/* Records what rank `from` said of run h->run (under dist->mu). A COMPLETED answer is
 * kept apart: the same rank's own STATE of a later run (it went on and is recovering
 * that one) may land right after it and overwrite state_run. */
static void note_state(dist_recovery *rec, int from, const dist_state_hdr *h)
{
    rec->state_epoch[from] = h->epoch;
    rec->state_run[from] = h->run;
    rec->state_flags[from] = (uint8_t)h->flags;
    if (h->flags == STATE_COMPLETED && h->run > rec->completed_run[from])
        rec->completed_run[from] = h->run;
}

typedef struct state_in {
    cask_dist *dist;
    dist_state_hdr h;
    int from;
    uint8_t bytes[];
} state_in;

static void state_landed(void *arg, cask_status st, const char *why)
{
    state_in *in = arg;
    cask_dist *dist = in->dist;
    (void)why;
    pthread_mutex_lock(&dist->mu);
    cask_dist_graph *g = dist_find_graph(dist, in->h.graph);
    dist_recovery *rec = g ? g->rec : NULL;
    if (!st && rec && in->h.flags == STATE_GONE) {   /* its bytes: why it left the run */
        snprintf(rec->gone_why[in->from], DIST_GONE_WHY, "%.*s", (int)in->h.n,
                 (const char *)in->bytes);
        note_state(rec, in->from, &in->h);
    } else if (!st && rec && in->h.n == rec->ndone) {
        /* what was delivered in run h.run: an earlier run's says nothing of this one; a
         * later run's (a rank that went on: it completed the run this one recovers,
         * and says so) starts that run's record */
        if (in->h.run > rec->done_run) {
            memset(rec->done, 0, rec->ndone);
            rec->done_run = in->h.run;
        }
        for (size_t i = 0; in->h.run == rec->done_run && i < rec->ndone; i++)
            rec->done[i] |= in->bytes[i];
        note_state(rec, in->from, &in->h);
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    free(in);
}
#endif

#ifdef CASK_HAVE_UCX
static void state_sent(void *arg, cask_status st, const char *why)
{
    (void)st; (void)why;
    free(arg);
}
#endif

void dist_rec_send_state(cask_dist *dist, int to, const dist_state_hdr *h, const uint8_t *bytes)
{
#ifdef CASK_HAVE_UCX
    uint8_t *copy = NULL;
    if (h->n && (copy = malloc(h->n)))
        memcpy(copy, bytes, h->n);
    dist_state_hdr hh = *h;
    if (!copy)
        hh.n = 0;
    if (xport_ucx_am_send(dist->ucx, to, DIST_AM_STATE, &hh, sizeof hh, copy, hh.n,
                          state_sent, copy) != CASK_OK)
        free(copy);
#else
    (void)dist; (void)to; (void)h; (void)bytes;
#endif
}

/* A STATE_GONE answer with the run's error on this rank (under dist->mu): the asker
 * names it as the cause. Its bytes are the text, without the NUL. A graph destroyed
 * since (its program went on to finalize) left its failure on the job. */
static void gone_why(const cask_dist *dist, const cask_dist_graph *g, dist_state_hdr *reply,
                     char *buf)
{
    buf[0] = 0;
    if (reply->flags == STATE_GONE && g)
        snprintf(buf, DIST_GONE_WHY, "%.*s", DIST_GONE_WHY - 1, g->error);
    else if (reply->flags == STATE_GONE && reply->graph == dist->failed_graph)
        snprintf(buf, DIST_GONE_WHY, "%.*s", DIST_GONE_WHY - 1, dist->failed_msg);
    reply->n = (uint32_t)strlen(buf);
}

void dist_on_state(cask_dist *dist, int from, const void *hdr, size_t hdr_len, void *ucx_msg)
{
#ifdef CASK_HAVE_UCX
    xport_ucx_msg *m = ucx_msg;
    dist_state_hdr h;
    if (hdr_len != sizeof h || from < 0 || from >= dist->size)
        return;
    memcpy(&h, hdr, sizeof h);
    dist_state_hdr reply = { h.graph, 0, h.run, 0, 0 };
    pthread_mutex_lock(&dist->mu);
    reply.epoch = dist->epoch;
    cask_dist_graph *g = dist_find_graph(dist, h.graph);
    int drop = dist->excluded[from];
    if (!drop && h.flags == STATE_RECOVERING) {
        /* this rank is not computing that run: it finished it (and may be computing
         * the next one already), or gave up on it, or (no answer) has not started it
         * yet and will recover it with the others */
        if (!g && h.graph <= dist->next_graph)   /* destroyed: after completing that run? */
            reply.flags = h.graph >= 1 && h.graph <= dist->ngone_ok &&
                                  dist->gone_ok_run[h.graph - 1] >= h.run
                              ? STATE_COMPLETED : STATE_GONE;
        else if (g && g->ok_run >= h.run)
            reply.flags = STATE_COMPLETED;
        else if (g && !g->running && g->run >= h.run)
            reply.flags = STATE_GONE;
    }
    char why[DIST_GONE_WHY];
    gone_why(dist, g, &reply, why);
    pthread_mutex_unlock(&dist->mu);
    if (drop)
        return;
    if (reply.flags)
        dist_rec_send_state(dist, from, &reply, (const uint8_t *)why);
    state_in *in = malloc(sizeof *in + (m->len ? m->len : 1));
    if (!in)
        return;
    in->dist = dist;
    in->h = h;
    in->from = from;
    if (!m->len) {   /* no bytes: only the flags count */
        pthread_mutex_lock(&dist->mu);
        cask_dist_graph *gg = dist_find_graph(dist, h.graph);
        if (gg && gg->rec)
            note_state(gg->rec, from, &h);
        pthread_cond_broadcast(&dist->cv);
        pthread_mutex_unlock(&dist->mu);
        free(in);
        return;
    }
    if (xport_ucx_recv_into(m, in->bytes, state_landed, in) != CASK_OK)
        free(in);
#else
    (void)dist; (void)from; (void)hdr; (void)hdr_len; (void)ucx_msg;
#endif
}

void dist_recover_answer_late(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = g->rec;
    if (!rec || dist->size < 2)
        return;
    /* A survivor that asks whether this run completed here, while this rank was still
     * in it (its last DONE came just before the loss was heard of), got no answer then
     * and would wait for one (seed 603143019 of the chaos soak). Only a run that did not
     * recover here: a recovery's own run is numbered past the one asked about. */
    uint64_t to = 0;
    pthread_mutex_lock(&dist->mu);
    dist_state_hdr reply = { g->id, dist->epoch, g->run,
                             g->ok_run >= g->run ? STATE_COMPLETED : STATE_GONE, 0 };
    char why[DIST_GONE_WHY];
    gone_why(dist, g, &reply, why);
    for (int r = 0; r < dist->size && r < 64; r++)
        if (r != dist->rank && !dist->excluded[r] && rec->state_run[r] == g->run &&
            rec->state_flags[r] == STATE_RECOVERING)
            to |= 1ull << r;
    pthread_mutex_unlock(&dist->mu);
    for (int r = 0; r < dist->size && r < 64; r++)
        if (to >> r & 1)
            dist_rec_send_state(dist, r, &reply, (const uint8_t *)why);
}

/* READY's value: 2 epoch (a recovery plan is in place) or 2 epoch + 1 (after it, the
 * plan of the next computes is) */
void dist_recover_on_ready(cask_dist_graph *g, int from, const dist_ctrl_hdr *h)
{
    if (g->rec && h->value > g->rec->ready_epoch[from])
        g->rec->ready_epoch[from] = (uint32_t)h->value;
}

typedef int (*rec_ready_fn)(cask_dist_graph *g, uint32_t run);

static int states_in(cask_dist_graph *g, uint32_t run)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = g->rec;
    for (int r = 0; r < dist->size; r++)
        if (r != dist->rank && !dist->excluded[r] &&
            (rec->completed_run[r] >= run ||
             (rec->state_run[r] == run && rec->state_flags[r] != STATE_RECOVERING)))
            return 1;   /* a rank that is not recovering answered: decided */
    for (int r = 0; r < dist->size; r++)
        if (r != dist->rank && !dist->excluded[r] &&
            (rec->state_run[r] != run || rec->state_epoch[r] < dist->epoch))
            return 0;
    return 1;
}

static int readies_in(cask_dist_graph *g, uint32_t value)
{
    for (int r = 0; r < g->dist->size; r++)
        if (r != g->dist->rank && !g->dist->excluded[r] && g->rec->ready_epoch[r] < value)
            return 0;
    return 1;
}

/* Waits until ready(g, value): CASK_OK; CASK_ERR_PEER at a loss or a newer view not
 * agreed yet (agree again); CASK_ERR_PEER with *stop set and g->error written when the
 * recovery of failed_run cannot go on: a survivor gave up on it (its ABORT of the
 * recovery's run), or a rank of the view left the job (what it would send never comes).
 * A newer view is looked at before the answers: a rank that answered another's newer
 * round from its handler (so that round agreed) while it recovered in the older epoch
 * must join it, or each waits for the other's messages of its own epoch (chaos seed
 * 606916636: the one that gave up left, the other waited 60 s). */
cask_status dist_rec_wait(cask_dist_graph *g, int readies, uint32_t value, uint32_t failed_run,
                          int *stop)
{
    rec_ready_fn ready = readies ? readies_in : states_in;
    cask_dist *dist = g->dist;
    cask_status st = CASK_OK;
    double t0 = dist_now_s();
    *stop = 0;
    pthread_mutex_lock(&dist->mu);
    for (;;) {
        if (dist_unagreed(dist)) {
            st = CASK_ERR_PEER;
            break;
        }
        if (ready(g, value))
            break;
        int a = g->abort_from;
        if (g->abort_run > failed_run && g->abort_epoch == dist->epoch && a != dist->rank &&
            !dist->excluded[a] &&
            g->rec->state_run[a] == failed_run && g->rec->state_flags[a] == STATE_RECOVERING) {
            /* (an ABORT in this view of a rank that recovers this run, as it said: not
             * one of a rank that completed it and failed its next run, nor of an earlier
             * attempt's recovery run, which has the same number) */
            dist_graph_error(g, "rank %d gave up the recovery of graph %u: %s", a, g->id,
                             g->abort_msg);
            *stop = 1;
            st = g->abort_status ? g->abort_status : CASK_ERR_PEER;
            break;
        }
        if (dist_left_recovery(g, g->error, sizeof g->error) >= 0) {
            *stop = 1;
            st = CASK_ERR_PEER;
            break;
        }
        if (dist_now_s() - t0 > 60) {   /* bounded; a live rank answers in ms */
            st = CASK_ERR_PEER;
            break;
        }
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 1;
        pthread_cond_timedwait(&dist->cv, &dist->mu, &dl);
    }
    pthread_mutex_unlock(&dist->mu);
    return st;
}

