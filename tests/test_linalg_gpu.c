/* tests/test_linalg_gpu.c: cask_array_cholesky with its tiles on a real GPU (suite gpu;
 * the program exits 77, SKIP, without one). The TRSMs of a panel multiply by the inverse
 * of its diagonal tile where that tile is well conditioned (TRINV's verdict, LA_INV_COND)
 * and solve with it otherwise: both ways keep the residual bound of docs/linalg.md. The
 * ill-conditioned case fails that bound when the verdict is forced to yes (built with
 * -DLA_INV_COND=1e300: RESULTS 42). */
#include "gpu_main.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static cask_runtime *rt;
static cask_array_ctx *ctx;

static void up(void)
{
    rt = gpu_runtime_ncpu(2);
    cr_assert(rt, "no real GPU");
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU), CASK_OK);
}

static void down(void)
{
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    ctx = NULL;
    rt = NULL;
}

TestSuite(linalg_gpu, .init = up, .fini = down, .timeout = 300);

static uint64_t next(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 11;
}

/* n I + (R + R^T)/2, R uniform in [-1, 1): every diagonal tile's factor is well
 * conditioned. */
static double *spd(int64_t n, uint64_t seed)
{
    double *a = malloc((size_t)(n * n) * sizeof *a);
    uint64_t x = seed;
    for (int64_t i = 0; i < n * n; i++) a[i] = (double)next(&x) / 9007199254740992.0 * 2 - 1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) a[i * n + j] = a[j * n + i] = (a[i * n + j] + a[j * n + i]) / 2;
    for (int64_t i = 0; i < n; i++) a[i * n + i] += (double)n;
    return a;
}

/* A = L0 L0^T, L0 unit lower bidiagonal inside each tile of t (-b below the diagonal),
 * with small random entries below the diagonal tiles: the factor of each diagonal tile
 * is L0's, whose inverse holds b^(i-j), so cond_inf(L_kk) is about (1 + b) b^t / (b - 1)
 * (b = 1.15, t = 96: 1e7) while A stays far from singular in float64. */
static double *ill(int64_t n, int64_t t, double b, uint64_t seed)
{
    double *l = calloc((size_t)(n * n), sizeof *l), *a = malloc((size_t)(n * n) * sizeof *a);
    uint64_t x = seed;
    for (int64_t i = 0; i < n; i++) {
        l[i * n + i] = 1;
        if (i % t) l[i * n + i - 1] = -b;
        for (int64_t j = 0; j < i / t * t; j++) l[i * n + j] = ((double)next(&x) / 9007199254740992.0 - 0.5) * 0.01;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            double s = 0;
            for (int64_t k = 0; k <= j; k++) s += l[i * n + k] * l[j * n + k];
            a[i * n + j] = a[j * n + i] = s;
        }
    free(l);
    return a;
}

/* ||A - L L^T||_F / (n ||A||_F) */
static double residual(const double *a, const void *l, int f32, int64_t n)
{
    double num = 0, den = 0;
#define L_(i, j) (f32 ? (double)((const float *)l)[(i) * n + (j)] : ((const double *)l)[(i) * n + (j)])
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            double s = 0;
            for (int64_t k = 0; k <= j; k++) s += L_(i, k) * L_(j, k);
            double d = a[i * n + j] - s, w = i == j ? 1 : 2;
            num += w * d * d;
            den += w * a[i * n + j] * a[i * n + j];
        }
#undef L_
    return sqrt(num) / ((double)n * sqrt(den));
}

#define BOUND_F64 (4 * 1.1102230246251565e-16)
#define BOUND_F32 (4 * 5.9604644775390625e-08)

/* Factors a (float64 values; f32: rounded) on the GPU in tiles of t: the residual, and
 * the diagonal tiles inverted in *inverted. */
static double factor(const double *a, int64_t n, int64_t t, int f32, size_t *inverted)
{
    size_t es = f32 ? 4 : 8;
    void *in = malloc((size_t)(n * n) * es), *out = malloc((size_t)(n * n) * es);
    for (int64_t i = 0; i < n * n; i++) {
        if (f32) ((float *)in)[i] = (float)a[i];
        else ((double *)in)[i] = a[i];
    }
    int64_t shape[2] = {n, n}, ch[2] = {t, t};
    cask_array *A, *L;
    cr_assert_eq(cask_array_from_host(ctx, in, f32 ? CASK_FLOAT32 : CASK_FLOAT64, 2, shape, ch, &A),
                 CASK_OK);
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
    cask_status st = cask_array_compute(L, out, (size_t)(n * n) * es);
    cr_assert_eq(st, CASK_OK, "%s", cask_array_ctx_error(ctx));
    cask_array_stats s;
    cr_assert_eq(cask_array_last_stats(ctx, &s), CASK_OK);
    *inverted = s.ntiles_inverted;
    double r = residual(a, out, f32, n);
    cask_array_release(L);
    cask_array_release(A);
    free(in);
    free(out);
    return r;
}

/* 11 tiles, the last of 40 rows: panels 0..6 have at least la_inv_min (4) TRSMs */
Test(linalg_gpu, well_conditioned_tiles_are_inverted_and_the_residual_holds)
{
    int64_t n = 1000, t = 96;
    double *a = spd(n, 3);
    for (int f32 = 0; f32 < 2; f32++) {
        size_t inv;
        double r = factor(a, n, t, f32, &inv);
        cr_assert(r <= (f32 ? BOUND_F32 : BOUND_F64), "%s: residual %g", f32 ? "f32" : "f64", r);
        cr_assert_eq(inv, 7, "%s: %zu diagonal tiles inverted, expected 7", f32 ? "f32" : "f64", inv);
    }
    free(a);
}

Test(linalg_gpu, ill_conditioned_tiles_are_solved_with_and_the_residual_holds)
{
    int64_t n = 768, t = 96;
    double *a = ill(n, t, 1.15, 5);
    size_t inv;
    double r = factor(a, n, t, 0, &inv);
    cr_assert(r <= BOUND_F64, "residual %g (bound %g), %zu tiles inverted", r, BOUND_F64, inv);
    cr_assert_eq(inv, 0, "%zu ill-conditioned diagonal tiles inverted", inv);
    free(a);
}

Test(linalg_gpu, the_environment_turns_the_inverse_off)
{
    int64_t n = 1000, t = 96;
    double *a = spd(n, 4);
    setenv("CASK_CHOL_INVERSE", "0", 1);
    size_t inv;
    double r = factor(a, n, t, 0, &inv);
    unsetenv("CASK_CHOL_INVERSE");
    cr_assert(r <= BOUND_F64, "residual %g", r);
    cr_assert_eq(inv, 0, "%zu tiles inverted with CASK_CHOL_INVERSE=0", inv);
    free(a);
}

CASK_GPU_TEST_MAIN("test_linalg_gpu")
