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

#endif
