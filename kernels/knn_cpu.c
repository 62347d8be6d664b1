/* kernels/knn_cpu.c: CPU implementations of the haversine 1-NN kernels (prep, search,
 * merge, finish). Same math as knn_cuda.cu (see knn_impl.h for why it is exact): a
 * float32 fast pass over tiles of structure-of-arrays references, written so that gcc
 * vectorises it across a block of observations, then a float64 rescan of the few tiles
 * that can hold the answer. Also what a simulated GPU runs. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>
#include <string.h>
#include "kernels/knn_impl.h"

/* Observations per block of the fast pass: two SSE vectors (the loops below assume 8). */
#define KNN_CPU_OBS 8

void knn_cpu_prep_run(const void *ref, int64_t m, cask_knn_points in, void *prep)
{
    int64_t mpad = knn_mpad(m);
    knn_prep_header h;
    memset(&h, 0, sizeof h);
    h.magic = KNN_PREP_MAGIC;
    h.m = m;
    h.mpad = mpad;
    memcpy(prep, &h, sizeof h);
    float *x32 = knn_prep_f32(prep, mpad, 0), *y32 = knn_prep_f32(prep, mpad, 1),
          *z32 = knn_prep_f32(prep, mpad, 2);
    double *x64 = knn_prep_f64(prep, mpad, 0), *y64 = knn_prep_f64(prep, mpad, 1),
           *z64 = knn_prep_f64(prep, mpad, 2);
    for (int64_t j = 0; j < mpad; j++) {
        double v[3] = {NAN, NAN, NAN};
        if (j < m)
            knn_load_point(ref, j, in, v);
        x64[j] = v[0];
        y64[j] = v[1];
        z64[j] = v[2];
        x32[j] = (float)v[0];
        y32[j] = (float)v[1];
        z32[j] = (float)v[2];
    }
}

/* The fast pass's bookkeeping for one tile maximum T (see knn_impl.h). */
static inline void track_tile(float T, int32_t t, float *M, int32_t *a, int32_t *b)
{
    if (!(T >= *M - KNN_MARGIN_TRACK))
        return;
    if (T - *M > KNN_MARGIN_TRACK) {   /* clean record: no earlier tile can matter */
        *a = t;
        *b = -1;
        *M = T;
        return;
    }
    int32_t other = T > *M ? *a : t;
    if (T > *M) {
        *a = t;
        *M = T;
    }
    *b = *b == -1 ? other : -2;
}

/* Float64 rescan of tile t for one observation: candidates have dot32 >= thr. */
static void rescan_tile(const float *x32, const float *y32, const float *z32,
                        const double *x64, const double *y64, const double *z64,
                        int64_t t, const double p64[3], const float p32[3], float thr,
                        double *best_c2, int64_t *best_idx)
{
    for (int64_t j = t * KNN_TILE; j < (t + 1) * KNN_TILE; j++) {
        float d = p32[0] * x32[j] + p32[1] * y32[j] + p32[2] * z32[j];
        if (d >= thr) {
            double c2 = knn_chord2(p64, x64[j], y64[j], z64[j]);
            if (knn_better(c2, j, *best_c2, *best_idx)) {
                *best_c2 = c2;
                *best_idx = j;
            }
        }
    }
}

