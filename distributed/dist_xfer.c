/* distributed/dist_xfer.c: the tasks that move chunks between ranks, as nodes of each
 * rank's local cask graph (StarPU-MPI's detached requests, as tasks):
 *
 *   send     reads the version it sends (so a later writer waits for it), posts a UCX
 *            active message from that buffer, and ends when UCX is done with it;
 *   recv     "writes" the landing handle of an incoming version: ends when the copy
 *            has landed (at once if it came before the task started);
 *   deliver  after a final recv: copies the landed result into the owner's handle
 *            and/or the gather destination (unless it landed there directly);
 *   copy     a final version already on this rank, into the owner's handle and/or
 *            the gather destination.
 *
 * send and recv are asynchronous tasks (cask_task_async_begin): they hold no worker
 * while the network works. Data messages are handled here too (dist_on_data): the
 * copy lands in its slot's buffer, or straight into the gather destination when the
 * run it belongs to is the one computing. */
#include "distributed/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/log.h"
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define XFER_PRIORITY 100   /* transfers first: peers wait for them */

/* ---- send ---- */

#ifdef CASK_HAVE_UCX
void dist_xfer_sent(void *arg, cask_status st, const char *why)
{
    dist_send *s = arg;
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
    char msg[320] = "";
    if (!st)
        dist_xlog_send(dist, s, s->run);
    pthread_mutex_lock(&dist->mu);
    g->sends_pending--;
    if (!st && s->staged)   /* the chunk left this rank from host memory */
        g->host_staging[g->run & 1] += dist->data[s->gid].bytes;
    cask_task_async *tok = s->tok;
    s->tok = NULL;
    if (st) {
        snprintf(msg, sizeof msg, "sending chunk #%u to rank %d: %s", s->gid, s->to,
                 why ? why : cask_status_string(st));
        if (!g->send_status) {
            g->send_status = st;
            snprintf(g->send_msg, sizeof g->send_msg, "%s", msg);
        }
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    cask_task_async_end(tok, st, msg);
}
#endif

cask_status dist_xfer_send_host(cask_task_ctx *ctx)
{
    dist_send *s = dist_xfer_arg_of(ctx);
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
#ifdef CASK_HAVE_UCX
    pthread_mutex_lock(&dist->mu);
    cask_status st = dist_broken(g);
    if (!st) {
        g->sends_pending++;
        s->tok = cask_task_async_begin(ctx);
        s->run = g->run;
        s->t_task = s->t_post = dist_xlog_now(dist);
    }
    dist_data_hdr h = { g->id, g->run, s->gid, s->version, dist->epoch };
    pthread_mutex_unlock(&dist->mu);
    if (st)
        return cask_task_fail(ctx, "%s", g->error), st;
    st = xport_ucx_am_send(dist->ucx, s->to, DIST_AM_DATA, &h, sizeof h,
                           cask_task_buffer(ctx, 0), dist->data[s->gid].bytes, dist_xfer_sent,
                           s);
    if (st) {
        pthread_mutex_lock(&dist->mu);
        g->sends_pending--;
        s->tok = NULL;
        pthread_mutex_unlock(&dist->mu);
        cask_task_fail(ctx, "sending chunk #%u to rank %d: %s", s->gid, s->to,
                       st == CASK_ERR_PEER ? dist->err : cask_status_string(st));
        return st;
    }
    return CASK_OK;
#else
    (void)dist;
    return cask_task_fail(ctx, "a transfer between processes, but cask was built without UCX");
#endif
}

/* ---- receive ---- */

cask_task_async **dist_xfer_take_waiting(cask_dist_graph *g, size_t *n)
{
    *n = 0;
    cask_task_async **tok = NULL;
    for (size_t i = 0; i < g->nslots; i++) {
        dist_slot *s = g->slots[i];
        if (!s->waiting)
            continue;
        if (!tok && !(tok = malloc(g->nslots * sizeof *tok)))
            return NULL;   /* cannot happen for long: the peer's loss ends them too */
        tok[(*n)++] = s->waiting;
        s->waiting = NULL;
    }
    return tok;
}

void dist_xfer_end_run(cask_dist_graph *g, cask_task_async **tok, size_t n, cask_status st,
                       const char *why)
{
    dist_nccl_end_waiting(g, st, why);
    for (size_t i = 0; i < n; i++)
        cask_task_async_end(tok[i], st, why);
    free(tok);
    if (dist_nccl_busy(g->dist))
        dist_nccl_abort(g->dist, why);
}

void dist_xfer_on_local_failure(void *arg)
{
    cask_dist_graph *g = arg;
    cask_dist *dist = g->dist;
    char why[160];
    snprintf(why, sizeof why, "rank %d stopped: its graph failed", dist->rank);
    size_t n;
    pthread_mutex_lock(&dist->mu);
    cask_task_async **tok = dist_xfer_take_waiting(g, &n);
    pthread_mutex_unlock(&dist->mu);
    dist_xfer_end_run(g, tok, n, CASK_ERR_CANCELLED, why);
}

cask_status dist_xfer_recv_wait(cask_task_ctx *ctx)
{
    dist_slot *s = dist_xfer_arg_of(ctx);
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
    pthread_mutex_lock(&dist->mu);
    cask_status st = dist_broken(g);
    if (!st && s->arrived_run != g->run) {
        s->waiting = cask_task_async_begin(ctx);
        s->wait_t0 = dist_now_s();
    } else if (!st && dist->xlog) {
        dist_xlog_wait(dist, s, g->run, dist_now_s());
    }
    pthread_mutex_unlock(&dist->mu);
    if (st)
        return cask_task_fail(ctx, "%s", g->error), st;
    return CASK_OK;
}

#ifdef CASK_HAVE_UCX
void dist_xfer_landed(void *arg, cask_status st, const char *why)
{
    dist_slot *s = arg;
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
    char msg[320] = "";
    pthread_mutex_lock(&dist->mu);
    g->recvs_pending--;
    cask_task_async *tok = NULL;
    if (st == CASK_OK) {
        dist_xlog_recv(dist, s, s->landing_run, s->waiting ? s->wait_t0 : 0);
        s->arrived_run = s->landing_run;
        if (s->staged)   /* landed in host memory, for a GPU reader */
            g->host_staging[s->landing_run & 1] += dist->data[s->gid].bytes;
        if (s->waiting && s->arrived_run == g->run) {
            tok = s->waiting;
            s->waiting = NULL;
            g->comm_wait_s += dist_now_s() - s->wait_t0;
        }
    } else {
        snprintf(msg, sizeof msg, "receiving chunk #%u from rank %d: %s", s->gid, s->from,
                 why ? why : cask_status_string(st));
        if (!g->send_status) {
            g->send_status = st;
            snprintf(g->send_msg, sizeof g->send_msg, "%s", msg);
        }
        tok = s->waiting;
        s->waiting = NULL;
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    if (tok)
        cask_task_async_end(tok, st, msg);
}
#endif

void dist_on_data(cask_dist *dist, int from, const dist_data_hdr *h, void *ucx_msg)
{
#ifdef CASK_HAVE_UCX
    xport_ucx_msg *m = ucx_msg;
    pthread_mutex_lock(&dist->mu);
    cask_dist_graph *g = dist_find_graph(dist, h->graph);
    dist_slot *s = g && g->planned ? dist_slot_find(g, h->gid, h->version) : NULL;
    int accept = s && s->from == from && !dist->excluded[from] && h->epoch == dist->epoch &&
                 (h->run == g->run || h->run == g->run + 1) &&
                 m->len == dist->data[h->gid].bytes && s->arrived_run != h->run;
    void *land = NULL;
    if (accept) {
        s->landing_run = h->run;
        s->t_arrive = dist_xlog_now(dist);
        /* a gathered result of the run computing now goes straight to its destination;
         * one of the next run waits in the slot's buffer (the caller may still be
         * reading the destination) */
        s->landing_direct = s->dest && !s->home && g->running && h->run == g->run;
        land = s->gpu_ucx ? s->gbuf : s->landing_direct ? s->dest : s->buf;
        g->recvs_pending++;
    }
    pthread_mutex_unlock(&dist->mu);
    if (!accept) {
        if (s && m->len != dist->data[h->gid].bytes)
            log_msg(dist->rt, CASK_LOG_WARN, "rank %d: chunk #%u from rank %d has %zu bytes, "
                    "expected %zu: dropped", dist->rank, h->gid, from, m->len,
                    dist->data[h->gid].bytes);
        return;   /* a stale run's copy, or a graph gone: dropped */
    }
    cask_status rst = xport_ucx_recv_into_mem(m, land, s->gpu_ucx && !dist->gpu_sim
                                              ? XPORT_UCX_MEM_CUDA : XPORT_UCX_MEM_HOST,
                                              dist_xfer_landed, s);
    if (rst != CASK_OK)
        dist_xfer_landed(s, rst, s->gpu_ucx ? "xport_ucx_recv_into_mem refused the GPU landing "
                         "buffer (the chunk came eagerly, in host memory)"
                         : "xport_ucx_recv_into refused a landing buffer");
#else
    (void)dist; (void)from; (void)h; (void)ucx_msg;
#endif
}

/* ---- final copies ---- */

/* A destination may be the very memory the copy comes from (a gather to the owner
 * into the buffer its handle was registered over): nothing to copy then. */
static void copy_to(void *dst, const void *src, size_t bytes)
{
    if (dst && dst != src)
        memcpy(dst, src, bytes);
}

/* src, a final version in host memory, into each of its places: the gather destination,
 * the same root's other gathers (also, nalso), and home (each may be NULL or none). */
static void copy_out(void *dest, void *const *also, int nalso, void *home, const void *src,
                     size_t bytes)
{
    copy_to(dest, src, bytes);
    for (int i = 0; i < nalso; i++)
        copy_to(also[i], src, bytes);
    copy_to(home, src, bytes);
}

static cask_status deliver_cpu(cask_task_ctx *ctx)
{
    dist_slot *s = dist_xfer_arg_of(ctx);
    size_t bytes = s->graph->dist->data[s->gid].bytes;
    const void *src = s->landing_direct ? s->dest : s->buf;
    copy_out(s->dest, s->also, s->nalso, s->home ? cask_task_buffer(ctx, 0) : NULL, src,
             bytes);
    s->done_run = s->graph->run;   /* read by the compute thread after the run */
    return CASK_OK;
}

/* A final version that came into a GPU replica (NCCL, UCX GPU memory): buffers [0] that
 * replica (R), [1] the owner's handle (W, if home). Copied on the task's stream into the
 * gather destinations (device to host) and home (device to device); the run ends after
 * the stream did (the task completes with it). */
#ifdef CASK_HAVE_CUDA
cask_status dist_xfer_deliver_gpu(cask_task_ctx *ctx)
{
    dist_slot *s = dist_xfer_arg_of(ctx);
    size_t bytes = s->graph->dist->data[s->gid].bytes;
    cudaStream_t stream = (cudaStream_t)cask_task_cuda_stream(ctx);
    const void *src = cask_task_buffer(ctx, 0);
    cudaError_t e = cudaSuccess;
    if (s->dest)
        e = cudaMemcpyAsync(s->dest, src, bytes, cudaMemcpyDeviceToHost, stream);
    for (int i = 0; e == cudaSuccess && i < s->nalso; i++)   /* the same root's other gathers */
        e = cudaMemcpyAsync(s->also[i], src, bytes, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess && s->home)
        e = cudaMemcpyAsync(cask_task_buffer(ctx, 1), src, bytes, cudaMemcpyDeviceToDevice,
                            stream);
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "delivering chunk #%u from rank %d off GPU %d: "
                              "cudaMemcpyAsync: %s", s->gid, s->from, cask_task_device(ctx),
                              cudaGetErrorString(e)), CASK_ERR_CUDA;
    s->done_run = s->graph->run;
    return CASK_OK;
}
#endif

/* The same where the replica is host memory (a simulated GPU's, or read on a CPU). */
cask_status dist_xfer_deliver_mem(cask_task_ctx *ctx)
{
    dist_slot *s = dist_xfer_arg_of(ctx);
    size_t bytes = s->graph->dist->data[s->gid].bytes;
    copy_out(s->dest, s->also, s->nalso, s->home ? cask_task_buffer(ctx, 1) : NULL,
             cask_task_buffer(ctx, 0), bytes);
    s->done_run = s->graph->run;
    return CASK_OK;
}

/* A final version written in place at home: only a mark that it got there (a recovery
 * reads done_run). No data is touched, on a CPU or a GPU alike. */
static cask_status mark_any(cask_task_ctx *ctx)
{
    dist_local_copy *c = dist_xfer_arg_of(ctx);
    c->done_run = c->graph->run;
    return CASK_OK;
}

static cask_status copy_cpu(cask_task_ctx *ctx)
{
    dist_local_copy *c = dist_xfer_arg_of(ctx);
    copy_out(c->dest, c->also, c->nalso, c->to ? cask_task_buffer(ctx, 1) : NULL,
             cask_task_buffer(ctx, 0), cask_task_buffer_size(ctx, 0));
    c->done_run = c->graph->run;
    return CASK_OK;
}

/* ---- adding them to the local graph ---- */

cask_status dist_xfer_register(cask_dist *dist)
{
    static const struct { const char *name; cask_kernel_fn fn; size_t off; } k[] = {
        { "dist_send", dist_xfer_send_host, offsetof(cask_dist, k_send) },
        { "dist_recv", dist_xfer_recv_wait, offsetof(cask_dist, k_recv) },
        { "dist_deliver", deliver_cpu, offsetof(cask_dist, k_deliver) },
        { "dist_copy", copy_cpu, offsetof(cask_dist, k_copy) },
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        cask_kernel_desc d = { .name = k[i].name, .cpu = k[i].fn };
        cask_status st = cask_kernel_register(dist->rt, &d, (cask_kernel **)((char *)dist + k[i].off));
        if (st)
            return st;
    }
    cask_kernel_desc m = { .name = "dist_mark", .cpu = mark_any };
#ifdef CASK_HAVE_CUDA
    m.cuda = mark_any;   /* no CUDA call: the task only orders after the writer */
#endif
    return cask_kernel_register(dist->rt, &m, &dist->k_mark);
}

/* where: CASK_WHERE_CPU, or (gpu) this rank's GPU (that of its NCCL communicator) */
static cask_status add_on(cask_dist_graph *g, cask_kernel *k, void *p, const cask_access *acc,
                          int nacc, const char *name, int gpu, cask_task **out)
{
    int device = g->dist->nccl_device >= 0 ? g->dist->nccl_device : g->dist->gpu_device;
    dist_xfer_arg a = { p };
    cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY | CASK_TASK_NAME |
                                       CASK_TASK_WHERE | (gpu ? CASK_TASK_DEVICE : 0),
                         .kernel = k, .access = acc, .naccess = nacc, .args = &a,
                         .args_size = sizeof a, .priority = XFER_PRIORITY, .name = name,
                         .where = gpu ? CASK_WHERE_GPU : CASK_WHERE_CPU,
                         .device = device };
    cask_status st = cask_graph_add_task(g->local, &d, out);
    if (st)
        dist_graph_error(g, "rank %d: adding the task %s: %s", g->dist->rank, name,
                         cask_status_string(st));
    return st;
}

