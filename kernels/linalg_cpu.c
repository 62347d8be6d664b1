/* kernels/linalg_cpu.c: the CPU tile kernels of dense linear algebra (linalg_kernels.h):
 * POTRF by OpenBLAS's LAPACK, TRSM, SYRK and GEMM by its CBLAS in row-major, each on
 * one thread (the workers run tiles side by side); plain loops where the build or the
 * library lacks them (same operations, in the same order for a given tile, slower).
 *
 * Row-major tiles and column-major LAPACK: the row-major buffer of a symmetric tile read
 * as column-major is the same matrix, and its row-major lower triangle is the
 * column-major upper one, so potrf with uplo 'U' on the buffer leaves U = L^T in the
 * column-major upper triangle, which is L in the row-major lower one. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-math-errno")
#endif
#include <math.h>
#include <string.h>
#include "kernels/linalg_kernels.h"
#ifdef CASK_HAVE_BLAS
#include "kernels/blas_load.h"
#endif

/* CBLAS's enum values (cblas.h) */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112, UPPER = 121, LOWER = 122,
       NON_UNIT = 131, LEFT = 141, RIGHT = 142 };

static const la_args *args_of(cask_task_ctx *ctx)
{
    size_t sz;
    const la_args *a = cask_task_args(ctx, &sz);
    return a && sz >= sizeof *a ? a : NULL;
}

/* Rows and columns of the output tile of a. */
static void out_dims(const la_args *a, int64_t *rows, int64_t *cols)
{
    *rows = a->op == LA_POTRF || a->op == LA_SYRK ? a->n : a->m;
    *cols = a->n;
}

/* Copies a rows x cols tile between a dense buffer and a row-major matrix of ld. */
static void copy_rows(void *dst, int64_t dld, const void *src, int64_t sld, int64_t rows,
                      int64_t cols, size_t es)
{
    for (int64_t r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)(r * dld) * es, (const char *)src + (size_t)(r * sld) * es,
               (size_t)cols * es);
}

/* The result out to the user's matrix (dst_host). */
static void copy_out(cask_task_ctx *ctx, const la_args *a, int out)
{
    if (!a->dst_host) return;
    int64_t rows, cols;
    out_dims(a, &rows, &cols);
    copy_rows(a->dst_host, a->dst_ld, cask_task_buffer(ctx, out), cols, rows, cols,
              a->dt == LA_F64 ? 8 : 4);
}

/* Copies buffer 0, or the user's tile, into the output (copy_in), checking the sizes.
 * 0 or -1. */
static int copy_in(cask_task_ctx *ctx, const la_args *a, int out)
{
    if (!a->copy_in) return 0;
    if (a->src_host) {
        int64_t rows, cols;
        out_dims(a, &rows, &cols);
        size_t es = a->dt == LA_F64 ? 8 : 4;
        if (cask_task_buffer_size(ctx, out) < (size_t)(rows * cols) * es) return -1;
        copy_rows(cask_task_buffer(ctx, out), cols, a->src_host, a->src_ld, rows, cols, es);
        return 0;
    }
    size_t n = cask_task_buffer_size(ctx, out);
    if (cask_task_buffer_size(ctx, 0) != n) return -1;
    memcpy(cask_task_buffer(ctx, out), cask_task_buffer(ctx, 0), n);
    return 0;
}

#ifdef CASK_HAVE_BLAS
static const blas_fns *fns(void)
{
    return blas_load();
}
#endif

/* ---- loops (a build or library without BLAS/LAPACK) ---- */

