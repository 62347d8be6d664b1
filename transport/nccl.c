/* transport/nccl.c: a nonblocking NCCL communicator for GPU chunks between processes,
 * whose every wait is bounded and abortable. See nccl.h. */
#include "transport/nccl.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCCL_DEFAULT_TIMEOUT_MS 120000

struct xport_nccl {
    ncclComm_t comm;
    int rank, size, device, timeout_ms;
    cudaStream_t stream;
    pthread_mutex_t mu;
    _Atomic int aborted;
    char err[512];
    cudaEvent_t *pool;        /* free events */
    int npool, cap;
    uint64_t issues, issue_us;   /* xport_nccl_start calls and their time (under mu) */
};

struct xport_nccl_xfer {
    xport_nccl *n;
    cudaEvent_t ev;
    int finished;
    cask_status st;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void nap_us(long us)
{
    struct timespec ts = { 0, us * 1000L };
    nanosleep(&ts, NULL);
}

/* How a poll loop waits between two looks: yield for the first SPIN_US (a small
 * transfer ends within that: sleeping would add the sleep's granularity to it), then
 * naps doubling from 10 us to 100 us (a long one costs ~1% of a core; longer naps cost
 * up to the nap on every wait: 1 ms naps lost 20% on 3 ms transfers). */
#define SPIN_US 200
static void poll_pause(uint64_t t0_us, long *nap)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    if (now - t0_us < SPIN_US) {
        sched_yield();
        return;
    }
    nap_us(*nap);
    if (*nap < 100)
        *nap *= 2;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static cask_status nfail(xport_nccl *n, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cask_status nfail(xport_nccl *n, cask_status st, const char *fmt, ...)
{
    if (!n->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(n->err, sizeof n->err, fmt, ap);
        va_end(ap);
    }
    return st;
}

static cask_status nccl_fail(xport_nccl *n, const char *call, ncclResult_t r)
{
    return nfail(n, r == ncclRemoteError ? CASK_ERR_PEER : CASK_ERR_NCCL,
                 "%s on rank %d (GPU %d): %s: %s", call, n->rank, n->device,
                 ncclGetErrorString(r), n->comm ? ncclGetLastError(n->comm) : "");
}

static cask_status cuda_fail(xport_nccl *n, const char *call, cudaError_t e)
{
    return nfail(n, CASK_ERR_CUDA, "%s on rank %d (GPU %d): %s", call, n->rank, n->device,
                 cudaGetErrorString(e));
}

/* Waits, without holding the lock, until the communicator's pending operation (init,
 * group enqueue, finalize) left ncclInProgress; aborts it after deadline. Called and
 * returns with the lock held. */
static cask_status settle(xport_nccl *n, const char *what, uint64_t deadline)
{
    uint64_t t0 = now_us();
    for (long nap = 10;;) {
        if (atomic_load(&n->aborted))
            return nfail(n, CASK_ERR_PEER, "%s on rank %d: communicator aborted", what,
                         n->rank);
        ncclResult_t state = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(n->comm, &state);
        if (r != ncclSuccess)
            return nccl_fail(n, "ncclCommGetAsyncError", r);
        if (state == ncclSuccess)
            return CASK_OK;
        if (state != ncclInProgress)
            return nccl_fail(n, what, state);
        if (now_ms() > deadline) {
            cask_status st = nfail(n, CASK_ERR_PEER, "%s on rank %d did not finish within "
                                   "%d ms: a peer is lost or stuck; communicator aborted",
                                   what, n->rank, n->timeout_ms);
            atomic_store(&n->aborted, 1);
            ncclCommAbort(n->comm);
            n->comm = NULL;
            return st;
        }
        pthread_mutex_unlock(&n->mu);
        poll_pause(t0, &nap);
        pthread_mutex_lock(&n->mu);
    }
}

cask_status xport_nccl_create(xport_boot *boot, int device, int timeout_ms,
                              xport_nccl **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!boot || !out || device < 0)
        return CASK_ERR_INVALID;
    *out = NULL;
    xport_nccl *n = calloc(1, sizeof *n);
    if (!n)
        return CASK_ERR_NOMEM;
    n->rank = xport_boot_rank(boot);
    n->size = xport_boot_size(boot);
    n->device = device;
    n->timeout_ms = timeout_ms > 0 ? timeout_ms : NCCL_DEFAULT_TIMEOUT_MS;
    pthread_mutex_init(&n->mu, NULL);
    cask_status st = CASK_OK;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        st = cuda_fail(n, "cudaSetDevice", e);
        goto fail;
    }
    e = cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        n->stream = NULL;
        st = cuda_fail(n, "cudaStreamCreateWithFlags", e);
        goto fail;
    }
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (n->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) {
            st = nccl_fail(n, "ncclGetUniqueId", r);
            /* the others wait in the bcast: give them an id that fails fast */
        }
    }
    cask_status bst = xport_boot_bcast(boot, "nccl.id", 0, &id, sizeof id);
    if (st)
        goto fail;
    if (bst) {
        st = nfail(n, CASK_ERR_PEER, "sharing the NCCL id: %s", xport_boot_error(boot));
        goto fail;
    }
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    /* Nonblocking: no call waits for a peer, so a dead one cannot hang this process;
     * but each group is then enqueued by an NCCL thread and polled until it left
     * ncclInProgress (~90 us a group against ~19 us blocking, docs/design/distributed-measurements.md).
     * CASK_NCCL_BLOCKING=1 trades that safety during init for the shorter issue (after
     * init, point-to-point enqueues do not wait for peers). */
    const char *blk = getenv("CASK_NCCL_BLOCKING");
    cfg.blocking = blk && !strcmp(blk, "1");
    pthread_mutex_lock(&n->mu);
    ncclResult_t r = ncclCommInitRankConfig(&n->comm, n->size, id, n->rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        st = nccl_fail(n, "ncclCommInitRankConfig", r);
        if (n->comm) {
            ncclCommAbort(n->comm);
            n->comm = NULL;
        }
    } else {
        st = settle(n, "ncclCommInitRankConfig", now_ms() + (uint64_t)n->timeout_ms);
    }
    pthread_mutex_unlock(&n->mu);
    if (st)
        goto fail;
    *out = n;
    return CASK_OK;
