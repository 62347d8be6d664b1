/* tests/test_array_reduce.c: reductions of lazy arrays on CPU workers (suite unit):
 * every reduction along every axis compared bit for bit with the documented summation
 * tree and straightforward loops; results that must not depend on chunking, combine
 * arity or worker count; NaN and tie rules; GPU placement (simulated GPUs) giving the
 * CPU's bits. */
#include <stdio.h>
#include "array_fixture.h"

/* ---- reductions ---- */

/* Reference reduction of x (nd dims, as doubles) along axis (-1 all); out as doubles. */
static void ref_reduce(int op, const double *x, int nd, const int64_t *shape, int axis,
                       int ddof, double *out)
{
    if (axis < 0 && (op == CASK_REDUCE_SUM || op == CASK_REDUCE_MEAN || op == CASK_REDUCE_VAR ||
                     op == CASK_REDUCE_STD) && nd > 1) {
        /* documented: sum over the last axis first, in float64, then the next */
        int64_t n = ref_size(nd, shape);
        double *cur = malloc(sizeof(double) * (size_t)n), *nxt = malloc(sizeof(double) * (size_t)n);
        memcpy(cur, x, sizeof(double) * (size_t)n);
        if (op == CASK_REDUCE_VAR || op == CASK_REDUCE_STD) {
            double m;
            ref_reduce(CASK_REDUCE_MEAN, x, nd, shape, -1, 0, &m);
            for (int64_t i = 0; i < n; i++) cur[i] = (x[i] - m) * (x[i] - m);
        }
        int64_t sh[4];
        memcpy(sh, shape, sizeof(int64_t) * (size_t)nd);
        for (int d = nd; d > 1; d--) {
            ref_reduce(CASK_REDUCE_SUM, cur, d, sh, d - 1, 0, nxt);
            double *t = cur; cur = nxt; nxt = t;
        }
        double v = ref_tree_sum(cur, sh[0]);
        if (op == CASK_REDUCE_MEAN) v /= (double)n;
        if (op == CASK_REDUCE_VAR || op == CASK_REDUCE_STD) v /= (double)(n - ddof);
        if (op == CASK_REDUCE_STD) v = sqrt(v);
        *out = v;
        free(cur); free(nxt);
        return;
    }
    int64_t outer = 1, len, inner = 1;
    if (axis < 0) {
        len = ref_size(nd, shape);
    } else {
        for (int k = 0; k < axis; k++) outer *= shape[k];
        for (int k = axis + 1; k < nd; k++) inner *= shape[k];
        len = shape[axis];
    }
    double *v = malloc(sizeof(double) * (size_t)len), *d2 = malloc(sizeof(double) * (size_t)len);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t k = 0; k < len; k++) v[k] = x[(o * len + k) * inner + i];
            double r = 0;
            int64_t best = 0;
            switch (op) {
            case CASK_REDUCE_SUM: r = ref_tree_sum(v, len); break;
            case CASK_REDUCE_MEAN: r = ref_tree_sum(v, len) / (double)len; break;
            case CASK_REDUCE_VAR:
            case CASK_REDUCE_STD: {
                double m = ref_tree_sum(v, len) / (double)len;
                for (int64_t k = 0; k < len; k++) d2[k] = (v[k] - m) * (v[k] - m);
                r = ref_tree_sum(d2, len) / (double)(len - ddof);
                if (op == CASK_REDUCE_STD) r = sqrt(r);
                break;
            }
            case CASK_REDUCE_MIN:
            case CASK_REDUCE_ARGMIN:
                for (int64_t k = 1; k < len; k++) if (v[k] < v[best]) best = k;
                r = op == CASK_REDUCE_MIN ? v[best] : (double)best;
                break;
            default:
                for (int64_t k = 1; k < len; k++) if (v[k] > v[best]) best = k;
                r = op == CASK_REDUCE_MAX ? v[best] : (double)best;
            }
            out[o * inner + i] = r;
        }
    free(v);
    free(d2);
}

