/* knn_out.c: see knn_out.h. */
#include "knn_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kout.h"

cask_status knn_sink_write(const knn_sink *s, const void *buf, size_t len, int64_t off,
                           char *err, size_t errlen)
{
    if (s->file)
        return cask_dist_file_pwrite(s->file, buf, len, (uint64_t)off, err, errlen);
    for (size_t done = 0; done < len;) {
        ssize_t put = pwrite(s->fd, (const char *)buf + done, len - done, (off_t)off + (off_t)done);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", s->name,
                              strerror(put < 0 ? errno : EIO));
        done += (size_t)put;
    }
    return CASK_OK;
}

cask_status knn_rows_put(const knn_sink *s, knn_out_format f, const int32_t *index,
                         const float *dist, int64_t first, int64_t n, int k, int64_t data_off,
                         char *err, size_t errlen)
{
    enum { BLOCK = 1 << 16 };   /* results a write: 2 MiB (f64), 512 KiB (compact) */
    const int64_t K = k > 1 ? k : 1, total = n * K;
    const size_t vb = knn_out_row_bytes(f, 1);   /* bytes a result */
    void *buf = malloc((size_t)(total < BLOCK ? total : BLOCK) * vb);
    if (!buf)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", s->name);
    cask_status st = CASK_OK;
    for (int64_t i = 0; i < total && !st; i += BLOCK) {
        int64_t c = total - i < BLOCK ? total - i : BLOCK;
        if (f == KNN_OUT_COMPACT)
            knn_compact_pack(buf, index + i, dist + i, c);
        else
            knn_npy_pack(buf, index + i, dist + i, c);
        st = knn_sink_write(s, buf, (size_t)c * vb, data_off + (first * K + i) * (int64_t)vb,
                            err, errlen);
    }
    free(buf);
    return st;
}

cask_status knn_npy_put_rows(const knn_sink *s, const int32_t *index, const float *dist,
                             int64_t first, int64_t n, int k, int64_t data_off, char *err,
                             size_t errlen)
{
    return knn_rows_put(s, KNN_OUT_F64, index, dist, first, n, k, data_off, err, errlen);
}

size_t knn_out_csv_format(char *buf, int64_t first, const int32_t *index, const float *dist,
                          int64_t n, int k)
{
    return k > 1 ? knn_kcsv_format(buf, first, index, dist, n, k)
                 : knn_csv_format(buf, first, index, dist, n);
}

size_t knn_out_header(char *buf, int npy, int64_t n, int k)
{
    if (npy)
        return knn_npy_result_header(buf, n, k);
    const char *h = k > 1 ? KNN_KCSV_HEADER : KNN_CSV_HEADER;
    size_t len = strlen(h);
    memcpy(buf, h, len);
    return len;
}

cask_status knn_out_open(cask_dist *dist, const char *prog, const char *path, int mode,
                         knn_out *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->rank = cask_dist_rank(dist);
    o->npy = knn_path_is_npy(path);
    cask_status st = cask_dist_file_open(dist, path, (cask_dist_write_mode)mode, &o->file);
    if (st)
        return knn_errorf(st, err, errlen, "%s", cask_dist_error(dist));
    o->in_place = cask_dist_file_in_place(o->file);
    const char *note = cask_dist_file_note(o->file);
    if (o->rank == 0 && note[0])
        fprintf(stderr, "%s: %s: written by rank 0, the rows gathered to it: %s\n", prog, path,
                note);
    return CASK_OK;
}

void knn_out_rows(knn_out *o, int64_t n, int k)
{
    char hdr[KNN_NPY_HEADER_MAX];
    o->n = n;
    o->k = k;
    o->data_off = (int64_t)knn_out_header(hdr, o->npy, n, k);
}

FILE *knn_out_stream(knn_out *o, char *err, size_t errlen)
{
    int fd = dup(cask_dist_file_fd(o->file));
    if (fd >= 0 && (o->f = fdopen(fd, "wb")))
        return o->f;
    knn_errorf(CASK_ERR_IO, err, errlen, "%s: %s", cask_dist_file_temp_path(o->file),
               strerror(errno));
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* What unit u holds: rows, or (past the chunks) the header. */
static void unit_name(const knn_out *o, int64_t nunits, int64_t chunk, int64_t u, char *buf,
                      size_t len)
{
    int64_t r0, r1;
    if (chunk > 0) {
        r0 = u * chunk;
        r1 = r0 + chunk < o->n ? r0 + chunk : o->n;
    } else {
        r0 = o->n * u / nunits;
        r1 = o->n * (u + 1) / nunits;
    }
    if (r0 >= o->n)
        snprintf(buf, len, "the header");
    else
        snprintf(buf, len, "rows %lld-%lld", (long long)r0, (long long)r1 - 1);
}

cask_status knn_out_commit(knn_out *o, int ok, int64_t nunits, int64_t chunk, int64_t size,
                           char *err, size_t errlen)
{
    if (o->f) {   /* the stream's bytes first */
        if (knn_fclose_checked(o->f, cask_dist_file_temp_path(o->file), err, errlen))
            ok = 0;
        o->f = NULL;
    }
    char keep[KNN_ERRLEN] = "";
    if (!ok)
        snprintf(keep, sizeof keep, "%s", err);
    cask_status st = cask_dist_file_commit(o->file, ok, nunits, size);
    if (!st)
        return CASK_OK;
    if (cask_dist_file_missing(o->file, 0) < 0) {   /* a veto, a failed rename or exchange */
        if (keep[0])
            knn_errorf(st, err, errlen, "%s", keep);
        else
            knn_errorf(st, err, errlen, "%s", cask_dist_file_error(o->file));
        return st;
    }
    /* rows no rank reported written: named by their chunks, then the file's reason */
    char rows[256] = "";
    int shown = 0;
    for (int64_t u = cask_dist_file_missing(o->file, 0); u >= 0;
         u = cask_dist_file_missing(o->file, u + 1)) {
        size_t l = strlen(rows);
        if (shown++ == 8) {
            snprintf(rows + l, sizeof rows - l, ", ...");
            break;
        }
        char what[64];
        unit_name(o, nunits, chunk, u, what, sizeof what);
        snprintf(rows + l, sizeof rows - l, "%s%s", l ? ", " : "", what);
    }
    return knn_errorf(st, err, errlen, "%s of --out written by no rank: %s", rows,
                      cask_dist_file_error(o->file));
}

void knn_out_close(knn_out *o)
{
    if (o->f)
        fclose(o->f);
    cask_dist_file_close(o->file);
    memset(o, 0, sizeof *o);
}