static cask_status add(cask_dist_graph *g, cask_kernel *k, void *p, const cask_access *acc,
                       int nacc, const char *name, cask_task **out)
{
    return add_on(g, k, p, acc, nacc, name, 0, out);
}

cask_status dist_xfer_add_exchange(cask_dist_graph *g, int e, size_t *send_i, size_t *slot_i)
{
    cask_dist *dist = g->dist;
    char name[96];
    cask_status st = CASK_OK;
    for (; *send_i < g->nsends && g->sends[*send_i].exchange == e && !st; (*send_i)++) {
        dist_send *s = &g->sends[*send_i];
        snprintf(name, sizeof name, "%ssend #%u.v%u %d>%d",
                 s->nccl ? "nccl " : s->gpu_ucx ? "gpu " : "", s->gid, s->version, dist->rank,
                 s->to);
        cask_access acc = { s->h, CASK_READ };
        st = add_on(g, s->nccl ? dist->k_nsend : s->gpu_ucx ? dist->k_gsend : dist->k_send, s,
                    &acc, 1, name, s->nccl || s->gpu_ucx, NULL);
    }
    for (; *slot_i < g->nslots && g->slots[*slot_i]->exchange == e && !st; (*slot_i)++) {
        dist_slot *s = g->slots[*slot_i];
        snprintf(name, sizeof name, "%srecv #%u.v%u %d>%d",
                 s->nccl ? "nccl " : s->gpu_ucx ? "gpu " : "", s->gid, s->version, s->from,
                 dist->rank);
        if (s->gpu_ucx) {   /* lands in h's pinned GPU replica; the task makes it valid */
            cask_access acc = { s->h, CASK_WRITE };
            st = dist_gpux_pin(g, s);
            if (!st)
                st = add_on(g, dist->k_grecv, s, &acc, 1, name, 1, NULL);
            if (st || !s->dest)
                continue;
            /* a gather's (never home: dist_plan_final.c): off the GPU into its destinations */
            cask_access dacc = { s->h, CASK_READ };
            snprintf(name, sizeof name, "deliver #%u.v%u", s->gid, s->version);
            st = add_on(g, dist->k_gdeliver, s, &dacc, 1, name, 1, NULL);
            continue;
        }
        if (s->nccl) {   /* into s->h on the GPU; a final one is then delivered */
            cask_access acc = { s->h, CASK_WRITE };
            st = add_on(g, dist->k_nrecv, s, &acc, 1, name, 1, NULL);
            if (st || (!s->home && !s->dest))
                continue;
            cask_access dacc[2] = { { s->h, CASK_READ }, { s->home, CASK_WRITE } };
            snprintf(name, sizeof name, "deliver #%u.v%u", s->gid, s->version);
            st = add_on(g, dist->k_ndeliver, s, dacc, s->home ? 2 : 1, name, 0, NULL);
            continue;
        }
        if (!s->home && !s->dest) {
            cask_access acc = { s->h, CASK_WRITE };
            st = add(g, dist->k_recv, s, &acc, 1, name, NULL);
            continue;
        }
        cask_task *recv = NULL, *deliver = NULL;
        st = add(g, dist->k_recv, s, NULL, 0, name, &recv);
        snprintf(name, sizeof name, "deliver #%u.v%u", s->gid, s->version);
        cask_access acc = { s->home, CASK_WRITE };
        if (!st)
            st = add(g, dist->k_deliver, s, &acc, s->home ? 1 : 0, name, &deliver);
        if (!st)
            st = cask_task_depend(deliver, recv);
    }
    return st;
}

