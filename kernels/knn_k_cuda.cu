/* kernels/knn_k_cuda.cu: CUDA implementations of the K-nearest kernels (prep_sorted,
 * korder, ksearch, kmerge, kfinish). Same math and the same exactness argument as the CPU
 * code (knn_sort.h), so results are the same bytes.
 *
 * korder (knn_k_order.cu) sorts the chunk's observations by cell key. prep_sorted sorts the
 * references the same way, then fills the sorted layout and computes each tile's cap (one
 * block per tile).
 * ksearch: one block per tile of TO consecutive ordered observations, one observation per
 * thread. With pruning the block computes its tile's cap, a float32 upper bound of the dot
 * with every reference tile, sorts them in shared memory (bitonic, at most
 * KNN_SORT_MAX_TILES) and walks them nearest first until a bound falls below the block's
 * lowest threshold; pass 1 keeps the K largest float32 dots per observation in shared
 * memory and notes which visited tiles reached its threshold; pass 2 walks only those
 * again and inserts every candidate's float64 squared chord into a sorted list of K in
 * shared memory (aliasing pass 1's values). Without pruning every tile is visited in
 * order. */
#include <cuda_runtime.h>
#include <limits.h>
#include <math_constants.h>
#include "kernels/knn_sort.h"
#include "kernels/knn_cuda_task.cuh"
#include "kernels/knn_k_order.cuh"

#define FULL_MASK 0xffffffffu
/* The CPU's NAN (0x7fc00000), not CUDART_NAN_F: missing neighbours compare equal byte for
 * byte whichever device wrote them. */
#define KNN_NAN_F __int_as_float(0x7fc00000)

/* ---- prep_sorted: the references ordered like observations (korder's kernels), then
 * the sorted layout and one block per tile for its cap ---- */

static __global__ void k_fill_kernel(const void *ref, int64_t m, cask_knn_points in,
                                     const float4 *order, void *srt, int64_t mpad)
{
    const int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (s == 0) {
        knn_sorted_header h = {};
        h.magic = KNN_SORTED_MAGIC;
        h.m = m;
        h.mpad = mpad;
        h.ntiles = mpad / KNN_STILE;
        *(knn_sorted_header *)srt = h;
    }
    if (s >= mpad)
        return;
    double v[3] = {CUDART_NAN, CUDART_NAN, CUDART_NAN};
    int j = -1;
    if (s < m) {
        j = __float_as_int(order[s].w);
        knn_load_point(ref, j, in, v);
    }
    ((float4 *)knn_sorted_q32(srt))[s] = make_float4((float)v[0], (float)v[1], (float)v[2], 0.f);
    for (int c = 0; c < 3; ++c)
        knn_sorted_f64(srt, mpad, c)[s] = v[c];
    knn_sorted_orig(srt, mpad)[s] = j;
}

template <int TO> struct block_reduce;

static __global__ void __launch_bounds__(KNN_STILE) k_caps_kernel(void *srt, int64_t m,
                                                                  int64_t mpad);

static cudaError_t prep_launch(const void *ref, int64_t m, cask_knn_points in, void *srt,
                               void *scratch, cudaStream_t s)
{
    const int64_t mpad = knn_mpad(m);
    cudaError_t e = knn_k_order_launch(ref, m, in, 1, scratch, s);
    if (e != cudaSuccess)
        return e;
    k_fill_kernel<<<blocks_of(mpad, 256), 256, 0, s>>>(
        ref, m, in, (const float4 *)knn_scratch_sorted(scratch, m), srt, mpad);
    k_caps_kernel<<<(unsigned)(mpad / KNN_STILE), KNN_STILE, 0, s>>>(srt, m, mpad);
    return cudaGetLastError();
}

/* ---- ksearch ---- */

struct ksearch_params {
    const void *obs;
    int n;
    cask_knn_points in;
    const float4 *sorted_obs;
    const float4 *q32;
    const double *x64, *y64, *z64;
    const int32_t *orig;
    const double *caps;
    int ntiles;
    int k, prune, mode;
    int64_t ref_base;
    double scale;
    void *out0, *out1;
};

