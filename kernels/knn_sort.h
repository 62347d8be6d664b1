/* kernels/knn_sort.h: what the CPU and CUDA k-nearest kernels (knn_k_cpu.c, knn_k_cuda.cu)
 * share: the cell key that orders points along a space-filling curve on the sphere, the
 * layout of tiled (sorted) references with their bounding caps, the scratch layout of a
 * search task, and the bound that lets a search skip a reference tile.
 *
 * K nearest, exact (extends knn_impl.h's proof from the maximum to the K-th largest). A
 * float32 pass keeps, per observation, the K largest dot32 = p32 . q32 over the tiles it
 * visits; call the K-th of them M_K. Those K distinct references have exact dots
 * >= M_K - E (E < 3.1e-7, knn_impl.h), so the K-th best exact dot D_K >= M_K - E, and every
 * member of the true K nearest (float64 squared chord, ties to the lower index) has exact
 * dot >= D_K (up to float64 rounding, ~1e-16) hence dot32 >= M_K - 2E > M_K - KNN_MARGIN.
 * The float64 pass therefore inserts every reference with dot32 >= M_K - KNN_MARGIN into a
 * sorted list of K (squared chord, index) entries: the true K nearest are all inserted,
 * so the list ends as exactly the true K nearest, whatever else was inserted. The same
 * K-th list results from any superset of candidates, which is why brute force and pruning
 * give the same bytes. Fewer than K references: M_K stays -inf and all are candidates.
 *
 * Pruning. Points are ordered by knn_cell_key (a Hilbert curve on each face of an
 * equal-angle cube map) and cut into tiles; a tile's cap is its centre c and angular
 * radius r (every point within r of c, computed in float64 from the points' float64 unit
 * vectors and widened by KNN_CAP_SLACK). For an observation tile (c_o, r_o) and a reference
 * tile (c_t, r_t) no pair is closer than lb = angle(c_o, c_t) - r_o - r_t, so no exact dot
 * exceeds ub = cos(max(lb, 0)). A search skips the tile when ub < M_K - KNN_MARGIN -
 * KNN_PRUNE_SLACK for every observation of its tile: then each reference q there has exact
 * dot < M_K - E - (slack) <= D_K, so q is not among the true K nearest (not even as a tie)
 * and neither pass needs it. M_K only grows while tiles are visited, so a tile skipped
 * early would also be skipped at the end; tiles are visited in decreasing ub (nearest
 * first), so M_K grows fast and the first tile below the threshold ends the walk. */
#ifndef CASK_KERNELS_KNN_SORT_H
#define CASK_KERNELS_KNN_SORT_H

#include "kernels/knn_impl.h"

/* Largest K the kernels accept (CASK_KNN_KMAX in cask/knn.h). */
#define KNN_KMAX CASK_KNN_KMAX
/* Cube map cells: 6 faces of 2^KNN_GRID_L x 2^KNN_GRID_L. */
#define KNN_GRID_L 6
#define KNN_GRID_SIDE (1 << KNN_GRID_L)
#define KNN_NCELLS (6 * KNN_GRID_SIDE * KNN_GRID_SIDE)
/* Radians added to every cap radius: covers the rounding of the cap and bound math. */
#define KNN_CAP_SLACK 1e-9
/* Subtracted from the skip threshold besides KNN_MARGIN (float64 bound arithmetic). */
#define KNN_PRUNE_SLACK 1e-6
/* References per tile of sorted references (a divisor of KNN_TILE, the padding unit). */
#ifndef KNN_STILE
#define KNN_STILE 64
#endif
/* Largest reference tiles per prepared chunk the pruned search orders (GPU shared memory). */
#define KNN_SORT_MAX_TILES 2048

#define KNN_SORTED_MAGIC 0x31534e4b4b534143ull /* "CASKKNS1" */

/* Sorted references: a 64-byte header, then (mpad = knn_mpad(m), tiles of KNN_STILE):
 * float32 x, y, z, 0 interleaved (16 bytes per reference; padding NaN), float64 x, y, z
 * arrays, int32 original index within the chunk (padding -1), then per tile its cap
 * (float64 cx, cy, cz, r). References appear in knn_cell_key order (stable). */
typedef struct knn_sorted_header {
    uint64_t magic;
    int64_t m;
    int64_t mpad;
    int64_t ntiles;
    uint64_t reserved[4];
} knn_sorted_header;

