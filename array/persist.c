/* array/persist.c: cask_array_persist: computing arrays and keeping their chunks as
 * runtime data handles, where they were made, so that later expressions read them. */
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

/* The node a persist of n keeps: a slice or inserted axis persists what it views. */
static cask_array *persist_target(cask_array *n)
{
    while (!n->mat && (n->kind == NK_SLICE || n->kind == NK_EXPAND)) n = n->in[0];
    return n;
}

cask_status cask_array_persist(cask_array_ctx *ctx, int n, cask_array *const *arrays)
{
    if (!ctx || n < 1 || !arrays) return CASK_ERR_INVALID;
    ctx->err[0] = 0;
    cask_array **t = calloc((size_t)n, sizeof *t);
    cask_data ***kept = calloc((size_t)n, sizeof *kept);
    int nt = 0;
    cask_status st = CASK_OK;
    if (!t || !kept) {
        st = arr_error(ctx, CASK_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (!arrays[i] || arrays[i]->ctx != ctx) {
            st = arr_error(ctx, CASK_ERR_INVALID, "array %d is NULL or of another context", i);
            goto out;
        }
        cask_array *x = persist_target(arrays[i]);
        /* kept already, or views of the user's GPU memory (device.c): nothing to run */
        int dup = x->mat != NULL || (x->kind == NK_DEVICE && x->src);
        for (int j = 0; j < nt; j++) dup |= t[j] == x;
        if (!dup) t[nt++] = x;
    }
    if (!nt) goto out;
    plan pl;
    if ((st = plan_init(&pl, ctx, nt, t, 1))) {
        plan_free(&pl);
        goto out;
    }
    for (int i = 0; i < nt && !st; i++) {
        kept[i] = calloc((size_t)t[i]->nchunks, sizeof **kept);
        if (!kept[i]) st = arr_error(ctx, CASK_ERR_NOMEM, "out of memory");
        for (int64_t c = 0; c < t[i]->nchunks && !st; c++) st = plan_chunk(&pl, t[i], c, &kept[i][c]);
    }
    if (!st) st = plan_run(&pl);
    else ctx->last = pl.st;
    plan_free(&pl);
    for (int i = 0; i < nt; i++) {
        if (!kept[i]) continue;
        if (st) {
            for (int64_t c = 0; c < t[i]->nchunks; c++) cask_data_destroy(kept[i][c]);
            free(kept[i]);
            continue;
        }
        cask_array *x = t[i];
        x->mat = kept[i];
        kept[i] = NULL;
        node_unshare(x);
        int nin = x->nin;
        x->nin = 0;
        for (int j = 0; j < nin; j++) cask_array_release(x->in[j]);
    }
out:
    free(t);
    free(kept);
    return st;
}