/* Block-wide sum (three doubles), max and min; every thread gets the result. TO threads. */
template <int TO> struct block_reduce {
    static __device__ __forceinline__ double3 sum3(double3 v, double *s)
    {
        for (int off = 16; off; off >>= 1) {
            v.x += __shfl_xor_sync(FULL_MASK, v.x, off);
            v.y += __shfl_xor_sync(FULL_MASK, v.y, off);
            v.z += __shfl_xor_sync(FULL_MASK, v.z, off);
        }
        const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
        __syncthreads();
        if (lane == 0) {
            s[3 * w] = v.x;
            s[3 * w + 1] = v.y;
            s[3 * w + 2] = v.z;
        }
        __syncthreads();
        double3 r = make_double3(0, 0, 0);
        for (int i = 0; i < TO / 32; ++i) { /* same order in every thread */
            r.x += s[3 * i];
            r.y += s[3 * i + 1];
            r.z += s[3 * i + 2];
        }
        return r;
    }
    static __device__ __forceinline__ double max1(double v, double *s)
    {
        for (int off = 16; off; off >>= 1)
            v = fmax(v, __shfl_xor_sync(FULL_MASK, v, off));
        const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
        __syncthreads();
        if (lane == 0)
            s[w] = v;
        __syncthreads();
        double r = s[0];
        for (int i = 1; i < TO / 32; ++i)
            r = fmax(r, s[i]);
        return r;
    }
    static __device__ __forceinline__ double min1(double v, double *s)
    {
        return -max1(-v, s);
    }
};

/* Insert (c2, idx) into the ascending list at base, stride TO, of k entries. */
template <int TO>
static __device__ __forceinline__ void list_insert(double *c2s, int *ids, int k, double c2, int idx)
{
    int p = (k - 1) * TO;
    if (!knn_better(c2, idx, c2s[p], ids[p]))
        return;
    while (p > 0 && knn_better(c2, idx, c2s[p - TO], ids[p - TO])) {
        c2s[p] = c2s[p - TO];
        ids[p] = ids[p - TO];
        p -= TO;
    }
    c2s[p] = c2;
    ids[p] = idx;
}

/* knn_cap_upper_dot in float32, made an upper bound by slack: the float rounding of the
 * centres (< 6e-8 each), the chord, asinf and the radii moves the angle by < 1e-6 rad, so
 * lb - 2e-6 is below the true lower bound; cosf (a few ulp) is decreasing on [0, pi], and
 * 1e-6 covers its rounding. The bound only decides what is visited; a looser bound costs
 * time, never exactness (knn_sort.h). */
static __device__ __forceinline__ float cap_upper_dot_f(float4 a, const double *b)
{
    const float dx = a.x - (float)b[0], dy = a.y - (float)b[1], dz = a.z - (float)b[2];
    const float h = 0.5f * sqrtf(dx * dx + dy * dy + dz * dz);
    const float th = 2.0f * asinf(fminf(h, 1.0f));
    const float lb = th - a.w - (float)b[3] - 2e-6f;
    return lb <= 0.0f ? 1.0f : cosf(lb) + 1e-6f;
}

static __global__ void __launch_bounds__(KNN_STILE) k_caps_kernel(void *srt, int64_t m,
                                                                  int64_t mpad)
{
    __shared__ double s_red[3 * (KNN_STILE / 32)];
    const int64_t s = (int64_t)blockIdx.x * KNN_STILE + threadIdx.x;
    const bool live = s < m;
    double p[3] = {0, 0, 0};
    if (live)
        for (int c = 0; c < 3; ++c)
            p[c] = knn_sorted_f64(srt, mpad, c)[s];
    double3 sum = block_reduce<KNN_STILE>::sum3(make_double3(p[0], p[1], p[2]), s_red);
    const int64_t cnt = min((int64_t)KNN_STILE, m - (int64_t)blockIdx.x * KNN_STILE);
    double *cap = knn_sorted_caps(srt, mpad) + 4 * blockIdx.x;
    double c0, c1, c2;
    const double norm = sqrt(sum.x * sum.x + sum.y * sum.y + sum.z * sum.z);
    if (cnt <= 0 || !(norm > 1e-9 * (double)cnt)) {
        c0 = 1;
        c1 = c2 = 0;
    } else {
        c0 = sum.x / norm;
        c1 = sum.y / norm;
        c2 = sum.z / norm;
    }
    const double a = live ? knn_angle_between(c0, c1, c2, p[0], p[1], p[2]) : 0.0;
    const double r = block_reduce<KNN_STILE>::max1(a, s_red);
    if (threadIdx.x == 0) {
        cap[0] = c0;
        cap[1] = c1;
        cap[2] = c2;
        cap[3] = cnt <= 0 ? 0.0 : knn_cap_widen(r);
    }
}

