/* transport/ucx_impl.h: the insides of xport_ucx, shared by ucx.c (set-up, teardown,
 * the calls other threads make) and ucx_progress.c (everything the progress thread
 * does: sends, receives, credits, liveness). Not for use outside transport/. */
#ifndef CASK_TRANSPORT_UCX_IMPL_H
#define CASK_TRANSPORT_UCX_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <ucp/api/ucp.h>

#include "transport/ucx.h"
#include "transport/ucx_seg.h"
#include "transport/ucx_segring.h"

/* ucp active-message ids of the two kinds of traffic. */
enum { UCX_AM_DATA = 0, UCX_AM_CTRL = 1 };

/* Control messages: they take no credits. */
enum ucx_ctrl { CTRL_HELLO = 1, CTRL_CREDIT = 2, CTRL_HEARTBEAT = 3, CTRL_BYE = 4,
                CTRL_SEG_FREE = 5 };

/* A control message may carry two numbers after its wire header (ucx_send_ctrl_args):
 * HELLO a[0] = 1 when the sender mapped this rank's segment, a[1] = 1 when it also reads
 * this rank's ring toward it (ucx_segring.h); SEG_FREE the block given back (offset,
 * tag); BYE a[0] the entries committed to the ring toward the receiver, a[1] = 1 (none
 * without a ring). */
typedef struct ucx_ctrl_args { uint64_t a[2]; } ucx_ctrl_args;

/* ucx_wire.ctrl of a data message whose data is a ucx_seg_desc naming a block of the
 * sender's shared-memory segment (ucx_seg.h), not the data itself. */
#define UCX_WIRE_SEG 0x5345u

/* Leads every data message's ucp header; the user header follows it. */
typedef struct ucx_wire {
    uint32_t src;       /* sender rank */
    uint32_t grant;     /* credits the sender gives back to the receiver */
    uint16_t id;        /* user handler id */
    uint16_t hlen;      /* user header bytes after this */
    uint32_t ctrl;      /* enum ucx_ctrl for UCX_AM_CTRL, 0 for data */
} ucx_wire;

enum ucx_op_kind { OP_SEND = 0, OP_CTRL = 1, OP_RECV = 2 };

/* One send or receive, from submission to UCX completion. */
typedef struct ucx_op ucx_op;
struct ucx_op {
    ucx_op *next;                   /* submit stack / credit queue */
    ucx_op *fprev, *fnext;          /* peer's in-flight list */
    struct ucx_peer *owner;         /* set when handed to UCX */
    int peer;
    int kind;
    int done_called;
    void *req;                      /* ucp request while in flight */
    int in_call;                    /* inside the ucp call that starts it: a completion
                                     * UCX reports there (UCX 1.13 fails a TCP endpoint
                                     * inside the send) is left to the caller */
    int early;                      /* completed inside that call, with early_status */
    ucs_status_t early_status;
    xport_ucx_done_fn done;
    void *arg;
    const void *data;
    size_t len;
    size_t hdr_len;                 /* wire + user header */
    int mem;                        /* xport_ucx_mem of data (a receive's buffer too) */
    void *rdesc, *rbuf;             /* a receive put off (ucx_defer.c): UCX's rendezvous
                                       descriptor, and the buffer to receive into */
    int seg;                        /* a send whose data went into a block of this rank's
                                       segment; data points at segd */
    ucx_seg_desc segd;
    struct xport_ucx *seg_x;        /* whose segment (set with seg) */
    union {
        ucx_wire w;
        unsigned char bytes[sizeof(ucx_wire) + XPORT_UCX_MAX_HEADER];
    } hdr;
};

enum ucx_peer_state { PEER_ALIVE = 0, PEER_GONE = 1, PEER_DEAD = 2 };

