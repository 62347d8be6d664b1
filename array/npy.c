/* array/npy.c: the .npy file format (NumPy's, versions 1-3): parsing a header to make
 * a lazily read array, and writing a header before chunks are written in parallel. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "array/array_internal.h"

static const char *const descr[] = {"f4", "f8", "i4", "i8", "u4"};

/* The value after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p = strchr(p + strlen(pat), ':');
    if (!p) return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static cask_status parse_header(cask_array_ctx *ctx, const char *path, const char *h,
                                cask_dtype *dt, int *ndim, int64_t *shape)
{
    const char *d = dict_value(h, "descr");
    if (!d || (*d != '\'' && *d != '"'))
        return arr_error(ctx, CASK_ERR_FORMAT, "%s: no descr in header", path);
    char endian = d[1];
    int found = -1;
    for (int i = 0; i < CASK_DTYPE_COUNT_; i++)
        if (!strncmp(d + 2, descr[i], 2) && d[4] == d[0]) found = i;
    if (found < 0 || (endian != '<' && endian != '=' && endian != '|'))
        return arr_error(ctx, CASK_ERR_UNSUPPORTED,
                         "%s: dtype %.8s not supported (little-endian f4 f8 i4 i8 u4)", path, d);
    *dt = (cask_dtype)found;
    const char *f = dict_value(h, "fortran_order");
    if (!f) return arr_error(ctx, CASK_ERR_FORMAT, "%s: no fortran_order in header", path);
    if (!strncmp(f, "True", 4))
        return arr_error(ctx, CASK_ERR_UNSUPPORTED, "%s: Fortran order not supported", path);
    const char *s = dict_value(h, "shape");
    if (!s || *s != '(') return arr_error(ctx, CASK_ERR_FORMAT, "%s: no shape in header", path);
    s++;
    int nd = 0;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0)
            return arr_error(ctx, CASK_ERR_FORMAT, "%s: bad shape in header", path);
        if (nd == MAXD)
            return arr_error(ctx, CASK_ERR_UNSUPPORTED, "%s: more than %d dimensions", path, MAXD);
        shape[nd++] = v;
        s = end;
    }
    *ndim = nd;
    return CASK_OK;
}

cask_status cask_array_from_npy(cask_array_ctx *ctx, const char *path, const int64_t *chunks,
                                cask_array **out)
{
    if (!ctx || !path || !out) return CASK_ERR_INVALID;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return arr_error(ctx, CASK_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    unsigned char pre[12];
    char *hdr = NULL;
    cask_status st = CASK_OK;
    struct stat sb;
    if (fstat(fd, &sb) || pread(fd, pre, sizeof pre, 0) != (ssize_t)sizeof pre ||
        memcmp(pre, "\x93NUMPY", 6)) {
        st = arr_error(ctx, CASK_ERR_FORMAT, "%s is not a .npy file", path);
        goto out;
    }
    int major = pre[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        off = 12;
    } else {
        st = arr_error(ctx, CASK_ERR_UNSUPPORTED, "%s: .npy version %d", path, major);
        goto out;
    }
    if (hlen > (1u << 24) || !(hdr = calloc(1, hlen + 1)) ||
        pread(fd, hdr, hlen, (off_t)off) != (ssize_t)hlen) {
        st = arr_error(ctx, CASK_ERR_FORMAT, "%s: truncated header", path);
        goto out;
    }
    cask_dtype dt = CASK_FLOAT32;
    int nd = 0;
    int64_t shape[MAXD];
    if ((st = parse_header(ctx, path, hdr, &dt, &nd, shape))) goto out;
    int64_t size = 1;
    for (int k = 0; k < nd; k++) size *= shape[k];
    if ((int64_t)sb.st_size < (int64_t)(off + hlen) + size * (int64_t)cask_dtype_size(dt)) {
        st = arr_error(ctx, CASK_ERR_FORMAT, "%s: file shorter than its shape says", path);
        goto out;
    }
    cask_array *n;
    if ((st = node_new(ctx, NK_NPY, dt, nd, shape, chunks, &n))) goto out;
    n->p.data_offset = (int64_t)(off + hlen);
    n->blob_len = strlen(path) + 1;
    n->blob = malloc(n->blob_len);
    if (!n->blob) {
        node_discard(n);
        st = arr_error(ctx, CASK_ERR_NOMEM, "out of memory");
        goto out;
    }
    memcpy(n->blob, path, n->blob_len);
    *out = node_intern(n);
out:
    free(hdr);
    close(fd);
    return st;
}

size_t npy_header(char *buf, cask_dtype dt, int ndim, const int64_t *shape)
{
    char dict[256], sh[128] = "(";
    for (int k = 0; k < ndim; k++) {
        size_t l = strlen(sh);
        snprintf(sh + l, sizeof sh - l, "%s%lld", k ? ", " : "", (long long)shape[k]);
    }
    strcat(sh, ndim == 1 ? ",)" : ")");
    int dl = snprintf(dict, sizeof dict, "{'descr': '<%s', 'fortran_order': False, 'shape': %s, }",
                      descr[dt], sh);
    size_t total = 10 + (size_t)dl + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)dl + pad + 1;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)dl);
    memset(buf + 10 + dl, ' ', pad);
    buf[10 + hlen - 1] = '\n';
    return 10 + hlen;
}

cask_status npy_write_header(const char *path, cask_dtype dt, int ndim, const int64_t *shape,
                             int64_t *data_offset, char *err, size_t errlen)
{
    char buf[NPY_HEADER_MAX];
    size_t len = npy_header(buf, dt, ndim, shape);
    int64_t size = 1;
    for (int k = 0; k < ndim; k++) size *= shape[k];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cask_status st = CASK_OK;
    off_t end = (off_t)len + (off_t)size * (off_t)cask_dtype_size(dt);
    if (fd < 0 || write(fd, buf, len) != (ssize_t)len || ftruncate(fd, end)) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        st = CASK_ERR_IO;
    }
    if (fd >= 0) close(fd);
    *data_offset = (int64_t)len;
    return st;
}
