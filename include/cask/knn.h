/* cask/knn.h: built-in kernels for exact nearest-neighbour search by great-circle
 * (haversine) distance, the building blocks of cask-knn. Each kernel has a CPU and (in
 * a CUDA build) a CUDA implementation. */
#ifndef CASK_KNN_H
#define CASK_KNN_H

#include <stdint.h>
#include "cask/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mean Earth radius (IUGG), km: multiply an angle in radians by it for km. */
#define CASK_EARTH_RADIUS_KM 6371.0088

/* The best reference found so far for one observation. idx -1 = none yet. chord2 is the
 * squared chord between the unit vectors, computed in float64 (monotonic in the
 * great-circle distance). Ties are broken by the lowest idx. */
typedef struct cask_knn_best {
    double chord2;
    int64_t idx;
} cask_knn_best;

/* Points are pairs (latitude, longitude), interleaved: n x 2 values. */
typedef struct cask_knn_points {
    int f64;       /* 1: double, 0: float */
    int degrees;   /* 1: degrees, 0: radians */
} cask_knn_points;

/* Arguments of each kernel (pass as the task's args). */
typedef struct cask_knn_prep_args {
    int64_t m;              /* references in the chunk */
    cask_knn_points in;
} cask_knn_prep_args;
/* prep: buffers [0] R references (m x 2), [1] W prepared (cask_knn_prepared_bytes(m)). */

enum cask_knn_mode {
    CASK_KNN_FINAL = 0,     /* one reference chunk: write index and distance directly */
    CASK_KNN_PARTIAL = 1    /* write cask_knn_best for this reference chunk */
};
typedef struct cask_knn_search_args {
    int64_t n;              /* observations in the chunk */
    int64_t m;              /* references in the prepared chunk */
    int64_t ref_base;       /* global index of the chunk's first reference */
    cask_knn_points in;     /* format of the observations */
    int mode;               /* cask_knn_mode */
    double scale;           /* FINAL: distance = scale * angle in radians */
} cask_knn_search_args;
/* search: buffers [0] R observations (n x 2), [1] R prepared references, then
 *   FINAL:   [2] W int32 index (n), [3] W float distance (n);
 *   PARTIAL: [2] W cask_knn_best (n). */

typedef struct cask_knn_merge_args { int64_t n; } cask_knn_merge_args;
/* merge: buffers [0] RW cask_knn_best (n), [1] R cask_knn_best (n): [0] = better of two. */

/* finish (args cask_knn_finish_args): buffers [0] R observations (n x 2, format in),
 * [1] R cask_knn_best (n),
 * [2] W int32 index (n), [3] W float distance (n). Needs the observations and the
 * references' coordinates to recompute the distance: [4] R original references (all M x
 * 2, format ref_in). */
typedef struct cask_knn_finish_args {
    int64_t n;
    double scale;
    cask_knn_points in;
    cask_knn_points ref_in;
} cask_knn_finish_args;

/* ---- K nearest, brute force or pruned (kernels prep_sorted, ksearch, kmerge, kfinish) ----
 * The K nearest references of each observation, sorted by squared chord (great-circle
 * distance), ties to the lower index; exact (the float32 filter then float64 check of the
 * 1-NN kernels, with the K-th best as threshold). Results never depend on chunking,
 * device or pruning: a pruned search gives the same bytes as a brute-force one. */

/* Largest K. */
#define CASK_KNN_KMAX 64

/* prep_sorted (args cask_knn_prep_args): buffers [0] R references (m x 2), [1] W sorted
 * references (cask_knn_sorted_bytes(m)): unit vectors in the order of a space-filling
 * curve, cut into tiles with bounding caps; [2] W scratch (cask_knn_scratch_bytes(m)).
 * The order within a curve cell may differ between a CPU and a GPU (or between GPU
 * runs): only the speed of a search depends on it, never its results. */

typedef struct cask_knn_korder_args {
    int64_t n;              /* observations in the chunk */
    cask_knn_points in;     /* their format */
    int prune;              /* 1: order along the space-filling curve; 0: keep row order */
    int reserved;
} cask_knn_korder_args;
/* korder: buffers [0] R observations (n x 2), [1] W scratch (cask_knn_scratch_bytes(n)):
 * the observations as float32 unit vectors, in cell order when prune (the order within
 * a cell may differ between runs on a GPU: only the speed of the search depends on it). */

typedef struct cask_knn_ksearch_args {
    int64_t n;              /* observations in the chunk */
    int64_t m;              /* references in the sorted chunk */
    int64_t ref_base;       /* global index of the chunk's first reference */
    cask_knn_points in;     /* format of the observations */
    int mode;               /* cask_knn_mode */
    int k;                  /* 1 .. CASK_KNN_KMAX */
    int prune;              /* 0: every reference tile (brute force); 1: skip by bounds */
    int reserved;
    double scale;           /* FINAL: distance = scale * angle in radians */
} cask_knn_ksearch_args;
/* ksearch: buffers [0] R observations (n x 2), [1] R sorted references, [2] R scratch
 * written by korder over the same observations (with the same prune), then
 *   FINAL:   [3] W int32 index (n x k), [4] W float distance (n x k): row i holds the k
 *            nearest of observation i, nearest first; -1 / NaN where m < k;
 *   PARTIAL: [3] W cask_knn_best (n x k), same order (idx -1, chord2 inf when none). */

typedef struct cask_knn_kmerge_args { int64_t n; int64_t k; } cask_knn_kmerge_args;
/* kmerge: buffers [0] RW cask_knn_best (n x k), [1] R cask_knn_best (n x k), each row
 * sorted: [0] = the k best of both (disjoint reference indices). */

typedef struct cask_knn_kfinish_args { int64_t n; int64_t k; double scale; } cask_knn_kfinish_args;
/* kfinish: buffers [0] R cask_knn_best (n x k), [1] W int32 index (n x k), [2] W float
 * distance (n x k). */

/* The registered kernels. */
typedef struct cask_knn_kernels {
    cask_kernel *prep;
    cask_kernel *search;
    cask_kernel *merge;
    cask_kernel *finish;
    cask_kernel *prep_sorted;
    cask_kernel *korder;
    cask_kernel *ksearch;
    cask_kernel *kmerge;
    cask_kernel *kfinish;
} cask_knn_kernels;

/* Registers the kernels with rt (once per runtime; the runtime owns them). */
cask_status cask_knn_kernels_register(cask_runtime *rt, cask_knn_kernels *out);

/* Bytes of the prepared form of m references. */
size_t cask_knn_prepared_bytes(int64_t m);

/* Bytes of the sorted form of m references (prep_sorted), 0 if m < 0. Pure. */
size_t cask_knn_sorted_bytes(int64_t m);

/* Bytes of a ksearch task's scratch buffer for n observations, 0 if n < 0. Pure. */
size_t cask_knn_scratch_bytes(int64_t n);

#ifdef __cplusplus
}
#endif
#endif
