/* tests/test_linalg.c: cask_array_cholesky and cask_array_cho_solve on CPU workers:
 * residuals within the bounds docs/linalg.md states (float32 and float64, odd tile
 * counts, a last tile smaller than the others), the same bytes for any worker count,
 * and the errors of bad input (not positive definite, NaN, shapes, tiles, dtypes). */
#include <math.h>
#include <criterion/criterion.h>
#include "array_fixture.h"

/* A = n I + (R + R^T)/2 with R uniform in [-1, 1): symmetric positive definite. */
static double *spd(int64_t n, uint64_t seed)
{
    double *a = malloc((size_t)(n * n) * sizeof *a);
    uint64_t x = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n * n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) a[i * n + j] = a[j * n + i] = (a[i * n + j] + a[j * n + i]) / 2;
    for (int64_t i = 0; i < n; i++) a[i * n + i] += (double)n;
    return a;
}

static float *to_f32(const double *a, int64_t n)
{
    float *f = malloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = (float)a[i];
    return f;
}

/* ||A - L L^T||_F / (n ||A||_F), and L's upper part must be zero. */
static double residual(const double *a, const void *l, int f32, int64_t n)
{
    double num = 0, den = 0;
#define L_(i, j) (f32 ? (double)((const float *)l)[(i) * n + (j)] : ((const double *)l)[(i) * n + (j)])
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            if (j > i) cr_assert_eq(L_(i, j), 0.0, "L(%lld,%lld) above the diagonal is %g",
                                    (long long)i, (long long)j, L_(i, j));
            double s = 0;
            for (int64_t k = 0; k <= (i < j ? i : j); k++) s += L_(i, k) * L_(j, k);
            double d = a[i * n + j] - s;
            num += d * d;
            den += a[i * n + j] * a[i * n + j];
        }
#undef L_
    return sqrt(num) / ((double)n * sqrt(den));
}

/* The documented bounds (docs/linalg.md): 4 unit roundoffs for the scaled residual. */
#define BOUND_F64 (4 * 1.1102230246251565e-16)
#define BOUND_F32 (4 * 5.9604644775390625e-08)

static void factor_and_check(int64_t n, int64_t tile, int f32)
{
    double *a = spd(n, (uint64_t)n);
    void *in = f32 ? (void *)to_f32(a, n * n) : (void *)a;
    int64_t shape[2] = {n, n}, ch[2] = {tile, tile};
    cask_array *A = host(in, f32 ? CASK_FLOAT32 : CASK_FLOAT64, 2, shape, ch), *L;
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK, "%s", cask_array_ctx_error(ctx));
    void *l = run(L);
    double r = residual(a, l, f32, n);
    cr_assert(r <= (f32 ? BOUND_F32 : BOUND_F64), "n %lld tile %lld %s: residual %g",
              (long long)n, (long long)tile, f32 ? "f32" : "f64", r);
    cask_array_release(L);
    cask_array_release(A);
    free(l);
    if (f32) free(in);
    free(a);
}

TestSuite(linalg, .init = up, .fini = down, .timeout = 120);

Test(linalg, cholesky_f64_odd_tiles_and_a_smaller_last_tile)
{
    factor_and_check(300, 64, 0);   /* 5 tiles a side, the last of 44 */
}

Test(linalg, cholesky_f32_odd_tiles_and_a_smaller_last_tile)
{
    factor_and_check(233, 48, 1);   /* 5 tiles a side, the last of 41 */
}

Test(linalg, cholesky_of_one_tile_and_of_tiles_of_one_row)
{
    factor_and_check(40, 64, 0);
    factor_and_check(7, 1, 0);
}

