/* transport/ucx_progress.c: what the UCX progress thread does with messages: issue sends
 * (respecting each peer's credit window), receive active messages (eager and
 * rendezvous), give credits back. The thread's loop and the goodbyes are in
 * ucx_thread.c; heartbeats and peers found dead in ucx_liveness.c. Everything here runs
 * on the progress thread, except ucx_wake. See ucx.h. */
#include "transport/ucx_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The user-visible per-message state of an arriving message. */
typedef struct ucx_rx {
    xport_ucx *x;
    ucx_peer *p;
    void *desc;
    int rndv;
    int taken;
    int deferred;       /* its rendezvous receive was put off: UCX keeps desc */
    int seg;            /* the data is in the sender's segment (a block, a ring) */
    int ring;           /* a ring entry (ucx_segring.c): no credit to give back */
} ucx_rx;

static void stat_max(_Atomic uint64_t *m, uint64_t v)
{
    if (v > atomic_load_explicit(m, memory_order_relaxed))
        atomic_store_explicit(m, v, memory_order_relaxed);
}

static void stat_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

void ucx_wake(xport_ucx *x)
{
    uint64_t one = 1;
    ssize_t r = write(x->wakefd, &one, sizeof one);
    (void)r;   /* EAGAIN: the counter is already non-zero, the thread will wake */
}

void ucx_call_done(ucx_op *op, cask_status st, const char *why)
{
    if (op->done_called)
        return;
    op->done_called = 1;
    if (st != CASK_OK && op->seg)
        ucx_seg_send_failed(op->seg_x, op);   /* the block named nothing delivered */
    if (op->done) {
        xport_ucx *x = (xport_ucx *)ucx_progress_of;   /* NULL off a progress thread */
        if (x)
            ucx_hold(x);
        op->done(op->arg, st, why);
        if (x)
            ucx_release(x);
    }
}

/* ---- sending ---- */


/* A completion UCX reports from inside the call that started the request (a send
 * whose endpoint fails in the send: UCX 1.13 purges the endpoint's requests there, this
 * one included, and the call may still return the request's pointer). The request is
 * released now; the op is left to the caller, which has not linked it anywhere yet:
 * freed here, it was linked in flight after its free and read at destroy. Returns
 * whether it was such a completion. */
static int ended_in_call(ucx_op *op, void *req, ucs_status_t s)
{
    op->req = NULL;
    ucp_request_free(req);
    if (!op->in_call)
        return 0;
    op->early = 1;
    op->early_status = s;
    return 1;
}

/* The end of a send: its done called, the op freed. */
static void send_end(ucx_peer *p, ucx_op *op, ucs_status_t s)
{
    if (s == UCS_OK) {
        ucx_call_done(op, CASK_OK, NULL);
    } else {
        char why[256];
        snprintf(why, sizeof why, "ucp_am_send_nbx from rank %d to rank %d: %s",
                 p->x->rank, p->rank, ucs_status_string(s));
        ucx_call_done(op, ucx_status(s), why);
    }
    free(op);
}

static void send_done_cb(void *req, ucs_status_t s, void *user)
{
    ucx_op *op = user;
    ucx_peer *p = op->owner;
    if (ended_in_call(op, req, s))
        return;
    inflight_remove(p, op);
    if (op->mem == XPORT_UCX_MEM_CUDA)
        p->x->cuda_inflight--;
    send_end(p, op, s);
}

/* Hands op to UCX now (once out of UCX's callbacks: ucx_defer.c). The op's credit (if
 * it needs one) is already taken. */
