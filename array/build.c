/* array/build.c: the lazy operations that only build graph: elementwise unary and
 * binary operations with broadcasting, casts, rechunk, chunk-aligned slices, inserted
 * axes, and user kernels on blocks (map_blocks, blockwise). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

static int dtype_rank(cask_dtype d)
{
    static const int rank[] = {3, 4, 0, 2, 1};   /* f32 f64 i32 i64 u32 */
    return rank[d];
}

cask_dtype dtype_promote(cask_dtype a, cask_dtype b)
{
    return dtype_rank(a) >= dtype_rank(b) ? a : b;
}

cask_status arr_cast(cask_array *x, cask_dtype dt, cask_array **out)
{
    if (x->dtype == dt) {
        *out = cask_array_retain(x);
        return CASK_OK;
    }
    cask_array *n;
    cask_status st = node_new(x->ctx, NK_CAST, dt, x->ndim, x->shape, x->chunk, &n);
    if (st) return st;
    node_add_input(n, x);
    *out = node_intern(n);
    return CASK_OK;
}

static int same_chunks(const cask_array *x, const int64_t *chunks)
{
    for (int k = 0; k < x->ndim; k++) {
        int64_t c = chunks[k] < x->shape[k] ? chunks[k] : x->shape[k];
        if (c != x->chunk[k]) return 0;
    }
    return 1;
}

cask_status arr_rechunk(cask_array *x, const int64_t *chunks, cask_array **out)
{
    if (same_chunks(x, chunks)) {
        *out = cask_array_retain(x);
        return CASK_OK;
    }
    if (x->kind == NK_RECHUNK && !x->mat) x = x->in[0];   /* rechunk of a rechunk */
    if (same_chunks(x, chunks)) {
        *out = cask_array_retain(x);
        return CASK_OK;
    }
    cask_array *n;
    cask_status st = node_new(x->ctx, NK_RECHUNK, x->dtype, x->ndim, x->shape, chunks, &n);
    if (st) return st;
    node_add_input(n, x);
    *out = node_intern(n);
    return CASK_OK;
}

cask_status cask_array_rechunk(cask_array *a, const int64_t *chunks, cask_array **out)
{
    if (!a || !out || (a->ndim && !chunks)) return CASK_ERR_INVALID;
    for (int k = 0; k < a->ndim; k++)
        if (chunks[k] < 1)
            return arr_error(a->ctx, CASK_ERR_INVALID, "chunk size %lld on axis %d",
                             (long long)chunks[k], k);
    return arr_rechunk(a, chunks, out);
}

cask_status arr_broadcast(cask_array_ctx *ctx, int nin, cask_array *const *in,
                          int *ndim_out, int64_t *shape, int64_t *chunks, cask_array **out_in)
{
    int nd = 0;
    for (int i = 0; i < nin; i++) {
        if (!in[i] || in[i]->ctx != ctx)
            return arr_error(ctx, CASK_ERR_INVALID, "input %d is NULL or of another context", i);
        if (in[i]->ndim > nd) nd = in[i]->ndim;
    }
    for (int k = 0; k < nd; k++) {
        shape[k] = 1;
        chunks[k] = 1;
        int have = 0;
        for (int i = 0; i < nin; i++) {
            int lead = nd - in[i]->ndim;
            if (k < lead) continue;
            int64_t s = in[i]->shape[k - lead];
            if (s == 1) continue;
            if (shape[k] != 1 && shape[k] != s)
                return arr_error(ctx, CASK_ERR_INVALID,
                                 "shapes do not broadcast on axis %d (%lld vs %lld)", k,
                                 (long long)shape[k], (long long)s);
            shape[k] = s;
            if (!have) chunks[k] = in[i]->chunk[k - lead];
            have = 1;
        }
    }
    for (int i = 0; i < nin; i++) {
        int lead = nd - in[i]->ndim;
        int64_t want[MAXD];
        for (int k = 0; k < in[i]->ndim; k++)
            want[k] = in[i]->shape[k] == 1 ? 1 : chunks[k + lead];
        cask_status st = arr_rechunk(in[i], want, &out_in[i]);
        if (st) {
            while (i--) cask_array_release(out_in[i]);
            return st;
        }
    }
    *ndim_out = nd;
    return CASK_OK;
}

