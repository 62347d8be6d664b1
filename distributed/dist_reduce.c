/* distributed/dist_reduce.c: cask_dist_allreduce, the small collective the ranks agree
 * through (a failure before a search, whether every rank sees a file, which parts of
 * it were written). It is a distributed graph like any other, so a rank lost meanwhile
 * is survived the same way: rank r's values are a datum t[r] it owns, combined pairwise
 * down a binary tree into t[0] (log2 P steps), then copied into a result res[r] each
 * rank owns, which the compute brings home.
 *
 * Recovery: t[r] has a loader that writes the values its runner passes. Each rank
 * passes its own values for its own t[r] and the op's identity for the others', so a
 * recovery that needs a live rank's t[r] again (overwritten by the tree) finds it
 * unchanged, and a lost rank's counts as the identity unless its values had reached the
 * tree already: either way every survivor gets the same result. */
#include "distributed/dist_impl.h"

#include <stdlib.h>
#include <string.h>


typedef struct reduce_args {
    int32_t op;
    int32_t copy;    /* 1: [0] = [1]; 0: [0] = [0] op [1] */
} reduce_args;

static cask_status reduce_cpu(cask_task_ctx *ctx)
{
    const reduce_args *a = cask_task_args(ctx, NULL);
    int64_t *dst = cask_task_buffer(ctx, 0);
    const int64_t *src = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *dst;
    if (a->copy) {
        memcpy(dst, src, n * sizeof *dst);
        return CASK_OK;
    }
    for (size_t i = 0; i < n; i++)
        switch (a->op) {
        case CASK_DIST_MIN: dst[i] = src[i] < dst[i] ? src[i] : dst[i]; break;
        case CASK_DIST_MAX: dst[i] = src[i] > dst[i] ? src[i] : dst[i]; break;
        case CASK_DIST_SUM: dst[i] = (int64_t)((uint64_t)dst[i] + (uint64_t)src[i]); break;
        default: dst[i] |= src[i]; break;
        }
    return CASK_OK;
}

/* The loader: buffer 0 = the argument bytes. */
static cask_status reduce_load_cpu(cask_task_ctx *ctx)
{
    size_t n = 0;
    const void *v = cask_task_args(ctx, &n);
    if (n != cask_task_buffer_size(ctx, 0))
        return cask_task_fail(ctx, "allreduce loader: %zu bytes for %zu", n,
                              cask_task_buffer_size(ctx, 0));
    memcpy(cask_task_buffer(ctx, 0), v, n);
    return CASK_OK;
}

static cask_status kernels(cask_dist *dist)
{
    if (dist->k_reduce)
        return CASK_OK;
    cask_kernel_desc kd = {0};
    kd.name = "cask.dist.reduce";
    kd.cpu = reduce_cpu;
    cask_status st = cask_kernel_register(dist->rt, &kd, &dist->k_reduce);
    kd.name = "cask.dist.reduce_load";
    kd.cpu = reduce_load_cpu;
    if (!st)
        st = cask_kernel_register(dist->rt, &kd, &dist->k_reduce_load);
    if (st)
        dist->k_reduce = NULL;
    return st;
}

static cask_status add(cask_dist_graph *g, cask_kernel *k, cask_data *dst, cask_access_mode m,
                       cask_data *src, int op, int copy)
{
    reduce_args a = {op, copy};
    cask_access acc[2] = {{dst, m}, {src, CASK_READ}};
    cask_task_desc d = {.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = k,
                        .access = acc, .naccess = 2, .args = &a, .args_size = sizeof a,
                        .where = CASK_WHERE_CPU};
    return cask_dist_graph_add_task(g, &d, NULL);
}

/* One attempt: fresh data and graph. *told: the message is in dist->err. */
static cask_status attempt(cask_dist *dist, int64_t *v, size_t n, cask_dist_op op,
                           const int64_t *idv, int *told)
{
    const int P = dist->size, me = dist->rank;
    const size_t bytes = n * sizeof *v;
    cask_data **t = calloc((size_t)P, sizeof *t), **res = calloc((size_t)P, sizeof *res);
    cask_dist_graph *g = NULL;
    cask_status st = CASK_ERR_NOMEM;
    if (!t || !res)
        goto out;
    for (int r = 0; r < P; r++)
        if ((st = cask_dist_data_create(dist, bytes, r, NULL, &t[r])) ||
            (st = cask_dist_data_create(dist, bytes, r, NULL, &res[r])) ||
            (st = cask_dist_data_set_loader(dist, t[r], dist->k_reduce_load, r == me ? v : idv,
                                            bytes)))
            goto out;
    void *p;
    if ((st = cask_data_acquire(t[me], CASK_WRITE, &p)))
        goto out;
    memcpy(p, v, bytes);
    if ((st = cask_data_release(t[me])) || (st = cask_dist_graph_create(dist, &g)))
        goto out;
    for (int s = 1; s < P; s *= 2)
        for (int r = 0; r + s < P; r += 2 * s)
            if ((st = add(g, dist->k_reduce, t[r], CASK_RW, t[r + s], op, 0)))
                goto out;
    for (int r = 0; r < P; r++)
        if ((st = add(g, dist->k_reduce, res[r], CASK_WRITE, t[0], op, 1)))
            goto out;
    if ((st = cask_dist_graph_compute(g))) {
        dist_fail(dist, "%s", cask_dist_graph_error(g));
        *told = 1;
        goto out;
    }
    if ((st = cask_data_acquire(res[me], CASK_READ, &p)))
        goto out;
    memcpy(v, p, bytes);
    st = cask_data_release(res[me]);
out:
    cask_dist_graph_destroy(g);
    free(t);
    free(res);
    return st;
}

cask_status cask_dist_allreduce(cask_dist *dist, int64_t *v, size_t n, cask_dist_op op)
{
    if (!dist || !v || !n || op < CASK_DIST_MIN || op > CASK_DIST_BOR)
        return CASK_ERR_INVALID;
    if (dist->size == 1)
        return CASK_OK;
    int64_t ident = op == CASK_DIST_MIN ? INT64_MAX : op == CASK_DIST_MAX ? INT64_MIN : 0;
    int64_t *idv = malloc(n * sizeof *idv);
    cask_status st = idv ? kernels(dist) : CASK_ERR_NOMEM;
    int told = 0;
    for (size_t i = 0; idv && i < n; i++)
        idv[i] = ident;
    /* A rank lost while the graph was planned fails that graph on every survivor (the
     * ranks planned it for different views); one planned after the loss is survived:
     * so once more on CASK_ERR_PEER. */
    for (int a = 0; a < 2 && idv && (a == 0 ? !st : st == CASK_ERR_PEER); a++) {
        told = 0;
        st = attempt(dist, v, n, op, idv, &told);
    }
    if (st && !told) {
        char msg[512] = "";
        cask_runtime_error(dist->rt, msg, sizeof msg);
        dist_fail(dist, "cask_dist_allreduce: %s%s%s", cask_status_string(st),
                  msg[0] ? ": " : "", msg);
    }
    free(idv);
    return st;
}
