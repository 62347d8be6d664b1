/* kernels/knn_register.c: registers the haversine 1-NN kernels with a runtime, and checks
 * each task's arguments and buffers before a CPU or CUDA implementation touches them, so
 * that a malformed task fails with a message instead of reading out of bounds. */
#include <limits.h>
#include <string.h>
#include "kernels/knn_sort.h"

size_t cask_knn_prepared_bytes(int64_t m)
{
    return m < 0 ? 0 : knn_prep_bytes(m);
}

cask_status cask_knn_kernels_register(cask_runtime *rt, cask_knn_kernels *out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    struct {
        const char *name;
        cask_kernel_fn cpu, cuda;
        cask_kernel **slot;
    } k[] = {
        {"knn_prep", knn_cpu_prep, NULL, &out->prep},
        {"knn_search", knn_cpu_search, NULL, &out->search},
        {"knn_merge", knn_cpu_merge, NULL, &out->merge},
        {"knn_finish", knn_cpu_finish, NULL, &out->finish},
        {"knn_prep_sorted", knn_k_cpu_prep, NULL, &out->prep_sorted},
        {"knn_korder", knn_k_cpu_order, NULL, &out->korder},
        {"knn_ksearch", knn_k_cpu_search, NULL, &out->ksearch},
        {"knn_kmerge", knn_k_cpu_merge, NULL, &out->kmerge},
        {"knn_kfinish", knn_k_cpu_finish, NULL, &out->kfinish},
    };
#ifdef CASK_HAVE_CUDA
    k[0].cuda = knn_cuda_task_prep;
    k[1].cuda = knn_cuda_task_search;
    k[2].cuda = knn_cuda_task_merge;
    k[3].cuda = knn_cuda_task_finish;
    k[4].cuda = knn_k_cuda_prep;
    k[5].cuda = knn_k_cuda_order;
    k[6].cuda = knn_k_cuda_search;
    k[7].cuda = knn_k_cuda_merge;
    k[8].cuda = knn_k_cuda_finish;
#endif
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        cask_kernel_desc d;
        memset(&d, 0, sizeof d);
        d.name = k[i].name;
        d.cpu = k[i].cpu;
        d.cuda = k[i].cuda;
        cask_status st = cask_kernel_register(rt, &d, k[i].slot);
        if (st)
            return st;
    }
    return CASK_OK;
}

/* ---- checks shared by the CPU and CUDA implementations ---- */

/* Copies the task's argument bytes into dst, which must be exactly size bytes (the
 * kernel named in the failure otherwise). Shared with knn_k_register.c. */
cask_status knn_job_args(cask_task_ctx *ctx, const char *kernel, void *dst, size_t size)
{
    size_t got = 0;
    const void *p = cask_task_args(ctx, &got);
    if (!p || got != size)
        return cask_task_fail(ctx, "%s: arguments are %zu bytes, expected %zu", kernel, got,
                              size);
    memcpy(dst, p, size);
    return CASK_OK;
}

static cask_status need_buffers(cask_task_ctx *ctx, const char *kernel, int count)
{
    int nb = cask_task_nbuffers(ctx);
    if (nb < count)
        return cask_task_fail(ctx, "%s: %d buffers, expected %d", kernel, nb, count);
    for (int i = 0; i < count; i++)
        if (!cask_task_buffer(ctx, i))
            return cask_task_fail(ctx, "%s: buffer %d is NULL", kernel, i);
    return CASK_OK;
}

static cask_status need_size(cask_task_ctx *ctx, const char *kernel, int i, size_t bytes)
{
    size_t have = cask_task_buffer_size(ctx, i);
    if (have < bytes)
        return cask_task_fail(ctx, "%s: buffer %d has %zu bytes, needs %zu", kernel, i, have,
                              bytes);
    return CASK_OK;
}

static size_t points_bytes(int64_t n, cask_knn_points f)
{
    return (size_t)n * 2 * (f.f64 ? sizeof(double) : sizeof(float));
}