/* ||A x - b|| / (||A|| ||x|| + ||b||), the normwise backward error, per column */
static double backward_error(const double *a, const double *x, const double *b, int64_t n,
                             int64_t k)
{
    double an = 0, worst = 0;
    for (int64_t i = 0; i < n * n; i++) an += a[i] * a[i];
    an = sqrt(an);
    for (int64_t c = 0; c < k; c++) {
        double rn = 0, xn = 0, bn = 0;
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int64_t j = 0; j < n; j++) s += a[i * n + j] * x[j * k + c];
            rn += (s - b[i * k + c]) * (s - b[i * k + c]);
            xn += x[i * k + c] * x[i * k + c];
            bn += b[i * k + c] * b[i * k + c];
        }
        double e = sqrt(rn) / (an * sqrt(xn) + sqrt(bn));
        if (e > worst) worst = e;
    }
    return worst;
}

Test(linalg, cho_solve_many_and_one_right_hand_side)
{
    int64_t n = 260, t = 64, k = 5;
    double *a = spd(n, 3), *b = malloc((size_t)(n * k) * sizeof *b);
    for (int64_t i = 0; i < n * k; i++) b[i] = sin((double)i);
    int64_t shape[2] = {n, n}, ch[2] = {t, t}, bs[2] = {n, k}, bch[2] = {100, 2};
    cask_array *A = host(a, CASK_FLOAT64, 2, shape, ch), *B = host(b, CASK_FLOAT64, 2, bs, bch);
    cask_array *L, *X, *X1, *B1;
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
    cr_assert_eq(cask_array_cho_solve(L, B, &X), CASK_OK, "%s", cask_array_ctx_error(ctx));
    double *x = run(X);
    double e = backward_error(a, x, b, n, k);
    cr_assert(e <= BOUND_F64 * 4, "backward error %g", e);
    /* one right-hand side, 1-D */
    int64_t b1s[1] = {n}, b1c[1] = {n};
    double *b1 = malloc((size_t)n * sizeof *b1);
    for (int64_t i = 0; i < n; i++) b1[i] = b[i * k + 2];
    B1 = host(b1, CASK_FLOAT64, 1, b1s, b1c);
    cr_assert_eq(cask_array_cho_solve(L, B1, &X1), CASK_OK, "%s", cask_array_ctx_error(ctx));
    double *x1 = run(X1);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(x1[i], x[i * k + 2], "row %lld: 1-D solve %g, column 2 of many %g",
                     (long long)i, x1[i], x[i * k + 2]);
    cask_array *all[4] = {A, B, L, X};
    for (int i = 0; i < 4; i++) cask_array_release(all[i]);
    cask_array_release(X1);
    cask_array_release(B1);
    free(x);
    free(x1);
    free(a);
    free(b);
    free(b1);
}

/* The same bytes on 1 worker and on 2 (each tile's updates in a fixed order). */
Test(linalg, same_bytes_for_any_worker_count, .init = NULL, .fini = NULL)
{
    int64_t n = 320, shape[2] = {n, n}, ch[2] = {64, 64};
    double *a = spd(n, 9);
    void *out[2];
    for (int w = 0; w < 2; w++) {
        start(w + 1);
        cask_array *A = host(a, CASK_FLOAT64, 2, shape, ch), *L;
        cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
        out[w] = run(L);
        cask_array_release(L);
        cask_array_release(A);
        down();
    }
    cr_assert_eq(memcmp(out[0], out[1], (size_t)(n * n) * 8), 0, "1 and 2 workers differ");
    free(out[0]);
    free(out[1]);
    free(a);
}

static void expect_not_spd(double *a, int64_t n, int64_t t, const char *want)
{
    int64_t shape[2] = {n, n}, ch[2] = {t, t};
    cask_array *A = host(a, CASK_FLOAT64, 2, shape, ch), *L;
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
    double *out = malloc((size_t)(n * n) * 8);
    cask_status st = cask_array_compute(L, out, (size_t)(n * n) * 8);
    cr_assert_eq(st, CASK_ERR_NOT_SPD, "got %s: %s", cask_status_string(st),
                 cask_array_ctx_error(ctx));
    cr_assert(strstr(cask_array_ctx_error(ctx), want), "message \"%s\" lacks \"%s\"",
              cask_array_ctx_error(ctx), want);
    cask_array_release(L);
    cask_array_release(A);
    free(out);
}

