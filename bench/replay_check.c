/* bench/replay_check.c: bench-replay-check, the self-check that device_run.sh's replay
 * step runs first, on one GPU. It says, step by step, whether the CUDA calls graph
 * replays rest on behave as cask expects on this machine's driver, then whether cask's
 * replays give the bits of its usual path:
 *   1. capture: an empty root, per task cudaStreamUpdateCaptureDependencies to its
 *      predecessors' last nodes, cudaStreamGetCaptureInfo for its own, as
 *      runtime/replay_cuda.c does; instantiate, launch twice, check the numbers;
 *   2. the same capture over other buffers, cudaGraphExecUpdate into the first
 *      executable graph, launch, check (the update path of a graph whose data moved);
 *   3. cask: chains and fan-ins over 8 handles run 6 times with replay on and off, the
 *      same bits, and the CUDA implementations called only in the first two runs;
 *   4. cask under a GPU memory limit that evicts the graph's handles between runs (a
 *      second graph fills the GPU): replays stay right when their data moved.
 * Prints PASS or FAIL per check and exits 1 at the first failure (77 without a GPU). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "cask/cask.h"
#include "common/gpu_kernels.h"

#define N 4099

#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("FAIL %s: %s\n", #call, cudaGetErrorString(e_));                       \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_CASK(call)                                                                  \
    do {                                                                                  \
        cask_status s_ = (call);                                                          \
        if (s_ != CASK_OK) {                                                              \
            printf("FAIL %s: %s\n", #call, cask_status_string(s_));                       \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static void verdict(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok)
        exit(1);
}

#if CUDART_VERSION >= 13000
#define SET_DEPS(s, d, n) cudaStreamUpdateCaptureDependencies((s), (d), NULL, (n), cudaStreamSetCaptureDependencies)
#define GET_LAST(s, st, d, n) cudaStreamGetCaptureInfo((s), (st), NULL, NULL, (d), NULL, (n))
#define GET_GRAPH(s, st, g) cudaStreamGetCaptureInfo((s), (st), NULL, (g), NULL, NULL, NULL)
#else
#define SET_DEPS(s, d, n) cudaStreamUpdateCaptureDependencies((s), (d), (n), cudaStreamSetCaptureDependencies)
#define GET_LAST(s, st, d, n) cudaStreamGetCaptureInfo((s), (st), NULL, NULL, (d), (n))
#define GET_GRAPH(s, st, g) cudaStreamGetCaptureInfo((s), (st), NULL, (g), NULL, NULL)
#endif

/* Captures: A: x += 1 (root); B: y += 2 (root); C: y = x * 3 + y (after A and B). */
static cudaGraph_t capture(cudaStream_t s, int32_t *x, int32_t *y)
{
    cudaGraph_t cg, g;
    cudaGraphNode_t root, ends[4];
    const cudaGraphNode_t *last;
    size_t nl;
    enum cudaStreamCaptureStatus cs;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK_CUDA(GET_GRAPH(s, &cs, &cg));
    CHECK_CUDA(cudaGraphAddEmptyNode(&root, cg, NULL, 0));
    CHECK_CUDA(SET_DEPS(s, &root, 1));
    CHECK_CUDA((cudaError_t)test_gpu_add(x, N, 1, s));
    CHECK_CUDA(GET_LAST(s, &cs, &last, &nl));
    verdict(cs == cudaStreamCaptureStatusActive && nl == 1, "capture: one last node after task A");
    ends[0] = last[0];
    CHECK_CUDA(SET_DEPS(s, &root, 1));
    CHECK_CUDA((cudaError_t)test_gpu_add(y, N, 2, s));
    CHECK_CUDA(GET_LAST(s, &cs, &last, &nl));
    verdict(nl == 1 && last[0] != ends[0], "capture: task B independent of A");
    ends[1] = last[0];
    CHECK_CUDA(SET_DEPS(s, ends, 2));
    CHECK_CUDA((cudaError_t)test_gpu_axpy(x, y, N, 3, s));
    CHECK_CUDA(GET_LAST(s, &cs, &last, &nl));
    verdict(nl == 1, "capture: task C after A and B");
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    size_t nn = 0;
    CHECK_CUDA(cudaGraphGetNodes(g, NULL, &nn));
    verdict(nn == 4, "capture: 4 nodes (root, A, B, C)");
    return g;
}

