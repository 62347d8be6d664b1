/* options.h: cask-knn's command line: the options, --help, and their parsing (a bad
 * command line prints a message ending "Try 'cask-knn --help'." and exits with status 2). */
#ifndef KNN_OPTIONS_H
#define KNN_OPTIONS_H

#include <stdint.h>

enum { KNN_EXIT_USAGE = 2 };

typedef struct options {
    const char *obs_path, *ref_path, *out_path, *dot_path;
    const char *lat_col, *lon_col;
    int radians, wrap, quiet, cpu_only;
    int gpus;          /* -2 unset, -1 all, else count */
    int threads;       /* 0 unset */
    int generate;
    int64_t gen_n, gen_m;
    uint64_t seed;
    int64_t chunk, ref_chunk; /* 0 = default */
    int km;
    int64_t check;
    int repeat;
    int stream;        /* -1 auto, 0 off, 1 on */
    int64_t window;    /* observation rows per streamed window */
    int k;             /* neighbours per observation */
    int method;        /* KNN_METHOD_* */
    int64_t clusters;  /* --generate: blobs, 0 = uniform */
    int write_mode;    /* cask_dist_write_mode: across ranks, who writes --out */
    int out_format;    /* knn_out_format (out_compact.h): .npy results, f64 or compact */
    int read_ahead;    /* streamed: windows read ahead of the one computing */
    int io_threads;    /* streamed: parallel reads (and .npy writes) of one window */
} options;

enum { KNN_METHOD_AUTO, KNN_METHOD_BRUTE, KNN_METHOD_PRUNED };

/* Parses argv into o (exits on --help, --version and usage errors). */
void knn_parse_args(int argc, char **argv, options *o);

#endif
