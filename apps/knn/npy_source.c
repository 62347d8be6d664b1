/* npy_source.c: rows of a .npy point file read by offset (pread), a window at a time,
 * so that a file far larger than memory can be searched (see stream.h). The header is
 * parsed and the values checked exactly as knn_npy_read does, with the same messages. */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int knn_file_has_npy_magic(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char magic[6];
    int yes = fread(magic, 1, sizeof magic, f) == sizeof magic &&
              memcmp(magic, "\x93NUMPY", 6) == 0;
    fclose(f);
    return yes;
}

cask_status knn_npy_source_open(const char *name, const knn_read_opts *opts,
                                knn_npy_source *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    FILE *f = fopen(name, "rb");
    if (!f)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot open: %s", name,
                          strerror(errno));
    cask_status st = knn_npy_parse_header(f, name, NULL, 0, &s->h, err, errlen);
    if (st) {
        fclose(f);
        return st;
    }
    struct stat sb;
    int64_t need = s->h.data_offset + s->h.n * 2 * (int64_t)s->h.item;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return knn_errorf(CASK_ERR_IO, err, errlen,
                          "%s: not a regular file: cannot be read by offset", name);
    }
    if ((int64_t)sb.st_size < need) {
        fclose(f);
        return knn_errorf(CASK_ERR_FORMAT, err, errlen,
                          "%s: truncated .npy file: the header says %lld rows (%lld bytes of "
                          "data) but only %lld bytes follow", name, (long long)s->h.n,
                          (long long)(need - s->h.data_offset),
                          (long long)(sb.st_size - s->h.data_offset));
    }
    s->fd = dup(fileno(f));
    fclose(f);
    if (s->fd < 0)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: %s", name, strerror(errno));
    s->name = name;
    s->opts = *opts;
    return CASK_OK;
}

/* Reads exactly n bytes at off. */
static int pread_all(int fd, void *dst, size_t n, int64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)dst + got, n - got, (off_t)(off + (int64_t)got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;   /* shorter than at open: the file changed */
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

cask_status knn_npy_source_read(knn_npy_source *s, int64_t first, int64_t n,
                                knn_points *dst, char *err, size_t errlen)
{
    size_t item = s->h.item;
    if (first < 0 || n <= 0 || first + n > s->h.n || dst->f64 != (item == 8))
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: bad row range", s->name);
    dst->n = n;
    dst->degrees = s->opts.degrees;
    if (s->h.fortran) {
        char *tmp = malloc((size_t)n * 2 * item);
        if (!tmp)
            return knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", s->name);
        int bad = pread_all(s->fd, tmp, (size_t)n * item, s->h.data_offset + first * (int64_t)item) ||
                  pread_all(s->fd, tmp + (size_t)n * item, (size_t)n * item,
                            s->h.data_offset + (s->h.n + first) * (int64_t)item);
        int e = errno;
        if (!bad)
            knn_npy_fix_rows(dst->data, tmp, n, n, item, s->h.swap, 1);
        free(tmp);
        if (bad)
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: read error: %s", s->name,
                              strerror(e));
    } else {
        if (pread_all(s->fd, dst->data, (size_t)n * 2 * item,
                      s->h.data_offset + first * 2 * (int64_t)item))
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: read error: %s", s->name,
                              strerror(errno));
        knn_npy_fix_rows(dst->data, NULL, n, 0, item, s->h.swap, 0);
    }
    return knn_npy_check_rows(s->name, dst, first, &s->opts, err, errlen);
}

void knn_npy_source_close(knn_npy_source *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}
