/* io_csv.c: CSV point files in, CSV result files out.
 *
 * Reading is one pass over a 1 MiB buffer with a small state machine (RFC 4180 plus the
 * usual leniencies): a header row names the columns; fields may be quoted, with embedded
 * commas, newlines and doubled quotes; CRLF or LF; blank lines and a UTF-8 BOM are
 * skipped; spaces around fields are ignored (the tokenizer: csv_reader.c). Only the
 * latitude and longitude fields of a data row are kept, so wide files cost no memory.
 * Every value is checked as it is read, so an error names the data row, the physical
 * line and the column. */
#include "csv_reader.h"
#include "number.h"
#include "points.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CSV_LIST_MAX 12     /* column names listed in a message */

static const char *const lat_names[] = {"lat", "latitude", NULL};
static const char *const lon_names[] = {"lon", "lng", "long", "longitude", NULL};

static void csv_list_columns(const csv_reader *r, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < r->nfields && used < len; i++) {
        if (i == CSV_LIST_MAX) {
            snprintf(out + used, len - used, ", ...");
            return;
        }
        int w = snprintf(out + used, len - used, "%s'%s'", i ? ", " : "", r->fields[i].s);
        if (w < 0)
            return;
        used += (size_t)w;
    }
}

/* Finds the column for one coordinate: the one named `want` (case-insensitive; an exact
 * match wins over others), or else the one whose name is among `usual`. */
static cask_status csv_find_column(csv_reader *r, const char *what, const char *option,
                                   const char *want, const char *const *usual, int *col)
{
    char cols[256];
    int found = -1, nfound = 0, exact = -1, nexact = 0;

    for (int i = 0; i < r->nfields; i++) {
        const char *s = r->fields[i].s;
        int match = 0;
        if (want) {
            match = strcasecmp(s, want) == 0;
            if (strcmp(s, want) == 0) {
                exact = i;
                nexact++;
            }
        } else {
            for (const char *const *u = usual; *u && !match; u++)
                match = strcasecmp(s, *u) == 0;
        }
        if (match) {
            if (nfound == 0)
                found = i;
            nfound++;
        }
    }
    if (want && nfound > 1 && nexact == 1) {
        found = exact;
        nfound = 1;
    }
    if (nfound == 1) {
        *col = found;
        return CASK_OK;
    }
    csv_list_columns(r, cols, sizeof cols);
    if (nfound == 0 && want)
        return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                          "%s: line %lld: no column named '%s' (%s); the header has %s",
                          r->name, r->rec_line, want, option, cols);
    if (nfound == 0)
        return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                          "%s: line %lld: no %s column (looked for %s%s%s%s, any case); name "
                          "it with %s; the header has %s",
                          r->name, r->rec_line, what, usual[0], usual[1] ? ", " : "",
                          usual[1] ? usual[1] : "", usual[2] ? ", ..." : "", option, cols);
    return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                      "%s: line %lld: %d columns could be the %s (%s); choose one with %s",
                      r->name, r->rec_line, nfound, what, cols, option);
}

/* Parses a kept field as a number. */
static cask_status csv_number(csv_reader *r, long long row, int col, const char *what,
                              double *out)
{
    const csv_field *fl = &r->fields[col == r->lat_col ? 0 : 1];
    const char *colname = r->fields[col == r->lat_col ? 2 : 3].s;
    char *end;
    if (fl->len == 0)
        return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                          "%s: data row %lld (line %lld), column %d '%s': empty %s", r->name,
                          row, r->rec_line, col + 1, colname, what);
    double v;
    if (!fl->overflow && knn_parse_decimal(fl->s, &v)) {
        *out = v;
        return CASK_OK;
    }
    v = strtod(fl->s, &end);
    while (end != fl->s && (*end == ' ' || *end == '\t'))
        end++;
    if (fl->overflow || end == fl->s || *end != '\0')
        return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                          "%s: data row %lld (line %lld), column %d '%s': %s is not a "
                          "number: '%.40s%s'",
                          r->name, row, r->rec_line, col + 1, colname, what, fl->s,
                          fl->len > 40 || fl->overflow ? "..." : "");
    *out = v;
    return CASK_OK;
}

/* What csv_read does: read every row into points (knn_csv_read), check every row and
 * note where windows start (knn_csv_scan), or read the rows of one window. */
enum { CSV_ALL, CSV_SCAN, CSV_WINDOW };

typedef struct csv_job {
    int mode;
    const knn_alloc *alloc;
    knn_points *out;          /* CSV_ALL */
    knn_csv_index *idx;       /* CSV_SCAN fills it; CSV_WINDOW reads it */
    int64_t win, rows;        /* CSV_WINDOW: the window and its rows */
    double *dst;              /* CSV_WINDOW: rows x 2 values */
} csv_job;

/* Reads one data row's latitude and longitude (checked, longitude maybe wrapped); row is
 * its 1-based number. */
