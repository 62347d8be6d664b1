/* kernels/cuda_libs.h (internal): cuBLAS and cuSOLVER, opened by their first use
 * (dlopen), not linked. cuBLAS pulls in cuBLASLt, whose static constructors fault in
 * about 215 MiB of memory and take 80-90 ms in every process that loads it (measured on
 * the CI machine and the H200 host: bench/RESULTS.md, section 39), also in the many that
 * never multiply a matrix on a GPU; cuSOLVER's library is 45 MiB more. Each table is
 * filled once, by the first caller (pthread_once); thread safe. Compiled against the
 * toolkit's headers, so the entry points' types are checked. */
#ifndef CASK_KERNELS_CUDA_LIBS_H
#define CASK_KERNELS_CUDA_LIBS_H

#ifdef CASK_HAVE_CUBLAS
#include <cublas_v2.h>
#ifdef __cplusplus
extern "C" {
#endif

/* cuBLAS's entry points (the _v2 names that cublas_v2.h's macros stand for). */
typedef struct cuda_blas_fns {
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasSgemm_v2) *sgemm;
    __typeof__(cublasDgemm_v2) *dgemm;
    __typeof__(cublasStrsm_v2) *strsm;
    __typeof__(cublasDtrsm_v2) *dtrsm;
    __typeof__(cublasSsyrk_v2) *ssyrk;
    __typeof__(cublasDsyrk_v2) *dsyrk;
} cuda_blas_fns;

/* cuBLAS, opened at the first call; NULL when it cannot be, with the reason (a static
 * string, the same on every call) in *why when why is not NULL. */
const cuda_blas_fns *cuda_blas_load(const char **why);

#ifdef CASK_HAVE_CUSOLVER
#include <cusolverDn.h>
/* cuSOLVER's entry points for the Cholesky of a tile. */
typedef struct cuda_sol_fns {
    __typeof__(cusolverDnCreate) *create;
    __typeof__(cusolverDnDestroy) *destroy;
    __typeof__(cusolverDnSetStream) *set_stream;
    __typeof__(cusolverDnDpotrf_bufferSize) *dbuf;
    __typeof__(cusolverDnSpotrf_bufferSize) *sbuf;
    __typeof__(cusolverDnDpotrf) *dpotrf;
    __typeof__(cusolverDnSpotrf) *spotrf;
} cuda_sol_fns;

/* cuSOLVER, as cuda_blas_load. */
const cuda_sol_fns *cuda_sol_load(const char **why);
#endif

#ifdef __cplusplus
}
#endif
#endif
#endif
