/* apps/jacobi/stencil_cuda.cu: CUDA implementations of the Jacobi kernels. One thread
 * block per row: coalesced loads of the three rows it needs, and a residual summed in
 * a fixed tree per row, then over rows, so that it does not depend on scheduling. */
#include <cuda_runtime.h>
#include "jacobi.h"

#define JT 256

static __global__ void __launch_bounds__(JT)
step_kernel(const float *old, const float *above, const float *below, float *nw, double *rowres,
            int64_t n, int64_t rows)
{
    __shared__ double s[JT];
    for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
        const float *up = i ? old + (i - 1) * n : above;
        const float *dn = i + 1 < rows ? old + (i + 1) * n : below;
        const float *c = old + i * n;
        float *o = nw + i * n;
        double r = 0;
        for (int64_t j = threadIdx.x; j < n; j += JT) {
            if (j == 0 || j == n - 1) {
                o[j] = c[j];
                continue;
            }
            float v = __fmul_rn(0.25f, __fadd_rn(__fadd_rn(up[j], dn[j]), __fadd_rn(c[j - 1], c[j + 1])));
            double d = (double)v - (double)c[j];
            r = __dadd_rn(r, __dmul_rn(d, d));
            o[j] = v;
        }
        if (rowres) {
            s[threadIdx.x] = r;
            for (int step = 1; step < JT; step *= 2) {
                __syncthreads();
                int idx = 2 * step * threadIdx.x;
                if (idx + step < JT) s[idx] += s[idx + step];
            }
            __syncthreads();
            if (threadIdx.x == 0) rowres[i] = s[0];
            __syncthreads();
        }
    }
}

static __global__ void sum_rows_kernel(const double *rowres, int64_t rows, double *total)
{
    __shared__ double s[JT];
    double r = 0;
    for (int64_t i = threadIdx.x; i < rows; i += JT) r += rowres[i];
    s[threadIdx.x] = r;
    for (int step = 1; step < JT; step *= 2) {
        __syncthreads();
        int idx = 2 * step * threadIdx.x;
        if (idx + step < JT) s[idx] += s[idx + step];
    }
    if (threadIdx.x == 0) *total = s[0];
}

static cask_status check(cask_task_ctx *ctx, const char *what)
{
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? CASK_OK : cask_task_fail(ctx, "%s: %s", what, cudaGetErrorString(e));
}

extern "C" cask_status jacobi_step_cuda(cask_task_ctx *ctx)
{
    const jacobi_step_args *a = (const jacobi_step_args *)cask_task_args(ctx, NULL);
    cudaStream_t s = (cudaStream_t)cask_task_cuda_stream(ctx);
    float *nw = (float *)cask_task_buffer(ctx, 3);
    double *res = a->want_res ? (double *)cask_task_buffer(ctx, 6) : NULL;
    int64_t blocks = a->rows < 65535 ? a->rows : 65535;
    step_kernel<<<(unsigned)blocks, JT, 0, s>>>((const float *)cask_task_buffer(ctx, 0),
                                                (const float *)cask_task_buffer(ctx, 1),
                                                (const float *)cask_task_buffer(ctx, 2), nw,
                                                res ? res + 1 : NULL, a->n, a->rows);
    if (res) sum_rows_kernel<<<1, JT, 0, s>>>(res + 1, a->rows, res);
    size_t row = sizeof(float) * (size_t)a->n;
    cudaMemcpyAsync(cask_task_buffer(ctx, 4), nw, row, cudaMemcpyDeviceToDevice, s);
    cudaMemcpyAsync(cask_task_buffer(ctx, 5), nw + (a->rows - 1) * a->n, row,
                    cudaMemcpyDeviceToDevice, s);
    return check(ctx, "jacobi.step");
}

extern "C" cask_status jacobi_init_cuda(cask_task_ctx *ctx)
{
    const jacobi_init_args *a = (const jacobi_init_args *)cask_task_args(ctx, NULL);
    cudaStream_t s = (cudaStream_t)cask_task_cuda_stream(ctx);
    cudaMemsetAsync(cask_task_buffer(ctx, 0), 0, sizeof(float) * (size_t)(a->n * a->rows), s);
    cudaMemsetAsync(cask_task_buffer(ctx, 1), 0, sizeof(float) * (size_t)a->n, s);
    cudaMemsetAsync(cask_task_buffer(ctx, 2), 0, sizeof(float) * (size_t)a->n, s);
    return check(ctx, "jacobi.init");
}