static cask_status csv_data_row(csv_reader *r, long long row, int ncols,
                                const knn_read_opts *opts, double *lat, double *lon)
{
    cask_status st;
    if (r->nfields != ncols)
        return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                          "%s: data row %lld (line %lld): %d field%s, but the header has %d",
                          r->name, row, r->rec_line, r->nfields, r->nfields == 1 ? "" : "s",
                          ncols);
    if ((st = csv_number(r, row, r->lat_col, "latitude", lat)) ||
        (st = csv_number(r, row, r->lon_col, "longitude", lon)))
        return st;
    char why[160];
    int bad = knn_point_check(*lat, lon, opts->degrees, 0, opts->wrap, why, sizeof why);
    if (bad) {
        int col = bad == 1 ? r->lat_col : r->lon_col;
        return knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                          "%s: data row %lld (line %lld), column %d '%s': %s", r->name, row,
                          r->rec_line, col + 1, r->fields[bad == 1 ? 2 : 3].s, why);
    }
    return CASK_OK;
}

static cask_status csv_read(FILE *f, const char *name, const char *prefix, size_t nprefix,
                            const knn_read_opts *opts, csv_job *job, char *err, size_t errlen)
{
    csv_reader r = {0};
    double *vals = NULL;
    size_t cap = 0;
    long long n = 0;
    cask_status st = CASK_OK;
    int rc;

    knn_points *out = job->out;
    knn_csv_index *idx = job->idx;
    int64_t idx_cap = 0;
    if (out)
        memset(out, 0, sizeof *out);
    r.f = f;
    r.name = name;
    r.prefix = prefix;
    r.nprefix = nprefix;
    r.line = 1;
    r.err = err;
    r.errlen = errlen;
    r.keep_all = 1;
    r.buf = malloc(CSV_BUF);
    if (!r.buf) {
        st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", name);
        goto done;
    }
    int ncols;
    if (job->mode == CSV_WINDOW) {   /* the header is known: start at the window's row */
        if (job->win < 0 || job->win >= idx->nwin) {
            st = knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: no window %lld", name,
                            (long long)job->win);
            goto done;
        }
        if (fseeko(f, (off_t)idx->off[job->win], SEEK_SET) != 0) {
            st = knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot seek: %s", name,
                            strerror(errno));
            goto done;
        }
        r.base = idx->off[job->win];
        r.line = idx->line[job->win];
        r.lat_col = idx->lat_col;
        r.lon_col = idx->lon_col;
        ncols = idx->ncols;
        r.fields = calloc(4, sizeof *r.fields);
        if (!r.fields || !(r.fields[2].s = strdup(idx->lat_name)) ||
            !(r.fields[3].s = strdup(idx->lon_name))) {
            st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", name);
            goto done;
        }
        r.nfields_cap = 4;
        r.keep_all = 0;
        n = job->win * idx->every;
        for (int64_t i = 0; i < job->rows; i++) {
            rc = csv_record(&r);
            if (rc < 0) {
                st = r.read_errno ? CASK_ERR_IO : CASK_ERR_FORMAT;
                goto done;
            }
            if (rc == 0) {
                st = knn_errorf(CASK_ERR_FORMAT, err, errlen,
                                "%s: ends before data row %lld (the file changed)", name,
                                n + 1);
                goto done;
            }
            n++;
            double lat, lon;
            if ((st = csv_data_row(&r, n, ncols, opts, &lat, &lon)))
                goto done;
            job->dst[2 * i] = lat;
            job->dst[2 * i + 1] = lon;
        }
        goto done;
    }

    /* A UTF-8 byte order mark is not part of the first column's name. */
    if (csv_refill(&r) && r.len >= 3 && memcmp(r.buf, "\xEF\xBB\xBF", 3) == 0)
        r.pos = 3;
    rc = csv_record(&r);
    if (rc < 0) {
        st = r.read_errno ? CASK_ERR_IO : CASK_ERR_FORMAT;
        goto done;
    }
    if (rc == 0) {
        st = knn_errorf(CASK_ERR_FORMAT, err, errlen, "%s: empty file (no header row)", name);
        goto done;
    }
    if ((st = csv_find_column(&r, "latitude", "--lat-col", opts->lat_col, lat_names,
                              &r.lat_col)))
        goto done;
    if ((st = csv_find_column(&r, "longitude", "--lon-col", opts->lon_col, lon_names,
                              &r.lon_col)))
        goto done;
    if (r.lat_col == r.lon_col) {
        st = knn_errorf(CASK_ERR_FORMAT, err, errlen,
                        "%s: line %lld: column %d '%s' cannot be both latitude and longitude",
                        name, r.rec_line, r.lat_col + 1, r.fields[r.lat_col].s);
        goto done;
    }

    /* From here on slots 0 and 1 hold the kept fields, 2 and 3 the column names. */
    ncols = r.nfields;
    if (r.nfields_cap < 4) {
        st = knn_errorf(CASK_ERR_INTERNAL, err, errlen, "%s: internal error", name);
        goto done;
    }
    {
        /* Move the two names into slots 2 and 3, freeing all other header fields. */
        csv_field lat_name = r.fields[r.lat_col], lon_name = r.fields[r.lon_col];
        for (int i = 0; i < r.nfields_cap; i++)
            if (i != r.lat_col && i != r.lon_col)
                free(r.fields[i].s);
        memset(r.fields, 0, (size_t)r.nfields_cap * sizeof *r.fields);
        r.fields[2] = lat_name;
        r.fields[3] = lon_name;
    }
    r.keep_all = 0;

    for (;;) {
        rc = csv_record(&r);
        if (rc < 0) {
            st = r.read_errno ? CASK_ERR_IO : CASK_ERR_FORMAT;
            goto done;
        }
        if (rc == 0)
            break;
        n++;
        double lat, lon;
        if ((st = csv_data_row(&r, n, ncols, opts, &lat, &lon)))
            goto done;
        if (job->mode == CSV_SCAN) {
            if ((n - 1) % idx->every == 0) {   /* a window starts at this row */
                if (idx->nwin == idx_cap) {
                    int64_t nc = idx_cap ? 2 * idx_cap : 64;
                    long long *o = realloc(idx->off, (size_t)nc * sizeof *o);
                    if (o)
                        idx->off = o;
                    long long *l = o ? realloc(idx->line, (size_t)nc * sizeof *l) : NULL;
                    if (!l) {
                        st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", name);
                        goto done;
                    }
                    idx->line = l;
                    idx_cap = nc;
                }
                idx->off[idx->nwin] = r.rec_off;
                idx->line[idx->nwin] = r.rec_line;
                idx->nwin++;
            }
            continue;
        }
        if ((size_t)n * 2 > cap) {
            size_t ncap = cap ? 2 * cap : 4096;
            double *nv = ncap < SIZE_MAX / sizeof *nv ? realloc(vals, ncap * sizeof *nv)
                                                      : NULL;
            if (!nv) {
                st = knn_errorf(CASK_ERR_NOMEM, err, errlen,
                                "%s: out of memory after %lld rows", name, n);
                goto done;
            }
            vals = nv;
            cap = ncap;
        }
        vals[2 * (n - 1)] = lat;
        vals[2 * (n - 1) + 1] = lon;
    }
    if (n == 0) {
        st = knn_errorf(CASK_ERR_FORMAT, err, errlen,
                        "%s: no data rows (only a header)", name);
        goto done;
    }
    if (job->mode == CSV_SCAN) {
        idx->n = n;
        idx->ncols = ncols;
        idx->lat_col = r.lat_col;
        idx->lon_col = r.lon_col;
        idx->lat_name = strdup(r.fields[2].s ? r.fields[2].s : "");
        idx->lon_name = strdup(r.fields[3].s ? r.fields[3].s : "");
        if (!idx->lat_name || !idx->lon_name)
            st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", name);
        goto done;
    }
    if ((st = knn_points_alloc(n, 1, opts->degrees, job->alloc, out))) {
        knn_errorf(st, err, errlen, "%s: out of memory for %lld points", name, n);
        goto done;
    }
    memcpy(out->data, vals, (size_t)n * 2 * sizeof(double));

