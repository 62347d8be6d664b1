/* transport/ucx.h: active messages between the processes of a job over UCX (ucp).
 *
 * One xport_ucx per process: a ucp context and one worker, an endpoint to every rank
 * (itself included) built from the worker addresses the bootstrap exchanged, and one
 * progress thread that owns the worker while the transport is connected.
 *
 * Threads. The worker runs in UCS_THREAD_MODE_SERIALIZED: UCX takes no lock of its own.
 * Between xport_ucx_connect and xport_ucx_destroy only the progress thread calls UCX;
 * other threads hand it sends through a lock-free queue and wake it through an
 * eventfd. The thread sleeps in epoll on the worker's event fd (ucp_worker_get_efd +
 * ucp_worker_arm) and that eventfd, so an idle rank burns no core; it wakes at most
 * every heartbeat interval to keep peers informed that it lives. While it sleeps, a
 * sending thread that takes the transport's lock (trylock) sends directly, saving the
 * hand-off and the wake-up; the lock serialises every UCX call, so SERIALIZED holds.
 * Handlers run on the progress thread; keep them short, never block in them; they may
 * call xport_ucx_am_send (sent, without the queue, as soon as UCX's progress call that
 * runs the handler returned: no UCX call is made from inside UCX's callbacks,
 * ucx_defer.c). Completion callbacks
 * run on the progress thread too, except that a send which completes at once may call
 * its done on the sending thread before xport_ucx_am_send returns; never the done of
 * another send (a thread may send while holding a lock that other sends' callbacks
 * take).
 *
 * Messages. xport_ucx_am_send(peer, id, header, data) delivers the header (copied at the
 * call, at most XPORT_UCX_MAX_HEADER bytes) and the data (not copied: zero copy where
 * UCX can, rendezvous from rndv_thresh bytes) to the handler registered for id on
 * peer. Small data is carried eagerly and is readable in the handler; large data stays
 * at the sender until the handler names a buffer with xport_ucx_recv_into (rendezvous,
 * written by UCX straight into that buffer). There is no order between messages.
 * Between the ranks of one host, host data goes through cask's shared-memory segments
 * instead (ucx_seg.h, ucx_segring.h): messages up to a quarter of a lane (1 MiB by
 * default) as a whole through a ring, header and data copied in on the sending thread
 * (done is called at once) and seen eagerly by the handler; larger ones through a
 * block, named by a message over UCX. A thread's sends to one peer through its ring
 * arrive in the order it made them.
 *
 * Flow control. Each rank may have at most `credits` messages to one peer that the
 * peer has not yet consumed (handled, and its data received). Further sends wait in a
 * per-peer queue at the sender; the receiver returns credits piggybacked on its own
 * messages or in a small credit message every half window. So the memory a peer's
 * messages take at a receiver is bounded by credits x rndv_thresh. A ring holds at most
 * `credits` unconsumed messages too (and its own bytes): further sends wait in a queue
 * at its lane, in order, and the progress thread moves them in once the peer consumed
 * enough.
 *
 * Failures. Endpoints use UCP_ERR_HANDLING_MODE_PEER; a peer is declared dead when UCX
 * reports an endpoint error, when nothing has come from it for peer_timeout_ms (it
 * sends a heartbeat every heartbeat_ms when it has nothing else to say; with
 * on_peer_silent, that only suspects it, and it is dead at twice the timeout), or, for
 * a peer on the same host, when its process no longer exists (after what it sent before
 * it exited has been read: its goodbye, if it said one). Time this rank's own progress
 * thread came late (descheduled, stopped) counts as heard from every peer. Then every
 * send queued or in flight to it, and every receive from it, completes with CASK_ERR_PEER, later
 * sends to it fail at once, and on_peer_failure is called once. A peer that left
 * through xport_ucx_destroy is not a failure: it said goodbye first, and after that
 * its endpoint closing is expected (it still takes messages until it has this rank's
 * goodbye).
 */
#ifndef CASK_TRANSPORT_UCX_H
#define CASK_TRANSPORT_UCX_H

#include <stddef.h>
#include <stdint.h>
#include "cask/status.h"
#include "transport/bootstrap.h"

typedef struct xport_ucx xport_ucx;

#define XPORT_UCX_MAX_AM 64        /* handler ids are 0 .. XPORT_UCX_MAX_AM-1 */
#define XPORT_UCX_MAX_HEADER 224   /* bytes of user header per message */

