/* check.h: `cask-knn --check K`, an independent float64 brute force over a sample of
 * observations, to measure the error of a computed result. */
#ifndef KNN_CHECK_H
#define KNN_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include "points.h"

/* Limits of the relative errors (see knn_check_report). */
#define KNN_CHECK_TOL_CHOSEN 1e-6
#define KNN_CHECK_TOL_REPORTED 1e-5

typedef struct knn_check_report {
    int64_t checked;          /* observations compared */
    int64_t m;                /* references each was compared with */
    int64_t other_choice;     /* chose another reference than the brute force (a tie or
                                 a near-tie: harmless while max_err_chosen is small) */
    int64_t bad_index;        /* index outside [0, m) */
    int64_t first_bad_index;  /* observation of the first such, -1 if none */
    /* Relative errors against the true nearest distance d (float64 haversine, radians):
     * chosen = |d(obs, ref[index]) - d| / d, reported = |dist / scale - d| / d, with d
     * floored at 1e-12 rad. The observations where the maxima occur. */
    double max_err_chosen, max_err_reported;
    int64_t worst_chosen, worst_reported;
} knn_check_report;

/* Compares k observations, evenly spaced from the first to the last (all if k >= n),
 * with every reference. CASK_ERR_NOMEM if it cannot allocate its tables. */
/* The observation the check's sample s of `samples` reads (samples at most n): evenly
 * spread from the first row to the last. knn_check and knn_check_k read these alone. */
static inline int64_t knn_check_row(int64_t n, int64_t samples, int64_t s)
{
    return samples == 1 ? 0 : (int64_t)((double)s * (double)(n - 1) / (double)(samples - 1) + 0.5);
}

cask_status knn_check(const knn_points *obs, const knn_points *ref, const int32_t *index,
                      const float *dist, double scale, int64_t k, knn_check_report *out);

/* Prints the report, with the limits, on f (lines prefixed "prog: check: "). */
void knn_check_print(FILE *f, const char *prog, const knn_check_report *r);

/* Great-circle distance in radians of two points in radians (float64 haversine). */
double knn_haversine(double lat1, double lon1, double lat2, double lon2);

#endif
