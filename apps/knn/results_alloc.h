/* results_alloc.h: the results of every row (index and distance, pinned where there are
 * GPUs) that one process, or rank 0 of a job, holds, allocated on a thread of their own
 * while the observations are generated or read. Pinning them took 55 ms of the 2-process
 * job (2^24 rows, k = 1, RESULTS 40.1), on rank 0's path and so on every rank's, since
 * the others waited for it at the next agreement. */
#ifndef CASK_KNN_RESULTS_ALLOC_H
#define CASK_KNN_RESULTS_ALLOC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cask/runtime.h"

typedef struct knn_results_alloc {
    cask_runtime *rt;
    size_t index_bytes, dist_bytes;
    int32_t *index;
    float *dist;
    pthread_t thread;
    int state;   /* 0: none, 1: allocating (thread), 2: done (taken or to be taken) */
} knn_results_alloc;

/* Starts allocating rows x k results with cask_host_alloc on rt (which must outlive
 * knn_results_alloc_wait): on a thread if background (work to overlap follows), else, or
 * where no thread can be started, here. Called by one thread; ra is zeroed first. */
void knn_results_alloc_start(knn_results_alloc *ra, cask_runtime *rt, int64_t rows, int k,
                             int background);

/* Waits for the allocation and hands the buffers over (the caller frees them with
 * cask_host_free): 0, or -1 when either could not be had (then neither is handed over and
 * both are freed). Called once, by the thread that started it; a no-op returning 0 with
 * NULLs when nothing was started. */
int knn_results_alloc_wait(knn_results_alloc *ra, int32_t **index, float **dist);

#endif