typedef struct ucx_peer {
    struct xport_ucx *x;
    int rank;
    ucp_ep_h ep;
    void *close_req;
    _Atomic int state;              /* ucx_peer_state */
    ucs_status_t ep_error;          /* set by the ucp error callback, handled later */
    int hello, bye;                 /* control messages received */
    int bye_sent;
    /* progress thread only: */
    int credits;                    /* messages we may still send */
    int to_return;                  /* consumed messages not yet credited back */
    int unconsumed;                 /* received, not yet consumed */
    uint64_t arrived, granted;      /* data messages received / credits given back */
    ucx_op *q_head, *q_tail;        /* waiting for credits */
    size_t q_len;
    ucx_op *inflight;
    uint64_t last_recv_ns, last_send_ns;
    int local;                      /* same host and pid namespace */
    pid_t pid;
    /* shared-memory segments (ucx_seg.h) */
    const unsigned char *seg_map;   /* its segment, mapped read-only here (NULL: none) */
    size_t seg_map_bytes;
    _Atomic int seg_tx;             /* it mapped ours (its HELLO said so) */
    _Atomic int seg_mapped;         /* seg_map is set: for other threads (stats) */
    _Atomic int cma_lane;           /* its endpoint reads rendezvous data by CMA */
    ucx_ring_tx rtx;                /* our ring toward it (ucx_segring.h) */
    ucx_ring_rx rrx;                /* its ring toward us */
    /* read by any thread */
    _Atomic int bye_done;           /* our goodbye left (UCX completed its send) */
    _Atomic int fence;              /* the layer above left it out: lost once silent */
    int silent;                     /* reported to on_silent, not heard from since */
    _Atomic uint64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv;
    _Atomic uint64_t credit_stalls, max_queued, max_in_flight, max_window;
    _Atomic uint64_t seg_msgs_sent, seg_bytes_sent, seg_msgs_recv;
    _Atomic uint64_t ring_msgs_sent, ring_msgs_recv;
} ucx_peer;

typedef struct ucx_handler {
    xport_ucx_am_fn fn;
    void *arg;
    struct ucx_handler *retired;    /* chain of replaced slots, freed at destroy */
} ucx_handler;

struct xport_ucx {
    xport_boot *boot;
    int rank, size;
    /* config */
    int credits;
    size_t rndv_thresh;
    int heartbeat_ms, timeout_ms, spin_us;
    int cuda_poll_us;               /* CASK_UCX_CUDA_POLL_US: while a CUDA-memory request
                                       is in flight, poll with naps of this long instead of
                                       sleeping in epoll (-1: sleep) */
    int heartbeat_asked_ms;         /* before ucx_heartbeat_scale raised heartbeat_ms */
    xport_ucx_peer_fn on_peer;
    xport_ucx_peer_fn on_silent;    /* a peer silent for timeout_ms (NULL: it fails) */
    void *on_peer_arg;
    void (*thread_init)(void *arg);
    void *thread_init_arg;

    ucp_context_h ctx;
    int cuda_mem;                   /* the context moves UCS_MEMORY_TYPE_CUDA */
    int shm;                        /* UCX's shared-memory FIFOs may carry messages
                                     * (CASK_UCX_SHM=1, or UCX_TLS set): ucx_config.c */
    int cma;                        /* rendezvous data by CMA reads (ucx_config.c) */
    size_t seg_bytes;               /* CASK_UCX_SEG: this rank's segment (0: none) */
    size_t seg_thresh;              /* CASK_UCX_SEG_THRESH: host data from this size
                                       goes through the segment */
    size_t seg_max;                 /* CASK_UCX_SEG_MAX: largest message through it (0:
                                       below 1 MiB to a peer with CMA, else a quarter) */
    size_t ring_bytes;              /* CASK_UCX_RING: record bytes of each lane (0: no
                                       rings) */
    size_t ring_max;                /* largest message through a ring */
    ucx_seg *seg;                   /* this rank's segment, NULL if none */
    int bell[2];                    /* the pipe peers ring (ucx_segring.h); -1: none */
    char seg_err[200];              /* why there is none, or a peer's was not mapped */
    int seg_kill_send, seg_kill_recv;   /* test hook CASK_UCX_TEST_SEG_KILL */
    int late_hello_rank, late_hello_ms; /* test hook CASK_UCX_TEST_LATE_HELLO */
    _Atomic long seg_kill_count;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    ucx_peer *peers;

