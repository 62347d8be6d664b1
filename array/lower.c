/* array/lower.c: running arrays. A plan collects the nodes the requested arrays need
 * (culling the rest), lets fuse.c decide which become tasks, then lowers chunk by
 * chunk on demand: asking for an output chunk adds the tasks that make it, after those
 * of its inputs, so only chunks something needs are ever computed (a slice of a large
 * array computes the slice). Then: compute, to .npy, and plan-only (persist: persist.c). */
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include "array/array_internal.h"

/* ---- the plan ---- */

/* Allocates n's plan node (in pl->all, for freeing). */
static cask_status plan_add_node(plan *pl, cask_array *n)
{
    if (pl->nall == pl->allcap) {
        size_t cap = pl->allcap ? pl->allcap * 2 : 64;
        plan_node **v = realloc(pl->all, cap * sizeof *v);
        if (!v) return CASK_ERR_NOMEM;
        pl->all = v;
        pl->allcap = cap;
    }
    plan_node *pn = calloc(1, sizeof *pn);
    if (!pn) return CASK_ERR_NOMEM;
    pn->node = n;
    n->pn = pn;
    pl->all[pl->nall++] = pn;
    return CASK_OK;
}

/* Appends n to the topological order (inputs before consumers). */
static cask_status plan_order(plan *pl, cask_array *n)
{
    if (pl->nnodes == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 64;
        plan_node **v = realloc(pl->nodes, cap * sizeof *v);
        if (!v) return CASK_ERR_NOMEM;
        pl->nodes = v;
        pl->cap = cap;
    }
    pl->nodes[pl->nnodes++] = n->pn;
    return CASK_OK;
}

static cask_status add_consumer(plan_node *pn, cask_array *c)
{
    if (pn->nconsumers == pn->cons_cap) {
        int cap = pn->cons_cap ? pn->cons_cap * 2 : 4;
        cask_array **v = realloc(pn->consumers, (size_t)cap * sizeof *v);
        if (!v) return CASK_ERR_NOMEM;
        pn->consumers = v;
        pn->cons_cap = cap;
    }
    pn->consumers[pn->nconsumers++] = c;
    return CASK_OK;
}

/* Post-order walk (inputs first) without recursion; stops at persisted nodes. */
static cask_status collect(plan *pl, cask_array *root)
{
    if (root->pn) return CASK_OK;
    size_t cap = 64, top = 0;
    struct frame { cask_array *n; int next; } *st = malloc(cap * sizeof *st);
    if (!st) return CASK_ERR_NOMEM;
    cask_status rc = plan_add_node(pl, root);
    if (rc) goto out;
    st[top].n = root;
    st[top++].next = 0;
    while (top) {
        struct frame *f = &st[top - 1];
        cask_array *n = f->n;
        if (n->mat || f->next >= n->nin) {
            if ((rc = plan_order(pl, n))) goto out;
            top--;
            continue;
        }
        cask_array *in = n->in[f->next++];
        int fresh = in->pn == NULL;
        if (fresh && (rc = plan_add_node(pl, in))) goto out;
        if ((rc = add_consumer(in->pn, n))) goto out;
        if (fresh) {
            if (top == cap) {
                cap *= 2;
                struct frame *v = realloc(st, cap * sizeof *st);
                if (!v) { rc = CASK_ERR_NOMEM; goto out; }
                st = v;
            }
            st[top].n = in;
            st[top++].next = 0;
        }
    }
out:
    free(st);
    return rc;
}

/* Minor page faults of the process so far. */
static long minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

cask_status plan_init(plan *pl, cask_array_ctx *ctx, int n, cask_array *const *arrays,
                      int persist)
{
    memset(pl, 0, sizeof *pl);
    pl->ctx = ctx;
    pl->persist = persist;
    pl->minflt0 = minor_faults();
    double t0 = arr_now();
    cask_status st = CASK_OK;
    for (int i = 0; i < n && !st; i++) {
        if (!arrays[i] || arrays[i]->ctx != ctx)
            return arr_error(ctx, CASK_ERR_INVALID, "array %d is NULL or of another context", i);
        st = collect(pl, arrays[i]);
    }
    if (st) return arr_error(ctx, st, "out of memory");
    for (int i = 0; i < n; i++) arrays[i]->pn->is_output = 1;
    fuse_assign_roles(pl);
    if ((st = cask_graph_create(ctx->rt, &pl->g)))
        return arr_error(ctx, st, "cannot create a graph: %s", cask_status_string(st));
    pl->st.nnodes = pl->nnodes;
    pl->st.build_s = arr_now() - t0;
    return CASK_OK;
}

