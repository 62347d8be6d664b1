/* chol_app.h: cask-chol's options and the parts shared by its one-process run (main.c)
 * and its run across the ranks of a job (chol_dist.c). */
#ifndef CHOL_APP_H
#define CHOL_APP_H

#include <stdint.h>
#include "cask/cask.h"
#include "chol_matrix.h"

typedef struct chol_opts {
    int64_t n, tile, rhs;
    cask_dtype dt;
    const char *in, *out;
    int check, cpu_only, gpu_only, gpus, repeat, warmup, resident, json, quiet, digest;
    int grid_p, grid_q;     /* --grid PxQ across ranks (0: the most square) */
    uint64_t seed;
} chol_opts;

/* Reads the matrix of --in into host memory of the runtime (o->n, o->dt from the file);
 * refuses a matrix that is not square, not float, or not finite (message printed). */
cask_status chol_read_input(cask_runtime *rt, cask_array_ctx *ctx, chol_opts *o, void **a);

/* After the factorization, in one process: --check (residual, and the solve's backward
 * error with --rhs: x solved already), --digest, --out. a is the matrix, l the factor
 * (row-major, zeros above the diagonal). Prints what it measured; returns 0, or the
 * exit code (1: a check past its bound or an error, printed). res and berr get the
 * figures (-1 when not measured). */
int chol_finish(cask_array_ctx *ctx, const chol_opts *o, const void *a, const void *l,
                const void *b, const void *x, double *res, double *berr);

/* Seconds of CLOCK_MONOTONIC; qsort's comparison of doubles (the median of the runs). */
double chol_now_s(void);
int chol_cmp_d(const void *a, const void *b);

/* FNV-1a of bytes: the --digest of a factor (the same bytes give the same digest). */
uint64_t chol_digest(const void *p, size_t bytes);

/* The run across the ranks of dist (more than one): returns the exit code. */
int chol_dist_run(cask_runtime *rt, cask_array_ctx *ctx, cask_dist *dist, chol_opts *o);

#endif