KNN_HD size_t knn_sorted_bytes(int64_t m)
{
    int64_t mpad = knn_mpad(m);
    return sizeof(knn_sorted_header) + (size_t)mpad * (16 + 24 + 4) +
           (size_t)(mpad / KNN_STILE) * 32;
}
KNN_HD float *knn_sorted_q32(void *p)
{
    return (float *)((char *)p + sizeof(knn_sorted_header));
}
KNN_HD double *knn_sorted_f64(void *p, int64_t mpad, int c)
{
    return (double *)((char *)p + sizeof(knn_sorted_header) + (size_t)mpad * 16) +
           (size_t)c * mpad;
}
KNN_HD int32_t *knn_sorted_orig(void *p, int64_t mpad)
{
    return (int32_t *)((char *)p + sizeof(knn_sorted_header) + (size_t)mpad * 40);
}
KNN_HD double *knn_sorted_caps(void *p, int64_t mpad)
{
    return (double *)((char *)p + sizeof(knn_sorted_header) + (size_t)mpad * 44);
}

/* Scratch of a search over n observations: cell counts, keys, and the observations in
 * key order (float32 x, y, z and the original row as int bits in w). */
KNN_HD size_t knn_scratch_bytes(int64_t n)
{
    return 64 + (size_t)KNN_NCELLS * 4 + (size_t)((n + 3) / 4 * 4) * 4 + (size_t)n * 16;
}
KNN_HD uint32_t *knn_scratch_counts(void *s)
{
    return (uint32_t *)((char *)s + 64);
}
KNN_HD uint32_t *knn_scratch_keys(void *s)
{
    return (uint32_t *)((char *)s + 64 + (size_t)KNN_NCELLS * 4);
}
KNN_HD float *knn_scratch_sorted(void *s, int64_t n)
{
    /* 16-byte aligned: 64 + 4 KNN_NCELLS is a multiple of 16, n is rounded up to 4 */
    return (float *)((char *)s + 64 + (size_t)KNN_NCELLS * 4 + (size_t)((n + 3) / 4 * 4) * 4);
}

/* Hilbert index of (x, y) on a side x side grid (side a power of two). */
KNN_HD uint32_t knn_hilbert(uint32_t side, uint32_t x, uint32_t y)
{
    uint32_t d = 0;
    for (uint32_t s = side / 2; s > 0; s /= 2) {
        uint32_t rx = (x & s) > 0, ry = (y & s) > 0;
        d += s * s * ((3 * rx) ^ ry);
        if (ry == 0) {
            if (rx == 1) {
                x = side - 1 - x;
                y = side - 1 - y;
            }
            uint32_t t = x;
            x = y;
            y = t;
        }
    }
    return d;
}

KNN_HD uint32_t knn_grid_coord(float u)
{
    /* equal-angle cube map: atan spreads the cells' areas evenly */
    float a = (atanf(u) * 1.27323954f + 1.0f) * (0.5f * KNN_GRID_SIDE);
    if (!(a >= 0.0f))
        return 0;
    return a >= KNN_GRID_SIDE - 1 ? KNN_GRID_SIDE - 1 : (uint32_t)a;
}

/* The cell of unit vector (x, y, z): face * side^2 + Hilbert index on the face. Only the
 * speed of a search depends on it, never its result. */
KNN_HD uint32_t knn_cell_key(float x, float y, float z)
{
    float ax = fabsf(x), ay = fabsf(y), az = fabsf(z);
    uint32_t face;
    float u, v;
    if (ax >= ay && ax >= az) {
        face = x >= 0 ? 0 : 1;
        u = y / ax;
        v = z / ax;
    } else if (ay >= az) {
        face = y >= 0 ? 2 : 3;
        u = x / ay;
        v = z / ay;
    } else {
        face = z >= 0 ? 4 : 5;
        u = x / az;
        v = y / az;
    }
    if (!(ax + ay + az > 0)) /* NaN or zero: any cell */
        return 0;
    return face * KNN_GRID_SIDE * KNN_GRID_SIDE +
           knn_hilbert(KNN_GRID_SIDE, knn_grid_coord(u), knn_grid_coord(v));
}

/* Angle (radians) between unit vectors by their chord: accurate for small angles too. */
KNN_HD double knn_angle_between(double ax, double ay, double az, double bx, double by,
                                double bz)
{
    double dx = ax - bx, dy = ay - by, dz = az - bz;
    return knn_angle(dx * dx + dy * dy + dz * dz);
}