fail:
    if (err) snprintf(err, errlen, "%s", n->err);
    if (n->comm) ncclCommAbort(n->comm);
    if (n->stream) cudaStreamDestroy(n->stream);
    pthread_mutex_destroy(&n->mu);
    free(n);
    return st;
}

static cask_status get_event(xport_nccl *n, cudaEvent_t *ev)
{
    if (n->npool) {
        *ev = n->pool[--n->npool];
        return CASK_OK;
    }
    cudaError_t e = cudaEventCreateWithFlags(ev, cudaEventDisableTiming);
    return e == cudaSuccess ? CASK_OK : cuda_fail(n, "cudaEventCreateWithFlags", e);
}

cask_status xport_nccl_start(xport_nccl *n, const xport_nccl_op *ops, int nops,
                             void *wait_event, xport_nccl_xfer **out)
{
    return xport_nccl_start_after(n, ops, nops, wait_event ? &wait_event : NULL,
                                  wait_event ? 1 : 0, out);
}

void xport_nccl_issue_stats(xport_nccl *n, uint64_t *calls, double *seconds)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    if (calls) *calls = n->issues;
    if (seconds) *seconds = 1e-6 * (double)n->issue_us;
    pthread_mutex_unlock(&n->mu);
}

cask_status xport_nccl_start_after(xport_nccl *n, const xport_nccl_op *ops, int nops,
                                   void *const *events, int nevents, xport_nccl_xfer **out)
{
    uint64_t t_issue = now_us();
    if (!n || !out || nops < 0 || (nops && !ops))
        return CASK_ERR_INVALID;
    for (int i = 0; i < nops; i++)
        if (ops[i].peer < 0 || ops[i].peer >= n->size || (ops[i].bytes && !ops[i].buf))
            return CASK_ERR_INVALID;
    xport_nccl_xfer *t = calloc(1, sizeof *t);
    if (!t)
        return CASK_ERR_NOMEM;
    t->n = n;
    cask_status st = CASK_OK;
    pthread_mutex_lock(&n->mu);
    if (atomic_load(&n->aborted)) {
        st = CASK_ERR_STATE;
        goto out;
    }
    cudaError_t e = cudaSetDevice(n->device);
    if (e != cudaSuccess) {
        st = cuda_fail(n, "cudaSetDevice", e);
        goto out;
    }
    if ((st = get_event(n, &t->ev)))
        goto out;
    for (int i = 0; i < nevents; i++)
        if (events[i] && (e = cudaStreamWaitEvent(n->stream, (cudaEvent_t)events[i], 0)) !=
                         cudaSuccess) {
            st = cuda_fail(n, "cudaStreamWaitEvent", e);
            goto out;
        }
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) {
        st = nccl_fail(n, "ncclGroupStart", r);
        goto out;
    }
    for (int i = 0; i < nops && r == ncclSuccess; i++) {
        r = ops[i].recv
            ? ncclRecv(ops[i].buf, ops[i].bytes, ncclInt8, ops[i].peer, n->comm, n->stream)
            : ncclSend(ops[i].buf, ops[i].bytes, ncclInt8, ops[i].peer, n->comm, n->stream);
        if (r != ncclSuccess && r != ncclInProgress) {
            char call[64];
            snprintf(call, sizeof call, "%s %s rank %d", ops[i].recv ? "ncclRecv" : "ncclSend",
                     ops[i].recv ? "from" : "to", ops[i].peer);
            st = nccl_fail(n, call, r);
        } else {
            r = ncclSuccess;
        }
    }
    ncclResult_t re = ncclGroupEnd();
    if (!st && re != ncclSuccess && re != ncclInProgress)
        st = nccl_fail(n, "ncclGroupEnd", re);
    if (!st && re == ncclInProgress)
        st = settle(n, "ncclGroupEnd", now_ms() + (uint64_t)n->timeout_ms);
    if (st)
        goto out;
    if ((e = cudaEventRecord(t->ev, n->stream)) != cudaSuccess)
        st = cuda_fail(n, "cudaEventRecord", e);
