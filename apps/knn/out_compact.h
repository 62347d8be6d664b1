/* out_compact.h: cask-knn's result formats for .npy output (--out-format): float64, the
 * default and the format of old ((N, 2) or (N, K, 2) float64 of [ref_index, distance],
 * 16 bytes a result), and compact: a structured array of N records (N x K with --k K > 1)
 * {index: int32, dist: float32}, little-endian, 8 bytes a result. np.load reads both
 * (no pickle: a structured dtype is plain data); r["index"] and r["dist"] are the two
 * columns of the compact one. */
#ifndef KNN_OUT_COMPACT_H
#define KNN_OUT_COMPACT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "points.h"

typedef enum knn_out_format {
    KNN_OUT_F64 = 0,       /* (N, 2) / (N, K, 2) float64 */
    KNN_OUT_COMPACT = 1    /* (N,) / (N, K) of [('index', '<i4'), ('dist', '<f4')] */
} knn_out_format;

/* "compact" or "f64" into *f: 0, or -1 for anything else. */
int knn_out_format_parse(const char *s, knn_out_format *f);

/* Bytes of one observation's k results (k < 1 counts as 1) in format f. */
size_t knn_out_row_bytes(knn_out_format f, int k);

/* The .npy header of a result of n rows of k in format f into buf (KNN_NPY_HEADER_MAX
 * bytes); returns its length, where the rows start (a multiple of 64). */
size_t knn_out_npy_header(char *buf, knn_out_format f, int64_t n, int k);

/* nvals results (index[i], dist[i]) as compact records into buf (8 * nvals bytes). */
void knn_compact_pack(void *buf, const int32_t *index, const float *dist, int64_t nvals);

/* The whole compact .npy (header, then n rows of k results) to f. CASK_ERR_IO with the
 * message (starting with name) in err. */
cask_status knn_compact_write(FILE *f, const char *name, const int32_t *index,
                              const float *dist, int64_t n, int k, char *err, size_t errlen);

#endif