done:
    free(vals);
    if (r.fields)
        for (int i = 0; i < r.nfields_cap; i++)
            free(r.fields[i].s);
    free(r.fields);
    free(r.buf);
    return st;
}


cask_status knn_csv_read(FILE *f, const char *name, const char *prefix, size_t nprefix,
                         const knn_read_opts *opts, const knn_alloc *alloc,
                         knn_points *out, char *err, size_t errlen)
{
    csv_job job = {CSV_ALL, alloc, out, NULL, 0, 0, NULL};
    return csv_read(f, name, prefix, nprefix, opts, &job, err, errlen);
}

cask_status knn_csv_scan(FILE *f, const char *name, const knn_read_opts *opts, int64_t every,
                         knn_csv_index *idx, char *err, size_t errlen)
{
    memset(idx, 0, sizeof *idx);
    if (every <= 0)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: bad window", name);
    idx->every = every;
    csv_job job = {CSV_SCAN, NULL, NULL, idx, 0, 0, NULL};
    cask_status st = csv_read(f, name, NULL, 0, opts, &job, err, errlen);
    if (st)
        knn_csv_index_free(idx);
    return st;
}

cask_status knn_csv_read_window(FILE *f, const char *name, const knn_read_opts *opts,
                                const knn_csv_index *idx, int64_t win, int64_t rows,
                                double *dst, char *err, size_t errlen)
{
    csv_job job = {CSV_WINDOW, NULL, NULL, (knn_csv_index *)idx, win, rows, dst};
    return csv_read(f, name, NULL, 0, opts, &job, err, errlen);
}

void knn_csv_index_free(knn_csv_index *idx)
{
    free(idx->off);
    free(idx->line);
    free(idx->lat_name);
    free(idx->lon_name);
    memset(idx, 0, sizeof *idx);
}
