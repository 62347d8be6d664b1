/* distributed/dist_gpux.c: chunks made on a GPU, read by a GPU task on another rank, go by UCX
 * from GPU memory into GPU memory when every rank's UCX moves CUDA memory (the libucx
 * wheel: cuda_ipc within a node, so NVLink between GPUs or a copy within one GPU):
 *
 *   gsend  a GPU task reading the chunk on this rank's GPU: a host function on its
 *          stream posts, once the stream has the chunk there, a UCX active message
 *          from that device memory (UCS_MEMORY_TYPE_CUDA, rendezvous) to the progress
 *          thread; the task ends when UCX is done with it (the worker is not held);
 *   grecv  a GPU task "writing" the slot's handle: its GPU replica was allocated and
 *          pinned at planning (dist_gpux_pin) and is where UCX lands the chunk
 *          (dist_on_data), so the task only waits for the landing and makes that
 *          replica the valid one. The buffer is the same run after run: UCX's cuda_ipc
 *          mapping cache (UCX_CUDA_IPC_CACHE) hits, and no transfer registers memory or
 *          opens an IPC handle after the first.
 *  gdeliver a GPU task after a final grecv (a gather to this rank, dist_plan_final.c):
 *          copies the chunk off the GPU into the gather's destinations on its stream.
 *
 * No byte of such a chunk passes through host memory in cask's code; where UCX itself
 * stages (between nodes without GPUDirect), that is UCX's choice.
 *
 * Simulated GPUs (CASK_SIM_GPUS, tests): with CASK_DIST_SIM_GPU_UCX=1 the same route runs
 * on their replicas (host memory, XPORT_UCX_MEM_HOST; the kernels' CPU implementations),
 * so that the planning, pinned landing replicas, receive tasks and counters are tested
 * on machines without a GPU. */
#include "distributed/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/data_pin.h"
#include "runtime/log.h"

#ifdef CASK_HAVE_UCX
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>

/* On a CUDA driver thread, once the task's stream got past the chunk's producer and
 * copies: hands the send to UCX's progress thread (no CUDA call may be made here, so
 * nothing that could touch UCX's CUDA transports on this thread). */
static void CUDART_CB gsend_post(void *arg)
{
    dist_send *s = arg;
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
    dist_data_hdr h = { g->id, s->run, s->gid, s->version, dist->epoch };
    s->t_post = dist_xlog_now(dist);
    cask_status st = xport_ucx_am_post_mem(dist->ucx, s->to, DIST_AM_DATA, &h, sizeof h,
                                           s->gptr, dist->data[s->gid].bytes,
                                           XPORT_UCX_MEM_CUDA, dist_xfer_sent, s);
    if (st)   /* only while the transport closes */
        dist_xfer_sent(s, st, "posting a send from GPU memory: the transport is closing");
}

static cask_status gsend_cuda(cask_task_ctx *ctx)
{
    dist_send *s = dist_xfer_arg_of(ctx);
    cask_dist_graph *g = s->graph;
    cask_dist *dist = g->dist;
    void *buf = cask_task_buffer(ctx, 0);
    s->t_task = dist_xlog_now(dist);
    struct cudaPointerAttributes pa;
    memset(&pa, 0, sizeof pa);
    cudaError_t e = cudaPointerGetAttributes(&pa, buf);
    if (e != cudaSuccess || pa.type != cudaMemoryTypeDevice)
        return cask_task_fail(ctx, "sending chunk #%u from GPU %d to rank %d: its buffer %p "
                              "is not device memory (%s)", s->gid, cask_task_device(ctx), s->to,
                              buf, cudaGetErrorString(e)), CASK_ERR_INTERNAL;
    pthread_mutex_lock(&dist->mu);
    cask_status st = dist_broken(g);
    if (!st) {
        g->sends_pending++;
        s->tok = cask_task_async_begin(ctx);
        s->run = g->run;
        s->gptr = buf;
    }
    pthread_mutex_unlock(&dist->mu);
    if (st)
        return cask_task_fail(ctx, "%s", g->error), st;
    /* UCX reads the chunk from outside the task's stream: post it when the stream has
     * it, without holding this worker (no cudaStreamSynchronize) */
    e = cudaLaunchHostFunc((cudaStream_t)cask_task_cuda_stream(ctx), gsend_post, s);
    if (e != cudaSuccess) {
        pthread_mutex_lock(&dist->mu);
        g->sends_pending--;
        s->tok = NULL;
        pthread_mutex_unlock(&dist->mu);
        return cask_task_fail(ctx, "sending chunk #%u to rank %d: cudaLaunchHostFunc: %s",
                              s->gid, s->to, cudaGetErrorString(e)), CASK_ERR_CUDA;
    }
    return CASK_OK;
}

#endif   /* CASK_HAVE_CUDA */

