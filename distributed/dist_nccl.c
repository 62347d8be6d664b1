/* distributed/dist_nccl.c: chunks made on GPUs travel between ranks by NCCL send/recv,
 * GPU to GPU (NVLink, or the network NCCL finds), as tasks of the local graph (see
 * dist_impl.h for the ordering that keeps the one communicator deadlock-free):
 *
 *   nsend     reads the chunk on this rank's NCCL GPU; issues ncclSend on the
 *             communicator's stream after an event on the task's stream;
 *   nrecv     writes the slot's handle on that GPU with ncclRecv;
 *   ndeliver  a final result that came by NCCL, into the owner's handle and/or the
 *             gather destination (a copy on the GPU's stream, or on the host).
 *
 * nsend and nrecv are asynchronous tasks: a poller thread tests the transfers in flight
 * and ends their tasks. A failure (lost peer, another rank's abort) aborts the
 * communicator, which ends whatever is in flight with the error. */
#include "distributed/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "runtime/log.h"

#ifdef CASK_HAVE_NCCL
#include <cuda_runtime.h>
#include "transport/nccl.h"

/* Transfers whose turn came together go as one NCCL group (one enqueue and one
 * launch for all: on the nonblocking communicator each ncclGroupEnd is handed to an
 * NCCL thread and polled until it left ncclInProgress, which is most of the ~0.5 ms a
 * lone transfer cost to issue; xport_nccl_issue_stats measures it). */
#define NCCL_GROUP_MAX 16

typedef struct nccl_flight {
    xport_nccl_xfer *x;
    cask_task_async *tok[NCCL_GROUP_MAX];
    int ntok;
    char what[96];
} nccl_flight;

struct dist_nccl {
    xport_nccl *comm;
    pthread_t poller;
    int started, stop, aborted;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nccl_flight *fl;
    int nfl, capfl;
};

typedef struct nccl_end {
    cask_task_async *tok;
    cask_status st;
    char msg[512];
} nccl_end;

static void *poller_main(void *arg)
{
    cask_dist *dist = arg;
    struct dist_nccl *n = dist->nccl;
    nccl_end *ends = NULL;
    int cap = 0;
    double last_end = 0;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->nfl && !n->stop)
            pthread_cond_wait(&n->cv, &n->mu);
        if (n->stop && !n->nfl)
            break;
        if (cap < n->nfl * NCCL_GROUP_MAX) {
            nccl_end *ne = realloc(ends, (size_t)n->nfl * NCCL_GROUP_MAX * sizeof *ne);
            if (ne) {
                ends = ne;
                cap = n->nfl * NCCL_GROUP_MAX;
            }
        }
        int nend = 0;
        for (int i = 0; i < n->nfl && nend < cap;) {
            nccl_flight *f = &n->fl[i];
            cask_status st = xport_nccl_test(f->x);
            if (st == CASK_ERR_BUSY) {
                i++;
                continue;
            }
            if (nend + f->ntok > cap) {
                i++;
                continue;   /* next round, once ends has room */
            }
            char why[320] = "";
            if (st)
                xport_nccl_error(n->comm, why, sizeof why);
            for (int k = 0; k < f->ntok; k++) {
                nccl_end *e = &ends[nend++];
                e->tok = f->tok[k];
                e->st = st;
                e->msg[0] = 0;
                if (st)
                    snprintf(e->msg, sizeof e->msg, "%s: %s", f->what,
                             why[0] ? why : cask_status_string(st));
            }
            xport_nccl_xfer_free(f->x);
            n->fl[i] = n->fl[--n->nfl];
        }
        /* end them without the lock: an ending may fail the graph, whose hook asks
         * whether transfers are in flight */
        pthread_mutex_unlock(&n->mu);
        for (int i = 0; i < nend; i++)
            cask_task_async_end(ends[i].tok, ends[i].st, ends[i].msg);
        /* transfers run: look again soon. Yield (no sleep) for 200 us after the last
         * completion: a 20 us nanosleep takes ~70 us with the default timer slack, and
         * on a chain of halos every detection delay is on the critical path. */
        double now = dist_now_s();
        if (nend)
            last_end = now;
        else if (now - last_end < 200e-6)
            sched_yield();
        else {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&n->mu);
    }
    pthread_mutex_unlock(&n->mu);
    free(ends);
    return NULL;
}

/* Starts ops[0..k) as one group (under n->mu). On failure their tasks are handed back
 * in fail[0..k). */
