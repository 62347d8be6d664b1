/* io_npy.c: NumPy .npy point files in, .npy result files out.
 *
 * Format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair, a little-endian
 * header length (2 bytes in version 1, 4 in versions 2 and 3), then a Python dict literal
 * such as {'descr': '<f8', 'fortran_order': False, 'shape': (1000, 2), } padded with
 * spaces and a newline, then the raw data. Points must be float32 or float64 of shape
 * (N, 2) holding (latitude, longitude); either byte order and Fortran order are
 * converted. The data go straight into the caller's (pinned) buffer. */
#include "points.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NPY_HEADER_MAX (1u << 20)

typedef struct npy_reader {
    FILE *f;
    const char *prefix;
    size_t nprefix, ppos;
    int read_errno;
} npy_reader;

/* Reads up to n bytes; returns how many (short at end of file or on error). */
static size_t npy_read(npy_reader *r, void *dst, size_t n)
{
    size_t got = 0;
    if (r->ppos < r->nprefix) {
        got = r->nprefix - r->ppos < n ? r->nprefix - r->ppos : n;
        memcpy(dst, r->prefix + r->ppos, got);
        r->ppos += got;
    }
    while (got < n) {
        size_t k = fread((char *)dst + got, 1, n - got, r->f);
        if (k == 0) {
            if (ferror(r->f))
                r->read_errno = errno ? errno : EIO;
            break;
        }
        got += k;
    }
    return got;
}

/* Finds 'key' in the header dict and returns a pointer just past its ':', or NULL. */
static const char *npy_key(const char *h, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = h; (p = strpbrk(p, "'\"")) != NULL; p++) {
        if (strncmp(p + 1, key, klen) == 0 && p[1 + klen] == p[0]) {
            const char *q = p + 2 + klen;
            while (*q == ' ')
                q++;
            if (*q != ':')
                return NULL;
            q++;
            while (*q == ' ')
                q++;
            return q;
        }
    }
    return NULL;
}

