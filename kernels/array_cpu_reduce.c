/* kernels/array_cpu_reduce.c: CPU reductions: the partial stage (a fused program's
 * values reduced per chunk) and the combine stage (partials of adjacent segments merged,
 * or turned into the result).
 *
 * Float sums are dyadic (array_ops.h): a partial holds the values of the aligned
 * power-of-two nodes covering its segment of the axis; combining merges sibling nodes
 * (left + right) until none are left, so any grouping of partials gives the canonical
 * tree, and the final value is the right fold of the cover of [0, n). The other
 * reductions are exact and order-free (ties by lowest index). */
/* The tile loops must vectorise whatever the build type (-O2's cheap cost model leaves
 * loops of unknown length scalar); set before the includes so that the inline helpers
 * share the options and inline. No fast-math: results stay those of the C library. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-math-errno")
#endif
#include <stdlib.h>
#include <string.h>
#include "kernels/array_kernels.h"

#define NODE(pos, lvl) (((int64_t)(pos) << 6) | (int64_t)(lvl))
#define NODE_POS(x) ((x) >> 6)
#define NODE_LVL(x) ((int)((x) & 63))

/* Program values of elements [e0, e0+cnt) as doubles (cnt <= 2 * AK_TILE... any). */
static void eval_doubles(const ak_fused_args *f, void *const *in, int64_t e0, int64_t cnt,
                         double *dst, ak_scratch *s)
{
    int dt = f->prog.out_dt;
    for (int64_t i = 0; i < cnt; i += AK_TILE) {
        int64_t c = cnt - i < AK_TILE ? cnt - i : AK_TILE;
        if (dt == AK_F64) {
            ak_cpu_eval_tile(f, in, e0 + i, c, dst + i, s);
        } else {
            float tmp[AK_TILE];
            ak_cpu_eval_tile(f, in, e0 + i, c, tmp, s);
            for (int64_t t = 0; t < c; t++) dst[i + t] = (double)tmp[t];
        }
    }
}

/* Program values as the entry type of non-dyadic reductions. */
static void eval_scalars(const ak_fused_args *f, void *const *in, int64_t e0, int64_t cnt,
                         ak_scalar *dst, ak_scratch *s)
{
    int dt = f->prog.out_dt;
    union { float f32[AK_TILE]; double f64[AK_TILE]; int32_t i32[AK_TILE];
            uint32_t u32[AK_TILE]; int64_t i64[AK_TILE]; } t;
    for (int64_t i = 0; i < cnt; i += AK_TILE) {
        int64_t c = cnt - i < AK_TILE ? cnt - i : AK_TILE;
        ak_cpu_eval_tile(f, in, e0 + i, c, &t, s);
        for (int64_t k = 0; k < c; k++) {
            ak_scalar v;
            switch (dt) {
            case AK_F32: v.f = t.f32[k]; break;
            case AK_F64: v.f = t.f64[k]; break;
            case AK_I32: v.i = t.i32[k]; break;
            case AK_U32: v.i = t.u32[k]; break;
            default: v.i = t.i64[k];
            }
            dst[i + k] = v;
        }
    }
}

static void accumulate(int op, int isf, ak_scalar v, int64_t i, ak_red_entry *e)
{
    if (op == AK_RED_SUM_I) {
        e->v.u += v.u;
        e->idx = 0;
    } else if (ak_better(op, isf, v, i, e->v, e->idx)) {
        e->v = v;
        e->idx = i;
    }
}

/* d[j] = x[2j] + x[2j+1], j < m: one level of the pairwise tree. Only additions (no
 * contraction is possible), so the AVX2 clone gives the same bits as the SSE2 one. */
/* (not under the sanitizers: their instrumented IFUNC resolvers run before the runtime
 * is set up, and ThreadSanitizer's crash the program as it loads) */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define AK_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AK_CLONES
#endif
AK_CLONES static void pairs_f64(double *__restrict d, const double *__restrict x, int64_t m)
{
    for (int64_t j = 0; j < m; j++) d[j] = AK_DADD(x[2 * j], x[2 * j + 1]);
}

AK_CLONES static void pairs_f32(double *__restrict d, const float *__restrict x, int64_t m)
{
    for (int64_t j = 0; j < m; j++) d[j] = AK_DADD((double)x[2 * j], (double)x[2 * j + 1]);
}

