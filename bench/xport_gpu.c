/* bench/xport_gpu.c: GPU memory to GPU memory between two processes through cask's UCX
 * transport (bench-xport --gpu), against, in the same run, what the data path costs
 * without it:
 *
 *   ucx-cuda   rank 0's cudaMalloc'ed chunk to rank 1's, xport_ucx_am_send_mem /
 *              xport_ucx_recv_into_mem with UCS_MEMORY_TYPE_CUDA (rendezvous; cuda_ipc
 *              within a node): the path of dist_gpux.c
 *   staged     the host path of a GPU chunk: cudaMemcpy to pinned host memory, the UCX
 *              host transfer, cudaMemcpy to the GPU on the other side (what cask did
 *              before, and still does with a UCX without CUDA memory)
 *   d2d        cudaMemcpyAsync device to device within rank 0's process (the ceiling
 *              where both ranks share one GPU; rank 1 waits meanwhile)
 *   peer       where rank 0's process sees two GPUs or more (no CUDA_VISIBLE_DEVICES of
 *              one GPU per rank): cudaMemcpyPeerAsync from its GPU to the next one, the
 *              GPU rank 1 uses, in one process (the ceiling between two GPUs)
 *
 * Latency: half a ping-pong round trip (each way the data lands before the reply
 * leaves). Bandwidth: rank 0 streams messages of the size (up to 64 in flight; 20 from
 * 16 MiB, as many as d2d's copies), rank 1 acknowledges once all landed: "ucx GB/s" is
 * that end to end, "ucx strm" the streaming rate between the first and the last landing
 * (without the one-time start: rendezvous, and the GPU switching to the receiver's
 * context, ~150 us where two processes share a GPU), the like of d2d's event-timed
 * figure; -1 where the landings came bunched (UCX ran several GETs at once and reported
 * them together: no rate to read). Sizes 8 KiB to 256 MiB. CASK_BENCH_GPU_SIZES=a,b,... keeps those sizes,
 * CASK_BENCH_GPU_STAGED=0 drops the staged column. (Where the time of each step goes was
 * bench/xport_gpu_diag.c's, retired: bench/RESULTS.md.) NCCL is --nccl's table (one GPU
 * per rank). Rank 0 prints a table, a JSON line per figure, and the CASK_DIST_XPORT_MODEL
 * value (distributed/dist_route.c) fitted from these numbers. */
#include "bench/xport_bench.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/ucx.h"
#include "bench/common/timing.h"

#if defined(CASK_HAVE_CUDA)
#include <cuda_runtime_api.h>

enum { G_PING = 5, G_PONG = 6, G_DATA = 7, G_ACK = 8 };
enum { MODE_CUDA = 0, MODE_STAGED = 1 };
enum { LAND_MAX = 300 };   /* at least the bandwidth loop's most messages (256) */

typedef struct gbench {
    xport_ucx *x;
    int rank, dev, mode;
    void *sbuf, *rbuf;          /* device */
    void *hs, *hr;              /* pinned host (staged) */
    size_t len;
    _Atomic long pongs, recvd, acked;
    /* the bandwidth loop on rank 1: when the first message arrived, when each landed */
    _Atomic long narrived, nlanded;
    double arrived0, land[LAND_MAX];
} gbench;

static void gdie(const char *what, const char *why)
{
    fprintf(stderr, "bench-xport --gpu: %s: %s\n", what, why ? why : "");
    exit(1);
}

static void gwait(_Atomic long *v, long target)
{
    double t0 = bench_now_s();
    while (atomic_load(v) < target) {
        if (bench_now_s() - t0 > 120)
            gdie("stuck", "no progress for 120 s");
        sched_yield();
    }
}

/* Sends len bytes of sbuf to peer as message id, by the bench's mode. */
static void gsend(gbench *b, int peer, unsigned id)
{
    cask_status st;
    if (b->mode == MODE_CUDA) {
        st = xport_ucx_am_send_mem(b->x, peer, id, NULL, 0, b->sbuf, b->len, XPORT_UCX_MEM_CUDA,
                                   NULL, NULL);
    } else {
        if (cudaMemcpy(b->hs, b->sbuf, b->len, cudaMemcpyDeviceToHost) != cudaSuccess)
            gdie("cudaMemcpy D2H", NULL);
        st = xport_ucx_am_send(b->x, peer, id, NULL, 0, b->hs, b->len, NULL, NULL);
    }
    if (st)
        gdie("send", cask_status_string(st));
}

typedef struct landing { gbench *b; int peer; unsigned id; } landing;
static landing landings[4];

