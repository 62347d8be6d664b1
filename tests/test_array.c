/* tests/test_array.c: lazy chunked arrays on CPU workers (suite unit): elementwise
 * operations, generators, fusion, sharing, culling and structure. Every operation is
 * compared with a straightforward loop on random shapes and chunkings (ragged last
 * chunks included); fusion must make one task per chunk. Reductions and chunking
 * independence: test_array_reduce.c; user kernels, files, persistence: test_array_io.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>
#include "array_fixture.h"
#include "kernels/array_ops.h"

static double ref_unary(cask_unary_op op, cask_dtype dt, double x)
{
    if (dt == CASK_FLOAT32) {
        float f = (float)x;
        switch (op) {
        case CASK_NEG: return -f;
        case CASK_ABS: return fabsf(f);
        case CASK_SQRT: return sqrtf(f);
        case CASK_EXP: return expf(f);
        case CASK_LOG: return logf(f);
        case CASK_SIN: return sinf(f);
        case CASK_COS: return cosf(f);
        default: return f * f;
        }
    }
    switch (op) {
    case CASK_NEG: return -x;
    case CASK_ABS: return fabs(x);
    case CASK_SQRT: return sqrt(x);
    case CASK_EXP: return exp(x);
    case CASK_LOG: return log(x);
    case CASK_SIN: return sin(x);
    case CASK_COS: return cos(x);
    default: return x * x;
    }
}

/* exp, log, sin, cos and pow of floats come from the vector math, within 1 ULP of the
 * exact value (docs/arrays.md, "Numerics"); the other operations are exact. */
#define LIB_ULPS 1.0
static int unary_is_lib(int op)
{
    return op == CASK_EXP || op == CASK_LOG || op == CASK_SIN || op == CASK_COS;
}

static long double wide_unary(int op, long double x)
{
    switch (op) {
    case CASK_EXP: return expl(x);
    case CASK_LOG: return logl(x);
    case CASK_SIN: return sinl(x);
    default: return cosl(x);
    }
}

Test(unit, array_unary_ops_match_reference, .init = up, .fini = down)
{
    uint64_t s = 11;
    for (int trial = 0; trial < 6; trial++) {
        int nd = 1 + trial % 3;
        cask_dtype dt = trial & 1 ? CASK_FLOAT64 : CASK_FLOAT32;
        int64_t shape[4], chunks[4];
        ref_shape(&s, nd, nd == 1 ? 200 : 15, shape, chunks);
        int64_t n = ref_size(nd, shape);
        void *x = ref_data(dt, n, (uint64_t)trial);
        cask_array *a = host(x, dt, nd, shape, chunks);
        for (int op = 0; op < CASK_UNARY_COUNT_; op++) {
            cask_array *b;
            cr_assert_eq(cask_array_unary((cask_unary_op)op, a, &b), CASK_OK);
            void *out = run(b);
            for (int64_t i = 0; i < n; i++) {
                if (unary_is_lib(op)) {
                    long double want = wide_unary(op, ref_get(x, dt, i));
                    double u = ref_ulps(ref_get(out, dt, i), want, dt);
                    cr_assert(u <= LIB_ULPS, "op %d dt %d elem %lld: %.17g vs %.17Lg (%.2f ULP)",
                              op, dt, (long long)i, ref_get(out, dt, i), want, u);
                    continue;
                }
                double want = ref_unary((cask_unary_op)op, dt, ref_get(x, dt, i));
                cr_assert(same(ref_get(out, dt, i), want), "op %d dt %d elem %lld: %g vs %g", op,
                          dt, (long long)i, ref_get(out, dt, i), want);
            }
            free(out);
            cask_array_release(b);
        }
        cask_array_release(a);
        free(x);
    }
}