/* The value of the dyadic node of 2^L program values from element e0: the canonical
 * pairwise tree (ak_canon_sum) computed level by level, which makes the same additions
 * in the same order as the binary-counter walk but in loops that vectorise. The first
 * level adds pairs straight from the program's tiles (float32 values widened). */
static double node_sum(const ak_fused_args *f, void *const *in, int64_t e0, int L,
                       double *a, double *b, ak_scratch *s)
{
    int64_t n = (int64_t)1 << L;
    union { float f32[AK_TILE]; double f64[AK_TILE]; } t;
    if (L == 0) {
        const void *r = ak_cpu_eval_tile_ref(f, in, e0, 1, &t, s);
        return f->prog.out_dt == AK_F64 ? *(const double *)r : (double)*(const float *)r;
    }
    for (int64_t i = 0; i < n; i += AK_TILE) {
        int64_t c = n - i < AK_TILE ? n - i : AK_TILE;   /* even: n and AK_TILE are */
        const void *r = ak_cpu_eval_tile_ref(f, in, e0 + i, c, &t, s);
        if (f->prog.out_dt == AK_F64) pairs_f64(a + (i >> 1), r, c / 2);
        else pairs_f32(a + (i >> 1), r, c / 2);
    }
    for (int64_t m = n >> 1; m > 1; m >>= 1) {
        pairs_f64(b, a, m / 2);
        double *tmp = a;
        a = b;
        b = tmp;
    }
    return a[0];
}

static void partial_dyadic(const ak_red_args *r, void *const *in, char *out, ak_scratch *s)
{
    const ak_fused_args *f = &r->f;
    int64_t c1 = r->c0 + r->len, K = 0, inner = r->inner;
    int64_t *hdr = (int64_t *)out;
    for (int64_t p = r->c0; p < c1; K++) {
        int L = ak_dy_level(p, c1, AK_DY_CAP);
        hdr[1 + K] = NODE(p, L);
        p += (int64_t)1 << L;
    }
    hdr[0] = K;
    double *vals = (double *)(hdr + 1 + K);
    if (inner == 1) {
        double a[(size_t)1 << (AK_DY_CAP - 1)], b[(size_t)1 << (AK_DY_CAP - 2)];
        for (int64_t o = 0; o < r->outer; o++)
            for (int64_t k = 0; k < K; k++) {
                int64_t p = NODE_POS(hdr[1 + k]);
                int L = NODE_LVL(hdr[1 + k]);
                vals[o * K + k] = node_sum(f, in, o * r->len + (p - r->c0), L, a, b, s);
            }
        return;
    }
    /* Axis with inner elements per position: the binary-counter walk of each node,
     * vectorised over a tile of inner lanes. */
    int64_t ti = inner < AK_TILE ? inner : AK_TILE;
    double *st = malloc(sizeof(double) * (size_t)ti * (AK_DY_CAP + 2));
    double *row = st + (size_t)ti * (AK_DY_CAP + 1);
    for (int64_t o = 0; o < r->outer; o++)
        for (int64_t i0 = 0; i0 < inner; i0 += ti) {
            int64_t nt = inner - i0 < ti ? inner - i0 : ti;
            for (int64_t k = 0; k < K; k++) {
                int64_t p = NODE_POS(hdr[1 + k]);
                int L = NODE_LVL(hdr[1 + k]);
                for (int64_t q = 0; q < ((int64_t)1 << L); q++) {
                    int64_t pos = p - r->c0 + q;
                    eval_doubles(f, in, (o * r->len + pos) * inner + i0, nt, row, s);
                    int lvl = 0;
                    for (int64_t j = q; j & 1; j >>= 1, lvl++) {
                        double *left = st + (size_t)lvl * ti;
                        for (int64_t t = 0; t < nt; t++) row[t] = left[t] + row[t];
                    }
                    memcpy(st + (size_t)lvl * ti, row, sizeof(double) * (size_t)nt);
                }
                double *v = st + (size_t)L * ti;
                for (int64_t t = 0; t < nt; t++) vals[(o * K + k) * inner + i0 + t] = v[t];
            }
        }
    free(st);
}

