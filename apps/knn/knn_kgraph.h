/* knn_kgraph.h: the tasks of the k kernels (k > 1 or a pruned search), as one process
 * (knn_graph.c) and the ranks of a job (knn_dist.c) both add them: prep_sorted of a
 * reference chunk; for an observation chunk, korder, a ksearch against each reference
 * chunk, a binary tree of kmerges and a kfinish. Only the public API. */
#ifndef KNN_KGRAPH_H
#define KNN_KGRAPH_H

#include <stdint.h>
#include "cask/cask.h"

/* Adds one task (device < 0: no preferred GPU); ctx is the caller's. */
typedef cask_status (*knn_kadd_fn)(void *ctx, cask_kernel *kern, const cask_access *acc,
                                   int nacc, const void *args, size_t args_size, int priority,
                                   uint32_t where, int device, const char *name);

/* What every task of one graph shares. */
typedef struct knn_kbuild {
    const cask_knn_kernels *kernels;
    knn_kadd_fn add;
    void *ctx;
    int64_t n, m;               /* observations, references */
    int64_t chunk, ref_chunk;   /* rows per chunk (as knn_cut made them) */
    int64_t nref;               /* reference chunks */
    int k;                      /* neighbours, 1 .. CASK_KNN_KMAX */
    int prune;                  /* 1: pruned searches (observations in curve order) */
    double scale;
    uint32_t where;
    cask_knn_points ofmt, rfmt;
} knn_kbuild;

/* prep_sorted of reference chunk q: ref (R), sorted (W, cask_knn_sorted_bytes),
 * scratch (W, cask_knn_scratch_bytes), named name. */
cask_status knn_kadd_prep(const knn_kbuild *b, int64_t q, cask_data *ref, cask_data *sorted,
                          cask_data *scratch, int device, const char *name);

/* Observation chunk i: korder (obs R, scratch W), then against each of the nref sorted
 * reference chunks a ksearch: with one chunk FINAL into index and dist (n x k each), else
 * PARTIAL into best[q] (n x k cask_knn_best each), merged into best[0] by a tree of
 * kmerges and finished into index and dist by kfinish. best is NULL with one chunk. */
cask_status knn_kadd_chunk(const knn_kbuild *b, int64_t i, cask_data *obs, cask_data *scratch,
                           cask_data *const *sorted, cask_data *const *best, cask_data *index,
                           cask_data *dist, int device);

#endif
