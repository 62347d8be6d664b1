/* csv_write.c: CSV result files (see points.h): rows "obs,ref_index,distance" with the
 * distance in 9 significant digits. */
#include "number.h"
#include "points.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- results ---- */

static char *put_int(char *p, long long v)
{
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    if (v < 0)
        *p++ = '-';
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n)
        *p++ = tmp[--n];
    return p;
}

size_t knn_csv_format(char *buf, int64_t first, const int32_t *index, const float *dist,
                      int64_t n)
{
    char *p = buf;
    for (int64_t i = 0; i < n; i++) {
        p = put_int(p, first + i);
        *p++ = ',';
        p = put_int(p, index[i]);
        *p++ = ',';
        /* 9 significant digits: the float reads back exactly. */
        p += snprintf(p, 24, "%.9g", (double)dist[i]);
        *p++ = '\n';
    }
    return (size_t)(p - buf);
}

cask_status knn_csv_write(FILE *f, const char *name, const int32_t *index,
                          const float *dist, int64_t n, char *err, size_t errlen)
{
    enum { ROWS = 1 << 14 };
    char *buf = malloc((size_t)ROWS * KNN_CSV_ROW_MAX);
    if (!buf)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "%s: out of memory", name);
    int bad = fputs(KNN_CSV_HEADER, f) == EOF;
    for (int64_t i = 0; i < n && !bad; i += ROWS) {
        int64_t k = n - i < ROWS ? n - i : ROWS;
        size_t len = knn_csv_format(buf, i, index + i, dist + i, k);
        bad = fwrite(buf, 1, len, f) != len;
    }
    int e = errno;
    free(buf);
    if (bad)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(e));
    return CASK_OK;
}
