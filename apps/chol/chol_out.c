/* chol_out.c: what cask-chol does with a factor once it is in host memory (chol_app.h):
 * the checks, the digest, and the --out file; and the clock and median of its runs. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "chol_app.h"

double chol_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int chol_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

uint64_t chol_digest(const void *p, size_t bytes)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int chol_finish(cask_array_ctx *ctx, const chol_opts *o, const void *a, const void *l,
                const void *b, const void *x, double *res, double *berr)
{
    *res = *berr = -1;
    size_t bytes = (size_t)(o->n * o->n) * cask_dtype_size(o->dt);
    if (o->check) {
        *res = chol_residual(ctx, a, l, o->dt, o->n, o->tile);
        double bound = (o->dt == CASK_FLOAT64 ? 1.1102230246251565e-16 : 5.9604644775390625e-08) * 4;
        printf("check: ||A - L L^T||_F / (n ||A||_F) = %.3e (bound %.1e)\n", *res, bound);
        if (*res < 0 || *res > bound) return 1;
        if (o->rhs) {
            *berr = chol_backward_error(ctx, a, x, b, o->dt, o->n, o->rhs, o->tile);
            printf("check: solve backward error %.3e (bound %.1e)\n", *berr, bound * 4);
            if (*berr < 0 || *berr > bound * 4) return 1;
        }
    }
    if (o->digest)
        printf("factor digest %016llx (FNV-1a of the %zu bytes of L, row-major)\n",
               (unsigned long long)chol_digest(l, bytes), bytes);
    if (o->out) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp%d", o->out, (int)getpid());
        int64_t shape[2] = {o->n, o->n}, lc[2] = {o->tile, o->tile};
        cask_array *Lh = NULL;
        cask_status st = cask_array_from_host(ctx, l, o->dt, 2, shape, lc, &Lh);
        if (!st) st = cask_array_to_npy(Lh, tmp);
        cask_array_release(Lh);
        if (!st && rename(tmp, o->out) != 0) st = CASK_ERR_IO;
        if (st) {
            unlink(tmp);
            fprintf(stderr, "cask-chol: writing %s: %s\n", o->out, cask_status_string(st));
            return 1;
        }
    }
    return 0;
}