Test(unit, array_integer_unary_ops_wrap, .init = up, .fini = down)
{
    int32_t v[4] = {INT32_MIN, -7, 0, 46341};
    int64_t shape[1] = {4};
    cask_array *a = host(v, CASK_INT32, 1, shape, NULL), *n, *ab, *sq, *sr;
    cr_assert_eq(cask_array_unary(CASK_NEG, a, &n), CASK_OK);
    cr_assert_eq(cask_array_unary(CASK_ABS, a, &ab), CASK_OK);
    cr_assert_eq(cask_array_unary(CASK_SQUARE, a, &sq), CASK_OK);
    cr_assert_eq(cask_array_unary(CASK_SQRT, a, &sr), CASK_OK);
    int32_t *o1 = run(n), *o2 = run(ab), *o3 = run(sq);
    double *o4 = run(sr);
    cask_array_meta m;
    cask_array_get_meta(sr, &m);
    cr_assert_eq(m.dtype, CASK_FLOAT64, "sqrt of int32 is float64");
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(o1[i], (int32_t)(0u - (uint32_t)v[i]));
        cr_assert_eq(o2[i], v[i] < 0 ? (int32_t)(0u - (uint32_t)v[i]) : v[i]);
        cr_assert_eq(o3[i], (int32_t)((uint32_t)v[i] * (uint32_t)v[i]));
        cr_assert(same(o4[i], sqrt((double)v[i])));
    }
    free(o1); free(o2); free(o3); free(o4);
    cask_array_release(a); cask_array_release(n); cask_array_release(ab);
    cask_array_release(sq); cask_array_release(sr);
}

static double ref_binary(cask_binary_op op, cask_dtype dt, double x, double y)
{
    if (dt == CASK_FLOAT32 || dt == CASK_FLOAT64) {
        if (dt == CASK_FLOAT32) {
            float a = (float)x, b = (float)y;
            switch (op) {
            case CASK_ADD: return a + b;
            case CASK_SUB: return a - b;
            case CASK_MUL: return a * b;
            case CASK_DIV: return a / b;
            case CASK_MIN: return b < a ? b : a;
            case CASK_MAX: return b > a ? b : a;
            default: return powf(a, b);
            }
        }
        switch (op) {
        case CASK_ADD: return x + y;
        case CASK_SUB: return x - y;
        case CASK_MUL: return x * y;
        case CASK_DIV: return x / y;
        case CASK_MIN: return y < x ? y : x;
        case CASK_MAX: return y > x ? y : x;
        default: return pow(x, y);
        }
    }
    int64_t a = (int64_t)x, b = (int64_t)y, r;
    switch (op) {
    case CASK_ADD: r = a + b; break;
    case CASK_SUB: r = a - b; break;
    case CASK_MUL: r = a * b; break;
    case CASK_DIV: r = b == 0 ? 0 : a / b; break;
    case CASK_MIN: r = b < a ? b : a; break;
    case CASK_MAX: r = b > a ? b : a; break;
    default: {
        uint64_t p = 1;
        if (b < 0) p = a == 1 ? 1 : a == -1 ? ((b & 1) ? (uint64_t)-1 : 1) : 0;
        else for (int64_t k = 0; k < b; k++) p *= (uint64_t)a;
        r = (int64_t)p;
    }
    }
    if (dt == CASK_INT32) return (double)(int32_t)(uint32_t)r;
    if (dt == CASK_UINT32) return (double)(uint32_t)r;
    return (double)r;
}

