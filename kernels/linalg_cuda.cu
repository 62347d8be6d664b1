/* kernels/linalg_cuda.cu: the GPU tile kernels of dense linear algebra
 * (linalg_kernels.h): cuSOLVER potrf, cuBLAS trsm, syrk and gemm on the task's stream.
 *
 * Row-major tiles are column-major transposes: a row-major r x c tile is a column-major
 * c x r one with the same leading dimension c. So row-major C = op(A) op(B) is
 * column-major C^T = op(B)^T op(A)^T (gemm with the operands swapped), a row-major lower
 * triangle is a column-major upper one (trsm and syrk with uplo upper, trsm's side
 * swapped), and potrf with uplo upper on the buffer leaves L in its row-major lower part.
 *
 * POTRF's outcome: cuSOLVER writes info on the device. After it, a small kernel checks
 * the diagonal (a NaN or a non-positive pivot that cuSOLVER let through sets info too)
 * and zeroes the tile above it; info is copied to pinned host memory and a host function
 * ends the task (cask_task_async_begin/end), failing it with CASK_ERR_NOT_SPD if info is
 * set. So the graph stops at the first failing tile, as LAPACK's info says, and a
 * failure is never read from a buffer someone else overwrote.
 *
 * Handles: one cuSOLVER and one cuBLAS handle per (device, stream), with potrf's
 * workspace and info words, made on the stream's first tile (creating a handle and
 * allocating synchronise once) and freed with the array context.
 *
 * cuSOLVER and cuBLAS are opened by the first tile (dlopen: cuda_libs.h), not linked:
 * they cost start-up time and memory in every process, also those that never factor a
 * matrix (OpenBLAS is opened lazily for the same reason, blas_load.h). */
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/linalg_kernels.h"
#if defined(CASK_HAVE_CUBLAS) && defined(CASK_HAVE_CUSOLVER)
#define LA_GPU 1
#include "kernels/cuda_libs.h"
#endif

#ifdef LA_GPU
#define LA_SLOTS 64      /* POTRFs one stream may have in flight (host-function records) */

struct la_entry {
    cudaStream_t stream;
    int device;
    const cuda_blas_fns *b;    /* the opened libraries' entry points */
    const cuda_sol_fns *sf;
    cublasHandle_t blas;
    cusolverDnHandle_t sol;
    void *work;          /* potrf workspace */
    size_t work_bytes;
    int *dinfo;          /* device info words, one per slot */
    int *hinfo;          /* pinned host copies */
    unsigned *dnorm;     /* TRINV's norms of L and L^-1 (float bits), two per slot */
    unsigned *hnorm;     /* pinned host copies */
    unsigned next;       /* next slot (the stream runs them in order) */
    void *scratch;       /* TRSM's product by L^-1 before it replaces the tile */
    size_t scratch_bytes;
};

struct la_cache {
    pthread_mutex_t mu;
    int n;
    la_entry e[256];
};

/* What a POTRF's (TRINV's) host function needs to end its task. */
struct la_done {
    cask_task_async *token;
    int *hinfo;
    long long ti, tj, row0;
    const unsigned *hnorm;   /* TRINV: the norms */
    int32_t *inv_ok;         /* TRINV: the verdict */
};

