/* kout.c: result files of cask-knn --k K > 1 (kout.h). CSV: one row per (observation,
 * rank); .npy: an (N, K, 2) float64 array. */
#include "kout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

cask_status knn_kcsv_write_rows(FILE *f, const char *name, const int32_t *index,
                                const float *dist, int64_t first, int64_t n, int k, char *err,
                                size_t errlen)
{
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++)
        for (int r = 0; r < k && !bad; r++)
            /* 9 significant digits: the float reads back exactly */
            bad = fprintf(f, "%lld,%d,%d,%.9g\n", (long long)(first + i), r + 1,
                          (int)index[i * k + r], (double)dist[i * k + r]) < 0;
    if (bad)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(errno));
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
    char hdr[160];
    int hl = snprintf(hdr + 10, sizeof hdr - 10,
                      "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, %d, 2), }",
                      (long long)n, k);
    size_t total = 10 + (size_t)hl + 1;
    size_t padded = (total + 63) / 64 * 64;
    memset(hdr + 10 + hl, ' ', padded - total);
    hdr[padded - 1] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)((padded - 10) & 0xff);
    hdr[9] = (char)((padded - 10) >> 8);
    if (fwrite(hdr, 1, padded, f) != padded)
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
        for (int64_t j = 0; j < c; j++) {
            buf[2 * j] = (double)index[i + j];
            buf[2 * j + 1] = (double)dist[i + j];
        }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (int64_t j = 0; j < 2 * c; j++)
            buf[j] = __builtin_bswap64(buf[j]);
#endif
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