static void check_reductions(cask_dtype dt, int nd, const int64_t *shape, const int64_t *chunks,
                             uint64_t seed)
{
    int64_t n = ref_size(nd, shape);
    void *x = ref_data(dt, n, seed);
    double *xd = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) xd[i] = ref_get(x, dt, i);
    cask_array *a = host(x, dt, nd, shape, chunks);
    int isf = dt == CASK_FLOAT32 || dt == CASK_FLOAT64;
    for (int axis = -1; axis < nd; axis++)
        for (int op = 0; op < CASK_REDUCE_COUNT_; op++) {
            cask_array *r;
            cr_assert_eq(cask_array_reduce((cask_reduce_op)op, a, axis < 0 ? CASK_AXIS_ALL : axis, &r),
                         CASK_OK);
            cask_array_meta m;
            cask_array_get_meta(r, &m);
            void *got = run(r);
            ref_reduce(op, xd, nd, shape, axis, 0, want);
            for (int64_t i = 0; i < m.size; i++) {
                double w = want[i];
                if (m.dtype == CASK_FLOAT32) w = (float)w;
                if (!isf && op == CASK_REDUCE_SUM) cr_assert_eq(ref_geti(got, m.dtype, i), (int64_t)w);
                else cr_assert(same(ref_get(got, m.dtype, i), w),
                               "dt %d nd %d axis %d op %d [%lld]: %.17g vs %.17g", dt, nd, axis, op,
                               (long long)i, ref_get(got, m.dtype, i), w);
            }
            free(got);
            cask_array_release(r);
        }
    cask_array_release(a);
    free(x);
    free(xd);
    free(want);
}

Test(unit, array_reductions_match_reference_bit_for_bit, .init = up, .fini = down)
{
    uint64_t s = 77;
    const cask_dtype dts[] = {CASK_FLOAT32, CASK_FLOAT64, CASK_INT32};
    for (int trial = 0; trial < 9; trial++) {
        int nd = 1 + trial % 3;
        int64_t shape[4], chunks[4];
        ref_shape(&s, nd, nd == 1 ? 3000 : nd == 2 ? 60 : 14, shape, chunks);
        check_reductions(dts[trial % 3], nd, shape, chunks, (uint64_t)trial);
    }
}

Test(unit, array_long_axis_sums_follow_the_tree, .init = up, .fini = down)
{
    /* long enough for partial nodes of the maximum size and several combine levels */
    int64_t shape[1] = {50001}, chunks[1] = {3333};
    cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_COMBINE_ARITY, 3), CASK_OK);
    check_reductions(CASK_FLOAT64, 1, shape, chunks, 1);
    int64_t s2[2] = {4099, 3}, c2[2] = {1000, 2};
    check_reductions(CASK_FLOAT32, 2, s2, c2, 2);
}

static void stats_of(cask_array *a, void **outs, int nouts)
{
    cask_array *r[5];
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, a, 0, &r[0]), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, a, 1, &r[1]), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, a, CASK_AXIS_ALL, &r[2]), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_MEAN, a, 1, &r[3]), CASK_OK);
    cr_assert_eq(cask_array_std(a, CASK_AXIS_ALL, 1, &r[4]), CASK_OK);
    for (int i = 0; i < nouts; i++) {
        outs[i] = run(r[i]);
        cask_array_release(r[i]);
    }
}

Test(unit, array_results_do_not_depend_on_chunking_or_workers)
{
    int64_t shape[2] = {301, 203};
    int64_t chs[4][2] = {{301, 203}, {7, 13}, {64, 1}, {1, 203}};
    void *base[5] = {0};
    size_t bytes[5] = {203 * 4, 301 * 4, 4, 301 * 4, 4};
    for (int workers = 1; workers <= 2; workers++) {
        start(workers);
        for (int c = 0; c < 4; c++)
            for (int arity = 2; arity <= 8; arity += 6) {
                cask_array_ctx_set(ctx, CASK_ARRAY_OPT_COMBINE_ARITY, arity);
                cask_array *a;
                cr_assert_eq(cask_array_random_normal(ctx, CASK_FLOAT32, 2, shape, chs[c], 7, 3.0,
                                                      2.0, &a), 0);
                void *outs[5];
                stats_of(a, outs, 5);
                for (int i = 0; i < 5; i++) {
                    if (!base[i]) {
                        base[i] = outs[i];
                        continue;
                    }
                    cr_assert_eq(memcmp(base[i], outs[i], bytes[i]), 0,
                                 "result %d differs (workers %d, chunking %d, arity %d)", i,
                                 workers, c, arity);
                    free(outs[i]);
                }
                cask_array_release(a);
            }
        down();
    }
    for (int i = 0; i < 5; i++) free(base[i]);
}