static la_entry *entry_of(la_cache *c, cudaStream_t s, char *err, size_t errlen)
{
    int dev = 0;
    cudaGetDevice(&dev);
    la_entry *e = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n && !e; i++)
        if (c->e[i].stream == s && c->e[i].device == dev) e = &c->e[i];
    if (!e && c->n < 256) {
        la_entry *x = &c->e[c->n];
        memset(x, 0, sizeof *x);
        x->stream = s;
        x->device = dev;
        const char *what = NULL;
        const cuda_sol_fns *f = cuda_sol_load(&what);
        const cuda_blas_fns *b = f ? cuda_blas_load(&what) : NULL;
        if (!f || !b) {
            /* what: the library that did not open, and why */
        } else if (b->create(&x->blas) != CUBLAS_STATUS_SUCCESS) what = "cublasCreate";
        else if (b->set_stream(x->blas, s) != CUBLAS_STATUS_SUCCESS) what = "cublasSetStream";
        else if (f->create(&x->sol) != CUSOLVER_STATUS_SUCCESS) what = "cusolverDnCreate";
        else if (f->set_stream(x->sol, s) != CUSOLVER_STATUS_SUCCESS)
            what = "cusolverDnSetStream";
        else if (cudaMalloc(&x->dinfo, LA_SLOTS * sizeof(int)) != cudaSuccess)
            what = "cudaMalloc (info words)";
        else if (cudaHostAlloc(&x->hinfo, LA_SLOTS * sizeof(int), cudaHostAllocDefault) !=
                 cudaSuccess)
            what = "cudaHostAlloc (info words)";
        else if (cudaMalloc(&x->dnorm, 2 * LA_SLOTS * sizeof(unsigned)) != cudaSuccess)
            what = "cudaMalloc (norm words)";
        else if (cudaHostAlloc(&x->hnorm, 2 * LA_SLOTS * sizeof(unsigned), cudaHostAllocDefault) !=
                 cudaSuccess)
            what = "cudaHostAlloc (norm words)";
        if (what) {
            snprintf(err, errlen, !f || !b ? "%s (GPU %d)" : "%s failed on GPU %d", what, dev);
            if (x->blas) b->destroy(x->blas);
            if (x->sol) f->destroy(x->sol);
            if (x->dinfo) cudaFree(x->dinfo);
            if (x->hinfo) cudaFreeHost(x->hinfo);
            if (x->dnorm) cudaFree(x->dnorm);
        } else {
            x->b = b;
            x->sf = f;
            e = x;
            c->n++;
        }
    } else if (!e) {
        snprintf(err, errlen, "more than 256 GPU streams");
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

static la_entry *entry(cask_task_ctx *ctx, const la_args *a, cask_status *st)
{
    char err[320] = "no handle cache";
    la_entry *e = a->gpu ? entry_of((la_cache *)a->gpu, (cudaStream_t)cask_task_cuda_stream(ctx),
                                    err, sizeof err) : NULL;
    if (!e) *st = cask_task_fail(ctx, "linalg: %s", err);
    return e;
}

static const la_args *args_of(cask_task_ctx *ctx)
{
    size_t sz;
    const la_args *a = (const la_args *)cask_task_args(ctx, &sz);
    return a && sz >= sizeof *a ? a : NULL;
}

static void out_dims(const la_args *a, int64_t *rows, int64_t *cols)
{
    *rows = a->op == LA_POTRF || a->op == LA_SYRK ? a->n : a->m;
    *cols = a->n;
}

/* The final tile out to the user's matrix (dst_host), on the stream. */
static cask_status copy_out(cask_task_ctx *ctx, const la_args *a, int out, cudaStream_t s)
{
    if (!a->dst_host) return CASK_OK;
    int64_t rows, cols;
    out_dims(a, &rows, &cols);
    size_t es = a->dt == LA_F64 ? 8 : 4;
    cudaError_t e = cudaMemcpy2DAsync(a->dst_host, (size_t)a->dst_ld * es, cask_task_buffer(ctx, out),
                                      (size_t)cols * es, (size_t)cols * es, (size_t)rows,
                                      cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "linalg: cudaMemcpy2DAsync (tile (%lld,%lld) to host): %s",
                              (long long)a->ti, (long long)a->tj, cudaGetErrorString(e));
    return CASK_OK;
}

/* copy_in: buffer 0, or the user's tile, into the output, on the stream. */
static cask_status copy_in(cask_task_ctx *ctx, const la_args *a, int out, cudaStream_t s)
{
    if (!a->copy_in) return CASK_OK;
    if (a->src_host) {
        int64_t rows, cols;
        out_dims(a, &rows, &cols);
        size_t es = a->dt == LA_F64 ? 8 : 4;
        if (cask_task_buffer_size(ctx, out) < (size_t)(rows * cols) * es)
            return cask_task_fail(ctx, "linalg: tile buffer too small");
        cudaError_t e = cudaMemcpy2DAsync(cask_task_buffer(ctx, out), (size_t)cols * es,
                                          a->src_host, (size_t)a->src_ld * es, (size_t)cols * es,
                                          (size_t)rows, cudaMemcpyHostToDevice, s);
        if (e != cudaSuccess)
            return cask_task_fail(ctx, "linalg: cudaMemcpy2DAsync (tile (%lld,%lld) from host): %s",
                                  (long long)a->ti, (long long)a->tj, cudaGetErrorString(e));
        return CASK_OK;
    }
    size_t n = cask_task_buffer_size(ctx, out);
    if (cask_task_buffer_size(ctx, 0) != n)
        return cask_task_fail(ctx, "linalg: tile sizes differ");
    cudaError_t e = cudaMemcpyAsync(cask_task_buffer(ctx, out), cask_task_buffer(ctx, 0), n,
                                    cudaMemcpyDeviceToDevice, s);
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "linalg: cudaMemcpyAsync (copy in): %s", cudaGetErrorString(e));
    return CASK_OK;
}