template <int KMAX, int TO>
__global__ void __launch_bounds__(TO) k_search_kernel(const ksearch_params P)
{
    __shared__ float4 s_q[KNN_STILE];
    __shared__ float s_ub[KNN_SORT_MAX_TILES];
    __shared__ short s_t[KNN_SORT_MAX_TILES];
    __shared__ double s_red[3 * (TO / 32)];
    /* pass 1: float vals[KMAX][TO]; pass 2: double c2[KMAX][TO] then int idx[KMAX][TO] */
    __shared__ double s_list_d[KMAX * TO];
    __shared__ int s_list_i[KMAX * TO];
    float *vals = (float *)s_list_d;

    const int tid = threadIdx.x, K = P.k, ntr = P.ntiles;
    const int64_t slot = (int64_t)blockIdx.x * TO + tid;
    const bool live = slot < P.n;
    const float4 o = P.sorted_obs[live ? slot : P.n - 1];
    const int row = __float_as_int(o.w);
    double p[3];
    knn_load_point(P.obs, row, P.in, p);
    const float px = o.x, py = o.y, pz = o.z;

    /* ---- reference tiles, nearest first (pruned) ---- */
    int nvisit = ntr;
    if (P.prune) {
        double3 sum = block_reduce<TO>::sum3(
            live ? make_double3(p[0], p[1], p[2]) : make_double3(0, 0, 0), s_red);
        const int cnt = (int)min((int64_t)TO, P.n - (int64_t)blockIdx.x * TO);
        double norm = sqrt(sum.x * sum.x + sum.y * sum.y + sum.z * sum.z);
        double cap[4];
        if (!(norm > 1e-9 * cnt)) {
            cap[0] = 1;
            cap[1] = cap[2] = 0;
        } else {
            cap[0] = sum.x / norm;
            cap[1] = sum.y / norm;
            cap[2] = sum.z / norm;
        }
        double a = live ? knn_angle_between(cap[0], cap[1], cap[2], p[0], p[1], p[2]) : 0.0;
        cap[3] = knn_cap_widen(block_reduce<TO>::max1(a, s_red));
        const float4 capf = make_float4((float)cap[0], (float)cap[1], (float)cap[2], (float)cap[3]);
        int npad = 1;
        while (npad < ntr)
            npad <<= 1;
        for (int t = tid; t < npad; t += TO) {
            s_ub[t] = t < ntr ? cap_upper_dot_f(capf, P.caps + 4 * t) : -CUDART_INF_F;
            s_t[t] = (short)t;
        }
        __syncthreads();
        for (int kk = 2; kk <= npad; kk <<= 1) { /* bitonic sort, descending */
            for (int jj = kk >> 1; jj > 0; jj >>= 1) {
                for (int i = tid; i < npad; i += TO) {
                    int ixj = i ^ jj;
                    if (ixj > i) {
                        bool desc = (i & kk) == 0;
                        float a0 = s_ub[i], a1 = s_ub[ixj];
                        if (desc ? a0 < a1 : a0 > a1) {
                            s_ub[i] = a1;
                            s_ub[ixj] = a0;
                            short t0 = s_t[i];
                            s_t[i] = s_t[ixj];
                            s_t[ixj] = t0;
                        }
                    }
                }
                __syncthreads();
            }
        }
    }

    /* ---- pass 1: the K largest float32 dots ---- */
    for (int r = 0; r < K; ++r)
        vals[r * TO + tid] = -CUDART_INF_F;
    float kth = -CUDART_INF_F;
    int kpos = 0;
    double thr_blk = -CUDART_INF;
    int visited = ntr;
    /* bit si: the si-th visited tile may hold a candidate of pass 2 (its maximum reached
     * kth - KNN_MARGIN after it; kth only grows, and fl(x - MARGIN) is monotonic in x, so
     * a tile below it stays below pass 2's threshold); tiles past 64 are always rescanned */
    unsigned long long need = 0;
    for (int si = 0; si < ntr; ++si) {
        if (P.prune && (double)s_ub[si] < thr_blk) {
            visited = si;
            break;
        }
        const int t = P.prune ? s_t[si] : si;
        __syncthreads();
        for (int j = tid; j < KNN_STILE; j += TO)
            s_q[j] = P.q32[(int64_t)t * KNN_STILE + j];
        __syncthreads();
        if (live) {
            float tmax = -CUDART_INF_F;
#pragma unroll 8
            for (int j = 0; j < KNN_STILE; ++j) {
                const float4 q = s_q[j];
                const float d = fmaf(px, q.x, fmaf(py, q.y, pz * q.z));
                tmax = fmaxf(tmax, d);
                if (d > kth) {
                    if (KMAX == 1) {
                        kth = d;
                    } else {
                        vals[kpos * TO + tid] = d;
                        int pmin = 0;
                        float vmin = vals[tid];
                        for (int r = 1; r < K; ++r) {
                            float v = vals[r * TO + tid];
                            if (v < vmin) {
                                vmin = v;
                                pmin = r;
                            }
                        }
                        kpos = pmin;
                        kth = vmin;
                    }
                }
            }
            if (si < 64 && tmax >= kth - KNN_MARGIN)
                need |= 1ull << si;
        }
        if (P.prune)
            thr_blk = block_reduce<TO>::min1(live ? knn_skip_threshold(kth) : CUDART_INF, s_red);
    }
    nvisit = visited;

    /* ---- pass 2: float64 check of the candidates into sorted lists of K ---- */
    const float thr = kth - KNN_MARGIN;
    __syncthreads(); /* every thread is done with vals */
    double *c2s = s_list_d + tid;
    int *ids = s_list_i + tid;
    for (int r = 0; r < K; ++r) {
        c2s[r * TO] = CUDART_INF;
        ids[r * TO] = -1;
    }
    for (int si = 0; si < nvisit; ++si) {
        if (P.prune && (double)s_ub[si] < thr_blk)
            break;
        const int t = P.prune ? s_t[si] : si;
        const bool mine = live && (si >= 64 || (need >> si & 1ull));
        if (!__syncthreads_or(mine)) /* also the barrier before s_q is overwritten */
            continue;
        for (int j = tid; j < KNN_STILE; j += TO)
            s_q[j] = P.q32[(int64_t)t * KNN_STILE + j];
        __syncthreads();
        if (mine) {
            for (int j = 0; j < KNN_STILE; ++j) {
                const float4 q = s_q[j];
                const float d = fmaf(px, q.x, fmaf(py, q.y, pz * q.z));
                if (d >= thr) {
                    const int64_t sj = (int64_t)t * KNN_STILE + j;
                    const double c2 = knn_chord2(p, P.x64[sj], P.y64[sj], P.z64[sj]);
                    list_insert<TO>(c2s, ids, K, c2, P.orig[sj]);
                }
            }
        }
    }
    if (!live)
        return;
    for (int r = 0; r < K; ++r) {
        const double c2 = c2s[r * TO];
        const int idx = ids[r * TO];
        const int64_t at = (int64_t)row * K + r;
        if (P.mode == CASK_KNN_FINAL) {
            ((int32_t *)P.out0)[at] = idx < 0 ? -1 : (int32_t)(P.ref_base + idx);
            ((float *)P.out1)[at] = idx < 0 ? KNN_NAN_F : (float)(P.scale * knn_angle(c2));
        } else {
            cask_knn_best b;
            b.chord2 = idx < 0 ? CUDART_INF : c2;
            b.idx = idx < 0 ? -1 : P.ref_base + idx;
            ((cask_knn_best *)P.out0)[at] = b;
        }
    }
}

