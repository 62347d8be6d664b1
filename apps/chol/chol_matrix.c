/* chol_matrix.c: see chol_matrix.h. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chol_matrix.h"

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* uniform on [-1, 1) */
static double unif(uint64_t seed, uint64_t i)
{
    return (double)(mix(seed * 0x632be59bd9b4e019ull ^ i) >> 11) * (2.0 / 9007199254740992.0) - 1;
}

typedef struct gen_job {
    void *a;
    cask_dtype dt;
    int64_t n, r0, r1;
    uint64_t seed;
} gen_job;

/* Element (i,c) of the matrix of order n. */
static double element(uint64_t seed, int64_t n, int64_t i, int64_t c)
{
    int64_t lo = i < c ? i : c, hi = i < c ? c : i;
    double v = unif(seed, (uint64_t)lo * (uint64_t)n + (uint64_t)hi);
    return i == c ? v + (double)n : v;
}

static void *gen_rows(void *arg)
{
    gen_job *j = arg;
    int64_t n = j->n;
    for (int64_t i = j->r0; i < j->r1; i++)
        for (int64_t c = 0; c < n; c++) {
            double v = element(j->seed, n, i, c);
            if (j->dt == CASK_FLOAT64) ((double *)j->a)[i * n + c] = v;
            else ((float *)j->a)[i * n + c] = (float)v;
        }
    return NULL;
}

void chol_generate_tile(void *tile, cask_dtype dt, int64_t n, int64_t row0, int64_t col0,
                        int64_t rows, int64_t cols, uint64_t seed)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double v = element(seed, n, row0 + r, col0 + c);
            if (dt == CASK_FLOAT64) ((double *)tile)[r * cols + c] = v;
            else ((float *)tile)[r * cols + c] = (float)v;
        }
}

void chol_generate(void *a, cask_dtype dt, int64_t n, uint64_t seed, int threads)
{
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    pthread_t th[64];
    gen_job jobs[64];
    int started = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (gen_job){ a, dt, n, n * t / threads, n * (t + 1) / threads, seed };
        if (pthread_create(&th[t], NULL, gen_rows, &jobs[t]) == 0) started++;
        else gen_rows(&jobs[t]);
    }
    for (int t = 0; t < threads && started; t++) pthread_join(th[t], NULL);
}

void chol_generate_rhs(void *b, cask_dtype dt, int64_t n, int64_t k, uint64_t seed)
{
    for (int64_t i = 0; i < n * k; i++) {
        double v = unif(seed ^ 0x5bd1e995u, (uint64_t)i);
        if (dt == CASK_FLOAT64) ((double *)b)[i] = v;
        else ((float *)b)[i] = (float)v;
    }
}

static double at(const void *p, cask_dtype dt, int64_t i)
{
    return dt == CASK_FLOAT64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* c (m x k) = a (m x n) @ b (n x k) by cask, into a new buffer (NULL on failure). */
static void *product(cask_array_ctx *ctx, const void *a, const void *b, cask_dtype dt,
                     int64_t m, int64_t n, int64_t k, int64_t tile)
{
    int64_t as[2] = {m, n}, bs[2] = {n, k}, ac[2] = {tile, tile}, bc[2] = {tile, k};
    cask_array *A = NULL, *B = NULL, *C = NULL;
    size_t es = cask_dtype_size(dt), bytes = (size_t)(m * k) * es;
    void *c = malloc(bytes);
    cask_status st = c ? CASK_OK : CASK_ERR_NOMEM;
    if (!st) st = cask_array_from_host(ctx, a, dt, 2, as, ac, &A);
    if (!st) st = cask_array_from_host(ctx, b, dt, 2, bs, bc, &B);
    if (!st) st = cask_array_matmul(A, B, &C);
    if (!st) st = cask_array_compute(C, c, bytes);
    if (st) {
        fprintf(stderr, "cask-chol: check: %s: %s\n", cask_status_string(st),
                cask_array_ctx_error(ctx));
        free(c);
        c = NULL;
    }
    cask_array_release(A);
    cask_array_release(B);
    cask_array_release(C);
    return c;
}

double chol_residual(cask_array_ctx *ctx, const void *a, const void *l, cask_dtype dt,
                     int64_t n, int64_t tile)
{
    size_t es = cask_dtype_size(dt);
    char *lt = malloc((size_t)(n * n) * es);
    if (!lt) return -1;
    for (int64_t i = 0; i < n; i++)   /* L^T */
        for (int64_t j = 0; j < n; j++)
            memcpy(lt + (size_t)(j * n + i) * es, (const char *)l + (size_t)(i * n + j) * es, es);
    void *p = product(ctx, l, lt, dt, n, n, n, tile);
    free(lt);
    if (!p) return -1;
    double num = 0, den = 0;
    for (int64_t i = 0; i < n * n; i++) {
        double d = at(a, dt, i) - at(p, dt, i);
        num += d * d;
        den += at(a, dt, i) * at(a, dt, i);
    }
    free(p);
    return sqrt(num) / ((double)n * sqrt(den));
}

double chol_backward_error(cask_array_ctx *ctx, const void *a, const void *x, const void *b,
                           cask_dtype dt, int64_t n, int64_t k, int64_t tile)
{
    void *ax = product(ctx, a, x, dt, n, n, k, tile);
    if (!ax) return -1;
    double an = 0, worst = 0;
    for (int64_t i = 0; i < n * n; i++) an += at(a, dt, i) * at(a, dt, i);
    an = sqrt(an);
    for (int64_t c = 0; c < k; c++) {
        double rn = 0, xn = 0, bn = 0;
        for (int64_t i = 0; i < n; i++) {
            double r = at(ax, dt, i * k + c) - at(b, dt, i * k + c);
            rn += r * r;
            xn += at(x, dt, i * k + c) * at(x, dt, i * k + c);
            bn += at(b, dt, i * k + c) * at(b, dt, i * k + c);
        }
        double e = sqrt(rn) / (an * sqrt(xn) + sqrt(bn));
        if (e > worst) worst = e;
    }
    free(ax);
    return worst;
}