static cask_status blas_ok(cask_task_ctx *ctx, cublasStatus_t st, const char *call)
{
    if (st != CUBLAS_STATUS_SUCCESS)
        return cask_task_fail(ctx, "%s failed (status %d)", call, (int)st);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return cask_task_fail(ctx, "%s: %s", call, cudaGetErrorString(e));
    return CASK_OK;
}

/* After potrf: a pivot that is NaN or not positive sets info (if cuSOLVER did not), and
 * the tile above the diagonal becomes zero. One block per 32 rows. */
template <typename T>
static __global__ void potrf_finish(T *c, int n, int *info)
{
    int i = blockIdx.x * 32 + threadIdx.y;
    if (i >= n) return;
    if (threadIdx.x == 0) {
        T d = c[(size_t)i * n + i];
        if (!(d > 0) || isinf((double)d)) atomicMin(info, i + 1);   /* info 0 means fine */
    }
    for (int j = i + 1 + threadIdx.x; j < n; j += 32) c[(size_t)i * n + j] = 0;
}

/* info 0 means success: the check above must not replace a real info by a later one */
static __global__ void info_prepare(int *info)
{
    if (*info == 0) *info = 0x7fffffff;
}
static __global__ void info_settle(int *info)
{
    if (*info == 0x7fffffff) *info = 0;
}

static void CUDART_CB potrf_done(void *arg)
{
    la_done *d = (la_done *)arg;
    int info = *d->hinfo;
    cask_task_async *tok = d->token;
    if (info > 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "tile (%lld,%lld): the leading minor of order %lld is not "
                 "positive definite (or not finite)", d->ti, d->tj, d->row0 + info);
        free(d);
        cask_task_async_end(tok, CASK_ERR_NOT_SPD, msg);
        return;
    }
    free(d);
    cask_task_async_end(tok, info < 0 ? CASK_ERR_TASK_FAILED : CASK_OK,
                        info < 0 ? "cuSOLVER potrf: bad argument" : NULL);
}
#endif /* LA_GPU */

extern "C" void *la_gpu_cache_create(void)
{
#ifdef LA_GPU
    la_cache *c = (la_cache *)calloc(1, sizeof(la_cache));
    if (c) pthread_mutex_init(&c->mu, NULL);
    return c;
#else
    return NULL;
#endif
}

extern "C" void la_gpu_cache_destroy(void *cache)
{
#ifdef LA_GPU
    la_cache *c = (la_cache *)cache;
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        la_entry *e = &c->e[i];
        cudaSetDevice(e->device);
        cudaStreamSynchronize(e->stream);
        e->b->destroy(e->blas);
        e->sf->destroy(e->sol);
        cudaFree(e->work);
        cudaFree(e->dinfo);
        cudaFreeHost(e->hinfo);
        cudaFree(e->dnorm);
        cudaFreeHost(e->hnorm);
        cudaFree(e->scratch);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
#else
    (void)cache;
#endif
}

extern "C" int la_gpu_available(void)
{
#ifdef LA_GPU
    return 1;
#else
    return 0;
#endif
}

#ifdef LA_GPU
/* Makes the task asynchronous and ends it by fn(d) once the stream gets there (fn frees
 * d and ends d->token). */
