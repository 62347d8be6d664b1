/* kernels/knn_k_order.cu: korder, a counting sort of a chunk's points by cell key (keys
 * and counts, one block's scan of the KNN_NCELLS counts, scatter by atomics), 3 launches
 * and a memset. The order within a cell then depends on the atomics: tiles may differ
 * between runs, the K-nearest results (knn_k_cuda.cu) never. */
#include <cuda_runtime.h>
#include "kernels/knn_k_order.cuh"

static __global__ void k_keys_kernel(const void *obs, int64_t n, cask_knn_points in,
                                     uint32_t *keys, uint32_t *counts, float4 *sorted, int prune)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double v[3];
    knn_load_point(obs, i, in, v);
    float x = (float)v[0], y = (float)v[1], z = (float)v[2];
    if (!prune) { /* row order: the scratch is final */
        sorted[i] = make_float4(x, y, z, __int_as_float((int)i));
        return;
    }
    uint32_t k = knn_cell_key(x, y, z);
    keys[i] = k;
    atomicAdd(&counts[k], 1u);
}

#define SCAN_THREADS 1024
static __global__ void k_scan_kernel(uint32_t *counts)
{
    /* exclusive scan of KNN_NCELLS counts by one block: each thread a contiguous run */
    __shared__ uint32_t s_sum[SCAN_THREADS];
    const int per = (KNN_NCELLS + SCAN_THREADS - 1) / SCAN_THREADS;
    const int t = threadIdx.x, c0 = t * per;
    uint32_t local = 0;
    for (int c = c0; c < c0 + per && c < KNN_NCELLS; ++c)
        local += counts[c];
    s_sum[t] = local;
    __syncthreads();
    for (int off = 1; off < SCAN_THREADS; off <<= 1) {
        uint32_t v = t >= off ? s_sum[t - off] : 0;
        __syncthreads();
        s_sum[t] += v;
        __syncthreads();
    }
    uint32_t run = s_sum[t] - local;
    for (int c = c0; c < c0 + per && c < KNN_NCELLS; ++c) {
        uint32_t k = counts[c];
        counts[c] = run;
        run += k;
    }
}

static __global__ void k_scatter_kernel(const void *obs, int64_t n, cask_knn_points in,
                                        const uint32_t *keys, uint32_t *counts, float4 *sorted)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double v[3];
    knn_load_point(obs, i, in, v);
    uint32_t pos = atomicAdd(&counts[keys[i]], 1u);
    sorted[pos] = make_float4((float)v[0], (float)v[1], (float)v[2], __int_as_float((int)i));
}

cudaError_t knn_k_order_launch(const void *obs, int64_t n, cask_knn_points in, int prune,
                               void *scratch, cudaStream_t s)
{
    if (n <= 0)
        return cudaGetLastError();
    uint32_t *counts = knn_scratch_counts(scratch), *keys = knn_scratch_keys(scratch);
    float4 *sorted = (float4 *)knn_scratch_sorted(scratch, n);
    cudaError_t e;
    if (prune && (e = cudaMemsetAsync(counts, 0, (size_t)KNN_NCELLS * 4, s)) != cudaSuccess)
        return e;
    k_keys_kernel<<<blocks_of(n, 256), 256, 0, s>>>(obs, n, in, keys, counts, sorted, prune);
    if (!prune)
        return cudaGetLastError();
    k_scan_kernel<<<1, SCAN_THREADS, 0, s>>>(counts);
    k_scatter_kernel<<<blocks_of(n, 256), 256, 0, s>>>(obs, n, in, keys, counts, sorted);
    return cudaGetLastError();
}