static void partial_plain(const ak_red_args *r, void *const *in, ak_red_entry *ent,
                          ak_scratch *s)
{
    const ak_fused_args *f = &r->f;
    int isf = r->src_float, op = r->op;
    int64_t inner = r->inner, nb = r->nb;
    for (int64_t i = 0; i < r->outer * nb * inner; i++) {
        ent[i].v.i = 0;
        ent[i].idx = -1;
    }
    ak_scalar *vals = malloc(sizeof(ak_scalar) * AK_TILE);
    int64_t *gi = malloc(sizeof(int64_t) * AK_TILE);
    for (int64_t o = 0; o < r->outer; o++) {
        if (inner == 1) {
            for (int64_t k0 = 0; k0 < r->len; k0 += AK_TILE) {
                int64_t c = r->len - k0 < AK_TILE ? r->len - k0 : AK_TILE;
                int64_t e0 = o * r->len + k0;
                eval_scalars(f, in, e0, c, vals, s);
                if (r->all)
                    for (int64_t t = 0; t < c; t++) gi[t] = ak_gidx(&f->geom, e0 + t);
                for (int64_t t = 0; t < c; t++) {
                    int64_t pos = k0 + t;
                    ak_red_entry *e = &ent[o * nb + pos / AK_PIECE];
                    accumulate(op, isf, vals[t], r->all ? gi[t] : r->c0 + pos, e);
                }
            }
        } else {
            for (int64_t pos = 0; pos < r->len; pos++)
                for (int64_t i0 = 0; i0 < inner; i0 += AK_TILE) {
                    int64_t c = inner - i0 < AK_TILE ? inner - i0 : AK_TILE;
                    eval_scalars(f, in, (o * r->len + pos) * inner + i0, c, vals, s);
                    ak_red_entry *e = &ent[(o * nb + pos / AK_PIECE) * inner + i0];
                    for (int64_t t = 0; t < c; t++)
                        accumulate(op, isf, vals[t], r->c0 + pos, &e[t]);
                }
        }
    }
    free(vals);
    free(gi);
}

cask_status ak_cpu_reduce_partial(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_red_args *r = cask_task_args(ctx, &asz);
    if (!r || asz < sizeof(*r)) return cask_task_fail(ctx, "bad arguments");
    int nin = r->f.prog.nin;
    void *in[AK_MAX_IN];
    for (int i = 0; i < nin; i++) in[i] = cask_task_buffer(ctx, i);
    char *out = cask_task_buffer(ctx, nin);
    size_t need = r->op == AK_RED_SUM_F ? ak_dy_bytes(r->K, r->outer, r->inner)
                                        : sizeof(ak_red_entry) * (size_t)(r->outer * r->nb * r->inner);
    if (cask_task_buffer_size(ctx, nin) < need) return cask_task_fail(ctx, "partial buffer too small");
    ak_scratch *s = ak_scratch_new();
    if (!s) return cask_task_fail(ctx, "out of memory");
    if (r->op == AK_RED_SUM_F) partial_dyadic(r, in, out, s);
    else partial_plain(r, in, (ak_red_entry *)out, s);
    ak_scratch_free(s);
    return CASK_OK;
}

/* ---- combine ---- */

static void write_value(int dt, void *out, int64_t i, ak_scalar v, int isf)
{
    switch (dt) {
    case AK_F32: ((float *)out)[i] = (float)(isf ? v.f : (double)v.i); break;
    case AK_F64: ((double *)out)[i] = isf ? v.f : (double)v.i; break;
    case AK_I32: ((int32_t *)out)[i] = (int32_t)v.i; break;
    case AK_U32: ((uint32_t *)out)[i] = (uint32_t)v.i; break;
    default: ((int64_t *)out)[i] = v.i;
    }
}

