/* transport/ucx_segring.h: messages between the ranks of one host through rings in
 * their shared-memory segments (ucx_seg.h), without TCP.
 *
 * Rank S's segment holds a lane toward every rank R: a ring of slots and the record
 * bytes behind them. A send of host data from S to R (up to a quarter of a lane, any
 * size down to none, any header) writes the record (wire header, user header, data),
 * fills the slot, and only then stores the slot's sequence number (release): R, which
 * maps S's segment read-only, polls that number on its progress thread, hands the record
 * to the handler as if it had come eagerly, and when the handler returned publishes how
 * many entries it consumed in a counter of its own segment, which S reads through its
 * mapping of R's. So a message costs a copy in, a copy out (the handler's, if it takes
 * the data) and a few cache lines: no system call, no TCP message, no give-back message;
 * the sender calls done at once. No more than `credits` entries are ever unconsumed in a
 * lane (the window of ucx.h); a send that finds its lane full or others waiting is
 * queued there, never waits, and the progress thread moves it in once R consumed enough.
 *
 * Held back. While this rank's progress thread runs a callback of the layer above (a
 * handler, a done, a lost peer), entries written to its rings are committed only once
 * that callback returned, whichever thread wrote them (the copy and the sender's done
 * happen at once all the same). So a rank whose progress thread is held up in a
 * callback says nothing meanwhile, as when every message left through that thread
 * (tests/dist/stall_replay.sh), and a handler's sends leave after it, as UCX's do
 * (ucx_defer.c).
 *
 * Sleep and wake. A progress thread about to sleep in epoll makes the epoch in its
 * segment's head odd, then looks at its lanes once more (both sides fence, Dekker
 * style). A sender that committed an entry, or a receiver that consumed past the count a
 * waiting sender asked for (ucx_ring_lane.want), writes a byte to the peer's bell, a
 * pipe that peer's epoll watches, when the peer's epoch is odd and it has not rung that
 * epoch already: a thread that streams rings nobody, a sleeping one is woken once. A
 * peer's bell is opened at connect through /proc/PID/fd/N with O_RDWR, so this process
 * is a reader of it too: a write never raises SIGPIPE, and a full pipe (EAGAIN) is a
 * bell already rung.
 *
 * Failures. A ring has one writing process and one reading: unlike UCX's shared-memory
 * FIFOs, which all the ranks of a host write into (ucx_config.c), a stopped or killed
 * sender holds up its own messages only. Nothing waits on a dead peer: a sender killed
 * before it stored the sequence number has committed nothing (the half-written record
 * is never read), what it committed before is read out before it is declared lost, a
 * receiver's consumed counter only ever frees space; liveness (ucx_liveness.c) still
 * decides who is lost. Then the lane toward it is closed (its queued sends end with
 * CASK_ERR_PEER), and its pages are given back once its process is gone (a peer lost
 * for its silence may still run, fenced out, and read what was committed to it, such
 * as the news that it was); its ring toward us is no longer read and its segment
 * unmapped. A goodbye says how many entries were committed before it, and the
 * receiver reads them all before it counts the goodbye. A peer only reads this rank's
 * segment, never writes it; every slot it names is checked against the lane's bounds. */
#ifndef CASK_TRANSPORT_UCX_SEGRING_H
#define CASK_TRANSPORT_UCX_SEGRING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "transport/ucx_seg.h"

struct ucx_op;

/* This rank's lane toward a peer. Under mu, unless said otherwise. */
typedef struct ucx_ring_tx {
    pthread_mutex_t mu;
    int init;                   /* mu made (at connect, progress thread not running) */
    _Atomic int usable;         /* the peer reads this lane (its HELLO said so) */
    int closed;                 /* UCX_RING_OPEN, or why not any more */
    ucx_ring_lane *lane;        /* in our segment */
    ucx_ring_slot *slots;
    unsigned char *rec;
    uint64_t nslots, lane_bytes, window;
    uint64_t written;           /* entries written (slots taken) */
    uint64_t head;              /* entries committed (seq stored): head <= written */
    uint64_t wpos;              /* record bytes handed out, from the start */
    uint64_t consumed;          /* the peer's counter, as last read */
    uint64_t freed;             /* record bytes given back: wpos after entry consumed-1 */
    uint64_t *ends;             /* per slot: wpos after its entry */
    const _Atomic uint64_t *peer_consumed;   /* in the peer's segment */
    const _Atomic uint64_t *peer_epoch;
    uint64_t rang;              /* the peer's epoch we rang its bell in */
    int bell;                   /* the peer's bell (-1: none); closed at loss, teardown */
    int dropped;                /* progress thread: the lane's pages were given back */
    struct ucx_op *q_head, *q_tail;   /* sends waiting for room, in order */
    size_t q_len;
    _Atomic uint64_t committed; /* head, for the progress thread's heartbeat tick */
    uint64_t committed_seen;    /* progress thread */
} ucx_ring_tx;

enum { UCX_RING_OPEN = 0, UCX_RING_BYE = 1, UCX_RING_LOST = 2, UCX_RING_DOWN = 3 };

/* A peer's lane toward this rank, read on the progress thread only. */
typedef struct ucx_ring_rx {
    int on;                     /* set at connect when the peer's segment has rings */
    const ucx_ring_lane *lane;  /* in the peer's segment (mapped read-only) */
    const ucx_ring_slot *slots;
    const unsigned char *rec;
    uint64_t nslots, lane_bytes;
    uint64_t next;              /* entries consumed */
    _Atomic uint64_t *consumed; /* our counter for that peer, in our segment */
    const _Atomic uint64_t *peer_epoch;
    uint64_t rang;              /* the peer's epoch we rang its bell in */
} ucx_ring_rx;

#endif