static void landed(void *arg, cask_status st, const char *why)
{
    landing *l = arg;
    gbench *b = l->b;
    if (st)
        gdie("receive", why);
    if (b->mode == MODE_STAGED &&
        cudaMemcpy(b->rbuf, b->hr, b->len, cudaMemcpyHostToDevice) != cudaSuccess)
        gdie("cudaMemcpy H2D", NULL);
    if (l->id == G_PING)
        gsend(b, l->peer, G_PONG);
    else if (l->id == G_PONG)
        atomic_fetch_add(&b->pongs, 1);
    else {
        long k = atomic_fetch_add(&b->nlanded, 1);
        if (k < LAND_MAX)
            b->land[k] = bench_now_s();
        atomic_fetch_add(&b->recvd, 1);
    }
}

static void on_msg(void *arg, xport_ucx_msg *m)
{
    gbench *b = arg;
    landing *l = &landings[m->id - G_PING];
    *l = (landing){ b, m->peer, m->id };
    if (m->id == G_DATA && atomic_fetch_add(&b->narrived, 1) == 0)
        b->arrived0 = bench_now_s();
    cask_status st = b->mode == MODE_CUDA
        ? xport_ucx_recv_into_mem(m, b->rbuf, XPORT_UCX_MEM_CUDA, landed, l)
        : xport_ucx_recv_into(m, b->hr, landed, l);
    if (st)
        gdie("recv_into", cask_status_string(st));
}

static void on_ack(void *arg, xport_ucx_msg *m)
{
    (void)m;
    atomic_fetch_add(&((gbench *)arg)->acked, 1);
}

