/* kernels/knn_cuda_tasks.cu: the haversine 1-NN's elementwise CUDA kernels (the
 * references' prep, the merge of partial bests, the finish into index and distance) and
 * the cask task implementations of all four (the search's kernels and launchers are in
 * knn_cuda.cu). */
#include <cuda_runtime.h>
#include <math_constants.h>
#include "kernels/knn_impl.h"
#include "kernels/knn_cuda_task.cuh"

/* ---- prep, merge, finish: one thread per element ---- */

static __global__ void knn_prep_kernel(const void *ref, int64_t m, cask_knn_points in,
                                       void *prep, int64_t mpad)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j == 0) {
        knn_prep_header h = {};
        h.magic = KNN_PREP_MAGIC;
        h.m = m;
        h.mpad = mpad;
        *(knn_prep_header *)prep = h;
    }
    if (j >= mpad)
        return;
    double v[3] = {CUDART_NAN, CUDART_NAN, CUDART_NAN};
    if (j < m)
        knn_load_point(ref, j, in, v);
    for (int c = 0; c < 3; ++c) {
        knn_prep_f64(prep, mpad, c)[j] = v[c];
        knn_prep_f32(prep, mpad, c)[j] = (float)v[c];
    }
}

extern "C" cudaError_t knn_cuda_prep(const void *ref, int64_t m, cask_knn_points in, void *prep,
                                     cudaStream_t s)
{
    if (m < 0 || m > INT32_MAX)
        return cudaErrorInvalidValue;
    int64_t mpad = knn_mpad(m);
    knn_prep_kernel<<<(unsigned)((mpad + 255) / 256), 256, 0, s>>>(ref, m, in, prep, mpad);
    return cudaGetLastError();
}

static __global__ void knn_merge_kernel(cask_knn_best *a, const cask_knn_best *b, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        cask_knn_best y = b[i], x = a[i];
        if (knn_better(y.chord2, y.idx, x.chord2, x.idx))
            a[i] = y;
    }
}

static unsigned elementwise_blocks(int64_t n)
{
    int64_t blocks = (n + 255) / 256;
    return (unsigned)(blocks > 65536 ? 65536 : blocks < 1 ? 1 : blocks);
}

extern "C" cudaError_t knn_cuda_merge(cask_knn_best *a, const cask_knn_best *b, int64_t n,
                                      cudaStream_t s)
{
    if (n < 0)
        return cudaErrorInvalidValue;
    if (n > 0)
        knn_merge_kernel<<<elementwise_blocks(n), 256, 0, s>>>(a, b, n);
    return cudaGetLastError();
}

static __global__ void knn_finish_kernel(const cask_knn_best *best, int64_t n, double scale,
                                         int32_t *idx, float *dist)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        cask_knn_best x = best[i];
        bool ok = x.idx >= 0;
        idx[i] = ok ? (int32_t)x.idx : -1;
        dist[i] = ok ? (float)(scale * knn_angle(x.chord2)) : CUDART_NAN_F;
    }
}

extern "C" cudaError_t knn_cuda_finish(const cask_knn_best *best, int64_t n, double scale,
                                       int32_t *idx, float *dist, cudaStream_t s)
{
    if (n < 0)
        return cudaErrorInvalidValue;
    if (n > 0)
        knn_finish_kernel<<<elementwise_blocks(n), 256, 0, s>>>(best, n, scale, idx, dist);
    return cudaGetLastError();
}

/* ---- cask task implementations ---- */

extern "C" cask_status knn_cuda_task_prep(cask_task_ctx *ctx)
{
    cask_knn_prep_args a;
    const void *ref;
    void *prep;
    cask_status st = knn_job_prep(ctx, &a, &ref, &prep);
    if (st)
        return st;
    return knn_launched(ctx, "knn prep: launch of knn_prep_kernel",
                    knn_cuda_prep(ref, a.m, a.in, prep, knn_task_stream(ctx)));
}

extern "C" cask_status knn_cuda_task_search(cask_task_ctx *ctx)
{
    knn_search_job j;
    cask_status st = knn_job_search(ctx, &j);
    if (st)
        return st;
    cudaError_t e;
    if (j.a.mode == CASK_KNN_FINAL)
        e = knn_cuda_search_final(j.obs, j.a.n, j.a.in, j.prep, j.a.m, j.a.ref_base, j.a.scale,
                                  (int32_t *)j.out0, (float *)j.out1, knn_task_stream(ctx));
    else
        e = knn_cuda_search_partial(j.obs, j.a.n, j.a.in, j.prep, j.a.m, j.a.ref_base,
                                    (cask_knn_best *)j.out0, knn_task_stream(ctx));
    return knn_launched(ctx, "knn search: launch of knn_search_kernel", e);
}

extern "C" cask_status knn_cuda_task_merge(cask_task_ctx *ctx)
{
    int64_t n;
    cask_knn_best *a;
    const cask_knn_best *b;
    cask_status st = knn_job_merge(ctx, &n, &a, &b);
    if (st)
        return st;
    return knn_launched(ctx, "knn merge: launch of knn_merge_kernel",
                    knn_cuda_merge(a, b, n, knn_task_stream(ctx)));
}

extern "C" cask_status knn_cuda_task_finish(cask_task_ctx *ctx)
{
    cask_knn_finish_args a;
    const cask_knn_best *best;
    int32_t *idx;
    float *dist;
    cask_status st = knn_job_finish(ctx, &a, &best, &idx, &dist);
    if (st)
        return st;
    return knn_launched(ctx, "knn finish: launch of knn_finish_kernel",
                    knn_cuda_finish(best, a.n, a.scale, idx, dist, knn_task_stream(ctx)));
}
