/* points.h: the IO layer of cask-knn. A point set is n (latitude, longitude) pairs stored
 * interleaved and contiguous (lat0, lon0, lat1, lon1, ...), as float or double, in degrees
 * or radians: exactly the layout the cask knn kernels read (cask_knn_points), so a loaded
 * file is handed to the runtime without another copy. This layer knows nothing of the
 * runtime: it reads CSV and .npy point files, checks every value, writes results, and
 * reports what went wrong as one line naming the file, row and column. */
#ifndef KNN_POINTS_H
#define KNN_POINTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "cask/status.h"

/* Where point and result buffers come from. The app passes cask_host_alloc (pinned
 * memory that GPUs copy from fast); tests pass NULL, which means malloc/free. */
typedef struct knn_alloc {
    void *(*alloc)(void *ctx, size_t bytes); /* NULL on failure */
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} knn_alloc;

typedef struct knn_points {
    void *data;        /* n x 2 values, interleaved (lat, lon) */
    int64_t n;
    int f64;           /* 1: double, 0: float */
    int degrees;       /* 1: degrees, 0: radians */
    const knn_alloc *alloc; /* frees data (NULL: free()) */
    /* 1: data is memory of GPU `device` (the runtime's index), which the graph
     * registers as it is (cask_data_register_device) and never reads on the host; 0 (as
     * zero-initialised): host memory. Only the graph (knn_graph.c) takes such points:
     * the IO layer, the checks and the estimate of --method auto read host memory. */
    int on_device;
    int device;
} knn_points;

/* How to read a point file. Zero-initialised means: columns found by their usual names,
 * values in radians (set degrees = 1 for the usual degrees), no wrapping. */
typedef struct knn_read_opts {
    const char *lat_col;  /* CSV: latitude column name (case-insensitive); NULL = find */
    const char *lon_col;  /* CSV: longitude column name; NULL = find */
    int degrees;          /* the file's values are degrees (else radians) */
    int wrap;             /* wrap longitudes outside [-180, 180] instead of failing */
} knn_read_opts;

/* Error messages are written to err (always NUL-terminated when errlen > 0) as one line
 * without a trailing newline, starting with the file name: "obs.csv: data row 3 (line 4),
 * column 2 'lat': latitude 95 is outside [-90, 90]". */
#define KNN_ERRLEN 512

/* Reads a point file, CSV or .npy, told apart by the .npy magic bytes (not the name; a
 * file named *.npy without the magic is an error). name is the path, also used in
 * messages. On success *out owns a buffer from alloc (release with knn_points_free).
 * Returns CASK_ERR_IO (cannot open or read), CASK_ERR_FORMAT (malformed content, bad
 * value, no data rows, missing column), CASK_ERR_NOMEM, CASK_ERR_INVALID. On failure
 * *out is empty. */
cask_status knn_points_read(const char *name, const knn_read_opts *opts,
                            const knn_alloc *alloc, knn_points *out, char *err,
                            size_t errlen);

/* The same from an open stream: prefix[0..nprefix) are bytes already read from f (may
 * be 0). knn_points_read sniffs the magic with these. */
cask_status knn_csv_read(FILE *f, const char *name, const char *prefix, size_t nprefix,
                         const knn_read_opts *opts, const knn_alloc *alloc,
                         knn_points *out, char *err, size_t errlen);
/* Where the windows of a CSV point file start, from one scan (knn_csv_scan). */
typedef struct knn_csv_index {
    int64_t n;                /* data rows */
    int64_t every;            /* rows per window */
    int64_t nwin;             /* windows: window w holds rows w * every .. */
    long long *off, *line;    /* per window: file offset and line of its first row */
    int ncols, lat_col, lon_col;
    char *lat_name, *lon_name;
} knn_csv_index;

/* Reads the CSV file f from its start once, checking every row as knn_csv_read does
 * (same messages) without keeping the values: counts the rows and notes where each
 * window of `every` rows starts. Free idx with knn_csv_index_free. */
cask_status knn_csv_scan(FILE *f, const char *name, const knn_read_opts *opts, int64_t every,
                         knn_csv_index *idx, char *err, size_t errlen);
/* Reads the `rows` rows of window win (rows <= every; the last may be shorter) into dst
 * (rows x 2 doubles, latitude and longitude), seeking f to where the window starts. */
cask_status knn_csv_read_window(FILE *f, const char *name, const knn_read_opts *opts,
                                const knn_csv_index *idx, int64_t win, int64_t rows,
                                double *dst, char *err, size_t errlen);
void knn_csv_index_free(knn_csv_index *idx);

cask_status knn_npy_read(FILE *f, const char *name, const char *prefix, size_t nprefix,
                         const knn_read_opts *opts, const knn_alloc *alloc,
                         knn_points *out, char *err, size_t errlen);

/* The header of a .npy point file: rows, item size (4 or 8), layout, where data start. */
typedef struct knn_npy_header {
    int64_t n;
    size_t item;
    int fortran;          /* columns stored one after the other */
    int swap;             /* byte order differs from this machine's */
    int64_t data_offset;  /* bytes from the start of the file */
} knn_npy_header;

/* Reads and checks the magic and header of a .npy point file (prefix as above); f is
 * left at the first data byte. The same messages as knn_npy_read. */
