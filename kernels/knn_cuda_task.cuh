/* kernels/knn_cuda_task.cuh (internal): what the k-NN kernels' cask task implementations
 * (knn_cuda_tasks.cu, knn_k_cuda.cu) share: the task's stream, and a launch's error
 * turned into the task's failure, naming the launch. */
#ifndef CASK_KERNELS_KNN_CUDA_TASK_CUH
#define CASK_KERNELS_KNN_CUDA_TASK_CUH

#include <cuda_runtime.h>
#include "cask/cask.h"

static inline cudaStream_t knn_task_stream(cask_task_ctx *ctx)
{
    return (cudaStream_t)cask_task_cuda_stream(ctx);
}

/* CASK_OK after a good launch; else the task fails with "what: error (name)". */
static inline cask_status knn_launched(cask_task_ctx *ctx, const char *what, cudaError_t e)
{
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "%s: %s (%s)", what, cudaGetErrorString(e),
                              cudaGetErrorName(e));
    return CASK_OK;
}

#endif
