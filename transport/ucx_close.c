/* transport/ucx_close.c: teardown of the UCX transport: goodbyes with every live peer,
 * then endpoints, worker, context and the shared-memory segment, each timed as a phase
 * of shutdown. Set-up is in ucx.c. */
#include "transport/ucx_impl.h"
#include "runtime/deadline.h"
#include "runtime/phases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Progresses the worker from this thread (the progress thread has stopped) until
 * every request in reqs completed or the deadline passed; frees them. */
static void wait_requests(xport_ucx *x, void **reqs, int n, int ms)
{
    uint64_t end = ucx_now_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n; i++) {
            if (!reqs[i])
                continue;
            if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
                ucp_request_free(reqs[i]);
                reqs[i] = NULL;
            } else {
                pending++;
            }
        }
        if (!pending || ucx_now_ns() > end)
            break;
        ucx_progress_worker(x);
    }
    for (int i = 0; i < n; i++)
        if (reqs[i])
            ucp_request_free(reqs[i]);
}

static void close_endpoints(xport_ucx *x)
{
    void **reqs = calloc((size_t)x->size * 2, sizeof *reqs);
    int n = 0;
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        if (p->close_req) {
            if (reqs) reqs[n++] = p->close_req;
            else ucp_request_free(p->close_req);
            p->close_req = NULL;
        }
        if (!p->ep)
            continue;
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof prm);
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = atomic_load(&p->state) == PEER_DEAD ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        void *req = ucp_ep_close_nbx(p->ep, &prm);
        p->ep = NULL;
        if (UCS_PTR_IS_PTR(req)) {
            if (reqs) reqs[n++] = req;
            else ucp_request_free(req);
        }
    }
    if (reqs) {
        wait_requests(x, reqs, n, 3000);
        free(reqs);
    }
}

cask_status xport_ucx_destroy(xport_ucx *x, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!x)
        return CASK_OK;
    cask_status st = CASK_OK;
    uint64_t t = ucx_now_ns();
    atomic_store(&x->closing, 1);
    if (x->thread_started) {
        /* Say goodbye and wait for everybody's: after that no live peer sends to us,
         * and endpoints closing is no failure. */
        atomic_store(&x->cmd_bye, 1);
        ucx_wake(x);
        struct timespec dl;
        deadline_in(&dl, ucx_handshake_ms(x));
        int rc = 0;
        pthread_mutex_lock(&x->mu);
        for (;;) {
            int waiting = 0;
            for (int r = 0; r < x->size; r++) {
                ucx_peer *p = &x->peers[r];
                int state = atomic_load(&p->state);
                if (!p->bye && state == PEER_ALIVE)
                    waiting++;   /* for its goodbye */
                else if (!atomic_load(&p->bye_done) && state != PEER_DEAD)
                    waiting++;   /* for ours to leave: stopping would cancel it */
            }
            if (!waiting || rc)
                break;
            rc = pthread_cond_timedwait(&x->cv, &x->mu, &dl);
        }
        if (x->dead || rc)
            st = CASK_ERR_PEER;
        pthread_mutex_unlock(&x->mu);
        if (rc) {   /* say why: which peer, and what was still pending with it */
            pthread_mutex_lock(&x->lock);
            for (int r = 0; r < x->size; r++) {
                ucx_peer *p = &x->peers[r];
                if (p->bye || atomic_load(&p->state) != PEER_ALIVE)
                    continue;
                int inflight = 0;
                for (ucx_op *op = p->inflight; op; op = op->fnext)
                    inflight++;
                ucx_record_error(x, "rank %d: no goodbye from rank %d within %d ms (ours %s; "
                                 "%zu sends waiting for credits, %d in flight, %d credits)",
                                 x->rank, r, ucx_handshake_ms(x), p->bye_sent ? "sent" : "not sent",
                                 p->q_len, inflight, p->credits);
            }
            pthread_mutex_unlock(&x->lock);
        }
        atomic_store(&x->connected, 0);
        atomic_store(&x->stop, 1);
        ucx_wake(x);
        pthread_join(x->thread, NULL);
        x->thread_started = 0;
    }
    atomic_store(&x->connected, 0);
    pthread_mutex_lock(&x->lock);      /* a sender caught in the act finishes first */
    pthread_mutex_unlock(&x->lock);
    ucx_phase_end(x, PHASE_GOODBYE, &t);
    if (x->worker) {
        ucx_cancel_all(x);
        close_endpoints(x);
        ucx_phase_end(x, PHASE_ENDPOINTS, &t);
        if (x->addr)
            ucp_worker_release_address(x->worker, x->addr);
        ucp_worker_destroy(x->worker);
    }
    if (x->ctx)
        ucp_cleanup(x->ctx);
    ucx_seg_teardown(x);
    ucx_phase_end(x, PHASE_UCX_TEARDOWN, &t);
    if (x->epfd >= 0) close(x->epfd);
    if (x->wakefd >= 0) close(x->wakefd);
    for (unsigned i = 0; i < XPORT_UCX_MAX_AM; i++)
        free(atomic_load(&x->handlers[i]));
    while (x->retired) {
        ucx_handler *h = x->retired;
        x->retired = h->retired;
        free(h);
    }
    if (st && err && errlen)
        snprintf(err, errlen, "%s", x->err[0] ? x->err : "a peer failed");
    free(x->peers);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    pthread_mutex_destroy(&x->hmu);
    pthread_mutex_destroy(&x->lock);
    free(x);
    return st;
}
