/* kernels/knn_cuda.cu: CUDA implementations of the haversine 1-NN kernels and the plain
 * C launchers that cask's tasks and the hand-threaded baseline share.
 *
 * The search (see knn_impl.h for why it is exact) runs as two kernels on one stream.
 * Pass 1 (knn_search_kernel): each block of KNN_BLOCK threads owns K * KNN_BLOCK
 * observations, K per thread in registers as float32 unit vectors; the references stream
 * through shared memory a tile of KNN_TILE at a time (double buffered), one broadcast
 * LDS.128 per reference shared by the K observations. Each pair costs three FFMAs giving
 * 2 + p.q (positive, so its bits order as an int) and half a VIMNMX3 (Hopper DPX: max of
 * three ints), 3.5 instructions; the plain variant's FMUL + 2 FFMA + FMNMX is 4. After
 * each tile a few instructions per observation keep the running maximum M and the
 * tile(s) it may come from; pass 1 leaves M and the packed tile numbers in the
 * observation's own output slot (no scratch memory needed).
 * Pass 2 (knn_rescan_kernel) has few registers, so many warps: it streams the tiles
 * again with cp.async and, per tile, a warp collects (ballot) its observations that
 * named it and rescans each together, 32 lanes x 4 references, so that a rescan costs
 * the warp once instead of diverging it per lane. A tile with a single candidate and no
 * earlier winner needs no float64 at all; the winner's float64 squared chord is computed
 * once per observation at the end. On an H100 (bench/knn_kernel_check.c, 2^24 x 2^14):
 * 45 ms, of which pass 1 is 39.6 ms; pass 2 inside the pass-1 kernel costs about the
 * same, fused into a persistent kernel it cost more. Chunks of more than KNN_PACK_TILES
 * tiles use one kernel with both passes (tile numbers unpacked). */
#include <cuda_runtime.h>
#include <limits.h>
#include <math_constants.h>
#include "kernels/knn_impl.h"
#include "kernels/knn_search.cuh"

#define KNN_BLOCK KNN_TILE /* one reference per thread when loading a tile */
static_assert(KNN_TILE % 32 == 0, "tile must be whole warps");

/* The search kernel: pass 1, then either pass 2 in the same kernel (SWEEP) or the scratch
 * left for knn_rescan_kernel. K observations per thread, pass-1 references loaded LOADT
 * tiles per barrier, the reference loop unrolled UNROLL times.
 *
 * DPX: each dot is computed as 2 + p.q by three FFMAs (the 2 rides in the reference's w,
 * 0.5 with a zero vector for padding), so it is positive and its bits order like an int:
 * one VIMNMX3 (a Hopper DPX instruction) then takes the maximum of two pairs at once,
 * 3.5 instead of 4 instructions per pair. The offset costs precision (ulp 2^-22 on
 * [2, 4)), which KNN_MARGIN covers (knn_impl.h). */