/* Largest exact dot of a point in cap a with a point in cap b (caps: cx, cy, cz, r). */
KNN_HD double knn_cap_upper_dot(const double *a, const double *b)
{
    double lb = knn_angle_between(a[0], a[1], a[2], b[0], b[1], b[2]) - a[3] - b[3];
    return lb <= 0 ? 1.0 : cos(lb);
}

/* Skip threshold for float32 K-th best M (a tile with upper dot below it is skipped). */
KNN_HD double knn_skip_threshold(float M)
{
    return (double)M - (double)KNN_MARGIN - KNN_PRUNE_SLACK;
}

/* Cap radius from the largest angle to the centre. */
KNN_HD double knn_cap_widen(double r)
{
    return r * (1.0 + 1e-12) + KNN_CAP_SLACK;
}

/* Insertion of (c2, idx) into the ascending list (c2s, idxs) of k entries (idx -1 =
 * empty, at the end): by squared chord, ties to the lower index. stride between entries. */
KNN_HD void knn_list_insert(double *c2s, int64_t *idxs, int k, int stride, double c2,
                            int64_t idx)
{
    int last = (k - 1) * stride;
    if (!knn_better(c2, idx, c2s[last], idxs[last]))
        return;
    int p = last;
    while (p > 0 && knn_better(c2, idx, c2s[p - stride], idxs[p - stride])) {
        c2s[p] = c2s[p - stride];
        idxs[p] = idxs[p - stride];
        p -= stride;
    }
    c2s[p] = c2;
    idxs[p] = idx;
}

#ifdef __cplusplus
extern "C" {
#endif
/* ---- a ksearch task's arguments and buffers, checked (knn_k_register.c) ---- */
typedef struct knn_k_job {
    cask_knn_ksearch_args a;
    const void *obs;
    const void *sorted;
    const void *scratch; /* ordered by korder */
    void *out0; /* FINAL: int32 idx (n x k); PARTIAL: cask_knn_best (n x k) */
    void *out1; /* FINAL: float dist (n x k) */
} knn_k_job;
cask_status knn_k_job_prep(cask_task_ctx *ctx, cask_knn_prep_args *a, const void **ref,
                           void **sorted, void **scratch);
cask_status knn_k_job_order(cask_task_ctx *ctx, cask_knn_korder_args *a, const void **obs,
                            void **scratch);
cask_status knn_k_job_search(cask_task_ctx *ctx, knn_k_job *j);
cask_status knn_k_job_merge(cask_task_ctx *ctx, cask_knn_kmerge_args *a, cask_knn_best **x,
                            const cask_knn_best **y);
cask_status knn_k_job_finish(cask_task_ctx *ctx, cask_knn_kfinish_args *a,
                             const cask_knn_best **best, int32_t **idx, float **dist);

/* ---- CPU (knn_k_cpu.c) ---- */
cask_status knn_k_cpu_prep(cask_task_ctx *ctx);
cask_status knn_k_cpu_order(cask_task_ctx *ctx);
cask_status knn_k_cpu_search(cask_task_ctx *ctx);
cask_status knn_k_cpu_merge(cask_task_ctx *ctx);
cask_status knn_k_cpu_finish(cask_task_ctx *ctx);
/* On plain host pointers: sorts m references into sorted (knn_sorted_bytes(m)); orders n
 * observations into scratch (knn_scratch_bytes(n)); the search (j's buffers valid host
 * memory). Each returns 0, or -1 when out of memory. */
int knn_k_cpu_prep_run(const void *ref, int64_t m, cask_knn_points in, void *sorted);
int knn_k_cpu_order_run(const void *obs, int64_t n, cask_knn_points in, int prune,
                        void *scratch);
int knn_k_cpu_search_run(const knn_k_job *j);
#ifdef CASK_HAVE_CUDA
cask_status knn_k_cuda_prep(cask_task_ctx *ctx);
cask_status knn_k_cuda_order(cask_task_ctx *ctx);
cask_status knn_k_cuda_search(cask_task_ctx *ctx);
cask_status knn_k_cuda_merge(cask_task_ctx *ctx);
cask_status knn_k_cuda_finish(cask_task_ctx *ctx);
#endif
#ifdef __cplusplus
}
#endif

#endif
