/* replay_cuda.c: the CUDA side of graph replays (graph_replay.h): recording a graph's
 * tasks into a CUDA graph by stream capture, instantiating or updating it, launching
 * it, and the stand-in's wait. Every CUDA call's return is checked and turned into a
 * cask_status with a message naming the call.
 *
 * Recording calls each task's CUDA implementation, in topological order, on one stream
 * under capture (thread-local mode: a kernel that synchronises or allocates makes the
 * capture fail, not the run). Before each task the stream's capture dependencies are set
 * to the last nodes of its predecessors' work (cudaStreamUpdateCaptureDependencies), or
 * to an empty root node for a task without predecessors; after it, the stream's
 * dependencies are that task's last nodes. So the CUDA graph has the cask graph's edges,
 * and for tasks without predecessors one more: each follows the previous such task of
 * its lane (the GPU's stream count of lanes, round robin), as on the usual path's
 * streams; a graph as wide as its independent tasks launches at half the speed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "runtime/graph_replay.h"
#include "runtime/data.h"
#include "runtime/log.h"
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#ifdef CASK_HAVE_CUDA

struct replay_exec {
    int gpu;
    cudaStream_t stream;        /* launches */
    cudaStream_t cap;           /* captures */
    cudaEvent_t done;           /* end of the last launch */
    cudaGraphExec_t exec;
    cudaGraphNode_t *ends;      /* recording: each task's last nodes (end_start[id]..) */
    size_t nends, ends_cap;
    size_t *end_rng;            /* task id i's last nodes: ends[end_rng[2i] .. end_rng[2i+1]) */
    cudaGraphNode_t *deps;      /* recording: one task's dependencies */
    size_t deps_cap;
};

/* Log the failed call and give its status (the caller's message says what it was for). */
#define CU(call, what)                                                                   \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            cudaGetLastError();                                                          \
            snprintf(msg, len, "%s: %s: %s", what, #call, cudaGetErrorString(e_));       \
            st = CASK_ERR_CUDA;                                                          \
            goto fail;                                                                   \
        }                                                                                \
    } while (0)

/* The current device of the calling thread is the user's: set it back after. */
typedef struct dev_guard {
    int old;
    int ok;
} dev_guard;

static cudaError_t guard_enter(dev_guard *gd, int gpu)
{
    gd->ok = cudaGetDevice(&gd->old) == cudaSuccess;
    if (!gd->ok)
        cudaGetLastError();
    return cudaSetDevice(gpu);
}

static void guard_leave(dev_guard *gd)
{
    if (gd->ok && cudaSetDevice(gd->old) != cudaSuccess)
        cudaGetLastError();
}

cask_status replay_exec_create(cask_runtime *rt, int gpu, struct replay_exec **out)
{
    char msg[256];
    size_t len = sizeof msg;
    cask_status st = CASK_OK;
    dev_guard gd;
    struct replay_exec *x = calloc(1, sizeof *x);
    if (!x)
        return log_error(rt, CASK_ERR_NOMEM, "graph replay: its streams");
    x->gpu = gpu;
    CU(guard_enter(&gd, gpu), "graph replay: its GPU");
    CU(cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking), "graph replay: its stream");
    CU(cudaStreamCreateWithFlags(&x->cap, cudaStreamNonBlocking), "graph replay: its capture stream");
    CU(cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming), "graph replay: its event");
    guard_leave(&gd);
    *out = x;
    return CASK_OK;
fail:
    guard_leave(&gd);
    replay_exec_destroy(rt, x);
    return log_error(rt, st, "%s", msg);
}