void knn_cpu_search_run(const knn_search_job *job)
{
    const cask_knn_search_args *A = &job->a;
    const int64_t n = A->n, mpad = knn_mpad(A->m), ntiles = mpad / KNN_TILE;
    void *prep = (void *)job->prep;
    const float *x32 = knn_prep_f32(prep, mpad, 0), *y32 = knn_prep_f32(prep, mpad, 1),
                *z32 = knn_prep_f32(prep, mpad, 2);
    const double *x64 = knn_prep_f64(prep, mpad, 0), *y64 = knn_prep_f64(prep, mpad, 1),
                 *z64 = knn_prep_f64(prep, mpad, 2);

    for (int64_t i0 = 0; i0 < n; i0 += KNN_CPU_OBS) {
        double p64[KNN_CPU_OBS][3];
        float px[KNN_CPU_OBS], py[KNN_CPU_OBS], pz[KNN_CPU_OBS], M[KNN_CPU_OBS];
        int32_t a[KNN_CPU_OBS], b[KNN_CPU_OBS];
        for (int k = 0; k < KNN_CPU_OBS; k++) {
            /* A short last block repeats its last observation: same work, no branches. */
            int64_t i = i0 + k < n ? i0 + k : n - 1;
            knn_load_point(job->obs, i, A->in, p64[k]);
            px[k] = (float)p64[k][0];
            py[k] = (float)p64[k][1];
            pz[k] = (float)p64[k][2];
            M[k] = -INFINITY;
            a[k] = b[k] = -1;
        }
        for (int64_t t = 0; t < ntiles; t++) {
            const float *qx = x32 + t * KNN_TILE, *qy = y32 + t * KNN_TILE,
                        *qz = z32 + t * KNN_TILE;
            float T[KNN_CPU_OBS];
            for (int k = 0; k < KNN_CPU_OBS; k++)
                T[k] = -INFINITY;
            /* Two loops of 4, not one of 8: gcc then keeps each group in one SSE
             * register (one loop of 8 goes through memory, 2-3x slower). */
            for (int j = 0; j < KNN_TILE; j++) {
                const float bx = qx[j], by = qy[j], bz = qz[j];
                for (int k = 0; k < 4; k++) {
                    float d = px[k] * bx + py[k] * by + pz[k] * bz;
                    T[k] = d > T[k] ? d : T[k];
                }
                for (int k = 4; k < 8; k++) {
                    float d = px[k] * bx + py[k] * by + pz[k] * bz;
                    T[k] = d > T[k] ? d : T[k];
                }
            }
            for (int k = 0; k < KNN_CPU_OBS; k++)
                track_tile(T[k], (int32_t)t, &M[k], &a[k], &b[k]);
        }
        for (int k = 0; k < KNN_CPU_OBS && i0 + k < n; k++) {
            const float p32[3] = {px[k], py[k], pz[k]};
            const float thr = M[k] - KNN_MARGIN;
            double c2 = INFINITY;
            int64_t idx = -1;
            if (b[k] == -2) {
                for (int64_t t = 0; t < ntiles; t++)
                    rescan_tile(x32, y32, z32, x64, y64, z64, t, p64[k], p32, thr, &c2, &idx);
            } else {
                if (a[k] >= 0)
                    rescan_tile(x32, y32, z32, x64, y64, z64, a[k], p64[k], p32, thr, &c2, &idx);
                if (b[k] >= 0)
                    rescan_tile(x32, y32, z32, x64, y64, z64, b[k], p64[k], p32, thr, &c2, &idx);
            }
            int64_t i = i0 + k;
            if (A->mode == CASK_KNN_FINAL) {
                ((int32_t *)job->out0)[i] = idx < 0 ? -1 : (int32_t)(A->ref_base + idx);
                ((float *)job->out1)[i] = idx < 0 ? NAN : (float)(A->scale * knn_angle(c2));
            } else {
                cask_knn_best *best = (cask_knn_best *)job->out0 + i;
                best->chord2 = idx < 0 ? INFINITY : c2;
                best->idx = idx < 0 ? -1 : A->ref_base + idx;
            }
        }
    }
}

cask_status knn_cpu_prep(cask_task_ctx *ctx)
{
    cask_knn_prep_args a;
    const void *ref;
    void *prep;
    cask_status st = knn_job_prep(ctx, &a, &ref, &prep);
    if (st)
        return st;
    knn_cpu_prep_run(ref, a.m, a.in, prep);
    return CASK_OK;
}

cask_status knn_cpu_search(cask_task_ctx *ctx)
{
    knn_search_job j;
    cask_status st = knn_job_search(ctx, &j);
    if (st)
        return st;
    const knn_prep_header *h = (const knn_prep_header *)j.prep;
    if (h->magic != KNN_PREP_MAGIC || h->m != j.a.m)
        return cask_task_fail(ctx, "knn search: buffer 1 is not %lld prepared references "
                              "(run the prep kernel on it first)", (long long)j.a.m);
    knn_cpu_search_run(&j);
    return CASK_OK;
}

cask_status knn_cpu_merge(cask_task_ctx *ctx)
{
    int64_t n;
    cask_knn_best *a;
    const cask_knn_best *b;
    cask_status st = knn_job_merge(ctx, &n, &a, &b);
    if (st)
        return st;
    for (int64_t i = 0; i < n; i++)
        if (knn_better(b[i].chord2, b[i].idx, a[i].chord2, a[i].idx))
            a[i] = b[i];
    return CASK_OK;
}

cask_status knn_cpu_finish(cask_task_ctx *ctx)
{
    cask_knn_finish_args a;
    const cask_knn_best *best;
    int32_t *idx;
    float *dist;
    cask_status st = knn_job_finish(ctx, &a, &best, &idx, &dist);
    if (st)
        return st;
    for (int64_t i = 0; i < a.n; i++) {
        int ok = best[i].idx >= 0;
        idx[i] = ok ? (int32_t)best[i].idx : -1;
        dist[i] = ok ? (float)(a.scale * knn_angle(best[i].chord2)) : NAN;
    }
    return CASK_OK;
}
