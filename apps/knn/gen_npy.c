/* gen_npy.c: cask-knn-gen, writes the synthetic points of `cask-knn --generate` to a
 * .npy file, in degrees, without holding them in memory: threads generate blocks of
 * rows and write them at their offsets (pwrite). For files larger than memory:
 *
 *   cask-knn-gen --rows 2^30 --seed 1 --set obs obs.npy
 *   cask-knn-gen --rows 2^14 --seed 1 --set ref ref.npy
 *
 * Point i is knn_generate_points' point i of (seed, set), converted to degrees (float32
 * unless --f64). Exit status 0, 1 on a write error, 2 on a bad command line. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "generate.h"

enum { BLOCK = 1 << 20 };

typedef struct gen_ctx {
    int fd;
    int64_t rows, data_off;
    uint64_t seed, set;
    int f64;
    int64_t next;            /* next block to claim */
    pthread_mutex_t lock;
    int err;                 /* first errno */
} gen_ctx;

static void *gen_main(void *arg)
{
    gen_ctx *c = arg;
    size_t item = c->f64 ? 8 : 4;
    double *tmp = malloc((size_t)BLOCK * 2 * sizeof *tmp);
    char *out = malloc((size_t)BLOCK * 2 * item);
    if (!tmp || !out) {
        pthread_mutex_lock(&c->lock);
        c->err = c->err ? c->err : ENOMEM;
        pthread_mutex_unlock(&c->lock);
    }
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int64_t b = c->err || !tmp || !out ? -1 : c->next++;
        pthread_mutex_unlock(&c->lock);
        int64_t first = b * BLOCK;
        if (b < 0 || first >= c->rows)
            break;
        int64_t n = c->rows - first < BLOCK ? c->rows - first : BLOCK;
        knn_generate_points(c->seed, c->set, first, n, 1, tmp);
        for (int64_t i = 0; i < 2 * n; i++) {
            double deg = tmp[i] * (180.0 / M_PI);
            if (c->f64)
                ((double *)out)[i] = deg;
            else
                ((float *)out)[i] = (float)deg;
        }
        size_t len = (size_t)n * 2 * item, done = 0;
        off_t off = (off_t)(c->data_off + first * 2 * (int64_t)item);
        while (done < len) {
            ssize_t k = pwrite(c->fd, out + done, len - done, off + (off_t)done);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                pthread_mutex_lock(&c->lock);
                c->err = c->err ? c->err : (k < 0 ? errno : EIO);
                pthread_mutex_unlock(&c->lock);
                break;
            }
            done += (size_t)k;
        }
    }
    free(tmp);
    free(out);
    return NULL;
}

static int64_t parse_rows(const char *s)
{
    char *end;
    long long b = strtoll(s, &end, 10);
    if (end == s || b < 1)
        return -1;
    if (*end == '^') {
        long long e = strtoll(end + 1, &end, 10), p = 1;
        if (e < 0 || e > 62)
            return -1;
        for (long long i = 0; i < e; i++) {
            if (p > INT64_MAX / b)
                return -1;
            p *= b;
        }
        b = p;
    }
    return *end ? -1 : b;
}

static int usage(void)
{
    fprintf(stderr, "Usage: cask-knn-gen --rows N --seed S --set obs|ref [--f64] FILE.npy\n"
                    "Writes the points of cask-knn --generate (degrees) as an (N, 2) array.\n");
    return 2;
}

int main(int argc, char **argv)
{
    gen_ctx c = {0};
    const char *path = NULL;
    c.rows = -1;
    c.set = 99;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--rows") && i + 1 < argc)
            c.rows = parse_rows(argv[++i]);
        else if (!strcmp(a, "--seed") && i + 1 < argc)
            c.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--set") && i + 1 < argc) {
            a = argv[++i];
            c.set = !strcmp(a, "obs") ? KNN_STREAM_OBS : !strcmp(a, "ref") ? KNN_STREAM_REF : 99;
        } else if (!strcmp(a, "--f64"))
            c.f64 = 1;
        else if (a[0] == '-' || path)
            return usage();
        else
            path = a;
    }
    if (!path || c.rows < 1 || c.set == 99)
        return usage();
    c.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (c.fd < 0) {
        fprintf(stderr, "cask-knn-gen: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char hdr[128];
    int hl = snprintf(hdr + 10, sizeof hdr - 10,
                      "{'descr': '<f%d', 'fortran_order': False, 'shape': (%lld, 2), }",
                      c.f64 ? 8 : 4, (long long)c.rows);
    size_t total = 10 + (size_t)hl + 1, padded = (total + 63) / 64 * 64;
    memset(hdr + 10 + hl, ' ', padded - total);
    hdr[padded - 1] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)((padded - 10) & 0xff);
    hdr[9] = (char)((padded - 10) >> 8);
    c.data_off = (int64_t)padded;
    if (write(c.fd, hdr, padded) != (ssize_t)padded) {
        fprintf(stderr, "cask-knn-gen: %s: %s\n", path, strerror(errno));
        close(c.fd);
        unlink(path);
        return 1;
    }
    pthread_mutex_init(&c.lock, NULL);
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1)
        nt = 1;
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    int started = 0;
    for (long t = 0; t < nt; t++)
        if (pthread_create(&th[started], NULL, gen_main, &c) == 0)
            started++;
    if (!started)
        gen_main(&c);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    if (!c.err && close(c.fd) != 0)
        c.err = errno;
    if (c.err) {
        fprintf(stderr, "cask-knn-gen: %s: %s\n", path, strerror(c.err));
        unlink(path);
        return 1;
    }
    return 0;
}
