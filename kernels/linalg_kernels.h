/* kernels/linalg_kernels.h: the dense linear algebra tile kernels (POTRF, TRSM, SYRK,
 * GEMM) behind cask_array_cholesky and cask_array_cho_solve, and the argument block the
 * array layer (array/linalg.c) passes them. Internal: shared by array/,
 * kernels/linalg_cpu.c and kernels/linalg_cuda.cu. Tiles are row-major and dense (the
 * leading dimension is the number of columns).
 *
 * Every kernel may first copy an input tile into its output (copy_in: buffer 0 is the
 * tile of the matrix being factored or solved, which must not change, or src_host; the
 * output is then written whole), so that the first update of each tile needs no task of
 * its own; and may write its result out to the user's matrix (dst_host).
 *
 * CPU: OpenBLAS's own LAPACK potrf (dpotrf_/spotrf_, a recursive blocked algorithm on
 * its GEMM kernels; reference LAPACK's would call through the generic BLAS interface,
 * LAPACKE's row-major wrappers transpose through a copy) and its CBLAS trsm, syrk and
 * gemm in row-major, all opened at first use (blas_load.h), one thread per call: the
 * workers run tiles side by side. Without OpenBLAS, plain loops (slower, same maths).
 * GPU: cuSOLVER potrf, cuBLAS trsm, syrk and gemm on the task's stream. */
#ifndef CASK_KERNELS_LINALG_KERNELS_H
#define CASK_KERNELS_LINALG_KERNELS_H

#include <stdint.h>
#include "cask/cask.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { LA_POTRF = 0, LA_TRSM, LA_SYRK, LA_GEMM, LA_ZERO, LA_LOAD, LA_STORE, LA_TRINV,
       LA_OP_COUNT };
enum { LA_F32 = 0, LA_F64 = 1 };

/* One tile operation. Buffers: [src if copy_in], inputs, then the output C (RW, or W
 * with copy_in). Row-major throughout.
 *   POTRF: C (n x n) = L with C = L L^T, zeros above the diagonal. Fails with
 *          CASK_ERR_NOT_SPD naming tile (ti, tj) and the global order row0 + info.
 *   TRSM:  side 'R': C (m x n) = C op(L)^-1, L (n x n) lower;
 *          side 'L': C (m x n) = op(L)^-1 C, L (m x m) lower. op: trans ? L^T : L.
 *          With inv (side 'R', trans), the input after L is L^-1 (made by TRINV): where
 *          *inv_ok says it may be used, the GPU kernel multiplies by it (a GEMM at
 *          cuBLAS's GEMM rate; its trsm of 2048 runs at a fifth of it: RESULTS 42), else
 *          it solves with L; CPU kernels always solve with L.
 *   TRINV: C (n x n) = L^-1, L (n x n) lower (buffer 0); then *inv_ok = 1 where L^-1
 *          may stand for L in TRSM: cond_inf(L) = ||L||_inf ||L^-1||_inf at most
 *          LA_INV_COND, so that multiplying by it keeps the residual bound of
 *          docs/linalg.md (0 on CPU workers, and for a factor ill-conditioned, NaN, Inf).
 *          GPU tasks only (simulated GPUs run the CPU kernel).
 *   SYRK:  C (n x n, lower part) = C - A A^T, A (n x k).
 *   GEMM:  C (m x n) = C - op(A) op(B), op(A) m x k, op(B) k x n (ta, tb transpose).
 *   ZERO:  C = 0 (the tiles above a factor's diagonal; CPU workers only).
 *   LOAD:  C (m x n) = the user's tile at src_host (buffer 0 is C, written whole).
 *   STORE: the user's tile at dst_host = buffer 0 (m x n, read).
 * LOAD and STORE run on a GPU's side streams (CASK_KERNEL_SIDE_STREAM; STORE on the one
 * to the host, CASK_KERNEL_SIDE_TO_HOST, so that loads and stores move both ways at once):
 * a factorization from host memory loads every tile, a few at a time in the order the
 * columns are needed, and stores each final tile as it is done, while the compute
 * streams factor (the copies made by the first and the last operation of a tile held the
 * GEMMs of the first steps back: bench/RESULTS.md section 40.2; on one side stream the
 * stores of the first columns halved the loads' rate: section 43). */