static cask_status start_group(struct dist_nccl *n, dist_nccl_op **ops, int k, nccl_end *fail)
{
    dist_nccl_op *op = ops[0];
    if (n->nfl == n->capfl) {
        int cap = n->capfl ? 2 * n->capfl : 16;
        nccl_flight *nf = realloc(n->fl, (size_t)cap * sizeof *nf);
        if (!nf) {
            for (int i = 0; i < k; i++) {
                fail[i] = (nccl_end){ ops[i]->tok, CASK_ERR_NOMEM, "" };
                snprintf(fail[i].msg, sizeof fail[i].msg, "%s: out of memory", ops[i]->what);
            }
            return CASK_ERR_NOMEM;
        }
        n->fl = nf;
        n->capfl = cap;
    }
    xport_nccl_op xo[NCCL_GROUP_MAX];
    void *ev[NCCL_GROUP_MAX];
    for (int i = 0; i < k; i++) {
        xo[i] = (xport_nccl_op){ ops[i]->peer, ops[i]->recv, ops[i]->buf, ops[i]->bytes };
        ev[i] = ops[i]->ev;
    }
    xport_nccl_xfer *x = NULL;
    cask_status st = xport_nccl_start_after(n->comm, xo, k, ev, k, &x);
    if (st) {
        char why[320];
        xport_nccl_error(n->comm, why, sizeof why);
        for (int i = 0; i < k; i++) {
            fail[i] = (nccl_end){ ops[i]->tok, st, "" };
            snprintf(fail[i].msg, sizeof fail[i].msg, "%s: %s", ops[i]->what,
                     why[0] ? why : cask_status_string(st));
        }
        return st;
    }
    nccl_flight *f = &n->fl[n->nfl++];
    f->x = x;
    f->ntok = k;
    for (int i = 0; i < k; i++)
        f->tok[i] = ops[i]->tok;
    snprintf(f->what, sizeof f->what, "%.78s%s", op->what, k > 1 ? " (and its group)" : "");
    return CASK_OK;
}

/* Task of transfer `order`: records where its stream got, then issues every transfer
 * whose turn has come (this one, and those waiting behind it). */
static cask_status issue(cask_task_ctx *ctx, cask_dist_graph *g, uint32_t order, int peer,
                         int recv, size_t bytes, const char *what)
{
    cask_dist *dist = g->dist;
    struct dist_nccl *n = dist->nccl;
    if (!n || !n->comm || order >= g->nccl_here)
        return cask_task_fail(ctx, "%s: no NCCL communicator", what);
    if (cask_task_device(ctx) != dist->nccl_device)
        return cask_task_fail(ctx, "%s: runs on GPU %d, but this rank's NCCL GPU is %d", what,
                              cask_task_device(ctx), dist->nccl_device);
    pthread_mutex_lock(&dist->mu);
    cask_status st = dist_broken(g);
    pthread_mutex_unlock(&dist->mu);
    if (st)
        return cask_task_fail(ctx, "%s", g->error), st;
    dist_nccl_op *op = &g->nccl_ops[order];
    cudaError_t e = cudaSuccess;
    if (!op->ev)
        e = cudaEventCreateWithFlags((cudaEvent_t *)&op->ev, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventRecord((cudaEvent_t)op->ev, (cudaStream_t)cask_task_cuda_stream(ctx));
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "%s: cudaEventRecord: %s", what, cudaGetErrorString(e)),
               CASK_ERR_CUDA;
    op->peer = peer;
    op->recv = recv;
    op->buf = cask_task_buffer(ctx, 0);
    op->bytes = bytes;
    snprintf(op->what, sizeof op->what, "%s", what);
    op->tok = cask_task_async_begin(ctx);
    nccl_end fail[NCCL_GROUP_MAX];
    int failed = 0;
    pthread_mutex_lock(&n->mu);
    op->ready = 1;
    /* every transfer whose turn has come, in order, as groups */
    while (!failed && g->nccl_next < g->nccl_here && g->nccl_ops[g->nccl_next].ready) {
        dist_nccl_op *grp[NCCL_GROUP_MAX];
        int k = 0;
        while (k < NCCL_GROUP_MAX && g->nccl_next < g->nccl_here &&
               g->nccl_ops[g->nccl_next].ready) {
            dist_nccl_op *o = &g->nccl_ops[g->nccl_next++];
            o->ready = 0;
            grp[k++] = o;
        }
        if (start_group(n, grp, k, fail) != CASK_OK)
            failed = k;   /* ending them fails the graph, whose hook ends those behind */
    }
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    for (int i = 0; i < failed; i++)   /* perhaps ours: its token is ended, not returned */
        cask_task_async_end(fail[i].tok, fail[i].st, fail[i].msg);
    return CASK_OK;
}

static cask_status nsend_cuda(cask_task_ctx *ctx)
{
    dist_send *s = dist_xfer_arg_of(ctx);
    char what[96];
    snprintf(what, sizeof what, "ncclSend of chunk #%u from rank %d to rank %d", s->gid,
             s->graph->dist->rank, s->to);
    return issue(ctx, s->graph, s->order, s->to, 0, s->graph->dist->data[s->gid].bytes, what);
}