Test(unit, array_binary_ops_broadcast_like_numpy, .init = up, .fini = down)
{
    uint64_t s = 5;
    const cask_dtype dts[] = {CASK_FLOAT32, CASK_FLOAT64, CASK_INT32, CASK_INT64, CASK_UINT32};
    for (int trial = 0; trial < 10; trial++) {
        cask_dtype dt = dts[trial % 5];
        int64_t shape[2], chunks[2];
        ref_shape(&s, 2, 12, shape, chunks);
        int64_t m = shape[0], n = shape[1];
        /* b: (n,), (m,1), (1,n), (m,n) chunked otherwise, or a 0-d array */
        int kind = trial % 5;
        int64_t bshape[2], bch[2] = {ref_range(&s, 1, 6), ref_range(&s, 1, 6)};
        int bnd = 2;
        switch (kind) {
        case 0: bnd = 1; bshape[0] = n; break;
        case 1: bshape[0] = m; bshape[1] = 1; break;
        case 2: bshape[0] = 1; bshape[1] = n; break;
        case 3: bshape[0] = m; bshape[1] = n; break;
        default: bnd = 0;
        }
        void *x = ref_data(dt, m * n, 100 + (uint64_t)trial);
        void *y = ref_data(dt, ref_size(bnd, bshape), 200 + (uint64_t)trial);
        cask_array *a = host(x, dt, 2, shape, chunks), *b = host(y, dt, bnd, bshape, bch);
        for (int op = 0; op < CASK_BINARY_COUNT_; op++) {
            cask_array *c;
            cr_assert_eq(cask_array_binary((cask_binary_op)op, a, b, &c), CASK_OK);
            void *out = run(c);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    int64_t bi = kind == 0 ? j : kind == 1 ? i : kind == 2 ? j : kind == 3 ? i * n + j : 0;
                    double want = ref_binary((cask_binary_op)op, dt, ref_get(x, dt, i * n + j),
                                             ref_get(y, dt, bi));
                    double got = ref_get(out, dt, i * n + j);
                    if (op == CASK_POW && (dt == CASK_FLOAT32 || dt == CASK_FLOAT64)) {
                        long double w = powl(ref_get(x, dt, i * n + j), ref_get(y, dt, bi));
                        cr_assert(ref_ulps(got, w, dt) <= LIB_ULPS, "pow dt %d: %.17g vs %.17Lg",
                                  dt, got, w);
                        continue;
                    }
                    cr_assert(same(got, want), "dt %d op %d kind %d [%lld,%lld]: %g vs %g", dt, op,
                              kind, (long long)i, (long long)j, got, want);
                }
            free(out);
            cask_array_release(c);
        }
        cask_array_release(a);
        cask_array_release(b);
        free(x);
        free(y);
    }
}

Test(unit, array_mixed_dtypes_promote, .init = up, .fini = down)
{
    int32_t xi[3] = {1, 2, 3};
    float xf[3] = {0.5f, 0.25f, 2.0f};
    int64_t shape[1] = {3};
    cask_array *a = host(xi, CASK_INT32, 1, shape, NULL), *b = host(xf, CASK_FLOAT32, 1, shape, NULL);
    cask_array *c, *d;
    cr_assert_eq(cask_array_binary(CASK_MUL, a, b, &c), CASK_OK);
    cr_assert_eq(cask_array_binary_scalar(CASK_MUL, a, 0.5, 0, &d), CASK_OK);
    cask_array_meta m;
    cask_array_get_meta(c, &m);
    cr_assert_eq(m.dtype, CASK_FLOAT32);
    cask_array_get_meta(d, &m);
    cr_assert_eq(m.dtype, CASK_FLOAT64, "a fractional scalar makes an int array float64");
    float *o = run(c);
    double *p = run(d);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(o[i], (float)xi[i] * xf[i]);
        cr_assert_eq(p[i], xi[i] * 0.5);
    }
    free(o); free(p);
    cask_array_release(a); cask_array_release(b); cask_array_release(c); cask_array_release(d);
}