void replay_exec_destroy(cask_runtime *rt, struct replay_exec *x)
{
    (void)rt;
    if (!x)
        return;
    dev_guard gd;
    if (guard_enter(&gd, x->gpu) != cudaSuccess)
        cudaGetLastError();
    /* nothing of it may be in flight: graphs are destroyed idle, and shutdown waits */
    if (x->exec && cudaGraphExecDestroy(x->exec) != cudaSuccess)
        cudaGetLastError();
    if (x->done && cudaEventDestroy(x->done) != cudaSuccess)
        cudaGetLastError();
    if (x->stream && cudaStreamDestroy(x->stream) != cudaSuccess)
        cudaGetLastError();
    if (x->cap && cudaStreamDestroy(x->cap) != cudaSuccess)
        cudaGetLastError();
    guard_leave(&gd);
    free(x->ends);
    free(x->end_rng);
    free(x->deps);
    free(x);
}

void *replay_exec_stream(struct replay_exec *x)
{
    return x->stream;
}

static int grow(void **a, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*a, c * elem);
    if (!n)
        return -1;
    *a = n;
    *cap = c;
    return 0;
}

static int cmp_node(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const cudaGraphNode_t *)a, y = (uintptr_t)*(const cudaGraphNode_t *)b;
    return x < y ? -1 : x > y;
}

/* CUDA 13 gives capture dependencies with edge data; 12.x without. */
#if CUDART_VERSION >= 13000
#define CAPTURE_INFO(s, stp, deps, n) cudaStreamGetCaptureInfo((s), (stp), NULL, NULL, (deps), NULL, (n))
#define CAPTURE_SET(s, deps, n) \
    cudaStreamUpdateCaptureDependencies((s), (deps), NULL, (n), cudaStreamSetCaptureDependencies)
#define CAPTURE_GRAPH(s, stp, g) cudaStreamGetCaptureInfo((s), (stp), NULL, (g), NULL, NULL, NULL)
#else
#define CAPTURE_INFO(s, stp, deps, n) cudaStreamGetCaptureInfo((s), (stp), NULL, NULL, (deps), (n))
#define CAPTURE_SET(s, deps, n) \
    cudaStreamUpdateCaptureDependencies((s), (deps), (n), cudaStreamSetCaptureDependencies)
#define CAPTURE_GRAPH(s, stp, g) cudaStreamGetCaptureInfo((s), (stp), NULL, (g), NULL, NULL)
#endif

