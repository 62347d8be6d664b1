/* distributed/dist_membership.c: one agreed view of the live ranks of a job, numbered by an
 * epoch, so that the survivors of a loss never split into two groups that each go on.
 *
 * A rank that learns of a loss (its transport reports a lost peer, or another rank's
 * MEMBER message names ranks it holds dead) proposes, for the next epoch, the set of
 * ranks it holds dead: the union of what it saw and what it heard. Every rank keeps
 * resending its set when it grows; the view is decided when every rank outside the set
 * has reported exactly that set for that epoch. A rank that hears of a higher epoch
 * joins it. A rank that is not agreeing (between graphs, in finalize) answers from its
 * handler, so nobody waits for a rank's compute thread. Messages of other epochs, and
 * from ranks out of the view, are dropped (dist_run.c, dist_xfer.c), and no rank sends
 * to a rank out of the view: a rank that was only slow is fenced out for good.
 *
 * Late heartbeats: a rank this rank's transport found silent, without which no majority
 * would remain (dist.c, on_peer_silent), is held dead but not told; heard again before
 * a view left it out, it is back (dist_member_on_back) and the agreement starts a new
 * round, at a higher epoch, without it. An agreement that finds no majority waits for
 * such ranks (the transport fails them for good at twice the peer timeout) instead of
 * fencing this rank at once: two live ranks whose heartbeats were late agree instead of
 * both fencing themselves. A rank that left the job (LEAVE) and has not reported ends
 * the agreement with CASK_ERR_PEER naming it (it never will).
 *
 * Quorum: a view must hold more than half of the previous one, or exactly half with the
 * previous view's lowest rank. Two disjoint groups can then never both go on; a rank
 * that finds itself in a minority, or named dead by the others, stops with "fenced
 * out". Masks are 64 bits: jobs of more than 64 ranks do not recover (they fail with
 * CASK_ERR_PEER as before). */
#include "distributed/dist_fence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/deadline.h"
#include "runtime/log.h"

static uint64_t excluded_mask(const cask_dist *dist)
{
    uint64_t m = 0;
    for (int r = 0; r < dist->size && r < 64; r++)
        if (dist->excluded[r])
            m |= 1ull << r;
    return m;
}

/* What this rank holds dead now (under mu). */
static uint64_t dead_mask(const cask_dist *dist)
{
    uint64_t m = excluded_mask(dist) | dist->suspects;
    for (int r = 0; r < dist->size && r < 64; r++)
        if (dist->lost[r])
            m |= 1ull << r;
    return m;
}

void dist_excluded_list(const cask_dist *dist, int skip, int with_lost, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int q = 0; q < dist->size && at + 8 < len; q++)
        if ((dist->excluded[q] || (with_lost && dist->lost[q])) && q != skip)
            at += (size_t)snprintf(buf + at, len - at, "%s%d", at ? ", " : "", q);
    if (!at)
        snprintf(buf, len, "?");
}

int dist_unagreed(const cask_dist *dist)
{
    if (dist->fenced)
        return 1;
    if (dist->suspects & ~excluded_mask(dist))
        return 1;
    for (int r = 0; r < dist->size; r++) {
        if (dist->excluded[r] || r == dist->rank)
            continue;
        if (dist->lost[r] || dist->mem_epoch[r] > dist->epoch)
            return 1;   /* lost, or some rank started a newer view */
    }
    return 0;
}

int dist_all_losses_agreed(cask_dist *dist)
{
    for (int r = 0; r < dist->size; r++)
        if (dist->lost[r] && !dist->excluded[r])
            return 0;
    return 1;
}

/* reply: an answer to another rank's message (never answered in turn: no ping-pong) */
static void send_member(cask_dist *dist, int to, uint32_t epoch, uint64_t mask, int reply)
{
#ifdef CASK_HAVE_UCX
    dist_ctrl_hdr h = { 0, 0, CTRL_MEMBER, (uint32_t)reply, epoch, 0, mask };
    xport_ucx_am_send(dist->ucx, to, DIST_AM_CTRL, &h, sizeof h, NULL, 0, NULL, NULL);
#else
    (void)dist; (void)to; (void)epoch; (void)mask; (void)reply;
#endif
}

/* To every rank in `to`, those held dead included: one that was only slow learns from
 * it that it is fenced out (a send to a dead one fails at once). */
static void send_member_all(cask_dist *dist, uint32_t epoch, uint64_t mask, uint64_t to)
{
    for (int r = 0; r < dist->size; r++)
        if (to >> r & 1)
            send_member(dist, r, epoch, mask, 0);
}