#define LOOPS(T, SUF)                                                                     \
    /* lower Cholesky in place, row-major; 0 or the 1-based order that failed */          \
    static int potrf_loop_##SUF(T *c, int64_t n)                                          \
    {                                                                                     \
        for (int64_t j = 0; j < n; j++) {                                                 \
            T d = c[j * n + j];                                                           \
            for (int64_t p = 0; p < j; p++) d -= c[j * n + p] * c[j * n + p];             \
            if (!(d > 0)) return (int)(j + 1);                                            \
            d = (T)sqrt((double)d);                                                       \
            c[j * n + j] = d;                                                             \
            for (int64_t i = j + 1; i < n; i++) {                                         \
                T s = c[i * n + j];                                                       \
                for (int64_t p = 0; p < j; p++) s -= c[i * n + p] * c[j * n + p];         \
                c[i * n + j] = s / d;                                                     \
            }                                                                             \
        }                                                                                 \
        return 0;                                                                         \
    }                                                                                     \
    /* C = C op(L)^-1 (side R) or op(L)^-1 C (side L), L lower */                         \
    static void trsm_loop_##SUF(const la_args *a, const T *l, T *c)                       \
    {                                                                                     \
        int64_t m = a->m, n = a->n;                                                       \
        if (a->side == 'R') {                                                             \
            for (int64_t r = 0; r < m; r++) {                                             \
                T *x = c + r * n;                                                         \
                if (a->trans) /* x L^T = b: forward over columns */                       \
                    for (int64_t j = 0; j < n; j++) {                                     \
                        T s = x[j];                                                       \
                        for (int64_t p = 0; p < j; p++) s -= x[p] * l[j * n + p];         \
                        x[j] = s / l[j * n + j];                                          \
                    }                                                                     \
                else /* x L = b: backward */                                              \
                    for (int64_t j = n - 1; j >= 0; j--) {                                \
                        T s = x[j];                                                       \
                        for (int64_t p = j + 1; p < n; p++) s -= x[p] * l[p * n + j];     \
                        x[j] = s / l[j * n + j];                                          \
                    }                                                                     \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        for (int64_t col = 0; col < n; col++) {                                           \
            if (!a->trans) /* L x = b: forward */                                         \
                for (int64_t i = 0; i < m; i++) {                                         \
                    T s = c[i * n + col];                                                 \
                    for (int64_t p = 0; p < i; p++) s -= l[i * m + p] * c[p * n + col];   \
                    c[i * n + col] = s / l[i * m + i];                                    \
                }                                                                         \
            else /* L^T x = b: backward */                                                \
                for (int64_t i = m - 1; i >= 0; i--) {                                    \
                    T s = c[i * n + col];                                                 \
                    for (int64_t p = i + 1; p < m; p++) s -= l[p * m + i] * c[p * n + col]; \
                    c[i * n + col] = s / l[i * m + i];                                    \
                }                                                                         \
        }                                                                                 \
    }                                                                                     \
    /* C -= op(A) op(B); SYRK: lower part of C -= A A^T */                                \
    static void gemm_loop_##SUF(const la_args *a, const T *x, const T *y, T *c, int lower) \
    {                                                                                     \
        int64_t m = a->m, n = a->n, k = a->k;                                             \
        for (int64_t i = 0; i < m; i++)                                                   \
            for (int64_t j = 0; j < (lower ? i + 1 : n); j++) {                           \
                T s = 0;                                                                  \
                for (int64_t p = 0; p < k; p++) {                                         \
                    T u = a->ta ? x[p * m + i] : x[i * k + p];                            \
                    T v = a->tb ? y[j * k + p] : y[p * n + j];                            \
                    s += u * v;                                                           \
                }                                                                         \
                c[i * n + j] -= s;                                                        \
            }                                                                             \
    }

LOOPS(float, f32)
LOOPS(double, f64)

/* 1 if the n x n tile at c holds a value that is not finite. */
static int tile_nonfinite(const void *c, int dt, int64_t n)
{
    if (dt == LA_F64) {
        const double *p = c;
        for (int64_t i = 0; i < n * n; i++)
            if (!isfinite(p[i])) return 1;
    } else {
        const float *p = c;
        for (int64_t i = 0; i < n * n; i++)
            if (!isfinite(p[i])) return 1;
    }
    return 0;
}

/* ---- the kernels ---- */

cask_status la_cpu_potrf(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a) return cask_task_fail(ctx, "bad arguments");
    int out = a->copy_in && !a->src_host;
    if (copy_in(ctx, a, out)) return cask_task_fail(ctx, "linalg.potrf: tile sizes differ");
    void *c = cask_task_buffer(ctx, out);
    int64_t n = a->n;
    if (cask_task_buffer_size(ctx, out) < (size_t)(n * n) * (a->dt == LA_F64 ? 8 : 4))
        return cask_task_fail(ctx, "linalg.potrf: tile buffer too small");
    int info = 0, done = 0;
#ifdef CASK_HAVE_BLAS
    const blas_fns *b = fns();
    if (b && b->dpotrf && b->spotrf && n <= INT32_MAX) {
        int nn = (int)n;
        if (a->dt == LA_F64) b->dpotrf("U", &nn, c, &nn, &info);
        else b->spotrf("U", &nn, c, &nn, &info);
        done = 1;
    }
#endif
    if (!done) info = a->dt == LA_F64 ? potrf_loop_f64(c, n) : potrf_loop_f32(c, n);
    /* OpenBLAS's potrf stops at a pivot <= 0 but not at NaN (reference LAPACK does): a
       NaN anywhere in the tile's lower part, or one an update brought in, reaches the
       diagonal, so a look at it finds the first failing order */
    for (int64_t j = 0; j < n && info == 0; j++) {
        double d = a->dt == LA_F64 ? ((double *)c)[j * n + j] : ((float *)c)[j * n + j];
        if (!(d > 0) || isinf(d)) info = (int)(j + 1);
    }
    if (info < 0) return cask_task_fail(ctx, "linalg.potrf: LAPACK potrf argument %d", -info);
    if (info > 0) {
        /* LAPACK stops at the first minor that fails: with NaN or Inf in the tile it says
           so (they reach the diagonal tiles through the updates) */
        int bad = tile_nonfinite(c, a->dt, n);
        return cask_task_fail_status(ctx, CASK_ERR_NOT_SPD,
            "tile (%lld,%lld): the leading minor of order %lld is %s",
            (long long)a->ti, (long long)a->tj, (long long)(a->row0 + info),
            bad ? "not finite (NaN or Inf in the matrix)" : "not positive definite");
    }
    /* L: zeros above the diagonal */
    for (int64_t i = 0; i < n; i++) {
        if (a->dt == LA_F64) memset((double *)c + i * n + i + 1, 0, (size_t)(n - i - 1) * 8);
        else memset((float *)c + i * n + i + 1, 0, (size_t)(n - i - 1) * 4);
    }
    copy_out(ctx, a, out);
    return CASK_OK;
}

/* The common start of a tile kernel with nin inputs: its arguments, where its inputs and
 * output are (*base: the first input, after the source of a copy-in), the copy-in done.
 * NULL with *st set on failure. */
static const la_args *tile_begin(cask_task_ctx *ctx, int nin, const char *name, int *base,
                                 int *out, cask_status *st)
{
    const la_args *a = args_of(ctx);
    if (!a) {
        *st = cask_task_fail(ctx, "bad arguments");
        return NULL;
    }
    *base = a->copy_in && !a->src_host;
    *out = *base + nin + (a->inv != 0);   /* (TRSM's L^-1, not used here) */
    if (copy_in(ctx, a, *out)) {
        *st = cask_task_fail(ctx, "%s: tile sizes differ", name);
        return NULL;
    }
    return a;
}

/* TRSM of a's side and op: C = C op(L)^-1 or op(L)^-1 C, by CBLAS, else the loop. */
static void trsm_tile(const la_args *a, const void *l, void *c)
{
#ifdef CASK_HAVE_BLAS
    const blas_fns *b = fns();
    if (b && b->dtrsm && b->strsm) {
        int m = (int)a->m, n = (int)a->n, ld = a->side == 'R' ? n : (int)a->m;
        int side = a->side == 'R' ? RIGHT : LEFT, tr = a->trans ? TRANS : NO_TRANS;
        if (a->dt == LA_F64)
            b->dtrsm(ROW_MAJOR, side, LOWER, tr, NON_UNIT, m, n, 1.0, l, ld, c, n);
        else
            b->strsm(ROW_MAJOR, side, LOWER, tr, NON_UNIT, m, n, 1.0f, l, ld, c, n);
        return;
    }
#endif
    if (a->dt == LA_F64) trsm_loop_f64(a, l, c);
    else trsm_loop_f32(a, l, c);
}

cask_status la_cpu_trsm(cask_task_ctx *ctx)
{
    int base, out;
    cask_status st = CASK_OK;
    const la_args *a = tile_begin(ctx, 1, "linalg.trsm", &base, &out, &st);
    if (!a) return st;
    trsm_tile(a, cask_task_buffer(ctx, base), cask_task_buffer(ctx, out));
    copy_out(ctx, a, out);
    return CASK_OK;
}

cask_status la_cpu_syrk(cask_task_ctx *ctx)
{
    int base, out;
    cask_status st = CASK_OK;
    const la_args *a = tile_begin(ctx, 1, "linalg.syrk", &base, &out, &st);
    if (!a) return st;
    const void *x = cask_task_buffer(ctx, base);
    void *c = cask_task_buffer(ctx, out);
#ifdef CASK_HAVE_BLAS
    const blas_fns *b = fns();
    if (b && b->dsyrk && b->ssyrk) {
        int n = (int)a->n, k = (int)a->k;
        if (a->dt == LA_F64)
            b->dsyrk(ROW_MAJOR, LOWER, NO_TRANS, n, k, -1.0, x, k, 1.0, c, n);
        else
            b->ssyrk(ROW_MAJOR, LOWER, NO_TRANS, n, k, -1.0f, x, k, 1.0f, c, n);
        return CASK_OK;
    }
#endif
    la_args g = *a;
    g.m = a->n;
    g.ta = 0;
    g.tb = 1;
    if (a->dt == LA_F64) gemm_loop_f64(&g, x, x, c, 1);
    else gemm_loop_f32(&g, x, x, c, 1);
    return CASK_OK;
}

cask_status la_cpu_gemm(cask_task_ctx *ctx)
{
    int base, out;
    cask_status st = CASK_OK;
    const la_args *a = tile_begin(ctx, 2, "linalg.gemm", &base, &out, &st);
    if (!a) return st;
    const void *x = cask_task_buffer(ctx, base), *y = cask_task_buffer(ctx, base + 1);
    void *c = cask_task_buffer(ctx, out);
#ifdef CASK_HAVE_BLAS
    const blas_fns *b = fns();
    if (b) {
        int m = (int)a->m, n = (int)a->n, k = (int)a->k;
        int lda = a->ta ? m : k, ldb = a->tb ? k : n;
        int ta = a->ta ? TRANS : NO_TRANS, tb = a->tb ? TRANS : NO_TRANS;
        if (a->dt == LA_F64)
            b->dgemm(ROW_MAJOR, ta, tb, m, n, k, -1.0, x, lda, y, ldb, 1.0, c, n);
        else
            b->sgemm(ROW_MAJOR, ta, tb, m, n, k, -1.0f, x, lda, y, ldb, 1.0f, c, n);
        return CASK_OK;
    }
#endif
    if (a->dt == LA_F64) gemm_loop_f64(a, x, y, c, 0);
    else gemm_loop_f32(a, x, y, c, 0);
    return CASK_OK;
}

cask_status la_cpu_zero(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (a && a->dst_host) {   /* straight into the user's matrix (no buffer) */
        size_t es = a->dt == LA_F64 ? 8 : 4;
        for (int64_t r = 0; r < a->m; r++)
            memset((char *)a->dst_host + (size_t)(r * a->dst_ld) * es, 0, (size_t)a->n * es);
        return CASK_OK;
    }
    memset(cask_task_buffer(ctx, 0), 0, cask_task_buffer_size(ctx, 0));
    return CASK_OK;
}

cask_status la_cpu_load(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a || !a->src_host) return cask_task_fail(ctx, "linalg.load: bad arguments");
    if (copy_in(ctx, a, 0))
        return cask_task_fail(ctx, "linalg.load: tile (%lld,%lld): buffer too small",
                              (long long)a->ti, (long long)a->tj);
    return CASK_OK;
}

