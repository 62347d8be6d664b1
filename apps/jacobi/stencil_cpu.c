/* apps/jacobi/stencil_cpu.c: CPU implementations of the Jacobi kernels. */
#include <string.h>
#include "jacobi.h"

cask_status jacobi_step_cpu(cask_task_ctx *ctx)
{
    const jacobi_step_args *a = cask_task_args(ctx, NULL);
    const float *old = cask_task_buffer(ctx, 0);
    const float *above = cask_task_buffer(ctx, 1), *below = cask_task_buffer(ctx, 2);
    float *nw = cask_task_buffer(ctx, 3);
    int64_t n = a->n, rows = a->rows;
    double res = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *up = i ? old + (i - 1) * n : above;
        const float *dn = i + 1 < rows ? old + (i + 1) * n : below;
        const float *c = old + i * n;
        float *o = nw + i * n;
        o[0] = c[0];
        o[n - 1] = c[n - 1];
        double r = 0;
        for (int64_t j = 1; j < n - 1; j++) {
            float v = 0.25f * ((up[j] + dn[j]) + (c[j - 1] + c[j + 1]));
            double d = (double)v - (double)c[j];
            r += d * d;
            o[j] = v;
        }
        res += r;
    }
    memcpy(cask_task_buffer(ctx, 4), nw, sizeof(float) * (size_t)n);
    memcpy(cask_task_buffer(ctx, 5), nw + (rows - 1) * n, sizeof(float) * (size_t)n);
    if (a->want_res) *(double *)cask_task_buffer(ctx, 6) = res;
    return CASK_OK;
}

cask_status jacobi_init_cpu(cask_task_ctx *ctx)
{
    const jacobi_init_args *a = cask_task_args(ctx, NULL);
    memset(cask_task_buffer(ctx, 0), 0, sizeof(float) * (size_t)(a->n * a->rows));
    memset(cask_task_buffer(ctx, 1), 0, sizeof(float) * (size_t)a->n);
    memset(cask_task_buffer(ctx, 2), 0, sizeof(float) * (size_t)a->n);
    return CASK_OK;
}