template <int K, int MINB, int UNROLL, int LOADT, bool DPX, bool PACK, bool SWEEP, bool STATS>
__global__ void __launch_bounds__(KNN_BLOCK, MINB) knn_search_kernel(const search_params P)
{
    __shared__ float4 s_q[2][LOADT * KNN_TILE];
    __shared__ double s_q64[3][KNN_TILE];
    __shared__ double s_c2[K * KNN_BLOCK]; /* best so far per observation; -1 = not yet computed */
    __shared__ int s_idx[K * KNN_BLOCK];   /* its index in the chunk, -1 = none */

    const int tid = threadIdx.x, lane = tid & 31, wbase = tid & ~31;
    const int64_t base = (int64_t)blockIdx.x * (K * KNN_BLOCK);
    const int ntiles = P.ntiles;
    /* Padding never wins: a zero vector plus 0.5 (< any real 2 + p.q) in DPX, else NaN. */
    const float4 pad = DPX ? make_float4(0.f, 0.f, 0.f, 0.5f)
                           : make_float4(CUDART_NAN_F, CUDART_NAN_F, CUDART_NAN_F, 0.f);

    float px[K], py[K], pz[K], M[K];
    tile_pair<PACK> tp[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        int64_t i = base + k * KNN_BLOCK + tid;
        /* Past the end: repeat the last observation (same work, result not written). */
        double v[3];
        knn_load_point(P.obs, i < P.n ? i : P.n - 1, P.in, v);
        px[k] = (float)v[0];
        py[k] = (float)v[1];
        pz[k] = (float)v[2];
        M[k] = -CUDART_INF_F;
        tp[k].init();
        if (SWEEP) {
            s_c2[k * KNN_BLOCK + tid] = CUDART_INF;
            s_idx[k * KNN_BLOCK + tid] = -1;
        }
    }

    /* ---- pass 1: float32 maximum per observation, and where it may come from ---- */
#pragma unroll
    for (int l = 0; l < LOADT; ++l) {
        const int j = l * KNN_TILE + tid;
        s_q[0][l * KNN_TILE + tid] = j < P.m ? make_float4(P.x32[j], P.y32[j], P.z32[j], 2.f)
                                             : pad;
    }
    __syncthreads();
    for (int t0 = 0; t0 < ntiles; t0 += LOADT) {
        const int buf = (t0 / LOADT) & 1;
        const bool more = t0 + LOADT < ntiles;
        float nx[LOADT], ny[LOADT], nz[LOADT];
#pragma unroll
        for (int l = 0; l < LOADT; ++l) {
            const int j = (t0 + LOADT + l) * KNN_TILE + tid;
            const bool ok = more && j < P.m;
            nx[l] = ok ? __ldg(P.x32 + j) : pad.x;
            ny[l] = ok ? __ldg(P.y32 + j) : pad.y;
            nz[l] = ok ? __ldg(P.z32 + j) : pad.z;
        }
#pragma unroll
        for (int sub = 0; sub < LOADT; ++sub) {
            const int t = t0 + sub;
            if (t >= ntiles)
                break;
            const float4 *q = s_q[buf] + sub * KNN_TILE;
            float T[K];
            if (DPX) {
                int Ti[K];
#pragma unroll
                for (int k = 0; k < K; ++k)
                    Ti[k] = 0;
#pragma unroll UNROLL
                for (int j = 0; j < KNN_TILE; j += 2) {
                    const float4 r = q[j], u = q[j + 1];
#pragma unroll
                    for (int k = 0; k < K; ++k) {
                        const float d1 = fmaf(px[k], r.x, fmaf(py[k], r.y, fmaf(pz[k], r.z, r.w)));
                        const float d2 = fmaf(px[k], u.x, fmaf(py[k], u.y, fmaf(pz[k], u.z, u.w)));
                        Ti[k] = __vimax3_s32(Ti[k], __float_as_int(d1), __float_as_int(d2));
                    }
                }
#pragma unroll
                for (int k = 0; k < K; ++k)
                    T[k] = __int_as_float(Ti[k]);
            } else {
#pragma unroll
                for (int k = 0; k < K; ++k)
                    T[k] = -CUDART_INF_F;
#pragma unroll UNROLL
                for (int j = 0; j < KNN_TILE; ++j) {
                    const float4 r = q[j];
#pragma unroll
                    for (int k = 0; k < K; ++k)
                        T[k] = fmaxf(T[k], fmaf(px[k], r.x, fmaf(py[k], r.y, pz[k] * r.z)));
                }
            }
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (T[k] >= M[k] - KNN_MARGIN_TRACK) {
                    int a = tp[k].ta(), b = tp[k].tb();
                    track_tile(T[k], t, M[k], a, b);
                    tp[k].set(a, b);
                }
            }
        }
        if (more) {
#pragma unroll
            for (int l = 0; l < LOADT; ++l) {
                const int j = (t0 + LOADT + l) * KNN_TILE + tid;
                s_q[buf ^ 1][l * KNN_TILE + tid] = make_float4(nx[l], ny[l], nz[l],
                                                               j < P.m ? 2.f : pad.w);
            }
        }
        __syncthreads();
    }

    if (!SWEEP) { /* split search: leave M and the tiles for knn_rescan_kernel */
#pragma unroll
        for (int k = 0; k < K; ++k) {
            int64_t i = base + k * KNN_BLOCK + tid;
            if (i < P.n) {
                *scratch_m(P, i) = M[k];
                *scratch_t(P, i) = tp[k].word();
            }
        }
        return;
    }
    if (STATS) {
        unsigned near = 0, over = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (base + k * KNN_BLOCK + tid < P.n) {
                near += tp[k].tb() >= 0;
                over += tp[k].tb() == -2;
            }
        }
        if (near)
            atomicAdd(&P.stats->obs_near, (unsigned long long)near);
        if (over)
            atomicAdd(&P.stats->obs_overflow, (unsigned long long)over);
    }

    /* ---- pass 2: rescan the tiles each observation named, a warp at a time ---- */
    float thr[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
        thr[k] = M[k] - KNN_MARGIN;
    for (int t = 0; t < ntiles; ++t) {
        __syncthreads();
        {
            int j = t * KNN_TILE + tid;
            s_q[0][tid] = make_float4(P.x32[j], P.y32[j], P.z32[j], 0.f);
            s_q64[0][tid] = P.x64[j];
            s_q64[1][tid] = P.y64[j];
            s_q64[2][tid] = P.z64[j];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int b = tp[k].tb();
            unsigned mask = __ballot_sync(FULL_MASK, tp[k].ta() == t || b == t || b == -2);
            while (mask) {
                const int src = __ffs(mask) - 1;
                mask &= mask - 1;
                const float ox = __shfl_sync(FULL_MASK, px[k], src);
                const float oy = __shfl_sync(FULL_MASK, py[k], src);
                const float oz = __shfl_sync(FULL_MASK, pz[k], src);
                const float oth = __shfl_sync(FULL_MASK, thr[k], src);
                unsigned bits = 0;
#pragma unroll
                for (int i = 0; i < KNN_TILE / 32; ++i) {
                    const float4 r = s_q[0][lane + 32 * i];
                    const float d = fmaf(ox, r.x, fmaf(oy, r.y, fmaf(oz, r.z, P.offset)));
                    bits |= (d >= oth ? 1u : 0u) << i;
                }
                const unsigned lanes = __ballot_sync(FULL_MASK, bits != 0);
                if (STATS && lane == 0)
                    atomicAdd(&P.stats->rescans, 1ull);
                if (lanes == 0)
                    continue;
                const int slot = k * KNN_BLOCK + wbase + src;
                const int prev = s_idx[slot];
                const bool several = __any_sync(FULL_MASK, (bits & (bits - 1)) != 0) ||
                                     (lanes & (lanes - 1)) != 0;
                if (STATS && lane == 0 && (prev >= 0 || several))
                    atomicAdd(&P.stats->slow_rescans, 1ull);
                if (prev < 0 && !several) {
                    if (bits) {
                        s_idx[slot] = t * KNN_TILE + lane + 32 * (__ffs(bits) - 1);
                        s_c2[slot] = -1.0;
                    }
                } else {
                    int64_t oi = base + k * KNN_BLOCK + wbase + src;
                    rescan_float64(P, oi < P.n ? oi : P.n - 1, bits, t, lane, prev,
                                   &s_c2[slot], &s_idx[slot], s_q64[0], s_q64[1], s_q64[2]);
                }
                __syncwarp();
            }
        }
    }

    /* ---- results: the float64 chord of a lone winner is computed here, once ---- */
    __syncwarp();
#pragma unroll 1
    for (int k = 0; k < K; ++k) {
        int64_t i = base + k * KNN_BLOCK + tid;
        if (i >= P.n)
            break;
        int idx = s_idx[k * KNN_BLOCK + tid];
        double c2 = s_c2[k * KNN_BLOCK + tid];
        if (idx >= 0 && c2 < 0) {
            double p[3];
            knn_load_point(P.obs, i, P.in, p);
            c2 = knn_chord2(p, P.x64[idx], P.y64[idx], P.z64[idx]);
        }
        write_result(P, i, c2, idx);
    }
}

