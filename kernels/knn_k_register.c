/* kernels/knn_k_register.c: checks of the K-nearest kernels' arguments and buffers, shared
 * by their CPU and CUDA implementations, so that a malformed task fails with a message
 * instead of reading out of bounds. (Registration is in knn_register.c.) */
#include <limits.h>
#include <string.h>
#include "kernels/knn_sort.h"

size_t cask_knn_sorted_bytes(int64_t m)
{
    return m < 0 ? 0 : knn_sorted_bytes(m);
}

size_t cask_knn_scratch_bytes(int64_t n)
{
    return n < 0 ? 0 : knn_scratch_bytes(n);
}

/* count buffers present, non-NULL, and buffer i at least bytes[i] long */
static cask_status need(cask_task_ctx *ctx, const char *kernel, int count, const size_t *bytes)
{
    int nb = cask_task_nbuffers(ctx);
    if (nb < count)
        return cask_task_fail(ctx, "%s: %d buffers, expected %d", kernel, nb, count);
    for (int i = 0; i < count; i++) {
        if (!cask_task_buffer(ctx, i))
            return cask_task_fail(ctx, "%s: buffer %d is NULL", kernel, i);
        size_t have = cask_task_buffer_size(ctx, i);
        if (have < bytes[i])
            return cask_task_fail(ctx, "%s: buffer %d has %zu bytes, needs %zu", kernel, i,
                                  have, bytes[i]);
    }
    return CASK_OK;
}

static size_t points_bytes(int64_t n, cask_knn_points f)
{
    return (size_t)n * 2 * (f.f64 ? sizeof(double) : sizeof(float));
}

cask_status knn_k_job_prep(cask_task_ctx *ctx, cask_knn_prep_args *a, const void **ref,
                           void **sorted, void **scratch)
{
    const char *K = "knn prep_sorted";
    cask_status st;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)))
        return st;
    if (a->m < 0 || a->m > INT32_MAX)
        return cask_task_fail(ctx, "%s: m = %lld out of range", K, (long long)a->m);
    size_t b[3] = {points_bytes(a->m, a->in), knn_sorted_bytes(a->m), knn_scratch_bytes(a->m)};
    if ((st = need(ctx, K, 3, b)))
        return st;
    *ref = cask_task_buffer(ctx, 0);
    *sorted = cask_task_buffer(ctx, 1);
    *scratch = cask_task_buffer(ctx, 2);
    return CASK_OK;
}

cask_status knn_k_job_order(cask_task_ctx *ctx, cask_knn_korder_args *a, const void **obs,
                            void **scratch)
{
    const char *K = "knn korder";
    cask_status st;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)))
        return st;
    if (a->n < 0 || a->n > INT32_MAX || (a->prune != 0 && a->prune != 1))
        return cask_task_fail(ctx, "%s: n = %lld, prune = %d out of range", K,
                              (long long)a->n, a->prune);
    size_t b[2] = {points_bytes(a->n, a->in), knn_scratch_bytes(a->n)};
    if ((st = need(ctx, K, 2, b)))
        return st;
    *obs = cask_task_buffer(ctx, 0);
    *scratch = cask_task_buffer(ctx, 1);
    return CASK_OK;
}

cask_status knn_k_job_search(cask_task_ctx *ctx, knn_k_job *j)
{
    const char *K = "knn ksearch";
    cask_status st;
    cask_knn_ksearch_args *a = &j->a;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)))
        return st;
    int final = a->mode == CASK_KNN_FINAL;
    if (!final && a->mode != CASK_KNN_PARTIAL)
        return cask_task_fail(ctx, "%s: unknown mode %d", K, a->mode);
    if (a->k < 1 || a->k > KNN_KMAX)
        return cask_task_fail(ctx, "%s: k = %d outside [1, %d]", K, a->k, KNN_KMAX);
    if (a->prune != 0 && a->prune != 1)
        return cask_task_fail(ctx, "%s: prune = %d is not 0 or 1", K, a->prune);
    if (a->n < 0 || a->n > INT32_MAX || a->m < 0 || a->m > INT32_MAX || a->ref_base < 0)
        return cask_task_fail(ctx, "%s: n = %lld, m = %lld, ref_base = %lld out of range", K,
                              (long long)a->n, (long long)a->m, (long long)a->ref_base);
    if (final && a->ref_base + a->m > (int64_t)INT32_MAX + 1)
        return cask_task_fail(ctx, "%s: reference indices beyond int32 in FINAL mode", K);
    size_t nk = (size_t)a->n * (size_t)a->k;
    size_t b[5] = {points_bytes(a->n, a->in), knn_sorted_bytes(a->m), knn_scratch_bytes(a->n),
                   nk * (final ? sizeof(int32_t) : sizeof(cask_knn_best)), nk * sizeof(float)};
    if ((st = need(ctx, K, final ? 5 : 4, b)))
        return st;
    j->obs = cask_task_buffer(ctx, 0);
    j->sorted = cask_task_buffer(ctx, 1);
    j->scratch = cask_task_buffer(ctx, 2);
    j->out0 = cask_task_buffer(ctx, 3);
    j->out1 = final ? cask_task_buffer(ctx, 4) : NULL;
    return CASK_OK;
}

cask_status knn_k_job_merge(cask_task_ctx *ctx, cask_knn_kmerge_args *a, cask_knn_best **x,
                            const cask_knn_best **y)
{
    const char *K = "knn kmerge";
    cask_status st;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)))
        return st;
    if (a->n < 0 || a->k < 1 || a->k > KNN_KMAX)
        return cask_task_fail(ctx, "%s: n = %lld, k = %lld out of range", K, (long long)a->n,
                              (long long)a->k);
    size_t bytes = (size_t)a->n * (size_t)a->k * sizeof(cask_knn_best);
    size_t b[2] = {bytes, bytes};
    if ((st = need(ctx, K, 2, b)))
        return st;
    *x = cask_task_buffer(ctx, 0);
    *y = cask_task_buffer(ctx, 1);
    return CASK_OK;
}

cask_status knn_k_job_finish(cask_task_ctx *ctx, cask_knn_kfinish_args *a,
                             const cask_knn_best **best, int32_t **idx, float **dist)
{
    const char *K = "knn kfinish";
    cask_status st;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)))
        return st;
    if (a->n < 0 || a->k < 1 || a->k > KNN_KMAX)
        return cask_task_fail(ctx, "%s: n = %lld, k = %lld out of range", K, (long long)a->n,
                              (long long)a->k);
    size_t nk = (size_t)a->n * (size_t)a->k;
    size_t b[3] = {nk * sizeof(cask_knn_best), nk * sizeof(int32_t), nk * sizeof(float)};
    if ((st = need(ctx, K, 3, b)))
        return st;
    *best = cask_task_buffer(ctx, 0);
    *idx = cask_task_buffer(ctx, 1);
    *dist = cask_task_buffer(ctx, 2);
    return CASK_OK;
}
