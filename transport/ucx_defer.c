/* transport/ucx_defer.c: no UCX call from inside UCX's own callbacks (ucx_impl.h).
 *
 * Handlers and completion callbacks run inside ucp_worker_progress. What they ask of
 * UCX (a send: a credit, a reply, a forward to a third rank; a rendezvous receive) is
 * kept here, in order, and made once ucp_worker_progress returned. The reason is UCX
 * 1.13's TCP transport: a send that fails (a peer was killed: ECONNRESET) closes its
 * endpoint at once, inside the send (uct_tcp_ep_set_failed: state CLOSED, error
 * handler), while uct_tcp_iface_progress may be half way through an epoll batch that
 * still holds an event of that endpoint; the batch then aborts the process in UCX's
 * assertion tcp_iface.c:307 (`ep->conn_state != UCT_TCP_EP_CONN_STATE_CLOSED`).
 * Later UCX defers that closing to the worker's progress itself. Made outside the
 * progress, a failing send closes an endpoint whose events nobody holds any more.
 *
 * Everything here runs under x->lock: on the progress thread, or in xport_ucx_destroy
 * after it stopped. */
#include "transport/ucx_impl.h"

void ucx_defer(xport_ucx *x, ucx_op *op)
{
    op->next = NULL;
    if (x->defer_tail)
        x->defer_tail->next = op;
    else
        x->defer_head = op;
    x->defer_tail = op;
}

/* Makes the calls put off, in the order they were asked for; those made now may put
 * off nothing (x->in_progress is clear). */
static void run_deferred(xport_ucx *x)
{
    while (x->defer_head) {
        ucx_op *op = x->defer_head;
        x->defer_head = op->next;
        if (!x->defer_head)
            x->defer_tail = NULL;
        op->next = NULL;
        if (op->kind == OP_RECV)
            ucx_recv_post(x, op);
        else
            ucx_issue_now(x, &x->peers[op->peer], op);
    }
}

unsigned ucx_progress_worker(xport_ucx *x)
{
    x->in_progress = 1;
    unsigned n = ucp_worker_progress(x->worker);
    x->in_progress = 0;
    if (x->defer_head) {
        run_deferred(x);
        n++;   /* the caller progresses again: the calls made may have completed */
    }
    return n;
}

int ucx_progress_drain(xport_ucx *x)
{
    int work = 0;
    while (ucx_progress_worker(x))
        work++;
    return work;
}