static cudaError_t search_launch(const knn_k_job *j, cudaStream_t s)
{
    const cask_knn_ksearch_args &A = j->a;
    if (A.n == 0)
        return cudaGetLastError();
    const int64_t mpad = knn_mpad(A.m), ntiles = mpad / KNN_STILE;
    if (A.prune && ntiles > KNN_SORT_MAX_TILES)
        return cudaErrorInvalidValue; /* told apart by the caller's message */
    void *srt = (void *)j->sorted;
    ksearch_params P;
    P.obs = j->obs;
    P.n = (int)A.n;
    P.in = A.in;
    P.sorted_obs = (const float4 *)knn_scratch_sorted((void *)j->scratch, A.n);
    P.q32 = (const float4 *)knn_sorted_q32(srt);
    P.x64 = knn_sorted_f64(srt, mpad, 0);
    P.y64 = knn_sorted_f64(srt, mpad, 1);
    P.z64 = knn_sorted_f64(srt, mpad, 2);
    P.orig = knn_sorted_orig(srt, mpad);
    P.caps = knn_sorted_caps(srt, mpad);
    P.ntiles = (int)ntiles;
    P.k = A.k;
    P.prune = A.prune;
    P.mode = A.mode;
    P.ref_base = A.ref_base;
    P.scale = A.scale;
    P.out0 = j->out0;
    P.out1 = j->out1;
    if (A.k == 1)
        k_search_kernel<1, 128><<<blocks_of(A.n, 128), 128, 0, s>>>(P);
    else if (A.k <= 4)
        k_search_kernel<4, 128><<<blocks_of(A.n, 128), 128, 0, s>>>(P);
    else if (A.k <= 16)
        k_search_kernel<16, 64><<<blocks_of(A.n, 64), 64, 0, s>>>(P);
    else
        k_search_kernel<KNN_KMAX, 32><<<blocks_of(A.n, 32), 32, 0, s>>>(P);
    return cudaGetLastError();
}