void ucx_issue_now(xport_ucx *x, ucx_peer *p, ucx_op *op)
{
    if (x->in_progress) {
        ucx_defer(x, op);
        return;
    }
    if (!p->ep || atomic_load(&p->state) == PEER_DEAD) {   /* lost while put off */
        char why[160];
        snprintf(why, sizeof why, "rank %d: %s", x->rank,
                 p->ep ? "the peer is lost" : "the transport is closing");
        ucx_call_done(op, CASK_ERR_PEER, why);
        free(op);
        return;
    }
    op->hdr.w.grant = (uint32_t)p->to_return;
    uint32_t granted = op->hdr.w.grant;
    p->to_return = 0;
    p->granted += granted;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS;
    prm.cb.send = send_done_cb;
    prm.user_data = op;
    prm.flags = (op->kind == OP_SEND && op->len && !op->seg &&
                 (op->len >= x->rndv_thresh || op->mem == XPORT_UCX_MEM_CUDA))
                ? UCP_AM_SEND_FLAG_RNDV : 0;
    /* Always the memory type: UCX need not find it (without memory hooks it could not
     * cache it, transport/ucx_load.c) */
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = op->kind == OP_SEND && op->mem == XPORT_UCX_MEM_CUDA ?
                      UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    unsigned am = op->kind == OP_SEND ? UCX_AM_DATA : UCX_AM_CTRL;
    op->owner = p;
    op->early = 0;
    op->in_call = 1;
    void *r = ucp_am_send_nbx(p->ep, am, op->hdr.bytes, op->hdr_len, op->data, op->len,
                              &prm);
    op->in_call = 0;
    p->last_send_ns = ucx_now_ns();
    if (op->kind == OP_SEND) {
        stat_add(&p->msgs_sent, 1);
        stat_add(&p->bytes_sent, op->len);
    }
    if (op->early || r == NULL) {   /* early: r is the request, released already */
        send_end(p, op, op->early ? op->early_status : UCS_OK);
    } else if (UCS_PTR_IS_ERR(r)) {
        ucs_status_t s = UCS_PTR_STATUS(r);
        p->to_return += (int)granted;      /* the grant did not travel */
        p->granted -= granted;
        if (op->kind == OP_SEND)
            p->credits++;
        char why[256];
        snprintf(why, sizeof why, "ucp_am_send_nbx from rank %d to rank %d: %s", x->rank,
                 p->rank, ucs_status_string(s));
        if (op->kind == OP_SEND)
            ucx_record_error(x, "%s", why);
        ucx_call_done(op, ucx_status(s), why);
        free(op);
    } else {
        op->req = r;
        inflight_add(p, op);
        x->need_progress = 1;
        if (op->mem == XPORT_UCX_MEM_CUDA)
            x->cuda_inflight++;
    }
}

/* Sends op now if its peer has a credit and nothing queued before it, else queues it. */
static void issue(xport_ucx *x, ucx_op *op)
{
    if (ucx_ring_queue(x, op))   /* host data for a peer of this host: its ring */
        return;
    ucx_peer *p = &x->peers[op->peer];
    int state = atomic_load(&p->state);
    /* A peer that said goodbye still receives until it has ours: it may be sent to
     * until this rank said goodbye to it. */
    if (state == PEER_DEAD || !p->ep || p->bye_sent) {
        char why[160];
        snprintf(why, sizeof why, "rank %d: %s", x->rank,
                 state == PEER_DEAD ? "the peer is lost" : "the transport is closing");
        ucx_call_done(op, CASK_ERR_PEER, why);
        free(op);
        return;
    }
    if (op->kind == OP_SEND) {
        if (p->credits == 0 || p->q_head) {
            op->next = NULL;
            if (p->q_tail) p->q_tail->next = op;
            else p->q_head = op;
            p->q_tail = op;
            p->q_len++;
            stat_add(&p->credit_stalls, 1);
            stat_max(&p->max_queued, p->q_len);
            return;
        }
        p->credits--;
    }
    ucx_issue_now(x, p, op);
}

void ucx_issue(xport_ucx *x, ucx_op *op)
{
    issue(x, op);
}