static void check_xy(int32_t *x, int32_t *y, int runs, const char *what)
{
    int32_t *hx = malloc(N * sizeof *hx), *hy = malloc(N * sizeof *hy);
    CHECK_CUDA(cudaMemcpy(hx, x, N * sizeof *hx, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(hy, y, N * sizeof *hy, cudaMemcpyDeviceToHost));
    /* from x = y = 0: each run x += 1; y = (y + 2) + 3 x */
    int32_t ex = 0, ey = 0;
    for (int r = 0; r < runs; r++) {
        ex += 1;
        ey = ex * 3 + ey + 2;
    }
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= hx[i] == ex && hy[i] == ey;
    verdict(ok, what);
    free(hx);
    free(hy);
}

static void raw_checks(void)
{
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int32_t *x, *y, *x2, *y2;
    CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
    CHECK_CUDA(cudaMalloc((void **)&y, N * sizeof *y));
    CHECK_CUDA(cudaMalloc((void **)&x2, N * sizeof *x));
    CHECK_CUDA(cudaMalloc((void **)&y2, N * sizeof *y));
    CHECK_CUDA(cudaMemset(x, 0, N * sizeof *x));
    CHECK_CUDA(cudaMemset(y, 0, N * sizeof *y));
    CHECK_CUDA(cudaMemset(x2, 0, N * sizeof *x));
    CHECK_CUDA(cudaMemset(y2, 0, N * sizeof *y));
    cudaGraph_t g = capture(s, x, y);
    cudaGraphExec_t ex;
    CHECK_CUDA(cudaGraphInstantiate(&ex, g, 0));
    CHECK_CUDA(cudaGraphLaunch(ex, s));
    CHECK_CUDA(cudaGraphLaunch(ex, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    check_xy(x, y, 2, "raw: two launches give the numbers of two runs");
    cudaGraph_t g2 = capture(s, x2, y2);
    cudaGraphExecUpdateResultInfo info;
    cudaError_t e = cudaGraphExecUpdate(ex, g2, &info);
    printf("     cudaGraphExecUpdate: %s (result %d)\n", cudaGetErrorString(e), (int)info.result);
    verdict(e == cudaSuccess, "raw: the executable graph takes the new buffers in place");
    CHECK_CUDA(cudaGraphLaunch(ex, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    check_xy(x2, y2, 1, "raw: the updated graph works on the new buffers");
    check_xy(x, y, 2, "raw: ... and leaves the old ones alone");
    CHECK_CUDA(cudaGraphExecDestroy(ex));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaGraphDestroy(g2));
    cudaFree(x);
    cudaFree(y);
    cudaFree(x2);
    cudaFree(y2);
    CHECK_CUDA(cudaStreamDestroy(s));
}

/* ---- through cask ---- */

typedef struct { int32_t v; } add_args;
static _Atomic long calls;

static cask_status add_cuda(cask_task_ctx *ctx)
{
    atomic_fetch_add(&calls, 1);
    const add_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_add(cask_task_buffer(ctx, 0), (int64_t)(cask_task_buffer_size(ctx, 0) / 4),
                         a->v, cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "add: %s", test_gpu_error_string(e)) : CASK_OK;
}

/* the evicting graph's kernel: not counted */
static cask_status fill_cuda(cask_task_ctx *ctx)
{
    int e = test_gpu_add(cask_task_buffer(ctx, 0), (int64_t)(cask_task_buffer_size(ctx, 0) / 4),
                         1, cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "fill: %s", test_gpu_error_string(e)) : CASK_OK;
}

static cask_status axpy_cuda(cask_task_ctx *ctx)
{
    atomic_fetch_add(&calls, 1);
    const add_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_axpy(cask_task_buffer(ctx, 0), cask_task_buffer(ctx, 1),
                          (int64_t)(cask_task_buffer_size(ctx, 1) / 4), a->v, cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "axpy: %s", test_gpu_error_string(e)) : CASK_OK;
}

enum { ND = 8 };

/* 6 runs of chains and fan-ins over ND handles of `elems` ints; with evict, a second
 * graph over as many other handles runs between them (under a memory limit for about
 * ND + 2 handles, it pushes the first graph's out). Returns the final contents. */
static int32_t *cask_run(int replay, size_t elems, int evict, long *ncalls)
{
    size_t bytes = elems * sizeof(int32_t);
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU | CASK_CONFIG_GRAPH_REPLAY,
                        .ngpu = 1, .ncpu = 2, .graph_replay = replay };
    if (evict) {
        cfg.field_mask |= CASK_CONFIG_GPU_MEM_LIMIT;
        cfg.gpu_mem_limit = (ND + 2) * bytes;
    }
    cask_runtime *rt;
    CHECK_CASK(cask_init(&cfg, &rt));
    cask_kernel *kadd, *kaxpy, *kfill;
    cask_kernel_desc kd = { .name = "add", .cuda = add_cuda };
    CHECK_CASK(cask_kernel_register(rt, &kd, &kadd));
    kd = (cask_kernel_desc){ .name = "fill", .cuda = fill_cuda };
    CHECK_CASK(cask_kernel_register(rt, &kd, &kfill));
    kd = (cask_kernel_desc){ .name = "axpy", .cuda = axpy_cuda };
    CHECK_CASK(cask_kernel_register(rt, &kd, &kaxpy));
    cask_data *d[ND], *o[ND];
    for (int i = 0; i < ND; i++) {
        void *p;
        CHECK_CASK(cask_data_create(rt, bytes, &d[i]));
        CHECK_CASK(cask_data_acquire(d[i], CASK_WRITE, &p));
        for (size_t j = 0; j < elems; j++)
            ((int32_t *)p)[j] = (int32_t)(i * 7 + j % 13);
        CHECK_CASK(cask_data_release(d[i]));
        CHECK_CASK(cask_data_create(rt, bytes, &o[i]));
        CHECK_CASK(cask_data_acquire(o[i], CASK_WRITE, &p));
        memset(p, 0, bytes);
        CHECK_CASK(cask_data_release(o[i]));
    }
    cask_graph *g, *h;
    CHECK_CASK(cask_graph_create(rt, &g));
    CHECK_CASK(cask_graph_create(rt, &h));
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < ND; i++) {
            add_args a = { r * 10 + i + 1 };
            cask_access acc = { d[i], CASK_RW };
            cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = kadd, .access = &acc,
                                  .naccess = 1, .args = &a, .args_size = sizeof a };
            CHECK_CASK(cask_graph_add_task(g, &td, NULL));
            add_args b = { (i & 1) ? 3 : -2 };
            cask_access ac2[2] = { { d[i], CASK_READ }, { d[(i + 1) % ND], CASK_RW } };
            cask_task_desc tx = { .field_mask = CASK_TASK_ARGS, .kernel = kaxpy, .access = ac2,
                                  .naccess = 2, .args = &b, .args_size = sizeof b };
            CHECK_CASK(cask_graph_add_task(g, &tx, NULL));
        }
    for (int i = 0; i < ND; i++) {
        add_args a = { 1 };
        cask_access acc = { o[i], CASK_RW };
        cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = kfill,
                              .access = &acc, .naccess = 1, .args = &a, .args_size = sizeof a,
                              .where = CASK_WHERE_GPU };
        CHECK_CASK(cask_graph_add_task(h, &td, NULL));
    }
    for (int r = 0; r < 6; r++) {
        if (cask_graph_compute(g) != CASK_OK) {
            printf("FAIL run %d: %s\n", r, cask_graph_error(g));
            exit(1);
        }
        if (evict && cask_graph_compute(h) != CASK_OK) {
            printf("FAIL evicting run %d: %s\n", r, cask_graph_error(h));
            exit(1);
        }
    }
    *ncalls = atomic_exchange(&calls, 0);
    int32_t *out = malloc(ND * bytes);
    for (int i = 0; i < ND; i++) {
        void *p;
        CHECK_CASK(cask_data_acquire(d[i], CASK_READ, &p));
        memcpy(out + i * elems, p, bytes);
        CHECK_CASK(cask_data_release(d[i]));
    }
    cask_graph_destroy(g);
    cask_graph_destroy(h);
    for (int i = 0; i < ND; i++) {
        cask_data_destroy(d[i]);
        cask_data_destroy(o[i]);
    }
    cask_shutdown(rt);
    return out;
}

