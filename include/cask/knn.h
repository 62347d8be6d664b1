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

/* The registered kernels. */
typedef struct cask_knn_kernels {
    cask_kernel *prep;
    cask_kernel *search;
    cask_kernel *merge;
    cask_kernel *finish;
} cask_knn_kernels;

/* Registers the kernels with rt (once per runtime; the runtime owns them). */
cask_status cask_knn_kernels_register(cask_runtime *rt, cask_knn_kernels *out);

/* Bytes of the prepared form of m references. */
size_t cask_knn_prepared_bytes(int64_t m);

#ifdef __cplusplus
}
#endif
#endif