void plan_free(plan *pl)
{
    if (pl->g) cask_graph_destroy(pl->g);
    for (size_t i = 0; i < pl->ntemps; i++) cask_data_destroy(pl->temps[i]);
    free(pl->temps);
    for (size_t i = 0; i < pl->nall; i++) {
        plan_node *pn = pl->all[i];
        pn->node->pn = NULL;
        free(pn->consumers);
        free(pn->chunks);
        free(pn->la_inv_ok);
        free(pn->pc);
        free(pn);
    }
    free(pl->all);
    free(pl->nodes);
    memset(pl, 0, sizeof *pl);
}

cask_status plan_handle(plan *pl, size_t bytes, int temp, cask_data **out)
{
    if (temp && pl->ntemps == pl->tcap) {
        size_t cap = pl->tcap ? pl->tcap * 2 : 64;
        cask_data **v = realloc(pl->temps, cap * sizeof *v);
        if (!v) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
        pl->temps = v;
        pl->tcap = cap;
    }
    cask_status st = cask_data_create(pl->ctx->rt, bytes ? bytes : 8, out);
    if (st) return arr_error(pl->ctx, st, "cannot create a data handle of %zu bytes", bytes);
    if (temp) pl->temps[pl->ntemps++] = *out;
    pl->st.nhandles++;
    return CASK_OK;
}

cask_status plan_out_handle(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    return plan_handle(pl, chunk_bytes(n, idx), !(pl->persist && n->pn->is_output), out);
}

cask_status plan_task(plan *pl, cask_kernel *k, const cask_access *acc, int nacc,
                      const void *args, size_t args_size, const char *name, int both,
                      int device_hint)
{
    cask_task_desc d;
    memset(&d, 0, sizeof d);
    d.kernel = k;
    d.access = acc;
    d.naccess = nacc;
    d.field_mask = CASK_TASK_ARGS | CASK_TASK_NAME;
    d.args = args;
    d.args_size = args_size;
    d.name = name;
    if (!both) {
        d.field_mask |= CASK_TASK_WHERE;
        d.where = CASK_WHERE_CPU;
    } else if (pl->ctx->where != CASK_WHERE_ANY) {
        d.field_mask |= CASK_TASK_WHERE;
        d.where = (uint32_t)pl->ctx->where;
    }
    if (both && device_hint >= 0 && pl->ctx->ngpus > 1 && pl->ctx->where != CASK_WHERE_CPU) {
        d.field_mask |= CASK_TASK_DEVICE;
        d.device = device_hint % pl->ctx->ngpus;
    }
    cask_status st = cask_graph_add_task(pl->g, &d, NULL);
    if (st) return arr_error(pl->ctx, st, "cannot add task %s: %s", name, cask_status_string(st));
    pl->st.ntasks++;
    if (k != pl->ctx->k.gather && k != pl->ctx->k.scatter && k != pl->ctx->k.npy_read &&
        k != pl->ctx->k.npy_write && k != pl->ctx->k.gather_dev && k != pl->ctx->k.scatter_dev)
        pl->st.ntasks_compute++;
    return CASK_OK;
}

/* ---- lowering of the kinds that are not programs ---- */

static cask_status lower_host(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    cask_array_ctx *ctx = pl->ctx;
    ak_host_args a;
    memset(&a, 0, sizeof a);
    chunk_geom(n, idx, &a.geom);
    a.esize = (int32_t)cask_dtype_size(n->dtype);
    a.src = n->p.host;
    a.path = n->blob;
    a.data_offset = n->p.data_offset;
    cask_status st = plan_out_handle(pl, n, idx, out);
    if (st) return st;
    cask_access acc = {*out, CASK_WRITE};
    int npy = n->kind == NK_NPY;
    return plan_task(pl, npy ? ctx->k.npy_read : ctx->k.gather, &acc, 1, &a, sizeof a,
                     npy ? "array.npy_read" : "array.gather", 0, -1);
}

static cask_status lower_alias(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    cask_array *x = n->in[0];
    int64_t xi[MAXD];
    if (n->kind == NK_SLICE) {
        for (int k = 0; k < n->ndim; k++) xi[k] = idx[k] + n->p.start[k] / x->chunk[k];
    } else {
        for (int k = 0, j = 0; k < n->ndim; k++)
            if (k != n->p.axis) xi[j++] = idx[k];
    }
    return plan_chunk_idx(pl, x, xi, out);
}