static void cask_checks(void)
{
    long con, coff;
    size_t elems = 1 << 16;
    int32_t *on = cask_run(1, elems, 0, &con), *off = cask_run(0, elems, 0, &coff);
    printf("     CUDA implementations called: %ld with replay, %ld without (48 a run)\n", con, coff);
    verdict(coff == 6 * 6 * ND, "cask: without replay every run calls every task");
    verdict(con == 2 * 6 * ND, "cask: with replay only the first two runs call them");
    verdict(!memcmp(on, off, ND * elems * 4), "cask: replayed and usual runs give the same bits");
    free(on);
    free(off);
    on = cask_run(1, elems, 1, &con);
    off = cask_run(0, elems, 1, &coff);
    printf("     under eviction: %ld calls with replay (%ld re-recordings beyond the first), "
           "%ld without\n", con, con / (6 * ND) - 2, coff);
    verdict(!memcmp(on, off, ND * elems * 4), "cask: replays after eviction give the same bits");
    free(on);
    free(off);
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no GPU present\n");
        return 77;
    }
    CHECK_CUDA(cudaSetDevice(0));
    int rv = 0, dv = 0;
    cudaRuntimeGetVersion(&rv);
    cudaDriverGetVersion(&dv);
    printf("bench-replay-check: CUDA runtime %d, driver %d\n", rv, dv);
    raw_checks();
    cask_checks();
    printf("ALL PASS\n");
    return 0;
}
