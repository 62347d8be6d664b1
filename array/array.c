/* array/array.c: the array context, the nodes of the expression DAG (reference counts,
 * the sharing table that makes identical expressions one node), shapes and chunk grids.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "array/array_internal.h"

#define AUTO_CHUNK_ELEMS ((int64_t)1 << 23)

double arr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

cask_status arr_error(cask_array_ctx *ctx, cask_status st, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
    }
    return st;
}

size_t cask_dtype_size(cask_dtype dt)
{
    return dtype_valid(dt) ? (size_t)ak_dt_size(dt) : 0;
}

const char *cask_dtype_name(cask_dtype dt)
{
    static const char *const names[] = {"float32", "float64", "int32", "int64", "uint32"};
    return dtype_valid(dt) ? names[dt] : "?";
}

int dtype_valid(int dt) { return dt >= 0 && dt < CASK_DTYPE_COUNT_; }

int shape_valid(int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > MAXD || (ndim > 0 && !shape)) return 0;
    for (int k = 0; k < ndim; k++)
        if (shape[k] < 1) return 0;
    return 1;
}

/* ---- context ---- */

cask_status cask_array_ctx_create(cask_runtime *rt, cask_array_ctx **out)
{
    if (!rt || !out) return CASK_ERR_INVALID;
    cask_array_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return CASK_ERR_NOMEM;
    ctx->rt = rt;
    ctx->fuse = 1;
    ctx->cse = 1;
    ctx->where = CASK_WHERE_ANY;
    ctx->arity = 8;
    ctx->next_id = 1;
    ctx->nbuckets = 256;
    ctx->buckets = calloc(ctx->nbuckets, sizeof *ctx->buckets);
    cask_status st = CASK_ERR_NOMEM;
    if (!ctx->buckets) goto fail;
    if ((st = ak_kernels_register(rt, &ctx->k))) goto fail;
    if ((st = la_kernels_register(rt, &ctx->la))) goto fail;
    cask_runtime_info info;
    if (cask_runtime_query(rt, &info) == CASK_OK) {
        ctx->ngpus = info.ngpus;
        ctx->ncpu = info.ncpu_workers;
        ctx->ncores = info.ncores_used;
    }
    if (!ak_blas_name())
        cask_log(rt, CASK_LOG_INFO, "arrays: cask was built without a BLAS (libopenblas-dev): "
                 "float matrix products on CPU workers use a blocked loop, about 15x slower");
    const char *la_note = la_build_note();
    if (la_note) cask_log(rt, CASK_LOG_INFO, "arrays: %s", la_note);
#ifdef CASK_HAVE_CUDA
    ctx->blas = ak_blas_cache_create();
    ctx->la_gpu = la_gpu_cache_create();
    ctx->use_jit = 1;
    if (ctx->ngpus > 0 && !info.simulated_gpus) ctx->jit = ak_jit_cache_create();
#endif
    *out = ctx;
    return CASK_OK;
fail:
    free(ctx->buckets);
    free(ctx);
    return st;
}

static void node_free_storage(cask_array *n)
{
    for (int64_t c = 0; n->mat && c < n->nchunks; c++) cask_data_destroy(n->mat[c]);
    for (int64_t c = 0; n->src && c < n->nchunks; c++) cask_data_destroy(n->src[c]);
    free(n->mat);
    free(n->src);
    free(n->blob);
    free(n);
}

cask_status cask_array_ctx_destroy(cask_array_ctx *ctx)
{
    if (!ctx) return CASK_OK;
    cask_array *n = ctx->all;
    while (n) {
        cask_array *next = n->next_all;
        node_free_storage(n);
        n = next;
    }
#ifdef CASK_HAVE_CUDA
    ak_blas_cache_destroy(ctx->blas);
    la_gpu_cache_destroy(ctx->la_gpu);
    ak_jit_cache_destroy(ctx->jit);
#endif
    free(ctx->buckets);
    free(ctx);
    return CASK_OK;
}