Test(unit, array_min_max_propagate_nan, .init = up, .fini = down)
{
    double v[6] = {3, NAN, -1, 5, NAN, -7};
    double w[6] = {1, 1, NAN, 9, 2, 0};
    int64_t shape[1] = {6}, ch[1] = {4};
    cask_array *a = host(v, CASK_FLOAT64, 1, shape, ch), *b = host(w, CASK_FLOAT64, 1, shape, ch);
    cask_array *mn, *am, *mx;
    cr_assert_eq(cask_array_binary(CASK_MIN, a, b, &mn), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_ARGMIN, a, 0, &am), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_MAX, a, 0, &mx), CASK_OK);
    double *o = run(mn), *omx = run(mx);
    int64_t *oam = run(am);
    double want[6] = {1, NAN, NAN, 5, NAN, -7};
    for (int i = 0; i < 6; i++) cr_assert(same(o[i], want[i]), "min %d", i);
    cr_assert_eq(*oam, 1, "argmin is the first NaN");
    cr_assert(isnan(*omx));
    free(o); free(omx); free(oam);
    cask_array_release(a); cask_array_release(b); cask_array_release(mn);
    cask_array_release(am); cask_array_release(mx);
}

Test(unit, array_argmin_ties_go_to_the_lowest_flat_index, .init = up, .fini = down)
{
    int64_t shape[2] = {40, 30}, ch[2] = {9, 7};
    int32_t *x = malloc(sizeof(int32_t) * 1200);
    for (int i = 0; i < 1200; i++) x[i] = 5 + i % 11;
    x[31 * 30 + 29] = -3;
    x[17 * 30 + 2] = -3;   /* the first minimum in row-major order */
    x[35 * 30 + 0] = -3;
    cask_array *a = host(x, CASK_INT32, 2, shape, ch), *r, *r0;
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_ARGMIN, a, CASK_AXIS_ALL, &r), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_ARGMIN, a, 0, &r0), CASK_OK);
    int64_t *o = run(r), *o0 = run(r0);
    cr_assert_eq(*o, 17 * 30 + 2);
    cr_assert_eq(o0[2], 17);
    cr_assert_eq(o0[29], 31);
    cr_assert_eq(o0[0], 35);
    free(o); free(o0); free(x);
    cask_array_release(a); cask_array_release(r); cask_array_release(r0);
}

/* ---- GPU placement (simulated GPUs here, real ones where present) ---- */

/* Exact operations only, so that real GPUs must give the same bits too. */
static void gpu_mix(cask_array_ctx *c, void **outs)
{
    int64_t shape[2] = {300, 200}, ch[2] = {64, 50}, ch2[2] = {100, 7};
    cask_array *x, *t1, *t2, *t3, *y, *r[5];
    cr_assert_eq(cask_array_random_uniform(c, CASK_FLOAT64, 2, shape, ch, 17, -1, 1, &x), 0);
    cask_array_binary_scalar(CASK_MUL, x, 1.25, 0, &t1);
    cask_array_unary(CASK_SQUARE, t1, &t2);
    cask_array_unary(CASK_SQRT, t2, &t3);
    cask_array_binary(CASK_SUB, t3, x, &y);
    cask_array_reduce(CASK_REDUCE_SUM, y, 0, &r[0]);
    cask_array_reduce(CASK_REDUCE_ARGMIN, y, CASK_AXIS_ALL, &r[1]);
    cask_array_std(y, 1, 0, &r[2]);
    cr_assert_eq(cask_array_rechunk(y, ch2, &r[3]), 0);
    cask_array *xi;
    cask_array_astype(r[3], CASK_INT64, &xi);
    int64_t lo[2] = {0, 0}, hi[2] = {200, 200};
    cask_array *sq;
    cr_assert_eq(cask_array_slice(xi, lo, hi, &sq), 0);
    cr_assert_eq(cask_array_matmul(sq, sq, &r[4]), 0);
    size_t bytes[5] = {200 * 8, 8, 300 * 8, 300 * 200 * 8, 200 * 200 * 8};
    for (int i = 0; i < 5; i++) outs[i] = malloc(bytes[i]);
    cask_status st = cask_array_compute_many(c, 5, r, outs, bytes);
    cr_assert_eq(st, CASK_OK, "%s", cask_array_ctx_error(c));
    cask_array *all[] = {x, t1, t2, t3, y, xi, sq, r[0], r[1], r[2], r[3], r[4]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) cask_array_release(all[i]);
}

Test(unit, array_gpu_placement_gives_the_cpu_results)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND;
    cfg.ncpu = 1;
    cfg.ngpu = -1;
    cfg.sim_gpus = 2;
    cfg.bind = 0;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU), CASK_OK);
    void *g[5], *c[5];
    gpu_mix(ctx, g);
    down();
    start(2);
    gpu_mix(ctx, c);
    down();
    size_t bytes[5] = {200 * 8, 8, 300 * 8, 300 * 200 * 8, 200 * 200 * 8};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(memcmp(g[i], c[i], bytes[i]), 0, "result %d differs", i);
        free(g[i]);
        free(c[i]);
    }
}