static cask_status lower_rechunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    cask_array *x = n->in[0];
    ak_geom og;
    chunk_geom(n, idx, &og);
    int64_t lo[MAXD], hi[MAXD], cnt[MAXD], total = 1;
    for (int k = 0; k < n->ndim; k++) {
        lo[k] = og.offset[k] / x->chunk[k];
        hi[k] = (og.offset[k] + og.shape[k] - 1) / x->chunk[k];
        cnt[k] = hi[k] - lo[k] + 1;
        total *= cnt[k];
    }
    cask_status st = plan_out_handle(pl, n, idx, out);
    if (st) return st;
    ak_copy_args a;
    cask_access acc[AK_MAX_IN + 1];
    int first = 1;
    for (int64_t t = 0; t < total;) {
        memset(&a, 0, sizeof a);
        a.ndim = n->ndim;
        a.esize = (int32_t)cask_dtype_size(n->dtype);
        for (int k = 0; k < n->ndim; k++) {
            a.out_shape[k] = og.shape[k];
            a.out_off[k] = og.offset[k];
        }
        int m = 0;
        for (; m < AK_MAX_IN && t < total; m++, t++) {
            int64_t xi[MAXD], rem = t;
            for (int k = n->ndim - 1; k >= 0; k--) {
                xi[k] = lo[k] + rem % cnt[k];
                rem /= cnt[k];
            }
            ak_geom xg;
            chunk_geom(x, xi, &xg);
            for (int k = 0; k < n->ndim; k++) {
                a.in_shape[m][k] = xg.shape[k];
                a.in_off[m][k] = xg.offset[k];
            }
            if ((st = plan_chunk_idx(pl, x, xi, &acc[m].data))) return st;
            acc[m].mode = CASK_READ;
        }
        a.nin = m;
        acc[m].data = *out;
        acc[m].mode = first ? CASK_WRITE : CASK_RW;
        first = 0;
        if ((st = plan_task(pl, pl->ctx->k.copy, acc, m + 1, &a, sizeof a, "array.rechunk", 1,
                            -1)))
            return st;
    }
    return CASK_OK;
}

static void block_desc(const cask_array *x, const int64_t *idx, int input,
                       cask_array_block_desc *d)
{
    ak_geom g;
    chunk_geom(x, idx, &g);
    memset(d, 0, sizeof *d);
    d->dtype = x->dtype;
    d->ndim = x->ndim;
    d->input = input;
    for (int k = 0; k < x->ndim; k++) {
        d->shape[k] = g.shape[k];
        d->offset[k] = g.offset[k];
    }
}

static cask_status lower_blockwise(plan *pl, cask_array *n, const int64_t *idx,
                                   cask_data **out)
{
    size_t size = sizeof(cask_array_block) + n->blob_len;
    cask_array_block *b = calloc(1, size);
    if (!b) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    cask_access acc[AK_MAX_IN + 1];
    int m = 0;
    cask_status st = CASK_OK;
    for (int i = 0; i < n->nin && !st; i++) {
        cask_array *x = n->in[i];
        int64_t xi[MAXD];
        if (n->p.axis == 1) {   /* map_blocks: broadcast matching */
            int64_t stride[MAXD];
            uint8_t contig;
            fuse_input_layout(n, idx, x, xi, stride, &contig);
            block_desc(x, xi, i, &b->in[m]);
            st = plan_chunk_idx(pl, x, xi, &acc[m].data);
            acc[m++].mode = CASK_READ;
            continue;
        }
        /* blockwise: letters of the output fix their chunk index, the others run over
         * all their chunks, row-major in the order they appear in the input's index */
        const char *ix = n->p.in_index[i];
        int free_ax[MAXD], nfree = 0;
        int64_t total = 1;
        for (int k = 0; k < x->ndim; k++) {
            const char *o = strchr(n->p.out_index, ix[k]);
            if (o) {
                xi[k] = idx[o - n->p.out_index];
            } else {
                free_ax[nfree++] = k;
                total *= x->nch[k];
            }
        }
        for (int64_t t = 0; t < total && !st; t++) {
            int64_t rem = t;
            for (int f = nfree - 1; f >= 0; f--) {
                xi[free_ax[f]] = rem % x->nch[free_ax[f]];
                rem /= x->nch[free_ax[f]];
            }
            block_desc(x, xi, i, &b->in[m]);
            st = plan_chunk_idx(pl, x, xi, &acc[m].data);
            acc[m++].mode = CASK_READ;
        }
    }
    if (!st) st = plan_out_handle(pl, n, idx, out);
    if (!st) {
        b->nin = m;
        block_desc(n, idx, -1, &b->out);
        for (int k = 0; k < n->ndim; k++) b->out_chunk[k] = idx[k];
        b->user_args_size = n->blob_len;
        if (n->blob_len) memcpy(b + 1, n->blob, n->blob_len);
        acc[m].data = *out;
        acc[m].mode = CASK_WRITE;
        cask_task_desc d;
        memset(&d, 0, sizeof d);
        d.field_mask = CASK_TASK_ARGS;
        d.kernel = n->p.kernel;
        d.access = acc;
        d.naccess = m + 1;
        d.args = b;
        d.args_size = size;
        st = cask_graph_add_task(pl->g, &d, NULL);
        if (st) arr_error(pl->ctx, st, "cannot add a user block task: %s", cask_status_string(st));
        else pl->st.ntasks++, pl->st.ntasks_compute++;
    }
    free(b);
    return st;
}