cask_status knn_npy_parse_header(FILE *f, const char *name, const char *prefix,
                                 size_t nprefix, knn_npy_header *h, char *err,
                                 size_t errlen);
/* Turns rows as read from the file into interleaved native values in dst: for a
 * Fortran-order file, tmp holds `rows` latitudes then, col_stride items further, the
 * longitudes; otherwise tmp is unused and dst holds the rows as read. */
void knn_npy_fix_rows(void *dst, const void *tmp, int64_t rows, int64_t col_stride,
                      size_t item, int swap, int fortran);
/* Checks (and, with opts->wrap, wraps) the n points of p, which are rows base.. of file
 * name: the messages of knn_npy_read name the row in the file. */
cask_status knn_npy_check_rows(const char *name, knn_points *p, int64_t base,
                               const knn_read_opts *opts, char *err, size_t errlen);

/* Allocates an empty point set of n points (contents undefined). */
cask_status knn_points_alloc(int64_t n, int f64, int degrees, const knn_alloc *alloc,
                             knn_points *out);
/* Frees the buffer; p may be NULL or empty. Leaves *p empty. */
void knn_points_free(knn_points *p);

/* Latitude and longitude of point i as double. */
static inline void knn_points_get(const knn_points *p, int64_t i, double *lat, double *lon)
{
    if (p->f64) {
        const double *d = (const double *)p->data;
        *lat = d[2 * i];
        *lon = d[2 * i + 1];
    } else {
        const float *f = (const float *)p->data;
        *lat = f[2 * i];
        *lon = f[2 * i + 1];
    }
}

/* Checks one point. Returns 0 if fine; otherwise which coordinate is bad (1 latitude,
 * 2 longitude) and a reason in why ("latitude 95 is outside [-90, 90]"). With wrap,
 * a finite longitude outside the range is brought back into it in *lon and is fine.
 * f32 means the value came from a float, whose rounded pi/2 and pi are accepted. */
int knn_point_check(double lat, double *lon, int degrees, int f32, int wrap, char *why,
                    size_t whylen);

/* Result files. index[i] is the 0-based reference nearest to observation i, dist[i] its
 * distance. CSV: a header "obs,ref_index,distance" then one row per observation.
 * NPY: an (n, 2) float64 C-order array whose rows are [index, distance]. Both return
 * CASK_ERR_IO with a message if a write fails (disk full). */
cask_status knn_csv_write(FILE *f, const char *name, const int32_t *index,
                          const float *dist, int64_t n, char *err, size_t errlen);
cask_status knn_npy_write(FILE *f, const char *name, const int32_t *index,
                          const float *dist, int64_t n, char *err, size_t errlen);

/* The .npy header of a result, (n, 2) float64 (k <= 1) or (n, k, 2), into buf (room for
 * KNN_NPY_HEADER_MAX bytes); returns its length, where the rows start (a multiple of
 * 64). */
#define KNN_NPY_HEADER_MAX 192
size_t knn_npy_result_header(char *buf, int64_t n, int k);
/* nvals (index, distance) pairs as the .npy result stores them: 2 * nvals float64,
 * little-endian, into buf. */
void knn_npy_pack(double *buf, const int32_t *index, const float *dist, int64_t nvals);

/* knn_npy_write in two pieces, for writers that stream: the header of an (n, 2) array,
 * then rows (index[0], dist[0] first), appended; call rows until n rows are out. */
cask_status knn_npy_write_header(FILE *f, const char *name, int64_t n, char *err,
                                 size_t errlen);
cask_status knn_npy_write_rows(FILE *f, const char *name, const int32_t *index,
                               const float *dist, int64_t n, char *err, size_t errlen);

/* The pieces of knn_csv_write, for writers that format in parallel: the header line,
 * and rows first .. first+n-1 (index[0] and dist[0] belong to row first) formatted into
 * buf, which must hold n * KNN_CSV_ROW_MAX bytes; returns the bytes written (no NUL). */
#define KNN_CSV_HEADER "obs,ref_index,distance\n"
#define KNN_CSV_ROW_MAX 64
size_t knn_csv_format(char *buf, int64_t first, const int32_t *index, const float *dist,
                      int64_t n);

/* 1 if name ends in ".npy" (any case). */
int knn_path_is_npy(const char *name);

/* An output file written all-or-nothing: open creates NAME.tmp.PID beside it (failing
 * early if the folder is not writable), commit flushes, fdatasyncs, renames it to NAME
 * and fsyncs the folder (the data are on disk before the name appears),
 * abort removes it. Exactly one of commit/abort must follow a successful open. */
typedef struct knn_outfile {
    FILE *f;
    char *path;      /* final name */
    char *tmp_path;  /* NAME.tmp.PID */
} knn_outfile;
cask_status knn_outfile_open(knn_outfile *o, const char *path, char *err, size_t errlen);
/* Flushes and closes f (closed whatever happens): CASK_ERR_IO with "name: write failed:
 * why" in err if a write failed, now or earlier. */
cask_status knn_fclose_checked(FILE *f, const char *name, char *err, size_t errlen);
cask_status knn_outfile_commit(knn_outfile *o, char *err, size_t errlen);
void knn_outfile_abort(knn_outfile *o);

/* printf into err (always NUL-terminated) and return st. */
cask_status knn_errorf(cask_status st, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