cask_status cask_array_ctx_set(cask_array_ctx *ctx, cask_array_option opt, int64_t value)
{
    if (!ctx) return CASK_ERR_INVALID;
    switch (opt) {
    case CASK_ARRAY_OPT_FUSE: ctx->fuse = value != 0; return CASK_OK;
    case CASK_ARRAY_OPT_CSE: ctx->cse = value != 0; return CASK_OK;
    case CASK_ARRAY_OPT_JIT: ctx->use_jit = value != 0; return CASK_OK;
    case CASK_ARRAY_OPT_BLAS_THREADS:
        if (value < 0 || value > 1024)
            return arr_error(ctx, CASK_ERR_INVALID, "BLAS threads must be 0..1024");
        ctx->blas_threads = (int)value;
        return CASK_OK;
    case CASK_ARRAY_OPT_WHERE:
        if (value != CASK_WHERE_ANY && value != CASK_WHERE_CPU && value != CASK_WHERE_GPU)
            return arr_error(ctx, CASK_ERR_INVALID, "where must be a cask_where value");
        ctx->where = (int)value;
        return CASK_OK;
    case CASK_ARRAY_OPT_COMBINE_ARITY:
        if (value < 2 || value > AK_MAX_IN)
            return arr_error(ctx, CASK_ERR_INVALID, "combine arity must be 2..%d", AK_MAX_IN);
        ctx->arity = (int)value;
        return CASK_OK;
    }
    return arr_error(ctx, CASK_ERR_INVALID, "unknown option %d", (int)opt);
}

cask_status cask_array_ctx_set_dist(cask_array_ctx *ctx, cask_dist *dist,
                                    cask_dist_write_mode mode)
{
    if (!ctx || mode < CASK_DIST_WRITE_AUTO || mode > CASK_DIST_WRITE_GATHER)
        return CASK_ERR_INVALID;
    ctx->dist = dist;
    ctx->write_mode = (int)mode;
    return CASK_OK;
}

const char *cask_array_ctx_error(const cask_array_ctx *ctx) { return ctx ? ctx->err : ""; }

cask_status cask_array_last_stats(const cask_array_ctx *ctx, cask_array_stats *out)
{
    if (!ctx || !out) return CASK_ERR_INVALID;
    *out = ctx->last;
    size_t cached = 0;   /* now, after the run's temporaries went back to the cache */
    if (cask_runtime_host_cache(ctx->rt, &cached, NULL) == CASK_OK) out->host_cached_bytes = cached;
    return CASK_OK;
}

/* ---- chunk grids ---- */

void node_set_chunks(cask_array *n, const int64_t *chunks)
{
    int64_t want[MAXD];
    if (chunks) {
        for (int k = 0; k < n->ndim; k++) want[k] = chunks[k];
    } else {
        /* cut along the leading axes to about AUTO_CHUNK_ELEMS elements */
        int64_t budget = AUTO_CHUNK_ELEMS;
        for (int k = 0; k < n->ndim; k++) {
            int64_t rest = 1;
            for (int j = k + 1; j < n->ndim; j++) rest *= n->shape[j];
            if (rest >= budget) {
                want[k] = 1;
                continue;
            }
            want[k] = budget / rest;
            for (int j = k + 1; j < n->ndim; j++) want[j] = n->shape[j];
            break;
        }
    }
    n->nchunks = 1;
    n->size = 1;
    for (int k = 0; k < n->ndim; k++) {
        int64_t c = want[k] < 1 ? 1 : want[k];
        if (c > n->shape[k]) c = n->shape[k];
        n->chunk[k] = c;
        n->nch[k] = (n->shape[k] + c - 1) / c;
        n->nchunks *= n->nch[k];
        n->size *= n->shape[k];
    }
}

void chunk_index(const cask_array *n, int64_t c, int64_t *idx)
{
    for (int k = n->ndim - 1; k >= 0; k--) {
        idx[k] = c % n->nch[k];
        c /= n->nch[k];
    }
}