out:
    n->issues++;
    n->issue_us += now_us() - t_issue;
    pthread_mutex_unlock(&n->mu);
    if (st) {
        xport_nccl_xfer_free(t);
        return st;
    }
    *out = t;
    return CASK_OK;
}

cask_status xport_nccl_test(xport_nccl_xfer *t)
{
    if (!t)
        return CASK_ERR_INVALID;
    if (t->finished)
        return t->st;
    xport_nccl *n = t->n;
    cask_status st;
    pthread_mutex_lock(&n->mu);
    if (atomic_load(&n->aborted)) {
        st = nfail(n, CASK_ERR_PEER, "NCCL transfer on rank %d: communicator aborted",
                   n->rank);
    } else {
        ncclResult_t state = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(n->comm, &state);
        if (r != ncclSuccess)
            st = nccl_fail(n, "ncclCommGetAsyncError", r);
        else if (state != ncclSuccess && state != ncclInProgress)
            st = nccl_fail(n, "NCCL transfer", state);
        else {
            cudaError_t e = cudaEventQuery(t->ev);
            st = e == cudaSuccess ? CASK_OK
                 : e == cudaErrorNotReady ? CASK_ERR_BUSY
                 : cuda_fail(n, "cudaEventQuery", e);
        }
    }
    pthread_mutex_unlock(&n->mu);
    if (st != CASK_ERR_BUSY) {
        t->finished = 1;
        t->st = st;
    }
    return st;
}