Test(unit, array_scalar_ops_either_side, .init = up, .fini = down)
{
    uint64_t s = 9;
    int64_t shape[2], chunks[2];
    ref_shape(&s, 2, 20, shape, chunks);
    int64_t n = ref_size(2, shape);
    double *x = ref_data(CASK_FLOAT64, n, 3);
    cask_array *a = host(x, CASK_FLOAT64, 2, shape, chunks);
    for (int op = 0; op < CASK_BINARY_COUNT_; op++)
        for (int first = 0; first < 2; first++) {
            cask_array *c;
            cr_assert_eq(cask_array_binary_scalar((cask_binary_op)op, a, 1.75, first, &c), CASK_OK);
            double *o = run(c);
            for (int64_t i = 0; i < n; i++) {
                double want = first ? ref_binary((cask_binary_op)op, CASK_FLOAT64, 1.75, x[i])
                                    : ref_binary((cask_binary_op)op, CASK_FLOAT64, x[i], 1.75);
                if (op == CASK_POW) {
                    long double w = first ? powl(1.75L, x[i]) : powl(x[i], 1.75L);
                    cr_assert(ref_ulps(o[i], w, CASK_FLOAT64) <= LIB_ULPS, "%.17g vs %.17Lg", o[i], w);
                    continue;
                }
                cr_assert(same(o[i], want));
            }
            free(o);
            cask_array_release(c);
        }
    cask_array_release(a);
    free(x);
}

Test(unit, array_astype_saturates_and_wraps, .init = up, .fini = down)
{
    double v[6] = {NAN, 3.9e10, -3.9e10, -2.7, 2.7, 1e300};
    int64_t shape[1] = {6}, ch[1] = {4};
    cask_array *a = host(v, CASK_FLOAT64, 1, shape, ch), *i32, *u32, *f32, *back;
    cr_assert_eq(cask_array_astype(a, CASK_INT32, &i32), CASK_OK);
    cr_assert_eq(cask_array_astype(a, CASK_UINT32, &u32), CASK_OK);
    cr_assert_eq(cask_array_astype(a, CASK_FLOAT32, &f32), CASK_OK);
    cr_assert_eq(cask_array_astype(i32, CASK_UINT32, &back), CASK_OK);
    int32_t *o1 = run(i32);
    uint32_t *o2 = run(u32), *o4 = run(back);
    float *o3 = run(f32);
    int32_t w1[6] = {0, INT32_MAX, INT32_MIN, -2, 2, INT32_MAX};
    uint32_t w2[6] = {0, UINT32_MAX, 0, 0, 2, UINT32_MAX};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(o1[i], w1[i], "int32 %d: %d", i, o1[i]);
        cr_assert_eq(o2[i], w2[i], "uint32 %d", i);
        cr_assert(same(o3[i], (float)v[i]));
        cr_assert_eq(o4[i], (uint32_t)w1[i], "int32 to uint32 wraps");
    }
    free(o1); free(o2); free(o3); free(o4);
    cask_array_release(a); cask_array_release(i32); cask_array_release(u32);
    cask_array_release(f32); cask_array_release(back);
}

Test(unit, array_random_is_independent_of_chunking, .init = up, .fini = down)
{
    int64_t shape[2] = {37, 53}, c1[2] = {37, 53}, c2[2] = {5, 7};
    int64_t n = 37 * 53;
    for (int dist = 0; dist < 2; dist++)
        for (int d = 0; d < 2; d++) {
            cask_dtype dt = d ? CASK_FLOAT64 : CASK_FLOAT32;
            cask_array *a, *b;
            if (dist) {
                cr_assert_eq(cask_array_random_normal(ctx, dt, 2, shape, c1, 42, 1.0, 2.0, &a), 0);
                cr_assert_eq(cask_array_random_normal(ctx, dt, 2, shape, c2, 42, 1.0, 2.0, &b), 0);
            } else {
                cr_assert_eq(cask_array_random_uniform(ctx, dt, 2, shape, c1, 42, -1.0, 3.0, &a), 0);
                cr_assert_eq(cask_array_random_uniform(ctx, dt, 2, shape, c2, 42, -1.0, 3.0, &b), 0);
            }
            void *x = run(a), *y = run(b);
            cr_assert_eq(memcmp(x, y, (size_t)n * cask_dtype_size(dt)), 0, "dist %d dt %d", dist, dt);
            double sum = 0;
            for (int64_t i = 0; i < n; i++) {
                double v = ref_get(x, dt, i);
                double want;
                if (dist) want = ak_rand_normal(42, (uint64_t)i, 1.0, 2.0);
                else if (d) want = ak_rand_uniform(42, (uint64_t)i, -1.0, 3.0);
                else want = ak_rand_uniform_f32(42, (uint64_t)i, -1.0f, 3.0f);
                if (!d) want = (float)want;
                cr_assert_eq(v, want, "element %lld follows the documented generator", (long long)i);
                if (!dist) cr_assert(v >= -1.0 && v < 3.0);
                sum += v;
            }
            /* mean 1 either way; sd 1.15 (uniform) or 2 (normal): 5 sigma of the mean */
            cr_assert(fabs(sum / (double)n - 1.0) < 5 * 2.0 / sqrt((double)n));
            free(x); free(y);
            cask_array_release(a); cask_array_release(b);
        }
}