    _Atomic(ucx_handler *) handlers[XPORT_UCX_MAX_AM];
    ucx_handler *retired;
    pthread_mutex_t hmu;            /* handler replacement */

    /* Whoever holds `lock` may call UCX and touch the peers' send state: the progress
     * thread, except while it sleeps in epoll; a sending thread that finds it free
     * (trylock) sends directly instead of waking the progress thread. */
    pthread_mutex_t lock;
    int need_progress;              /* under lock: a request is in flight */
    int cuda_inflight;              /* under lock: requests on CUDA memory UCX holds */

    /* progress thread */
    pthread_t thread;
    int thread_started;
    int epfd, wakefd, worker_fd;
    _Atomic(ucx_op *) submit;       /* lock-free stack of sends from other threads */
    int held;                       /* progress thread: callbacks of the layer above it
                                       is inside (ucx_hold) */
    _Atomic int in_cb;              /* held > 0, for the threads that write rings */
    _Atomic int ring_pending;       /* entries written while in_cb wait to be committed */
    _Atomic long submit_n;          /* sends pushed there and not yet issued: while any,
                                       a thread's send does not go into a ring by itself
                                       (its earlier sends may be among them) */
    _Atomic int sleeping;
    _Atomic int stop;
    _Atomic int cmd_hello, cmd_bye;
    _Atomic int connected, closing;
    int has_ep_errors;              /* a ucp error callback ran: look at ep_error */
    /* under lock (ucx_defer.c): inside ucp_worker_progress, UCX calls are put off */
    int in_progress;
    ucx_op *defer_head, *defer_tail;
    uint64_t next_tick_ns;

    /* waiting for the handshakes, errors */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int hellos, byes, dead;         /* under mu */
    uint64_t connect_ns[4];         /* xport_ucx_connect began, addresses exchanged,
                                       endpoints created, every HELLO in */
    uint64_t *phase_ns;             /* the caller's record of start-up and shutdown
                                       phases (XPORT_UCX_PHASES), or NULL */
    char err[512];                  /* first failure, under mu */
};

/* ucx.c */
cask_status ucx_status(ucs_status_t s);
void ucx_record_error(xport_ucx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t ucx_now_ns(void);
/* Adds the time since *t to the caller's record of phase ph, if it keeps one, and
 * restarts *t. */
void ucx_phase_end(xport_ucx *x, int ph, uint64_t *t);
/* How long connect and destroy wait for the other ranks' handshakes. */
int ucx_handshake_ms(const xport_ucx *x);

/* ucx_info.c: whether ctx moves UCS_MEMORY_TYPE_CUDA */
int ucx_context_cuda(ucp_context_h ctx);

/* ---- in-flight list of a peer: ops UCX holds a request for ---- */

static inline void inflight_add(ucx_peer *p, ucx_op *op)
{
    op->fprev = NULL;
    op->fnext = p->inflight;
    if (p->inflight)
        p->inflight->fprev = op;
    p->inflight = op;
}

static inline void inflight_remove(ucx_peer *p, ucx_op *op)
{
    if (op->fprev) op->fprev->fnext = op->fnext;
    else if (p->inflight == op) p->inflight = op->fnext;
    if (op->fnext) op->fnext->fprev = op->fprev;
    op->fprev = op->fnext = NULL;
}

/* ucx_thread.c: the progress thread's loop; after it stopped, cancelling what is left */
extern __thread const xport_ucx *ucx_progress_of;   /* the transport this thread runs */
void *ucx_progress_main(void *arg);
void ucx_cancel_all(xport_ucx *x);

/* ucx_progress.c */
void ucx_issue(xport_ucx *x, ucx_op *op);
/* Hands op (a send whose credit is taken, or a control message) to UCX now; put off
 * (ucx_defer) while x->in_progress. */
void ucx_issue_now(xport_ucx *x, ucx_peer *p, ucx_op *op);
/* Starts the rendezvous receive op (rdesc into rbuf); put off while x->in_progress. */
void ucx_recv_post(xport_ucx *x, ucx_op *op);
int ucx_drain_submit(xport_ucx *x);
void ucx_wake(xport_ucx *x);
ucs_status_t ucx_am_data_cb(void *arg, const void *header, size_t header_length,
                            void *data, size_t length, const ucp_am_recv_param_t *param);
ucs_status_t ucx_am_ctrl_cb(void *arg, const void *header, size_t header_length,
                            void *data, size_t length, const ucp_am_recv_param_t *param);
/* Completes op's user callback with st (why: the message); progress thread. */
void ucx_call_done(ucx_op *op, cask_status st, const char *why);
/* Sends control message `type` (CTRL_*) to p; progress thread. */
void ucx_send_ctrl(xport_ucx *x, ucx_peer *p, uint32_t type);
/* The same, with two numbers after the wire header (args may be NULL). */
void ucx_send_ctrl_args(xport_ucx *x, ucx_peer *p, uint32_t type, const ucx_ctrl_args *args);

/* ucx_send.c: the test hook CASK_UCX_TEST_SEG_KILL: copies len bytes of src to dst, but
 * SIGKILLs this process half way if this is the copy (send or receive side) it names. */
void ucx_seg_copy(xport_ucx *x, int recv_side, void *dst, const void *src, size_t len);

/* ucx_liveness.c: endpoint errors, heartbeats, silence and vanished local processes;
 * all on the progress thread. */
/* Whether process pid (on this host, in our pid namespace) still runs. */
int ucx_process_alive(pid_t pid);
/* UCX's endpoint error callback: notes the error for ucx_handle_ep_errors. */
void ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status);
/* Acts on the endpoint errors noted: a peer that said goodbye gets its endpoint closed,
 * any other is dead. */