static cask_status end_by_host_fn(cask_task_ctx *ctx, cudaStream_t s, cudaHostFn_t fn, la_done *d,
                                  const char *what)
{
    d->token = cask_task_async_begin(ctx);
    cudaError_t ce = cudaLaunchHostFunc(s, fn, d);
    if (ce != cudaSuccess) {
        /* the token is begun: end it with the failure, the kernel returns OK */
        char msg[160];
        snprintf(msg, sizeof msg, "cudaLaunchHostFunc (%s): %s", what, cudaGetErrorString(ce));
        cask_task_async_end(d->token, CASK_ERR_CUDA, msg);
        free(d);
    }
    return CASK_OK;
}

extern "C" cask_status la_cuda_potrf(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a) return cask_task_fail(ctx, "bad arguments");
    cask_status st = CASK_OK;
    la_entry *e = entry(ctx, a, &st);
    if (!e) return st;
    cudaStream_t s = e->stream;
    int out = a->copy_in && !a->src_host;
    if ((st = copy_in(ctx, a, out, s))) return st;
    void *c = cask_task_buffer(ctx, out);
    int n = (int)a->n, lwork = 0;
    cusolverStatus_t cs = a->dt == LA_F64
        ? e->sf->dbuf(e->sol, CUBLAS_FILL_MODE_UPPER, n, (double *)c, n, &lwork)
        : e->sf->sbuf(e->sol, CUBLAS_FILL_MODE_UPPER, n, (float *)c, n, &lwork);
    if (cs != CUSOLVER_STATUS_SUCCESS)
        return cask_task_fail(ctx, "cusolverDnXpotrf_bufferSize failed (status %d)", (int)cs);
    size_t need = (size_t)lwork * (a->dt == LA_F64 ? 8 : 4);
    if (need > e->work_bytes) {
        /* (the stream's first potrf of this size: a synchronising allocation, once) */
        cudaStreamSynchronize(s);
        cudaFree(e->work);
        e->work = NULL;
        e->work_bytes = 0;
        if (cudaMalloc(&e->work, need) != cudaSuccess)
            return cask_task_fail_status(ctx, CASK_ERR_NOMEM,
                                         "cudaMalloc of %zu bytes (potrf workspace)", need);
        e->work_bytes = need;
    }
    unsigned slot = e->next++ % LA_SLOTS;
    int *dinfo = e->dinfo + slot, *hinfo = e->hinfo + slot;
    cs = a->dt == LA_F64
        ? e->sf->dpotrf(e->sol, CUBLAS_FILL_MODE_UPPER, n, (double *)c, n, (double *)e->work,
                          lwork, dinfo)
        : e->sf->spotrf(e->sol, CUBLAS_FILL_MODE_UPPER, n, (float *)c, n, (float *)e->work,
                           lwork, dinfo);
    if (cs != CUSOLVER_STATUS_SUCCESS)
        return cask_task_fail(ctx, "cusolverDnXpotrf failed (status %d)", (int)cs);
    info_prepare<<<1, 1, 0, s>>>(dinfo);
    dim3 blk(32, 32), grd((unsigned)((n + 31) / 32));
    if (a->dt == LA_F64) potrf_finish<double><<<grd, blk, 0, s>>>((double *)c, n, dinfo);
    else potrf_finish<float><<<grd, blk, 0, s>>>((float *)c, n, dinfo);
    info_settle<<<1, 1, 0, s>>>(dinfo);
    if ((st = copy_out(ctx, a, out, s))) return st;
    cudaError_t ce = cudaMemcpyAsync(hinfo, dinfo, sizeof(int), cudaMemcpyDeviceToHost, s);
    if (ce != cudaSuccess)
        return cask_task_fail(ctx, "cudaMemcpyAsync (potrf info): %s", cudaGetErrorString(ce));
    la_done *d = (la_done *)calloc(1, sizeof *d);
    if (!d) return cask_task_fail_status(ctx, CASK_ERR_NOMEM, "out of memory");
    d->hinfo = hinfo;
    d->ti = a->ti;
    d->tj = a->tj;
    d->row0 = a->row0;
    return end_by_host_fn(ctx, s, potrf_done, d, "potrf info");
}

/* The common start of a tile kernel with nin inputs: its arguments, the stream's handles,
 * where its inputs and output are (*base: the first input, after the source of a copy-in),
 * and the copy-in done. NULL with *st set on failure. */
