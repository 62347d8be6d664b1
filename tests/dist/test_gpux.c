/* tests/dist/test_gpux.c: a chunk made on a GPU of rank 0 and read by a GPU task of
 * rank 1 (2 ranks; both may share one GPU). With a UCX that moves CUDA memory (the
 * libucx wheel, on a machine with the NVIDIA driver) it must go GPU memory to GPU
 * memory: the graph's host_staging_bytes is 0 on both ranks, transfers_gpu_ucx counts
 * it, and rank 1 reads exactly what rank 0 wrote, in two runs (the landing buffer is
 * reused). Without such a UCX, or with `host` (CASK_DIST_GPU_XPORT=host), the chunk goes
 * through host memory and both ranks must count exactly its bytes as staged: the
 * counter that the first case asserts zero does see host copies. In the first case rank
 * 0's workers copy nothing GPU to host either (x, made in place at home, gets a mark
 * task: it must run where x is, not read it on a CPU).
 *
 * A second chunk, w, made on rank 1's GPU, is gathered to rank 0 (cask_dist_graph_gather
 * into a host array): by the GPU route it leaves rank 1 from GPU memory and lands on rank
 * 0's GPU, which copies it into the array (dist_plan_final.c). Then transfers_gpu_ucx is
 * 2 on each rank and neither rank's workers copy anything GPU to host; by the host route
 * the array gets the same bytes.
 *
 *
 * sim and simhost do the same on two simulated GPUs per rank (CASK_SIM_GPUS: host
 * memory, the kernels' CPU implementations) with CASK_DIST_SIM_GPU_UCX=1, which gives
 * them the GPU route: its planning, pinned landing replicas, receive tasks and counters
 * (suite dist, any machine).
 *
 *   test_gpux auto|host|sim|simhost [KIB]     (auto, host: exit 77 without a GPU)  */
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"
#include "cask/distributed.h"
#include "dist_test.h"

typedef struct pat_args {
    size_t bytes;
    uint64_t seed;
} pat_args;

static cask_status k_pattern_cpu(cask_task_ctx *ctx)
{
    const pat_args *a = cask_task_args(ctx, NULL);
    unsigned char *p = cask_task_buffer(ctx, 0);
    for (size_t i = 0; i < a->bytes; i++)
        p[i] = dt_pattern(0, a->seed, i);
    return CASK_OK;
}

static cask_status k_copy_cpu(cask_task_ctx *ctx)
{
    memcpy(cask_task_buffer(ctx, 2), cask_task_buffer(ctx, 0), cask_task_buffer_size(ctx, 0));
    return CASK_OK;
}

