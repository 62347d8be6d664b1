/* array/matmul.c: the matrix product of 2-D arrays by tiles. Output tile (i, j) is made
 * by one task per inner tile index k, in order: the first writes A(i,0) B(0,j), each
 * next adds A(i,k) B(k,j) (cuBLAS gemm on a GPU, a blocked loop on a CPU). The chain
 * over k is sequential through the tile's access mode, so the result is deterministic
 * for a given chunking. */
#include <string.h>
#include "array/array_internal.h"

cask_status cask_array_matmul(cask_array *a, cask_array *b, cask_array **out)
{
    if (!a || !b || !out) return CASK_ERR_INVALID;
    cask_array_ctx *ctx = a->ctx;
    if (b->ctx != ctx) return arr_error(ctx, CASK_ERR_INVALID, "arrays of different contexts");
    if (a->ndim != 2 || b->ndim != 2)
        return arr_error(ctx, CASK_ERR_INVALID, "matmul needs 2-D arrays (got %d-D and %d-D)",
                         a->ndim, b->ndim);
    if (a->shape[1] != b->shape[0])
        return arr_error(ctx, CASK_ERR_INVALID, "matmul of %lldx%lld and %lldx%lld",
                         (long long)a->shape[0], (long long)a->shape[1],
                         (long long)b->shape[0], (long long)b->shape[1]);
    cask_dtype dt = dtype_promote(a->dtype, b->dtype);
    cask_array *ac = NULL, *bc = NULL, *br = NULL, *n;
    cask_status st;
    if ((st = arr_cast(a, dt, &ac)) || (st = arr_cast(b, dt, &bc))) goto done;
    int64_t bch[2] = {ac->chunk[1], bc->chunk[1]};
    if ((st = arr_rechunk(bc, bch, &br))) goto done;
    int64_t shape[2] = {a->shape[0], b->shape[1]}, chunks[2] = {ac->chunk[0], br->chunk[1]};
    if ((st = node_new(ctx, NK_MATMUL, dt, 2, shape, chunks, &n))) goto done;
    node_add_input(n, ac);
    node_add_input(n, br);
    *out = node_intern(n);
done:
    cask_array_release(ac);
    cask_array_release(bc);
    cask_array_release(br);
    return st;
}

cask_status matmul_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    cask_array *A = n->in[0], *B = n->in[1];
    cask_status st = plan_out_handle(pl, n, idx, out);
    if (st) return st;
    /* BLAS threads: big tiles (gemms of 2^30 multiply-adds and more) get every worker's
       core each, one tile at a time (OpenBLAS runs one threaded call at a time); smaller
       ones run serial gemms side by side when the workers have a tile each, else the
       spare workers go to each gemm. The run takes the smallest any product wants.
       16 Xeon cores, 8192^2 float32: 2048^2 tiles 615 GFLOP/s serial side by side, 963
       threaded; 4096^2 tiles 255 and 1196 (docs/arrays.md). */
    int want = pl->ctx->blas_threads;
    if (!want) {
        int64_t tiles = n->nch[0] * n->nch[1], w = pl->ctx->ncpu > 0 ? pl->ctx->ncpu : 1;
        double madds = (double)n->chunk[0] * (double)n->chunk[1] * (double)A->chunk[1];
        /* a big tile's gemm gets every core, also one a GPU worker holds (idle while the
           product runs on CPUs: with the H200 visible, 15 threads ran 2048^2 in 18.4 ms,
           16 in 14.9 without it) */
        int64_t cores = pl->ctx->ncores > w ? pl->ctx->ncores : w;
        want = madds >= 1073741824.0 ? (int)cores : tiles >= w ? 1 : (int)(w / tiles);
    }
    if (!pl->blas_threads || want < pl->blas_threads) pl->blas_threads = want;
    for (int64_t k = 0; k < A->nch[1]; k++) {
        int64_t ai[2] = {idx[0], k}, bi[2] = {k, idx[1]};
        ak_geom ag, bg;
        chunk_geom(A, ai, &ag);
        chunk_geom(B, bi, &bg);
        ak_mm_args m;
        memset(&m, 0, sizeof m);
        m.dt = n->dtype;
        m.beta = k > 0;
        m.m = ag.shape[0];
        m.k = ag.shape[1];
        m.n = bg.shape[1];
        m.blas = pl->ctx->blas;
        cask_access acc[3];
        if ((st = plan_chunk_idx(pl, A, ai, &acc[0].data)) ||
            (st = plan_chunk_idx(pl, B, bi, &acc[1].data)))
            return st;
        acc[0].mode = acc[1].mode = CASK_READ;
        acc[2].data = *out;
        acc[2].mode = k ? CASK_RW : CASK_WRITE;
        if ((st = plan_task(pl, pl->ctx->k.matmul, acc, 3, &m, sizeof m, "array.matmul", 1, -1)))
            return st;
    }
    return CASK_OK;
}
