/* distributed/dist_fence.c: fencing a rank out, from both sides.
 *
 * The survivors of a loss agree on a view without the ranks they hold dead
 * (dist_membership.c). One of those may be alive, only slow or frozen (a false
 * suspicion, or one rank's peer timeout shorter than the others'). Neither side may
 * then wait for the other: the survivors must finish without it, and it must end in
 * bounded time with "rank N was fenced out", never with success.
 *
 * The survivors' side: a rank suspected (named dead by a proposal it heard; such a
 * suspect is never taken back, the agreement only adds to the set; one this rank's
 * transport only found silent, without which no majority would remain, is not told
 * and is back if heard again first: dist_member_on_back), or left out by the agreed
 * view, is told so (a notice: a MEMBER answer whose
 * mask names it), then the transport declares it lost once it has been silent for two
 * heartbeats (xport_ucx_fence; closing the endpoint of a rank that still talks, at once,
 * stalled recoveries over TCP: dist_netns_hosts_4): sends to it
 * still in flight (a rendezvous to a frozen rank never completes) end with
 * CASK_ERR_PEER, tasks shipped to it to balance the load (dist_steal.c) end, its
 * endpoint closes and its goodbye is not waited for in cask_dist_finalize. The run
 * then fails over to the recovery at once, not after this rank's own peer timeout.
 *
 * The fenced rank's side: the notice, a proposal that names it, or its own agreement
 * (its peers went silent, their endpoints closed: the transport reports them lost, and
 * no majority is left) sets dist->fenced, and every wait it may be in ends with the
 * fenced message: receives of running graphs (dist_xfer_end_run), tasks it shipped to
 * others and its sends in flight (every peer counts as lost to it: xport_ucx_fence,
 * which also spares cask_dist_finalize the wait for goodbyes that will not come), the
 * NCCL communicator; the waits on
 * dist->cv (plan, DONE, barrier, recovery, agreement) see dist_unagreed() and return. */
#include "distributed/dist_fence.h"
#include "distributed/dist_steal.h"

#include <stdio.h>

/* The notice to `to`: the view of epoch `epoch` holds the ranks of `mask` dead (reply
 * 1: never answered in turn). */
static void notice(cask_dist *dist, int to, uint32_t epoch, uint64_t mask)
{
#ifdef CASK_HAVE_UCX
    dist_ctrl_hdr h = { 0, 0, CTRL_MEMBER, 1, epoch, 0, mask };
    xport_ucx_am_send(dist->ucx, to, DIST_AM_CTRL, &h, sizeof h, NULL, 0, NULL, NULL);
#else
    (void)dist; (void)to; (void)epoch; (void)mask;
#endif
}

/* Whether this rank talks to others (a build without UCX runs one process only). */
static int have_ucx(const cask_dist *dist)
{
#ifdef CASK_HAVE_UCX
    return dist->ucx != NULL;
#else
    (void)dist;
    return 0;
#endif
}

/* The ranks held dead now (under mu). */
static uint64_t held_dead(const cask_dist *dist)
{
    uint64_t m = dist->suspects;
    for (int r = 0; r < dist->size && r < 64; r++)
        if (dist->excluded[r] || dist->lost[r])
            m |= 1ull << r;
    return m;
}

void dist_fence_tell(cask_dist *dist, int to)
{
    if (!have_ucx(dist) || to < 0 || to >= dist->size || to == dist->rank || dist->size > 64)
        return;
    pthread_mutex_lock(&dist->mu);
    uint64_t mask = held_dead(dist);
    uint32_t epoch = dist->epoch;
    int lost = dist->lost[to];
    pthread_mutex_unlock(&dist->mu);
    if ((mask >> to & 1) && !lost)
        notice(dist, to, epoch, mask);
}

void dist_fence_out(cask_dist *dist, uint64_t ranks)
{
    if (!have_ucx(dist) || dist->size > 64)
        return;
    pthread_mutex_lock(&dist->mu);
    uint64_t mask = held_dead(dist) | ranks;
    uint32_t epoch = dist->epoch;
    pthread_mutex_unlock(&dist->mu);
    for (int r = 0; r < dist->size; r++) {
        if (!(ranks >> r & 1) || r == dist->rank)
            continue;
        notice(dist, r, epoch, mask);
        dist_steal_on_lost(dist, r);
#ifdef CASK_HAVE_UCX
        xport_ucx_fence(dist->ucx, r);
#endif
    }
}

void dist_fence_self(cask_dist *dist)
{
    char why[sizeof dist->fenced_msg];
    pthread_mutex_lock(&dist->mu);
    snprintf(why, sizeof why, "%s", dist->fenced_msg);
    pthread_mutex_unlock(&dist->mu);
    dist_member_break_runs(dist, why);
    for (int r = 0; r < dist->size; r++) {
        if (r == dist->rank)
            continue;
        dist_steal_on_lost(dist, r);   /* nobody will answer this rank any more */
#ifdef CASK_HAVE_UCX
        /* nor read what it sends (a rendezvous to a survivor never completes), nor say
         * goodbye to it: its sends end, finalize does not wait */
        if (dist->ucx)
            xport_ucx_fence(dist->ucx, r);
#endif
    }
    dist_nccl_abort(dist, why);
}