Test(unit, array_generators_fill_and_count, .init = up, .fini = down)
{
    cask_array *r, *f, *z, *o, *ri;
    int64_t shape[2] = {3, 5}, ch[2] = {2, 2};
    cr_assert_eq(cask_array_arange(ctx, CASK_FLOAT64, 23, 2.5, -0.5, 4, &r), CASK_OK);
    cr_assert_eq(cask_array_arange(ctx, CASK_INT64, 23, -3, 7, 6, &ri), CASK_OK);
    cr_assert_eq(cask_array_full(ctx, CASK_INT32, 2, shape, ch, -9, &f), CASK_OK);
    cr_assert_eq(cask_array_zeros(ctx, CASK_FLOAT32, 2, shape, ch, &z), CASK_OK);
    cr_assert_eq(cask_array_ones(ctx, CASK_UINT32, 2, shape, NULL, &o), CASK_OK);
    double *vr = run(r);
    int64_t *vri = run(ri);
    int32_t *vf = run(f);
    float *vz = run(z);
    uint32_t *vo = run(o);
    for (int i = 0; i < 23; i++) {
        cr_assert_eq(vr[i], 2.5 + i * -0.5);
        cr_assert_eq(vri[i], -3 + 7 * i);
    }
    for (int i = 0; i < 15; i++) {
        cr_assert_eq(vf[i], -9);
        cr_assert_eq(vz[i], 0.0f);
        cr_assert_eq(vo[i], 1u);
    }
    free(vr); free(vri); free(vf); free(vz); free(vo);
    cask_array_release(r); cask_array_release(ri); cask_array_release(f);
    cask_array_release(z); cask_array_release(o);
}

/* ---- fusion, sharing, culling ---- */

static cask_array *chain8(cask_array *x)
{
    cask_array *y = cask_array_retain(x), *t;
    cask_binary_op bops[4] = {CASK_MUL, CASK_ADD, CASK_MUL, CASK_ADD};
    double k[4] = {1.5, 0.25, 0.5, 1.0};
    cask_unary_op uops[4] = {CASK_SIN, CASK_SQUARE, CASK_SQRT, CASK_EXP};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(cask_array_binary_scalar(bops[i], y, k[i], 0, &t), CASK_OK);
        cask_array_release(y);
        cr_assert_eq(cask_array_unary(uops[i], t, &y), CASK_OK);
        cask_array_release(t);
    }
    return y;
}