static int is_float_fn(cask_unary_op op)
{
    return op == CASK_SQRT || op == CASK_EXP || op == CASK_LOG || op == CASK_SIN ||
           op == CASK_COS;
}

cask_status cask_array_unary(cask_unary_op op, cask_array *a, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    if ((int)op < 0 || op >= CASK_UNARY_COUNT_)
        return arr_error(a->ctx, CASK_ERR_INVALID, "unknown unary op %d", (int)op);
    cask_array *x, *n;
    cask_dtype dt = (is_float_fn(op) && !ak_dt_is_float(a->dtype)) ? CASK_FLOAT64 : a->dtype;
    cask_status st = arr_cast(a, dt, &x);
    if (st) return st;
    st = node_new(a->ctx, NK_UNARY, dt, x->ndim, x->shape, x->chunk, &n);
    if (!st) {
        n->op = AK_OP_UNARY0 + (int)op;
        node_add_input(n, x);
        *out = node_intern(n);
    }
    cask_array_release(x);
    return st;
}

cask_status cask_array_binary(cask_binary_op op, cask_array *a, cask_array *b,
                              cask_array **out)
{
    if (!a || !b || !out) return CASK_ERR_INVALID;
    cask_array_ctx *ctx = a->ctx;
    if (b->ctx != ctx) return arr_error(ctx, CASK_ERR_INVALID, "arrays of different contexts");
    if ((int)op < 0 || op >= CASK_BINARY_COUNT_)
        return arr_error(ctx, CASK_ERR_INVALID, "unknown binary op %d", (int)op);
    cask_dtype dt = dtype_promote(a->dtype, b->dtype);
    cask_array *c[2] = {NULL, NULL}, *r[2] = {NULL, NULL}, *n = NULL;
    int nd;
    int64_t shape[MAXD], chunks[MAXD];
    cask_status st;
    if ((st = arr_cast(a, dt, &c[0])) || (st = arr_cast(b, dt, &c[1]))) goto done;
    if ((st = arr_broadcast(ctx, 2, c, &nd, shape, chunks, r))) goto done;
    if ((st = node_new(ctx, NK_BINARY, dt, nd, shape, chunks, &n))) goto done;
    n->op = AK_OP_BINARY0 + (int)op;
    node_add_input(n, r[0]);
    node_add_input(n, r[1]);
    *out = node_intern(n);
done:
    for (int i = 0; i < 2; i++) {
        cask_array_release(c[i]);
        cask_array_release(r[i]);
    }
    return st;
}

cask_status cask_array_binary_scalar(cask_binary_op op, cask_array *a, double scalar,
                                     int scalar_first, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    if ((int)op < 0 || op >= CASK_BINARY_COUNT_)
        return arr_error(a->ctx, CASK_ERR_INVALID, "unknown binary op %d", (int)op);
    cask_dtype dt = a->dtype;
    /* a fractional scalar with an integer array computes in float64 */
    if (!ak_dt_is_float(dt) && scalar != trunc(scalar)) dt = CASK_FLOAT64;
    cask_array *x, *n;
    cask_status st = arr_cast(a, dt, &x);
    if (st) return st;
    st = node_new(a->ctx, NK_SCALAR, dt, x->ndim, x->shape, x->chunk, &n);
    if (!st) {
        n->op = AK_OP_BINARY0 + (int)op;
        n->p.scalar_first = scalar_first ? 1 : 0;
        if (dt == CASK_FLOAT32) n->p.imm[0].f = (double)(float)scalar;
        else if (dt == CASK_FLOAT64) n->p.imm[0].f = scalar;
        else n->p.imm[0].i = ak_float_to_int(dt, scalar);
        node_add_input(n, x);
        *out = node_intern(n);
    }
    cask_array_release(x);
    return st;
}

cask_status cask_array_astype(cask_array *a, cask_dtype dtype, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    if (!dtype_valid(dtype)) return arr_error(a->ctx, CASK_ERR_INVALID, "invalid dtype");
    return arr_cast(a, dtype, out);
}

/* ---- structure ---- */

