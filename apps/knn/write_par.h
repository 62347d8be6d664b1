/* write_par.h: the CSV result written with the runtime's help: CPU tasks format blocks
 * of rows in parallel while this thread writes the text of the previous wave, in order.
 * Formatting the distances (snprintf) is what costs: done serially it takes seconds for
 * 2^24 rows. The bytes are exactly those of knn_csv_write. */
#ifndef KNN_WRITE_PAR_H
#define KNN_WRITE_PAR_H

#include <stdint.h>
#include <stdio.h>
#include "cask/cask.h"

/* Writes the header and rows 0..n-1 to f. nworkers (CPU workers) sizes the waves.
 * Errors: CASK_ERR_IO (write failed), CASK_ERR_NOMEM, or a runtime error; message in
 * err, starting with name. */
cask_status knn_csv_write_tasks(cask_runtime *rt, FILE *f, const char *name,
                                const int32_t *index, const float *dist, int64_t n,
                                int nworkers, char *err, size_t errlen);

/* The same for rows first .. first+n-1 (index[0] and dist[0] belong to row first),
 * appended to f, with the header line only if header is set: a streamed result is
 * written window by window with the bytes of one knn_csv_write_tasks call. */
cask_status knn_csv_write_tasks_at(cask_runtime *rt, FILE *f, const char *name,
                                   const int32_t *index, const float *dist, int64_t first,
                                   int64_t n, int header, int nworkers, char *err,
                                   size_t errlen);

#endif