void ucx_handle_ep_errors(xport_ucx *x);
/* p is dead (once): its queued and in-flight operations end with CASK_ERR_PEER and why,
 * its endpoint is closed, on_peer_failure is called with st. */
void ucx_mark_dead(xport_ucx *x, ucx_peer *p, cask_status st, const char *why);
/* Heartbeats and credit returns due at `now`; peers silent past the timeout suspected
 * (on_peer_silent) or dead; local peers whose process exited dead, once what they sent
 * was read. */
void ucx_tick(xport_ucx *x, uint64_t now);

/* ucx_defer.c: no UCX call from inside UCX's callbacks. A handler or a completion
 * callback that sends (a credit, a reply, a forward) or starts a rendezvous receive
 * runs inside ucp_worker_progress; its UCX calls wait in a FIFO and are made once
 * ucp_worker_progress returned. UCX 1.13's TCP transport closes an endpoint whose send
 * fails (a peer killed) at once, inside the send, while the epoll batch it is
 * dispatching may still hold an event of that endpoint: the batch then hits its
 * assertion tcp_iface.c:307 (conn_state != CLOSED) or, without assertions, reads a
 * closed endpoint (docs/design/distributed-internals.md, "UCX transport"). All under x->lock. */
void ucx_defer(xport_ucx *x, ucx_op *op);
/* One ucp_worker_progress with x->in_progress set, then the calls it put off. Returns
 * what ucp_worker_progress returned. */
unsigned ucx_progress_worker(xport_ucx *x);
/* Until ucp_worker_progress finds nothing more; returns how many rounds did work. */
int ucx_progress_drain(xport_ucx *x);

/* ucx_segio.c: the shared-memory segments (ucx_seg.h) inside the transport. */
/* Makes this rank's segment if asked (x->seg_bytes) and the job has peers; a failure
 * only leaves it out (x->seg_err says why). */
void ucx_seg_setup(xport_ucx *x);
/* At connect: maps p's segment (fd in its process, bytes) if this rank takes them, and
 * sets up the rings with it (its bell: fd number bell in its process, -1 none). */
void ucx_seg_map(xport_ucx *x, ucx_peer *p, int fd, uint64_t bytes, int bell);
/* Sending thread: if op (host data, len bytes, to a peer that mapped our segment) can go
 * through a block, copies data in and makes op carry the block's name; 1 if so. */