static void bswap_n(void *data, size_t count, size_t size)
{
    unsigned char *p = data;
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Parses the magic, version and header dict (see the top of this file) into h. */
cask_status knn_npy_parse_header(FILE *f, const char *name, const char *prefix,
                                 size_t nprefix, knn_npy_header *h, char *err, size_t errlen)
{
    npy_reader r = {f, prefix, nprefix, 0, 0};
    unsigned char pre[12];
    char *hdr = NULL;
    cask_status st = CASK_OK;
    memset(h, 0, sizeof *h);

#define FAIL(code, ...) do { st = knn_errorf(code, err, errlen, __VA_ARGS__); goto done; } while (0)
#define SHORT_OR_IO(what) \
    FAIL(r.read_errno ? CASK_ERR_IO : CASK_ERR_FORMAT, "%s: %s%s%s", name, \
         r.read_errno ? "read error: " : "truncated .npy file: ", \
         r.read_errno ? strerror(r.read_errno) : "ends in the ", r.read_errno ? "" : what)

    if (npy_read(&r, pre, 8) != 8)
        SHORT_OR_IO("magic and version");
    if (memcmp(pre, "\x93NUMPY", 6) != 0)
        FAIL(CASK_ERR_FORMAT, "%s: not a .npy file (bad magic)", name);
    unsigned major = pre[6];
    size_t hlen, lenbytes;
    if (major == 1) {
        if (npy_read(&r, pre + 8, 2) != 2)
            SHORT_OR_IO("header length");
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
        lenbytes = 2;
    } else if (major == 2 || major == 3) {
        if (npy_read(&r, pre + 8, 4) != 4)
            SHORT_OR_IO("header length");
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
               (size_t)pre[11] << 24;
        lenbytes = 4;
    } else {
        FAIL(CASK_ERR_FORMAT, "%s: .npy format version %u.%u is not supported (1 to 3 are)",
             name, major, pre[7]);
    }
    if (hlen == 0 || hlen > NPY_HEADER_MAX)
        FAIL(CASK_ERR_FORMAT, "%s: .npy header length %zu is not plausible", name, hlen);
    h->data_offset = (int64_t)(8 + lenbytes + hlen);
    hdr = malloc(hlen + 1);
    if (!hdr)
        FAIL(CASK_ERR_NOMEM, "%s: out of memory", name);
    if (npy_read(&r, hdr, hlen) != hlen)
        SHORT_OR_IO("header");
    hdr[hlen] = '\0';
    for (size_t i = 0; i < hlen; i++)
        if (hdr[i] == '\0' || hdr[i] == '\n')
            hdr[i] = ' ';
    /* dtype */
    const char *d = npy_key(hdr, "descr");
    if (!d)
        FAIL(CASK_ERR_FORMAT, "%s: .npy header has no 'descr': %.200s", name, hdr);
    if (*d != '\'' && *d != '"')
        FAIL(CASK_ERR_FORMAT,
             "%s: dtype %.60s is not supported: need float32 or float64 (a plain array, "
             "not a structured one)", name, d);
    char descr[16];
    size_t dl = 0;
    for (const char *p = d + 1; *p && *p != *d && dl + 1 < sizeof descr; p++)
        descr[dl++] = *p;
    descr[dl] = '\0';
    char order = descr[0];
    const char *kind = (order == '<' || order == '>' || order == '=' || order == '|')
                           ? descr + 1 : descr;
    size_t item = 0;
    if (strcmp(kind, "f8") == 0)
        item = 8;
    else if (strcmp(kind, "f4") == 0)
        item = 4;
    else
        FAIL(CASK_ERR_FORMAT, "%s: dtype '%s' is not supported: need float32 ('<f4') or "
             "float64 ('<f8')", name, descr);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int swap = order == '<';
#else
    int swap = order == '>';
#endif

    /* order */
    const char *fo = npy_key(hdr, "fortran_order");
    if (!fo)
        FAIL(CASK_ERR_FORMAT, "%s: .npy header has no 'fortran_order': %.200s", name, hdr);
    int fortran;
    if (strncmp(fo, "True", 4) == 0)
        fortran = 1;
    else if (strncmp(fo, "False", 5) == 0)
        fortran = 0;
    else
        FAIL(CASK_ERR_FORMAT, "%s: .npy header: bad 'fortran_order': %.200s", name, hdr);

    /* shape */
    const char *s = npy_key(hdr, "shape");
    if (!s || *s != '(')
        FAIL(CASK_ERR_FORMAT, "%s: .npy header has no 'shape' tuple: %.200s", name, hdr);
    long long dims[8];
    int ndim = 0;
    const char *p = s + 1;
    for (;;) {
        while (*p == ' ')
            p++;
        if (*p == ')')
            break;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || errno)
            FAIL(CASK_ERR_FORMAT, "%s: .npy header: bad 'shape': %.200s", name, s);
        if (ndim == 8)
            FAIL(CASK_ERR_FORMAT, "%s: shape with more than 8 dimensions: need (N, 2)",
                 name);
        dims[ndim++] = v;
        p = end;
        if (*p == 'L')
            p++;
        while (*p == ' ')
            p++;
        if (*p == ',')
            p++;
        else if (*p != ')')
            FAIL(CASK_ERR_FORMAT, "%s: .npy header: bad 'shape': %.200s", name, s);
    }
    if (ndim != 2 || dims[1] != 2) {
        char shape[128];
        size_t u = 0;
        shape[0] = '\0';
        for (int i = 0; i < ndim && u < sizeof shape; i++)
            u += (size_t)snprintf(shape + u, sizeof shape - u, "%s%lld", i ? ", " : "",
                                  dims[i]);
        FAIL(CASK_ERR_FORMAT,
             "%s: shape (%s%s) is not supported: need (N, 2), columns latitude and "
             "longitude", name, shape, ndim == 1 ? "," : "");
    }
    h->n = dims[0];
    h->item = item;
    h->fortran = fortran;
    h->swap = swap;
    if (h->n == 0)
        FAIL(CASK_ERR_FORMAT, "%s: no data rows (shape (0, 2))", name);
done:
    free(hdr);
    return st;
#undef FAIL
#undef SHORT_OR_IO
}

void knn_npy_fix_rows(void *dst, const void *tmp, int64_t rows, int64_t col_stride,
                      size_t item, int swap, int fortran)
{
    size_t count = (size_t)rows * 2;
    if (fortran) { /* columns (all latitudes, then all longitudes) -> interleaved rows */
        for (int64_t i = 0; i < rows; i++) {
            if (item == 8) {
                ((double *)dst)[2 * i] = ((const double *)tmp)[i];
                ((double *)dst)[2 * i + 1] = ((const double *)tmp)[col_stride + i];
            } else {
                ((float *)dst)[2 * i] = ((const float *)tmp)[i];
                ((float *)dst)[2 * i + 1] = ((const float *)tmp)[col_stride + i];
            }
        }
    }
    if (swap)
        bswap_n(dst, count, item);
}

cask_status knn_npy_check_rows(const char *name, knn_points *p, int64_t base,
                               const knn_read_opts *opts, char *err, size_t errlen)
{
    for (int64_t i = 0; i < p->n; i++) {
        double lat, lon, lon0;
        char why[160];
        knn_points_get(p, i, &lat, &lon);
        lon0 = lon;
        int bad = knn_point_check(lat, &lon, opts->degrees, !p->f64, opts->wrap, why,
                                  sizeof why);
        if (bad)
            return knn_errorf(CASK_ERR_FORMAT, err, errlen,
                              "%s: row %lld (index %lld), column %d '%s': %s", name,
                              (long long)(base + i + 1), (long long)(base + i), bad,
                              bad == 1 ? "lat" : "lon", why);
        if (lon != lon0) {
            if (p->f64)
                ((double *)p->data)[2 * i + 1] = lon;
            else
                ((float *)p->data)[2 * i + 1] = (float)lon;
        }
    }
    return CASK_OK;
}