cask_status cask_array_slice(cask_array *a, const int64_t *start, const int64_t *stop,
                             cask_array **out)
{
    if (!a || !out || (a->ndim && (!start || !stop))) return CASK_ERR_INVALID;
    int64_t shape[MAXD], st0[MAXD];
    int whole = 1;
    for (int k = 0; k < a->ndim; k++) {
        if (start[k] < 0 || stop[k] > a->shape[k] || start[k] >= stop[k])
            return arr_error(a->ctx, CASK_ERR_INVALID, "slice [%lld, %lld) of axis %d (size %lld)",
                             (long long)start[k], (long long)stop[k], k, (long long)a->shape[k]);
        if (start[k] % a->chunk[k] || (stop[k] % a->chunk[k] && stop[k] != a->shape[k]))
            return arr_error(a->ctx, CASK_ERR_INVALID,
                             "slice [%lld, %lld) of axis %d is not aligned to its chunks of %lld",
                             (long long)start[k], (long long)stop[k], k, (long long)a->chunk[k]);
        shape[k] = stop[k] - start[k];
        st0[k] = start[k];
        whole &= shape[k] == a->shape[k];
    }
    if (whole) {
        *out = cask_array_retain(a);
        return CASK_OK;
    }
    cask_array *src = a;
    if (a->kind == NK_SLICE && !a->mat) {   /* a slice of a slice is one slice */
        src = a->in[0];
        for (int k = 0; k < a->ndim; k++) st0[k] += a->p.start[k];
    }
    cask_array *n;
    cask_status st = node_new(a->ctx, NK_SLICE, a->dtype, a->ndim, shape, a->chunk, &n);
    if (st) return st;
    for (int k = 0; k < a->ndim; k++) n->p.start[k] = st0[k];
    node_add_input(n, src);
    *out = node_intern(n);
    return CASK_OK;
}

cask_status cask_array_expand_dims(cask_array *a, int axis, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    if (axis < 0 || axis > a->ndim || a->ndim + 1 > MAXD)
        return arr_error(a->ctx, CASK_ERR_INVALID, "cannot insert axis %d into %d dims", axis,
                         a->ndim);
    int64_t shape[MAXD], chunks[MAXD];
    for (int k = 0, j = 0; k <= a->ndim; k++) {
        if (k == axis) {
            shape[k] = 1;
            chunks[k] = 1;
        } else {
            shape[k] = a->shape[j];
            chunks[k] = a->chunk[j];
            j++;
        }
    }
    cask_array *n;
    cask_status st = node_new(a->ctx, NK_EXPAND, a->dtype, a->ndim + 1, shape, chunks, &n);
    if (st) return st;
    n->p.axis = axis;
    node_add_input(n, a);
    *out = node_intern(n);
    return CASK_OK;
}

/* ---- user kernels ---- */

static cask_status set_blob(cask_array *n, const void *args, size_t size)
{
    if (!size) return CASK_OK;
    if (!args) return arr_error(n->ctx, CASK_ERR_INVALID, "args_size without args");
    n->blob = malloc(size);
    if (!n->blob) return arr_error(n->ctx, CASK_ERR_NOMEM, "out of memory");
    memcpy(n->blob, args, size);
    n->blob_len = size;
    return CASK_OK;
}

cask_status cask_array_map_blocks(cask_kernel *kernel, int nin, cask_array *const *in,
                                  cask_dtype out_dtype, const void *args, size_t args_size,
                                  cask_array **out)
{
    if (!kernel || !out || nin < 1 || nin > AK_MAX_IN || !in || !in[0])
        return CASK_ERR_INVALID;
    cask_array_ctx *ctx = in[0]->ctx;
    if (!dtype_valid(out_dtype)) return arr_error(ctx, CASK_ERR_INVALID, "invalid dtype");
    cask_array *r[AK_MAX_IN], *n = NULL;
    int nd;
    int64_t shape[MAXD], chunks[MAXD];
    cask_status st = arr_broadcast(ctx, nin, in, &nd, shape, chunks, r);
    if (st) return st;
    if ((st = node_new(ctx, NK_BLOCKWISE, out_dtype, nd, shape, chunks, &n))) goto done;
    n->p.kernel = kernel;
    n->p.axis = 1;   /* map mode: blocks matched by broadcasting */
    for (int i = 0; i < nin; i++) node_add_input(n, r[i]);
    if ((st = set_blob(n, args, args_size))) {
        node_discard(n);
        goto done;
    }
    *out = node_intern(n);
done:
    for (int i = 0; i < nin; i++) cask_array_release(r[i]);
    return st;
}