#ifdef CASK_HAVE_CUDA
static cask_status k_pattern(cask_task_ctx *ctx)
{
    const pat_args *a = cask_task_args(ctx, NULL);
    unsigned char *h = malloc(a->bytes);
    if (!h)
        return cask_task_fail(ctx, "out of memory");
    for (size_t i = 0; i < a->bytes; i++)
        h[i] = dt_pattern(0, a->seed, i);
    cudaStream_t s = (cudaStream_t)cask_task_cuda_stream(ctx);
    cudaError_t e = cudaMemcpyAsync(cask_task_buffer(ctx, 0), h, a->bytes,
                                    cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    free(h);
    return e == cudaSuccess ? CASK_OK
           : cask_task_fail(ctx, "pattern: %s", cudaGetErrorString(e));
}

/* buffers: [0] x (R), [1] z (R, only to place the task on z's rank), [2] y (W) */
static cask_status k_copy(cask_task_ctx *ctx)
{
    cudaError_t e = cudaMemcpyAsync(cask_task_buffer(ctx, 2), cask_task_buffer(ctx, 0),
                                    cask_task_buffer_size(ctx, 0), cudaMemcpyDeviceToDevice,
                                    (cudaStream_t)cask_task_cuda_stream(ctx));
    return e == cudaSuccess ? CASK_OK : cask_task_fail(ctx, "copy: %s", cudaGetErrorString(e));
}
#endif

/* A GPU task writing the pattern of seed into d. */
static void add_pattern(cask_dist_graph *g, cask_kernel *kp, cask_data *d, size_t bytes,
                        uint64_t seed, const char *name)
{
    pat_args pa = { bytes, seed };
    cask_access a = { d, CASK_WRITE };
    cask_task_desc t = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE | CASK_TASK_NAME,
                         .kernel = kp, .access = &a, .naccess = 1, .args = &pa,
                         .args_size = sizeof pa, .where = CASK_WHERE_GPU, .name = name };
    CHECK_OK(cask_dist_graph_add_task(g, &t, NULL), "add %s", name);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "auto";
    size_t kib = argc > 2 ? (size_t)atol(argv[2]) : 8192;
    int sim = !strncmp(mode, "sim", 3);
    if (strcmp(mode, "auto") && strcmp(mode, "host") && strcmp(mode, "sim") &&
        strcmp(mode, "simhost")) {
        fprintf(stderr, "usage: test_gpux auto|host|sim|simhost [KIB]\n");
        return 2;
    }
    if (!sim) {
#ifdef CASK_HAVE_CUDA
        int ndev = 0;
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
            printf("no CUDA GPU: skipped\n");
            return 77;
        }
#else
        printf("built without CUDA: skipped\n");
        return 77;
#endif
    }
    if (!strcmp(mode, "host") || !strcmp(mode, "simhost"))
        setenv("CASK_DIST_GPU_XPORT", "host", 1);
    if (sim)
        setenv("CASK_DIST_SIM_GPU_UCX", "1", 1);
    cask_runtime *rt;
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND, .ncpu = 2, .bind = 0 };
    if (sim) {
        cfg.field_mask |= CASK_CONFIG_SIM_GPUS | CASK_CONFIG_NGPU;
        cfg.sim_gpus = 1;
        cfg.ngpu = 2;
    }
    CHECK_OK(cask_init(&cfg, &rt), "cask_init");
    cask_dist *dist;
    /* tasks where their data is (no balancing): w made on rank 1, its owner */
    cask_dist_config dcfg = { .field_mask = CASK_DIST_STEAL, .steal = 0 };
    cask_status st = cask_dist_init(rt, &dcfg, &dist);
    char err[1024];
    cask_runtime_error(rt, err, sizeof err);
    CHECK_OK(st, "cask_dist_init: %s", err);
    int rank = dt_rank_ = cask_dist_rank(dist);
    CHECK(cask_dist_size(dist) == 2, "needs 2 ranks, not %d", cask_dist_size(dist));
    char ucx[256];
    cask_dist_transport_describe(ucx, sizeof ucx);
    int cuda_ucx = (strstr(ucx, "CUDA memory: yes") != NULL && !strcmp(mode, "auto")) ||
                   !strcmp(mode, "sim");
    if (rank == 0)
        printf("%s; expecting the chunk %s\n", ucx, cuda_ucx ? "GPU to GPU" : "through host");

    cask_kernel *kp, *kc;
    cask_kernel_desc dp = { .name = "pattern", .cpu = k_pattern_cpu };
    cask_kernel_desc dc = { .name = "copy", .cpu = k_copy_cpu };
#ifdef CASK_HAVE_CUDA
    dp.cuda = k_pattern;
    dc.cuda = k_copy;
