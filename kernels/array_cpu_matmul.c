/* kernels/array_cpu_matmul.c: the CPU matrix product of two tiles ("array.matmul"),
 * C (m x n) = [C +] A (m x k) B (k x n), row-major.
 *
 * Float tiles go to the BLAS the build found (CASK_HAVE_BLAS: OpenBLAS through
 * pkg-config, the Debian package libopenblas-dev): cblas_sgemm / cblas_dgemm. Integer
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
#include <cblas.h>
/* OpenBLAS's own entry points (its cblas.h declares them; repeated so that another
 * CBLAS header would still compile) */
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char *openblas_get_corename(void);
#endif

const char *ak_blas_name(void)
{
#ifdef CASK_HAVE_BLAS
    return "OpenBLAS";
#else
    return NULL;
#endif
}

#if defined(CASK_HAVE_BLAS) && defined(__x86_64__) && defined(__GNUC__)
/* OpenBLAS built for every x86 core (DYNAMIC_ARCH, as Debian's) picks its kernels when it
 * is loaded, from the CPU's model number: Debian 12's 0.3.21 does not know recent Xeons
 * and falls back to its generic SSE3 kernels ("Prescott"), which ran a 2048^2 sgemm at
 * 196 GFLOP/s on 16 AVX-512 cores against 852 with OPENBLAS_CORETYPE=SkylakeX. Newer
 * OpenBLAS releases choose by the CPU's features in that case; this does the same for the
 * older ones: when the user has not named a core and OpenBLAS chose "Prescott" on a CPU
 * with AVX-512 (F, CD, BW, DQ, VL) or AVX2+FMA, it asks OpenBLAS to choose again with
 * OPENBLAS_CORETYPE set to SkylakeX or Haswell (its own exported gotoblas_dynamic_quit /
 * gotoblas_dynamic_init, the path its start-up takes; weak, so a BLAS without them is
 * left alone). It runs as libcask is loaded (after OpenBLAS's own start-up, before any
 * product and normally before other threads exist); the outcome is written once there and
 * only read afterwards (ak_blas_core_note). */
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));

static char blas_note[256];

__attribute__((constructor)) static void blas_core_choose(void)
{
    const char *core = openblas_get_corename();
    if (!core || strcmp(core, "Prescott") != 0 || getenv("OPENBLAS_CORETYPE")) return;
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        /* (also where the CPU has BF16: on 16 Sapphire Rapids-class cores, one cblas_sgemm
           of 2048^2 ran at 1425 GFLOP/s with SkylakeX, 1140 with Cooperlake; 8192^2 at
           1263 and 1255: bench-blas-floor) */
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    if (!want) return;
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || getenv("CASK_BLAS_KEEP_CORE")) {
        snprintf(blas_note, sizeof blas_note, "!OpenBLAS runs its generic Prescott kernels on "
                 "this CPU; start the program with OPENBLAS_CORETYPE=%s", want);
        return;
    }
    setenv("OPENBLAS_CORETYPE", want, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
    const char *now = openblas_get_corename();
    snprintf(blas_note, sizeof blas_note, "%sOpenBLAS chose its generic Prescott kernels on "
             "this CPU; cask asked it for %s and it runs %s (OPENBLAS_CORETYPE chooses; "
             "CASK_BLAS_KEEP_CORE=1 keeps OpenBLAS's choice)",
             now && !strcmp(now, want) ? "" : "!", want, now ? now : "?");
}

const char *ak_blas_core_note(int *warn)
{
    *warn = blas_note[0] == '!';
    return blas_note[0] ? blas_note + *warn : NULL;
}
#else
const char *ak_blas_core_note(int *warn)
{
    *warn = 0;
    return NULL;
}
#endif

int ak_blas_threads_get(void)
{
#ifdef CASK_HAVE_BLAS
    return openblas_get_num_threads();
#else
    return 1;
#endif
}

void ak_blas_threads_set(int n)
{
#ifdef CASK_HAVE_BLAS
    if (n >= 1) openblas_set_num_threads(n);
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

static void gemm_run(void *arg)
{
    const gemm_call *g = arg;
    if (!g->f64)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->M, g->N, g->K, 1.0f, g->a,
                    g->K, g->b, g->N, g->beta ? 1.0f : 0.0f, g->c, g->N);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->M, g->N, g->K, 1.0, g->a,
                    g->K, g->b, g->N, g->beta ? 1.0 : 0.0, g->c, g->N);
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
        n <= INT32_MAX && k <= INT32_MAX) {
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