/* ---- cp.async: global to shared memory without registers ---- */

static __device__ __forceinline__ void cp_async4(void *smem, const void *gmem)
{
    unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(gmem));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
static __device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/* ---- pass 2 of the split search, its own kernel ----
 *
 * Picks up M and the tiles pass 1 left in the output slots, and rescans: K2 observations
 * per thread (float32 vector and threshold in shared memory, tiles in a register), the
 * float32 references streamed tile by tile with cp.async, float64 read from global memory
 * on the rare slow path. Few registers, so many warps hide the latency of the cooperative
 * rescans that a kernel full of pass-1 state could not. */
template <int K2, int MINB2, bool STATS>
__global__ void __launch_bounds__(KNN_BLOCK, MINB2) knn_rescan_kernel(const search_params P)
{
    __shared__ float4 s_q[2][KNN_TILE];
    __shared__ float4 s_obs[K2 * KNN_BLOCK];
    __shared__ double s_c2[K2 * KNN_BLOCK];
    __shared__ int s_idx[K2 * KNN_BLOCK];
    const int tid = threadIdx.x, lane = tid & 31, wbase = tid & ~31;
    const int64_t base = (int64_t)blockIdx.x * (K2 * KNN_BLOCK);
    const int ntiles = P.ntiles;
    tile_pair<true> tq[K2];

    {
        const int j = tid;
        cp_async4(&s_q[0][tid].x, P.x32 + j);
        cp_async4(&s_q[0][tid].y, P.y32 + j);
        cp_async4(&s_q[0][tid].z, P.z32 + j);
        cp_async_commit();
    }
    for (int k = 0; k < K2; ++k) {
        const int64_t i = base + k * KNN_BLOCK + tid;
        const int slot = k * KNN_BLOCK + tid;
        tq[k].init();
        float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
        if (i < P.n) {
            double v[3];
            knn_load_point(P.obs, i, P.in, v);
            o = make_float4((float)v[0], (float)v[1], (float)v[2],
                            *scratch_m(P, i) - KNN_MARGIN);
            tq[k].w = *scratch_t(P, i);
        }
        s_obs[slot] = o;
        s_c2[slot] = CUDART_INF;
        s_idx[slot] = -1;
    }
    cp_async_wait_all();
    __syncthreads();
    for (int t = 0; t < ntiles; ++t) {
        const int buf = t & 1;
        if (t + 1 < ntiles) {
            const int j = (t + 1) * KNN_TILE + tid;
            cp_async4(&s_q[buf ^ 1][tid].x, P.x32 + j);
            cp_async4(&s_q[buf ^ 1][tid].y, P.y32 + j);
            cp_async4(&s_q[buf ^ 1][tid].z, P.z32 + j);
            cp_async_commit();
        }
        const float4 *q = s_q[buf];
#pragma unroll
        for (int k = 0; k < K2; ++k) {
            const int ta = tq[k].ta(), tb = tq[k].tb();
            unsigned mask = __ballot_sync(FULL_MASK, ta == t || tb == t || tb == -2);
            const unsigned later =
                __ballot_sync(FULL_MASK, tb == -2 || (tb >= 0 && t == max(ta, tb)));
            while (mask) {
                const int src = __ffs(mask) - 1;
                mask &= mask - 1;
                const int slot = k * KNN_BLOCK + wbase + src;
                const float4 o = s_obs[slot];
                unsigned bits = 0;
#pragma unroll
                for (int i = 0; i < KNN_TILE / 32; ++i) {
                    const float4 r = q[lane + 32 * i];
                    const float d = fmaf(o.x, r.x, fmaf(o.y, r.y, fmaf(o.z, r.z, P.offset)));
                    bits |= (d >= o.w ? 1u : 0u) << i;
                }
                const unsigned lanes = __ballot_sync(FULL_MASK, bits != 0);
                if (STATS && lane == 0)
                    atomicAdd(&P.stats->rescans, 1ull);
                if (lanes == 0)
                    continue;
                const int prev_idx = (later >> src & 1u) ? s_idx[slot] : -1;
                const bool several = __any_sync(FULL_MASK, (bits & (bits - 1)) != 0) ||
                                     (lanes & (lanes - 1)) != 0;
                if (prev_idx < 0 && !several) {
                    if (bits) {
                        s_idx[slot] = t * KNN_TILE + lane + 32 * (__ffs(bits) - 1);
                        s_c2[slot] = -1.0;
                    }
                } else {
                    if (STATS && lane == 0)
                        atomicAdd(&P.stats->slow_rescans, 1ull);
                    const int64_t oi = base + k * KNN_BLOCK + wbase + src;
                    const int64_t off = (int64_t)t * KNN_TILE;
                    rescan_float64(P, oi < P.n ? oi : P.n - 1, bits, t, lane, prev_idx,
                                   &s_c2[slot], &s_idx[slot], P.x64 + off, P.y64 + off,
                                   P.z64 + off);
                }
            }
        }
        cp_async_wait_all();
        __syncthreads();
    }
#pragma unroll 1
    for (int k = 0; k < K2; ++k) {
        const int64_t i = base + k * KNN_BLOCK + tid;
        if (i >= P.n)
            break;
        int idx = s_idx[k * KNN_BLOCK + tid];
        double c2 = s_c2[k * KNN_BLOCK + tid];
        if (idx >= 0 && c2 < 0) {
            double p[3];
            knn_load_point(P.obs, i, P.in, p);
            c2 = knn_chord2(p, P.x64[idx], P.y64[idx], P.z64[idx]);
        }
        write_result(P, i, c2, idx);
    }
}

