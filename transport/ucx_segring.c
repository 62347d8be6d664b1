/* transport/ucx_segring.c: messages between the ranks of one host through the rings of
 * their segments (the protocol is in ucx_segring.h): the sender's side (writing and
 * committing entries, the queue of a full lane), the receiver's (polling, handing
 * entries to the handlers, publishing what was consumed) and the bells. Setting the
 * rings up, and what a goodbye, a lost peer and the end do to them: ucx_segring_life.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "transport/ucx_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t pad64(uint64_t v) { return (v + 63) & ~(uint64_t)63; }

static ucx_seg_head *own_head(const xport_ucx *x)
{
    return (ucx_seg_head *)ucx_seg_base(x->seg);
}

static void stat_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* ---- sending ---- */

int ucx_ring_fits(const xport_ucx *x, int peer, xport_ucx_mem mem, size_t len)
{
    const ucx_peer *p = &x->peers[peer];
    /* From 1 MiB CMA's one copy goes as fast as UCX's shared memory (bench/RESULTS.md
     * 22): such a message goes by CMA where the endpoint has it, as for the blocks
     * (ucx_seg_take), unless CASK_UCX_SEG_MAX says otherwise. */
    return mem == XPORT_UCX_MEM_HOST && len <= x->ring_max &&
           (x->seg_max ? len <= x->seg_max
                       : len < UCX_SEG_CMA_FROM || !atomic_load(&p->cma_lane)) &&
           atomic_load_explicit(&p->rtx.usable, memory_order_acquire);
}

/* Under mu: the peer's consumed counter read again; what it gave back freed. */
static void refresh(ucx_ring_tx *t)
{
    uint64_t c = atomic_load_explicit(t->peer_consumed, memory_order_acquire);
    if (c > t->consumed && c <= t->head) {   /* a count out of range is ignored */
        t->freed = t->ends[(c - 1) & (t->nslots - 1)];
        t->consumed = c;
    }
}

/* Under mu: where a record of rec bytes goes (its start, from the beginning of time), or
 * UINT64_MAX if the lane has no room for it. */
static uint64_t place(const ucx_ring_tx *t, uint64_t rec)
{
    if (t->written - t->consumed >= t->window)
        return UINT64_MAX;
    uint64_t pos = t->wpos, off = pos % t->lane_bytes;
    if (off + rec > t->lane_bytes)
        pos += t->lane_bytes - off;   /* records never wrap: skip the tail */
    return pos + rec - t->freed <= t->lane_bytes ? pos : UINT64_MAX;
}

/* Under mu: writes one entry if there is room (committed by ucx_ring_publish); 1 if so. */
static int put(xport_ucx *x, ucx_ring_tx *t, const ucx_wire *w, const void *header,
               const void *data, size_t len)
{
    uint64_t hlen = sizeof *w + w->hlen, rec = pad64(hlen) + pad64(len);
    uint64_t pos = place(t, rec);
    if (pos == UINT64_MAX) {
        refresh(t);
        if ((pos = place(t, rec)) == UINT64_MAX)
            return 0;
    }
    uint64_t off = pos % t->lane_bytes;
    unsigned char *r = t->rec + off;
    memcpy(r, w, sizeof *w);
    if (w->hlen)
        memcpy(r + sizeof *w, header, w->hlen);
    if (len)
        ucx_seg_copy(x, 0, r + pad64(hlen), data, len);
    uint64_t i = t->written & (t->nslots - 1);
    ucx_ring_slot *s = &t->slots[i];
    s->off = off;
    s->len = len;
    s->hdr_len = (uint32_t)hlen;
    t->ends[i] = pos + rec;
    t->wpos = pos + rec;
    t->written++;
    return 1;
}

/* Rings fd's bell if the process behind epoch sleeps and was not rung this epoch. */
static void ring_bell(int fd, const _Atomic uint64_t *epoch, uint64_t *rang);

void ucx_ring_publish(xport_ucx *x, ucx_ring_tx *t)
{
    if (t->head == t->written)
        return;
    if (atomic_load(&x->in_cb)) {
        /* held back; the progress thread looks at ring_pending once out of its
         * callback (store then look, as here: one of us sees the other's store) */
        atomic_store(&x->ring_pending, 1);
        if (atomic_load(&x->in_cb))
            return;
    }
    /* the records and slots are written before the numbers that commit them */
    for (; t->head < t->written; t->head++)
        atomic_store_explicit(&t->slots[t->head & (t->nslots - 1)].seq, t->head + 1,
                              memory_order_release);
    atomic_store_explicit(&t->committed, t->head, memory_order_relaxed);
    ring_bell(t->bell, t->peer_epoch, &t->rang);
}