cask_status knn_npy_read(FILE *f, const char *name, const char *prefix, size_t nprefix,
                         const knn_read_opts *opts, const knn_alloc *alloc,
                         knn_points *out, char *err, size_t errlen)
{
    knn_npy_header h;
    char *tmp = NULL;
    memset(out, 0, sizeof *out);
    cask_status st = knn_npy_parse_header(f, name, prefix, nprefix, &h, err, errlen);
    if (st)
        return st;
    /* the header parser consumed the prefix and the header; the data follow in f */
    npy_reader r = {f, NULL, 0, 0, 0};
    long long n = h.n;
    size_t item = h.item;
#define FAIL(code, ...) do { st = knn_errorf(code, err, errlen, __VA_ARGS__); goto done; } while (0)
    if ((st = knn_points_alloc(n, item == 8, opts->degrees, alloc, out)))
        FAIL(st, "%s: cannot allocate %lld points", name, n);

    /* data */
    size_t count = (size_t)n * 2, bytes = count * item;
    void *dst = out->data;
    if (h.fortran) {
        tmp = malloc(bytes);
        if (!tmp)
            FAIL(CASK_ERR_NOMEM, "%s: out of memory", name);
        dst = tmp;
    }
    size_t got = npy_read(&r, dst, bytes);
    if (got != bytes) {
        if (r.read_errno)
            FAIL(CASK_ERR_IO, "%s: read error: %s", name, strerror(r.read_errno));
        FAIL(CASK_ERR_FORMAT,
             "%s: truncated .npy file: the header says %lld rows (%zu bytes of data) but "
             "only %zu bytes follow", name, n, bytes, got);
    }
    knn_npy_fix_rows(out->data, tmp, n, n, item, h.swap, h.fortran);
    st = knn_npy_check_rows(name, out, 0, opts, err, errlen);
#undef FAIL

done:
    if (st)
        knn_points_free(out);
    free(tmp);
    return st;
}

size_t knn_npy_result_header(char *buf, int64_t n, int k)
{
    int hl = k > 1 ? snprintf(buf + 10, KNN_NPY_HEADER_MAX - 10,
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, %d, 2), }",
                              (long long)n, k)
                   : snprintf(buf + 10, KNN_NPY_HEADER_MAX - 10,
                              "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, 2), }",
                              (long long)n);
    size_t total = 10 + (size_t)hl + 1;        /* + the closing newline */
    size_t padded = (total + 63) / 64 * 64;    /* data start aligned to 64 bytes */
    memset(buf + 10 + hl, ' ', padded - total);
    buf[padded - 1] = '\n';
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((padded - 10) & 0xff);
    buf[9] = (char)((padded - 10) >> 8);
    return padded;
}

void knn_npy_pack(double *buf, const int32_t *index, const float *dist, int64_t nvals)
{
    for (int64_t j = 0; j < nvals; j++) {
        double v[2] = {(double)index[j], (double)dist[j]};
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        bswap_n(v, 2, 8);
#endif
        buf[2 * j] = v[0];
        buf[2 * j + 1] = v[1];
    }
}

cask_status knn_npy_write_header(FILE *f, const char *name, int64_t n, char *err,
                                 size_t errlen)
{
    char hdr[KNN_NPY_HEADER_MAX];
    size_t len = knn_npy_result_header(hdr, n, 1);
    if (fwrite(hdr, 1, len, f) != len)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(errno));
    return CASK_OK;
}

cask_status knn_npy_write_rows(FILE *f, const char *name, const int32_t *index,
                               const float *dist, int64_t n, char *err, size_t errlen)
{
    enum { ROWS = 1 << 13 };
    double buf[2 * ROWS];
    for (int64_t i = 0; i < n; i += ROWS) {
        int64_t k = n - i < ROWS ? n - i : ROWS;
        knn_npy_pack(buf, index + i, dist + i, k);
        if (fwrite(buf, sizeof(double), (size_t)(2 * k), f) != (size_t)(2 * k))
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                              strerror(errno));
    }
    return CASK_OK;
}

cask_status knn_npy_write(FILE *f, const char *name, const int32_t *index,
                          const float *dist, int64_t n, char *err, size_t errlen)
{
    cask_status st = knn_npy_write_header(f, name, n, err, errlen);
    return st ? st : knn_npy_write_rows(f, name, index, dist, n, err, errlen);
}
