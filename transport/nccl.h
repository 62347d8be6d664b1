/* transport/nccl.h: GPU chunks between processes with NCCL send/recv (a CUDA build with
 * NCCL only: CASK_HAVE_NCCL).
 *
 * One communicator per job, one GPU per process (the device given at create, usually
 * the launcher's local rank). The unique id comes from rank 0 through the bootstrap.
 * The communicator is nonblocking (ncclConfig_t.blocking = 0): no NCCL call waits for
 * a peer, so a peer that died cannot hang this process; instead every wait is bounded
 * and polls ncclCommGetAsyncError, and xport_nccl_abort (ncclCommAbort) ends whatever
 * is in flight, e.g. when the UCX layer reports a lost peer.
 *
 * Transfers. xport_nccl_start issues a group of sends and receives on the
 * communicator's own stream (optionally after a CUDA event, so that it waits for the
 * kernel producing the data without the host waiting) and records an event after them;
 * xport_nccl_test / _wait tell when the group finished. As with any NCCL point-to-point
 * call, each send needs the matching receive on the peer, in the same order between
 * each pair of ranks: the caller's protocol (UCX messages) must agree on it first.
 *
 * Thread safety: all calls on one xport_nccl are serialised by its lock; a wait
 * releases it while polling, so xport_nccl_abort from another thread ends it.
 */
#ifndef CASK_TRANSPORT_NCCL_H
#define CASK_TRANSPORT_NCCL_H

#include <stddef.h>
#include <stdint.h>
#include "cask/status.h"
#include "transport/bootstrap.h"

typedef struct xport_nccl xport_nccl;
typedef struct xport_nccl_xfer xport_nccl_xfer;

typedef struct xport_nccl_op {
    int peer;          /* rank in the job */
    int recv;          /* 0: send buf to peer; 1: receive into buf from peer */
    void *buf;         /* device memory on this process's GPU */
    size_t bytes;
} xport_nccl_op;

/* Collective: makes the communicator of all ranks of boot on CUDA device `device`,
 * within timeout_ms (0: 120 s). err (errlen) gets the message of a failure.
 * Errors: CASK_ERR_CUDA (device unusable), CASK_ERR_NCCL (the message has
 * ncclGetLastError), CASK_ERR_PEER (the bootstrap failed or init timed out: then the
 * communicator is aborted), CASK_ERR_NOMEM. */
cask_status xport_nccl_create(xport_boot *boot, int device, int timeout_ms,
                              xport_nccl **out, char *err, size_t errlen);

/* Issues ops as one NCCL group on the communicator's stream, after wait_event (a
 * cudaEvent_t, may be NULL) and returns at once with *out to test or wait on. Buffers
 * must stay valid until the transfer finished. Errors: CASK_ERR_INVALID, CASK_ERR_STATE
 * (aborted), CASK_ERR_NCCL, CASK_ERR_CUDA, CASK_ERR_NOMEM. */
cask_status xport_nccl_start(xport_nccl *n, const xport_nccl_op *ops, int nops,
                             void *wait_event, xport_nccl_xfer **out);

/* As xport_nccl_start, after every one of the nevents events (cudaEvent_t): one NCCL
 * group for transfers that became ready at once (one enqueue, one launch, instead of
 * one per transfer). */
cask_status xport_nccl_start_after(xport_nccl *n, const xport_nccl_op *ops, int nops,
                                   void *const *events, int nevents, xport_nccl_xfer **out);

/* Time spent issuing: calls to xport_nccl_start(_after) and their total seconds (the
 * enqueue, including the wait for a nonblocking communicator to leave ncclInProgress),
 * to tell where a transfer's cost goes. */
void xport_nccl_issue_stats(xport_nccl *n, uint64_t *calls, double *seconds);

/* CASK_OK when the transfer finished, CASK_ERR_BUSY while it runs, or the failure
 * (CASK_ERR_NCCL: an asynchronous NCCL error, e.g. a remote peer's; CASK_ERR_PEER:
 * the communicator was aborted). Does not block. */
cask_status xport_nccl_test(xport_nccl_xfer *t);

/* Polls until the transfer finished, failed, or timeout_ms passed (0: forever, which
 * still ends if the communicator is aborted); on timeout the communicator is aborted
 * and CASK_ERR_PEER returned. */
cask_status xport_nccl_wait(xport_nccl_xfer *t, int timeout_ms);

/* The event recorded after the transfer (a cudaEvent_t): a stream can wait for it
 * with cudaStreamWaitEvent instead of the host waiting. Valid until freed. */
void *xport_nccl_xfer_event(const xport_nccl_xfer *t);

/* Frees a transfer that finished or failed (or whose communicator was aborted). */
void xport_nccl_xfer_free(xport_nccl_xfer *t);

/* Aborts the communicator (ncclCommAbort): transfers in flight fail, later starts
 * fail with CASK_ERR_STATE. why is kept for xport_nccl_error. Thread safe. */
void xport_nccl_abort(xport_nccl *n, const char *why);

/* The communicator's stream (a cudaStream_t). */
void *xport_nccl_stream(const xport_nccl *n);
int xport_nccl_device(const xport_nccl *n);

/* Message of the first failure, "" if none. */
void xport_nccl_error(xport_nccl *n, char *buf, size_t len);

/* Finalizes (flushing what was issued, bounded by the create timeout) and destroys the
 * communicator, or frees an aborted one. Transfers must have been freed. n may be NULL. */
cask_status xport_nccl_destroy(xport_nccl *n);

#endif
