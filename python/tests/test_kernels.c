/* test_kernels.c: C kernels of a user's own shared library, loaded by the Python tests
 * of map_blocks (cask.array.Kernel): only the public API. */
#include <string.h>
#include <time.h>
#include "cask/cask.h"

/* out = in * factor (float64 blocks); args: one double */
cask_status scale_f64(cask_task_ctx *ctx)
{
    const void *ua;
    size_t us;
    const cask_array_block *b = cask_array_task_block(ctx, &ua, &us);
    if (!b || us != sizeof(double))
        return cask_task_fail(ctx, "scale_f64 needs one double argument");
    double f;
    memcpy(&f, ua, sizeof f);
    const double *in = cask_task_buffer(ctx, 0);
    double *out = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 1) / sizeof *out;
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] * f;
    return CASK_OK;
}

/* out = global row index of each element (int64 blocks of a 2-D array) */
cask_status row_index(cask_task_ctx *ctx)
{
    const cask_array_block *b = cask_array_task_block(ctx, NULL, NULL);
    int64_t *out = cask_task_buffer(ctx, b->nin);
    for (int64_t i = 0; i < b->out.shape[0]; i++)
        for (int64_t j = 0; j < b->out.shape[1]; j++)
            out[i * b->out.shape[1] + j] = b->out.offset[0] + i;
    return CASK_OK;
}

/* always fails: errors reach Python with cask's message */
cask_status always_fails(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "this kernel fails on purpose");
}

/* out = in after 200 ms (float64 blocks): a compute long enough to interrupt */
cask_status sleepy(cask_task_ctx *ctx)
{
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    memcpy(cask_task_buffer(ctx, 1), cask_task_buffer(ctx, 0), cask_task_buffer_size(ctx, 1));
    return CASK_OK;
}