cask_status replay_record(cask_runtime *rt, graph_replay *p, int *updated, char *msg, size_t len)
{
    struct replay_exec *x = p->x;
    cask_status st = CASK_OK;
    cudaGraph_t graph = NULL, cg = NULL;
    cudaGraphNode_t root = NULL;
    int capturing = 0;
    dev_guard gd;
    *updated = 0;
    size_t n = p->ntasks;
    /* Tasks without predecessors go round the GPU's stream count of lanes, each after the
       previous one of its lane: the concurrency the usual path has on its streams, and a
       graph as narrow. 100,000 independent empty kernels as 100,000 branches of one root
       launched at 0.645 M/s on an H200, chained ones at 1.14 M/s. */
    size_t lane_last[32], nroots = 0;
    int nlanes = rt->cfg.gpu_streams >= 1 && rt->cfg.gpu_streams <= 32 ? rt->cfg.gpu_streams : 4;
    for (int l = 0; l < 32; l++)
        lane_last[l] = SIZE_MAX;
    if (!x->end_rng && !(x->end_rng = malloc((2 * n + 1) * sizeof *x->end_rng))) {
        snprintf(msg, len, "out of memory");
        return CASK_ERR_NOMEM;
    }
    x->nends = 0;
    CU(guard_enter(&gd, p->device), "recording: its GPU");
    CU(cudaStreamBeginCapture(x->cap, cudaStreamCaptureModeThreadLocal), "recording");
    capturing = 1;
    enum cudaStreamCaptureStatus cs;
    CU(CAPTURE_GRAPH(x->cap, &cs, &cg), "recording: the graph captured");
    CU(cudaGraphAddEmptyNode(&root, cg, NULL, 0), "recording: the root node");
    for (size_t k = 0; k < n; k++) {
        cask_task *t = p->order[k];
        /* its dependencies: the last nodes of its predecessors, each once */
        size_t nd = 0;
        for (uint32_t e = p->pred_start[t->id]; e < p->pred_start[t->id + 1]; e++) {
            uint32_t q = p->pred[e];
            size_t a = x->end_rng[2 * q], b = x->end_rng[2 * q + 1];
            if (grow((void **)&x->deps, &x->deps_cap, nd + (b - a), sizeof *x->deps)) {
                snprintf(msg, len, "out of memory");
                st = CASK_ERR_NOMEM;
                goto fail;
            }
            memcpy(x->deps + nd, x->ends + a, (b - a) * sizeof *x->deps);
            nd += b - a;
        }
        if (nd > 1) {
            qsort(x->deps, nd, sizeof *x->deps, cmp_node);
            size_t u = 1;
            for (size_t i = 1; i < nd; i++)
                if (x->deps[i] != x->deps[u - 1])
                    x->deps[u++] = x->deps[i];
            nd = u;
        }
        if (nd == 0) {   /* a task without predecessors: after the last one of its lane */
            int lane = (int)(nroots++ % (size_t)nlanes);
            size_t a = 0, b = 0;
            if (lane_last[lane] != SIZE_MAX) {
                a = x->end_rng[2 * lane_last[lane]];
                b = x->end_rng[2 * lane_last[lane] + 1];
            }
            if (grow((void **)&x->deps, &x->deps_cap, b > a ? b - a : 1, sizeof *x->deps)) {
                snprintf(msg, len, "out of memory");
                st = CASK_ERR_NOMEM;
                goto fail;
            }
            if (b > a) {
                memcpy(x->deps, x->ends + a, (b - a) * sizeof *x->deps);
                nd = b - a;
            } else {
                x->deps[0] = root;
                nd = 1;
            }
            lane_last[lane] = t->id;
        }
        CU(CAPTURE_SET(x->cap, x->deps, nd), "recording: a task's dependencies");
        cask_task_ctx ctx;
        task_ctx_init(&ctx, t, p->device, p->worker, x->cap);
        for (int i = 0; i < t->naccess; i++) {
            cask_data *d = t->access[i].data;
            ctx.buf[i] = d->rep[1 + p->device].ptr;   /* pinned: it stays there */
            ctx.size[i] = d->bytes;
        }
        cask_status kst = t->kernel->cuda(&ctx);
        if (kst || ctx.async || ctx.sub) {
            char d[256];
            graph_describe_task(t, d, sizeof d);
            snprintf(msg, len, "%s cannot be captured: %s", d,
                     kst ? (ctx.has_msg ? ctx.msg : cask_status_string(kst))
                         : ctx.async ? "it is asynchronous" : "it spawns tasks");
            st = kst ? kst : CASK_ERR_UNSUPPORTED;
            goto fail;
        }
        const cudaGraphNode_t *last = NULL;
        size_t nl = 0;
        CU(CAPTURE_INFO(x->cap, &cs, &last, &nl), "recording: a task's last nodes");
        if (cs != cudaStreamCaptureStatusActive) {
            char d[256];
            graph_describe_task(t, d, sizeof d);
            snprintf(msg, len, "%s ended the capture (it synchronises or allocates?)", d);
            st = CASK_ERR_UNSUPPORTED;
            goto fail;
        }
        x->end_rng[2 * t->id] = x->nends;
        if (grow((void **)&x->ends, &x->ends_cap, x->nends + nl, sizeof *x->ends)) {
            snprintf(msg, len, "out of memory");
            st = CASK_ERR_NOMEM;
            goto fail;
        }
        memcpy(x->ends + x->nends, last, nl * sizeof *x->ends);
        x->nends += nl;
        x->end_rng[2 * t->id + 1] = x->nends;
    }
    capturing = 0;
    CU(cudaStreamEndCapture(x->cap, &graph), "recording: the end of the capture");
    if (x->exec) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(x->exec, graph, &info) == cudaSuccess) {
            *updated = 1;
        } else {   /* refused (its shape differs): instantiated anew below */
            cudaGetLastError();
            cudaGraphExec_t old = x->exec;
            x->exec = NULL;
            CU(cudaGraphExecDestroy(old), "recording: the old executable graph");
        }
    }
    if (!x->exec)
        CU(cudaGraphInstantiate(&x->exec, graph, 0), "recording: instantiating");
    CU(cudaGraphDestroy(graph), "recording: the captured graph");
    guard_leave(&gd);
    return CASK_OK;
