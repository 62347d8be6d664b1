/* progress.h: a progress bar on a terminal while a cask graph runs (cask-knn on long
 * runs). Drawn by one app thread that polls cask_graph_query's task count. */
#ifndef KNN_PROGRESS_H
#define KNN_PROGRESS_H

#include <stdio.h>
#include "cask/cask.h"

typedef struct knn_progress knn_progress;

/* Starts drawing on tty (normally stderr) once the graph, already submitted, has run
 * for delay_s seconds; NULL (and nothing drawn) if tty is not a terminal or no thread
 * could be started. */
knn_progress *knn_progress_start(const cask_graph *g, FILE *tty, const char *label,
                                 double delay_s);

/* Stops drawing, erases the bar and frees p. p may be NULL. */
void knn_progress_stop(knn_progress *p);

#endif