int ucx_seg_take(xport_ucx *x, ucx_op *op, const void *data, size_t len);
/* A send that carried a block failed: the block is given back. */
void ucx_seg_send_failed(xport_ucx *x, ucx_op *op);
/* Progress thread: p is lost: the blocks lent to it are given back. */
void ucx_seg_peer_lost(xport_ucx *x, ucx_peer *p);
/* Progress thread, outside UCX's callbacks: unmaps the segments of lost peers. */
void ucx_seg_tick(xport_ucx *x);
/* At destroy, the progress thread stopped: unmaps the peers' segments, frees ours. */
void ucx_seg_teardown(xport_ucx *x);

/* From this size host data to a peer whose endpoint reads by CMA goes by CMA, not through
 * a block or a ring (unless CASK_UCX_SEG_MAX): ucx_segio.c, ucx_segring.c. */
#define UCX_SEG_CMA_FROM ((size_t)1 << 20)

/* ucx_segring.c: messages through the rings of the segments (ucx_segring.h). */
/* At create, after ucx_seg_setup: the bell, watched by epfd (-1: nothing done). */
void ucx_ring_setup(xport_ucx *x, int epfd);
/* At connect, once p's segment is mapped: its ring toward us (if its segment has rings)
 * and its bell (fd bell in its process). */
void ucx_ring_connect(xport_ucx *x, ucx_peer *p, int bell);
/* Whether this rank reads p's ring (HELLO's a[1]). */
int ucx_ring_reads(const ucx_peer *p);
/* p's HELLO said it reads our ring: our lane toward it is usable. Progress thread. */
void ucx_ring_hello(xport_ucx *x, ucx_peer *p);
/* Sending thread, no op made yet: sends through the lane if it has room and no send
 * waits there; 1 if so (done called here, with CASK_OK, or with CASK_ERR_PEER where
 * the lane closed), 0 if the caller goes on (not for a ring, or it must queue). */
int ucx_ring_send(xport_ucx *x, int peer, const ucx_wire *w, const void *header,
                  const void *data, size_t len, xport_ucx_mem mem, xport_ucx_done_fn done,
                  void *arg);
/* Whether a send of len bytes of mem to peer is one for its ring. */
int ucx_ring_fits(const xport_ucx *x, int peer, xport_ucx_mem mem, size_t len);
/* The same for an op (any thread; its done on this thread only if the op is this
 * thread's): sent through the ring, queued at its lane, or failed where the lane
 * closed: 1, the op is the ring's (freed by it); 0: not for a ring. */
int ucx_ring_queue(xport_ucx *x, ucx_op *op);
/* Progress thread: delivers what the peers' rings hold, moves queued sends into ours
 * where there is room; returns how many. */
int ucx_ring_poll(xport_ucx *x);
/* Progress thread, before sleeping: the epoch made odd (ucx_ring_sleep), then whether
 * there is work in the rings after all; after sleeping (or not), ucx_ring_awake. */
void ucx_ring_sleep(xport_ucx *x);
int ucx_ring_pending(xport_ucx *x);
void ucx_ring_awake(xport_ucx *x);
/* Progress thread: empties the bell after epoll said it rang. */
void ucx_ring_bell_drain(xport_ucx *x);
/* Progress thread: delivers what p's ring holds, and at least upto entries in all
 * (waits for a committed entry to show, briefly; records an error if it does not). */
void ucx_ring_drain_peer(xport_ucx *x, ucx_peer *p, uint64_t upto);
/* Progress thread, before our goodbye to p: 0 while sends wait in our lane toward it;
 * else the lane closes (later sends to p fail) and *committed says what it carried. */
int ucx_ring_close_bye(xport_ucx *x, ucx_peer *p, uint64_t *committed);
/* Progress thread: p is lost: our lane to it closes (queued sends end with CASK_ERR_PEER
 * and why; its pages go back once its process is gone); its ring is no longer read. */
