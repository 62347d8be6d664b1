/* array/linalg_solve.c: cask_array_cho_solve, A x = b from the Cholesky factor L of A:
 * forward substitution L y = b, then backward L^T x = y, by tiles. For each column chunk
 * of b and each tile row i (forward: i = 0, 1, ...): GEMM x_i -= L_ik x_k for k < i in
 * order, then TRSM x_i = L_ii^-1 x_i; backward (i = nt-1, ..., 0): GEMM x_i -= L_ki^T x_k
 * for k > i in order, then TRSM x_i = L_ii^-T x_i. Each tile's updates come in a fixed
 * order, so the result does not depend on the workers. Only L's lower tiles are read. */
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

cask_status cask_array_cho_solve(cask_array *l, cask_array *b, cask_array **out)
{
    if (!l || !b || !out) return CASK_ERR_INVALID;
    cask_array_ctx *ctx = l->ctx;
    if (b->ctx != ctx) return arr_error(ctx, CASK_ERR_INVALID, "arrays of different contexts");
    if (l->ndim != 2 || l->shape[0] != l->shape[1] || l->chunk[0] != l->chunk[1])
        return arr_error(ctx, CASK_ERR_INVALID, "cho_solve needs a square factor with square "
                         "tiles (cask_array_cholesky's result)");
    if (l->dtype != CASK_FLOAT32 && l->dtype != CASK_FLOAT64)
        return arr_error(ctx, CASK_ERR_INVALID, "cho_solve needs a float32 or float64 factor "
                         "(got %s)", cask_dtype_name(l->dtype));
    if (b->ndim < 1 || b->ndim > 2 || b->shape[0] != l->shape[0])
        return arr_error(ctx, CASK_ERR_INVALID, "cho_solve: b must be 1-D of length %lld or "
                         "2-D with %lld rows (got %d-D, %lld rows)", (long long)l->shape[0],
                         (long long)l->shape[0], b->ndim, (long long)b->shape[0]);
    cask_array *bc = NULL, *br = NULL, *n = NULL;
    cask_status st;
    if ((st = arr_cast(b, l->dtype, &bc))) return st;
    int64_t ch[2] = {l->chunk[0], b->ndim == 2 ? bc->chunk[1] : 1};
    if ((st = arr_rechunk(bc, ch, &br))) goto done;
    if ((st = node_new(ctx, NK_CHO_SOLVE, l->dtype, b->ndim, b->shape, ch, &n))) goto done;
    node_add_input(n, l);
    node_add_input(n, br);
    *out = node_intern(n);
done:
    cask_array_release(bc);
    cask_array_release(br);
    return st;
}

/* Lowers the solve of column chunk c (every tile row of it). */
static cask_status solve_column(plan *pl, cask_array *n, int64_t c, cask_data **x)
{
    cask_array *L = n->in[0], *B = n->in[1];
    int64_t nt = L->nch[0], t = L->chunk[0], rows = L->shape[0];
    int64_t cols = n->ndim == 2 ? (c * n->chunk[1] + n->chunk[1] <= n->shape[1]
                                   ? n->chunk[1] : n->shape[1] - c * n->chunk[1]) : 1;
    uint8_t *touched = calloc((size_t)nt, 1);
    if (!touched) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    cask_status st = CASK_OK;
    /* pass 0 forward (L y = b), pass 1 backward (L^T x = y) */
    for (int pass = 0; pass < 2 && !st; pass++) {
        for (int64_t s = 0; s < nt && !st; s++) {
            int64_t i = pass == 0 ? s : nt - 1 - s;
            int64_t bi = la_tile_rows(rows, t, i);
            int64_t lo = pass == 0 ? 0 : i + 1, hi = pass == 0 ? i : nt;
            /* the updates, then the triangular solve (op index: hi - lo GEMMs, 1 TRSM) */
            for (int64_t k = lo; k <= hi && !st; k++) {
                int trsm = k == hi;
                la_args a;
                memset(&a, 0, sizeof a);
                a.dt = n->dtype == CASK_FLOAT64 ? LA_F64 : LA_F32;
                a.ti = i;
                a.tj = c;
                a.row0 = i * t;
                cask_access acc[4];
                int m = 0;
                int64_t xi[2] = {i, c};
                if (!touched[i]) {
                    int64_t bidx[2] = {i, c};
                    if ((st = plan_chunk_idx(pl, B, bidx, &acc[m].data))) break;
                    acc[m++].mode = CASK_READ;
                    if ((st = plan_out_handle(pl, n, xi, &x[i]))) break;
                    a.copy_in = 1;
                }
                int64_t li[2];
                if (trsm) {
                    li[0] = li[1] = i;
                } else if (pass == 0) {
                    li[0] = i, li[1] = k;
                } else {
                    li[0] = k, li[1] = i;
                }
                if ((st = plan_chunk_idx(pl, L, li, &acc[m].data))) break;
                acc[m++].mode = CASK_READ;
                if (!trsm) {
                    acc[m].data = x[k];
                    acc[m++].mode = CASK_READ;
                }
                acc[m].data = x[i];
                acc[m++].mode = touched[i] ? CASK_RW : CASK_WRITE;
                touched[i] = 1;
                int64_t bk = la_tile_rows(rows, t, k);
                if (trsm) {
                    a.side = 'L';
                    a.trans = pass;
                    a.m = bi;
                    a.n = cols;
                    st = la_task(pl, LA_TRSM, &a, acc, m, 0);
                } else {
                    a.ta = pass;   /* backward: L_ki^T */
                    a.m = bi;
                    a.n = cols;
                    a.k = bk;
                    st = la_task(pl, LA_GEMM, &a, acc, m, 0);
                }
                if (trsm) break;
            }
        }
    }
    free(touched);
    return st;
}

cask_status chosolve_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    plan_node *pn = n->pn;
    int64_t nt = n->nch[0], ncol = n->ndim == 2 ? n->nch[1] : 1;
    int64_t c = n->ndim == 2 ? idx[1] : 0;
    /* (pn->chunks is row-major over (tile row, column chunk)) */
    if (!pn->chunks[(nt - 1) * ncol + c] || !pn->chunks[c]) {
        cask_data **x = calloc((size_t)nt, sizeof *x);
        if (!x) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
        cask_status st = solve_column(pl, n, c, x);
        for (int64_t i = 0; i < nt && !st; i++) pn->chunks[i * ncol + c] = x[i];
        free(x);
        if (st) return st;
    }
    *out = pn->chunks[idx[0] * ncol + c];
    return CASK_OK;
}