int64_t chunk_linear(const cask_array *n, const int64_t *idx)
{
    int64_t c = 0;
    for (int k = 0; k < n->ndim; k++) c = c * n->nch[k] + idx[k];
    return c;
}

void chunk_host_args(const cask_array *n, int64_t c, ak_host_args *h)
{
    int64_t idx[MAXD];
    memset(h, 0, sizeof *h);
    chunk_index(n, c, idx);
    chunk_geom(n, idx, &h->geom);
    h->esize = (int32_t)cask_dtype_size(n->dtype);
}

void chunk_geom(const cask_array *n, const int64_t *idx, ak_geom *g)
{
    memset(g, 0, sizeof *g);
    g->ndim = n->ndim;
    g->n = 1;
    for (int k = 0; k < n->ndim; k++) {
        g->offset[k] = idx[k] * n->chunk[k];
        int64_t e = n->shape[k] - g->offset[k];
        g->shape[k] = e < n->chunk[k] ? e : n->chunk[k];
        g->gshape[k] = n->shape[k];
        g->n *= g->shape[k];
    }
}

size_t chunk_bytes(const cask_array *n, const int64_t *idx)
{
    ak_geom g;
    chunk_geom(n, idx, &g);
    return (size_t)g.n * cask_dtype_size(n->dtype);
}

/* ---- nodes ---- */

cask_status node_new(cask_array_ctx *ctx, node_kind kind, cask_dtype dt, int ndim,
                     const int64_t *shape, const int64_t *chunks, cask_array **out)
{
    if (!dtype_valid(dt)) return arr_error(ctx, CASK_ERR_INVALID, "invalid dtype %d", (int)dt);
    if (!shape_valid(ndim, shape))
        return arr_error(ctx, CASK_ERR_INVALID, "invalid shape (ndim %d; sizes must be >= 1)",
                         ndim);
    if (chunks)
        for (int k = 0; k < ndim; k++)
            if (chunks[k] < 1)
                return arr_error(ctx, CASK_ERR_INVALID, "chunk size %lld on axis %d",
                                 (long long)chunks[k], k);
    cask_array *n = calloc(1, sizeof *n);
    if (!n) return arr_error(ctx, CASK_ERR_NOMEM, "out of memory");
    n->ctx = ctx;
    n->kind = kind;
    n->dtype = dt;
    n->ndim = ndim;
    n->refs = 1;
    for (int k = 0; k < ndim; k++) n->shape[k] = shape[k];
    node_set_chunks(n, chunks);
    *out = n;
    return CASK_OK;
}

void node_add_input(cask_array *n, cask_array *in)
{
    n->in[n->nin++] = cask_array_retain(in);
}

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t node_hash(const cask_array *n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int hdr[4] = {(int)n->kind, n->op, (int)n->dtype, n->ndim};
    h = fnv(h, hdr, sizeof hdr);
    h = fnv(h, n->shape, sizeof n->shape);
    h = fnv(h, n->chunk, sizeof n->chunk);
    for (int i = 0; i < n->nin; i++) h = fnv(h, &n->in[i]->id, sizeof n->in[i]->id);
    h = fnv(h, &n->p, sizeof n->p);
    if (n->blob_len) h = fnv(h, n->blob, n->blob_len);
    return h;
}

static int node_equal(const cask_array *a, const cask_array *b)
{
    if (a->kind != b->kind || a->op != b->op || a->dtype != b->dtype || a->ndim != b->ndim ||
        a->nin != b->nin || a->blob_len != b->blob_len)
        return 0;
    if (memcmp(a->shape, b->shape, sizeof a->shape) || memcmp(a->chunk, b->chunk, sizeof a->chunk))
        return 0;
    for (int i = 0; i < a->nin; i++)
        if (a->in[i] != b->in[i]) return 0;
    if (memcmp(&a->p, &b->p, sizeof a->p)) return 0;
    return !a->blob_len || !memcmp(a->blob, b->blob, a->blob_len);
}