/* A message as its handler sees it; valid only during the handler call. */
typedef struct xport_ucx_msg {
    int peer;                 /* sender rank */
    unsigned id;              /* handler id */
    const void *header;       /* header_len bytes (unaligned: memcpy out of it) */
    size_t header_len;
    size_t len;               /* bytes of data */
    const void *data;         /* the data if it came eagerly (unaligned), else NULL:
                                 then only xport_ucx_recv_into can get it */
    void *priv_;              /* transport's */
} xport_ucx_msg;

/* Called on the progress thread for each message of its id. */
typedef void (*xport_ucx_am_fn)(void *arg, xport_ucx_msg *msg);
/* Completion of a send or a receive: st is CASK_OK, or CASK_ERR_PEER / CASK_ERR_UCX
 * with why saying which call failed for which peer (why valid during the call). Called
 * exactly once: on the progress thread, or (a send done at once) on the sending thread
 * before xport_ucx_am_send returns. Must not call xport_ucx_destroy. */
typedef void (*xport_ucx_done_fn)(void *arg, cask_status st, const char *why);
/* A peer was lost (called once per peer, on the progress thread). */
typedef void (*xport_ucx_peer_fn)(void *arg, int peer, cask_status st, const char *why);

enum xport_ucx_field {
    XPORT_UCX_CREDITS      = 1u << 0,
    XPORT_UCX_RNDV_THRESH  = 1u << 1,
    XPORT_UCX_HEARTBEAT_MS = 1u << 2,
    XPORT_UCX_TIMEOUT_MS   = 1u << 3,
    XPORT_UCX_SPIN_US      = 1u << 4,
    XPORT_UCX_ON_PEER      = 1u << 5,
    XPORT_UCX_THREAD_INIT  = 1u << 6,
    XPORT_UCX_ON_SILENT    = 1u << 7,
    XPORT_UCX_PHASES       = 1u << 8,
    XPORT_UCX_NO_CUDA      = 1u << 9
};

typedef struct xport_ucx_config {
    uint64_t field_mask;
    int credits;              /* messages in flight per peer. CASK_UCX_CREDITS; 64 */
    size_t rndv_thresh;       /* data of this many bytes or more goes by rendezvous.
                                 CASK_UCX_RNDV_THRESH; 16384 */
    int heartbeat_ms;         /* CASK_UCX_HEARTBEAT_MS; 1000 */
    int peer_timeout_ms;      /* silence after which a peer is dead; 0 = never.
                                 CASK_PEER_TIMEOUT_MS; 15000 */
    int spin_us;              /* busy-poll this long after activity before sleeping
                                 (lower latency, one core while it spins).
                                 CASK_UCX_SPIN_US; 50 with 8 cores or more, else 0 */
    xport_ucx_peer_fn on_peer_failure;  /* XPORT_UCX_ON_PEER */
    void *on_peer_arg;
    xport_ucx_peer_fn on_peer_silent;   /* XPORT_UCX_ON_SILENT (arg: on_peer_arg): with
                                           it, a peer silent for peer_timeout_ms is only
                                           suspected: on_peer_silent(arg, peer,
                                           CASK_ERR_PEER, why) is called, the peer
                                           stays reachable, and on_peer_silent(arg, peer,
                                           CASK_OK, NULL) is called when anything comes
                                           from it again; it fails (on_peer_failure) once
                                           silent for twice peer_timeout_ms, or when
                                           fenced (xport_ucx_fence). Called on the
                                           progress thread; must not block. Without it
                                           a silent peer fails at peer_timeout_ms. */
    void (*thread_init)(void *arg);     /* XPORT_UCX_THREAD_INIT: called first on the
                                           progress thread (e.g. to make a GPU current
                                           there, for UCX's CUDA transports) */
    void *thread_init_arg;
    uint64_t *phase_ns;       /* XPORT_UCX_PHASES: an array indexed by runtime_phase
                                 (runtime/phases.h) into which create, connect and
                                 destroy write the nanoseconds of their steps (UCX
                                 context, worker, addresses, wire-up, hellos; goodbyes,
                                 endpoints, teardown); it must outlive the transport */
    int no_cuda;              /* XPORT_UCX_NO_CUDA: this process never gives the
                                 transport CUDA memory. If this is the process's first
                                 transport, UCX is loaded without its CUDA modules and
                                 memory hooks (transport/ucx_load.c) */
} xport_ucx_config;