static cask_status combine_dyadic(cask_task_ctx *ctx, const ak_comb_args *c)
{
    int np = c->nparts;
    const int64_t *hdr[AK_MAX_IN];
    const double *vals[AK_MAX_IN];
    int64_t total = 0;
    for (int p = 0; p < np; p++) {
        hdr[p] = cask_task_buffer(ctx, p);
        vals[p] = (const double *)(hdr[p] + 1 + hdr[p][0]);
        total += hdr[p][0];
    }
    int64_t *spos = malloc(sizeof(int64_t) * (size_t)(total + 1) * 2);
    int *slvl = malloc(sizeof(int) * (size_t)(total + 1));
    double *sval = malloc(sizeof(double) * (size_t)(total + 1));
    if (!spos || !slvl || !sval) {
        free(spos); free(slvl); free(sval);
        return cask_task_fail(ctx, "out of memory");
    }
    char *out = cask_task_buffer(ctx, np);
    int64_t inner = c->inner;
    cask_status st = CASK_OK;
    for (int64_t o = 0; o < c->outer && !st; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t top = 0;
            int64_t expect = c->seg0;
            for (int p = 0; p < np; p++) {
                int64_t K = hdr[p][0];
                for (int64_t k = 0; k < K; k++) {
                    int64_t pos = NODE_POS(hdr[p][1 + k]);
                    int L = NODE_LVL(hdr[p][1 + k]);
                    if (pos != expect) {
                        st = cask_task_fail(ctx, "partials are not adjacent at %lld",
                                            (long long)pos);
                        goto done;
                    }
                    expect = pos + ((int64_t)1 << L);
                    double v = vals[p][(o * K + k) * inner + i];
                    /* push, then merge while the two on top are siblings */
                    spos[top] = pos;
                    slvl[top] = L;
                    sval[top] = v;
                    top++;
                    while (top >= 2 && slvl[top - 1] == slvl[top - 2]) {
                        int l = slvl[top - 2];
                        int64_t lp = spos[top - 2];
                        if ((lp >> l) & 1) break;   /* the lower one is a right child */
                        sval[top - 2] = AK_DADD(sval[top - 2], sval[top - 1]);
                        slvl[top - 2] = l + 1;
                        top--;
                    }
                }
            }
            if (expect != c->seg1) {
                st = cask_task_fail(ctx, "partials end at %lld, not %lld", (long long)expect,
                                    (long long)c->seg1);
                goto done;
            }
            if (c->final) {
                double v = sval[top - 1];
                for (int64_t t = top - 2; t >= 0; t--) v = AK_DADD(sval[t], v);
                if (c->has_div) v = v / c->divisor;
                ak_scalar sv;
                sv.f = v;
                write_value(c->out_dt, out, o * inner + i, sv, 1);
            } else {
                if (top != c->K_out) {
                    st = cask_task_fail(ctx, "cover has %lld nodes, expected %lld",
                                        (long long)top, (long long)c->K_out);
                    goto done;
                }
                int64_t *oh = (int64_t *)out;
                if (o == 0 && i == 0) {
                    oh[0] = top;
                    for (int64_t t = 0; t < top; t++) oh[1 + t] = NODE(spos[t], slvl[t]);
                }
                double *ov = (double *)(oh + 1 + top);
                for (int64_t t = 0; t < top; t++) ov[(o * top + t) * inner + i] = sval[t];
            }
        }
done:
    free(spos);
    free(slvl);
    free(sval);
    return st;
}

static cask_status combine_plain(cask_task_ctx *ctx, const ak_comb_args *c)
{
    int np = c->nparts, op = c->op;
    int isf = c->src_float;
    char *out = cask_task_buffer(ctx, np);
    int64_t inner = c->inner;
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            ak_red_entry best;
            best.v.i = 0;
            best.idx = -1;
            for (int p = 0; p < np; p++) {
                const ak_red_entry *e = cask_task_buffer(ctx, p);
                int64_t nb = c->nb[p];
                for (int64_t b = 0; b < nb; b++) {
                    const ak_red_entry *x = &e[(o * nb + b) * inner + i];
                    if (x->idx < 0) continue;
                    if (op == AK_RED_SUM_I) {
                        best.v.u += x->v.u;
                        best.idx = 0;
                    } else if (ak_better(op, isf, x->v, x->idx, best.v, best.idx)) {
                        best = *x;
                    }
                }
            }
            if (!c->final) {
                ((ak_red_entry *)out)[o * inner + i] = best;
            } else if (op == AK_RED_ARGMIN || op == AK_RED_ARGMAX) {
                ((int64_t *)out)[o * inner + i] = best.idx;
            } else {
                write_value(c->out_dt, out, o * inner + i, best.v, isf);
            }
        }
    return CASK_OK;
}

cask_status ak_cpu_reduce_combine(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_comb_args *c = cask_task_args(ctx, &asz);
    if (!c || asz < sizeof(*c) || c->nparts < 1 || c->nparts > AK_MAX_IN)
        return cask_task_fail(ctx, "bad arguments");
    return c->op == AK_RED_SUM_F ? combine_dyadic(ctx, c) : combine_plain(ctx, c);
}