fail:
    if (capturing) {
        cudaGraph_t junk = NULL;
        if (cudaStreamEndCapture(x->cap, &junk) != cudaSuccess)
            cudaGetLastError();
        if (junk && cudaGraphDestroy(junk) != cudaSuccess)
            cudaGetLastError();
    }
    if (graph && cudaGraphDestroy(graph) != cudaSuccess)
        cudaGetLastError();
    cudaGetLastError();   /* a kernel's failed launch under capture is not the run's */
    guard_leave(&gd);
    log_msg(rt, CASK_LOG_DEBUG, "graph replay: %s", msg);
    return st;
}

cask_status replay_launch(cask_runtime *rt, graph_replay *p)
{
    struct replay_exec *x = p->x;
    char msg[256];
    size_t len = sizeof msg;
    cask_status st = CASK_OK;
    dev_guard gd;
    CU(guard_enter(&gd, p->device), "graph replay: its GPU");
    CU(cudaGraphLaunch(x->exec, x->stream), "graph replay: launching");
    CU(cudaEventRecord(x->done, x->stream), "graph replay: its end event");
    guard_leave(&gd);
    return CASK_OK;
fail:
    guard_leave(&gd);
    /* a launch that went out must end before its handles are unpinned */
    if (cudaStreamSynchronize(x->stream) != cudaSuccess)
        cudaGetLastError();
    return log_error(rt, st, "graph %u: %s", p->task.graph->id, msg);
}

cask_status replay_wait_cuda(cask_task_ctx *ctx)
{
    graph_replay *p = (graph_replay *)ctx->task;   /* the stand-in is the plan's first member */
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)ctx->stream, p->x->done, 0);
    if (e == cudaSuccess)
        return CASK_OK;
    cudaGetLastError();
    /* the stand-in fails now: its launch must still end before the handles are unpinned */
    if (cudaEventSynchronize(p->x->done) != cudaSuccess)
        cudaGetLastError();
    return cask_task_fail(ctx, "cudaStreamWaitEvent on the end of the launch: %s",
                          cudaGetErrorString(e));
}

#else /* no CUDA: nothing is ever replayed (graph_replay_begin needs real GPUs) */

struct replay_exec {
    int unused;
};

cask_status replay_exec_create(cask_runtime *rt, int gpu, struct replay_exec **out)
{
    (void)gpu;
    *out = NULL;
    return log_error(rt, CASK_ERR_UNSUPPORTED, "graph replay: cask was built without CUDA");
}

void replay_exec_destroy(cask_runtime *rt, struct replay_exec *x)
{
    (void)rt;
    (void)x;
}

void *replay_exec_stream(struct replay_exec *x)
{
    (void)x;
    return NULL;
}

cask_status replay_record(cask_runtime *rt, graph_replay *p, int *updated, char *msg, size_t len)
{
    (void)rt;
    (void)p;
    *updated = 0;
    snprintf(msg, len, "cask was built without CUDA");
    return CASK_ERR_UNSUPPORTED;
}

cask_status replay_launch(cask_runtime *rt, graph_replay *p)
{
    (void)p;
    return log_error(rt, CASK_ERR_UNSUPPORTED, "graph replay: cask was built without CUDA");
}

cask_status replay_wait_cuda(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "graph replay: cask was built without CUDA");
}

#endif