void ucx_hold(xport_ucx *x)
{
    if (ucx_progress_of == x && x->held++ == 0)
        atomic_store(&x->in_cb, 1);
}

void ucx_release(xport_ucx *x)
{
    if (ucx_progress_of != x || --x->held > 0)
        return;
    atomic_store(&x->in_cb, 0);
    if (!atomic_load(&x->ring_pending) || !atomic_exchange(&x->ring_pending, 0))
        return;
    for (int i = 0; i < x->size; i++) {
        ucx_ring_tx *t = &x->peers[i].rtx;
        if (!t->init)
            continue;
        pthread_mutex_lock(&t->mu);
        if (!t->closed)
            ucx_ring_publish(x, t);
        pthread_mutex_unlock(&t->mu);
    }
}

static void ring_bell(int fd, const _Atomic uint64_t *epoch, uint64_t *rang)
{
    atomic_thread_fence(memory_order_seq_cst);   /* pairs with ucx_ring_sleep's */
    uint64_t e = atomic_load_explicit(epoch, memory_order_relaxed);
    if (!(e & 1) || e == *rang || fd < 0)
        return;
    *rang = e;
    char b = 1;
    ssize_t n = write(fd, &b, 1);
    (void)n;   /* EAGAIN: the pipe is full, the bell rings already */
}

void ucx_ring_count_sent(ucx_peer *p, size_t len)
{
    stat_add(&p->msgs_sent, 1);
    stat_add(&p->bytes_sent, len);
    stat_add(&p->ring_msgs_sent, 1);
    if (len) {
        stat_add(&p->seg_msgs_sent, 1);
        stat_add(&p->seg_bytes_sent, len);
    }
}

static const char *closed_why(int closed)
{
    return closed == UCX_RING_LOST ? "the peer is lost" : "the transport is closing";
}

int ucx_ring_send(xport_ucx *x, int peer, const ucx_wire *w, const void *header,
                  const void *data, size_t len, xport_ucx_mem mem, xport_ucx_done_fn done,
                  void *arg)
{
    if (!ucx_ring_fits(x, peer, mem, len))
        return 0;
    ucx_peer *p = &x->peers[peer];
    ucx_ring_tx *t = &p->rtx;
    pthread_mutex_lock(&t->mu);
    int closed = t->closed;
    int sent = !closed && !t->q_head && put(x, t, w, header, data, len);
    if (sent)
        ucx_ring_publish(x, t);
    pthread_mutex_unlock(&t->mu);
    if (closed) {
        char why[160];
        snprintf(why, sizeof why, "rank %d: %s", x->rank, closed_why(closed));
        if (done)
            done(arg, CASK_ERR_PEER, why);
        return 1;
    }
    if (!sent)
        return 0;
    ucx_ring_count_sent(p, len);
    if (done)
        done(arg, CASK_OK, NULL);
    return 1;
}

/* Under mu, sends waiting: asks the peer for its bell once it consumed half of what is
 * outstanding, then looks again (pairs with the receiver's store then look). */