static la_entry *tile_begin(cask_task_ctx *ctx, int nin, const la_args **a, int *base,
                            int *out, cask_status *st)
{
    *st = CASK_OK;
    *a = args_of(ctx);
    if (!*a) {
        *st = cask_task_fail(ctx, "bad arguments");
        return NULL;
    }
    la_entry *e = entry(ctx, *a, st);
    if (!e) return NULL;
    *base = (*a)->copy_in && !(*a)->src_host;
    *out = *base + nin + ((*a)->inv != 0);   /* (TRSM's L^-1 after L) */
    if ((*st = copy_in(ctx, *a, *out, e->stream))) return NULL;
    return e;
}

/* Grows the stream's scratch to bytes (synchronising, once per size). */
static cask_status scratch_for(cask_task_ctx *ctx, la_entry *e, size_t bytes)
{
    if (bytes <= e->scratch_bytes) return CASK_OK;
    cudaStreamSynchronize(e->stream);
    cudaFree(e->scratch);
    e->scratch = NULL;
    e->scratch_bytes = 0;
    if (cudaMalloc(&e->scratch, bytes) != cudaSuccess)
        return cask_task_fail_status(ctx, CASK_ERR_NOMEM, "cudaMalloc of %zu bytes (trsm scratch)",
                                     bytes);
    e->scratch_bytes = bytes;
    return CASK_OK;
}

/* TRSM side 'R', trans, by L^-1: row-major C = C L^-T, in column-major
 * C^T = (L^-1) C^T, where the buffer of L^-1 read column-major is its transpose: a GEMM
 * into the scratch, copied back over the tile. */
static cask_status trsm_by_inverse(cask_task_ctx *ctx, la_entry *e, const la_args *a,
                                   const void *linv, void *c, int out)
{
    int m = (int)a->m, n = (int)a->n;
    size_t es = a->dt == LA_F64 ? 8 : 4, bytes = (size_t)m * n * es;
    cask_status st = scratch_for(ctx, e, bytes);
    if (st) return st;
    cublasStatus_t bs;
    if (a->dt == LA_F64) {
        double one = 1.0, zero = 0.0;
        bs = e->b->dgemm(e->blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, n, &one, (const double *)linv, n,
                         (const double *)c, n, &zero, (double *)e->scratch, n);
    } else {
        float one = 1.0f, zero = 0.0f;
        bs = e->b->sgemm(e->blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, n, &one, (const float *)linv, n,
                         (const float *)c, n, &zero, (float *)e->scratch, n);
    }
    if ((st = blas_ok(ctx, bs, "cublasXgemm (trsm by the inverse)"))) return st;
    cudaError_t ce = cudaMemcpyAsync(c, e->scratch, bytes, cudaMemcpyDeviceToDevice, e->stream);
    if (ce != cudaSuccess)
        return cask_task_fail(ctx, "linalg: cudaMemcpyAsync (trsm scratch): %s",
                              cudaGetErrorString(ce));
    return copy_out(ctx, a, out, e->stream);
}

extern "C" cask_status la_cuda_trsm(cask_task_ctx *ctx)
{
    const la_args *a;
    int base, out;
    cask_status st;
    la_entry *e = tile_begin(ctx, 1, &a, &base, &out, &st);
    if (!e) return st;
    const void *l = cask_task_buffer(ctx, base);
    void *c = cask_task_buffer(ctx, out);
    if (a->inv && a->inv_ok && __atomic_load_n(a->inv_ok, __ATOMIC_ACQUIRE))
        return trsm_by_inverse(ctx, e, a, cask_task_buffer(ctx, base + 1), c, out);
    /* row-major C (m x n) is column-major C^T (n x m); L lower is stored upper */
    int m = (int)a->m, n = (int)a->n, ldl = a->side == 'R' ? n : m;
    cublasSideMode_t side = a->side == 'R' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    cublasOperation_t op = a->trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t bs;
    if (a->dt == LA_F64) {
        double one = 1.0;
        bs = e->b->dtrsm(e->blas, side, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, n, m,
                         &one, (const double *)l, ldl, (double *)c, n);
    } else {
        float one = 1.0f;
        bs = e->b->strsm(e->blas, side, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, n, m,
                         &one, (const float *)l, ldl, (float *)c, n);
    }
    if ((st = blas_ok(ctx, bs, "cublasXtrsm"))) return st;
    return copy_out(ctx, a, out, e->stream);
}