static void link_all(cask_array *n)
{
    cask_array_ctx *ctx = n->ctx;
    n->id = ctx->next_id++;
    n->next_all = ctx->all;
    if (ctx->all) ctx->all->prev_all = n;
    ctx->all = n;
}

static void table_grow(cask_array_ctx *ctx)
{
    size_t nb = ctx->nbuckets * 2;
    cask_array **b = calloc(nb, sizeof *b);
    if (!b) return;   /* keep the smaller table: still correct */
    for (size_t i = 0; i < ctx->nbuckets; i++) {
        cask_array *n = ctx->buckets[i];
        while (n) {
            cask_array *next = n->hnext;
            n->hnext = b[n->hash & (nb - 1)];
            b[n->hash & (nb - 1)] = n;
            n = next;
        }
    }
    free(ctx->buckets);
    ctx->buckets = b;
    ctx->nbuckets = nb;
}

cask_array *node_intern(cask_array *n)
{
    cask_array_ctx *ctx = n->ctx;
    n->hash = node_hash(n);
    if (ctx->cse) {
        for (cask_array *e = ctx->buckets[n->hash & (ctx->nbuckets - 1)]; e; e = e->hnext)
            if (e->hash == n->hash && node_equal(e, n)) {
                node_discard(n);
                return cask_array_retain(e);
            }
    }
    link_all(n);
    if (ctx->nhashed + 1 > ctx->nbuckets) table_grow(ctx);
    size_t b = n->hash & (ctx->nbuckets - 1);
    n->hnext = ctx->buckets[b];
    ctx->buckets[b] = n;
    n->hashed = 1;
    ctx->nhashed++;
    return n;
}

void node_discard(cask_array *n)
{
    if (!n) return;
    for (int i = 0; i < n->nin; i++) cask_array_release(n->in[i]);
    free(n->blob);
    free(n);
}

void node_unshare(cask_array *n)
{
    if (!n->hashed) return;
    cask_array_ctx *ctx = n->ctx;
    cask_array **pp = &ctx->buckets[n->hash & (ctx->nbuckets - 1)];
    while (*pp && *pp != n) pp = &(*pp)->hnext;
    if (*pp) *pp = n->hnext;
    n->hashed = 0;
    ctx->nhashed--;
}

cask_array *cask_array_retain(cask_array *a)
{
    if (a) a->refs++;
    return a;
}

void cask_array_release(cask_array *a)
{
    /* an explicit stack: releasing the end of a long chain must not recurse deeply */
    cask_array *stack[64];
    int top = 0;
    if (!a) return;
    stack[top++] = a;
    while (top) {
        cask_array *n = stack[--top];
        if (--n->refs > 0) continue;
        cask_array_ctx *ctx = n->ctx;
        node_unshare(n);
        if (n->prev_all) n->prev_all->next_all = n->next_all;
        else ctx->all = n->next_all;
        if (n->next_all) n->next_all->prev_all = n->prev_all;
        for (int i = 0; i < n->nin; i++) {
            if (top < 64) stack[top++] = n->in[i];
            else cask_array_release(n->in[i]);
        }
        node_free_storage(n);
    }
}

cask_status cask_array_get_meta(const cask_array *a, cask_array_meta *m)
{
    if (!a || !m) return CASK_ERR_INVALID;
    memset(m, 0, sizeof *m);
    m->dtype = a->dtype;
    m->ndim = a->ndim;
    for (int k = 0; k < a->ndim; k++) {
        m->shape[k] = a->shape[k];
        m->chunks[k] = a->chunk[k];
        m->nchunks[k] = a->nch[k];
    }
    m->size = a->size;
    m->total_chunks = a->nchunks;
    m->persisted = a->mat != NULL;
    return CASK_OK;
}