static void want_room(ucx_ring_tx *t)
{
    uint64_t out = t->written - t->consumed;
    atomic_store_explicit(&t->lane->want, t->consumed + (out > 1 ? out / 2 : 1),
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    refresh(t);
}

/* Under mu: moves queued sends into the lane while there is room; those sent are chained
 * on *sent (in order). Returns how many. */
static int flush(xport_ucx *x, ucx_ring_tx *t, ucx_op ***sent)
{
    int n = 0;
    for (int again = 1; again; ) {
        again = 0;
        while (t->q_head && put(x, t, &t->q_head->hdr.w, t->q_head->hdr.bytes + sizeof(ucx_wire),
                                t->q_head->data, t->q_head->len)) {
            ucx_ring_publish(x, t);   /* each as soon as written: the peer may start */
            ucx_op *op = t->q_head;
            t->q_head = op->next;
            if (!t->q_head)
                t->q_tail = NULL;
            t->q_len--;
            op->next = NULL;
            **sent = op;
            *sent = &op->next;
            n++;
        }
        if (t->q_head) {
            uint64_t c = t->consumed;
            want_room(t);
            again = t->consumed != c;
        } else {
            atomic_store_explicit(&t->lane->want, 0, memory_order_relaxed);
        }
    }
    return n;
}

void ucx_ring_end_chain(ucx_peer *p, ucx_op *op, cask_status st, const char *why)
{
    while (op) {
        ucx_op *n = op->next;
        if (st == CASK_OK)
            ucx_ring_count_sent(p, op->len);
        ucx_call_done(op, st, why);
        free(op);
        op = n;
    }
}

int ucx_ring_queue(xport_ucx *x, ucx_op *op)
{
    if (op->kind != OP_SEND || op->seg || op->peer == x->rank ||
        !ucx_ring_fits(x, op->peer, (xport_ucx_mem)op->mem, op->len))
        return 0;
    ucx_peer *p = &x->peers[op->peer];
    ucx_ring_tx *t = &p->rtx;
    ucx_op *sent = NULL, **tail = &sent;
    int wake = 0;
    pthread_mutex_lock(&t->mu);
    int closed = t->closed;
    if (!closed) {
        op->next = NULL;
        if (t->q_tail) t->q_tail->next = op;
        else t->q_head = op;
        t->q_tail = op;
        t->q_len++;
        if (t->q_head == op && flush(x, t, &tail)) {
            /* this op went at once: it is this thread's, its done may run here */
        } else {
            atomic_fetch_add_explicit(&p->credit_stalls, 1, memory_order_relaxed);
            if (t->q_len > atomic_load_explicit(&p->max_queued, memory_order_relaxed))
                atomic_store_explicit(&p->max_queued, t->q_len, memory_order_relaxed);
            /* room came back while we asked for it: the progress thread moves them */
            wake = t->q_head && place(t, pad64(sizeof(ucx_wire) + t->q_head->hdr.w.hlen) +
                                             pad64(t->q_head->len)) != UINT64_MAX;
        }
    }
    pthread_mutex_unlock(&t->mu);
    if (closed) {
        char why[160];
        snprintf(why, sizeof why, "rank %d: %s", x->rank, closed_why(closed));
        ucx_call_done(op, CASK_ERR_PEER, why);
        free(op);
        return 1;
    }
    /* what flush sent is op alone: it was the queue's only op (the head, and sends
     * stop at the first that does not fit) */
    ucx_ring_end_chain(p, sent, CASK_OK, NULL);
    if (wake && ucx_progress_of != x)
        ucx_wake(x);
    return 1;
}

/* ---- receiving ---- */

/* Delivers the entries of p's ring that are committed now; returns how many. */
static int rx_poll(xport_ucx *x, ucx_peer *p)
{
    ucx_ring_rx *r = &p->rrx;
    if (!r->on || atomic_load_explicit(&p->state, memory_order_relaxed) == PEER_DEAD)
        return 0;
    uint64_t mask = r->nslots - 1, avail = 0;
    while (avail < r->nslots &&
           atomic_load_explicit(&r->slots[(r->next + avail) & mask].seq,
                                memory_order_acquire) == r->next + avail + 1)
        avail++;
    if (!avail)
        return 0;
    if (avail > atomic_load_explicit(&p->max_window, memory_order_relaxed))
        atomic_store_explicit(&p->max_window, avail, memory_order_relaxed);
    ucx_heard(x, p);
    for (uint64_t k = 0; k < avail; k++) {
        const ucx_ring_slot *s = &r->slots[r->next & mask];
        /* the peer's memory: read once, then checked */
        uint64_t off = s->off, len = s->len, hlen = s->hdr_len;
        ucx_wire w;
        int ok = off % 64 == 0 && off < r->lane_bytes && hlen >= sizeof w &&
                 hlen <= sizeof w + XPORT_UCX_MAX_HEADER && len <= r->lane_bytes &&
                 pad64(hlen) + len <= r->lane_bytes - off;
        if (ok) {
            memcpy(&w, r->rec + off, sizeof w);
            ok = w.src == (uint32_t)p->rank && sizeof w + w.hlen == hlen;
        }
        if (!ok) {
            ucx_record_error(x, "rank %d: entry %llu of rank %d's ring is malformed: its ring "
                             "is no longer read", x->rank, (unsigned long long)r->next, p->rank);
            r->on = 0;
            return (int)k;
        }
        const unsigned char *rec = r->rec + off;
        ucx_ring_deliver(x, p, &w, rec + sizeof w, rec + pad64(hlen), (size_t)len);
        r->next++;
        atomic_store_explicit(r->consumed, r->next, memory_order_release);
        if (!r->on || atomic_load_explicit(&p->state, memory_order_relaxed) == PEER_DEAD)
            return (int)k + 1;
    }
    /* a sender waiting for room that we have now given: its bell (after the store of
     * consumed, before the look at want: pairs with want_room) */
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t want = atomic_load_explicit(&r->lane->want, memory_order_relaxed);
    if (want && r->next >= want)
        ring_bell(p->rtx.bell, r->peer_epoch, &r->rang);
    return (int)avail;
}

int ucx_ring_poll(xport_ucx *x)
{
    if (x->bell[0] < 0)
        return 0;
    int n = 0;
    for (int i = 0; i < x->size; i++) {
        ucx_peer *p = &x->peers[i];
        n += rx_poll(x, p);
        ucx_ring_tx *t = &p->rtx;
        if (!t->init || !t->q_head)   /* a racy look: a queued send also wakes us */
            continue;
        ucx_op *sent = NULL, **tail = &sent;
        pthread_mutex_lock(&t->mu);
        int k = t->closed ? 0 : flush(x, t, &tail);
        pthread_mutex_unlock(&t->mu);
        ucx_ring_end_chain(p, sent, CASK_OK, NULL);
        n += k;
    }
    return n;
}

void ucx_ring_drain_peer(xport_ucx *x, ucx_peer *p, uint64_t upto)
{
    for (int tries = 0; p->rrx.on && tries < 100000; tries++) {
        rx_poll(x, p);
        if (p->rrx.next >= upto || atomic_load(&p->state) == PEER_DEAD)
            return;
    }
    if (p->rrx.on && p->rrx.next < upto)
        ucx_record_error(x, "rank %d: rank %d said it committed %llu entries to its ring, "
                         "%llu came", x->rank, p->rank, (unsigned long long)upto,
                         (unsigned long long)p->rrx.next);
}

/* ---- sleeping ---- */

void ucx_ring_sleep(xport_ucx *x)
{
    if (x->bell[0] < 0)
        return;
    _Atomic uint64_t *e = &own_head(x)->epoch;
    atomic_store_explicit(e, atomic_load_explicit(e, memory_order_relaxed) | 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);   /* pairs with ring_bell's */
}

void ucx_ring_awake(xport_ucx *x)
{
    if (x->bell[0] < 0)
        return;
    _Atomic uint64_t *e = &own_head(x)->epoch;
    uint64_t v = atomic_load_explicit(e, memory_order_relaxed);
    if (v & 1)
        atomic_store_explicit(e, v + 1, memory_order_relaxed);
}

int ucx_ring_pending(xport_ucx *x)
{
    if (x->bell[0] < 0)
        return 0;
    for (int i = 0; i < x->size; i++) {
        ucx_peer *p = &x->peers[i];
        ucx_ring_rx *r = &p->rrx;
        if (r->on && atomic_load_explicit(&p->state, memory_order_relaxed) != PEER_DEAD &&
            atomic_load_explicit(&r->slots[r->next & (r->nslots - 1)].seq,
                                 memory_order_acquire) == r->next + 1)
            return 1;
        ucx_ring_tx *t = &p->rtx;
        if (!t->init || !t->q_head)
            continue;
        pthread_mutex_lock(&t->mu);
        int room = 0;
        if (!t->closed && t->q_head) {
            refresh(t);
            room = place(t, pad64(sizeof(ucx_wire) + t->q_head->hdr.w.hlen) +
                            pad64(t->q_head->len)) != UINT64_MAX;
        }
        pthread_mutex_unlock(&t->mu);
        if (room)
            return 1;
    }
    return 0;
}

void ucx_ring_bell_drain(xport_ucx *x)
{
    char buf[256];
    while (read(x->bell[0], buf, sizeof buf) == (ssize_t)sizeof buf)
        ;
}

