/* array/reduce.c: reductions. Building: sum, min, max, mean, argmin, argmax along an
 * axis or over all, and var/std as two passes of sums. Lowering: per output chunk, one
 * partial task per input chunk along the reduced axis (running the fused program of
 * the reduction's input), then a tree of combine tasks of at most `arity` partials.
 *
 * Rounding promise (see kernels/array_ops.h): float sums accumulate in float64 over the
 * canonical binary tree of the global index along the axis, so they do not depend on
 * chunking, on the tree of combine tasks, or on which worker ran what; the result is
 * rounded to its dtype once. A full sum of an N-D array is the sum over axis 0 of the
 * (float64) sums over axis 1 of ... the sums over the last axis. */
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

static cask_status reduce_node(cask_array *x, int red_op, int axis, cask_dtype out_dt,
                               int has_div, double divisor, cask_array **out)
{
    int64_t shape[MAXD], chunks[MAXD];
    int nd = 0;
    if (axis >= 0)
        for (int k = 0; k < x->ndim; k++)
            if (k != axis) {
                shape[nd] = x->shape[k];
                chunks[nd++] = x->chunk[k];
            }
    cask_array *n;
    cask_status st = node_new(x->ctx, NK_REDUCE, out_dt, nd, shape, chunks, &n);
    if (st) return st;
    n->p.red_op = red_op;
    n->p.axis = axis;
    n->p.has_div = has_div;
    n->p.divisor = has_div ? divisor : 0.0;
    node_add_input(n, x);
    *out = node_intern(n);
    return CASK_OK;
}

/* Float sum of x along axis (or all, -1), as float64 partial levels, final dtype dt. */
static cask_status sum_float(cask_array *x, int axis, cask_dtype dt, int has_div,
                             double divisor, cask_array **out)
{
    if (axis >= 0 || x->ndim == 1)
        return reduce_node(x, AK_RED_SUM_F, axis >= 0 ? axis : 0, dt, has_div, divisor, out);
    cask_array *y = cask_array_retain(x), *z;
    for (int ax = x->ndim - 1; ax >= 1; ax--) {
        cask_status st = reduce_node(y, AK_RED_SUM_F, ax, CASK_FLOAT64, 0, 0.0, &z);
        cask_array_release(y);
        if (st) return st;
        y = z;
    }
    cask_status st = reduce_node(y, AK_RED_SUM_F, 0, dt, has_div, divisor, out);
    cask_array_release(y);
    return st;
}

static int64_t count_along(const cask_array *x, int axis)
{
    return axis >= 0 ? x->shape[axis] : x->size;
}

/* Normalises axis: -1 for all, else 0..ndim-1; x may be replaced by a 1-D view. */
static cask_status norm_axis(cask_array **x, int *axis)
{
    cask_array *a = *x;
    if (a->ndim == 0) {   /* a scalar: reduce the 1-element vector it views */
        cask_array *v;
        cask_status st = cask_array_expand_dims(a, 0, &v);
        if (st) return st;
        *x = v;
        *axis = -1;
        return CASK_OK;
    }
    int ax = *axis;
    if (ax == CASK_AXIS_ALL) ax = -1;
    else if (ax < 0) ax += a->ndim;
    if (ax != -1 && (ax < 0 || ax >= a->ndim))
        return arr_error(a->ctx, CASK_ERR_INVALID, "axis %d out of range for %d dims", *axis,
                         a->ndim);
    *x = cask_array_retain(a);
    *axis = ax;
    return CASK_OK;
}

/* var (or std) with ddof: two passes, all in float64. */
static cask_status var_std(cask_array *a, int axis, int ddof, int want_std, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    cask_array *x = NULL, *xf = NULL, *m = NULL, *me = NULL, *d = NULL, *sq = NULL, *v = NULL,
               *r = NULL;
    cask_status st = norm_axis(&a, &axis);
    if (st) return st;
    x = a;
    int64_t n = count_along(x, axis);
    cask_dtype fdt = x->dtype == CASK_FLOAT32 ? CASK_FLOAT32 : CASK_FLOAT64;
    if ((st = arr_cast(x, CASK_FLOAT64, &xf))) goto done;
    if ((st = sum_float(ak_dt_is_float(x->dtype) ? x : xf, axis, CASK_FLOAT64, 1, (double)n,
                        &m)))
        goto done;
    if (axis >= 0) {
        if ((st = cask_array_expand_dims(m, axis, &me))) goto done;
    } else {
        me = cask_array_retain(m);
    }
    if ((st = cask_array_binary(CASK_SUB, xf, me, &d))) goto done;
    if ((st = cask_array_unary(CASK_SQUARE, d, &sq))) goto done;
    if ((st = sum_float(sq, axis, CASK_FLOAT64, 1, (double)(n - ddof), &v))) goto done;
    if (want_std) {
        if ((st = cask_array_unary(CASK_SQRT, v, &r))) goto done;
    } else {
        r = cask_array_retain(v);
    }
    st = arr_cast(r, fdt, out);
done:
    cask_array_release(x);
    cask_array_release(xf);
    cask_array_release(m);
    cask_array_release(me);
    cask_array_release(d);
    cask_array_release(sq);
    cask_array_release(v);
    cask_array_release(r);
    return st;
}