/* The ranks a proposal goes to (under mu): all but this one, the fenced and the dead. */
static uint64_t member_dests(const cask_dist *dist)
{
    uint64_t to = 0;
    for (int r = 0; r < dist->size; r++)
        if (r != dist->rank && !dist->excluded[r] && !dist->lost[r])
            to |= 1ull << r;
    return to;
}

static void list_mask(char *buf, size_t len, uint64_t m, int size)
{
    size_t o = 0;
    buf[0] = 0;
    for (int r = 0; r < size && r < 64 && o + 8 < len; r++)
        if (m >> r & 1)
            o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", r);
    if (!o)
        snprintf(buf, len, "none");
}

void dist_member_break_runs(cask_dist *dist, const char *why)
{
    enum { MAXG = 16 };
    cask_task_async **tok[MAXG];
    struct cask_dist_graph *gs[MAXG];
    size_t ntok[MAXG];
    int ng = 0;
    pthread_mutex_lock(&dist->mu);
    for (struct cask_dist_graph *g = dist->graphs; g && ng < MAXG; g = g->next)
        if (g->running) {
            tok[ng] = dist_xfer_take_waiting(g, &ntok[ng]);
            g->handlers_in++;
            gs[ng++] = g;
        }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    for (int i = 0; i < ng; i++)
        dist_xfer_end_run(gs[i], tok[i], ntok[i], CASK_ERR_PEER, why);
    pthread_mutex_lock(&dist->mu);
    for (int i = 0; i < ng; i++)
        gs[i]->handlers_in--;
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}

