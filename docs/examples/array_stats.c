/* docs/examples/array_stats.c: the example of docs/arrays.md. The mean and standard
 * deviation of 2^30 normal random numbers on every GPU (CPU cores without one), and the
 * position of the minimum of a 2-D array; both checked. Optional argument: log2 of the
 * number of random values (default 30). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cask/cask.h"

int main(int argc, char **argv)
{
    int log2n = argc > 1 ? atoi(argv[1]) : 30;
    cask_runtime *rt;
    cask_array_ctx *ctx;
    cask_runtime_info info;
    if (log2n < 8 || log2n > 40 || cask_init(NULL, &rt) || cask_array_ctx_create(rt, &ctx))
        return 1;
    cask_runtime_query(rt, &info);
    if (info.ngpus > 0) cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU);

    /* 2^30 float32 values ~ N(3, 2^2), chunks of 2^26. Nothing is computed (or stored)
     * here: the generator is fused into the reduction tasks that consume it. */
    int64_t n = (int64_t)1 << log2n, chunk = n >> 4;
    cask_array *x, *mean, *sd;
    cask_array_random_normal(ctx, CASK_FLOAT32, 1, &n, &chunk, 42, 3.0, 2.0, &x);
    cask_array_reduce(CASK_REDUCE_MEAN, x, CASK_AXIS_ALL, &mean);
    cask_array_std(x, CASK_AXIS_ALL, 0, &sd);
    float m, s;
    cask_array *outs[2] = {mean, sd};
    void *vals[2] = {&m, &s};
    cask_status st = cask_array_compute_many(ctx, 2, outs, vals, NULL);   /* one graph */
    double tol = 6.0 * 2.0 / sqrt((double)n);                 /* 6 standard errors */
    int ok = !st && fabs(m - 3.0) < tol && fabs(s - 2.0) < tol;
    printf("mean %.6f std %.6f of 2^%d normals: %s\n", m, s, log2n, ok ? "ok" : "WRONG");

    /* argmin of a 2-D array from host memory: (i - 1234)^2 + (j - 567)^2 + 1 */
    int64_t shape[2] = {2048, 2048}, ch[2] = {512, 700};
    float *h = malloc(sizeof(float) * 2048 * 2048);
    for (int64_t i = 0; i < 2048; i++)
        for (int64_t j = 0; j < 2048; j++)
            h[i * 2048 + j] = (float)((i - 1234) * (i - 1234) + (j - 567) * (j - 567) + 1);
    cask_array *a, *where;
    cask_array_from_host(ctx, h, CASK_FLOAT32, 2, shape, ch, &a);
    cask_array_reduce(CASK_REDUCE_ARGMIN, a, CASK_AXIS_ALL, &where);
    int64_t flat = -1;
    st = cask_array_compute(where, &flat, sizeof flat);
    int ok2 = !st && flat == 1234 * 2048 + 567;
    printf("argmin at row %lld col %lld: %s\n", (long long)(flat / 2048), (long long)(flat % 2048),
           ok2 ? "ok" : "WRONG");

    cask_array *all[] = {x, mean, sd, a, where};
    for (int i = 0; i < 5; i++) cask_array_release(all[i]);
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    free(h);
    return ok && ok2 ? 0 : 1;
}