typedef struct la_args {
    int32_t op;
    int32_t dt;              /* LA_F32, LA_F64 */
    int32_t copy_in;
    int32_t side;            /* TRSM: 'L' or 'R' */
    int32_t trans;           /* TRSM: op(L) = L^T */
    int32_t ta, tb;          /* GEMM */
    int32_t inv;             /* TRSM: an input L^-1 follows L */
    int64_t m, n, k;
    int64_t ti, tj;          /* the tile's index (messages) */
    int64_t row0;            /* global index of the tile's first row (POTRF's info) */
    void *gpu;               /* la_gpu_cache of the array context (CUDA builds), or NULL */
    /* The user's row-major matrices, read and written in place of array chunks (a
     * factorization from host memory into host memory): src_host, if set, is where the
     * tile starts in the input (copy_in reads it instead of buffer 0, which is absent),
     * dst_host where the final tile goes (written once the operation is done; the task
     * ends when it is there). Their rows are src_ld / dst_ld elements apart. On a GPU,
     * 2-D copies on the task's stream (fast and asynchronous when the memory is pinned,
     * cask_host_alloc). */
    const void *src_host;
    void *dst_host;
    int64_t src_ld, dst_ld;
    /* TRINV writes, TRSM with inv reads (after TRINV's task ended): whether L^-1 may be
     * used. Host memory of the plan, one word per diagonal tile. */
    int32_t *inv_ok;
} la_args;

/* The largest cond_inf(L) of a diagonal tile for which TRSM multiplies by L^-1. */
#ifndef LA_INV_COND   /* (a test build may force the verdict: tests/test_linalg_gpu.c) */
#define LA_INV_COND 64.0
#endif

typedef struct la_kernels {
    cask_kernel *k[LA_OP_COUNT];
} la_kernels;

/* Registers "linalg.potrf", "linalg.trsm", "linalg.syrk", "linalg.gemm", "linalg.trinv"
 * (CPU kernels always, CUDA ones in builds with cuBLAS and cuSOLVER), "linalg.zero" (CPU),
 * "linalg.load" and "linalg.store". */
cask_status la_kernels_register(cask_runtime *rt, la_kernels *out);

/* Whether the GPU tile kernels were built (CUDA with cuBLAS and cuSOLVER). */
int la_has_gpu_kernels(void);

/* What the build lost: NULL, or a sentence (no OpenBLAS: loops on CPUs; CUDA without
 * cuSOLVER: no GPU tile kernels). */
const char *la_build_note(void);

/* CPU implementations (linalg_cpu.c). */
cask_status la_cpu_potrf(cask_task_ctx *ctx);
cask_status la_cpu_trsm(cask_task_ctx *ctx);
cask_status la_cpu_syrk(cask_task_ctx *ctx);
cask_status la_cpu_gemm(cask_task_ctx *ctx);
cask_status la_cpu_zero(cask_task_ctx *ctx);
cask_status la_cpu_load(cask_task_ctx *ctx);
cask_status la_cpu_store(cask_task_ctx *ctx);
cask_status la_cpu_trinv(cask_task_ctx *ctx);

/* GPU side (linalg_cuda.cu): a cache of cuSOLVER and cuBLAS handles, workspace and info
 * words per (device, stream), made on first use and freed with the array context. */
void *la_gpu_cache_create(void);
void la_gpu_cache_destroy(void *cache);
int la_gpu_available(void);
cask_status la_cuda_potrf(cask_task_ctx *ctx);
cask_status la_cuda_trsm(cask_task_ctx *ctx);
cask_status la_cuda_syrk(cask_task_ctx *ctx);
cask_status la_cuda_gemm(cask_task_ctx *ctx);
cask_status la_cuda_load(cask_task_ctx *ctx);
cask_status la_cuda_store(cask_task_ctx *ctx);
cask_status la_cuda_trinv(cask_task_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
