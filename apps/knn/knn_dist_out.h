/* knn_dist_out.h: the write tasks of cask-knn's distributed search when --out is written
 * in place (knn_out.h): the rows of observation chunk i are written by the rank that
 * computed them, as tasks of the search graph, so that a rank lost while it writes has
 * its rows written again by the survivor that recomputes them.
 *
 * .npy: one task per chunk turns its results into .npy rows and writes them at their
 * offset. CSV: one task per chunk formats its rows (text and length), a tree of small
 * sums over the lengths (at most 14 a task) gives every chunk its byte offset, and one
 * task per chunk writes its text there. Each writing task marks its chunk written
 * (cask_dist_file_mark) and then writes a receipt, "done", owned by the chunk's rank:
 * an output a recovery makes again for a lost rank, so it reruns the write; gathered to
 * a witness rank, which marks the chunk too, so that a rank lost once the compute is
 * over (all its rows written) leaves no chunk unaccounted for
 * (cask_dist_file_gather_receipt).
 * The header is such a unit too (the last, number nobs), written by a task of rank 0's.
 * With --check,
 * the formatting (CSV) or writing (.npy) task also copies the chunk's sampled rows into
 * a datum gathered to rank 0, which checks them: nothing else of the results travels. */
#ifndef KNN_DIST_OUT_H
#define KNN_DIST_OUT_H

#include <stdint.h>
#include "cask/cask.h"
#include "knn_dist.h"
#include "knn_out.h"

typedef struct knn_out_job knn_out_job;

/* Declares the output's data for nobs chunks of `chunk` rows of o->n (every rank alike,
 * after the search's own declarations); samples: --check's (0: none). */
cask_status knn_out_job_create(knn_cluster *c, const knn_out *o, int64_t nobs, int64_t chunk,
                               int64_t samples, knn_out_job **out);

/* Adds chunk i's tasks that read its results (index, dist: owned by its rank), and the
 * gather of its samples. */
cask_status knn_out_job_add_chunk(knn_out_job *w, cask_dist_graph *g, int64_t i,
                                  cask_data *index, cask_data *dist);

/* After every chunk's: the header's task; CSV, the offsets and the writes. */
cask_status knn_out_job_finish(knn_out_job *w, cask_dist_graph *g);

/* Rank 0, after a compute: the sampled rows' results, samples x k each (the job's). */
cask_status knn_out_job_samples(knn_out_job *w, const int32_t **index, const float **dist);

/* Frees w (the handles go with the job's cluster). NULL ok. */
void knn_out_job_destroy(knn_out_job *w);

/* Registers the write tasks' kernels with c->rt (knn_cluster_open). */
cask_status knn_out_kernels_register(knn_cluster *c);

#endif