static void drain_queue(xport_ucx *x, ucx_peer *p)
{
    while (p->credits > 0 && p->q_head && atomic_load(&p->state) != PEER_DEAD) {
        ucx_op *op = p->q_head;
        p->q_head = op->next;
        if (!p->q_head)
            p->q_tail = NULL;
        p->q_len--;
        p->credits--;
        ucx_issue_now(x, p, op);
    }
}

static void add_credits(xport_ucx *x, ucx_peer *p, uint32_t n)
{
    if (!n)
        return;
    p->credits += (int)n;
    drain_queue(x, p);
}

/* Our goodbye to a peer completed (or failed): xport_ucx_destroy waits for this, so
 * that it does not cancel a goodbye still in flight (the peer would then wait for it
 * until its own deadline). */
static void bye_done_cb(void *arg, cask_status st, const char *why)
{
    ucx_peer *p = arg;
    (void)st; (void)why;
    atomic_store(&p->bye_done, 1);
    pthread_mutex_lock(&p->x->mu);
    pthread_cond_broadcast(&p->x->cv);
    pthread_mutex_unlock(&p->x->mu);
}

void ucx_send_ctrl(xport_ucx *x, ucx_peer *p, uint32_t type)
{
    ucx_send_ctrl_args(x, p, type, NULL);
}

void ucx_send_ctrl_args(xport_ucx *x, ucx_peer *p, uint32_t type, const ucx_ctrl_args *args)
{
    if (!p->ep || atomic_load(&p->state) == PEER_DEAD) {
        if (type == CTRL_BYE)
            bye_done_cb(p, CASK_OK, NULL);   /* nothing to wait for */
        return;
    }
    ucx_op *op = calloc(1, sizeof *op);
    if (!op) {
        ucx_record_error(x, "rank %d: out of memory for a control message", x->rank);
        return;
    }
    if (type == CTRL_BYE) {
        op->done = bye_done_cb;
        op->arg = p;
    }
    op->peer = p->rank;
    op->kind = OP_CTRL;
    op->hdr_len = sizeof(ucx_wire);
    op->hdr.w = (ucx_wire){ .src = (uint32_t)x->rank, .ctrl = type };
    if (args) {
        memcpy(op->hdr.bytes + sizeof(ucx_wire), args, sizeof *args);
        op->hdr_len += sizeof *args;
    }
    ucx_issue_now(x, p, op);
}

/* A message from p was handled and its data is where it goes: it may be replaced. */
static void consumed(xport_ucx *x, ucx_peer *p)
{
    p->unconsumed--;
    p->to_return++;
    int half = x->credits / 2 > 0 ? x->credits / 2 : 1;
    if (p->to_return >= half && atomic_load(&p->state) != PEER_DEAD)
        ucx_send_ctrl(x, p, CTRL_CREDIT);
}

int ucx_drain_submit(xport_ucx *x)
{
    ucx_op *list = atomic_exchange(&x->submit, NULL);
    if (!list)
        return 0;
    ucx_op *fifo = NULL;       /* the stack is newest first: reverse it */
    while (list) {
        ucx_op *n = list->next;
        list->next = fifo;
        fifo = list;
        list = n;
    }
    int k = 0;
    while (fifo) {
        ucx_op *n = fifo->next;
        issue(x, fifo);
        atomic_fetch_sub(&x->submit_n, 1);   /* issued: a direct ring send may pass */
        fifo = n;
        k++;
    }
    return k;
}

/* ---- receiving ---- */

void ucx_heard(xport_ucx *x, ucx_peer *p)
{
    p->last_recv_ns = ucx_now_ns();
    if (p->silent) {   /* a suspected peer talks again: it was only late */
        p->silent = 0;
        if (x->on_silent && atomic_load(&p->state) == PEER_ALIVE) {
            ucx_hold(x);
            x->on_silent(x->on_peer_arg, p->rank, CASK_OK, NULL);
            ucx_release(x);
        }
    }
}

