/* kernels/knn_impl.h: what the CPU and CUDA haversine 1-NN kernels share: the layout of
 * prepared references, the float64 point conversion, the error margins of the float32
 * fast pass, and the C launchers of the CUDA kernels (used by cask's kernels and by the
 * hand-threaded baseline in bench/).
 *
 * How the search stays exact. argmin haversine == argmin chord == argmax dot of unit
 * vectors. A float32 fast pass computes dot32 ~ p32 . q32 for every pair and keeps only
 * the maximum M per observation. Each dot32 is within E of the exact dot of the float64
 * unit vectors: rounding p and q to float32 costs <= 2u (u = 2^-24, |p| = |q| = 1); the
 * CPU's mul/add and the GPU's plain FMAs add <= 3u, so E < 3.1e-7; the GPU's DPX pass
 * computes 2 + p.q by three FFMAs whose sums live in [1, 4) (ulp <= 2^-22), adding
 * <= 3 * 2^-23, so E < 4.8e-7 there. The true best q* thus has dot32(q*) >= M - 2E
 * (< 9.6e-7), and every reference with dot32 >= M - KNN_MARGIN (1.5e-6, with room for
 * the rounding of the subtraction) is a candidate. Candidates are compared
 * by the float64 squared chord |p - q|^2 (differences keep small distances accurate),
 * ties to the lowest index. The float64 math below uses no FMA and a fixed operation
 * order on CPU and GPU, so a point converts to the same bits wherever it runs: results
 * never depend on where a task ran or how references were chunked.
 *
 * The fast pass cannot afford to remember where M came from, so it remembers it per
 * tile of KNN_TILE references: the tile `a` holding M, at most one other tile `b` whose
 * maximum came within KNN_MARGIN_TRACK of the running M, or "overflow" (b = -2) when
 * more did; a second sweep rescans only those tiles. Proof sketch: a tile x with
 * T_x >= Mfinal - KNN_MARGIN always entered the slow path (T_x >= M - MARGIN_TRACK), and
 * a later "clean" record (T > M + MARGIN_TRACK) would contradict T_x's closeness to
 * Mfinal, so x stays a or b, or overflow is set. */
#ifndef CASK_KERNELS_KNN_IMPL_H
#define CASK_KERNELS_KNN_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "cask/knn.h"

#ifdef __CUDACC__
#define KNN_HD static __host__ __device__ __forceinline__
#else
#define KNN_HD static inline
#endif

/* References per tile: the unit of padding, of shared-memory tiles on the GPU and of
 * the fast pass's bookkeeping. */
#define KNN_TILE 128
/* Rescan threshold below the maximum dot32 (see above: > 2E + rounding). */
#define KNN_MARGIN 1.5e-6f
/* Bookkeeping margin of the fast pass, a little wider than KNN_MARGIN so that the
 * float32 rounding of its own comparisons cannot lose a candidate tile. */
#define KNN_MARGIN_TRACK 2.0e-6f

#define KNN_PREP_MAGIC 0x314e4e4b4b534143ull /* "CASKKNN1" */

/* Prepared references: a 64-byte header, then structure-of-arrays unit vectors, float32
 * x, y, z then float64 x, y, z, each mpad long (padding: NaN, never a candidate). */
typedef struct knn_prep_header {
    uint64_t magic;
    int64_t m;
    int64_t mpad;
    uint64_t reserved[5];
} knn_prep_header;

KNN_HD int64_t knn_mpad(int64_t m)
{
    int64_t t = (m + KNN_TILE - 1) / KNN_TILE;
    return (t < 1 ? 1 : t) * KNN_TILE;
}
KNN_HD size_t knn_prep_bytes(int64_t m)
{
    return sizeof(knn_prep_header) + (size_t)knn_mpad(m) * (3 * sizeof(float) + 3 * sizeof(double));
}
/* Component c (0..2) of the float32 / float64 arrays. */
KNN_HD float *knn_prep_f32(void *prep, int64_t mpad, int c)
{
    return (float *)((char *)prep + sizeof(knn_prep_header)) + (size_t)c * mpad;
}
KNN_HD double *knn_prep_f64(void *prep, int64_t mpad, int c)
{
    return (double *)((char *)prep + sizeof(knn_prep_header) + (size_t)mpad * 3 * sizeof(float))
           + (size_t)c * mpad;
}

/* ---- float64 arithmetic that rounds identically on CPU and GPU: no contraction ---- */
#if defined(__CUDA_ARCH__)
#define KNN_MUL(a, b) __dmul_rn((a), (b))
#define KNN_ADD(a, b) __dadd_rn((a), (b))
#define KNN_SUB(a, b) __dsub_rn((a), (b))
#else
/* The CPU files are built as ISO C (-std=c11): GCC then does not contract a*b+c into an
 * FMA (-ffp-contract=off is its ISO default); clang is told by pragma in knn_cpu.c. */
#define KNN_MUL(a, b) ((a) * (b))
#define KNN_ADD(a, b) ((a) + (b))
#define KNN_SUB(a, b) ((a) - (b))
#endif

