/* kernels/knn_search.cuh (internal): what both passes of the 1-NN search (knn_cuda.cu:
 * knn_search_kernel and knn_rescan_kernel) share: the launch parameters, the tile
 * bookkeeping of pass 1, the float64 rescan of a tile's candidates, and where a result
 * and pass 1's scratch go in the output. Device code, included by knn_cuda.cu only. */
#ifndef CASK_KERNELS_KNN_SEARCH_CUH
#define CASK_KERNELS_KNN_SEARCH_CUH

#include <cuda_runtime.h>
#include <limits.h>
#include <math_constants.h>
#include "kernels/knn_impl.h"

#define FULL_MASK 0xffffffffu

struct search_params {
    const void *obs;
    int64_t n;
    cask_knn_points in;
    const float *x32, *y32, *z32;
    const double *x64, *y64, *z64;
    int ntiles;
    int m;        /* references (the rest of the last tile is padding) */
    float offset; /* added to every float32 dot: 2 for the DPX pass 1, else 0 */
    int mode;
    int64_t ref_base;
    double scale;
    void *out0, *out1;
    knn_cuda_stats *stats;
};

/* The fast pass's bookkeeping for one tile maximum T (same rules as knn_cpu.c). */
static __device__ __forceinline__ void track_tile(float T, int t, float &M, int &a, int &b)
{
    if (T - M > KNN_MARGIN_TRACK) { /* clean record: no earlier tile can matter */
        a = t;
        b = -1;
        M = T;
    } else {
        int other = T > M ? a : t;
        if (T > M) {
            a = t;
            M = T;
        }
        b = b == -1 ? other : -2;
    }
}

/* The tiles a and b of one observation, either in two registers or packed in one (16
 * bits each, sign-extended: at most KNN_PACK_TILES tiles), which saves K registers. */
#define KNN_PACK_TILES 32767
template <bool PACK> struct tile_pair;
template <> struct tile_pair<false> {
    int a, b;
    __device__ __forceinline__ void init() { a = b = -1; }
    __device__ __forceinline__ int ta() const { return a; }
    __device__ __forceinline__ int tb() const { return b; }
    __device__ __forceinline__ void set(int na, int nb) { a = na; b = nb; }
    __device__ __forceinline__ int word() const { return (int)((a & 0xffffu) | ((unsigned)b << 16)); }
};
template <> struct tile_pair<true> {
    int w;
    __device__ __forceinline__ void init() { w = -1; }
    __device__ __forceinline__ int ta() const { return (w << 16) >> 16; }
    __device__ __forceinline__ int tb() const { return w >> 16; }
    __device__ __forceinline__ void set(int na, int nb) { w = (int)((na & 0xffffu) | ((unsigned)nb << 16)); }
    __device__ __forceinline__ int word() const { return w; }
};

static __device__ __forceinline__ void write_result(const search_params &P, int64_t i, double c2,
                                                    int idx)
{
    if (P.mode == CASK_KNN_FINAL) {
        ((int32_t *)P.out0)[i] = idx < 0 ? -1 : (int32_t)(P.ref_base + idx);
        ((float *)P.out1)[i] = idx < 0 ? CUDART_NAN_F : (float)(P.scale * knn_angle(c2));
    } else {
        cask_knn_best r;
        r.chord2 = idx < 0 ? CUDART_INF : c2;
        r.idx = idx < 0 ? -1 : P.ref_base + idx;
        ((cask_knn_best *)P.out0)[i] = r;
    }
}

/* The rare part of a rescan: several candidates, or a winner from an earlier tile, so
 * compare in float64. Each candidate's lane evaluates its own; lane 0 brings in the
 * earlier winner; a warp reduction keeps the lowest (chord2, index). */
static __device__ __noinline__ void rescan_float64(const search_params &P, int64_t obs_i,
                                                   unsigned bits, int t, int lane, int prev,
                                                   double *slot_c2, int *slot_idx,
                                                   const double *qx, const double *qy,
                                                   const double *qz)
{
    double bc2 = CUDART_INF;
    int bidx = -1;
    if (bits || (lane == 0 && prev >= 0)) {
        double p[3];
        knn_load_point(P.obs, obs_i, P.in, p);
        for (int i = 0; i < KNN_TILE / 32; ++i) {
            if (bits >> i & 1u) {
                int j = lane + 32 * i;
                double c2 = knn_chord2(p, qx[j], qy[j], qz[j]);
                if (knn_better(c2, t * KNN_TILE + j, bc2, bidx)) {
                    bc2 = c2;
                    bidx = t * KNN_TILE + j;
                }
            }
        }
        if (lane == 0 && prev >= 0) {
            double pc2 = *slot_c2;
            if (pc2 < 0)
                pc2 = knn_chord2(p, P.x64[prev], P.y64[prev], P.z64[prev]);
            if (knn_better(pc2, prev, bc2, bidx)) {
                bc2 = pc2;
                bidx = prev;
            }
        }
    }
    for (int off = 16; off; off >>= 1) {
        double oc2 = __shfl_xor_sync(FULL_MASK, bc2, off);
        int oidx = __shfl_xor_sync(FULL_MASK, bidx, off);
        if (knn_better(oc2, oidx, bc2, bidx)) {
            bc2 = oc2;
            bidx = oidx;
        }
    }
    if (lane == 0) {
        *slot_c2 = bc2;
        *slot_idx = bidx;
    }
}

/* Split search: pass 1 leaves each observation's maximum M and its packed tiles in its own
 * output slot (FINAL: dist and idx; PARTIAL: the first and third words of its record),
 * where pass 2 picks them up and overwrites them with the result. */
static __device__ __forceinline__ float *scratch_m(const search_params &P, int64_t i)
{
    return P.mode == CASK_KNN_FINAL ? (float *)P.out1 + i : (float *)((cask_knn_best *)P.out0 + i);
}
static __device__ __forceinline__ int *scratch_t(const search_params &P, int64_t i)
{
    return P.mode == CASK_KNN_FINAL ? (int *)P.out0 + i : (int *)((cask_knn_best *)P.out0 + i) + 2;
}

#endif