cask_status xport_nccl_wait(xport_nccl_xfer *t, int timeout_ms)
{
    if (!t)
        return CASK_ERR_INVALID;
    uint64_t deadline = timeout_ms > 0 ? now_ms() + (uint64_t)timeout_ms : 0;
    uint64_t t0 = now_us();
    for (long nap = 10;;) {
        cask_status st = xport_nccl_test(t);
        if (st != CASK_ERR_BUSY)
            return st;
        if (deadline && now_ms() > deadline) {
            char why[160];
            snprintf(why, sizeof why, "NCCL transfer on rank %d did not finish within %d ms",
                     t->n->rank, timeout_ms);
            xport_nccl_abort(t->n, why);
            t->finished = 1;
            t->st = CASK_ERR_PEER;
            return CASK_ERR_PEER;
        }
        poll_pause(t0, &nap);
    }
}

void *xport_nccl_xfer_event(const xport_nccl_xfer *t)
{
    return t ? (void *)t->ev : NULL;
}

void xport_nccl_xfer_free(xport_nccl_xfer *t)
{
    if (!t)
        return;
    xport_nccl *n = t->n;
    if (t->ev) {
        pthread_mutex_lock(&n->mu);
        /* An event of an unfinished transfer may still be recorded: never reuse it. */
        if (t->finished && t->st == CASK_OK && n->npool < 64) {
            if (n->npool == n->cap) {
                int cap = n->cap ? 2 * n->cap : 8;
                cudaEvent_t *p = realloc(n->pool, (size_t)cap * sizeof *p);
                if (p) {
                    n->pool = p;
                    n->cap = cap;
                }
            }
            if (n->npool < n->cap) {
                n->pool[n->npool++] = t->ev;
                t->ev = NULL;
            }
        }
        if (t->ev)
            cudaEventDestroy(t->ev);
        pthread_mutex_unlock(&n->mu);
    }
    free(t);
}

void xport_nccl_abort(xport_nccl *n, const char *why)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    if (!atomic_load(&n->aborted)) {
        atomic_store(&n->aborted, 1);
        nfail(n, CASK_ERR_PEER, "%s", why ? why : "aborted");
        if (n->comm) {
            ncclCommAbort(n->comm);
            n->comm = NULL;
        }
    }
    pthread_mutex_unlock(&n->mu);
}

void *xport_nccl_stream(const xport_nccl *n) { return n ? (void *)n->stream : NULL; }
int xport_nccl_device(const xport_nccl *n) { return n ? n->device : -1; }

void xport_nccl_error(xport_nccl *n, char *buf, size_t len)
{
    if (!buf || !len)
        return;
    buf[0] = 0;
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    snprintf(buf, len, "%s", n->err);
    pthread_mutex_unlock(&n->mu);
}

cask_status xport_nccl_destroy(xport_nccl *n)
{
    if (!n)
        return CASK_OK;
    cask_status st = CASK_OK;
    pthread_mutex_lock(&n->mu);
    if (!atomic_load(&n->aborted) && n->comm) {
        ncclResult_t r = ncclCommFinalize(n->comm);
        if (r != ncclSuccess && r != ncclInProgress)
            st = nccl_fail(n, "ncclCommFinalize", r);
        else
            st = settle(n, "ncclCommFinalize", now_ms() + (uint64_t)n->timeout_ms);
        if (n->comm) {
            if (st) ncclCommAbort(n->comm);
            else ncclCommDestroy(n->comm);
            n->comm = NULL;
        }
    }
    pthread_mutex_unlock(&n->mu);
    cudaSetDevice(n->device);
    for (int i = 0; i < n->npool; i++)
        cudaEventDestroy(n->pool[i]);
    free(n->pool);
    if (n->stream)
        cudaStreamDestroy(n->stream);
    pthread_mutex_destroy(&n->mu);
    free(n);
    return st;
}