/* Creates the ucp context and worker (no communication yet). boot is used by
 * xport_ucx_connect and must outlive the transport. cfg may be NULL. err (errlen bytes,
 * may be NULL) receives the message of a failure. Errors: CASK_ERR_UCX (a ucp call
 * failed: the message names it), CASK_ERR_NOMEM, CASK_ERR_INVALID. */
cask_status xport_ucx_create(xport_boot *boot, const xport_ucx_config *cfg,
                             xport_ucx **out, char *err, size_t errlen);

/* Registers the handler of id (replacing any). Register every id a peer may send
 * before xport_ucx_connect: a message whose id has no handler is dropped and reported
 * in xport_ucx_error. Thread safe. Errors: CASK_ERR_INVALID (id out of range). */
cask_status xport_ucx_set_handler(xport_ucx *x, unsigned id, xport_ucx_am_fn fn,
                                  void *arg);

/* Collective (every rank): exchanges worker addresses through the bootstrap, makes an
 * endpoint to every rank, starts the progress thread and waits until every peer has
 * answered (so that all handlers are registered everywhere). Errors: CASK_ERR_PEER
 * (the bootstrap failed, a peer's endpoint failed or its process exited, or it did not
 * answer within the join's deadline: the larger of peer_timeout_ms and 30 s, or 120 s
 * where peer_timeout_ms is 0; until its hello a peer's silence counts against that
 * deadline, not against peer_timeout_ms),
 * CASK_ERR_UCX, CASK_ERR_STATE (already connected). */
cask_status xport_ucx_connect(xport_ucx *x);

int xport_ucx_rank(const xport_ucx *x);
int xport_ucx_size(const xport_ucx *x);

/* Sends header (copied now) and len bytes of data (NOT copied: keep data unchanged
 * until done is called) to peer's handler id. Returns CASK_OK if the send was taken:
 * then done (may be NULL) is called exactly once when data may be reused, with
 * CASK_OK or the failure. Returns an error, and never calls done, if it is refused
 * now: CASK_ERR_INVALID (peer or id out of range, header too long), CASK_ERR_PEER
 * (peer known dead or gone), CASK_ERR_STATE (not connected). Thread safe. */
cask_status xport_ucx_am_send(xport_ucx *x, int peer, unsigned id, const void *header,
                              size_t header_len, const void *data, size_t len,
                              xport_ucx_done_fn done, void *arg);

/* Where the data of a send or the buffer of a receive lives. */
typedef enum xport_ucx_mem {
    XPORT_UCX_MEM_HOST = 0,
    XPORT_UCX_MEM_CUDA = 1    /* device memory of a CUDA GPU (only where
                                 xport_ucx_cuda_memory says UCX supports it) */
} xport_ucx_mem;

/* 1 if this UCX moves CUDA device memory itself (ucp_context_query's memory_types has
 * UCS_MEMORY_TYPE_CUDA: a UCX built with CUDA whose cuda transports loaded), else 0. */
int xport_ucx_cuda_memory(const xport_ucx *x);

/* As xport_ucx_am_send, with data in memory of kind mem, which UCX is told
 * (UCP_OP_ATTR_FIELD_MEMORY_TYPE): device memory goes by rendezvous whatever its size
 * (cuda_ipc between processes of a node: GPU to GPU, no host copy in cask), so the
 * receiver always names a buffer with xport_ucx_recv_into_mem. Errors as
 * xport_ucx_am_send, and CASK_ERR_UNSUPPORTED for XPORT_UCX_MEM_CUDA where
 * xport_ucx_cuda_memory is 0. */
cask_status xport_ucx_am_send_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                                  size_t header_len, const void *data, size_t len,
                                  xport_ucx_mem mem, xport_ucx_done_fn done, void *arg);

/* As xport_ucx_am_send_mem, but never calls UCX on the calling thread: the send is
 * queued for the progress thread, which is woken (a write to an eventfd). For threads
 * that must not call CUDA, such as a CUDA host function (cudaLaunchHostFunc) posting a
 * chunk once its stream has produced it. A peer found dead then fails the send through
 * done, on the progress thread. Errors: CASK_ERR_INVALID, CASK_ERR_STATE (not
 * connected), CASK_ERR_UNSUPPORTED, CASK_ERR_NOMEM; done is then not called. */
cask_status xport_ucx_am_post_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                                  size_t header_len, const void *data, size_t len,
                                  xport_ucx_mem mem, xport_ucx_done_fn done, void *arg);

/* As xport_ucx_recv_into, into buf of kind mem. Data that came eagerly (in host memory)
 * cannot be copied into device memory here: then CASK_ERR_UNSUPPORTED (done not called),
 * which does not happen for data sent with xport_ucx_am_send_mem(XPORT_UCX_MEM_CUDA). */