static ucx_peer *peer_of(xport_ucx *x, const void *header, size_t hlen, ucx_wire *w)
{
    if (hlen < sizeof *w)
        return NULL;
    memcpy(w, header, sizeof *w);
    if (w->src >= (uint32_t)x->size)
        return NULL;
    ucx_peer *p = &x->peers[w->src];
    ucx_heard(x, p);
    add_credits(x, p, w->grant);
    return p;
}

static void call_handler(xport_ucx *x, ucx_peer *p, xport_ucx_msg *m)
{
    ucx_handler *h = m->id < XPORT_UCX_MAX_AM ? atomic_load(&x->handlers[m->id]) : NULL;
    if (h) {
        ucx_hold(x);   /* what the rings carry meanwhile waits (ucx_segring.h) */
        h->fn(h->arg, m);
        ucx_release(x);
    } else
        ucx_record_error(x, "rank %d: message id %u from rank %d has no handler: dropped",
                         x->rank, m->id, p->rank);
}

void ucx_ring_deliver(xport_ucx *x, ucx_peer *p, const ucx_wire *w, const unsigned char *hdr,
                      const void *data, size_t len)
{
    stat_add(&p->msgs_recv, 1);
    stat_add(&p->bytes_recv, len);
    stat_add(&p->ring_msgs_recv, 1);
    if (len)
        stat_add(&p->seg_msgs_recv, 1);
    ucx_rx rx = { .x = x, .p = p, .desc = (void *)data, .seg = 1, .ring = 1 };
    xport_ucx_msg m = { .peer = p->rank, .id = w->id, .header = hdr, .header_len = w->hlen,
                        .len = len, .data = data, .priv_ = &rx };
    call_handler(x, p, &m);
}

ucs_status_t ucx_am_data_cb(void *arg, const void *header, size_t hlen, void *data,
                            size_t len, const ucp_am_recv_param_t *param)
{
    xport_ucx *x = arg;
    ucx_wire w;
    ucx_peer *p = peer_of(x, header, hlen, &w);
    if (!p || sizeof w + w.hlen > hlen) {
        ucx_record_error(x, "rank %d: dropped a malformed message", x->rank);
        return UCS_OK;
    }
    if (atomic_load(&p->state) == PEER_DEAD)
        return UCS_OK;     /* counted lost already: its sender was told so */
    ucx_seg_desc sd;
    int seg = w.ctrl == UCX_WIRE_SEG;
    if (seg) {   /* the data is in a block of the sender's segment, written already */
        if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || len != sizeof sd || !p->seg_map) {
            ucx_record_error(x, "rank %d: dropped a malformed segment message from rank %d",
                             x->rank, p->rank);
            return UCS_OK;
        }
        memcpy(&sd, data, sizeof sd);
        if (sd.off > p->seg_map_bytes || sd.len > p->seg_map_bytes - sd.off) {
            ucx_record_error(x, "rank %d: rank %d named bytes %llu..+%llu outside its "
                             "segment: dropped", x->rank, p->rank,
                             (unsigned long long)sd.off, (unsigned long long)sd.len);
            return UCS_OK;
        }
        data = (void *)(p->seg_map + sd.off);
        len = (size_t)sd.len;
        stat_add(&p->seg_msgs_recv, 1);
    }
    p->unconsumed++;
    p->arrived++;
    stat_max(&p->max_in_flight, (uint64_t)p->unconsumed);
    stat_max(&p->max_window, p->arrived - p->granted);
    stat_add(&p->msgs_recv, 1);
    stat_add(&p->bytes_recv, len);
    ucx_rx rx = { .x = x, .p = p, .desc = data, .seg = seg,
                  .rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 };
    xport_ucx_msg m = { .peer = p->rank, .id = w.id,
                        .header = (const unsigned char *)header + sizeof w,
                        .header_len = w.hlen, .len = len,
                        .data = rx.rndv ? NULL : data, .priv_ = &rx };
    call_handler(x, p, &m);
    if (!rx.taken)
        consumed(x, p);
    /* the handler has read the block (or dropped it): the sender may reuse it. Not
     * after our goodbye: the peer may be gone, and frees its segment at exit anyway. */
    if (seg && !p->bye_sent && atomic_load(&p->state) == PEER_ALIVE) {
        ucx_ctrl_args a = { { sd.off, sd.tag } };
        ucx_send_ctrl_args(x, p, CTRL_SEG_FREE, &a);
    }
    return rx.deferred ? UCS_INPROGRESS : UCS_OK;
}

