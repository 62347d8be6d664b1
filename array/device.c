/* array/device.c: arrays in the user's GPU memory, in and out (cask/array.h:
 * cask_array_from_device, cask_array_compute_to_device). In: where a chunk is one
 * contiguous piece of the user's array (chunks cut along the first axis only) it is a
 * view, a data handle over that memory (cask_data_register_device) that tasks on its
 * GPU read in place; other chunks are gathered by device-to-device copy tasks. Out: the
 * result's chunks are scattered into the user's memory by device-to-device copy tasks
 * on the GPUs. No byte goes through the host unless a task runs on a CPU worker. */
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

/* 1 when every chunk of n is contiguous in the whole row-major array. */
static int chunks_contiguous(const cask_array *n)
{
    for (int k = 1; k < n->ndim; k++)
        if (n->nch[k] != 1) return 0;
    return 1;
}

static cask_status check_device(cask_array_ctx *ctx, int device, const char *call)
{
    if (ctx->ngpus == 0)
        return arr_error(ctx, CASK_ERR_INVALID, "%s: the runtime has no GPU", call);
    if (device < 0 || device >= ctx->ngpus)
        return arr_error(ctx, CASK_ERR_INVALID, "%s: no GPU %d (the runtime has %d)", call,
                         device, ctx->ngpus);
    return CASK_OK;
}

/* The views of n's chunks (n contiguous, interned, without them yet). */
static cask_status make_views(cask_array_ctx *ctx, cask_array *n)
{
    n->src = calloc((size_t)n->nchunks, sizeof *n->src);
    if (!n->src) return arr_error(ctx, CASK_ERR_NOMEM, "out of memory");
    size_t off = 0;
    for (int64_t c = 0; c < n->nchunks; c++) {
        int64_t idx[MAXD];
        chunk_index(n, c, idx);
        size_t bytes = chunk_bytes(n, idx);
        cask_status st = cask_data_register_device(ctx->rt, (char *)n->p.dev + off, bytes,
                                                   n->p.device, &n->src[c]);
        if (st) {
            for (int64_t j = 0; j < c; j++) cask_data_destroy(n->src[j]);
            free(n->src);
            n->src = NULL;
            return arr_error(ctx, st, "cannot register GPU memory: %s", cask_status_string(st));
        }
        off += bytes;
    }
    return CASK_OK;
}

cask_status cask_array_from_device(cask_array_ctx *ctx, const void *dev_ptr, int device,
                                   cask_dtype dtype, int ndim, const int64_t *shape,
                                   const int64_t *chunks, cask_array **out)
{
    if (!ctx || !out) return CASK_ERR_INVALID;
    ctx->err[0] = 0;
    if (!dev_ptr) return arr_error(ctx, CASK_ERR_INVALID, "cask_array_from_device: NULL pointer");
    cask_status st = check_device(ctx, device, "cask_array_from_device");
    if (st) return st;
    cask_array *n;
    if ((st = node_new(ctx, NK_DEVICE, dtype, ndim, shape, chunks, &n))) return st;
    n->p.dev = dev_ptr;
    n->p.device = device;
    n = node_intern(n);
    if (chunks_contiguous(n) && !n->src && (st = make_views(ctx, n))) {
        cask_array_release(n);
        return st;
    }
    *out = n;
    return CASK_OK;
}

/* Adds a GPU-only copy task of k (preferably on device) with args a on acc. */
static cask_status dev_task(plan *pl, cask_kernel *k, cask_access *acc, ak_host_args *a,
                            int device, const char *name)
{
    cask_task_desc d;
    memset(&d, 0, sizeof d);
    d.kernel = k;
    d.access = acc;
    d.naccess = 1;
    d.field_mask = CASK_TASK_ARGS | CASK_TASK_NAME | CASK_TASK_WHERE | CASK_TASK_DEVICE;
    d.args = a;
    d.args_size = sizeof *a;
    d.name = name;
    d.where = CASK_WHERE_GPU;
    d.device = device;
    cask_status st = cask_graph_add_task(pl->g, &d, NULL);
    if (st) return arr_error(pl->ctx, st, "cannot add task %s: %s", name, cask_status_string(st));
    pl->st.ntasks++;
    return CASK_OK;
}

cask_status device_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    if (n->src) {
        *out = n->src[chunk_linear(n, idx)];
        return CASK_OK;
    }
    ak_host_args a;
    memset(&a, 0, sizeof a);
    chunk_geom(n, idx, &a.geom);
    a.esize = (int32_t)cask_dtype_size(n->dtype);
    a.src = n->p.dev;
    cask_status st = plan_out_handle(pl, n, idx, out);
    if (st) return st;
    cask_access acc = {*out, CASK_WRITE};
    return dev_task(pl, pl->ctx->k.gather_dev, &acc, &a, n->p.device, "array.gather_dev");
}

cask_status cask_array_compute_to_device(cask_array *a, void *dev_ptr, size_t bytes, int device)
{
    if (!a) return CASK_ERR_INVALID;
    cask_array_ctx *ctx = a->ctx;
    ctx->err[0] = 0;
    if (!dev_ptr)
        return arr_error(ctx, CASK_ERR_INVALID, "cask_array_compute_to_device: NULL pointer");
    cask_status st = check_device(ctx, device, "cask_array_compute_to_device");
    if (st) return st;
    size_t need = (size_t)a->size * cask_dtype_size(a->dtype);
    if (bytes < need)
        return arr_error(ctx, CASK_ERR_INVALID, "output needs %zu bytes, has %zu", need, bytes);
    plan pl;
    st = plan_init(&pl, ctx, 1, &a, 0);
    double t0 = arr_now();
    for (int64_t c = 0; c < a->nchunks && !st; c++) {
        cask_data *d;
        if ((st = plan_chunk(&pl, a, c, &d))) break;
        ak_host_args h;
        chunk_host_args(a, c, &h);
        h.dst = dev_ptr;
        cask_access acc = {d, CASK_READ};
        st = dev_task(&pl, ctx->k.scatter_dev, &acc, &h, device, "array.scatter_dev");
    }
    pl.st.build_s += arr_now() - t0;
    if (!st) st = plan_run(&pl);
    else ctx->last = pl.st;
    plan_free(&pl);
    return st;
}