cask_status knn_job_prep(cask_task_ctx *ctx, cask_knn_prep_args *a, const void **ref,
                         void **prep)
{
    const char *K = "knn prep";
    cask_status st;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)) || (st = need_buffers(ctx, K, 2)))
        return st;
    if (a->m < 0 || a->m > INT32_MAX)
        return cask_task_fail(ctx, "%s: m = %lld out of range", K, (long long)a->m);
    if ((st = need_size(ctx, K, 0, points_bytes(a->m, a->in))) ||
        (st = need_size(ctx, K, 1, knn_prep_bytes(a->m))))
        return st;
    *ref = cask_task_buffer(ctx, 0);
    *prep = cask_task_buffer(ctx, 1);
    return CASK_OK;
}

cask_status knn_job_search(cask_task_ctx *ctx, knn_search_job *j)
{
    const char *K = "knn search";
    cask_status st;
    cask_knn_search_args *a = &j->a;
    if ((st = knn_job_args(ctx, K, a, sizeof *a)))
        return st;
    int final = a->mode == CASK_KNN_FINAL;
    if (!final && a->mode != CASK_KNN_PARTIAL)
        return cask_task_fail(ctx, "%s: unknown mode %d", K, a->mode);
    if (a->n < 0 || a->m < 0 || a->m > INT32_MAX || a->ref_base < 0)
        return cask_task_fail(ctx, "%s: n = %lld, m = %lld, ref_base = %lld out of range", K,
                              (long long)a->n, (long long)a->m, (long long)a->ref_base);
    if (final && a->ref_base + a->m > (int64_t)INT32_MAX + 1)
        return cask_task_fail(ctx, "%s: reference indices beyond int32 in FINAL mode", K);
    if ((st = need_buffers(ctx, K, final ? 4 : 3)) ||
        (st = need_size(ctx, K, 0, points_bytes(a->n, a->in))) ||
        (st = need_size(ctx, K, 1, knn_prep_bytes(a->m))))
        return st;
    if (final) {
        if ((st = need_size(ctx, K, 2, (size_t)a->n * sizeof(int32_t))) ||
            (st = need_size(ctx, K, 3, (size_t)a->n * sizeof(float))))
            return st;
    } else if ((st = need_size(ctx, K, 2, (size_t)a->n * sizeof(cask_knn_best)))) {
        return st;
    }
    j->obs = cask_task_buffer(ctx, 0);
    j->prep = cask_task_buffer(ctx, 1);
    j->out0 = cask_task_buffer(ctx, 2);
    j->out1 = final ? cask_task_buffer(ctx, 3) : NULL;
    return CASK_OK;
}

cask_status knn_job_merge(cask_task_ctx *ctx, int64_t *n, cask_knn_best **a,
                          const cask_knn_best **b)
{
    const char *K = "knn merge";
    cask_knn_merge_args args;
    cask_status st;
    if ((st = knn_job_args(ctx, K, &args, sizeof args)) || (st = need_buffers(ctx, K, 2)))
        return st;
    if (args.n < 0)
        return cask_task_fail(ctx, "%s: n = %lld", K, (long long)args.n);
    size_t bytes = (size_t)args.n * sizeof(cask_knn_best);
    if ((st = need_size(ctx, K, 0, bytes)) || (st = need_size(ctx, K, 1, bytes)))
        return st;
    *n = args.n;
    *a = cask_task_buffer(ctx, 0);
    *b = cask_task_buffer(ctx, 1);
    return CASK_OK;
}

cask_status knn_job_finish(cask_task_ctx *ctx, cask_knn_finish_args *a,
                           const cask_knn_best **best, int32_t **idx, float **dist)
{
    const char *K = "knn finish";
    cask_status st;
    /* Buffers 0 (observations) and 4 (references) are part of the interface but not
     * read: the float64 squared chord in the best record gives the distance exactly. */
    if ((st = knn_job_args(ctx, K, a, sizeof *a)) || (st = need_buffers(ctx, K, 4)))
        return st;
    if (a->n < 0)
        return cask_task_fail(ctx, "%s: n = %lld", K, (long long)a->n);
    if ((st = need_size(ctx, K, 1, (size_t)a->n * sizeof(cask_knn_best))) ||
        (st = need_size(ctx, K, 2, (size_t)a->n * sizeof(int32_t))) ||
        (st = need_size(ctx, K, 3, (size_t)a->n * sizeof(float))))
        return st;
    *best = cask_task_buffer(ctx, 1);
    *idx = cask_task_buffer(ctx, 2);
    *dist = cask_task_buffer(ctx, 3);
    return CASK_OK;
}