static void recv_end(xport_ucx *x, ucx_peer *p, ucx_op *op, ucs_status_t s);

static void recv_done_cb(void *req, ucs_status_t s, size_t length, void *user)
{
    ucx_op *op = user;
    ucx_peer *p = op->owner;
    (void)length;
    if (ended_in_call(op, req, s))
        return;
    inflight_remove(p, op);
    if (op->mem == XPORT_UCX_MEM_CUDA)
        p->x->cuda_inflight--;
    recv_end(p->x, p, op, s);
}

/* The end of a rendezvous receive: the message consumed, its done called, the op freed. */
static void recv_end(xport_ucx *x, ucx_peer *p, ucx_op *op, ucs_status_t s)
{
    consumed(x, p);
    if (s == UCS_OK) {
        ucx_call_done(op, CASK_OK, NULL);
    } else {
        char why[256];
        snprintf(why, sizeof why, "ucp_am_recv_data_nbx of %zu bytes from rank %d on rank %d: %s",
                 op->len, p->rank, x->rank, ucs_status_string(s));
        ucx_call_done(op, ucx_status(s), why);
    }
    free(op);
}

cask_status xport_ucx_recv_into(xport_ucx_msg *msg, void *buf, xport_ucx_done_fn done,
                                void *arg)
{
    return xport_ucx_recv_into_mem(msg, buf, XPORT_UCX_MEM_HOST, done, arg);
}

cask_status xport_ucx_recv_into_mem(xport_ucx_msg *msg, void *buf, xport_ucx_mem mem,
                                    xport_ucx_done_fn done, void *arg)
{
    if (!msg || !msg->priv_ || (!buf && msg->len))
        return CASK_ERR_INVALID;
    ucx_rx *rx = msg->priv_;
    if (rx->taken)
        return CASK_ERR_STATE;
    xport_ucx *x = rx->x;
    ucx_peer *p = rx->p;
    if (mem == XPORT_UCX_MEM_CUDA && !rx->x->cuda_mem)
        return CASK_ERR_UNSUPPORTED;
    if (!rx->rndv) {
        if (mem == XPORT_UCX_MEM_CUDA && msg->len)
            return CASK_ERR_UNSUPPORTED;   /* eager data is in host memory */
        rx->taken = 1;
        if (msg->len && rx->seg)
            ucx_seg_copy(x, 1, buf, msg->data, msg->len);
        else if (msg->len)
            memcpy(buf, msg->data, msg->len);
        if (!rx->ring)
            consumed(x, p);
        if (done)
            done(arg, CASK_OK, NULL);
        return CASK_OK;
    }
    ucx_op *op = calloc(1, sizeof *op);
    if (!op)
        return CASK_ERR_NOMEM;
    rx->taken = 1;
    op->peer = p->rank;
    op->kind = OP_RECV;
    op->done = done;
    op->arg = arg;
    op->len = msg->len;
    op->mem = mem;
    op->owner = p;
    op->rdesc = rx->desc;
    op->rbuf = buf;
    if (x->in_progress)
        rx->deferred = 1;   /* ucx_am_data_cb keeps the descriptor (UCS_INPROGRESS) */
    ucx_recv_post(x, op);
    return CASK_OK;
}