Test(unit, array_chain_of_eight_ops_is_one_task_per_chunk, .init = up, .fini = down)
{
    int64_t shape[1] = {10000}, ch[1] = {1000};
    cask_array *x, *y;
    cr_assert_eq(cask_array_random_uniform(ctx, CASK_FLOAT32, 1, shape, ch, 3, 0, 1, &x), 0);
    y = chain8(x);
    cr_assert_eq(cask_array_persist(ctx, 1, &y), CASK_OK);
    cask_array_stats st;
    cask_array_last_stats(ctx, &st);
    cr_assert_eq(st.ntasks, 10, "one task per chunk, got %zu", st.ntasks);
    cr_assert_eq(st.ntasks_fused, 10);
    cr_assert_eq(st.nops_fused, 90, "8 ops and the generator per chunk");
    float *fused = run(y);
    /* the same chain unfused: one task per operation and chunk, same bits */
    cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_FUSE, 0), CASK_OK);
    cask_array *x2, *y2;
    int64_t ch2[1] = {999};
    cr_assert_eq(cask_array_random_uniform(ctx, CASK_FLOAT32, 1, shape, ch2, 3, 0, 1, &x2), 0);
    y2 = chain8(x2);
    cr_assert_eq(cask_array_plan(ctx, 1, &y2, &st, NULL), CASK_OK);
    cr_assert_eq(st.ntasks_compute, 9 * 11, "unfused: %zu", st.ntasks_compute);
    float *plain = run(y2);
    cr_assert_eq(memcmp(fused, plain, sizeof(float) * 10000), 0);
    /* against the chain in float64: sin and exp are within 1 ULP each, the rest
       rounds once per step, exp scales the error by its argument (< 2.3): 8 ULP */
    for (int i = 0; i < 10000; i++) {
        float v = ak_rand_uniform_f32(3, (uint64_t)i, 0, 1);
        double t = sin((double)v * 1.5) + 0.25;
        double w = exp(sqrt(t * t * 0.5) + 1.0);
        cr_assert(ref_ulps(fused[i], w, CASK_FLOAT32) <= 8, "%d: %.9g vs %.9g", i, fused[i], w);
    }
    free(fused); free(plain);
    cask_array_release(x); cask_array_release(y); cask_array_release(x2); cask_array_release(y2);
}

Test(unit, array_dag_with_shared_operands_fuses, .init = up, .fini = down)
{
    int64_t shape[2] = {30, 40}, ch[2] = {7, 40};
    double *xa = ref_data(CASK_FLOAT64, 1200, 1), *xb = ref_data(CASK_FLOAT64, 1200, 2);
    cask_array *a = host(xa, CASK_FLOAT64, 2, shape, ch), *b = host(xb, CASK_FLOAT64, 2, shape, ch);
    cask_array *s, *d, *p, *q;
    cask_array_binary(CASK_ADD, a, b, &s);
    cask_array_binary(CASK_SUB, a, b, &d);
    cask_array_binary(CASK_MUL, s, d, &p);
    cask_array_binary(CASK_MUL, p, p, &q);   /* (a+b)(a-b) squared */
    cask_array_stats st;
    cr_assert_eq(cask_array_plan(ctx, 1, &q, &st, NULL), CASK_OK);
    cr_assert_eq(st.ntasks_compute, 5, "one fused task per chunk, got %zu", st.ntasks_compute);
    double *o = run(q);
    for (int i = 0; i < 1200; i++) {
        double v = (xa[i] + xb[i]) * (xa[i] - xb[i]);
        cr_assert_eq(o[i], v * v);
    }
    free(o); free(xa); free(xb);
    cask_array_release(a); cask_array_release(b); cask_array_release(s);
    cask_array_release(d); cask_array_release(p); cask_array_release(q);
}