/* CUDA and simulated GPUs alike: no CUDA call */
static cask_status grecv_any(cask_task_ctx *ctx)
{
    dist_slot *s = dist_xfer_arg_of(ctx);
    if (cask_task_buffer(ctx, 0) != s->gbuf)
        return cask_task_fail(ctx, "receiving chunk #%u from rank %d: the landing buffer on "
                              "GPU %d moved (%p, pinned %p)", s->gid, s->from,
                              cask_task_device(ctx), cask_task_buffer(ctx, 0), s->gbuf),
               CASK_ERR_INTERNAL;
    return dist_xfer_recv_wait(ctx);
}

#ifdef CASK_HAVE_CUDA
static void progress_thread_gpu(void *arg)
{
    cask_dist *dist = arg;
    if (dist->gpu_device >= 0 && !dist->gpu_sim)
        (void)cudaSetDevice(dist->gpu_device);   /* UCX's CUDA transports use it */
}
#endif

cask_status dist_gpux_register(cask_dist *dist)
{
    /* .cpu: a simulated GPU's (host memory: the host send of dist_xfer.c) */
    /* the send only waits for its chunk and posts it: on the side stream, so that it
     * is not held behind kernels queued after the chunk's producer */
    cask_kernel_desc ks = { .name = "dist_gpu_send", .cpu = dist_xfer_send_host,
                            .flags = CASK_KERNEL_SIDE_STREAM };
    cask_kernel_desc kr = { .name = "dist_gpu_recv", .cpu = grecv_any };
#ifdef CASK_HAVE_CUDA
    ks.cuda = gsend_cuda;
    kr.cuda = grecv_any;
#endif
    /* the copy off the GPU into the gather's destination: on the side stream too */
    cask_kernel_desc kd = { .name = "dist_gpu_deliver", .cpu = dist_xfer_deliver_mem,
                            .flags = CASK_KERNEL_SIDE_STREAM };
#ifdef CASK_HAVE_CUDA
    kd.cuda = dist_xfer_deliver_gpu;
#endif
    cask_status st = cask_kernel_register(dist->rt, &ks, &dist->k_gsend);
    if (!st)
        st = cask_kernel_register(dist->rt, &kr, &dist->k_grecv);
    if (!st)
        st = cask_kernel_register(dist->rt, &kd, &dist->k_gdeliver);
    return st;
}

void dist_gpux_thread_setup(cask_dist *dist, xport_ucx_config *uc)
{
    cask_runtime_info info;
    dist->gpu_device = -1;
    dist->gpu_sim = 0;
    if (cask_runtime_query(dist->rt, &info) != CASK_OK || info.ngpus < 1)
        return;
    if (info.simulated_gpus) {
        const char *e = getenv("CASK_DIST_SIM_GPU_UCX");
        if (!e || strcmp(e, "1"))
            return;
        dist->gpu_sim = 1;
    }
    dist->gpu_device = dist->local_rank % info.ngpus;
#ifdef CASK_HAVE_CUDA
    uc->field_mask |= XPORT_UCX_THREAD_INIT;
    uc->thread_init = progress_thread_gpu;
    uc->thread_init_arg = dist;
#else
    (void)uc;
#endif
}

cask_status dist_gpux_pin(cask_dist_graph *g, dist_slot *s)
{
    cask_dist *dist = g->dist;
    int gpu = dist->nccl_device >= 0 ? dist->nccl_device : dist->gpu_device;
    cask_status st = data_pin_gpu(s->h, gpu, &s->gbuf);
    if (st)
        dist_graph_error(g, "rank %d: the GPU landing buffer of chunk #%u (%zu bytes) on GPU "
                         "%d: %s", dist->rank, s->gid, dist->data[s->gid].bytes, gpu,
                         cask_status_string(st));
    return st;
}

void dist_gpux_unpin(cask_dist *dist, dist_slot **slots, size_t n)
{
    int gpu = dist->nccl_device >= 0 ? dist->nccl_device : dist->gpu_device;
    for (size_t i = 0; i < n; i++)
        if (slots[i]->gpu_ucx && slots[i]->gbuf) {
            data_unpin_gpu(slots[i]->h, gpu);
            slots[i]->gbuf = NULL;
        }
}

void dist_gpux_graph_free(cask_dist_graph *g)
{
    dist_gpux_unpin(g->dist, g->slots, g->nslots);
}

#else   /* no UCX: no transfers between processes at all */

cask_status dist_gpux_register(cask_dist *dist)
{
    (void)dist;
    return CASK_OK;
}

cask_status dist_gpux_pin(cask_dist_graph *g, dist_slot *s)
{
    (void)s;
    dist_graph_error(g, "a GPU-to-GPU transfer by UCX in a build without UCX");
    return CASK_ERR_UNSUPPORTED;
}

void dist_gpux_graph_free(cask_dist_graph *g) { (void)g; }

void dist_gpux_unpin(cask_dist *dist, dist_slot **slots, size_t n)
{
    (void)dist; (void)slots; (void)n;
}

#endif