cask_status la_cpu_store(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a || !a->dst_host) return cask_task_fail(ctx, "linalg.store: bad arguments");
    copy_out(ctx, a, 0);
    return CASK_OK;
}

/* C = L^-1: the identity solved with L. The inverse is for GPU TRSMs: on CPUs, and on
 * simulated GPUs, TRSM solves with L, so the verdict is no. */
cask_status la_cpu_trinv(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a) return cask_task_fail(ctx, "bad arguments");
    int64_t n = a->n;
    size_t es = a->dt == LA_F64 ? 8 : 4;
    if (cask_task_buffer_size(ctx, 0) < (size_t)(n * n) * es ||
        cask_task_buffer_size(ctx, 1) < (size_t)(n * n) * es)
        return cask_task_fail(ctx, "linalg.trinv: tile buffer too small");
    const void *l = cask_task_buffer(ctx, 0);
    void *c = cask_task_buffer(ctx, 1);
    memset(c, 0, (size_t)(n * n) * es);
    for (int64_t i = 0; i < n; i++) {
        if (a->dt == LA_F64) ((double *)c)[i * n + i] = 1.0;
        else ((float *)c)[i * n + i] = 1.0f;
    }
    la_args b = *a;   /* L^-1 I: side 'L', no transpose, n x n */
    b.side = 'L';
    b.trans = 0;
    b.m = n;
    trsm_tile(&b, l, c);
    if (a->inv_ok) __atomic_store_n(a->inv_ok, 0, __ATOMIC_RELEASE);
    return CASK_OK;
}
