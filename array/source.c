/* array/source.c: arrays that come from outside the DAG: host memory, constants,
 * ranges and counter-based random numbers. Generators are evaluated inside the fused
 * program of whatever consumes them, so a random array feeding a reduction is never
 * written to memory. */
#include <math.h>
#include <string.h>
#include "array/array_internal.h"

cask_status cask_array_from_host(cask_array_ctx *ctx, const void *data, cask_dtype dtype,
                                 int ndim, const int64_t *shape, const int64_t *chunks,
                                 cask_array **out)
{
    if (!ctx || !data || !out) return CASK_ERR_INVALID;
    cask_array *n;
    cask_status st = node_new(ctx, NK_HOST, dtype, ndim, shape, chunks, &n);
    if (st) return st;
    n->p.host = data;
    *out = node_intern(n);
    return CASK_OK;
}

static ak_scalar to_dtype(cask_dtype dt, double v)
{
    ak_scalar s;
    if (dt == CASK_FLOAT32) s.f = (double)(float)v;
    else if (dt == CASK_FLOAT64) s.f = v;
    else s.i = ak_float_to_int(dt, v);
    return s;
}

static cask_status gen(cask_array_ctx *ctx, int op, cask_dtype dt, int ndim,
                       const int64_t *shape, const int64_t *chunks, ak_scalar i0,
                       ak_scalar i1, ak_scalar i2, cask_array **out)
{
    if (!ctx || !out) return CASK_ERR_INVALID;
    cask_array *n;
    cask_status st = node_new(ctx, NK_GEN, dt, ndim, shape, chunks, &n);
    if (st) return st;
    n->op = op;
    n->p.imm[0] = i0;
    n->p.imm[1] = i1;
    n->p.imm[2] = i2;
    *out = node_intern(n);
    return CASK_OK;
}

cask_status cask_array_full(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                            const int64_t *shape, const int64_t *chunks, double value,
                            cask_array **out)
{
    if (!ctx) return CASK_ERR_INVALID;
    if (!dtype_valid(dtype)) return arr_error(ctx, CASK_ERR_INVALID, "invalid dtype");
    ak_scalar z;
    z.u = 0;
    return gen(ctx, AK_OP_SET, dtype, ndim, shape, chunks, to_dtype(dtype, value), z, z, out);
}

cask_status cask_array_zeros(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                             const int64_t *shape, const int64_t *chunks, cask_array **out)
{
    return cask_array_full(ctx, dtype, ndim, shape, chunks, 0.0, out);
}

cask_status cask_array_ones(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                            const int64_t *shape, const int64_t *chunks, cask_array **out)
{
    return cask_array_full(ctx, dtype, ndim, shape, chunks, 1.0, out);
}

cask_status cask_array_arange(cask_array_ctx *ctx, cask_dtype dtype, int64_t n,
                              double start, double step, int64_t chunk, cask_array **out)
{
    if (!ctx) return CASK_ERR_INVALID;
    if (!dtype_valid(dtype)) return arr_error(ctx, CASK_ERR_INVALID, "invalid dtype");
    ak_scalar a, b, z;
    z.u = 0;
    if (ak_dt_is_float(dtype)) {
        a.f = start;
        b.f = step;
    } else {
        if (start != trunc(start) || step != trunc(step))
            return arr_error(ctx, CASK_ERR_INVALID, "integer arange needs integral start, step");
        a.i = (int64_t)start;
        b.i = (int64_t)step;
    }
    int64_t shape[1] = {n}, chunks[1] = {chunk};
    return gen(ctx, AK_OP_ARANGE, dtype, 1, shape, chunk > 0 ? chunks : NULL, a, b, z, out);
}

static cask_status random_gen(cask_array_ctx *ctx, int op, cask_dtype dtype, int ndim,
                              const int64_t *shape, const int64_t *chunks, uint64_t seed,
                              double p1, double p2, cask_array **out)
{
    if (!ctx) return CASK_ERR_INVALID;
    if (dtype != CASK_FLOAT32 && dtype != CASK_FLOAT64)
        return arr_error(ctx, CASK_ERR_INVALID, "random arrays are float32 or float64");
    ak_scalar s, a, b;
    s.u = seed;
    a.f = p1;
    b.f = p2;
    return gen(ctx, op, dtype, ndim, shape, chunks, s, a, b, out);
}

cask_status cask_array_random_uniform(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                                      const int64_t *shape, const int64_t *chunks,
                                      uint64_t seed, double lo, double hi, cask_array **out)
{
    if (ctx && !(lo < hi)) return arr_error(ctx, CASK_ERR_INVALID, "uniform needs lo < hi");
    return random_gen(ctx, AK_OP_RAND_U, dtype, ndim, shape, chunks, seed, lo, hi, out);
}

cask_status cask_array_random_normal(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                                     const int64_t *shape, const int64_t *chunks,
                                     uint64_t seed, double mean, double stddev,
                                     cask_array **out)
{
    if (ctx && !(stddev >= 0)) return arr_error(ctx, CASK_ERR_INVALID, "stddev must be >= 0");
    return random_gen(ctx, AK_OP_RAND_N, dtype, ndim, shape, chunks, seed, mean, stddev, out);
}
