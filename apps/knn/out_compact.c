/* out_compact.c: see out_compact.h. */
#include "out_compact.h"

#include <errno.h>
#include <string.h>

int knn_out_format_parse(const char *s, knn_out_format *f)
{
    if (!strcmp(s, "compact"))
        *f = KNN_OUT_COMPACT;
    else if (!strcmp(s, "f64"))
        *f = KNN_OUT_F64;
    else
        return -1;
    return 0;
}

size_t knn_out_row_bytes(knn_out_format f, int k)
{
    size_t K = k > 1 ? (size_t)k : 1;
    return K * (f == KNN_OUT_COMPACT ? 8 : 16);
}

size_t knn_out_npy_header(char *buf, knn_out_format f, int64_t n, int k)
{
    if (f != KNN_OUT_COMPACT)
        return knn_npy_result_header(buf, n, k);
    static const char descr[] = "[('index', '<i4'), ('dist', '<f4')]";
    int hl = k > 1 ? snprintf(buf + 10, KNN_NPY_HEADER_MAX - 10,
                              "{'descr': %s, 'fortran_order': False, 'shape': (%lld, %d), }",
                              descr, (long long)n, k)
                   : snprintf(buf + 10, KNN_NPY_HEADER_MAX - 10,
                              "{'descr': %s, 'fortran_order': False, 'shape': (%lld,), }",
                              descr, (long long)n);
    size_t total = 10 + (size_t)hl + 1;        /* + the closing newline */
    size_t padded = (total + 63) / 64 * 64;    /* data start aligned to 64 bytes */
    memset(buf + 10 + hl, ' ', padded - total);
    buf[padded - 1] = '\n';
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((padded - 10) & 0xff);
    buf[9] = (char)((padded - 10) >> 8);
    return padded;
}

void knn_compact_pack(void *buf, const int32_t *index, const float *dist, int64_t nvals)
{
    unsigned char *o = buf;
    for (int64_t j = 0; j < nvals; j++, o += 8) {
        uint32_t i, d;
        memcpy(&i, &index[j], 4);
        memcpy(&d, &dist[j], 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        i = __builtin_bswap32(i);
        d = __builtin_bswap32(d);
#endif
        memcpy(o, &i, 4);
        memcpy(o + 4, &d, 4);
    }
}

cask_status knn_compact_write(FILE *f, const char *name, const int32_t *index,
                              const float *dist, int64_t n, int k, char *err, size_t errlen)
{
    char hdr[KNN_NPY_HEADER_MAX];
    size_t len = knn_out_npy_header(hdr, KNN_OUT_COMPACT, n, k);
    if (fwrite(hdr, 1, len, f) != len)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(errno));
    enum { VALS = 1 << 14 };
    unsigned char buf[8 * VALS];   /* 128 KiB, as knn_knpy_write_rows's */
    int64_t total = n * (k > 1 ? k : 1);
    for (int64_t i = 0; i < total; i += VALS) {
        int64_t c = total - i < VALS ? total - i : VALS;
        knn_compact_pack(buf, index + i, dist + i, c);
        if (fwrite(buf, 8, (size_t)c, f) != (size_t)c)
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                              strerror(errno));
    }
    return CASK_OK;
}
