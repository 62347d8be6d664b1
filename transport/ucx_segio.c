/* transport/ucx_segio.c: the shared-memory segments of ucx_seg.h inside the transport:
 * making this rank's, mapping the peers', choosing which sends go through a block, giving
 * blocks back when a send fails or a peer is lost, and the test hook that kills a rank
 * in the middle of a copy. The messages that name blocks are sent and received in
 * ucx_send.c and ucx_progress.c. */
#include "transport/ucx_impl.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define UCX_RING_SLOTS 256u   /* slots of a lane: the window (credits) at most */

void ucx_seg_setup(xport_ucx *x)
{
    if (!x->seg_bytes || x->size < 2)
        return;
    x->seg = ucx_seg_create(x->rank, x->seg_bytes, x->size, x->ring_bytes, UCX_RING_SLOTS,
                            x->seg_err, sizeof x->seg_err);
    if (!x->seg)
        x->ring_max = 0;
}

void ucx_seg_map(xport_ucx *x, ucx_peer *p, int fd, uint64_t bytes, int bell)
{
    if (!x->seg_bytes || p->seg_map)
        return;
    char why[160];
    p->seg_map = ucx_seg_map_peer(p->pid, fd, (size_t)bytes, p->rank, why, sizeof why);
    if (p->seg_map) {
        p->seg_map_bytes = (size_t)bytes;
        atomic_store(&p->seg_mapped, 1);
        ucx_ring_connect(x, p, bell);
    }
    else if (!x->seg_err[0])
        snprintf(x->seg_err, sizeof x->seg_err, "rank %d's segment: %s", p->rank, why);
}

int ucx_seg_take(xport_ucx *x, ucx_op *op, const void *data, size_t len)
{
    if (!x->seg || op->mem != XPORT_UCX_MEM_HOST || len < x->seg_thresh ||
        len > ucx_seg_max_msg(x->seg) || op->peer == x->rank)
        return 0;
    ucx_peer *p = &x->peers[op->peer];
    /* From 1 MiB, CMA's one copy beats the segment's two (bench/RESULTS.md 22), and its
     * rendezvous costs little next to the data: such a message goes by CMA where the
     * endpoint has it, unless CASK_UCX_SEG_MAX says otherwise. */
    if (x->seg_max ? len > x->seg_max
                   : len >= UCX_SEG_CMA_FROM && atomic_load(&p->cma_lane))
        return 0;
    if (!atomic_load_explicit(&p->seg_tx, memory_order_acquire) ||
        atomic_load(&p->state) == PEER_DEAD)
        return 0;
    if (ucx_seg_alloc(x->seg, len, op->peer, &op->segd))
        return 0;   /* full: this one goes by UCX (never wait for a block) */
    ucx_seg_copy(x, 0, ucx_seg_base(x->seg) + op->segd.off, data, len);
    /* the block is written before any message names it */
    op->seg = 1;
    op->seg_x = x;
    op->data = &op->segd;
    op->len = sizeof op->segd;
    op->hdr.w.ctrl = UCX_WIRE_SEG;
    atomic_fetch_add_explicit(&p->seg_msgs_sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->seg_bytes_sent, len, memory_order_relaxed);
    return 1;
}

void ucx_seg_send_failed(xport_ucx *x, ucx_op *op)
{
    if (op->seg && x->seg)
        ucx_seg_free(x->seg, op->segd.off, op->segd.tag);
    op->seg = 0;
}

void ucx_seg_peer_lost(xport_ucx *x, ucx_peer *p)
{
    if (x->seg)
        ucx_seg_reclaim(x->seg, p->rank);
}

void ucx_seg_tick(xport_ucx *x)
{
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        ucx_ring_drop_gone(x, p);
        if (p->seg_map && atomic_load(&p->state) == PEER_DEAD) {
            atomic_store(&p->seg_mapped, 0);
            ucx_seg_unmap_peer(p->seg_map, p->seg_map_bytes);
            p->seg_map = NULL;
        }
    }
}

void ucx_seg_teardown(xport_ucx *x)
{
    ucx_ring_teardown(x);
    if (x->peers)
        for (int r = 0; r < x->size; r++) {
            ucx_seg_unmap_peer(x->peers[r].seg_map, x->peers[r].seg_map_bytes);
            x->peers[r].seg_map = NULL;
        }
    ucx_seg_destroy(x->seg);
    x->seg = NULL;
}

void ucx_seg_copy(xport_ucx *x, int recv_side, void *dst, const void *src, size_t len)
{
    int at = recv_side ? x->seg_kill_recv : x->seg_kill_send;
    if (at > 0 && atomic_fetch_add(&x->seg_kill_count, 1) + 1 == at) {
        memcpy(dst, src, len / 2);
        fprintf(stderr, "cask ucx: rank %d: CASK_UCX_TEST_SEG_KILL: killed half way through "
                "copy %d (%s side, %zu bytes)\n", x->rank, at, recv_side ? "receive" : "send",
                len);
        raise(SIGKILL);
    }
    memcpy(dst, src, len);
}
