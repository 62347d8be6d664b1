/* main_stream.h: the streamed path of cask-knn's main (observations larger than a
 * window): load the references, run knn_stream_run, check the sampled rows, commit the
 * output, print the summary. Across the ranks of a job each rank streams its share of
 * the rows of a .npy file and writes its results in place into the job's output (.npy,
 * on a file system every rank sees: knn_out.h), committed once every rank's share was
 * reported written. */
#ifndef KNN_MAIN_STREAM_H
#define KNN_MAIN_STREAM_H

#include "cask/cask.h"
#include "knn_dist.h"
#include "knn_out.h"
#include "stream.h"

typedef struct knn_stream_main_args {
    const char *prog;
    cask_runtime *rt;
    const cask_runtime_info *info;
    const cask_knn_kernels *kernels;
    const knn_alloc *alloc;
    knn_obs_source *obs;       /* open */
    const char *ref_path;
    knn_read_opts ro;
    knn_points *ref;           /* filled here; the caller frees it */
    knn_outfile *out;          /* one process: out->f NULL, no output; committed here on
                                * success */
    knn_out *dout;             /* several ranks: the output of the job (knn_out_open),
                                * committed here on success */
    const char *out_path;      /* --out (NULL: none), on every rank */
    int64_t window, chunk, ref_chunk;   /* chunk, ref_chunk: 0 = default */
    int k;                     /* neighbours (1 .. CASK_KNN_KMAX) */
    int method;                /* KNN_METHOD_* (options.h) */
    double scale;
    int quiet;
    int64_t check;
    knn_cluster *cl;           /* the job (one rank: alone); each rank streams its share */
    knn_out_format out_format; /* .npy results: f64 or compact (one process) */
    int read_ahead;            /* windows read ahead of the one computing */
    int io_threads;            /* parallel reads and .npy writes of a window */
} knn_stream_main_args;

/* Returns cask-knn's exit status (0, 1 data or run error, 3 check failed); messages on
 * stderr. */
int knn_stream_main(const knn_stream_main_args *a);

#endif