cask_status cask_array_var(cask_array *a, int axis, int ddof, cask_array **out)
{
    return var_std(a, axis, ddof, 0, out);
}

cask_status cask_array_std(cask_array *a, int axis, int ddof, cask_array **out)
{
    return var_std(a, axis, ddof, 1, out);
}

cask_status cask_array_reduce(cask_reduce_op op, cask_array *a, int axis, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    if (op == CASK_REDUCE_VAR || op == CASK_REDUCE_STD)
        return var_std(a, axis, 0, op == CASK_REDUCE_STD, out);
    if ((int)op < 0 || op >= CASK_REDUCE_COUNT_)
        return arr_error(a->ctx, CASK_ERR_INVALID, "unknown reduction %d", (int)op);
    cask_array *x = a, *xf = NULL;
    cask_status st = norm_axis(&x, &axis);
    if (st) return st;
    int isf = ak_dt_is_float(x->dtype);
    switch (op) {
    case CASK_REDUCE_SUM:
        if (isf) st = sum_float(x, axis, x->dtype, 0, 0.0, out);
        else st = reduce_node(x, AK_RED_SUM_I, axis, CASK_INT64, 0, 0.0, out);
        break;
    case CASK_REDUCE_MEAN:
        if (!isf && (st = arr_cast(x, CASK_FLOAT64, &xf))) break;
        st = sum_float(isf ? x : xf, axis, isf ? x->dtype : CASK_FLOAT64, 1,
                       (double)count_along(x, axis), out);
        break;
    case CASK_REDUCE_MIN:
    case CASK_REDUCE_MAX:
        st = reduce_node(x, op == CASK_REDUCE_MIN ? AK_RED_MIN : AK_RED_MAX, axis, x->dtype, 0,
                         0.0, out);
        break;
    default:
        st = reduce_node(x, op == CASK_REDUCE_ARGMIN ? AK_RED_ARGMIN : AK_RED_ARGMAX, axis,
                         CASK_INT64, 0, 0.0, out);
    }
    cask_array_release(x);
    cask_array_release(xf);
    return st;
}

/* ---- lowering ---- */

typedef struct part {
    cask_data *d;
    int64_t seg0, seg1;   /* dyadic: the axis segment it covers */
    int64_t nb;           /* plain: entries per lane */
} part;

static cask_status add_partial(plan *pl, cask_array *n, prog_cache *pc, const int64_t *xidx,
                               int hint, part *pt)
{
    cask_array *x = n->in[0];
    int axis = n->p.axis;
    ak_red_args *r = calloc(1, sizeof *r);
    if (!r) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    cask_access acc[AK_MAX_IN + 1];
    cask_status st = fuse_chunk_args(pl, x, xidx, pc, &r->f, acc);
    if (st) goto out;
    const ak_geom *g = &r->f.geom;
    r->op = n->p.red_op;
    r->src_float = ak_dt_is_float(x->dtype);
    if (axis < 0) {
        r->all = 1;
        r->outer = 1;
        r->len = g->n;
        r->inner = 1;
    } else {
        r->outer = r->inner = 1;
        for (int k = 0; k < axis; k++) r->outer *= g->shape[k];
        for (int k = axis + 1; k < g->ndim; k++) r->inner *= g->shape[k];
        r->len = g->shape[axis];
        r->c0 = g->offset[axis];
    }
    size_t bytes;
    if (r->op == AK_RED_SUM_F) {
        r->K = ak_dy_count(r->c0, r->c0 + r->len, AK_DY_CAP);
        bytes = ak_dy_bytes(r->K, r->outer, r->inner);
    } else {
        r->nb = (r->len + AK_PIECE - 1) / AK_PIECE;
        bytes = sizeof(ak_red_entry) * (size_t)(r->outer * r->nb * r->inner);
    }
    if ((st = plan_handle(pl, bytes, 1, &pt->d))) goto out;
    int nin = pc->prog.nin;
    acc[nin].data = pt->d;
    acc[nin].mode = CASK_WRITE;
    pt->seg0 = r->c0;
    pt->seg1 = r->c0 + r->len;
    pt->nb = r->nb;
    st = plan_task(pl, pl->ctx->k.reduce_partial, acc, nin + 1, r, sizeof *r,
                   "array.reduce_partial", 1, nin ? -1 : hint);
out:
    free(r);
    return st;
}