cask_status plan_chunk_idx(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    int64_t c = chunk_linear(n, idx);
    if (n->mat) {
        *out = n->mat[c];
        return CASK_OK;
    }
    plan_node *pn = n->pn;
    if (!pn) return arr_error(pl->ctx, CASK_ERR_INTERNAL, "node outside the plan");
    if (!pn->chunks) {
        pn->chunks = calloc((size_t)n->nchunks, sizeof *pn->chunks);
        if (!pn->chunks) return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    }
    if (pn->chunks[c]) {
        *out = pn->chunks[c];
        return CASK_OK;
    }
    cask_status st;
    switch (n->kind) {
    case NK_HOST:
    case NK_NPY: st = lower_host(pl, n, idx, out); break;
    case NK_SLICE:
    case NK_EXPAND: st = lower_alias(pl, n, idx, out); break;
    case NK_RECHUNK: st = lower_rechunk(pl, n, idx, out); break;
    case NK_BLOCKWISE: st = lower_blockwise(pl, n, idx, out); break;
    case NK_REDUCE: st = reduce_lower_chunk(pl, n, idx, out); break;
    case NK_MATMUL: st = matmul_lower_chunk(pl, n, idx, out); break;
    case NK_CHOLESKY: st = chol_lower_chunk(pl, n, idx, out); break;
    case NK_CHO_SOLVE: st = chosolve_lower_chunk(pl, n, idx, out); break;
    case NK_DEVICE: st = device_lower_chunk(pl, n, idx, out); break;
    default: st = fuse_lower_chunk(pl, n, idx, out); break;
    }
    if (!st) pn->chunks[c] = *out;
    return st;
}

cask_status plan_chunk(plan *pl, cask_array *n, int64_t c, cask_data **out)
{
    int64_t idx[MAXD];
    chunk_index(n, c, idx);
    return plan_chunk_idx(pl, n, idx, out);
}

/* ---- running ---- */

cask_status plan_run(plan *pl)
{
    cask_array_ctx *ctx = pl->ctx;
    /* the BLAS's thread count is process-wide: set for this run only, while no tile runs */
    int blas_old = 0;
    if (pl->blas_threads && ak_blas_name()) {
        blas_old = ak_blas_threads_get();   /* (the first time: opens the library) */
        if (!ctx->blas_noted) {
            int warn;
            const char *note = ak_blas_core_note(&warn);
            if (note) cask_log(ctx->rt, warn ? CASK_LOG_WARN : CASK_LOG_INFO, "arrays: %s", note);
            ctx->blas_noted = 1;
        }
    }
    if (blas_old && blas_old != pl->blas_threads) ak_blas_threads_set(pl->blas_threads);
    cask_status st = cask_graph_compute(pl->g);
    if (blas_old && blas_old != pl->blas_threads) ak_blas_threads_set(blas_old);
    cask_graph_info gi;
    if (cask_graph_query(pl->g, &gi) == CASK_OK) {
        pl->st.nedges = gi.nedges;
        pl->st.elapsed_s = gi.elapsed_s;
    }
    long f = minor_faults();
    pl->st.minor_faults = f > pl->minflt0 ? (size_t)(f - pl->minflt0) : 0;
    for (size_t i = 0; i < pl->nall; i++) {   /* Cholesky: TRINV's verdicts */
        const plan_node *pn = pl->all[i];
        for (int64_t k = 0; pn->la_inv_ok && k < pn->node->nch[0]; k++)
            pl->st.ntiles_inverted += __atomic_load_n(&pn->la_inv_ok[k], __ATOMIC_ACQUIRE) == 1;
    }
    ctx->last = pl->st;
    if (st) return arr_error(ctx, st, "%s", cask_graph_error(pl->g));
    return CASK_OK;
}