Test(linalg, a_matrix_not_positive_definite_fails_naming_its_tile_and_minor)
{
    int64_t n = 200;
    double *a = spd(n, 5);
    /* the leading minor of order 131 (row 130, in tile 2 of 64) is made negative */
    a[130 * n + 130] = -1e6;
    expect_not_spd(a, n, 64, "tile (2,2): the leading minor of order 131 is not positive definite");
    free(a);
}

Test(linalg, nan_in_the_matrix_fails_as_not_finite)
{
    int64_t n = 130;
    double *a = spd(n, 6);
    a[100 * n + 3] = a[3 * n + 100] = NAN;
    expect_not_spd(a, n, 32, "not finite");
    free(a);
}

Test(linalg, bad_shapes_tiles_and_dtypes_are_refused)
{
    double d[64] = {0};
    int32_t ints[64] = {0};
    int64_t sq[2] = {8, 8}, rect[2] = {4, 16}, t4[2] = {4, 4}, t42[2] = {4, 2}, one[1] = {64};
    cask_array *x, *L;
    x = host(d, CASK_FLOAT64, 2, rect, t4);
    cr_assert_eq(cask_array_cholesky(x, &L), CASK_ERR_INVALID);
    cr_assert(strstr(cask_array_ctx_error(ctx), "square matrix"));
    cask_array_release(x);
    x = host(d, CASK_FLOAT64, 2, sq, t42);
    cr_assert_eq(cask_array_cholesky(x, &L), CASK_ERR_INVALID);
    cr_assert(strstr(cask_array_ctx_error(ctx), "square tiles"));
    cask_array_release(x);
    x = host(ints, CASK_INT32, 2, sq, t4);
    cr_assert_eq(cask_array_cholesky(x, &L), CASK_ERR_INVALID);
    cr_assert(strstr(cask_array_ctx_error(ctx), "float32 or float64"));
    cask_array_release(x);
    x = host(d, CASK_FLOAT64, 1, one, one);
    cr_assert_eq(cask_array_cholesky(x, &L), CASK_ERR_INVALID);
    cask_array_release(x);
    /* a right-hand side of the wrong length */
    cask_array *A = host(d, CASK_FLOAT64, 2, sq, t4), *B, *X;
    int64_t bl[1] = {7};
    B = host(d, CASK_FLOAT64, 1, bl, bl);
    cr_assert_eq(cask_array_cho_solve(A, B, &X), CASK_ERR_INVALID);
    cask_array_release(A);
    cask_array_release(B);
}

/* Straight to the user's memory (compute) and through kept tiles (persist, then
 * compute): the same bytes, zeros above the diagonal included. */
Test(linalg, persisted_factor_and_factor_to_host_are_the_same_bytes)
{
    int64_t n = 200, shape[2] = {n, n}, ch[2] = {48, 48};
    double *a = spd(n, 11);
    cask_array *A = host(a, CASK_FLOAT64, 2, shape, ch), *L, *L2;
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
    double *direct = run(L);
    cr_assert_eq(cask_array_binary_scalar(CASK_MUL, A, 1.0, 0, &L2), CASK_OK);
    cask_array *P;
    cr_assert_eq(cask_array_persist(ctx, 1, &L2), CASK_OK);   /* A's tiles as kept chunks */
    cr_assert_eq(cask_array_cholesky(L2, &P), CASK_OK);
    cr_assert_eq(cask_array_persist(ctx, 1, &P), CASK_OK, "%s", cask_array_ctx_error(ctx));
    double *kept = run(P);
    cr_assert_eq(memcmp(direct, kept, (size_t)(n * n) * 8), 0, "the two paths differ");
    cask_array_release(P);
    cask_array_release(L2);
    cask_array_release(L);
    cask_array_release(A);
    free(direct);
    free(kept);
    free(a);
}

