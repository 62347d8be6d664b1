/* transport/ucx_thread.c: the UCX progress thread's loop: it sleeps in epoll on the
 * worker's event fd and a wake-up eventfd (half a heartbeat at most, or spins a little
 * after activity), progresses UCX, issues what other threads queued, ticks heartbeats,
 * and at the end says goodbye to each live peer once its sends are done. After the
 * thread stopped, ucx_cancel_all ends whatever is left. See ucx.h. */
#include "transport/ucx_impl.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static int sends_in_flight(const ucx_peer *p)
{
    for (const ucx_op *op = p->inflight; op; op = op->fnext)
        if (op->kind == OP_SEND)
            return 1;
    return 0;
}

static void send_byes(xport_ucx *x, int *pending)
{
    *pending = 0;
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        if (p->bye_sent || atomic_load(&p->state) == PEER_DEAD)
            continue;
        uint64_t committed = 0;
        if (p->q_head || sends_in_flight(p) || !ucx_ring_close_bye(x, p, &committed)) {
            (*pending)++;
            continue;
        }
        /* says how many entries its ring from us carried: it reads them all first */
        ucx_ctrl_args a = { { committed, p->rtx.init ? 1u : 0u } };
        ucx_send_ctrl_args(x, p, CTRL_BYE, &a);
        p->bye_sent = 1;
    }
}

__thread const xport_ucx *ucx_progress_of;

void *ucx_progress_main(void *arg)
{
    xport_ucx *x = arg;
    ucx_progress_of = x;
    if (x->thread_init)
        x->thread_init(x->thread_init_arg);   /* e.g. the GPU whose memory UCX moves */
    struct epoll_event evs[4];
    uint64_t spin_until = 0;
    uint64_t tick_ns = (uint64_t)x->heartbeat_ms * 1000000ull / 2;
    int byes_pending = 0;
    pthread_mutex_lock(&x->lock);
    while (!atomic_load(&x->stop)) {
        int work = 0;
        x->need_progress = 0;
        if (atomic_exchange(&x->cmd_hello, 0))
            for (int r = 0; r < x->size; r++) {
                /* says whether we mapped its segment (it may then send us blocks) and
                 * read its ring toward us (it may then send us messages there) */
                ucx_ctrl_args a = { { x->peers[r].seg_map ? 1u : 0u,
                                      ucx_ring_reads(&x->peers[r]) ? 1u : 0u } };
                ucx_send_ctrl_args(x, &x->peers[r], CTRL_HELLO, &a);
            }
        /* Sends handed over before the goodbye was asked for go first: read the
         * request, then drain (whatever was pushed before it is visible now). */
        int bye_now = atomic_exchange(&x->cmd_bye, 0);
        work += ucx_drain_submit(x);
        work += ucx_ring_poll(x);
        if (bye_now || byes_pending)
            send_byes(x, &byes_pending);
        work += ucx_progress_drain(x);
        if (x->has_ep_errors)
            ucx_handle_ep_errors(x);
        uint64_t now = ucx_now_ns();
        if (now >= x->next_tick_ns) {
            ucx_ring_tick(x, now);
            ucx_tick(x, now);
            ucx_seg_tick(x);
            x->next_tick_ns = now + tick_ns;
        }
        if (work) {
            spin_until = now + (uint64_t)x->spin_us * 1000ull;
            continue;
        }
        if (now < spin_until || byes_pending)
            continue;
        if (x->cuda_inflight > 0 && x->cuda_poll_us >= 0) {
            /* UCX notices a CUDA copy's end only when progressed: poll, with a nap that
             * leaves the CUDA driver to the GPU workers between rounds */
            pthread_mutex_unlock(&x->lock);
            if (x->cuda_poll_us > 0) {
                struct timespec ts = { 0, (long)x->cuda_poll_us * 1000L };
                nanosleep(&ts, NULL);
            } else {
                sched_yield();
            }
            pthread_mutex_lock(&x->lock);
            continue;
        }
        ucs_status_t s = ucp_worker_arm(x->worker);
        if (s == UCS_ERR_BUSY) {
            /* UCX has events that progress did not take (seen while a peer's endpoint
             * closes): let a thread waiting for the lock have it between tries */
            pthread_mutex_unlock(&x->lock);
            sched_yield();
            pthread_mutex_lock(&x->lock);
            continue;
        }
        int timeout_ms = (int)((x->next_tick_ns - now) / 1000000ull) + 1;
        if (s != UCS_OK) {
            ucx_record_error(x, "ucp_worker_arm on rank %d: %s (polling instead)", x->rank,
                             ucs_status_string(s));
            timeout_ms = 1;
        }
        atomic_store(&x->sleeping, 1);
        ucx_ring_sleep(x);   /* peers that fill our rings ring the bell from now on */
        if (atomic_load(&x->submit) || atomic_load(&x->cmd_hello) ||
            atomic_load(&x->cmd_bye) || atomic_load(&x->stop) || ucx_ring_pending(x)) {
            atomic_store(&x->sleeping, 0);
            ucx_ring_awake(x);
            continue;
        }
        pthread_mutex_unlock(&x->lock);   /* senders may use the worker meanwhile */
        int n = epoll_wait(x->epfd, evs, 4, timeout_ms);
        pthread_mutex_lock(&x->lock);
        atomic_store(&x->sleeping, 0);
        ucx_ring_awake(x);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == x->wakefd) {
                uint64_t v;
                ssize_t rr = read(x->wakefd, &v, sizeof v);
                (void)rr;
            } else if (evs[i].data.fd == x->bell[0]) {
                ucx_ring_bell_drain(x);
            }
        }
    }
    pthread_mutex_unlock(&x->lock);
    return NULL;
}

/* After the progress thread stopped: everything not finished is cancelled. */
void ucx_cancel_all(xport_ucx *x)
{
    const char *why = "transport closed before the operation finished";
    ucx_ring_cancel_all(x, why);
    ucx_op *list = atomic_exchange(&x->submit, NULL);
    while (list) {
        ucx_op *n = list->next;
        ucx_call_done(list, CASK_ERR_CANCELLED, why);
        free(list);
        list = n;
    }
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        while (p->q_head) {
            ucx_op *op = p->q_head;
            p->q_head = op->next;
            ucx_call_done(op, CASK_ERR_CANCELLED, why);
            free(op);
        }
        p->q_tail = NULL;
        p->q_len = 0;
        /* Each op leaves the list now; its request stays UCX's until its callback,
         * which frees the op (a receive's at the cancel, a send's when its endpoint
         * closes). Freeing them here, as before, let that later callback use the freed
         * op. One whose callback never comes is left to the process's end. */
        while (p->inflight) {
            ucx_op *op = p->inflight;
            void *req = op->req;
            inflight_remove(p, op);
            ucx_call_done(op, CASK_ERR_CANCELLED, why);
            ucp_request_cancel(x->worker, req);   /* may free op */
        }
    }
}
