/* transport/ucx_liveness.c: which peers are alive, on the progress thread: endpoint
 * errors, heartbeats and silence (the peer timeout; with on_peer_silent a suspicion
 * first), a local peer's process gone; a dead peer's sends and receives ended and its
 * endpoint closed. See ucx.h, "Failures". */
#include "transport/ucx_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Closes p's endpoint, if it has one, without flushing (the peer is gone or going). */
static void close_ep(ucx_peer *p)
{
    if (!p->ep)
        return;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void *r = ucp_ep_close_nbx(p->ep, &prm);
    p->ep = NULL;
    if (UCS_PTR_IS_PTR(r))
        p->close_req = r;
}

void ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ucx_peer *p = arg;
    (void)ep;
    p->ep_error = status;       /* handled outside UCX's callback, by handle_ep_errors */
    p->x->has_ep_errors = 1;
}

void ucx_mark_dead(xport_ucx *x, ucx_peer *p, cask_status st, const char *why)
{
    if (atomic_load(&p->state) != PEER_ALIVE)
        return;
    /* what it committed to its ring before it was lost is read first, as what it sent
     * by TCP before it exited (ucx_tick) */
    ucx_ring_drain_peer(x, p, 0);
    int alive = PEER_ALIVE;
    if (!atomic_compare_exchange_strong(&p->state, &alive, PEER_DEAD))
        return;
    ucx_record_error(x, "%s", why);
    pthread_mutex_lock(&x->mu);
    x->dead++;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    while (p->q_head) {
        ucx_op *op = p->q_head;
        p->q_head = op->next;
        ucx_call_done(op, CASK_ERR_PEER, why);
        free(op);
    }
    p->q_tail = NULL;
    p->q_len = 0;
    for (ucx_op *op = p->inflight; op; op = op->fnext)
        ucx_call_done(op, CASK_ERR_PEER, why);   /* UCX completes and frees them later */
    ucx_seg_peer_lost(x, p);   /* blocks it held, read or not, are ours again */
    ucx_ring_peer_lost(x, p, why);   /* our lane to it closed, its ring no longer read */
    close_ep(p);
    if (x->on_peer) {
        ucx_hold(x);
        x->on_peer(x->on_peer_arg, p->rank, st, why);
        ucx_release(x);
    }
}

void ucx_handle_ep_errors(xport_ucx *x)
{
    x->has_ep_errors = 0;
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        ucs_status_t s = p->ep_error;
        if (s == UCS_OK)
            continue;
        p->ep_error = UCS_OK;
        if (atomic_load(&p->state) == PEER_GONE) {
            /* It said goodbye: its endpoint going away is expected. Close ours. */
            close_ep(p);
            continue;
        }
        char why[256];
        snprintf(why, sizeof why, "rank %d: endpoint to rank %d failed: %s (peer error)",
                 x->rank, r, ucs_status_string(s));
        ucx_mark_dead(x, p, ucx_status(s), why);
    }
}

int ucx_process_alive(pid_t pid)
{
    if (pid <= 0)
        return 1;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
        return 0;   /* killed, not yet reaped */
    return 1;
}

/* Heartbeats, credit returns, liveness; and goodbyes once a peer's sends drained. */
void ucx_tick(xport_ucx *x, uint64_t now)
{
    uint64_t hb = (uint64_t)x->heartbeat_ms * 1000000ull;
    uint64_t to = (uint64_t)x->timeout_ms * 1000000ull;
    /* This thread came late (descheduled, stopped, or waiting for the lock): the
     * silence it measures is partly its own, and the peers' heartbeats may not have
     * been sent for the same reason (a loaded host). Count it as heard. */
    uint64_t late = x->next_tick_ns && now > x->next_tick_ns ? now - x->next_tick_ns : 0;
    if (late > hb)
        for (int r = 0; r < x->size; r++)
            x->peers[r].last_recv_ns = x->peers[r].last_recv_ns + late < now
                                       ? x->peers[r].last_recv_ns + late : now;
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        if (atomic_load(&p->state) != PEER_ALIVE || r == x->rank)
            continue;
        /* a peer the layer above fenced out (xport_ucx_fence) is lost once silent for
         * two heartbeats: a frozen one at once, a live one never */
        if (atomic_load(&p->fence) && now - p->last_recv_ns > 2 * hb) {
            char why[200];
            snprintf(why, sizeof why, "rank %d: rank %d, fenced out of the job, silent for "
                     "%d ms", x->rank, r, (int)((now - p->last_recv_ns) / 1000000ull));
            ucx_mark_dead(x, p, CASK_ERR_PEER, why);
            continue;
        }
        /* not through its hello yet: still joining, the join's deadline holds (a local
         * one that exited is seen below at once) */
        uint64_t lim = p->hello ? to : (uint64_t)ucx_join_ms(x) * 1000000ull;
        if (to && now - p->last_recv_ns > (x->on_silent && p->hello ? 2 * to : lim)) {
            char why[200];
            snprintf(why, sizeof why, "rank %d: nothing heard from rank %d for %d ms "
                     "(%s)", x->rank, r, (int)((now - p->last_recv_ns) / 1000000ull),
                     !p->hello ? "no hello: the join's deadline, the larger of the peer "
                                 "timeout and 30 s"
                     : x->on_silent ? "peer timeout, CASK_PEER_TIMEOUT_MS, twice"
                     : "peer timeout, CASK_PEER_TIMEOUT_MS");
            p->silent = 0;
            ucx_mark_dead(x, p, CASK_ERR_PEER, why);
            continue;
        }
        if (to && x->on_silent && p->hello && !p->silent && now - p->last_recv_ns > to) {
            /* suspected only: the layer above decides (it may hear from it again) */
            char why[200];
            snprintf(why, sizeof why, "rank %d: nothing heard from rank %d for %d ms "
                     "(peer timeout, CASK_PEER_TIMEOUT_MS)", x->rank, r,
                     (int)((now - p->last_recv_ns) / 1000000ull));
            p->silent = 1;
            ucx_hold(x);
            x->on_silent(x->on_peer_arg, r, CASK_ERR_PEER, why);
            ucx_release(x);
            if (atomic_load(&p->fence)) {   /* the layer above gave it up: now, as */
                p->silent = 0;               /* without on_silent (no goodbye to it) */
                ucx_mark_dead(x, p, CASK_ERR_PEER, why);
                continue;
            }
        }
        if (p->local && !ucx_process_alive(p->pid)) {
            /* what it sent before it exited is here already (a goodbye, after which
             * its exit is no failure): read all of it first */
            ucx_progress_drain(x);
            now = ucx_now_ns();   /* the others' last_recv_ns may be later than now was */
            if (atomic_load(&p->state) != PEER_ALIVE)
                continue;
            char why[200];
            snprintf(why, sizeof why, "rank %d: process %d of rank %d on this host has "
                     "exited", x->rank, (int)p->pid, r);
            ucx_mark_dead(x, p, CASK_ERR_PEER, why);
            continue;
        }
        if (now - p->last_send_ns >= hb)
            ucx_send_ctrl(x, p, CTRL_HEARTBEAT);
        else if (p->to_return > 0 && now - p->last_send_ns >= hb / 4)
            ucx_send_ctrl(x, p, CTRL_CREDIT);
    }
}

