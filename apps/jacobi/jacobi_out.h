/* apps/jacobi/jacobi_out.h: cask-jacobi --out, the final interior rows, (N-2) x N
 * float32, raw and row-major, written all or nothing through cask_dist_file
 * (cask/distributed.h). Across ranks on a file system every rank sees, each rank writes
 * its own blocks' rows where they are (in place: a small distributed graph of write
 * tasks, one a block); otherwise rank 0 writes the grid gathered to it. */
#ifndef CASK_APPS_JACOBI_OUT_H
#define CASK_APPS_JACOBI_OUT_H

#include <stdint.h>
#include "cask/cask.h"
#include "cask/distributed.h"

/* A row block of the grid: its handle of the latest values and its interior rows
 * [row0, row0 + rows) (global numbering: row 0 is the fixed top edge). */
typedef struct jacobi_out_block {
    cask_data *u;
    int64_t row0, rows;
} jacobi_out_block;

/* In place, collective: every block's rows written by the rank that holds them, then
 * the commit (ok 0: this rank vetoes). A rank lost while writing cannot have its
 * blocks made again (only the sweeps since the start make them; their loaders, which
 * make the first grid, are removed first): the commit fails naming their rows. Messages on stderr (rank 0, or
 * the lowest rank left). Returns 0 when the file was committed. */
int jacobi_out_in_place(cask_runtime *rt, cask_dist *dist, cask_dist_file *f,
                        const jacobi_out_block *b, int nb, int64_t n, int ok);

/* Rank 0 alone (one process, or the grid gathered to it): writes the rows of every
 * block from rows[b] (host memory), then commits. Returns 0 when the file was
 * committed; a message on stderr otherwise. */
int jacobi_out_write_all(cask_dist_file *f, const jacobi_out_block *b, const float *const *rows,
                         int nb, int64_t n);

#endif