#endif
    CHECK_OK(cask_kernel_register(rt, &dp, &kp), "register");
    CHECK_OK(cask_kernel_register(rt, &dc, &kc), "register");

    size_t bytes = kib << 10;
    unsigned char *ybuf = rank == 1 ? calloc(1, bytes) : NULL;
    unsigned char *wbuf = rank == 0 ? calloc(1, bytes) : NULL;   /* w gathered here */
    CHECK(rank || wbuf, "out of memory");
    cask_data *x, *y, *z, *w;
    CHECK_OK(cask_dist_data_create(dist, bytes, 0, NULL, &x), "x");
    CHECK_OK(cask_dist_data_create(dist, 2 * bytes, 1, NULL, &z), "z");
    CHECK_OK(cask_dist_data_create(dist, bytes, 1, ybuf, &y), "y");
    CHECK_OK(cask_dist_data_create(dist, bytes, 1, NULL, &w), "w");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(dist, &g), "graph");
    for (int run = 1; run <= 2; run++) {
        /* a graph per run would replan; the same graph twice reuses landing buffers */
        if (run == 1) {
            add_pattern(g, kp, x, bytes, 7, "make x");
            cask_access a2[3] = { { x, CASK_READ }, { z, CASK_READ }, { y, CASK_WRITE } };
            cask_task_desc t2 = { .field_mask = CASK_TASK_WHERE | CASK_TASK_NAME, .kernel = kc,
                                  .access = a2, .naccess = 3, .where = CASK_WHERE_GPU,
                                  .name = "read x" };
            CHECK_OK(cask_dist_graph_add_task(g, &t2, NULL), "add read");
            add_pattern(g, kp, w, bytes, 9, "make w");
            CHECK_OK(cask_dist_graph_gather(g, w, 0, wbuf), "gather w");
        }
        if (ybuf)
            memset(ybuf, 0, bytes);
        if (wbuf)
            memset(wbuf, 0, bytes);
        CHECK_OK(cask_runtime_stats_reset(rt), "stats reset");
        st = cask_dist_graph_compute(g);
        CHECK_OK(st, "compute %d: %s", run, cask_dist_graph_error(g));
        int r1 = -1, r2 = -1;
        CHECK_OK(cask_dist_graph_task_rank(g, 1, &r1), "task rank");
        CHECK(r1 == 1, "the reading task runs on rank %d, not 1", r1);
        CHECK_OK(cask_dist_graph_task_rank(g, 2, &r2), "task rank");
        CHECK(r2 == 1, "w is made on rank %d, not 1 (its owner)", r2);
        cask_dist_graph_info info;
        CHECK_OK(cask_dist_graph_query(g, &info), "query");
        printf("[rank %d] run %d: %zu KiB chunk, %zu by UCX GPU memory, %zu by NCCL, "
               "%llu host staging bytes\n", rank, run, kib, info.transfers_gpu_ucx,
               info.transfers_nccl, (unsigned long long)info.host_staging_bytes);
        if (cuda_ucx) {
            CHECK(info.transfers_gpu_ucx == 2, "%zu transfers by UCX GPU memory, expected 2 "
                  "(x, and w's gather)", info.transfers_gpu_ucx);
            CHECK(info.host_staging_bytes == 0, "%llu bytes crossed host memory",
                  (unsigned long long)info.host_staging_bytes);
            {   /* x stays on the GPU on rank 0: not even the mark that it is home (a task
                   of its own) may copy it off; w leaves rank 1 from GPU memory, and
                   reaches rank 0's array by the copy of its deliver task */
                cask_worker_stats ws[64];
                int nw = 0;
                CHECK_OK(cask_runtime_nworkers(rt, &nw), "nworkers");
                CHECK(nw > 0 && nw <= 64, "%d workers", nw);
                CHECK_OK(cask_runtime_stats(rt, ws, nw), "stats");
                unsigned long long d2h = 0;
                for (int w = 0; w < nw; w++)
                    d2h += ws[w].bytes_d2h;
                CHECK(d2h == 0, "run %d: %llu bytes copied GPU to host on rank %d", run, d2h,
                      rank);
            }
        } else if (!info.transfers_nccl) {
            CHECK(info.transfers_gpu_ucx == 0, "GPU memory by a UCX without CUDA support");
            CHECK(info.host_staging_bytes == bytes, "%llu host staging bytes, expected %zu",
                  (unsigned long long)info.host_staging_bytes, bytes);
        }
        if (rank == 1) {
            void *p;
            CHECK_OK(cask_data_acquire(y, CASK_READ, &p), "acquire y");
            const unsigned char *b = p;
            for (size_t i = 0; i < bytes; i++)
                CHECK(b[i] == dt_pattern(0, 7, i), "run %d: byte %zu of y is %u, expected %u",
                      run, i, b[i], dt_pattern(0, 7, i));
            CHECK_OK(cask_data_release(y), "release y");
        }
        for (size_t i = 0; wbuf && i < bytes; i++)
            CHECK(wbuf[i] == dt_pattern(0, 9, i), "run %d: byte %zu of gathered w is %u, "
                  "expected %u", run, i, wbuf[i], dt_pattern(0, 9, i));
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    CHECK_OK(cask_dist_finalize(dist), "finalize");
    CHECK_OK(cask_shutdown(rt), "shutdown");
    free(ybuf);
    free(wbuf);
    if (rank == 0)
        printf("test_gpux %s: ok\n", mode);
    return 0;
}
