/* kernels/array_cpu_matmul.c: the CPU matrix product of two tiles ("array.matmul"),
 * C (m x n) = [C +] A (m x k) B (k x n), row-major.
 *
 * Float tiles go to the BLAS the build found (CASK_HAVE_BLAS: OpenBLAS through
 * pkg-config, the Debian package libopenblas-dev; opened by the first product,
 * kernels/blas_load.h): cblas_sgemm / cblas_dgemm. Integer
 * tiles, and float tiles in a build without a BLAS, use the blocked loop below (wrapping
 * integer arithmetic; for floats about 15x slower than the BLAS).
 *
 * Threads (chosen when the product is planned, array/matmul.c): a big tile's gemm runs
 * threaded on every core; smaller tiles run serial gemms side by side when the product
 * has at least as many output tiles as workers, else each gets workers / tiles. OpenBLAS has one process-wide
 * thread count, so the array layer sets it once before a run that contains a product and
 * restores it after (ak_blas_threads_set), never while tiles run. */
/* The tile loops must vectorise whatever the build type; see array_cpu.c. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-math-errno")
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/array_kernels.h"
#ifdef CASK_HAVE_BLAS
#include "kernels/blas_load.h"
#endif

const char *ak_blas_name(void)
{
#ifdef CASK_HAVE_BLAS
    return "OpenBLAS";
#else
    return NULL;
#endif
}

const char *ak_blas_core_note(int *warn)
{
#ifdef CASK_HAVE_BLAS
    return blas_load_note(warn);   /* (NULL until the first product opened the library) */
#else
    *warn = 0;
    return NULL;
#endif
}

int ak_blas_threads_get(void)
{
#ifdef CASK_HAVE_BLAS
    const blas_fns *f = blas_load();
    return f ? f->get_num_threads() : 1;
#else
    return 1;
#endif
}

void ak_blas_threads_set(int n)
{
#ifdef CASK_HAVE_BLAS
    const blas_fns *f = blas_load();
    if (f && n >= 1) f->set_num_threads(n);
#else
    (void)n;
#endif
}

#define MM_BLOCK 64

#define MM_LOOP(T, MUL, ADD)                                                           \
    do {                                                                               \
        const T *A = a_, *B = b_;                                                      \
        T *C = c_;                                                                     \
        if (!beta)                                                                     \
            for (int64_t i = 0; i < m * n; i++) C[i] = 0;                              \
        for (int64_t k0 = 0; k0 < k; k0 += MM_BLOCK)                                   \
            for (int64_t j0 = 0; j0 < n; j0 += MM_BLOCK) {                             \
                int64_t k1 = k0 + MM_BLOCK < k ? k0 + MM_BLOCK : k;                    \
                int64_t j1 = j0 + MM_BLOCK < n ? j0 + MM_BLOCK : n;                    \
                for (int64_t i = 0; i < m; i++)                                        \
                    for (int64_t kk = k0; kk < k1; kk++) {                             \
                        T av = A[i * k + kk];                                          \
                        T *crow = C + i * n;                                           \
                        const T *brow = B + kk * n;                                    \
                        for (int64_t j = j0; j < j1; j++)                              \
                            crow[j] = ADD(crow[j], MUL(av, brow[j]));                  \
                    }                                                                  \
            }                                                                          \
    } while (0)

#define PLAIN_MUL(x, y) ((x) * (y))
#define PLAIN_ADD(x, y) ((x) + (y))
#define WRAP_MUL32(x, y) ((__typeof__(x))((uint32_t)(x) * (uint32_t)(y)))
#define WRAP_ADD32(x, y) ((__typeof__(x))((uint32_t)(x) + (uint32_t)(y)))
#define WRAP_MUL64(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))
#define WRAP_ADD64(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))

#ifdef CASK_HAVE_BLAS
typedef struct gemm_call {
    int f64, M, N, K, beta;
    const void *a, *b;
    void *c;
} gemm_call;

/* CBLAS's enum values (cblas.h): row-major, no transpose */
enum { ROW_MAJOR = 101, NO_TRANS = 111 };

static void gemm_run(void *arg)
{
    const gemm_call *g = arg;
    const blas_fns *f = blas_load();   /* (opened: ak_cpu_matmul asked) */
    if (!g->f64)
        f->sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, g->M, g->N, g->K, 1.0f, g->a, g->K, g->b, g->N,
                 g->beta ? 1.0f : 0.0f, g->c, g->N);
    else
        f->dgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, g->M, g->N, g->K, 1.0, g->a, g->K, g->b, g->N,
                 g->beta ? 1.0 : 0.0, g->c, g->N);
}
#endif

cask_status ak_cpu_matmul(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_mm_args *a = cask_task_args(ctx, &asz);
    if (!a || asz < sizeof(*a)) return cask_task_fail(ctx, "bad arguments");
    const void *a_ = cask_task_buffer(ctx, 0), *b_ = cask_task_buffer(ctx, 1);
    void *c_ = cask_task_buffer(ctx, 2);
    int64_t m = a->m, n = a->n, k = a->k;
    int beta = a->beta;
#ifdef CASK_HAVE_BLAS
    /* CBLAS takes int dimensions: a tile beyond that (2^31 rows) takes the loop */
    if ((a->dt == AK_F32 || a->dt == AK_F64) && m > 0 && n > 0 && k > 0 && m <= INT32_MAX &&
        n <= INT32_MAX && k <= INT32_MAX && blas_load()) {
        gemm_call g = { a->dt == AK_F64, (int)m, (int)n, (int)k, beta, a_, b_, c_ };
        /* a threaded gemm goes to the runtime's library-call thread, always the same one
           (cask_task_lib_call: OpenBLAS's threads run best beside one consistent caller) */
        if (ak_blas_threads_get() > 1)
            cask_task_lib_call(ctx, gemm_run, &g);
        else
            gemm_run(&g);
        return CASK_OK;
    }
#endif
    switch (a->dt) {
    case AK_F32: MM_LOOP(float, PLAIN_MUL, PLAIN_ADD); break;
    case AK_F64: MM_LOOP(double, PLAIN_MUL, PLAIN_ADD); break;
    case AK_I32: MM_LOOP(int32_t, WRAP_MUL32, WRAP_ADD32); break;
    case AK_U32: MM_LOOP(uint32_t, WRAP_MUL32, WRAP_ADD32); break;
    default: MM_LOOP(int64_t, WRAP_MUL64, WRAP_ADD64); break;
    }
    return CASK_OK;
}
