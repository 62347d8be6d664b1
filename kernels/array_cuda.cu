/* kernels/array_cuda.cu: CUDA implementations of the array kernels (array_kernels.h):
 * fused programs, rechunk copies and tile products (reductions: array_cuda_reduce.cu).
 *
 * Fused programs: one kernel interprets the accumulator program for every element. The
 * program lives in the kernel's parameter space (__grid_constant__, read through the
 * constant cache: every thread of a warp decodes the same instruction, no divergence),
 * each thread carries V elements so that decoding is paid once per V, and the value
 * stays in registers from the loads to the single store. Side registers (only DAG
 * programs use them) live in local memory. Where the build has NVRTC, a program is
 * instead compiled to its own kernel (array_jit.cu) and the interpreter is the fallback. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef CASK_HAVE_CUBLAS
#include "kernels/cuda_libs.h"   /* cuBLAS, opened by the first product */
#endif
#include "kernels/array_cuda_eval.cuh"

template <int V, int MINB, bool IDX>
static __global__ void __launch_bounds__(AK_THREADS, MINB)
fused_kernel(const __grid_constant__ ak_fused_args A, const __grid_constant__ ak_ptrs P)
{
    const int64_t n = A.geom.n;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t base = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; base < n;
         base += stride * V) {
        int64_t e[V];
#pragma unroll
        for (int v = 0; v < V; v++) {
            int64_t x = base + v * stride;
            e[v] = x < n ? x : n - 1;   /* past the end: recompute the last, store nothing */
        }
        ak_acc acc[V];
        eval_prog<V, IDX>(A, P, e, acc);
#pragma unroll
        for (int v = 0; v < V; v++)
            if (base + v * stride < n) store_typed(A.prog.out_dt, P.out, e[v], acc[v]);
    }
}

extern "C" cask_status ak_cuda_fused(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_fused_args *a = (const ak_fused_args *)cask_task_args(ctx, &asz);
    if (!a || asz < sizeof *a) return cask_task_fail(ctx, "bad arguments");
    ak_ptrs P;
    memset(&P, 0, sizeof P);
    for (int i = 0; i < a->prog.nin; i++) P.in[i] = cask_task_buffer(ctx, i);
    P.out = cask_task_buffer(ctx, a->prog.nin);
    /* 4 elements per thread, 64 registers (4 blocks of 256 per SM): measured best on an
     * H100 among V = 1, 2, 4, 8 and 3-4 blocks per SM (bench/RESULTS.md) */
    cudaStream_t s = stream_of(ctx);
    if (a->jit && ak_jit_launch(a->jit, a, P.in, P.out, s) == 0)
        return launched(ctx, "array.fused: launch of the compiled program");
    unsigned blocks = grid_for(a->geom.n, AK_THREADS * 4);
    if (a->need_index) fused_kernel<4, 4, true><<<blocks, AK_THREADS, 0, s>>>(*a, P);
    else fused_kernel<4, 4, false><<<blocks, AK_THREADS, 0, s>>>(*a, P);
    return launched(ctx, "array.fused: launch");
}

/* ---- rechunk copies ---- */

struct box_copy {
    int ndim;
    int esize;
    int64_t ext[AK_MAX_DIMS];
    int64_t dst_stride[AK_MAX_DIMS], src_stride[AK_MAX_DIMS];
    int64_t dst_base, src_base, total;
};

static __global__ void copy_box_kernel(const __grid_constant__ box_copy B, char *dst,
                                       const char *src)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < B.total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = t, d = B.dst_base, s = B.src_base;
        for (int k = B.ndim - 1; k >= 0; k--) {
            int64_t j = rem % B.ext[k];
            rem /= B.ext[k];
            d += j * B.dst_stride[k];
            s += j * B.src_stride[k];
        }
        if (B.esize == 8) ((uint64_t *)dst)[d] = ((const uint64_t *)src)[s];
        else ((uint32_t *)dst)[d] = ((const uint32_t *)src)[s];
    }
}

extern "C" cask_status ak_cuda_copy(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_copy_args *a = (const ak_copy_args *)cask_task_args(ctx, &asz);
    if (!a || asz < sizeof *a) return cask_task_fail(ctx, "bad arguments");
    char *dst = (char *)cask_task_buffer(ctx, a->nin);
    for (int i = 0; i < a->nin; i++) {
        box_copy B;
        memset(&B, 0, sizeof B);
        B.ndim = a->ndim;
        B.esize = a->esize;
        B.total = 1;
        int64_t ds = 1, ss = 1;
        for (int k = a->ndim - 1; k >= 0; k--) {
            int64_t l1 = a->in_off[i][k], h1 = l1 + a->in_shape[i][k];
            int64_t l2 = a->out_off[k], h2 = l2 + a->out_shape[k];
            int64_t lo = l1 > l2 ? l1 : l2, hi = h1 < h2 ? h1 : h2;
            B.ext[k] = hi > lo ? hi - lo : 0;
            B.total *= B.ext[k];
            B.dst_stride[k] = ds;
            B.src_stride[k] = ss;
            B.dst_base += (lo - l2) * ds;
            B.src_base += (lo - l1) * ss;
            ds *= a->out_shape[k];
            ss *= a->in_shape[i][k];
        }
        if (!B.total) continue;
        copy_box_kernel<<<grid_for(B.total, AK_THREADS), AK_THREADS, 0, stream_of(ctx)>>>(
            B, dst, (const char *)cask_task_buffer(ctx, i));
    }
    return launched(ctx, "array.rechunk: launch");
}

