/* knn_pre.h: cask.knn's work before its graph, on cask's CPU workers (knn_pre.c). */
#ifndef PC_KNN_PRE_H
#define PC_KNN_PRE_H

#include "cask/cask.h"
#include "auto_method.h"
#include "points.h"

typedef struct pc_knn_pre_kernels_t {
    cask_kernel *check, *estimate;
} pc_knn_pre_kernels_t;

/* Registers the two kernels with rt (once per runtime). */
cask_status pc_knn_pre_kernels(cask_runtime *rt, pc_knn_pre_kernels_t *out);

/* One graph, computed before this returns: each point set check[s] (host memory; NULL:
 * not checked) read once, spread over `workers` CPU workers, bad[s] set to 1 if one of
 * its values is not finite or outside [-90, 90] x [-180, 180] (radians: [-pi/2, pi/2]
 * x [-pi, pi]; float values against the float limits), else 0; and, with est (begun by
 * knn_auto_begin), fractions[i] = knn_auto_one(est, i) for every observation sample i,
 * alongside. The points and est must stay untouched meanwhile. Errors: the runtime's. */
cask_status pc_knn_pre(cask_runtime *rt, const pc_knn_pre_kernels_t *k, int workers,
                       const knn_points *const check[2], int bad[2], const knn_auto_est *est,
                       double *fractions);

#endif