cask_status cask_array_blockwise(cask_kernel *kernel, const char *out_index, int nin,
                                 cask_array *const *in, const char *const *in_index,
                                 cask_dtype out_dtype, const void *args, size_t args_size,
                                 cask_array **out)
{
    if (!kernel || !out || !out_index || nin < 1 || nin > AK_MAX_IN || !in || !in_index ||
        !in[0])
        return CASK_ERR_INVALID;
    cask_array_ctx *ctx = in[0]->ctx;
    if (!dtype_valid(out_dtype)) return arr_error(ctx, CASK_ERR_INVALID, "invalid dtype");
    int64_t lsize[128], lchunk[128], lnch[128];
    for (int c = 0; c < 128; c++) lsize[c] = -1;
    int nblocks = 0;
    for (int i = 0; i < nin; i++) {
        if (!in[i] || in[i]->ctx != ctx || !in_index[i])
            return arr_error(ctx, CASK_ERR_INVALID, "input %d missing or of another context", i);
        if ((int)strlen(in_index[i]) != in[i]->ndim)
            return arr_error(ctx, CASK_ERR_INVALID, "index \"%s\" of input %d: %d axes expected",
                             in_index[i], i, in[i]->ndim);
        int blocks = 1;
        for (int k = 0; k < in[i]->ndim; k++) {
            unsigned char c = (unsigned char)in_index[i][k];
            if (c >= 128 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
                return arr_error(ctx, CASK_ERR_INVALID, "index letters must be a-z, A-Z");
            if (lsize[c] < 0) {
                lsize[c] = in[i]->shape[k];
                lchunk[c] = in[i]->chunk[k];
                lnch[c] = in[i]->nch[k];
            } else if (lsize[c] != in[i]->shape[k] || lchunk[c] != in[i]->chunk[k]) {
                return arr_error(ctx, CASK_ERR_INVALID,
                                 "letter '%c' has different sizes or chunks in the inputs", c);
            }
            if (!strchr(out_index, (int)c)) blocks *= (int)lnch[c];
        }
        nblocks += blocks;
    }
    if (nblocks > AK_MAX_IN)
        return arr_error(ctx, CASK_ERR_INVALID, "a task would need %d input blocks (max %d)",
                         nblocks, AK_MAX_IN);
    int nd = (int)strlen(out_index);
    if (nd > MAXD) return arr_error(ctx, CASK_ERR_INVALID, "too many output axes");
    int64_t shape[MAXD], chunks[MAXD];
    for (int k = 0; k < nd; k++) {
        unsigned char c = (unsigned char)out_index[k];
        if (c >= 128 || lsize[c] < 0)
            return arr_error(ctx, CASK_ERR_INVALID, "output letter '%c' is in no input", c);
        if (strchr(out_index + k + 1, c))
            return arr_error(ctx, CASK_ERR_INVALID, "output letter '%c' repeats", c);
        shape[k] = lsize[c];
        chunks[k] = lchunk[c];
    }
    cask_array *n;
    cask_status st = node_new(ctx, NK_BLOCKWISE, out_dtype, nd, shape, chunks, &n);
    if (st) return st;
    n->p.kernel = kernel;
    strcpy(n->p.out_index, out_index);
    for (int i = 0; i < nin; i++) {
        strcpy(n->p.in_index[i], in_index[i]);
        node_add_input(n, in[i]);
    }
    if ((st = set_blob(n, args, args_size))) {
        node_discard(n);
        return st;
    }
    *out = node_intern(n);
    return CASK_OK;
}

const cask_array_block *cask_array_task_block(const cask_task_ctx *tctx,
                                              const void **user_args, size_t *user_size)
{
    size_t size;
    const cask_array_block *b = cask_task_args(tctx, &size);
    if (!b || size < sizeof *b || size != sizeof *b + b->user_args_size) return NULL;
    if (user_args) *user_args = b->user_args_size ? (const void *)(b + 1) : NULL;
    if (user_size) *user_size = b->user_args_size;
    return b;
}
