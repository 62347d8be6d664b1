/* tests/test_array_vmath.c: the accuracy of the CPU vector math (suite unit). exp, log,
 * sin, cos and pow of float32 and float64 arrays against wider references (double for
 * float32, long double for float64) over sweeps of their domains, with the error bounds
 * docs/arrays.md states ("Numerics": 1.0 ULP each; sin and cos for |x| <= 1e28 / 1e299;
 * sqrt correctly rounded), C99's special values, and results that do not depend on the
 * chunking (where a value falls in a vector or a tile). */
#include <criterion/criterion.h>
#include <float.h>
#include "array_fixture.h"

/* The bound of docs/arrays.md, plus what the reference itself may be off (long double
 * functions within a few of their ULP: < 0.01 of a double's). */
#define BOUND_ULPS 1.01

enum { F_EXP, F_LOG, F_SIN, F_COS };
static const cask_unary_op UOP[4] = {CASK_EXP, CASK_LOG, CASK_SIN, CASK_COS};
static const char *NAME[4] = {"exp", "log", "sin", "cos"};

static long double wide(int f, long double x)
{
    switch (f) {
    case F_EXP: return expl(x);
    case F_LOG: return logl(x);
    case F_SIN: return sinl(x);
    default: return cosl(x);
    }
}

/* n points of f's domain: uniform over [lo, hi], then log-spaced magnitudes for log. */
static double *sweep(int f, int64_t n, uint64_t seed)
{
    double *x = malloc((size_t)n * sizeof *x);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(ref_splitmix(&s) >> 11) / 9007199254740992.0;
        switch (f) {
        case F_EXP: x[i] = -87.0 + 175.0 * u; break;   /* float32's finite range */
        case F_LOG: x[i] = pow(10.0, -37.0 + 74.0 * u); break;
        default:    /* most near the origin, some far (argument reduction) */
            x[i] = (i % 8 == 0) ? (u - 0.5) * 2e6 : (u - 0.5) * 200.0;
        }
    }
    return x;
}

/* Computes op over x (n values of dt) in chunks of chunk and returns the worst ULP error. */
static double worst_ulps(int f, cask_dtype dt, const double *x, int64_t n, int64_t chunk,
                         int64_t *at)
{
    void *in = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) ref_set(in, dt, i, x[i]);
    int64_t shape[1] = {n}, ch[1] = {chunk};
    cask_array *a = host(in, dt, 1, shape, ch), *b;
    cr_assert_eq(cask_array_unary(UOP[f], a, &b), CASK_OK);
    void *out = run(b);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double u = ref_ulps(ref_get(out, dt, i), wide(f, ref_get(in, dt, i)), dt);
        if (u > worst) {
            worst = u;
            *at = i;
        }
    }
    cask_array_release(a);
    cask_array_release(b);
    free(in);
    free(out);
    return worst;
}

Test(unit, array_vector_math_float32_within_one_ulp, .init = up, .fini = down)
{
    for (int f = 0; f < 4; f++) {
        int64_t n = 200003, at = 0;
        double *x = sweep(f, n, 100 + (uint64_t)f);
        double w = worst_ulps(f, CASK_FLOAT32, x, n, 65536, &at);
        cr_assert(w <= BOUND_ULPS, "float32 %s: %.3f ULP at x = %.9g", NAME[f], w, (float)x[at]);
        free(x);
    }
}

Test(unit, array_vector_math_float64_within_one_ulp, .init = up, .fini = down)
{
    for (int f = 0; f < 4; f++) {
        int64_t n = 100003, at = 0;
        double *x = sweep(f, n, 200 + (uint64_t)f);
        if (f == F_EXP)   /* float64's finite range */
            for (int64_t i = 0; i < n; i++) x[i] *= 708.0 / 88.0;
        double w = worst_ulps(f, CASK_FLOAT64, x, n, 65536, &at);
        cr_assert(w <= BOUND_ULPS, "float64 %s: %.3f ULP at x = %.17g", NAME[f], w, x[at]);
        free(x);
    }
}