cask_status xport_ucx_recv_into_mem(xport_ucx_msg *msg, void *buf, xport_ucx_mem mem,
                                    xport_ucx_done_fn done, void *arg);

/* Describes the UCX library this process runs with, into buf (len bytes): its version,
 * where cask's build took it from, and whether it moves CUDA memory (this makes and
 * drops a ucp context to ask). Never fails; thread safe. */
void xport_ucx_describe(char *buf, size_t len);

/* Only inside a handler, at most once per message: receive the message's data into buf
 * (at least msg->len bytes, host memory). done is called when buf holds the data (for
 * eager data at once, before this returns) or with the failure. If a handler does not
 * call this, the data is dropped when the handler returns (the sender still completes
 * with CASK_OK). Errors: CASK_ERR_INVALID, CASK_ERR_STATE (called twice); then done is
 * not called. */
cask_status xport_ucx_recv_into(xport_ucx_msg *msg, void *buf, xport_ucx_done_fn done,
                                void *arg);

/* CASK_OK while peer is reachable (also while it is leaving), CASK_ERR_PEER once it
 * failed. Thread safe. */
cask_status xport_ucx_peer_status(const xport_ucx *x, int peer);

/* The layer above left peer out of the job (a rank fenced out by the membership, which
 * may be alive but frozen): from now on it is declared lost as soon as it has been
 * silent for two heartbeat intervals instead of the peer timeout (on_peer_failure is
 * called, sends to it and in flight end with CASK_ERR_PEER, its endpoint is closed, its
 * goodbye is not waited for). A fenced peer that still talks stays reachable (it
 * finishes, or fails, and says goodbye as usual). Errors: CASK_ERR_INVALID (no x, a
 * peer out of range, or this rank). Thread safe, also from a handler. */
cask_status xport_ucx_fence(xport_ucx *x, int peer);

/* Counters of the traffic with one peer. Thread safe (read while running). */
typedef struct xport_ucx_stats {
    uint64_t msgs_sent, bytes_sent;
    uint64_t msgs_recv, bytes_recv;
    uint64_t credit_stalls;   /* sends that had to wait for credits */
    uint64_t max_queued;      /* longest credit queue seen */
    uint64_t max_in_flight;   /* most messages from the peer held here unconsumed */
    uint64_t max_window;      /* most messages from the peer that arrived beyond the
                                 credits this rank gave it back: never above credits
                                 (checks the peer kept to the window) */
    uint64_t seg_msgs_sent;   /* messages whose data went through this rank's shared-
                                 memory segment (CASK_UCX_SEG), and their bytes */
    uint64_t seg_bytes_sent;
    uint64_t seg_msgs_recv;   /* messages read from the peer's segment */
    uint64_t seg_held;        /* bytes of this rank's segment the peer holds now (lent,
                                 not yet given back; 0 once the peer is lost) */
    int seg_mapped;           /* this rank maps the peer's segment now */
    uint64_t ring_msgs_sent;  /* messages through this rank's ring toward the peer (in
                                 its shared-memory segment: header and data, no TCP);
                                 counted in msgs_sent too, and in seg_msgs_sent when
                                 they carry data */
    uint64_t ring_msgs_recv;  /* messages read from the peer's ring toward this rank */
    uint64_t ring_queued;     /* sends waiting for room in the ring toward the peer now */
} xport_ucx_stats;
cask_status xport_ucx_peer_stats(const xport_ucx *x, int peer, xport_ucx_stats *out);

/* Copies the message of the first failure (a lost peer, a failed UCX call, a dropped
 * message) into buf, "" if none. Thread safe. */
void xport_ucx_error(const xport_ucx *x, char *buf, size_t len);

/* Collective unless peers failed: once this rank's sends to a peer completed, tells it
 * this rank leaves; waits (up to the larger of peer_timeout_ms and 10 s) until every
 * live peer has said the same; closes the endpoints, stops the progress thread and
 * frees everything. Sends still not complete then are cancelled (their done gets
 * CASK_ERR_CANCELLED). Returns CASK_ERR_PEER if a peer failed during the run or did not
 * say goodbye in time (then err, errlen bytes, may be NULL, says which and why), else
 * CASK_OK; frees x in every case. x may be NULL. Must not be
 * called from a handler or callback. */
cask_status xport_ucx_destroy(xport_ucx *x, char *err, size_t errlen);

#endif