cask_status cask_array_compute_many(cask_array_ctx *ctx, int n, cask_array *const *arrays,
                                    void *const *outs, const size_t *bytes)
{
    if (!ctx || n < 1 || !arrays || !outs) return CASK_ERR_INVALID;
    ctx->err[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!arrays[i] || !outs[i]) return arr_error(ctx, CASK_ERR_INVALID, "output %d is NULL", i);
        size_t need = (size_t)arrays[i]->size * cask_dtype_size(arrays[i]->dtype);
        if (bytes && bytes[i] < need)
            return arr_error(ctx, CASK_ERR_INVALID, "output %d needs %zu bytes, has %zu", i, need,
                             bytes[i]);
    }
    plan pl;
    cask_status st = plan_init(&pl, ctx, n, arrays, 0);
    double t0 = arr_now();
    for (int i = 0; i < n && !st; i++) {
        cask_array *a = arrays[i];
        if (a->kind == NK_CHOLESKY && !a->mat && chol_lower_to_host(&pl, a, outs[i], &st))
            continue;
        for (int64_t c = 0; c < a->nchunks && !st; c++) {
            cask_data *d;
            if ((st = plan_chunk(&pl, a, c, &d))) break;
            ak_host_args h;
            chunk_host_args(a, c, &h);
            h.dst = outs[i];
            cask_access acc = {d, CASK_READ};
            st = plan_task(&pl, ctx->k.scatter, &acc, 1, &h, sizeof h, "array.scatter", 0, -1);
        }
    }
    pl.st.build_s += arr_now() - t0;
    if (!st) st = plan_run(&pl);
    else ctx->last = pl.st;
    plan_free(&pl);
    return st;
}

cask_status cask_array_compute(cask_array *a, void *out, size_t bytes)
{
    if (!a) return CASK_ERR_INVALID;
    return cask_array_compute_many(a->ctx, 1, &a, &out, &bytes);
}

cask_status cask_array_to_npy(cask_array *a, const char *path)
{
    if (!a || !path) return CASK_ERR_INVALID;
    cask_array_ctx *ctx = a->ctx;
    ctx->err[0] = 0;
    if (ctx->dist && cask_dist_size(ctx->dist) > 1)
        return npy_dist_write(a, path);
    int64_t off;
    cask_status st = npy_write_header(path, a->dtype, a->ndim, a->shape, &off, ctx->err,
                                      sizeof ctx->err);
    if (st) return st;
    plan pl;
    st = plan_init(&pl, ctx, 1, &a, 0);
    for (int64_t c = 0; c < a->nchunks && !st; c++) {
        cask_data *d;
        if ((st = plan_chunk(&pl, a, c, &d))) break;
        ak_host_args h;
        chunk_host_args(a, c, &h);
        h.path = path;
        h.data_offset = off;
        cask_access acc = {d, CASK_READ};
        st = plan_task(&pl, ctx->k.npy_write, &acc, 1, &h, sizeof h, "array.npy_write", 0, -1);
    }
    if (!st) st = plan_run(&pl);
    plan_free(&pl);
    return st;
}

cask_status cask_array_plan(cask_array_ctx *ctx, int n, cask_array *const *arrays,
                            cask_array_stats *stats, FILE *dot)
{
    if (!ctx || n < 1 || !arrays) return CASK_ERR_INVALID;
    plan pl;
    cask_status st = plan_init(&pl, ctx, n, arrays, 0);
    double t0 = arr_now();
    for (int i = 0; i < n && !st; i++)
        for (int64_t c = 0; c < arrays[i]->nchunks && !st; c++) {
            cask_data *d;
            st = plan_chunk(&pl, arrays[i], c, &d);
        }
    pl.st.build_s += arr_now() - t0;
    if (!st) {
        cask_graph_info gi;
        if (cask_graph_query(pl.g, &gi) == CASK_OK) pl.st.nedges = gi.nedges;
        if (dot) st = cask_graph_dot(pl.g, dot, 1);
        if (stats) *stats = pl.st;
    }
    plan_free(&pl);
    return st;
}
