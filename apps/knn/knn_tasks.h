/* knn_tasks.h: the tasks of a search, as one process (knn_graph.c) and the ranks of a job
 * (knn_dist.c) both add them, for every kernel set: with the 1-NN kernels, prep of a
 * reference chunk, and for an observation chunk a search against each reference chunk,
 * then (several chunks) a binary tree of merges and a finish; with the k kernels (k > 1
 * or a pruned search), prep_sorted, and korder, ksearches, kmerges and a kfinish. Only
 * the public API. */
#ifndef KNN_TASKS_H
#define KNN_TASKS_H

#include <stdint.h>
#include "cask/cask.h"

/* Adds one task (device < 0: no preferred GPU); ctx is the caller's. */
typedef cask_status (*knn_add_fn)(void *ctx, cask_kernel *kern, const cask_access *acc,
                                  int nacc, const void *args, size_t args_size, int priority,
                                  uint32_t where, int device, const char *name);

/* What every task of one graph shares. */
typedef struct knn_build {
    const cask_knn_kernels *kernels;
    knn_add_fn add;
    void *ctx;
    int64_t n, m;               /* observations, references */
    int64_t chunk, ref_chunk;   /* rows per chunk (as knn_cut made them) */
    int64_t nref;               /* reference chunks */
    int k;                      /* neighbours, 1 .. CASK_KNN_KMAX */
    int ksearch;                /* 1: the k kernels (k > 1 or prune), 0: the 1-NN ones */
    int prune;                  /* 1: pruned searches (observations in curve order) */
    double scale;
    uint32_t where;
    cask_knn_points ofmt, rfmt;
    /* pin_out: the tasks that write index and dist run on GPU out_device (where GPU,
     * pinned), so that results registered in place there (cask_data_register_device)
     * are written in place; 0: as the others */
    int pin_out;
    int out_device;
} knn_build;

/* Reference chunk q made ready, named name: with the 1-NN kernels prep of ref (R) into
 * prep (W, cask_knn_prepared_bytes; scratch unused, may be NULL); with the k kernels
 * prep_sorted into prep (W, cask_knn_sorted_bytes) and scratch (W,
 * cask_knn_scratch_bytes). */
cask_status knn_add_prep(const knn_build *b, int64_t q, cask_data *ref, cask_data *prep,
                         cask_data *scratch, int device, const char *name);

/* The data of observation chunk i's tasks. prep: the nref reference chunks prepared by
 * knn_add_prep, those of the rank that searches. best: nref partial results of the chunk
 * (n x k cask_knn_best each), NULL with one reference chunk, where the searches write
 * index and dist (n x k each) directly. scratch: korder's (k kernels). ref_all: every
 * reference, read by the 1-NN finish (1-NN kernels, several reference chunks). */
typedef struct knn_chunk_data {
    cask_data *obs, *scratch, *ref_all, *index, *dist;
    cask_data *const *prep, *const *best;
} knn_chunk_data;

/* Observation chunk i's tasks: (k kernels: korder, then) a search against each reference
 * chunk; with several, a tree of merges into best[0] and a finish into index and dist. */
cask_status knn_add_chunk(const knn_build *b, int64_t i, const knn_chunk_data *d, int device);

#endif