/* ---- kmerge, kfinish: one thread per observation ---- */

static __global__ void k_merge_kernel(cask_knn_best *a, const cask_knn_best *b, int64_t n, int k)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    cask_knn_best out[KNN_KMAX];
    cask_knn_best *x = a + i * k;
    const cask_knn_best *y = b + i * k;
    int ia = 0, ib = 0;
    for (int r = 0; r < k; ++r) {
        cask_knn_best u = x[ia], v = y[ib];
        if (knn_better(v.chord2, v.idx, u.chord2, u.idx)) {
            out[r] = v;
            ib++;
        } else {
            out[r] = u;
            ia++;
        }
    }
    for (int r = 0; r < k; ++r)
        x[r] = out[r];
}

static __global__ void k_finish_kernel(const cask_knn_best *best, int64_t nk, double scale,
                                       int32_t *idx, float *dist)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nk;
         i += (int64_t)gridDim.x * blockDim.x) {
        cask_knn_best x = best[i];
        bool ok = x.idx >= 0;
        idx[i] = ok ? (int32_t)x.idx : -1;
        dist[i] = ok ? (float)(scale * knn_angle(x.chord2)) : KNN_NAN_F;
    }
}

/* ---- cask task implementations ---- */

extern "C" cask_status knn_k_cuda_prep(cask_task_ctx *ctx)
{
    cask_knn_prep_args a;
    const void *ref;
    void *srt, *scratch;
    cask_status st = knn_k_job_prep(ctx, &a, &ref, &srt, &scratch);
    if (st)
        return st;
    return knn_launched(ctx, "knn prep_sorted: launch",
                    prep_launch(ref, a.m, a.in, srt, scratch,
                                knn_task_stream(ctx)));
}

extern "C" cask_status knn_k_cuda_order(cask_task_ctx *ctx)
{
    cask_knn_korder_args a;
    const void *obs;
    void *scratch;
    cask_status st = knn_k_job_order(ctx, &a, &obs, &scratch);
    if (st)
        return st;
    return knn_launched(ctx, "knn korder: launch",
                        knn_k_order_launch(obs, a.n, a.in, a.prune, scratch,
                                           knn_task_stream(ctx)));
}

extern "C" cask_status knn_k_cuda_search(cask_task_ctx *ctx)
{
    knn_k_job j;
    cask_status st = knn_k_job_search(ctx, &j);
    if (st)
        return st;
    if (j.a.prune && knn_mpad(j.a.m) / KNN_STILE > KNN_SORT_MAX_TILES)
        return cask_task_fail(ctx, "knn ksearch: %lld references in one chunk: a pruned GPU "
                              "search orders at most %d tiles of %d (cut the references in "
                              "chunks of at most %d)", (long long)j.a.m, KNN_SORT_MAX_TILES,
                              KNN_STILE, KNN_SORT_MAX_TILES * KNN_STILE);
    return knn_launched(ctx, "knn ksearch: launch of k_search_kernel",
                    search_launch(&j, knn_task_stream(ctx)));
}

extern "C" cask_status knn_k_cuda_merge(cask_task_ctx *ctx)
{
    cask_knn_kmerge_args a;
    cask_knn_best *x;
    const cask_knn_best *y;
    cask_status st = knn_k_job_merge(ctx, &a, &x, &y);
    if (st)
        return st;
    if (a.n > 0)
        k_merge_kernel<<<blocks_of(a.n, 128), 128, 0, knn_task_stream(ctx)>>>(
            x, y, a.n, (int)a.k);
    return knn_launched(ctx, "knn kmerge: launch of k_merge_kernel", cudaGetLastError());
}

extern "C" cask_status knn_k_cuda_finish(cask_task_ctx *ctx)
{
    cask_knn_kfinish_args a;
    const cask_knn_best *best;
    int32_t *idx;
    float *dist;
    cask_status st = knn_k_job_finish(ctx, &a, &best, &idx, &dist);
    if (st)
        return st;
    const int64_t nk = a.n * a.k;
    if (nk > 0) {
        int64_t b = (nk + 255) / 256;
        k_finish_kernel<<<(unsigned)(b > 65536 ? 65536 : b), 256, 0,
                          knn_task_stream(ctx)>>>(best, nk, a.scale, idx, dist);
    }
    return knn_launched(ctx, "knn kfinish: launch of k_finish_kernel", cudaGetLastError());
}