Test(unit, array_identical_expressions_are_one_node, .init = up, .fini = down)
{
    int64_t shape[1] = {100}, ch[1] = {10};
    cask_array *x, *y, *a1, *a2, *b1, *b2;
    cask_array_random_normal(ctx, CASK_FLOAT64, 1, shape, ch, 1, 0, 1, &x);
    cask_array_random_normal(ctx, CASK_FLOAT64, 1, shape, ch, 1, 0, 1, &y);
    cr_assert_eq(x, y, "same generator, same node");
    cask_array_unary(CASK_EXP, x, &a1);
    cask_array_unary(CASK_EXP, y, &a2);
    cr_assert_eq(a1, a2);
    cask_array_reduce(CASK_REDUCE_SUM, a1, 0, &b1);
    cask_array_reduce(CASK_REDUCE_SUM, a2, 0, &b2);
    cr_assert_eq(b1, b2);
    cask_array *outs[2] = {b1, b2};
    cask_array_stats st;
    cr_assert_eq(cask_array_plan(ctx, 2, outs, &st, NULL), CASK_OK);
    cr_assert_eq(st.ntasks_compute, 13, "10 partials and 3 combines, once: %zu", st.ntasks_compute);
    cask_array *c;
    cask_array_binary_scalar(CASK_ADD, x, 2.0, 0, &c);
    cr_assert_neq(c, a1);
    cask_array_release(c);
    cask_array_release(x); cask_array_release(y); cask_array_release(a1); cask_array_release(a2);
    cask_array_release(b1); cask_array_release(b2);
}

Test(unit, array_slice_computes_only_what_it_covers, .init = up, .fini = down)
{
    int64_t shape[2] = {1000, 60}, ch[2] = {10, 20};
    cask_array *x, *y, *s, *bad;
    cask_array_random_uniform(ctx, CASK_FLOAT64, 2, shape, ch, 9, 0, 1, &x);
    cask_array_binary_scalar(CASK_MUL, x, 2.0, 0, &y);
    int64_t lo[2] = {100, 20}, hi[2] = {130, 60};
    cr_assert_eq(cask_array_slice(y, lo, hi, &s), CASK_OK);
    cask_array_stats st;
    cr_assert_eq(cask_array_plan(ctx, 1, &s, &st, NULL), CASK_OK);
    cr_assert_eq(st.ntasks_compute, 6, "3 x 2 chunks, got %zu", st.ntasks_compute);
    double *o = run(s);
    for (int i = 0; i < 30; i++)
        for (int j = 0; j < 40; j++)
            cr_assert_eq(o[i * 40 + j], 2.0 * ak_rand_uniform(9, (uint64_t)((100 + i) * 60 + 20 + j), 0, 1));
    int64_t lo2[2] = {5, 0}, hi2[2] = {20, 60};
    cr_assert_eq(cask_array_slice(y, lo2, hi2, &bad), CASK_ERR_INVALID);
    cr_assert(strstr(cask_array_ctx_error(ctx), "aligned"));
    free(o);
    cask_array_release(x); cask_array_release(y); cask_array_release(s);
}

Test(unit, array_rechunk_keeps_values, .init = up, .fini = down)
{
    uint64_t s = 31;
    for (int trial = 0; trial < 4; trial++) {
        int nd = 1 + trial % 3;
        int64_t shape[4], c1[4], c2[4];
        ref_shape(&s, nd, nd == 1 ? 500 : 25, shape, c1);
        for (int k = 0; k < nd; k++) c2[k] = ref_range(&s, 1, shape[k] + 1);
        if (trial == 3) c2[0] = 1;   /* many small input chunks per output chunk */
        int64_t n = ref_size(nd, shape);
        int64_t *x = ref_data(CASK_INT64, n, (uint64_t)trial);
        cask_array *a = host(x, CASK_INT64, nd, shape, c1), *b, *c;
        cr_assert_eq(cask_array_rechunk(a, c2, &b), CASK_OK);
        cr_assert_eq(cask_array_rechunk(b, c1, &c), CASK_OK);
        int64_t *o = run(b), *o2 = run(c);
        cr_assert_eq(memcmp(o, x, sizeof(int64_t) * (size_t)n), 0);
        cr_assert_eq(memcmp(o2, x, sizeof(int64_t) * (size_t)n), 0);
        free(o); free(o2); free(x);
        cask_array_release(a); cask_array_release(b); cask_array_release(c);
    }
}

