/* kernels/knn_k_order.cuh (internal): korder, the counting sort by cell key that the
 * K-nearest search (knn_k_cuda.cu) runs on a chunk's observations and on the references
 * (prep_sorted); knn_k_order.cu. */
#ifndef CASK_KERNELS_KNN_K_ORDER_CUH
#define CASK_KERNELS_KNN_K_ORDER_CUH

#include <cuda_runtime.h>
#include "kernels/knn_sort.h"

/* Blocks of `threads` that cover n items. */
static inline unsigned blocks_of(int64_t n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

/* Orders the n points of obs into the scratch's sorted float4 layout (the original row in
 * .w) on stream s: by cell key when prune, else in row order. */
cudaError_t knn_k_order_launch(const void *obs, int64_t n, cask_knn_points in, int prune,
                               void *scratch, cudaStream_t s);

#endif
