/* apps/jacobi/jacobi.h: the stencil kernels of cask-jacobi and their arguments. */
#ifndef CASK_APPS_JACOBI_H
#define CASK_APPS_JACOBI_H

#include <stdint.h>
#include "cask/cask.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "jacobi.step": one sweep of a row block (rows x n, float32, row-major).
 * Buffers: [0] R old block, [1] R row above it, [2] R row below it, [3] W new block,
 * [4] W its new first row, [5] W its new last row, and with want_res [6] W residual:
 * rows + 1 doubles, [0] = sum over the block of (new - old)^2 (the rest is scratch).
 * Columns 0 and n-1 are fixed boundary values and are copied. */
typedef struct jacobi_step_args {
    int64_t n;
    int64_t rows;
    int32_t want_res;
    int32_t pad;
} jacobi_step_args;

/* "jacobi.init": buffers [0] W block (zeros, boundary columns 0), [1] W first row,
 * [2] W last row. */
typedef struct jacobi_init_args {
    int64_t n;
    int64_t rows;
} jacobi_init_args;

cask_status jacobi_step_cpu(cask_task_ctx *ctx);
cask_status jacobi_init_cpu(cask_task_ctx *ctx);
#ifdef CASK_HAVE_CUDA
cask_status jacobi_step_cuda(cask_task_ctx *ctx);
cask_status jacobi_init_cuda(cask_task_ctx *ctx);
#endif

#ifdef __cplusplus
}
#endif
#endif