/* ---- variants (the first is what cask and the baseline use) ---- */

typedef void (*search_kernel_fn)(const search_params);
/* A way to run the search: pass 1 kernel fn (k observations per thread), then, if fn2 is
 * set, the rescan kernel fn2 (k2 per thread) on the scratch fn left (split search). */
struct search_variant {
    const char *name;
    search_kernel_fn fn;
    int k;
    search_kernel_fn fn2;
    int k2;
    int packed; /* tile numbers in 16 bits: at most KNN_PACK_TILES tiles */
    int dpx;    /* pass 1 computes 2 + p.q (P.offset = 2) */
};
/* Medians on one H100 SXM (bench/knn_kernel_check.c, n = 2^24, m = 2^14, one run): split
 * DPX K8 45.0 ms, DPX K8 one kernel 44.7, split K8 50.4, K16 one kernel 49.1; pass 1
 * alone 39.6 (DPX) and 44.9. Across runs (machines) the same variant moved by up to 10%;
 * compare variants within one run. */
static const search_variant variants[] = {
    {"split DPX K8 u8 + rescan K4", knn_search_kernel<8, 4, 8, 1, true, true, false, false>, 8,
     knn_rescan_kernel<4, 8, false>, 4, 1, 1},
    {"K16 one kernel (wide)", knn_search_kernel<16, 3, 4, 1, false, false, true, false>, 16,
     NULL, 0, 0, 0},
    {"DPX K8 one kernel", knn_search_kernel<8, 4, 8, 1, true, true, true, false>, 8, NULL, 0, 1,
     1},
    {"split K8 u8 + rescan K4", knn_search_kernel<8, 4, 8, 1, false, true, false, false>, 8,
     knn_rescan_kernel<4, 8, false>, 4, 1, 0},
    {"DPX K8 pass 1 only (not exact)", knn_search_kernel<8, 4, 8, 1, true, true, false, false>,
     8, NULL, 0, 1, 1},
    {"K8 pass 1 only (not exact)", knn_search_kernel<8, 4, 8, 1, false, true, false, false>, 8,
     NULL, 0, 1, 0},
    {"split DPX K8 with counters", knn_search_kernel<8, 4, 8, 1, true, true, false, false>, 8,
     knn_rescan_kernel<4, 8, true>, 4, 1, 1},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))