/* Starts rt and ctx with ncpu CPU workers and ngpu simulated GPUs: 1, or 0 (nothing
 * started) where real GPUs are used instead of simulated ones. */
static int start_sim(int ncpu, int ngpu)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND;
    cfg.ncpu = ncpu;
    cfg.sim_gpus = ngpu;
    cfg.bind = 0;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    if (!info.simulated_gpus) {
        cask_shutdown(rt);
        rt = NULL;
        return 0;
    }
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    return 1;
}

/* Two simulated GPUs and two CPU workers (simulated GPUs run the CPU kernels, so the
 * cost model splits tiles among all four): tiles run on both GPUs, and the bytes are
 * those of the CPU workers alone. */
Test(linalg, two_simulated_gpus_share_the_tiles_and_keep_the_bytes, .init = NULL, .fini = NULL)
{
    const char *cuda = getenv("CASK_TEST_HAVE_CUDA");
    if (cuda && !strcmp(cuda, "0"))
        cr_skip_test("a build without CUDA has no GPU tile kernels for simulated GPUs to run");
    int64_t n = 768, shape[2] = {n, n}, ch[2] = {96, 96};
    double *a = spd(n, 12);
    start(2);
    cask_array *A = host(a, CASK_FLOAT64, 2, shape, ch), *L;
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
    double *cpu = run(L);
    cask_array_release(L);
    cask_array_release(A);
    down();
    if (!start_sim(2, 2)) {
        free(cpu);
        free(a);
        cr_skip_test("real GPUs here: simulated ones are not used");
    }
    A = host(a, CASK_FLOAT64, 2, shape, ch);
    cr_assert_eq(cask_array_cholesky(A, &L), CASK_OK);
    double *two = run(L);
    cask_worker_stats st[4];
    cr_assert_eq(cask_runtime_stats(rt, st, 4), CASK_OK);
    cr_assert(st[2].kind == 1 && st[3].kind == 1);
    cr_assert(st[2].tasks_run > 0 && st[3].tasks_run > 0, "GPU 0 ran %llu tasks, GPU 1 %llu",
              (unsigned long long)st[2].tasks_run, (unsigned long long)st[3].tasks_run);
    /* host to host with GPUs: each of the 36 tiles loaded and stored by a task of its own
     * (array/linalg.c), beside 8 POTRF, 28 TRSM, 28 SYRK, 56 GEMM and 7 zero tasks, and
     * a TRINV for each of the 4 panels of at least la_inv_min (4 at this tile) TRSMs */
    uint64_t total = 0;
    for (int i = 0; i < 4; i++) total += st[i].tasks_run;
    cr_assert_eq(total, 36 + 36 + 8 + 28 + 28 + 56 + 7 + 4, "%llu tasks ran",
                 (unsigned long long)total);
    cr_assert_eq(memcmp(cpu, two, (size_t)(n * n) * 8), 0, "the bytes depend on placement");
    cask_array_release(L);
    cask_array_release(A);
    down();
    free(cpu);
    free(two);
    free(a);
}

/* With a (simulated) GPU the tiles are loaded and stored by tasks of their own: a matrix
 * that is not positive definite still fails naming its tile, with loads and stores in
 * flight, and nothing hangs. */
Test(linalg, not_positive_definite_with_a_simulated_gpu_fails_with_loads_in_flight,
     .init = NULL, .fini = NULL)
{
    const char *cuda = getenv("CASK_TEST_HAVE_CUDA");
    if (cuda && !strcmp(cuda, "0"))
        cr_skip_test("a build without CUDA has no GPU tile kernels for simulated GPUs to run");
    if (!start_sim(1, 1))
        cr_skip_test("real GPUs here: simulated ones are not used");
    int64_t n = 400;
    double *a = spd(n, 7);
    a[150 * n + 150] = -1e6;   /* row 150: tile (2,2) of 64, the minor of order 151 */
    expect_not_spd(a, n, 64, "tile (2,2): the leading minor of order 151 is not positive definite");
    down();
    free(a);
}
