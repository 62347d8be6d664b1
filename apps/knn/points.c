/* points.c: what the CSV and .npy halves of cask-knn's IO layer share: point buffers,
 * the range check every coordinate goes through, the format sniffing of
 * knn_points_read, and all-or-nothing output files (write NAME.tmp.PID, then rename). */
#include "points.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

cask_status knn_errorf(cask_status st, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

cask_status knn_points_alloc(int64_t n, int f64, int degrees, const knn_alloc *alloc,
                             knn_points *out)
{
    memset(out, 0, sizeof *out);
    size_t elem = f64 ? sizeof(double) : sizeof(float);
    if (n <= 0 || (uint64_t)n > SIZE_MAX / (2 * elem))
        return CASK_ERR_INVALID;
    size_t bytes = (size_t)n * 2 * elem;
    void *p = alloc ? alloc->alloc(alloc->ctx, bytes) : malloc(bytes);
    if (!p)
        return CASK_ERR_NOMEM;
    out->data = p;
    out->n = n;
    out->f64 = f64;
    out->degrees = degrees;
    out->alloc = alloc;
    return CASK_OK;
}

void knn_points_free(knn_points *p)
{
    if (!p)
        return;
    if (p->data) {
        if (p->alloc)
            p->alloc->free(p->alloc->ctx, p->data);
        else
            free(p->data);
    }
    memset(p, 0, sizeof *p);
}

int knn_point_check(double lat, double *lon, int degrees, int f32, int wrap, char *why,
                    size_t whylen)
{
    /* A float holding pi/2 or pi rounds up, just past the double value: accept it. */
    double lat_max = degrees ? 90.0 : (f32 ? (double)(float)M_PI_2 : M_PI_2);
    double lon_max = degrees ? 180.0 : (f32 ? (double)(float)M_PI : M_PI);
    const char *unit = degrees ? "" : " rad";
    const char *lat_range = degrees ? "[-90, 90]" : "[-pi/2, pi/2]";
    const char *lon_range = degrees ? "[-180, 180]" : "[-pi, pi]";

    if (isnan(lat)) {
        snprintf(why, whylen, "latitude is NaN");
        return 1;
    }
    if (isinf(lat)) {
        snprintf(why, whylen, "latitude is infinite");
        return 1;
    }
    if (isnan(*lon)) {
        snprintf(why, whylen, "longitude is NaN");
        return 2;
    }
    if (isinf(*lon)) {
        snprintf(why, whylen, "longitude is infinite");
        return 2;
    }
    if (fabs(lat) > lat_max) {
        snprintf(why, whylen, "latitude %.10g%s is outside %s", lat, unit, lat_range);
        return 1;
    }
    if (fabs(*lon) > lon_max) {
        if (!wrap) {
            snprintf(why, whylen, "longitude %.10g%s is outside %s (use --wrap to wrap it)",
                     *lon, unit, lon_range);
            return 2;
        }
        double period = degrees ? 360.0 : 2 * M_PI, half = period / 2;
        double w = fmod(*lon + half, period);
        if (w < 0)
            w += period;
        *lon = w - half;
    }
    return 0;
}

int knn_path_is_npy(const char *name)
{
    size_t len = strlen(name);
    return len >= 4 && strcasecmp(name + len - 4, ".npy") == 0;
}

cask_status knn_points_read(const char *name, const knn_read_opts *opts,
                            const knn_alloc *alloc, knn_points *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(name, "rb");
    if (!f)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot open: %s", name,
                          strerror(errno));
    /* Sniff the magic through the stream itself (no seek), so pipes work too. */
    char prefix[6];
    size_t got = fread(prefix, 1, sizeof prefix, f);
    if (got < sizeof prefix && ferror(f)) {
        int e = errno;
        fclose(f);
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot read: %s", name,
                          strerror(e));
    }
    cask_status st;
    if (got == 6 && memcmp(prefix, "\x93NUMPY", 6) == 0)
        st = knn_npy_read(f, name, prefix, got, opts, alloc, out, err, errlen);
    else if (knn_path_is_npy(name))
        st = knn_errorf(CASK_ERR_FORMAT, err, errlen,
                        "%s: not a .npy file (it does not start with the \\x93NUMPY magic)",
                        name);
    else
        st = knn_csv_read(f, name, prefix, got, opts, alloc, out, err, errlen);
    fclose(f);
    return st;
}

cask_status knn_outfile_open(knn_outfile *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    size_t len = strlen(path) + 32;
    o->path = strdup(path);
    o->tmp_path = malloc(len);
    if (!o->path || !o->tmp_path) {
        knn_outfile_abort(o);
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", path);
    }
    snprintf(o->tmp_path, len, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(o->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        free(o->tmp_path);
        o->tmp_path = NULL; /* not ours: do not remove it */
        knn_outfile_abort(o);
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot create %s.tmp.%ld: %s",
                          path, path, (long)getpid(), strerror(e));
    }
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        knn_outfile_abort(o);
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: %s", path, strerror(e));
    }
    return CASK_OK;
}

cask_status knn_fclose_checked(FILE *f, const char *name, char *err, size_t errlen)
{
    int bad = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name, strerror(e));
    return CASK_OK;
}

/* Durability: the data reach the disk (fdatasync) before the rename makes the file
 * appear, and the rename itself does (fsync of the folder) before commit returns. A
 * crash then leaves the old FILE or the whole new one, never a short one under its name.
 * A file system that cannot sync (EINVAL: a pipe, some FUSE) is not an error. */
static int sync_data(FILE *f)
{
    if (fflush(f) != 0)
        return -1;
    return fdatasync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS ? -1 : 0;
}

static void sync_folder_of(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);   /* best effort: the data themselves are already synced */
        close(fd);
    }
    free(dir);
}

cask_status knn_outfile_commit(knn_outfile *o, char *err, size_t errlen)
{
    if (sync_data(o->f) != 0) {
        int e = errno;
        knn_errorf(CASK_ERR_IO, err, errlen, "%s: fdatasync of %s failed: %s", o->path,
                   o->tmp_path, strerror(e));
        knn_outfile_abort(o);
        return CASK_ERR_IO;
    }
    cask_status st = knn_fclose_checked(o->f, o->path, err, errlen);
    o->f = NULL;
    if (st) {
        knn_outfile_abort(o);
        return st;
    }
    if (rename(o->tmp_path, o->path) != 0) {
        int e = errno;
        knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot rename %s to it: %s", o->path,
                   o->tmp_path, strerror(e));
        knn_outfile_abort(o);
        return CASK_ERR_IO;
    }
    sync_folder_of(o->path);
    free(o->tmp_path);
    free(o->path);
    memset(o, 0, sizeof *o);
    return CASK_OK;
}

void knn_outfile_abort(knn_outfile *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp_path)
        unlink(o->tmp_path);
    free(o->tmp_path);
    free(o->path);
    memset(o, 0, sizeof *o);
}