static int by_seq(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return (*x >> 32) < (*y >> 32) ? -1 : (*x >> 32) > (*y >> 32);
}

cask_status dist_xfer_order_nccl(cask_dist_graph *g)
{
    /* (seq << 32 | index into ord), sorted: a transfer's rank among this rank's */
    size_t n = 0;
    uint64_t *key = malloc((g->nsends + g->nslots + 1) * sizeof *key);
    uint32_t **ord = malloc((g->nsends + g->nslots + 1) * sizeof *ord);
    cask_status st = key && ord ? CASK_OK : CASK_ERR_NOMEM;
    for (size_t i = 0; !st && i < g->nsends; i++)
        if (g->sends[i].nccl) {
            key[n] = (uint64_t)g->sends[i].seq << 32 | n;
            ord[n++] = &g->sends[i].order;
        }
    for (size_t i = 0; !st && i < g->nslots; i++)
        if (g->slots[i]->nccl) {
            key[n] = (uint64_t)g->slots[i]->seq << 32 | n;
            ord[n++] = &g->slots[i]->order;
        }
    if (!st) {
        qsort(key, n, sizeof *key, by_seq);
        for (size_t i = 0; i < n; i++)
            *ord[key[i] & 0xffffffffu] = (uint32_t)i;
        g->nccl_here = (uint32_t)n;
        if (n && !(g->nccl_ops = calloc(n, sizeof *g->nccl_ops)))
            st = CASK_ERR_NOMEM;
    }
    free(key);
    free(ord);
    return st;
}

