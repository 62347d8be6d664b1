/* stream.h: cask-knn over observation files larger than memory. The observations of a
 * .npy file are read window by window by offset (npy_source.c), searched by the task
 * graph of knn_graph.h built once per window size, and the results of each window are
 * written to the output file while later windows compute; windows are read ahead while
 * earlier ones compute (stream_io.h). A fixed number of windows of buffers in all
 * (read_ahead + 2), so memory stays flat however many rows the file has. The output
 * bytes are those of the in-memory path. */
#ifndef KNN_STREAM_H
#define KNN_STREAM_H

#include <stdint.h>
#include <stdio.h>
#include "cask/cask.h"
#include "cask/distributed.h"
#include "knn_graph.h"
#include "out_compact.h"
#include "points.h"

/* A .npy point file open for reading rows by offset. */
typedef struct knn_npy_source {
    int fd;
    const char *name;       /* not copied */
    knn_npy_header h;
    knn_read_opts opts;
} knn_npy_source;

/* 1 if the file at path starts with the .npy magic (0 if not, or if it cannot be read:
 * the ordinary reader then reports why). */
int knn_file_has_npy_magic(const char *path);

/* Opens name, parses and checks its header and that the file holds all the rows it
 * announces. CASK_ERR_IO, CASK_ERR_FORMAT (messages as knn_npy_read), CASK_ERR_NOMEM. */
cask_status knn_npy_source_open(const char *name, const knn_read_opts *opts,
                                knn_npy_source *s, char *err, size_t errlen);
/* Reads rows first .. first+n-1 into dst->data (room for n rows of the file's item
 * size, dst->f64 matching it), converts byte order and layout, and checks every value
 * (a bad one is named by its row in the file). Sets dst->n and dst->degrees. Thread
 * safe for distinct dst (pread). */
cask_status knn_npy_source_read(knn_npy_source *s, int64_t first, int64_t n,
                                knn_points *dst, char *err, size_t errlen);
void knn_npy_source_close(knn_npy_source *s);

/* Observations to stream: a .npy file (read by any row range, from several threads at
 * once) or a CSV file (scanned once at open for where each window starts, then read a
 * whole window at a time, in order). */
typedef struct knn_obs_source {
    const char *name;          /* not copied */
    int64_t n;
    int f64, degrees;
    int by_range;              /* 1: .npy, any range; 0: CSV, whole windows */
    int64_t window;            /* CSV: rows per window (reads start at multiples) */
    knn_npy_source npy;
    FILE *csv;
    knn_csv_index idx;
    knn_read_opts opts;
} knn_obs_source;

/* Opens name (.npy by its magic, else CSV: scanned and checked whole now, keeping only
 * where windows of `window` rows start). Errors as knn_points_read's. */
cask_status knn_obs_source_open(const char *name, const knn_read_opts *opts, int64_t window,
                                knn_obs_source *s, char *err, size_t errlen);
/* Rows first .. first+n-1 into dst (room for n rows; f64 as the source's). For a CSV
 * source first is a multiple of the window and n the window's rows. */
cask_status knn_obs_source_read(knn_obs_source *s, int64_t first, int64_t n,
                                knn_points *dst, char *err, size_t errlen);
void knn_obs_source_close(knn_obs_source *s);

/* The ranks of a job agree: whether one failed, and on *value (each proposes one; all
 * learn the smallest). Returns nonzero if a rank failed or the agreement did (the
 * message is printed). */
typedef int (*knn_stream_agree_fn)(void *ctx, int failed, int64_t *value);