/* ---- matrix product of tiles ---- */

#define MM_T 16

/* C = [C +] A B, row-major, in arithmetic type U (unsigned for integers: wrapping). */
template <typename T, typename U>
static __global__ void mm_kernel(const T *A, const T *B, T *C, int64_t m, int64_t n, int64_t k,
                                 int beta)
{
    __shared__ U as[MM_T][MM_T], bs[MM_T][MM_T];
    int64_t i = (int64_t)blockIdx.y * MM_T + threadIdx.y, j = (int64_t)blockIdx.x * MM_T + threadIdx.x;
    U acc = 0;
    for (int64_t k0 = 0; k0 < k; k0 += MM_T) {
        int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (i < m && ka < k) ? (U)A[i * k + ka] : (U)0;
        bs[threadIdx.y][threadIdx.x] = (kb < k && j < n) ? (U)B[kb * n + j] : (U)0;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < MM_T; t++) acc += as[threadIdx.y][t] * bs[t][threadIdx.x];
        __syncthreads();
    }
    if (i < m && j < n) C[i * n + j] = (T)(beta ? (U)C[i * n + j] + acc : acc);
}

template <typename T, typename U>
static void mm_launch(const void *A, const void *B, void *C, const ak_mm_args *a, cudaStream_t s)
{
    dim3 blk(MM_T, MM_T), grd((unsigned)((a->n + MM_T - 1) / MM_T), (unsigned)((a->m + MM_T - 1) / MM_T));
    mm_kernel<T, U><<<grd, blk, 0, s>>>((const T *)A, (const T *)B, (T *)C, a->m, a->n, a->k, a->beta);
}

#ifdef CASK_HAVE_CUBLAS
struct blas_entry {
    cudaStream_t stream;
    int device;
    cublasHandle_t h;
};
struct blas_cache {
    pthread_mutex_t mu;
    int n;
    blas_entry e[256];
};

static cublasHandle_t blas_handle(blas_cache *c, cudaStream_t s, const cuda_blas_fns *f)
{
    int dev = 0;
    cudaGetDevice(&dev);
    cublasHandle_t h = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n && !h; i++)
        if (c->e[i].stream == s && c->e[i].device == dev) h = c->e[i].h;
    if (!h && c->n < 256 && f->create(&h) == CUBLAS_STATUS_SUCCESS) {
        f->set_stream(h, s);
        c->e[c->n].stream = s;
        c->e[c->n].device = dev;
        c->e[c->n++].h = h;
    }
    pthread_mutex_unlock(&c->mu);
    return h;
}
#endif

extern "C" void *ak_blas_cache_create(void)
{
#ifdef CASK_HAVE_CUBLAS
    blas_cache *c = (blas_cache *)calloc(1, sizeof(blas_cache));
    if (c) pthread_mutex_init(&c->mu, NULL);
    return c;
#else
    return NULL;
#endif
}

extern "C" void ak_blas_cache_destroy(void *cache)
{
#ifdef CASK_HAVE_CUBLAS
    blas_cache *c = (blas_cache *)cache;
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        cudaSetDevice(c->e[i].device);
        cuda_blas_load(NULL)->destroy(c->e[i].h);   /* (made: cuBLAS was opened) */
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
#else
    (void)cache;
#endif
}

extern "C" cask_status ak_cuda_matmul(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_mm_args *a = (const ak_mm_args *)cask_task_args(ctx, &asz);
    if (!a || asz < sizeof *a) return cask_task_fail(ctx, "bad arguments");
    const void *A = cask_task_buffer(ctx, 0), *B = cask_task_buffer(ctx, 1);
    void *C = cask_task_buffer(ctx, 2);
    cudaStream_t s = stream_of(ctx);
#ifdef CASK_HAVE_CUBLAS
    if ((a->dt == AK_F32 || a->dt == AK_F64) && a->blas) {
        const char *why = NULL;
        const cuda_blas_fns *f = cuda_blas_load(&why);
        if (!f) return cask_task_fail(ctx, "array.matmul: %s", why);
        cublasHandle_t h = blas_handle((blas_cache *)a->blas, s, f);
        if (!h) return cask_task_fail(ctx, "array.matmul: no cuBLAS handle");
        int m = (int)a->m, n = (int)a->n, k = (int)a->k;
        cublasStatus_t st;
        /* row-major C = A B is column-major C^T = B^T A^T */
        if (a->dt == AK_F32) {
            float one = 1.0f, beta = a->beta ? 1.0f : 0.0f;
            st = f->sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, (const float *)B, n,
                          (const float *)A, k, &beta, (float *)C, n);
        } else {
            double one = 1.0, beta = a->beta ? 1.0 : 0.0;
            st = f->dgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, (const double *)B, n,
                          (const double *)A, k, &beta, (double *)C, n);
        }
        if (st != CUBLAS_STATUS_SUCCESS)
            return cask_task_fail(ctx, "array.matmul: cuBLAS gemm failed (status %d)", (int)st);
        return launched(ctx, "array.matmul");
    }
#endif
    switch (a->dt) {
    case AK_F32: mm_launch<float, float>(A, B, C, a, s); break;
    case AK_F64: mm_launch<double, double>(A, B, C, a, s); break;
    case AK_I32: mm_launch<int32_t, uint32_t>(A, B, C, a, s); break;
    case AK_U32: mm_launch<uint32_t, uint32_t>(A, B, C, a, s); break;
    default: mm_launch<int64_t, uint64_t>(A, B, C, a, s); break;
    }
    return launched(ctx, "array.matmul: launch");
}
