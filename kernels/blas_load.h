/* kernels/blas_load.h (internal): OpenBLAS, loaded when the first product needs it.
 *
 * OpenBLAS starts its thread pool (one thread a core) as it is loaded, and those threads
 * spin for a while before they sleep: linked into libcask, every process paid that at
 * start-up, also those that never multiply a matrix (a job of 32 ranks on 16 cores
 * started 32 x 15 spinning threads beside its own start-up). So libcask does not link
 * OpenBLAS: the first call here opens it (dlopen of libopenblas.so.0, the soname of
 * Debian's libopenblas0) and resolves what the CPU product uses. */
#ifndef CASK_KERNELS_BLAS_LOAD_H
#define CASK_KERNELS_BLAS_LOAD_H

typedef struct blas_fns {
    /* cblas_sgemm / cblas_dgemm, row-major, no transposes, as kernels/array_cpu_matmul.c
       calls them (CBLAS's enum arguments passed as int) */
    void (*sgemm)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc);
    void (*dgemm)(int order, int ta, int tb, int m, int n, int k, double alpha,
                  const double *a, int lda, const double *b, int ldb, double beta, double *c,
                  int ldc);
    /* gemm with transposes (the same entry points, the trans arguments used), trsm,
       syrk (CBLAS, row-major), and OpenBLAS's LAPACK potrf (Fortran, column-major):
       the dense linear algebra tiles, kernels/linalg_cpu.c */
    void (*strsm)(int order, int side, int uplo, int ta, int diag, int m, int n, float alpha,
                  const float *a, int lda, float *b, int ldb);
    void (*dtrsm)(int order, int side, int uplo, int ta, int diag, int m, int n, double alpha,
                  const double *a, int lda, double *b, int ldb);
    void (*ssyrk)(int order, int uplo, int trans, int n, int k, float alpha, const float *a,
                  int lda, float beta, float *c, int ldc);
    void (*dsyrk)(int order, int uplo, int trans, int n, int k, double alpha, const double *a,
                  int lda, double beta, double *c, int ldc);
    void (*spotrf)(const char *uplo, const int *n, float *a, const int *lda, int *info);
    void (*dpotrf)(const char *uplo, const int *n, double *a, const int *lda, int *info);
    void (*set_num_threads)(int);
    int (*get_num_threads)(void);
    char *(*get_corename)(void);
} blas_fns;

/* The library's entry points, opened on first use (thread safe; once); NULL if it cannot
 * be opened, then the products use the blocked loop, and blas_load_note says why. */
const blas_fns *blas_load(void);
/* What loading did, or NULL (also before blas_load was first called): the kernels
 * OpenBLAS was asked to use on this CPU, or why it could not be opened. *warn: 1 if the
 * user should act. */
const char *blas_load_note(int *warn);

#endif
