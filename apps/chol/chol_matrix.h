/* chol_matrix.h: cask-chol's matrices: the generated SPD matrix, right-hand sides, and
 * the checks (scaled residual of the factor, backward error of a solve). */
#ifndef CHOL_MATRIX_H
#define CHOL_MATRIX_H

#include <stdint.h>
#include "cask/cask.h"

/* A = n I + (R + R^T)/2 with R uniform on [-1, 1) from seed: symmetric positive
 * definite (the symmetric part's eigenvalues lie within about 1.2 sqrt(n) of 0, so A's
 * are near n).
 * Element (i,j) is a pure function of (seed, min(i,j), max(i,j)). Written row-major to
 * a (n x n of dtype: float32 or float64) by `threads` threads. */
void chol_generate(void *a, cask_dtype dt, int64_t n, uint64_t seed, int threads);

/* The block of that matrix (of order n) at (row0, col0), rows x cols, row-major and
 * contiguous into tile: the same values chol_generate writes there. */
void chol_generate_tile(void *tile, cask_dtype dt, int64_t n, int64_t row0, int64_t col0,
                        int64_t rows, int64_t cols, uint64_t seed);

/* b (n x k) of uniform values on [-1, 1) from seed. */
void chol_generate_rhs(void *b, cask_dtype dt, int64_t n, int64_t k, uint64_t seed);

/* ||A - L L^T||_F / (n ||A||_F), L L^T computed by cask (a matrix product of L and its
 * transpose, on the runtime's workers). L is row-major n x n (zeros above the diagonal).
 * Returns a negative value if the product could not be computed (message printed). */
double chol_residual(cask_array_ctx *ctx, const void *a, const void *l, cask_dtype dt,
                     int64_t n, int64_t tile);

/* max over columns of ||A x - b|| / (||A|| ||x|| + ||b||) (2-norms, ||A|| Frobenius), the
 * product by cask. Negative on failure. */
double chol_backward_error(cask_array_ctx *ctx, const void *a, const void *x, const void *b,
                           cask_dtype dt, int64_t n, int64_t k, int64_t tile);

#endif
