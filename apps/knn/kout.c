/* kout.c: result files of cask-knn --k K > 1 (kout.h). CSV: one row per (observation,
 * rank); .npy: an (N, K, 2) float64 array. */
#include "kout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t knn_kcsv_format(char *buf, int64_t first, const int32_t *index, const float *dist,
                       int64_t n, int k)
{
    char *p = buf;
    for (int64_t i = 0; i < n; i++)
        for (int r = 0; r < k; r++)
            /* 9 significant digits: the float reads back exactly */
            p += snprintf(p, KNN_CSV_ROW_MAX, "%lld,%d,%d,%.9g\n", (long long)(first + i), r + 1,
                          (int)index[i * k + r], (double)dist[i * k + r]);
    return (size_t)(p - buf);
}

cask_status knn_kcsv_write_rows(FILE *f, const char *name, const int32_t *index,
                                const float *dist, int64_t first, int64_t n, int k, char *err,
                                size_t errlen)
{
    enum { ROWS = 1 << 12 };
    char *buf = malloc((size_t)ROWS * (size_t)k * KNN_CSV_ROW_MAX);
    if (!buf)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", name);
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i += ROWS) {
        int64_t c = n - i < ROWS ? n - i : ROWS;
        size_t len = knn_kcsv_format(buf, first + i, index + i * k, dist + i * k, c, k);
        bad = fwrite(buf, 1, len, f) != len;
    }
    int e = errno;
    free(buf);
    if (bad)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name, strerror(e));
    return CASK_OK;
}

cask_status knn_kcsv_write(FILE *f, const char *name, const int32_t *index, const float *dist,
                           int64_t n, int k, char *err, size_t errlen)
{
    if (fputs(KNN_KCSV_HEADER, f) == EOF)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(errno));
    return knn_kcsv_write_rows(f, name, index, dist, 0, n, k, err, errlen);
}

cask_status knn_knpy_write_header(FILE *f, const char *name, int64_t n, int k, char *err,
                                  size_t errlen)
{
    char hdr[KNN_NPY_HEADER_MAX];
    size_t len = knn_npy_result_header(hdr, n, k);
    if (fwrite(hdr, 1, len, f) != len)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(errno));
    return CASK_OK;
}

cask_status knn_knpy_write_rows(FILE *f, const char *name, const int32_t *index,
                                const float *dist, int64_t n, int k, char *err, size_t errlen)
{
    enum { VALS = 1 << 14 };
    double buf[2 * VALS];
    int64_t total_vals = n * k;
    for (int64_t i = 0; i < total_vals; i += VALS) {
        int64_t c = total_vals - i < VALS ? total_vals - i : VALS;
        knn_npy_pack(buf, index + i, dist + i, c);
        if (fwrite(buf, sizeof(double), (size_t)(2 * c), f) != (size_t)(2 * c))
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                              strerror(errno));
    }
    return CASK_OK;
}

cask_status knn_knpy_write(FILE *f, const char *name, const int32_t *index, const float *dist,
                           int64_t n, int k, char *err, size_t errlen)
{
    cask_status st = knn_knpy_write_header(f, name, n, k, err, errlen);
    return st ? st : knn_knpy_write_rows(f, name, index, dist, n, k, err, errlen);
}