void dist_member_on_msg(cask_dist *dist, int from, const dist_ctrl_hdr *h)
{
    if (dist->size > 64)
        return;
    uint64_t mask = h->value, fresh_suspects = 0;
    int reply = 0, brk = 0, fenced_now = 0;
    uint32_t r_epoch = 0;
    uint64_t r_mask = 0;
    char why[600] = "";
    pthread_mutex_lock(&dist->mu);
    if (dist->excluded[from]) {
        pthread_mutex_unlock(&dist->mu);
        if (!h->status)
            dist_fence_tell(dist, from);   /* fenced out: not heard, but told so */
        return;
    }
    if (h->epoch > dist->mem_epoch[from] ||
        (h->epoch == dist->mem_epoch[from] && mask != dist->mem_mask[from])) {
        dist->mem_epoch[from] = h->epoch;
        dist->mem_mask[from] = mask;
    }
    if (mask >> dist->rank & 1) {
        /* the others hold this rank dead: they go on without it */
        if (!dist->fenced) {
            char others[200] = "";
            uint64_t o = mask & ~(1ull << dist->rank);
            if (o) {   /* the loss it came after, as the others saw it */
                char l[140];
                list_mask(l, sizeof l, o, dist->size);
                snprintf(others, sizeof others, " (after the loss of rank(s) %s)", l);
            }
            dist->fenced = 1;
            snprintf(dist->fenced_msg, sizeof dist->fenced_msg, "rank %d was fenced out%s: "
                     "rank %d and the other survivors hold it dead (it was too slow or "
                     "unreachable for CASK_PEER_TIMEOUT_MS) and went on without it",
                     dist->rank, others, from);
            fenced_now = 1;
        }
    } else {
        uint64_t fresh = mask & ~dead_mask(dist);
        if (fresh || h->epoch > dist->epoch) {
            if (fresh) {
                dist->suspects |= fresh;
                fresh_suspects = fresh;
                if (!dist->err[0]) {   /* "rank N" each: the lost ranks named */
                    size_t o = (size_t)snprintf(dist->err, sizeof dist->err,
                                                "rank %d reports", from);
                    for (int r = 0; r < dist->size && r < 64 && o + 16 < sizeof dist->err; r++)
                        if (fresh >> r & 1)
                            o += (size_t)snprintf(dist->err + o, sizeof dist->err - o,
                                                  " rank %d", r);
                    snprintf(dist->err + o, sizeof dist->err - o, " lost");
                }
            }
            if (!dist->agreeing) {
                brk = 1;   /* a run in progress must stop and agree */
                snprintf(why, sizeof why, "rank %d started a new view of the job", from);
            }
        }
        if (!dist->agreeing && !h->status) {
            reply = 1;
            if (h->epoch > dist->epoch) {
                r_epoch = h->epoch;
                r_mask = dead_mask(dist) | mask;
            } else {
                r_epoch = dist->epoch;
                r_mask = excluded_mask(dist);
            }
        }
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    if (fresh_suspects)
        dist_testkill_on_lost(dist);   /* a test hook: stalls here, before the answer */
    if (reply && !(r_mask >> from & 1))
        send_member(dist, from, r_epoch, r_mask, 1);
    if (fresh_suspects)
        dist_fence_out(dist, fresh_suspects);
    if (fenced_now)
        dist_fence_self(dist);
    else if (brk)
        dist_member_break_runs(dist, why);
}

void dist_member_on_back(cask_dist *dist, int peer)
{
    if (peer < 0 || peer >= dist->size || peer >= 64)
        return;
    uint64_t bit = 1ull << peer;
    int back = 0;
    pthread_mutex_lock(&dist->mu);
    if ((dist->silent & bit) && dist->lost[peer] && !dist->excluded[peer] &&
        !(dist->suspects & bit) && !dist->fenced) {
        dist->silent &= ~bit;
        dist->heard_back |= bit;
        dist->lost[peer] = 0;
        dist->nlost--;
        char head[32];
        int n = snprintf(head, sizeof head, "rank %d lost: ", peer);
        if (!strncmp(dist->err, head, (size_t)n))
            dist->err[0] = 0;   /* another loss, if any, says it again below */
        for (int r = 0; r < dist->size && !dist->err[0]; r++)
            if (dist->lost[r] && !dist->excluded[r])
                snprintf(dist->err, sizeof dist->err, "rank %d lost", r);
        back = 1;
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    if (back)
        log_msg(dist->rt, CASK_LOG_WARN, "rank %d: rank %d, silent for the peer timeout, is "
                "heard again: not lost", dist->rank, peer);
}

static int quorum(const cask_dist *dist, uint64_t dead);

int dist_member_keep_suspect(cask_dist *dist, int peer)
{
    if (peer < 0 || peer >= 64 || dist->size > 64)
        return 0;
    pthread_mutex_lock(&dist->mu);
    uint64_t dead = dead_mask(dist);
    /* another rank lost already (the view changes anyway: taken back, this one only
     * leaves a view without the lost ones), and no majority without this one */
    int keep = (dead & ~excluded_mask(dist) & ~(1ull << peer)) &&
               !quorum(dist, dead | 1ull << peer);
    pthread_mutex_unlock(&dist->mu);
    return keep;
}

static int quorum(const cask_dist *dist, uint64_t dead)
{
    int prev = 0, next = 0, lowest = -1;
    for (int r = 0; r < dist->size; r++) {
        if (dist->excluded[r])
            continue;
        if (lowest < 0)
            lowest = r;
        prev++;
        if (!(dead >> r & 1))
            next++;
    }
    return 2 * next > prev || (2 * next == prev && lowest >= 0 && !(dead >> lowest & 1));
}


cask_status dist_member_agree(cask_dist *dist, char *err, size_t errlen)
{
    if (dist->size > 64) {
        snprintf(err, errlen, "a rank was lost; recovery needs a job of at most 64 ranks "
                 "(%d here)", dist->size);
        return CASK_ERR_PEER;
    }
    cask_status st = CASK_OK;
    uint64_t newly = 0;
    int fenced_now = 0;
    pthread_mutex_lock(&dist->mu);
    dist->agreeing = 1;
    uint32_t e = dist->epoch + 1;
    for (int r = 0; r < dist->size; r++)
        if (!dist->excluded[r] && dist->mem_epoch[r] > e)
            e = dist->mem_epoch[r];
    uint64_t M = dead_mask(dist);
    int send = 1;
    /* bounded: failure detection shrinks the view; a view that never settles is a bug
     * (the wait for ranks only silent is bounded by the transport: twice the timeout) */
    double t0 = dist_now_s();
    for (;;) {
        if (dist->fenced || (M >> dist->rank & 1)) {
            if (!dist->fenced) {
                snprintf(dist->fenced_msg, sizeof dist->fenced_msg, "rank %d was fenced "
                         "out: the other ranks hold it dead", dist->rank);
                fenced_now = 1;
            }
            dist->fenced = 1;
            snprintf(err, errlen, "%s", dist->fenced_msg);
            st = CASK_ERR_PEER;
            break;
        }
        uint64_t back = dist->heard_back & M;
        dist->heard_back &= ~back;
        if (back && (dead_mask(dist) & ~excluded_mask(dist))) {
            /* a rank held dead here only for its silence talks again, and no view left
             * it out: a new round (sets only grow within one) without it, if the view
             * still changes (a view that leaves nobody out would fail the ranks that
             * completed their compute and did not agree on it) */
            for (int r = 0; r < dist->size; r++)
                if (!dist->excluded[r] && dist->mem_epoch[r] > e)
                    e = dist->mem_epoch[r];
            e++;
            M = dead_mask(dist);
            send = 1;
            continue;
        }
        if (send) {
            uint64_t to = member_dests(dist);
            pthread_mutex_unlock(&dist->mu);
            send_member_all(dist, e, M, to);
            pthread_mutex_lock(&dist->mu);
            send = 0;
        }
        uint64_t N = M | dead_mask(dist);
        uint32_t ne = e;
        for (int r = 0; r < dist->size; r++) {
            if (r == dist->rank || (N >> r & 1))
                continue;
            if (dist->mem_epoch[r] > ne)
                ne = dist->mem_epoch[r];
            if (dist->mem_epoch[r] == e)
                N |= dist->mem_mask[r] & ~(1ull << dist->rank);
        }
        if (N != M || ne != e) {
            M = N;
            e = ne;
            send = 1;
            continue;
        }
        int agreed = 1, left = -1;
        for (int r = 0; r < dist->size; r++)
            if (r != dist->rank && !(M >> r & 1) &&
                (dist->mem_epoch[r] != e || dist->mem_mask[r] != M)) {
                agreed = 0;
                if (dist->left[r])
                    left = r;   /* it left the job: it will never report */
            }
        if (left >= 0) {
            char dead[160];
            list_mask(dead, sizeof dead, M & ~excluded_mask(dist), dist->size);
            snprintf(err, errlen, "rank %d left the job while rank %d agreed on a view "
                     "without rank(s) %s%s%s", left, dist->rank, dead,
                     dist->left_why[0] ? ": " : "", dist->left_why);
            st = CASK_ERR_PEER;
            break;
        }
        /* No majority, but some of the ranks held dead were only silent here: wait for
         * them (heard again: a new round) until the transport fails them for good. */
        int wait_silent = agreed && !quorum(dist, M) && (M & dist->silent & ~excluded_mask(dist));
        if (agreed && !wait_silent)
            break;
        if (wait_silent)
            t0 = dist_now_s();
        if (!wait_silent && dist_now_s() - t0 > 60) {
            snprintf(err, errlen, "rank %d: the survivors did not agree on a view in 60 s",
                     dist->rank);
            st = CASK_ERR_PEER;
            break;
        }
        struct timespec dl;
        deadline_in(&dl, 50);
        pthread_cond_timedwait(&dist->cv, &dist->mu, &dl);
    }
    if (!st && !quorum(dist, M)) {
        char dead[160];
        list_mask(dead, sizeof dead, M & ~excluded_mask(dist), dist->size);
        fenced_now = !dist->fenced;
        dist->fenced = 1;
        char before[160] = "";
        size_t bo = 0;   /* the losses of earlier views, for the record: "rank N" each */
        for (int r = 0; r < dist->size && r < 64 && bo + 24 < sizeof before; r++)
            if (dist->excluded[r])
                bo += (size_t)snprintf(before + bo, sizeof before - bo, "%s rank %d",
                                       bo ? "," : "; lost before:", r);
        snprintf(dist->fenced_msg, sizeof dist->fenced_msg, "rank %d was fenced out: it sees "
                 "ranks %s gone, which leaves no majority of the %d ranks of epoch %u (the "
                 "others may go on without it%s)", dist->rank, dead,
                 dist->size - dist->nexcluded, dist->epoch, before);
        snprintf(err, errlen, "%s", dist->fenced_msg);
        st = CASK_ERR_PEER;
    }
    if (!st) {
        char dead[160];
        list_mask(dead, sizeof dead, M, dist->size);
        for (int r = 0; r < dist->size; r++)
            if ((M >> r & 1) && !dist->excluded[r]) {
                newly |= 1ull << r;
                dist->excluded[r] = 1;
                dist->nexcluded++;
            }
        dist->epoch = e;
        dist->suspects = 0;
        dist->heard_back = 0;
        dist->mem_epoch[dist->rank] = e;
        log_msg(dist->rt, CASK_LOG_INFO, "rank %d: view of epoch %u agreed: ranks %s out, %d "
                "live", dist->rank, e, dead, dist->size - dist->nexcluded);
    }
    dist->agreeing = 0;
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    if (fenced_now)
        dist_fence_self(dist);
    if (newly)
        dist_fence_out(dist, newly);
    return st;
}

cask_status dist_member_settle(cask_dist *dist)
{
    if (dist->size < 2)
        return CASK_OK;
    pthread_mutex_lock(&dist->mu);
    int need = dist_unagreed(dist);
    pthread_mutex_unlock(&dist->mu);
    if (!need)
        return CASK_OK;
    char err[512];
    cask_status st = dist_member_agree(dist, err, sizeof err);
    if (st)
        log_msg(dist->rt, CASK_LOG_WARN, "%s", err);
    return st;
}