static cask_status nrecv_cuda(cask_task_ctx *ctx)
{
    dist_slot *s = dist_xfer_arg_of(ctx);
    char what[96];
    snprintf(what, sizeof what, "ncclRecv of chunk #%u from rank %d on rank %d", s->gid,
             s->from, s->graph->dist->rank);
    return issue(ctx, s->graph, s->order, s->from, 1, s->graph->dist->data[s->gid].bytes, what);
}

cask_status dist_nccl_init(cask_dist *dist)
{
    dist->nccl_all = 0;
    if (dist->size < 2)
        return CASK_OK;
    cask_runtime_info info;
    cask_status st = cask_runtime_query(dist->rt, &info);
    if (st)
        return st;
    /* On where every rank has a GPU, unless CASK_DIST_NCCL=0; whether a transfer takes
     * it is dist_route.c's choice (a cost model: measured on 2 H200s, halos took 4x
     * longer by NCCL than through host memory, each transfer costing about 0.5 ms to
     * issue; bench/RESULTS.md 6.5), and dist_route_init turns it off where two ranks
     * share a GPU. */
    const char *env = getenv("CASK_DIST_NCCL");
    int want = info.ngpus > 0 && !info.simulated_gpus && !(env && !strcmp(env, "0"));
    dist->nccl_device = want ? dist->local_rank % info.ngpus : -1;
    void **blobs = NULL;
    size_t *lens = NULL;
    int32_t mine = want;
    st = xport_boot_allgather(dist->boot, "nccl.want", &mine, sizeof mine, &blobs, &lens);
    if (st)
        return st;
    int all = 1;
    for (int r = 0; r < dist->size; r++)
        if (lens[r] != sizeof(int32_t) || !*(int32_t *)blobs[r])
            all = 0;
    xport_boot_free_blobs(dist->boot, blobs, lens);
    dist->nccl_all = all;
    if (!all)
        return CASK_OK;
    cask_kernel_desc ks = { .name = "dist_nccl_send", .cuda = nsend_cuda };
    cask_kernel_desc kr = { .name = "dist_nccl_recv", .cuda = nrecv_cuda };
    cask_kernel_desc kd = { .name = "dist_nccl_deliver", .cuda = dist_xfer_deliver_gpu,
                            .cpu = dist_xfer_deliver_mem };
    if ((st = cask_kernel_register(dist->rt, &ks, &dist->k_nsend)) ||
        (st = cask_kernel_register(dist->rt, &kr, &dist->k_nrecv)) ||
        (st = cask_kernel_register(dist->rt, &kd, &dist->k_ndeliver)))
        return st;
    return CASK_OK;
}

cask_status dist_nccl_ensure(cask_dist *dist, char *err, size_t errlen)
{
    if (dist->nccl)
        return dist->nccl->aborted ? CASK_ERR_STATE : CASK_OK;
    struct dist_nccl *n = calloc(1, sizeof *n);
    if (!n)
        return CASK_ERR_NOMEM;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    dist->nccl = n;
    cask_status st = xport_nccl_create(dist->boot, dist->nccl_device, 0, &n->comm, err, errlen);
    if (st)
        goto fail;
    /* connect every pair now (NCCL connects peers at their first transfer, and both
     * must take part): one byte to and from every rank, in one group */
    void *buf = NULL;
    if (cudaSetDevice(dist->nccl_device) != cudaSuccess ||
        cudaMalloc(&buf, 2 * (size_t)dist->size) != cudaSuccess) {
        snprintf(err, errlen, "cudaMalloc of the connection buffer failed");
        st = CASK_ERR_CUDA;
        goto fail;
    }
    xport_nccl_op *ops = calloc(2 * (size_t)dist->size, sizeof *ops);
    int nops = 0;
    for (int r = 0; ops && r < dist->size; r++)
        if (r != dist->rank) {
            ops[nops++] = (xport_nccl_op){ r, 0, (char *)buf + r, 1 };
            ops[nops++] = (xport_nccl_op){ r, 1, (char *)buf + dist->size + r, 1 };
        }
    xport_nccl_xfer *x = NULL;
    st = ops ? xport_nccl_start(n->comm, ops, nops, NULL, &x) : CASK_ERR_NOMEM;
    if (!st)
        st = xport_nccl_wait(x, 120000);
    if (st)
        xport_nccl_error(n->comm, err, errlen);
    xport_nccl_xfer_free(x);
    free(ops);
    cudaFree(buf);
    if (st)
        goto fail;
    if (pthread_create(&n->poller, NULL, poller_main, dist) != 0) {
        snprintf(err, errlen, "pthread_create failed");
        st = CASK_ERR_NOMEM;
        goto fail;
    }
    n->started = 1;
    log_msg(dist->rt, CASK_LOG_INFO, "rank %d: NCCL communicator on GPU %d", dist->rank,
            dist->nccl_device);
    return CASK_OK;
fail:
    n->aborted = 1;   /* kept, so that later graphs fail alike instead of hanging */
    return st;
}