#define KNN_VARIANT_DEFAULT 0
#define KNN_VARIANT_WIDE 1 /* for more than KNN_PACK_TILES tiles */

extern "C" int knn_cuda_search_variants(void)
{
    return NVARIANTS;
}

extern "C" const char *knn_cuda_search_variant_name(int v)
{
    return v >= 0 && v < NVARIANTS ? variants[v].name : "?";
}

static cudaError_t launch_search(int v, const void *obs, int64_t n, cask_knn_points in,
                                 const void *prep, int64_t m, int64_t ref_base, double scale,
                                 int mode, void *out0, void *out1, knn_cuda_stats *stats,
                                 cudaStream_t s)
{
    if (v < 0 || v >= NVARIANTS || n < 0 || m < 0 || m > INT32_MAX)
        return cudaErrorInvalidValue;
    if (variants[v].packed && knn_mpad(m) / KNN_TILE > KNN_PACK_TILES)
        v = KNN_VARIANT_WIDE; /* too many tiles to pack their numbers in 16 bits */
    if (n == 0)
        return cudaGetLastError();
    search_params P;
    int64_t mpad = knn_mpad(m);
    void *pp = (void *)prep;
    P.obs = obs;
    P.n = n;
    P.in = in;
    P.x32 = knn_prep_f32(pp, mpad, 0);
    P.y32 = knn_prep_f32(pp, mpad, 1);
    P.z32 = knn_prep_f32(pp, mpad, 2);
    P.x64 = knn_prep_f64(pp, mpad, 0);
    P.y64 = knn_prep_f64(pp, mpad, 1);
    P.z64 = knn_prep_f64(pp, mpad, 2);
    P.ntiles = (int)(mpad / KNN_TILE);
    P.m = (int)m;
    P.mode = mode;
    P.ref_base = ref_base;
    P.scale = scale;
    P.out0 = out0;
    P.out1 = out1;
    P.stats = stats;
    const search_variant &V = variants[v];
    P.offset = V.dpx ? 2.f : 0.f;
    const int64_t blocks = (n + V.k * KNN_BLOCK - 1) / (V.k * KNN_BLOCK);
    if (blocks > INT32_MAX)
        return cudaErrorInvalidValue;
    V.fn<<<(unsigned)blocks, KNN_BLOCK, 0, s>>>(P);
    if (V.fn2) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
        const int64_t blocks2 = (n + V.k2 * KNN_BLOCK - 1) / (V.k2 * KNN_BLOCK);
        if (blocks2 > INT32_MAX)
            return cudaErrorInvalidValue;
        V.fn2<<<(unsigned)blocks2, KNN_BLOCK, 0, s>>>(P);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t knn_cuda_search_variant(int v, const void *obs, int64_t n,
                                               cask_knn_points in, const void *prep, int64_t m,
                                               int64_t ref_base, double scale, int mode,
                                               void *out0, void *out1, knn_cuda_stats *stats,
                                               cudaStream_t s)
{
    if (mode != CASK_KNN_FINAL && mode != CASK_KNN_PARTIAL)
        return cudaErrorInvalidValue;
    return launch_search(v, obs, n, in, prep, m, ref_base, scale, mode, out0, out1, stats, s);
}

extern "C" cudaError_t knn_cuda_search_final(const void *obs, int64_t n, cask_knn_points in,
                                             const void *prep, int64_t m, int64_t ref_base,
                                             double scale, int32_t *idx, float *dist,
                                             cudaStream_t s)
{
    return launch_search(KNN_VARIANT_DEFAULT, obs, n, in, prep, m, ref_base, scale,
                         CASK_KNN_FINAL, idx, dist, NULL, s);
}

extern "C" cudaError_t knn_cuda_search_partial(const void *obs, int64_t n, cask_knn_points in,
                                               const void *prep, int64_t m, int64_t ref_base,
                                               cask_knn_best *best, cudaStream_t s)
{
    return launch_search(KNN_VARIANT_DEFAULT, obs, n, in, prep, m, ref_base, 1.0,
                         CASK_KNN_PARTIAL, best, NULL, NULL, s);
}