void ucx_ring_peer_lost(xport_ucx *x, ucx_peer *p, const char *why);
/* Progress thread: the pages of our lane to p, lost, go back to the kernel once its
 * process is gone (at its loss, else on a later tick). */
void ucx_ring_drop_gone(xport_ucx *x, ucx_peer *p);
/* Progress thread: a lane that carried entries since the last tick counts as sent to
 * (no heartbeat needed). */
void ucx_ring_tick(xport_ucx *x, uint64_t now);
/* After the progress thread stopped: queued sends end with CASK_ERR_CANCELLED. */
void ucx_ring_cancel_all(xport_ucx *x, const char *why);
/* At destroy, before the segments are unmapped: lanes closed, bells closed. */
void ucx_ring_teardown(xport_ucx *x);

/* ucx_segring.c: around every callback of the layer above that the progress thread
 * makes (handlers, dones, on_peer_failure, on_peer_silent): while inside, entries
 * written to this rank's rings wait; ucx_release commits them (ucx_segring.h, "Held
 * back"). No-ops on other threads. */
void ucx_hold(xport_ucx *x);
void ucx_release(xport_ucx *x);
/* ucx_segring.c, under t->mu: commits the entries written to t and not yet committed,
 * unless the progress thread is inside a callback (then ucx_release does). */
void ucx_ring_publish(xport_ucx *x, ucx_ring_tx *t);

/* ucx_segring.c, for ucx_segring_life.c: ends the sends of a chain (op->next) with st
 * (CASK_OK: counted as sent through the ring) and frees them; counts one ring send. */
void ucx_ring_end_chain(ucx_peer *p, ucx_op *op, cask_status st, const char *why);
void ucx_ring_count_sent(ucx_peer *p, size_t len);

/* ucx_progress.c: hands a ring entry of p to its handler (progress thread). */
void ucx_ring_deliver(xport_ucx *x, ucx_peer *p, const ucx_wire *w, const unsigned char *hdr,
                      const void *data, size_t len);
/* ucx_progress.c: something came from p (a message, a ring entry): it lives. */
void ucx_heard(xport_ucx *x, ucx_peer *p);

/* ucx_config.c: the settings of cfg (may be NULL), else of the environment. */
void ucx_read_config(xport_ucx *x, const xport_ucx_config *cfg);
/* ucx_config.c: raises heartbeat_ms so that the ranks of this host send at most
 * CASK_UCX_HEARTBEAT_BUDGET heartbeats a second together (never beyond a third of the
 * peer timeout). Once the peers are known (their `local`), before the progress thread. */
void ucx_heartbeat_scale(xport_ucx *x);
/* ucx_config.c: before ucp_init: leaves UCX's shared-memory FIFOs out of conf (ranks
 * of one host then talk over TCP on loopback) unless CASK_UCX_SHM=1 or UCX_TLS
 * is set; sets x->shm. */
void ucx_choose_transports(xport_ucx *x, ucp_config_t *conf);

/* ucx_info.c: notes which same-host peers' endpoints have a CMA lane (p->cma_lane), once
 * connected. Takes x->lock. */
void ucx_note_cma_lanes(xport_ucx *x);

/* ucx_info.c: one line per live peer on f, "cask ucx: rank R -> rank P (same host|other
 * host): tcp/eth0 ..." (the transports of its endpoint's lanes), after UCX's own report
 * of the endpoint if raw; then one line with the phases of xport_ucx_connect (address
 * exchange, endpoint creation, handshakes). Takes x->lock. */
void ucx_print_ep_info(xport_ucx *x, FILE *f, int raw);

/* How long a peer may take from the address exchange to its hello: the join's deadline
 * (xport_ucx_connect), and the silence a peer not yet through its hello is allowed
 * (ucx_tick). A rank still loading or choosing UCX protocols on a loaded host says
 * nothing for seconds; the peer timeout counts from its hello. */
static inline int ucx_join_ms(const struct xport_ucx *x)
{
    return x->timeout_ms > 0 ? (x->timeout_ms > 30000 ? x->timeout_ms : 30000) : 120000;
}

#endif