extern "C" cask_status la_cuda_syrk(cask_task_ctx *ctx)
{
    const la_args *a;
    int base, out;
    cask_status st;
    la_entry *e = tile_begin(ctx, 1, &a, &base, &out, &st);
    if (!e) return st;
    const void *x = cask_task_buffer(ctx, base);
    void *c = cask_task_buffer(ctx, out);
    /* row-major A (n x k) is column-major A^T (k x n): C -= (A^T)^T A^T, upper */
    int n = (int)a->n, k = (int)a->k;
    cublasStatus_t bs;
    if (a->dt == LA_F64) {
        double mone = -1.0, one = 1.0;
        bs = e->b->dsyrk(e->blas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &mone,
                         (const double *)x, k, &one, (double *)c, n);
    } else {
        float mone = -1.0f, one = 1.0f;
        bs = e->b->ssyrk(e->blas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &mone,
                         (const float *)x, k, &one, (float *)c, n);
    }
    return blas_ok(ctx, bs, "cublasXsyrk");
}

extern "C" cask_status la_cuda_gemm(cask_task_ctx *ctx)
{
    const la_args *a;
    int base, out;
    cask_status st;
    la_entry *e = tile_begin(ctx, 2, &a, &base, &out, &st);
    if (!e) return st;
    const void *x = cask_task_buffer(ctx, base), *y = cask_task_buffer(ctx, base + 1);
    void *c = cask_task_buffer(ctx, out);
    /* column-major C^T = op(B)^T op(A)^T: the operands swap, each keeps its op */
    int m = (int)a->m, n = (int)a->n, k = (int)a->k;
    int lda = a->ta ? m : k, ldb = a->tb ? k : n;
    cublasOperation_t oa = a->ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = a->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t bs;
    if (a->dt == LA_F64) {
        double mone = -1.0, one = 1.0;
        bs = e->b->dgemm(e->blas, ob, oa, n, m, k, &mone, (const double *)y, ldb,
                         (const double *)x, lda, &one, (double *)c, n);
    } else {
        float mone = -1.0f, one = 1.0f;
        bs = e->b->sgemm(e->blas, ob, oa, n, m, k, &mone, (const float *)y, ldb,
                         (const float *)x, lda, &one, (float *)c, n);
    }
    return blas_ok(ctx, bs, "cublasXgemm");
}
/* The identity, n x n. */
template <typename T>
static __global__ void set_identity(T *c, int n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)n * n) c[i] = i / n == i % n ? (T)1 : (T)0;
}

/* ||L||_inf and ||L^-1||_inf (row-major: the largest sum of |row|) into norm[0], norm[1]
 * as float bits (non-negative floats order as their bits; NaN above them all). One block
 * a row, both matrices. */
template <typename T>
static __global__ void row_norms(const T *l, const T *li, int n, unsigned *norm)
{
    __shared__ float sh[2][256];
    int r = blockIdx.x;
    float s0 = 0, s1 = 0;
    for (int j = threadIdx.x; j <= r; j += blockDim.x) {
        s0 += fabsf((float)l[(size_t)r * n + j]);
        s1 += fabsf((float)li[(size_t)r * n + j]);
    }
    sh[0][threadIdx.x] = s0;
    sh[1][threadIdx.x] = s1;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) {
            sh[0][threadIdx.x] += sh[0][threadIdx.x + w];
            sh[1][threadIdx.x] += sh[1][threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicMax(&norm[0], __float_as_uint(sh[0][0]));
        atomicMax(&norm[1], __float_as_uint(sh[1][0]));
    }
}

static void CUDART_CB trinv_done(void *arg)
{
    la_done *d = (la_done *)arg;
    float nl, ni;
    memcpy(&nl, &d->hnorm[0], sizeof nl);
    memcpy(&ni, &d->hnorm[1], sizeof ni);
    double cond = (double)nl * (double)ni;
    __atomic_store_n(d->inv_ok, cond <= LA_INV_COND ? 1 : 0, __ATOMIC_RELEASE);
    cask_task_async *tok = d->token;
    free(d);
    cask_task_async_end(tok, CASK_OK, NULL);
}