void dist_nccl_abort(cask_dist *dist, const char *why)
{
    struct dist_nccl *n = dist->nccl;
    if (!n || !n->comm || n->aborted)
        return;
    n->aborted = 1;
    xport_nccl_abort(n->comm, why);
}

int dist_nccl_busy(cask_dist *dist)
{
    struct dist_nccl *n = dist->nccl;
    if (!n)
        return 0;
    pthread_mutex_lock(&n->mu);
    int busy = n->nfl > 0;
    pthread_mutex_unlock(&n->mu);
    return busy;
}

void dist_nccl_run_start(cask_dist_graph *g)
{
    struct dist_nccl *n = g->dist->nccl;
    if (!n || !g->nccl_here)
        return;
    pthread_mutex_lock(&n->mu);
    g->nccl_next = 0;
    for (uint32_t i = 0; i < g->nccl_here; i++)
        g->nccl_ops[i].ready = 0;
    pthread_mutex_unlock(&n->mu);
}

void dist_nccl_end_waiting(cask_dist_graph *g, cask_status st, const char *why)
{
    struct dist_nccl *n = g->dist->nccl;
    if (!n || !g->nccl_here)
        return;
    cask_task_async **tok = malloc(g->nccl_here * sizeof *tok);
    size_t nt = 0;
    pthread_mutex_lock(&n->mu);
    for (uint32_t i = g->nccl_next; tok && i < g->nccl_here; i++)
        if (g->nccl_ops[i].ready) {   /* its task ran, its turn never came */
            g->nccl_ops[i].ready = 0;
            tok[nt++] = g->nccl_ops[i].tok;
        }
    pthread_mutex_unlock(&n->mu);
    for (size_t i = 0; i < nt; i++)
        cask_task_async_end(tok[i], st, why);
    free(tok);
}

void dist_nccl_graph_free(cask_dist_graph *g)
{
    dist_gpux_graph_free(g);   /* before the plan's handles go */
    for (uint32_t i = 0; g->nccl_ops && i < g->nccl_here; i++)
        if (g->nccl_ops[i].ev)
            cudaEventDestroy((cudaEvent_t)g->nccl_ops[i].ev);
    free(g->nccl_ops);
    g->nccl_ops = NULL;
    g->nccl_here = 0;
}

void dist_nccl_finalize(cask_dist *dist)
{
    struct dist_nccl *n = dist->nccl;
    if (!n)
        return;
    if (n->started) {
        pthread_mutex_lock(&n->mu);
        n->stop = 1;
        pthread_cond_signal(&n->cv);
        pthread_mutex_unlock(&n->mu);
        pthread_join(n->poller, NULL);
    }
    if (n->comm) {
        uint64_t calls = 0;
        double sec = 0;
        xport_nccl_issue_stats(n->comm, &calls, &sec);
        if (calls)
            log_msg(dist->rt, CASK_LOG_INFO, "rank %d: NCCL: %llu groups issued, %.1f us each "
                    "to issue", dist->rank, (unsigned long long)calls, 1e6 * sec / (double)calls);
        xport_nccl_destroy(n->comm);
    }
    free(n->fl);
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    free(n);
    dist->nccl = NULL;
}

#else   /* no NCCL: every transfer goes by UCX */

cask_status dist_nccl_init(cask_dist *dist)
{
    dist->nccl_all = 0;
    dist->nccl_device = -1;
    return CASK_OK;
}

cask_status dist_nccl_ensure(cask_dist *dist, char *err, size_t errlen)
{
    (void)dist;
    snprintf(err, errlen, "cask was built without NCCL");
    return CASK_ERR_UNSUPPORTED;
}

void dist_nccl_abort(cask_dist *dist, const char *why) { (void)dist; (void)why; }
void dist_nccl_run_start(cask_dist_graph *g) { (void)g; }
void dist_nccl_end_waiting(cask_dist_graph *g, cask_status st, const char *why)
{
    (void)g; (void)st; (void)why;
}
void dist_nccl_graph_free(cask_dist_graph *g)
{
    dist_gpux_graph_free(g);
    free(g->nccl_ops);
    g->nccl_ops = NULL;
}
int dist_nccl_busy(cask_dist *dist) { (void)dist; return 0; }
void dist_nccl_finalize(cask_dist *dist) { (void)dist; }

#endif