Test(unit, array_matmul_matches_reference, .init = up, .fini = down)
{
    uint64_t s = 8;
    for (int trial = 0; trial < 4; trial++) {
        int64_t m = ref_range(&s, 1, 40), k = ref_range(&s, 1, 40), n = ref_range(&s, 1, 40);
        int64_t sa[2] = {m, k}, sb[2] = {k, n};
        int64_t ca[2] = {ref_range(&s, 1, m + 1), ref_range(&s, 1, k + 1)};
        int64_t cb[2] = {ref_range(&s, 1, k + 1), ref_range(&s, 1, n + 1)};
        cask_dtype dt = trial & 1 ? CASK_INT64 : CASK_FLOAT64;
        void *x = ref_data(dt, m * k, 1), *y = ref_data(dt, k * n, 2);
        cask_array *a = host(x, dt, 2, sa, ca), *b = host(y, dt, 2, sb, cb), *c;
        cr_assert_eq(cask_array_matmul(a, b, &c), CASK_OK);
        void *o = run(c);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t t = 0; t < k; t++) acc += ref_get(x, dt, i * k + t) * ref_get(y, dt, t * n + j);
                double got = ref_get(o, dt, i * n + j);
                cr_assert(fabs(got - acc) <= 1e-12 * (1 + fabs(acc)) * (double)k, "%g vs %g", got, acc);
            }
        free(o); free(x); free(y);
        cask_array_release(a); cask_array_release(b); cask_array_release(c);
    }
}

/* OpenBLAS is opened by the first float product, not as libcask loads: its thread pool
 * spins at start-up, which every process paid, products or not (kernels/blas_load.h). */
static int blas_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, "libopenblas") != NULL;
    if (f) fclose(f);
    return found;
}

Test(unit, array_blas_opened_by_the_first_float_product, .init = up, .fini = down)
{
    const char *have = getenv("CASK_TEST_HAVE_BLAS");
    if (!have || strcmp(have, "1") != 0) cr_skip_test("built without a BLAS");
    if (access("/proc/self/maps", R_OK) != 0) cr_skip_test("no /proc/self/maps to look in");
    cr_assert(!blas_mapped(), "OpenBLAS was loaded before any product");
    int64_t sh[2] = {8, 8}, ch[2] = {8, 8};
    void *x = ref_data(CASK_FLOAT32, 64, 3), *y = ref_data(CASK_FLOAT32, 64, 4);
    cask_array *a = host(x, CASK_FLOAT32, 2, sh, ch), *b = host(y, CASK_FLOAT32, 2, sh, ch), *c;
    cr_assert_eq(cask_array_matmul(a, b, &c), CASK_OK);
    void *o = run(c);
    cr_assert(blas_mapped(), "a float product ran without OpenBLAS");
    free(o); free(x); free(y);
    cask_array_release(a); cask_array_release(b); cask_array_release(c);
}

Test(unit, array_broadcast_against_a_reduction, .init = up, .fini = down)
{
    int64_t shape[2] = {20, 33}, ch[2] = {6, 10};
    double *x = ref_data(CASK_FLOAT64, 660, 12);
    cask_array *a = host(x, CASK_FLOAT64, 2, shape, ch), *m, *me, *d;
    cask_array_reduce(CASK_REDUCE_MEAN, a, 1, &m);
    cr_assert_eq(cask_array_expand_dims(m, 1, &me), CASK_OK);
    cr_assert_eq(cask_array_binary(CASK_SUB, a, me, &d), CASK_OK);
    double *o = run(d), *om = run(m);
    for (int i = 0; i < 20; i++)
        for (int j = 0; j < 33; j++) cr_assert_eq(o[i * 33 + j], x[i * 33 + j] - om[i]);
    free(o); free(om); free(x);
    cask_array_release(a); cask_array_release(m); cask_array_release(me); cask_array_release(d);
}
