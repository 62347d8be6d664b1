/* kout.h: cask-knn's results with --k K > 1: the K-nearest check against a float64 brute
 * force (check_k.c) and the output files (kout.c). See docs/knn.md, "Output". */
#ifndef KNN_KOUT_H
#define KNN_KOUT_H

#include <stdint.h>
#include <stdio.h>
#include "check.h"
#include "points.h"

/* CSV header of a K > 1 result: one row per (observation, rank), rank 1 the nearest. */
#define KNN_KCSV_HEADER "obs,rank,ref_index,distance\n"

/* Writes index/dist (n x k, row-major) to f as CSV (KNN_KCSV_HEADER, then n*k rows) or as
 * .npy (an (n, k, 2) float64 array of [ref_index, distance]). CASK_ERR_IO or
 * CASK_ERR_NOMEM with the message (starting with name) in err. */
cask_status knn_kcsv_write(FILE *f, const char *name, const int32_t *index, const float *dist,
                           int64_t n, int k, char *err, size_t errlen);
cask_status knn_knpy_write(FILE *f, const char *name, const int32_t *index, const float *dist,
                           int64_t n, int k, char *err, size_t errlen);
/* The same in pieces, for a streamed result written window by window: CSV rows of
 * observations first .. first+n-1 (index[0] belongs to observation first) with no header;
 * the .npy header of an (n, k, 2) array, then rows appended. */
cask_status knn_kcsv_write_rows(FILE *f, const char *name, const int32_t *index,
                                const float *dist, int64_t first, int64_t n, int k, char *err,
                                size_t errlen);
/* The CSV rows of observations first .. first+n-1 (k results each) into buf, which holds
 * n * k * KNN_CSV_ROW_MAX bytes; returns the bytes written (no NUL). */
size_t knn_kcsv_format(char *buf, int64_t first, const int32_t *index, const float *dist,
                       int64_t n, int k);
cask_status knn_knpy_write_header(FILE *f, const char *name, int64_t n, int k, char *err,
                                  size_t errlen);
cask_status knn_knpy_write_rows(FILE *f, const char *name, const int32_t *index,
                                const float *dist, int64_t n, int k, char *err, size_t errlen);

/* --check for K neighbours: samples observations as knn_check does and compares rank r of
 * each with the r-th smallest float64 haversine distance (the chosen reference's true
 * distance, and the reported distance; d floored at 1e-12 rad). An index out of range or
 * repeated in a row counts as bad. CASK_ERR_NOMEM if it cannot allocate. */
cask_status knn_check_k(const knn_points *obs, const knn_points *ref, const int32_t *index,
                        const float *dist, int k, double scale, int64_t samples,
                        knn_check_report *out);

/* knn_check (k = 1) or knn_check_k of the `samples` rows knn_check_row samples in obs,
 * from their results alone: index and dist hold sample s's k results at s * k. The
 * report names rows of obs, as the check of the whole result would. */
cask_status knn_check_samples(const knn_points *obs, const knn_points *ref, const int32_t *index,
                              const float *dist, int k, double scale, int64_t samples,
                              knn_check_report *out);

#endif