/* whether len is in the comma-separated list l */
static int size_listed(const char *l, size_t len)
{
    while (*l) {
        char *end;
        unsigned long long v = strtoull(l, &end, 10);
        if (end == l)
            return 0;
        if (v == len)
            return 1;
        l = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static void thread_gpu(void *arg)
{
    cudaSetDevice(*(int *)arg);
}

/* One-way latency (us) and bandwidth (GB/s) of len bytes in b's mode: end to end (rank
 * 0 starts sending -> rank 0 hears that all landed) and streaming (*stream_gbs: the
 * messages after the first, from the first landing to the last, on rank 1; what the
 * path sustains without the one-time cost of starting, as d2d's event-timed copies). */
static void measure(gbench *b, xport_boot *boot, size_t len, double *lat_us, double *gbs,
                    double *stream_gbs)
{
    static unsigned round;
    b->len = len;
    int iters = len >= (16u << 20) ? 10 : len >= (1u << 20) ? 50 : 300;
    atomic_store(&b->pongs, 0);
    atomic_store(&b->recvd, 0);
    atomic_store(&b->acked, 0);
    xport_boot_barrier(boot);
    double t0 = bench_now_s();
    if (b->rank == 0) {
        for (int k = 0; k < iters; k++) {
            gsend(b, 1, G_PING);
            gwait(&b->pongs, k + 1);
        }
    }
    *lat_us = (bench_now_s() - t0) / iters / 2 * 1e6;
    xport_boot_barrier(boot);
    /* bandwidth: nmsg messages in flight at once (the credit window queues the rest) */
    long nmsg = len >= (16u << 20) ? 20 : len >= (1u << 20) ? 32 : 256;   /* d2d: 20 */
    atomic_store(&b->narrived, 0);
    atomic_store(&b->nlanded, 0);
    xport_boot_barrier(boot);
    t0 = bench_now_s();
    if (b->rank == 0) {
        for (long k = 0; k < nmsg; k++)
            gsend(b, 1, G_DATA);
        gwait(&b->acked, 1);
    } else {
        gwait(&b->recvd, nmsg);
        cask_status st = xport_ucx_am_send(b->x, 0, G_ACK, NULL, 0, NULL, 0, NULL, NULL);
        if (st)
            gdie("ack", cask_status_string(st));
    }
    double dt = bench_now_s() - t0;
    *gbs = (double)len * (double)nmsg / dt / 1e9;
    double st = -1;
    /* only where the landings spread over most of the stream: UCX may run the GETs of
     * several messages at once and report them done together (then -1, not measured) */
    double first = b->land[0], last = b->land[nmsg - 1];
    if (b->rank == 1 && nmsg >= 2 && nmsg <= LAND_MAX && last > first &&
        last - first >= 0.5 * (last - b->arrived0))
        st = (double)len * (double)(nmsg - 1) / (last - first) / 1e9;
    char key[32];
    snprintf(key, sizeof key, "gbench.stream.%u", round++);
    void **blobs;
    size_t *lens;
    if (xport_boot_allgather(boot, key, &st, sizeof st, &blobs, &lens))
        gdie("allgather", NULL);
    memcpy(stream_gbs, blobs[1], sizeof *stream_gbs);
    xport_boot_free_blobs(boot, blobs, lens);
}

static void copy_on(void *dst, int dst_dev, const void *src, int src_dev, size_t len,
                    cudaStream_t s)
{
    if (dst_dev == src_dev)
        cudaMemcpyAsync(dst, src, len, cudaMemcpyDeviceToDevice, s);
    else
        cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, len, s);
}

/* In-process copies of len bytes from src on GPU src_dev to dst on GPU dst_dev (the same:
 * cudaMemcpyAsync device to device; another: cudaMemcpyPeerAsync). */
static void d2d(void *dst, int dst_dev, const void *src, int src_dev, size_t len, double *lat_us,
                double *gbs)
{
    cudaStream_t s;
    cudaEvent_t e0, e1;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int iters = len >= (16u << 20) ? 20 : 200;
    copy_on(dst, dst_dev, src, src_dev, len, s);   /* warm up */
    cudaStreamSynchronize(s);
    double t0 = bench_now_s();
    for (int k = 0; k < iters; k++) {   /* latency: each copy waited for */
        copy_on(dst, dst_dev, src, src_dev, len, s);
        cudaStreamSynchronize(s);
    }
    *lat_us = (bench_now_s() - t0) / iters * 1e6;
    cudaEventRecord(e0, s);
    for (int k = 0; k < iters; k++)
        copy_on(dst, dst_dev, src, src_dev, len, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    *gbs = (double)len * iters / (ms * 1e-3) / 1e9;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
}

void xport_gpu_bench(xport_boot *boot, int quick, xport_emit_fn emit)
{
    int rank = xport_boot_rank(boot);
    int ndev = 0;
    int have = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    void **blobs;
    size_t *lens;
    if (xport_boot_allgather(boot, "gbench.have", &have, sizeof have, &blobs, &lens))
        gdie("allgather", NULL);
    int all = 1;
    for (int r = 0; r < 2; r++) {
        int h;
        memcpy(&h, blobs[r], sizeof h);
        all &= h;
    }
    xport_boot_free_blobs(boot, blobs, lens);
    if (!all) {
        if (rank == 0) printf("\n--gpu: a rank has no GPU: skipped\n");
        return;
    }
    static int dev;
    dev = xport_boot_local_rank(boot) % ndev;
    cudaSetDevice(dev);
    gbench b;
    memset(&b, 0, sizeof b);
    b.rank = rank;
    b.dev = dev;
    size_t maxb = quick ? (64u << 20) : (256u << 20);
    if (cudaMalloc(&b.sbuf, maxb) != cudaSuccess || cudaMalloc(&b.rbuf, maxb) != cudaSuccess ||
        cudaMallocHost(&b.hs, maxb) != cudaSuccess || cudaMallocHost(&b.hr, maxb) != cudaSuccess)
        gdie("allocating", "cudaMalloc/cudaMallocHost");
    cudaMemset(b.sbuf, 1 + rank, maxb);
    /* rank 0 seeing another GPU: a buffer there for the in-process peer copy */
    int peer_dev = ndev > 1 ? (dev + 1) % ndev : -1;
    void *pbuf = NULL;
    if (rank == 0 && peer_dev >= 0) {
        int can = 0;
        cudaDeviceCanAccessPeer(&can, dev, peer_dev);
        if (can)
            cudaDeviceEnablePeerAccess(peer_dev, 0);   /* already enabled: harmless error */
        cudaGetLastError();
        cudaSetDevice(peer_dev);
        if (cudaMalloc(&pbuf, maxb) != cudaSuccess) {
            cudaGetLastError();
            pbuf = NULL;
        }
        cudaSetDevice(dev);
    }
    xport_ucx_config uc = { .field_mask = XPORT_UCX_THREAD_INIT, .thread_init = thread_gpu,
                            .thread_init_arg = &dev };
    char err[512];
    if (xport_ucx_create(boot, &uc, &b.x, err, sizeof err))
        gdie("xport_ucx_create", err);
    for (unsigned id = G_PING; id <= G_DATA; id++)
        xport_ucx_set_handler(b.x, id, on_msg, &b);
    xport_ucx_set_handler(b.x, G_ACK, on_ack, &b);
    if (xport_ucx_connect(b.x)) {
        xport_ucx_error(b.x, err, sizeof err);
        gdie("xport_ucx_connect", err);
    }
    const char *sz = getenv("CASK_BENCH_GPU_SIZES");      /* e.g. 8192,67108864 */
    const char *stg = getenv("CASK_BENCH_GPU_STAGED");    /* 0: no host-staged column */
    int staged = !stg || strcmp(stg, "0");
    int cuda = xport_ucx_cuda_memory(b.x);
    if (xport_boot_allgather(boot, "gbench.cuda", &cuda, sizeof cuda, &blobs, &lens))
        gdie("allgather", NULL);
    int both = 1;
    for (int r = 0; r < 2; r++) {
        int c;
        memcpy(&c, blobs[r], sizeof c);
        both &= c;
    }
    xport_boot_free_blobs(boot, blobs, lens);
    char desc[256];
    xport_ucx_describe(desc, sizeof desc);
    if (rank == 0) {
        printf("\nGPU memory to GPU memory, rank 0 -> rank 1 (GPU %d; %s)%s\n", dev, desc,
               both ? "" : "\n  this UCX does not move CUDA memory: ucx-cuda column skipped");
        if (pbuf)
            printf("  peer: cudaMemcpyPeerAsync GPU %d -> GPU %d in rank 0's process\n", dev, peer_dev);
        printf("%10s %11s %11s %11s | %10s %10s %10s %10s | %8s %8s | %10s %8s\n", "bytes", "ucx-cuda us",
               "staged us", "d2d us", "ucx GB/s", "ucx strm", "stag GB/s", "d2d GB/s",
               "ucx/d2d", "strm/d2d", "peer GB/s", "ucx/peer");
    }
    double fit_lat = -1, fit_bw = -1, host_lat = -1, host_bw = -1;
    for (size_t len = 8u << 10; len <= maxb; len *= (len < (64u << 20) ? 4 : 2)) {
        if (len == (32u << 20))
            len = 64u << 20;   /* the size GPU-to-GPU figures are compared at */
        if (sz && *sz && !size_listed(sz, len))
            continue;
        double ul = -1, ub = -1, us = -1, sl, sb, ss, dl = -1, db = -1, pl = -1, pb = -1;
        if (both) {
            b.mode = MODE_CUDA;
            measure(&b, boot, len, &ul, &ub, &us);
        }
        sl = sb = -1;
        b.mode = MODE_STAGED;
        if (staged)
            measure(&b, boot, len, &sl, &sb, &ss);
        if (rank == 0)
            d2d(b.rbuf, dev, b.sbuf, dev, len, &dl, &db);
        if (rank == 0 && pbuf)
            d2d(pbuf, peer_dev, b.sbuf, dev, len, &pl, &pb);
        xport_boot_barrier(boot);
        if (rank != 0)
            continue;
        printf("%10zu %11.1f %11.1f %11.1f | %10.2f %10.2f %10.2f %10.2f | %7.0f%% %7.0f%% | %10.2f %7.0f%%\n",
               len, ul, sl, dl, ub, us, sb, db, ub > 0 ? 100 * ub / db : 0.0,
               us > 0 ? 100 * us / db : -1.0, pb, ub > 0 && pb > 0 ? 100 * ub / pb : 0.0);
        emit("gpu_bw_gbs", "cask_ucx_cuda_stream", len, us);
        emit("gpu_lat_us", "cask_ucx_cuda", len, ul);
        emit("gpu_lat_us", "cask_staged", len, sl);
        emit("gpu_lat_us", "cuda_d2d", len, dl);
        emit("gpu_bw_gbs", "cask_ucx_cuda", len, ub);
        emit("gpu_bw_gbs", "cask_staged", len, sb);
        emit("gpu_bw_gbs", "cuda_d2d", len, db);
        if (pbuf) {
            emit("gpu_lat_us", "cuda_peer", len, pl);
            emit("gpu_bw_gbs", "cuda_peer", len, pb);
        }
        if (fit_lat < 0) {
            fit_lat = ul;
            host_lat = sl;
        }
        fit_bw = ub;
        host_bw = sb;
    }
    if (rank == 0) {
        printf("fitted route model (distributed/dist_route.c): CASK_DIST_XPORT_MODEL=");
        if (both)
            printf("ucx=%.0f:%.1f,", fit_lat, fit_bw);
        printf("host=%.0f:%.1f\n", host_lat, host_bw);
    }
    xport_boot_barrier(boot);
    xport_ucx_destroy(b.x, NULL, 0);
    cudaFree(b.sbuf);
    cudaFree(b.rbuf);
    if (pbuf) {
        cudaSetDevice(peer_dev);
        cudaFree(pbuf);
        cudaSetDevice(dev);
    }
    cudaFreeHost(b.hs);
    cudaFreeHost(b.hr);
}

#else

void xport_gpu_bench(xport_boot *boot, int quick, xport_emit_fn emit)
{
    (void)quick; (void)emit;
    if (xport_boot_rank(boot) == 0)
        printf("\n--gpu: built without CUDA: skipped\n");
}

#endif
