/* transport/ucx_segring_life.c: the rings of ucx_segring.h from start to end: the bell
 * each rank watches, a peer's lanes found in its segment at connect and opened by its
 * HELLO, closed by our goodbye, by its loss (queued sends failed, pages given back) and
 * at destroy. The traffic itself is ucx_segring.c's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "transport/ucx_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- set-up ---- */

void ucx_ring_setup(xport_ucx *x, int epfd)
{
    x->bell[0] = x->bell[1] = -1;
    if (!x->seg || !x->ring_bytes || epfd < 0)
        return;
    if (pipe2(x->bell, O_NONBLOCK | O_CLOEXEC)) {
        x->bell[0] = x->bell[1] = -1;
        snprintf(x->seg_err, sizeof x->seg_err, "pipe2 for the ring bell: %s", strerror(errno));
        return;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = x->bell[0] };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, x->bell[0], &ev)) {
        snprintf(x->seg_err, sizeof x->seg_err, "epoll_ctl for the ring bell: %s",
                 strerror(errno));
        close(x->bell[0]);
        close(x->bell[1]);
        x->bell[0] = x->bell[1] = -1;
    }
}

/* The peer's bell, as a reader and writer of it (never SIGPIPE); -1 if it cannot be
 * opened. Its segment was checked to be that process's already. */
static int open_bell(pid_t pid, int fd)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    int got = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (got >= 0 && (fstat(got, &st) || !S_ISFIFO(st.st_mode))) {
        close(got);
        got = -1;
    }
    return got;
}

void ucx_ring_connect(xport_ucx *x, ucx_peer *p, int bell)
{
    ucx_ring_tx *t = &p->rtx;
    ucx_ring_rx *r = &p->rrx;
    t->bell = -1;
    if (!x->seg || !x->ring_bytes || x->bell[0] < 0 || !p->seg_map || bell < 0)
        return;
    ucx_seg_geom g;
    if (ucx_seg_geom_read(p->seg_map, p->seg_map_bytes, x->size, &g))
        return;   /* no rings in its segment: blocks only */
    const ucx_seg_geom *mine = ucx_seg_geometry(x->seg);
    t->ends = calloc(mine->nslots, sizeof *t->ends);
    t->bell = open_bell(p->pid, bell);
    if (!t->ends || t->bell < 0) {
        if (!x->seg_err[0])
            snprintf(x->seg_err, sizeof x->seg_err, "rank %d's ring bell: %s", p->rank,
                     t->ends ? strerror(errno) : "out of memory");
        free(t->ends);
        t->ends = NULL;
        if (t->bell >= 0)
            close(t->bell);
        t->bell = -1;
        return;
    }
    /* the peer's ring toward us */
    const unsigned char *lane = p->seg_map + g.lanes_off + (uint64_t)x->rank * g.lane_stride;
    r->lane = (const ucx_ring_lane *)lane;
    r->slots = (const ucx_ring_slot *)(lane + sizeof(ucx_ring_lane));
    r->rec = lane + (g.lane_stride - g.lane_bytes);
    r->nslots = g.nslots;
    r->lane_bytes = g.lane_bytes;
    r->next = 0;
    r->consumed = &((ucx_seg_counter *)(ucx_seg_base(x->seg) + sizeof(ucx_seg_head)))[p->rank].n;
    r->peer_epoch = &((const ucx_seg_head *)p->seg_map)->epoch;
    r->on = 1;
    /* our ring toward it */
    unsigned char *ours = ucx_seg_base(x->seg) + mine->lanes_off +
                          (uint64_t)p->rank * mine->lane_stride;
    pthread_mutex_init(&t->mu, NULL);
    t->init = 1;
    t->lane = (ucx_ring_lane *)ours;
    t->slots = (ucx_ring_slot *)(ours + sizeof(ucx_ring_lane));
    t->rec = ours + (mine->lane_stride - mine->lane_bytes);
    t->nslots = mine->nslots;
    t->lane_bytes = mine->lane_bytes;
    t->window = (uint64_t)x->credits < t->nslots ? (uint64_t)x->credits : t->nslots;
    t->peer_consumed = &((const ucx_seg_counter *)(p->seg_map + sizeof(ucx_seg_head)))[x->rank].n;
    t->peer_epoch = &((const ucx_seg_head *)p->seg_map)->epoch;
}