cask_status dist_xfer_add_copies(cask_dist_graph *g)
{
    char name[64];
    cask_status st = CASK_OK;
    cask_runtime_info info;
    int gpus = cask_runtime_query(g->dist->rt, &info) == CASK_OK && info.ngpus > 0;
    for (size_t i = 0; i < g->ncopies && !st; i++) {
        dist_local_copy *c = &g->copies[i];
        cask_access acc[2] = { { c->from, CASK_READ }, { c->to, CASK_WRITE } };
        if (!c->to && !c->dest && !c->nalso) {
            /* a mark: where the version is (a CPU task reading a GPU-made chunk would
             * copy it off the GPU, hundreds of MB a compute for cask-jacobi's blocks) */
            snprintf(name, sizeof name, "mark home %zu", i);
            cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY |
                                               CASK_TASK_NAME | CASK_TASK_WHERE,
                                 .kernel = g->dist->k_mark, .access = acc, .naccess = 1,
                                 .args = &(dist_xfer_arg){ c }, .args_size = sizeof(dist_xfer_arg),
                                 .priority = XFER_PRIORITY, .name = name,
                                 .where = c->gpu_made && gpus ? CASK_WHERE_GPU : CASK_WHERE_CPU };
            st = cask_graph_add_task(g->local, &d, NULL);
            if (st)
                dist_graph_error(g, "rank %d: adding the task %s: %s", g->dist->rank, name,
                                 cask_status_string(st));
            continue;
        }
        snprintf(name, sizeof name, "copy home %zu", i);
        st = add(g, g->dist->k_copy, c, acc, c->to ? 2 : 1, name, NULL);
    }
    return st;
}
