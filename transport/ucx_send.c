/* transport/ucx_send.c: sending (xport_ucx_am_send and its memory-typed and posted
 * variants), from any thread: host data for a peer of this host through the ring toward
 * it (ucx_segring.c), else straight into UCX when the progress thread is this thread or
 * asleep (trylock), else through the lock-free submit queue; bulk host data too large for
 * a ring through a block of this rank's shared-memory segment (ucx_segio.c). See ucx.h. */
#include "transport/ucx_impl.h"

#include <stdlib.h>
#include <string.h>

cask_status xport_ucx_am_send(xport_ucx *x, int peer, unsigned id, const void *header,
                              size_t header_len, const void *data, size_t len,
                              xport_ucx_done_fn done, void *arg)
{
    return xport_ucx_am_send_mem(x, peer, id, header, header_len, data, len,
                                 XPORT_UCX_MEM_HOST, done, arg);
}

int xport_ucx_cuda_memory(const xport_ucx *x)
{
    return x ? x->cuda_mem : 0;
}

static cask_status send_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                            size_t header_len, const void *data, size_t len, xport_ucx_mem mem,
                            xport_ucx_done_fn done, void *arg, int direct);

cask_status xport_ucx_am_send_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                                  size_t header_len, const void *data, size_t len,
                                  xport_ucx_mem mem, xport_ucx_done_fn done, void *arg)
{
    return send_mem(x, peer, id, header, header_len, data, len, mem, done, arg, 1);
}

cask_status xport_ucx_am_post_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                                  size_t header_len, const void *data, size_t len,
                                  xport_ucx_mem mem, xport_ucx_done_fn done, void *arg)
{
    return send_mem(x, peer, id, header, header_len, data, len, mem, done, arg, 0);
}

static cask_status send_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                            size_t header_len, const void *data, size_t len, xport_ucx_mem mem,
                            xport_ucx_done_fn done, void *arg, int direct)
{
    if (x && mem == XPORT_UCX_MEM_CUDA && !x->cuda_mem)
        return CASK_ERR_UNSUPPORTED;
    if (!x || peer < 0 || peer >= x->size || id >= XPORT_UCX_MAX_AM ||
        header_len > XPORT_UCX_MAX_HEADER || (header_len && !header) || (len && !data))
        return CASK_ERR_INVALID;
    if (!atomic_load_explicit(&x->connected, memory_order_acquire))
        return CASK_ERR_STATE;
    if (direct && atomic_load_explicit(&x->peers[peer].state, memory_order_acquire) == PEER_DEAD)
        return CASK_ERR_PEER;   /* posted: the progress thread fails it through done */
    int ring = peer != x->rank && ucx_ring_fits(x, peer, mem, len);
    ucx_wire w = { .src = (uint32_t)x->rank, .id = (uint16_t)id, .hlen = (uint16_t)header_len };
    /* The ring toward a peer of this host, with room and nothing queued: copied in and
     * done here, no op made. Not while sends handed to the progress thread are not yet
     * issued (this thread's earlier ones may be among them), nor for a posted send (its
     * done belongs to the progress thread). */
    if (ring && direct && !atomic_load(&x->submit_n) &&
        ucx_ring_send(x, peer, &w, header, data, len, mem, done, arg))
        return CASK_OK;
    ucx_op *op = malloc(sizeof *op);
    if (!op)
        return CASK_ERR_NOMEM;
    op->next = op->fprev = op->fnext = NULL;
    op->owner = NULL;
    op->peer = peer;
    op->kind = OP_SEND;
    op->done_called = 0;
    op->req = NULL;
    op->done = done;
    op->arg = arg;
    op->data = data;
    op->len = len;
    op->mem = mem;
    op->hdr_len = sizeof(ucx_wire) + header_len;
    op->hdr.w = w;
    if (header_len)
        memcpy(op->hdr.bytes + sizeof(ucx_wire), header, header_len);
    /* Host data for a peer of this host that mapped our segment, too large for its ring:
     * copied into a block here, on the sending thread; the message only names the block
     * (ucx_seg.h). One for the ring goes there from issue() (queued if it is full). */
    op->seg = 0;
    if (!ring)
        ucx_seg_take(x, op, data, len);
    else if (direct && !atomic_load(&x->submit_n) && ucx_ring_queue(x, op))
        return CASK_OK;   /* queued at its lane (or sent, or failed, through done) */

    if (direct && ucx_progress_of == x) {
        ucx_issue(x, op);
        return CASK_OK;
    }
    /* The progress thread asleep (or between two rounds): send from here, without a
     * thread hand-off. Not to this rank: UCX's self transport would run our own
     * handler on this thread. Only while no send waits in the queue: issuing those
     * here would run their done callbacks on this thread, which may hold a lock they
     * take (the balancer announcing itself idle under its lock ran a taken task's
     * result_sent, which takes that lock: the thread hung holding the transport's
     * lock, the progress thread waited for it, heartbeats stopped and the peers
     * declared this rank lost). Behind them in the queue, this thread's earlier sends
     * stay first. */
    if (direct && peer != x->rank && !atomic_load(&x->submit) &&
        pthread_mutex_trylock(&x->lock) == 0) {
        if (!atomic_load(&x->submit)) {
            x->need_progress = 0;
            ucx_issue(x, op);
            int wake = x->need_progress;   /* a request UCX must progress */
            pthread_mutex_unlock(&x->lock);
            if (wake && atomic_load(&x->sleeping))
                ucx_wake(x);
            return CASK_OK;
        }
        pthread_mutex_unlock(&x->lock);
    }
    atomic_fetch_add(&x->submit_n, 1);
    ucx_op *head = atomic_load_explicit(&x->submit, memory_order_relaxed);
    do {
        op->next = head;
    } while (!atomic_compare_exchange_weak(&x->submit, &head, op));
    /* seq_cst pairs with the progress thread's sleeping=1 then queue check. */
    if (atomic_load(&x->sleeping))
        ucx_wake(x);
    return CASK_OK;
}