int ucx_ring_reads(const ucx_peer *p)
{
    return p->rrx.on;
}

void ucx_ring_hello(xport_ucx *x, ucx_peer *p)
{
    ucx_ring_tx *t = &p->rtx;
    (void)x;
    if (!t->init)
        return;
    pthread_mutex_lock(&t->mu);
    if (t->closed == UCX_RING_OPEN)
        atomic_store_explicit(&t->usable, 1, memory_order_release);
    pthread_mutex_unlock(&t->mu);
}

/* ---- goodbye, loss, the end ---- */

int ucx_ring_close_bye(xport_ucx *x, ucx_peer *p, uint64_t *committed)
{
    ucx_ring_tx *t = &p->rtx;
    *committed = 0;
    if (!t->init)
        return 1;
    pthread_mutex_lock(&t->mu);
    int ok = !t->q_head;
    if (ok && !t->closed) {
        ucx_ring_publish(x, t);   /* not inside a callback here: all of it */
        t->closed = UCX_RING_BYE;
    }
    *committed = t->head;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

/* Closes t (why: UCX_RING_*); returns its queued sends. */
static ucx_op *close_tx(ucx_ring_tx *t, int why)
{
    pthread_mutex_lock(&t->mu);
    if (!t->closed || why != UCX_RING_BYE)
        t->closed = why;
    atomic_store(&t->usable, 0);
    ucx_op *q = t->q_head;
    t->q_head = t->q_tail = NULL;
    t->q_len = 0;
    if (t->bell >= 0)
        close(t->bell);
    t->bell = -1;
    pthread_mutex_unlock(&t->mu);
    return q;
}

void ucx_ring_peer_lost(xport_ucx *x, ucx_peer *p, const char *why)
{
    p->rrx.on = 0;
    if (!p->rtx.init)
        return;
    ucx_op *q = close_tx(&p->rtx, UCX_RING_LOST);
    ucx_ring_end_chain(p, q, CASK_ERR_PEER, why);
    ucx_ring_drop_gone(x, p);
}

void ucx_ring_drop_gone(xport_ucx *x, ucx_peer *p)
{
    if (p->rtx.init && !p->rtx.dropped && atomic_load(&p->state) == PEER_DEAD &&
        !ucx_process_alive(p->pid)) {
        ucx_seg_lane_drop(x->seg, p->rank);   /* nobody can read it any more */
        p->rtx.dropped = 1;
    }
}

void ucx_ring_tick(xport_ucx *x, uint64_t now)
{
    for (int i = 0; i < x->size; i++) {
        ucx_ring_tx *t = &x->peers[i].rtx;
        uint64_t c = atomic_load_explicit(&t->committed, memory_order_relaxed);
        if (c != t->committed_seen) {
            t->committed_seen = c;
            x->peers[i].last_send_ns = now;
        }
    }
}

void ucx_ring_cancel_all(xport_ucx *x, const char *why)
{
    for (int i = 0; x->peers && i < x->size; i++) {
        ucx_ring_tx *t = &x->peers[i].rtx;
        if (!t->init)
            continue;
        pthread_mutex_lock(&t->mu);
        ucx_op *q = t->q_head;
        t->q_head = t->q_tail = NULL;
        t->q_len = 0;
        pthread_mutex_unlock(&t->mu);
        ucx_ring_end_chain(&x->peers[i], q, CASK_ERR_CANCELLED, why);
    }
}

void ucx_ring_teardown(xport_ucx *x)
{
    for (int i = 0; x->peers && i < x->size; i++) {
        ucx_peer *p = &x->peers[i];
        ucx_ring_tx *t = &p->rtx;
        p->rrx.on = 0;
        if (!t->init)
            continue;
        ucx_op *q = close_tx(t, UCX_RING_DOWN);
        ucx_ring_end_chain(p, q, CASK_ERR_CANCELLED, "transport closed before the operation finished");
        pthread_mutex_destroy(&t->mu);
        free(t->ends);
        t->ends = NULL;
        t->init = 0;
    }
    for (int k = 0; k < 2; k++)
        if (x->bell[k] >= 0) {
            close(x->bell[k]);
            x->bell[k] = -1;
        }
}