/* Combines parts[0..np) into *res: the next partial, or (final) the output chunk. */
static cask_status combine(plan *pl, cask_array *n, const part *parts, int np, int final,
                           int64_t outer, int64_t inner, cask_data *dst, part *res)
{
    ak_comb_args c;
    memset(&c, 0, sizeof c);
    c.op = n->p.red_op;
    c.final = final;
    c.nparts = np;
    c.out_dt = n->dtype;
    c.src_float = ak_dt_is_float(n->in[0]->dtype);
    c.has_div = n->p.has_div;
    c.divisor = n->p.divisor;
    c.outer = outer;
    c.inner = inner;
    c.seg0 = parts[0].seg0;
    c.seg1 = parts[np - 1].seg1;
    cask_access acc[AK_MAX_IN + 1];
    for (int i = 0; i < np; i++) {
        c.nb[i] = parts[i].nb;
        acc[i].data = parts[i].d;
        acc[i].mode = CASK_READ;
    }
    cask_status st;
    if (!final) {
        size_t bytes;
        if (c.op == AK_RED_SUM_F) {
            c.K_out = ak_dy_count(c.seg0, c.seg1, 62);
            bytes = ak_dy_bytes(c.K_out, outer, inner);
        } else {
            c.nb_out = 1;
            bytes = sizeof(ak_red_entry) * (size_t)(outer * inner);
        }
        if ((st = plan_handle(pl, bytes, 1, &dst))) return st;
        res->d = dst;
        res->seg0 = c.seg0;
        res->seg1 = c.seg1;
        res->nb = 1;
    }
    acc[np].data = dst;
    acc[np].mode = CASK_WRITE;
    return plan_task(pl, pl->ctx->k.reduce_combine, acc, np + 1, &c, sizeof c,
                     "array.reduce_combine", 0, -1);
}

cask_status reduce_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    cask_array *x = n->in[0];
    int axis = n->p.axis;
    prog_cache *pc;
    cask_status st = fuse_root_prog(pl, n, x, &pc);
    if (st) return st;
    int64_t xidx[MAXD];
    int64_t nparts = axis < 0 ? x->nchunks : x->nch[axis];
    part *parts = calloc((size_t)nparts, sizeof *parts);
    if (!parts) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    int64_t outer = 1, inner = 1;
    if (axis >= 0) {
        for (int k = 0, j = 0; k < x->ndim; k++)
            if (k != axis) xidx[k] = idx[j++];
        ak_geom g;
        xidx[axis] = 0;
        chunk_geom(x, xidx, &g);
        for (int k = 0; k < axis; k++) outer *= g.shape[k];
        for (int k = axis + 1; k < x->ndim; k++) inner *= g.shape[k];
    }
    for (int64_t j = 0; j < nparts && !st; j++) {
        if (axis < 0) chunk_index(x, j, xidx);
        else xidx[axis] = j;
        /* partials of a generator read nothing: spread them over the GPUs in order */
        st = add_partial(pl, n, pc, xidx, (int)(j * pl->ctx->ngpus / nparts), &parts[j]);
    }
    if (pc->nops_nodes >= 1 && !st) {
        pl->st.ntasks_fused += pc->nops_nodes >= 2 ? (size_t)nparts : 0;
        pl->st.nops_fused += pc->nops_nodes >= 2 ? (size_t)(nparts * pc->nops_nodes) : 0;
    }
    int arity = pl->ctx->arity;
    while (!st && nparts > arity) {
        int64_t m = 0;
        for (int64_t i = 0; i < nparts && !st; i += arity, m++) {
            int np = (int)(nparts - i < arity ? nparts - i : arity);
            part res;
            if (np == 1) res = parts[i];
            else st = combine(pl, n, parts + i, np, 0, outer, inner, NULL, &res);
            parts[m] = res;
        }
        nparts = m;
    }
    if (!st) st = plan_out_handle(pl, n, idx, out);
    if (!st) st = combine(pl, n, parts, (int)nparts, 1, outer, inner, *out, NULL);
    free(parts);
    return st;
}
