/* cask/dist_matrix.h: dense matrices whose tiles are spread over the ranks of a job
 * (2-D block-cyclic, as ScaLAPACK, SLATE and StarPU-MPI's examples lay them out), and
 * the tiled Cholesky factorization across those ranks (docs/linalg.md, "Across ranks").
 *
 * The factorization is the one of cask_array_cholesky (the same tile kernels, the same
 * order of updates on every tile), run as one distributed graph (cask/distributed.h):
 * each task runs on the rank that owns the tile it writes (owner computes), and a tile
 * another rank needs is sent to it once per step that reads it. The factor is therefore
 * the same bytes on any number of ranks and workers, as long as one kind of worker (CPU
 * cores, or GPUs) runs the tiles, and the same bytes as cask_array_cholesky's on one
 * process. */
#ifndef CASK_DIST_MATRIX_H
#define CASK_DIST_MATRIX_H

#include <stdint.h>
#include "cask/array.h"
#include "cask/distributed.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A symmetric n x n matrix, its lower tiles spread over the ranks. Opaque. */
typedef struct cask_dist_matrix cask_dist_matrix;

/* Makes an n x n matrix of dtype (CASK_FLOAT32 or CASK_FLOAT64) in square tiles of
 * `tile` rows (the last row and column of tiles may be smaller). Only the tiles on and
 * below the diagonal exist (i >= j: the matrix is symmetric; a factor is lower). Tile
 * (i,j) belongs to rank (i mod p) * q + (j mod q) of a p x q grid (p * q = the job's
 * size; p = q = 0 chooses the most square grid with p <= q: 1 x 2 for two ranks, whose
 * columns carry equal work where rows would not). Each rank allocates the
 * tiles it owns (cask_host_alloc: pinned where there are GPUs), uninitialised: fill them
 * through cask_dist_matrix_tile before the first factorization. Tasks on the tiles use
 * ctx's tile kernels and its placement option (cask_array_ctx_set CASK_ARRAY_OPT_WHERE).
 *
 * Collective: every rank calls it with the same arguments, in the same order relative to
 * its other cask_dist_set_owner declarations (each tile is a datum of dist, declared as
 * cask_dist_data_create does). The tiles' handles are dist's until cask_dist_finalize:
 * destroy the matrix after it (its memory stays until cask_dist_matrix_destroy).
 * Errors: CASK_ERR_INVALID (NULL argument, n or tile < 1, dtype, p * q not the job's
 * size), CASK_ERR_NOMEM; the message in cask_dist_matrix_error when *out was made, else
 * in the runtime's log. Call from one thread. */
cask_status cask_dist_matrix_create(cask_array_ctx *ctx, cask_dist *dist, int64_t n,
                                    int64_t tile, cask_dtype dtype, int p, int q,
                                    cask_dist_matrix **out);

/* The rank owning tile (i,j) (i >= j), or -1 out of range. Thread safe. */
int cask_dist_matrix_owner(const cask_dist_matrix *m, int64_t i, int64_t j);

/* The grid: p rows by q columns of ranks, and the tiles along each side. Thread safe. */
void cask_dist_matrix_grid(const cask_dist_matrix *m, int *p, int *q, int64_t *ntiles);

/* Tile (i,j), i >= j: *ptr its memory on the rank that owns it (row-major, *rows x
 * *cols elements of the matrix's dtype, contiguous), NULL on other ranks. The memory is
 * the matrix's; write it only between factorizations, from any thread. Errors:
 * CASK_ERR_INVALID (NULL m, j > i, out of range). */
cask_status cask_dist_matrix_tile(cask_dist_matrix *m, int64_t i, int64_t j, void **ptr,
                                  int64_t *rows, int64_t *cols);

/* What a tile loader (cask_dist_matrix_set_loader) is told, at the start of its args
 * (the caller's own args follow it, at offset sizeof(cask_dist_tile_args)). */
typedef struct cask_dist_tile_args {
    int64_t i, j;            /* the tile */
    int64_t row0, col0;      /* its first element's row and column in the matrix */
    int64_t rows, cols;      /* its shape (row-major, contiguous) */
} cask_dist_tile_args;

/* Declares how every tile's content at the start of each factorization is made: kernel
 * (a CPU kernel with one buffer, the tile, written whole) with args cask_dist_tile_args
 * followed by args (args_size bytes, copied). It must write the same bytes on every
 * rank, as the caller's own filling does (generate from a seed, read a file region).
 * With it, cask_dist_cholesky survives the loss of a rank as other distributed graphs
 * do (the lost tiles are made again on a survivor and the factorization replayed:
 * cask_dist_data_set_loader) and starts without copying this rank's tiles aside;
 * without it, each factorization first keeps a copy of the rank's tiles (a rank lost
 * fails it). kernel NULL removes it. Collective in the sense of cask_dist_set_owner:
 * every rank declares the same loader. Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. */
cask_status cask_dist_matrix_set_loader(cask_dist_matrix *m, cask_kernel *kernel,
                                        const void *args, size_t args_size);

/* Factors m in place: afterwards its tiles hold the lower factor L of A = L L^T (the
 * diagonal tiles with zeros above their diagonal). Collective, one distributed graph
 * (cask_dist_graph_compute): the same status on every rank. Errors: CASK_ERR_NOT_SPD
 * (the message names the tile and the order of the leading minor that is not positive,
 * or a value that is not finite; the tiles are then partly factored), those of
 * cask_dist_graph_compute (CASK_ERR_PEER: a rank was lost; the tiles' content is then
 * undefined), CASK_ERR_NOMEM. The message in cask_dist_matrix_error. */
cask_status cask_dist_cholesky(cask_dist_matrix *m);

/* The last cask_dist_cholesky on this rank: tasks that ran on its CPU workers and on its
 * GPUs, the tiles it received from other ranks, the seconds spent planning (placing the
 * tasks, the same plan on every rank) and waiting for other ranks' tiles
 * (cask_dist_graph_info.comm_wait_s). Any pointer may be NULL. */
void cask_dist_matrix_last_run(const cask_dist_matrix *m, uint64_t *tasks_cpu,
                               uint64_t *tasks_gpu, uint64_t *tiles_in, double *plan_s,
                               double *wait_s);

/* Gathers the matrix on rank root: dest (n * n elements, the caller's, on root only;
 * NULL elsewhere) gets it row-major, the lower tiles as they are and zeros above the
 * diagonal tiles. Collective. Errors: CASK_ERR_INVALID (root out of range, no dest on
 * root), those of cask_dist_graph_compute. */
cask_status cask_dist_matrix_gather(cask_dist_matrix *m, int root, void *dest);

/* The message of the last failure on m ("" if none). */
const char *cask_dist_matrix_error(const cask_dist_matrix *m);

/* Frees the tiles' memory and m (NULL: nothing). Call it after cask_dist_finalize. */
void cask_dist_matrix_destroy(cask_dist_matrix *m);

#ifdef __cplusplus
}
#endif
#endif