/* TRINV: C = L^-1 by a solve of the identity (cuBLAS trsm: twice cuSOLVER's trtri's speed
 * at 2048), then the norms that decide whether TRSMs may multiply by it, read back by a
 * host function that ends the task (as POTRF's info). */
extern "C" cask_status la_cuda_trinv(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a || !a->inv_ok) return cask_task_fail(ctx, "linalg.trinv: bad arguments");
    cask_status st = CASK_OK;
    la_entry *e = entry(ctx, a, &st);
    if (!e) return st;
    cudaStream_t s = e->stream;
    int n = (int)a->n;
    size_t es = a->dt == LA_F64 ? 8 : 4;
    if (cask_task_buffer_size(ctx, 0) < (size_t)n * n * es ||
        cask_task_buffer_size(ctx, 1) < (size_t)n * n * es)
        return cask_task_fail(ctx, "linalg.trinv: tile buffer too small");
    const void *l = cask_task_buffer(ctx, 0);
    void *c = cask_task_buffer(ctx, 1);
    unsigned grd = (unsigned)(((size_t)n * n + 255) / 256);
    if (a->dt == LA_F64) set_identity<double><<<grd, 256, 0, s>>>((double *)c, n);
    else set_identity<float><<<grd, 256, 0, s>>>((float *)c, n);
    /* row-major C = L^-1 C is column-major C^T = C^T L^-T, L^T being the upper triangle
       of L's buffer read column-major */
    cublasStatus_t bs;
    if (a->dt == LA_F64) {
        double one = 1.0;
        bs = e->b->dtrsm(e->blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                         CUBLAS_DIAG_NON_UNIT, n, n, &one, (const double *)l, n, (double *)c, n);
    } else {
        float one = 1.0f;
        bs = e->b->strsm(e->blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                         CUBLAS_DIAG_NON_UNIT, n, n, &one, (const float *)l, n, (float *)c, n);
    }
    if ((st = blas_ok(ctx, bs, "cublasXtrsm (inverse)"))) return st;
    unsigned slot = e->next++ % LA_SLOTS;
    unsigned *dn = e->dnorm + 2 * slot, *hn = e->hnorm + 2 * slot;
    cudaError_t ce = cudaMemsetAsync(dn, 0, 2 * sizeof(unsigned), s);
    if (ce == cudaSuccess) {
        if (a->dt == LA_F64) row_norms<double><<<n, 256, 0, s>>>((const double *)l, (const double *)c, n, dn);
        else row_norms<float><<<n, 256, 0, s>>>((const float *)l, (const float *)c, n, dn);
        ce = cudaGetLastError();
    }
    if (ce == cudaSuccess)
        ce = cudaMemcpyAsync(hn, dn, 2 * sizeof(unsigned), cudaMemcpyDeviceToHost, s);
    if (ce != cudaSuccess)
        return cask_task_fail(ctx, "linalg.trinv: norms: %s", cudaGetErrorString(ce));
    la_done *d = (la_done *)calloc(1, sizeof *d);
    if (!d) return cask_task_fail_status(ctx, CASK_ERR_NOMEM, "out of memory");
    d->hnorm = hn;
    d->inv_ok = a->inv_ok;
    return end_by_host_fn(ctx, s, trinv_done, d, "trinv norms");
}

/* LOAD and STORE: one 2-D copy on the task's stream (the side stream), no handles. */
extern "C" cask_status la_cuda_load(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a || !a->src_host) return cask_task_fail(ctx, "linalg.load: bad arguments");
    return copy_in(ctx, a, 0, (cudaStream_t)cask_task_cuda_stream(ctx));
}

extern "C" cask_status la_cuda_store(cask_task_ctx *ctx)
{
    const la_args *a = args_of(ctx);
    if (!a || !a->dst_host) return cask_task_fail(ctx, "linalg.store: bad arguments");
    return copy_out(ctx, a, 0, (cudaStream_t)cask_task_cuda_stream(ctx));
}
#endif /* LA_GPU */