/* sin and cos of |x| <= pi/4 + tiny (fdlibm's kernels, < 1 ulp). */
KNN_HD void knn_kernel_sincos(double x, double *s, double *c)
{
    const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                 S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                 S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                 C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                 C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    double z = KNN_MUL(x, x);
    double v = KNN_MUL(z, x);
    double r = KNN_ADD(S5, KNN_MUL(z, S6));
    r = KNN_ADD(S4, KNN_MUL(z, r));
    r = KNN_ADD(S3, KNN_MUL(z, r));
    r = KNN_ADD(S2, KNN_MUL(z, r));
    *s = KNN_ADD(x, KNN_MUL(v, KNN_ADD(S1, KNN_MUL(z, r))));
    double w = KNN_ADD(C5, KNN_MUL(z, C6));
    w = KNN_ADD(C4, KNN_MUL(z, w));
    w = KNN_ADD(C3, KNN_MUL(z, w));
    w = KNN_ADD(C2, KNN_MUL(z, w));
    w = KNN_ADD(C1, KNN_MUL(z, w));
    w = KNN_MUL(z, w);                       /* r of k_cos.c */
    double hz = KNN_MUL(0.5, z);
    double one_hz = KNN_SUB(1.0, hz);
    *c = KNN_ADD(one_hz, KNN_ADD(KNN_SUB(KNN_SUB(1.0, one_hz), hz), KNN_MUL(z, w)));
}

/* sin and cos of an angle in degrees (degrees != 0) or radians. Reduction by quadrants:
 * exact in degrees, Cody-Waite with pi/2 in two parts in radians. NaN beyond 1e15. */
KNN_HD void knn_sincos(double a, int degrees, double *s, double *c)
{
    if (!(fabs(a) < 1e15)) {
        *s = *c = a - a + NAN;
        return;
    }
    double k, r;
    if (degrees) {
        k = rint(KNN_MUL(a, 1.0 / 90.0));
        r = KNN_MUL(KNN_SUB(a, KNN_MUL(k, 90.0)), 1.74532925199432957692e-02);
    } else {
        const double pio2_1 = 1.57079632673412561417e+00;  /* first 33 bits of pi/2 */
        const double pio2_1t = 6.07710050650619224932e-11; /* pi/2 - pio2_1 */
        k = rint(KNN_MUL(a, 6.36619772367581382433e-01));
        r = KNN_SUB(KNN_SUB(a, KNN_MUL(k, pio2_1)), KNN_MUL(k, pio2_1t));
    }
    double sr, cr;
    knn_kernel_sincos(r, &sr, &cr);
    switch ((int)((long long)k & 3)) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
    }
}

/* Unit vector of (lat, lon): (cos lat cos lon, cos lat sin lon, sin lat). */
KNN_HD void knn_unit_vector(double lat, double lon, int degrees, double v[3])
{
    double sl, cl, so, co;
    knn_sincos(lat, degrees, &sl, &cl);
    knn_sincos(lon, degrees, &so, &co);
    v[0] = KNN_MUL(cl, co);
    v[1] = KNN_MUL(cl, so);
    v[2] = sl;
}

/* Point i of interleaved (lat, lon) pairs in format f. */
KNN_HD void knn_load_point(const void *pts, int64_t i, cask_knn_points f, double v[3])
{
    double lat, lon;
    if (f.f64) {
        lat = ((const double *)pts)[2 * i];
        lon = ((const double *)pts)[2 * i + 1];
    } else {
        lat = ((const float *)pts)[2 * i];
        lon = ((const float *)pts)[2 * i + 1];
    }
    knn_unit_vector(lat, lon, f.degrees, v);
}

/* Squared chord between unit vectors p and q, in a fixed order. */
KNN_HD double knn_chord2(const double p[3], double qx, double qy, double qz)
{
    double dx = KNN_SUB(p[0], qx), dy = KNN_SUB(p[1], qy), dz = KNN_SUB(p[2], qz);
    return KNN_ADD(KNN_ADD(KNN_MUL(dx, dx), KNN_MUL(dy, dy)), KNN_MUL(dz, dz));
}

/* Great-circle angle (radians) of a squared chord: 2 asin(chord / 2). */
KNN_HD double knn_angle(double chord2)
{
    double h = sqrt(chord2 < 0 ? 0 : chord2) * 0.5;
    return 2.0 * asin(h > 1.0 ? 1.0 : h);
}

/* (c1, i1) better than (c2, i2)? Lower chord first, then lower index; idx < 0 = none. */
KNN_HD int knn_better(double c1, int64_t i1, double c2, int64_t i2)
{
    if (i1 < 0) return 0;
    if (i2 < 0) return 1;
    return c1 < c2 || (c1 == c2 && i1 < i2);
}

