/* knn_out.h: cask-knn's --out across the ranks of a job. One file is written by all of
 * them (cask_dist_file, cask/distributed.h): in place, each rank writes the rows it
 * computed at their offsets (the write tasks of the search graph, knn_dist_out.c, or
 * each rank's share when streamed), and the commit renames the file once every chunk
 * of rows was reported written; gathered (the path is not on a file system every rank
 * sees, or --write-mode gather), rank 0 writes all the rows it gathered. Also the row
 * writers the in-place, gathered and streamed paths share, so that their bytes are one
 * process's. */
#ifndef KNN_OUT_H
#define KNN_OUT_H

#include <stdint.h>
#include <stdio.h>
#include "cask/cask.h"
#include "cask/distributed.h"
#include "out_compact.h"
#include "points.h"

/* Where rows are written: a file of the job (file), or a descriptor (fd, one process). */
typedef struct knn_sink {
    cask_dist_file *file;
    int fd;
    const char *name;          /* for messages */
} knn_sink;

/* len bytes at off, all of them. CASK_ERR_IO with the message in err. Thread safe. */
cask_status knn_sink_write(const knn_sink *s, const void *buf, size_t len, int64_t off,
                           char *err, size_t errlen);

/* Results of rows first .. first+n-1 (index, dist: k values a row, row first's first)
 * written as .npy rows of format f (out_compact.h) of a file whose row 0 starts at
 * data_off. Thread safe (pwrite at offsets). */
cask_status knn_rows_put(const knn_sink *s, knn_out_format f, const int32_t *index,
                         const float *dist, int64_t first, int64_t n, int k, int64_t data_off,
                         char *err, size_t errlen);
/* knn_rows_put in the f64 format (knn_npy_pack). */
cask_status knn_npy_put_rows(const knn_sink *s, const int32_t *index, const float *dist,
                             int64_t first, int64_t n, int k, int64_t data_off, char *err,
                             size_t errlen);

/* The CSV text of rows first .. first+n-1 (k results a row) into buf (n * k *
 * KNN_CSV_ROW_MAX bytes): the bytes knn_csv_write (k = 1) and knn_kcsv_write write. */
size_t knn_out_csv_format(char *buf, int64_t first, const int32_t *index, const float *dist,
                          int64_t n, int k);

/* The header of a result file (.npy: knn_npy_result_header; CSV: the header line) into
 * buf (KNN_NPY_HEADER_MAX bytes); returns its length. */
size_t knn_out_header(char *buf, int npy, int64_t n, int k);

/* --out of a job of several ranks. */
typedef struct knn_out {
    cask_dist_file *file;      /* NULL: none */
    int rank;
    int in_place;              /* every rank writes its rows */
    int npy, k;
    int64_t n;                 /* rows of the result (knn_out_rows) */
    int64_t data_off;          /* where row 0's bytes start: the header's length */
    FILE *f;                   /* gathered, rank 0: the file as a stream (knn_out_stream) */
} knn_out;

/* Collective: opens path across the ranks of dist with mode (cask_dist_write_mode).
 * Gathered where it was asked to be in place ("auto"), rank 0 says why on stderr,
 * after "prog: ". Errors as cask_dist_file_open's, the message in err. */
cask_status knn_out_open(cask_dist *dist, const char *prog, const char *path, int mode,
                         knn_out *o, char *err, size_t errlen);

/* Once the rows are known (every rank): n rows of k results, and so where row 0 starts.
 * In place, the header is written by a task of the search graph (knn_dist_out.h). */
void knn_out_rows(knn_out *o, int64_t n, int k);

/* The file as a stream on this rank's own descriptor (gathered: rank 0's, to write the
 * whole result to; streamed in place: each rank's, for rank 0's header); NULL with the
 * message in err if it cannot be had. knn_out_commit flushes and closes it. */
FILE *knn_out_stream(knn_out *o, char *err, size_t errlen);

/* Ends the writing (cask_dist_file_commit: in place collective, gathered rank 0 alone):
 * ok 0 vetoes; nunits chunks of rows, unit u being rows [u * chunk, (u + 1) * chunk)
 * and the units past the rows the header (chunk 0: the rows cut evenly in nunits, as
 * the ranks of a streamed run share them, the header in rank 0's).
 * size: the file's bytes (-1: not checked). A failure's message, naming the rows no
 * rank wrote, goes to err. */
cask_status knn_out_commit(knn_out *o, int ok, int64_t nunits, int64_t chunk, int64_t size,
                           char *err, size_t errlen);

/* Frees o; an uncommitted file is removed. */
void knn_out_close(knn_out *o);

#endif