Test(unit, array_vector_pow_within_one_ulp, .init = up, .fini = down)
{
    const cask_dtype dts[2] = {CASK_FLOAT32, CASK_FLOAT64};
    for (int d = 0; d < 2; d++) {
        cask_dtype dt = dts[d];
        int64_t n = 100001;
        void *xb = malloc((size_t)n * 8), *xe = malloc((size_t)n * 8);
        uint64_t s = 7 + (uint64_t)d;
        for (int64_t i = 0; i < n; i++) {
            double u = (double)(ref_splitmix(&s) >> 11) / 9007199254740992.0;
            double v = (double)(ref_splitmix(&s) >> 11) / 9007199254740992.0;
            ref_set(xb, dt, i, 1e-3 + 100.0 * u);    /* base (0, 100] */
            ref_set(xe, dt, i, -10.0 + 20.0 * v);    /* exponent [-10, 10] */
        }
        int64_t shape[1] = {n}, ch[1] = {10007};
        cask_array *a = host(xb, dt, 1, shape, ch), *e = host(xe, dt, 1, shape, ch), *p;
        cr_assert_eq(cask_array_binary(CASK_POW, a, e, &p), CASK_OK);
        void *out = run(p);
        for (int64_t i = 0; i < n; i++) {
            long double w = powl(ref_get(xb, dt, i), ref_get(xe, dt, i));
            double u = ref_ulps(ref_get(out, dt, i), w, dt);
            cr_assert(u <= BOUND_ULPS, "dt %d pow(%.17g, %.17g) = %.17g: %.3f ULP", dt,
                      ref_get(xb, dt, i), ref_get(xe, dt, i), ref_get(out, dt, i), u);
        }
        cask_array_release(a); cask_array_release(e); cask_array_release(p);
        free(xb); free(xe); free(out);
    }
}

Test(unit, array_vector_math_special_values_follow_c99, .init = up, .fini = down)
{
    const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 100.0f, -104.0f,
                       FLT_MIN, 1e-45f};
    int64_t n = sizeof x / sizeof x[0], shape[1] = {n};
    cask_array *a = host(x, CASK_FLOAT32, 1, shape, NULL);
    for (int f = 0; f < 4; f++) {
        cask_array *b;
        cr_assert_eq(cask_array_unary(UOP[f], a, &b), CASK_OK);
        float *o = run(b);
        for (int64_t i = 0; i < n; i++) {
            long double w = wide(f, x[i]);
            cr_assert(ref_ulps(o[i], w, CASK_FLOAT32) <= BOUND_ULPS, "%s(%g) = %g, C99: %Lg",
                      NAME[f], x[i], o[i], w);
            if (isinf(w) || w == 0) cr_assert(o[i] == (float)w, "%s(%g) exact", NAME[f], x[i]);
        }
        free(o);
        cask_array_release(b);
    }
    cask_array_release(a);
}

Test(unit, array_vector_math_does_not_depend_on_chunking, .init = up, .fini = down)
{
    /* the same values cut so that each falls at other places of vectors and tiles */
    int64_t n = 5003;
    double *x = sweep(F_SIN, n, 5);
    float *xf = malloc((size_t)n * sizeof *xf);
    for (int64_t i = 0; i < n; i++) xf[i] = (float)x[i];
    const int64_t chunks[3] = {5003, 7, 1001};
    float *first = NULL;
    for (int c = 0; c < 3; c++) {
        int64_t shape[1] = {n}, ch[1] = {chunks[c]};
        cask_array *a = host(xf, CASK_FLOAT32, 1, shape, ch), *b, *d;
        cr_assert_eq(cask_array_unary(CASK_SIN, a, &b), CASK_OK);
        cr_assert_eq(cask_array_unary(CASK_EXP, b, &d), CASK_OK);
        float *o = run(d);
        if (!first) first = o;
        else {
            cr_assert_eq(memcmp(first, o, (size_t)n * sizeof *o), 0, "chunk %lld differs",
                         (long long)chunks[c]);
            free(o);
        }
        cask_array_release(a); cask_array_release(b); cask_array_release(d);
    }
    free(first);
    free(xf);
    free(x);
}