void ucx_recv_post(xport_ucx *x, ucx_op *op)
{
    if (x->in_progress) {
        ucx_defer(x, op);
        return;
    }
    ucx_peer *p = op->owner;
    if (atomic_load(&p->state) == PEER_DEAD) {   /* lost while put off */
        char why[200];
        snprintf(why, sizeof why, "receiving %zu bytes from rank %d on rank %d: the peer is "
                 "lost", op->len, p->rank, x->rank);
        ucp_am_data_release(x->worker, op->rdesc);
        consumed(x, p);
        ucx_call_done(op, CASK_ERR_PEER, why);
        free(op);
        return;
    }
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.recv_am = recv_done_cb;
    prm.user_data = op;
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.memory_type = op->mem == XPORT_UCX_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA
                                                    : UCS_MEMORY_TYPE_HOST;
    op->early = 0;
    op->in_call = 1;
    void *r = ucp_am_recv_data_nbx(x->worker, op->rdesc, op->rbuf, op->len, &prm);
    op->in_call = 0;
    if (op->early || r == NULL || UCS_PTR_IS_ERR(r)) {
        recv_end(x, p, op, op->early ? op->early_status : r ? UCS_PTR_STATUS(r) : UCS_OK);
    } else {
        op->req = r;
        inflight_add(p, op);
        x->need_progress = 1;
        if (op->mem == XPORT_UCX_MEM_CUDA)
            x->cuda_inflight++;
    }
}

ucs_status_t ucx_am_ctrl_cb(void *arg, const void *header, size_t hlen, void *data,
                            size_t len, const ucp_am_recv_param_t *param)
{
    xport_ucx *x = arg;
    ucx_wire w;
    (void)data; (void)len; (void)param;
    ucx_peer *p = peer_of(x, header, hlen, &w);
    if (!p)
        return UCS_OK;
    switch (w.ctrl) {
    case CTRL_HELLO:
        if (hlen >= sizeof w + sizeof(ucx_ctrl_args) && x->seg) {
            ucx_ctrl_args a;
            memcpy(&a, (const unsigned char *)header + sizeof w, sizeof a);
            if (a.a[0] == 1)   /* it mapped our segment: blocks may go to it */
                atomic_store_explicit(&p->seg_tx, 1, memory_order_release);
            if (a.a[1] == 1)   /* and reads our ring toward it */
                ucx_ring_hello(x, p);
        }
        if (!p->hello) {
            pthread_mutex_lock(&x->mu);
            p->hello = 1;
            x->hellos++;
            pthread_cond_broadcast(&x->cv);
            pthread_mutex_unlock(&x->mu);
        }
        break;
    case CTRL_BYE:
        if (hlen >= sizeof w + sizeof(ucx_ctrl_args)) {
            ucx_ctrl_args a;
            memcpy(&a, (const unsigned char *)header + sizeof w, sizeof a);
            if (a.a[1] == 1)   /* what it committed to its ring before: read it first */
                ucx_ring_drain_peer(x, p, a.a[0]);
        }
        if (!p->bye) {
            int alive = PEER_ALIVE;
            atomic_compare_exchange_strong(&p->state, &alive, PEER_GONE);
            pthread_mutex_lock(&x->mu);
            p->bye = 1;
            x->byes++;
            pthread_cond_broadcast(&x->cv);
            pthread_mutex_unlock(&x->mu);
        }
        break;
    case CTRL_SEG_FREE:
        if (hlen >= sizeof w + sizeof(ucx_ctrl_args) && x->seg) {
            ucx_ctrl_args a;
            memcpy(&a, (const unsigned char *)header + sizeof w, sizeof a);
            ucx_seg_free(x->seg, a.a[0], (uint32_t)a.a[1]);
        }
        break;
    default:   /* CTRL_CREDIT, CTRL_HEARTBEAT: the header said it all */
        break;
    }
    return UCS_OK;
}