#ifdef __cplusplus
extern "C" {
#endif
/* ---- a task's arguments and buffers, checked (knn_register.c) ---- */
typedef struct knn_search_job {
    cask_knn_search_args a;
    const void *obs;
    const void *prep;
    void *out0;   /* FINAL: int32 idx; PARTIAL: cask_knn_best */
    void *out1;   /* FINAL: float dist */
} knn_search_job;
/* Each fills its outputs or returns cask_task_fail(ctx, ...) naming what is wrong. */
cask_status knn_job_prep(cask_task_ctx *ctx, cask_knn_prep_args *a, const void **ref,
                         void **prep);
cask_status knn_job_search(cask_task_ctx *ctx, knn_search_job *j);
/* The task's argument bytes into dst (exactly size bytes, else the task fails naming
 * kernel): knn_register.c. */
cask_status knn_job_args(cask_task_ctx *ctx, const char *kernel, void *dst, size_t size);
cask_status knn_job_merge(cask_task_ctx *ctx, int64_t *n, cask_knn_best **a,
                          const cask_knn_best **b);
cask_status knn_job_finish(cask_task_ctx *ctx, cask_knn_finish_args *a,
                           const cask_knn_best **best, int32_t **idx, float **dist);

/* ---- CPU implementations (knn_cpu.c) ---- */
cask_status knn_cpu_prep(cask_task_ctx *ctx);
cask_status knn_cpu_search(cask_task_ctx *ctx);
cask_status knn_cpu_merge(cask_task_ctx *ctx);
cask_status knn_cpu_finish(cask_task_ctx *ctx);
/* The CPU search on plain host pointers (tests and the kernel check use it too). */
void knn_cpu_search_run(const knn_search_job *j);
void knn_cpu_prep_run(const void *ref, int64_t m, cask_knn_points in, void *prep);
#ifdef __cplusplus
}
#endif

/* ---- CUDA (knn_cuda.cu): task kernels and plain launchers ---- */
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
cask_status knn_cuda_task_prep(cask_task_ctx *ctx);
cask_status knn_cuda_task_search(cask_task_ctx *ctx);
cask_status knn_cuda_task_merge(cask_task_ctx *ctx);
cask_status knn_cuda_task_finish(cask_task_ctx *ctx);

/* The launchers enqueue on stream s and return cudaGetLastError() after the launch
 * (cudaSuccess or the launch's error); they never synchronise. All pointers are device
 * pointers (or host memory the device can address). */

/* Prepares m references (interleaved lat/lon in format in) into prep, which holds
 * knn_prep_bytes(m) bytes. */
cudaError_t knn_cuda_prep(const void *ref, int64_t m, cask_knn_points in, void *prep,
                          cudaStream_t s);
/* Nearest of the m prepared references for each of n observations (format in): writes
 * idx[i] = ref_base + index (int32, -1 if none) and dist[i] = scale * angle (float). */
cudaError_t knn_cuda_search_final(const void *obs, int64_t n, cask_knn_points in,
                                  const void *prep, int64_t m, int64_t ref_base, double scale,
                                  int32_t *idx, float *dist, cudaStream_t s);
/* Same, writing best[i] = {float64 squared chord, ref_base + index} instead. */
cudaError_t knn_cuda_search_partial(const void *obs, int64_t n, cask_knn_points in,
                                    const void *prep, int64_t m, int64_t ref_base,
                                    cask_knn_best *best, cudaStream_t s);
/* a[i] = better of a[i] and b[i]. */
cudaError_t knn_cuda_merge(cask_knn_best *a, const cask_knn_best *b, int64_t n, cudaStream_t s);
/* idx[i], dist[i] from best[i]. */
cudaError_t knn_cuda_finish(const cask_knn_best *best, int64_t n, double scale, int32_t *idx,
                            float *dist, cudaStream_t s);

/* Tuning (bench/knn_kernel_check.c, retired with its findings written: bench/RESULTS.md,
 * "Retired programs and steps", names the commit to bring it back): the search's
 * variants (0 is what the launchers above use), and counters of its bookkeeping (device memory zeroed by the caller, or NULL;
 * filled by the variants whose name says "counters"). Mode CASK_KNN_FINAL: out0 int32
 * idx, out1 float dist; CASK_KNN_PARTIAL: out0 cask_knn_best. Variants named "not exact"
 * only time pass 1 and leave scratch in the outputs. */
typedef struct knn_cuda_stats {
    unsigned long long obs_near;     /* observations with a second candidate tile */
    unsigned long long obs_overflow; /* observations rescanned against every tile */
    unsigned long long rescans;      /* (observation, tile) rescans in pass 2 */
    unsigned long long slow_rescans; /* of which needed float64 comparisons */
} knn_cuda_stats;
int knn_cuda_search_variants(void);
const char *knn_cuda_search_variant_name(int variant);
cudaError_t knn_cuda_search_variant(int variant, const void *obs, int64_t n,
                                    cask_knn_points in, const void *prep, int64_t m,
                                    int64_t ref_base, double scale, int mode, void *out0,
                                    void *out1, knn_cuda_stats *stats, cudaStream_t s);
#ifdef __cplusplus
}
#endif
#endif /* CASK_HAVE_CUDA */

#endif