typedef struct knn_stream_cfg {
    knn_obs_source *obs;       /* open */
    int64_t first_row, nrows;  /* the rows of obs this run searches (nrows 0: all) */
    int64_t out_rows;          /* rows of the whole output (0: nrows): its header's */
    int header_elsewhere;      /* 1: another rank writes the output's header; this one
                                * only its rows after it, by offset (.npy only) */
    knn_stream_agree_fn agree; /* several ranks: meet once the first window is read,
                                * failed or not, and agree on auto's choice (NULL: alone) */
    void *agree_ctx;
    const knn_points *ref;     /* loaded */
    int64_t window;            /* observation rows per window (> 0) */
    knn_plan plan;             /* chunk sizes for a full window; k; prune */
    int auto_prune;            /* 1: plan.prune chosen from the first window (--method
                                * auto, knn_auto_prune), with pchunk if pruned */
    int64_t pchunk;            /* observation rows per task of a pruned search */
    int64_t brute_ref_chunk;   /* auto, k = 1: the reference chunk if it takes the brute
                                * force (the 1-NN kernels take any number) */
    FILE *out;                 /* NULL: no output */
    cask_dist_file *out_file;  /* across ranks: the file of the job out is a stream of,
                                * .npy rows written through it (NULL: by fileno(out)) */
    const char *out_name;
    int out_npy;               /* 1: .npy rows, 0: CSV */
    int nworkers;              /* CPU workers, sizes the CSV formatting waves */
    int64_t check;             /* observations to sample for --check (0: none) */
    const knn_alloc *alloc;    /* window buffers (pinned host memory) */
    knn_out_format out_format; /* .npy rows: f64 or compact */
    int read_ahead;            /* windows read ahead of the one searched (0 .. 16): the
                                * run holds read_ahead + 2 windows of buffers; -1: 0
                                * without an output, else 2, or fewer so that they hold
                                * KNN_STREAM_AUTO_BYTES at most */
    int io_threads;            /* parallel reads and .npy writes of one window (>= 1) */
} knn_stream_cfg;

/* The window buffers of the default read-ahead, at most (unless 2 windows need more). */
#define KNN_STREAM_AUTO_BYTES ((int64_t)2 << 30)

/* Most windows of buffers a run holds (read_ahead 16). */
#define KNN_STREAM_MAX_SLOTS 18

typedef struct knn_stream_result {
    int64_t windows;
    double t_first_load;       /* the search (or auto, from CSV) waiting for the first window,
                                * read while auto decides and the references are prepared */
    double t_compute;          /* sum over windows of submit .. results in host memory */
    double t_wait_io;          /* t_wait_read + t_wait_write */
    double t_wait_read;        /* the search waiting for windows to be read */
    double t_wait_write;       /* after the last search, waiting for the writes */
    int slots;                 /* windows of buffers held */
    double t_total;
    /* the total outside the windows' searches and waits: */
    double t_auto;             /* auto's choice from the first window */
    double t_refs;             /* the references prepared */
    double t_jobs;             /* each window's job made, or its device copies dropped */
    double t_end;              /* after the last window: writes finished, buffers freed */
    int64_t obs_chunks;        /* of a full window */
    int64_t ref_chunks;
    size_t ntasks;             /* of a full window's graph */
    int prune;                 /* the method used: 1 pruned, 0 brute force */
    double auto_fraction;      /* auto's estimate of the pairs visited (-1: not asked) */
    /* --check samples: observations chosen as knn_check chooses them among all rows,
     * gathered while streaming (rows[s] is the file row of sample s) */
    knn_points sample_obs;
    int32_t *sample_index;     /* nsamples x k */
    float *sample_dist;
    int64_t *sample_rows;      /* rows of the run's share (add first_row for the file's) */
    int64_t nsamples;
} knn_stream_result;

/* Runs the search over every row of cfg->obs and appends the results to cfg->out (whose
 * header this writes): the references are prepared once (knn_refs_create) and each
 * window is searched as the in-memory path searches its rows (pruned: ordered along the
 * curve chunk by chunk, results back in the input's order), so the output bytes are those
 * of the in-memory run of the same method and k. On failure the message is in err; the output is then partial
 * (the caller removes it). Free res with knn_stream_result_free. */
cask_status knn_stream_run(cask_runtime *rt, const cask_knn_kernels *k,
                           const knn_stream_cfg *cfg, knn_stream_result *res, char *err,
                           size_t errlen);
void knn_stream_result_free(knn_stream_result *res);

#endif
