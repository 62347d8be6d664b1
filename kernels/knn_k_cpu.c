/* kernels/knn_k_cpu.c: CPU implementations of the K-nearest kernels: prep_sorted (the
 * references in space-filling-curve order, tiled, with caps; also what a GPU search
 * reads, so there is one implementation), ksearch (brute force or pruned; see
 * knn_sort.h for why both are exact and agree byte for byte), kmerge and kfinish. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/knn_sort.h"

/* Observations per tile of the CPU search. */
#define KNN_CPU_OTILE 64

/* Centre and widened radius of the cap of n float64 unit vectors v[3i..3i+2]. */
static void cap_of(const double *v, int64_t n, double cap[4])
{
    double sx = 0, sy = 0, sz = 0;
    for (int64_t i = 0; i < n; i++) {
        sx += v[3 * i];
        sy += v[3 * i + 1];
        sz += v[3 * i + 2];
    }
    double norm = sqrt(sx * sx + sy * sy + sz * sz);
    if (!(norm > 1e-9 * (double)n)) { /* balanced around the origin: any centre works */
        sx = 1;
        sy = sz = 0;
        norm = 1;
    }
    cap[0] = sx / norm;
    cap[1] = sy / norm;
    cap[2] = sz / norm;
    double r = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = knn_angle_between(cap[0], cap[1], cap[2], v[3 * i], v[3 * i + 1], v[3 * i + 2]);
        r = a > r ? a : r;
    }
    cap[3] = knn_cap_widen(r);
}

int knn_k_cpu_prep_run(const void *ref, int64_t m, cask_knn_points in, void *sorted)
{
    const int64_t mpad = knn_mpad(m), ntiles = mpad / KNN_STILE;
    double *v = malloc((size_t)(m > 0 ? m : 1) * 3 * sizeof *v);
    uint32_t *key = malloc((size_t)(m > 0 ? m : 1) * sizeof *key);
    uint32_t *count = calloc(KNN_NCELLS + 1, sizeof *count);
    int64_t *order = malloc((size_t)(m > 0 ? m : 1) * sizeof *order);
    double *tv = malloc((size_t)KNN_STILE * 3 * sizeof *tv);
    if (!v || !key || !count || !order || !tv) {
        free(v), free(key), free(count), free(order), free(tv);
        return -1;
    }
    for (int64_t j = 0; j < m; j++) {
        knn_load_point(ref, j, in, v + 3 * j);
        key[j] = knn_cell_key((float)v[3 * j], (float)v[3 * j + 1], (float)v[3 * j + 2]);
        count[key[j] + 1]++;
    }
    for (int c = 0; c < KNN_NCELLS; c++)
        count[c + 1] += count[c];
    for (int64_t j = 0; j < m; j++) /* stable: the order never depends on anything else */
        order[count[key[j]]++] = j;

    knn_sorted_header h;
    memset(&h, 0, sizeof h);
    h.magic = KNN_SORTED_MAGIC;
    h.m = m;
    h.mpad = mpad;
    h.ntiles = ntiles;
    memcpy(sorted, &h, sizeof h);
    float *q = knn_sorted_q32(sorted);
    double *x = knn_sorted_f64(sorted, mpad, 0), *y = knn_sorted_f64(sorted, mpad, 1),
           *z = knn_sorted_f64(sorted, mpad, 2), *caps = knn_sorted_caps(sorted, mpad);
    int32_t *orig = knn_sorted_orig(sorted, mpad);
    for (int64_t s = 0; s < mpad; s++) {
        double w[3] = {NAN, NAN, NAN};
        if (s < m)
            memcpy(w, v + 3 * order[s], sizeof w);
        q[4 * s] = (float)w[0];
        q[4 * s + 1] = (float)w[1];
        q[4 * s + 2] = (float)w[2];
        q[4 * s + 3] = 0.0f;
        x[s] = w[0];
        y[s] = w[1];
        z[s] = w[2];
        orig[s] = s < m ? (int32_t)order[s] : -1;
    }
    for (int64_t t = 0; t < ntiles; t++) {
        int64_t s0 = t * KNN_STILE, cnt = m - s0 < KNN_STILE ? m - s0 : KNN_STILE;
        if (cnt <= 0) { /* only when m == 0: a cap that is never near anything */
            double none[4] = {1, 0, 0, 0};
            memcpy(caps + 4 * t, none, sizeof none);
            continue;
        }
        for (int64_t s = 0; s < cnt; s++) {
            tv[3 * s] = x[s0 + s];
            tv[3 * s + 1] = y[s0 + s];
            tv[3 * s + 2] = z[s0 + s];
        }
        cap_of(tv, cnt, caps + 4 * t);
    }
    free(v), free(key), free(count), free(order), free(tv);
    return 0;
}

/* The float32 dot of observation p32 with reference q (x, y, z, 0): the one expression of
 * both passes (ISO C, no contraction: the blocked loop below rounds the same way). */
static inline float dot32(const float *p32, const float *q)
{
    return p32[0] * q[0] + p32[1] * q[1] + p32[2] * q[2];
}

/* Observations per block of the tile maxima (two SSE vectors, as in knn_cpu.c). */
#define KNN_CPU_OBS 8

/* T[k] = the largest dot32 of observations px/py/pz[k] (k < 8) with the KNN_STILE
 * references at q. Written so that gcc keeps each group of 4 in one vector register. */
static void tile_max8(const float *px, const float *py, const float *pz,
                      const float *restrict q, float *T)
{
    float T0[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    float T1[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (int j = 0; j < KNN_STILE; j++) {
        const float bx = q[4 * j], by = q[4 * j + 1], bz = q[4 * j + 2];
        for (int k = 0; k < 4; k++) {
            float d = px[k] * bx + py[k] * by + pz[k] * bz;
            T0[k] = d > T0[k] ? d : T0[k];
        }
        for (int k = 0; k < 4; k++) {
            float d = px[4 + k] * bx + py[4 + k] * by + pz[4 + k] * bz;
            T1[k] = d > T1[k] ? d : T1[k];
        }
    }
    for (int k = 0; k < 4; k++) {
        T[k] = T0[k];
        T[4 + k] = T1[k];
    }
}

typedef struct tile_ub {
    double ub;
    int64_t t;
} tile_ub;

/* Reference tiles by decreasing upper bound, ties to the lower tile: a max-heap built in
 * O(tiles) and popped as the walk goes, since a pruned walk visits only the first few
 * (sorting them all was 5% of the search). */
static inline int ub_before(const tile_ub *a, const tile_ub *b)
{
    return a->ub > b->ub || (a->ub == b->ub && a->t < b->t);
}

static void heap_down(tile_ub *h, int64_t n, int64_t i)
{
    tile_ub x = h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ub_before(&h[c + 1], &h[c]))
            c++;
        if (!ub_before(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void heap_build(tile_ub *h, int64_t n)
{
    for (int64_t i = n / 2 - 1; i >= 0; i--)
        heap_down(h, n, i);
}

static tile_ub heap_pop(tile_ub *h, int64_t *n)
{
    tile_ub top = h[0];
    h[0] = h[--*n];
    if (*n > 0)
        heap_down(h, *n, 0);
    return top;
}

/* Observations in cell-key order into the scratch (float32 x, y, z, original row as int
 * bits): points and keys in input order, counts, then each point copied straight to its
 * place (a counting sort: independent stores, where following the permutation's cycles
 * in place was a chain of cache misses, 43% of the kernel). Returns -1 if it cannot
 * allocate its buffer. */
int knn_k_cpu_order_run(const void *obs, int64_t n, cask_knn_points in, int prune,
                        void *scratch)
{
    float *sc = knn_scratch_sorted(scratch, n);
    uint32_t *key = knn_scratch_keys(scratch), *count = knn_scratch_counts(scratch);
    float *pts = prune ? malloc((size_t)n * 4 * sizeof *pts) : sc;
    if (!pts)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        double v[3];
        knn_load_point(obs, i, in, v);
        float *d = pts + 4 * i;
        d[0] = (float)v[0];
        d[1] = (float)v[1];
        d[2] = (float)v[2];
        int32_t row = (int32_t)i;
        memcpy(&d[3], &row, sizeof row);
        if (prune)
            key[i] = knn_cell_key(d[0], d[1], d[2]);
    }
    if (!prune)
        return 0;
    memset(count, 0, (size_t)KNN_NCELLS * sizeof *count);
    for (int64_t i = 0; i < n; i++)
        count[key[i]]++;
    uint32_t sum = 0;
    for (int c = 0; c < KNN_NCELLS; c++) {
        uint32_t k = count[c];
        count[c] = sum;
        sum += k;
    }
    for (int64_t i = 0; i < n; i++)   /* stable */
        memcpy(sc + 4 * (int64_t)count[key[i]]++, pts + 4 * i, 4 * sizeof *pts);
    free(pts);
    return 0;
}

/* Working memory of one observation tile. */
typedef struct otile {
    double p64[KNN_CPU_OTILE][3];
    float p32[KNN_CPU_OTILE][3];
    float px[KNN_CPU_OTILE], py[KNN_CPU_OTILE], pz[KNN_CPU_OTILE]; /* short tile: repeats */
    int64_t row[KNN_CPU_OTILE];
    float kth[KNN_CPU_OTILE];
    int kpos[KNN_CPU_OTILE];
    float vals[KNN_CPU_OTILE * KNN_KMAX];
    double c2[KNN_CPU_OTILE * KNN_KMAX];
    int64_t idx[KNN_CPU_OTILE * KNN_KMAX];
} otile;

int knn_k_cpu_search_run(const knn_k_job *j)
{
    const cask_knn_ksearch_args *A = &j->a;
    const int64_t n = A->n, mpad = knn_mpad(A->m), ntr = mpad / KNN_STILE;
    const int K = A->k, prune = A->prune;
    void *srt = (void *)j->sorted;
    const float *q = knn_sorted_q32(srt);
    const double *x64 = knn_sorted_f64(srt, mpad, 0), *y64 = knn_sorted_f64(srt, mpad, 1),
                 *z64 = knn_sorted_f64(srt, mpad, 2), *caps = knn_sorted_caps(srt, mpad);
    const int32_t *orig = knn_sorted_orig(srt, mpad);
    const float *sc = knn_scratch_sorted((void *)j->scratch, n);
    otile *w = malloc(sizeof *w);
    tile_ub *order = malloc((size_t)ntr * sizeof *order);   /* a heap when pruning */
    tile_ub *visit = malloc((size_t)ntr * sizeof *visit);   /* pass 1's walk */
    /* pass 1's tile maxima of every observation, by visited tile: pass 2 visits a prefix
     * of the same tiles and reads them instead of computing them again */
    float *tmax = malloc((size_t)ntr * KNN_CPU_OTILE * sizeof *tmax);
    if (!w || !order || !visit || !tmax) {
        free(w), free(order), free(visit), free(tmax);
        return -1;
    }

    const size_t obs_row = A->in.f64 ? 2 * sizeof(double) : 2 * sizeof(float);
    for (int64_t s0 = 0; s0 < n; s0 += KNN_CPU_OTILE) {
        const int no = n - s0 < KNN_CPU_OTILE ? (int)(n - s0) : KNN_CPU_OTILE;
        /* the next tile's observations, scattered over the chunk in curve order: asked
         * for now, they arrive while this tile computes (waiting for them was a third of
         * the search) */
        for (int64_t o = s0 + KNN_CPU_OTILE; o < s0 + 2 * KNN_CPU_OTILE && o < n; o++) {
            int32_t row;
            memcpy(&row, &sc[4 * o + 3], sizeof row);
            __builtin_prefetch((const char *)j->obs + (size_t)row * obs_row);
        }
        for (int o = 0; o < no; o++) {
            int32_t row;
            memcpy(&row, &sc[4 * (s0 + o) + 3], sizeof row);
            w->row[o] = row;
            knn_load_point(j->obs, row, A->in, w->p64[o]);
            for (int c = 0; c < 3; c++)
                w->p32[o][c] = (float)w->p64[o][c];
            w->px[o] = w->p32[o][0];
            w->py[o] = w->p32[o][1];
            w->pz[o] = w->p32[o][2];
            w->kth[o] = -INFINITY;
            w->kpos[o] = 0;
            for (int r = 0; r < K; r++)
                w->vals[o * K + r] = -INFINITY;
        }
        for (int o = no; o < KNN_CPU_OTILE; o++) { /* a short tile repeats its last */
            w->px[o] = w->px[no - 1];
            w->py[o] = w->py[no - 1];
            w->pz[o] = w->pz[no - 1];
        }
        for (int64_t t = 0; t < ntr; t++) {
            order[t].t = t;
            order[t].ub = 1.0;
        }
        if (prune) {
            double cap[4];
            cap_of(&w->p64[0][0], no, cap);
            for (int64_t t = 0; t < ntr; t++)
                order[t].ub = knn_cap_upper_dot(cap, caps + 4 * t);
            heap_build(order, ntr);
        }
        /* pass 1: the K largest float32 dots per observation, tiles in decreasing ub */
        double thr_min = -INFINITY;
        int64_t nvis = 0, left = ntr;
        for (int64_t s = 0; s < ntr; s++) {
            if (prune && order[0].ub < thr_min)
                break;
            const tile_ub tu = prune ? heap_pop(order, &left) : order[s];
            visit[nvis++] = tu;
            const float *qt = q + 4 * tu.t * KNN_STILE;
            for (int o0 = 0; o0 < no; o0 += KNN_CPU_OBS) {
                float *T = tmax + s * KNN_CPU_OTILE + o0;
                tile_max8(w->px + o0, w->py + o0, w->pz + o0, qt, T);
                for (int o = o0; o < o0 + KNN_CPU_OBS && o < no; o++) {
                    if (!(T[o - o0] > w->kth[o]))
                        continue;
                    if (K == 1) {
                        w->kth[o] = T[o - o0];
                        continue;
                    }
                    float kth = w->kth[o];
                    float *vals = w->vals + o * K;
                    for (int jj = 0; jj < KNN_STILE; jj++) {
                        float d = dot32(w->p32[o], qt + 4 * jj);
                        if (d > kth) {
                            vals[w->kpos[o]] = d;
                            int p = 0;
                            for (int r = 1; r < K; r++)
                                p = vals[r] < vals[p] ? r : p;
                            w->kpos[o] = p;
                            kth = vals[p];
                        }
                    }
                    w->kth[o] = kth;
                }
            }
            if (prune) {
                thr_min = INFINITY;
                for (int o = 0; o < no; o++) {
                    double th = knn_skip_threshold(w->kth[o]);
                    thr_min = th < thr_min ? th : thr_min;
                }
            }
        }
        /* pass 2: float64 check of every candidate into sorted lists of K */
        for (int i = 0; i < no * K; i++) {
            w->c2[i] = INFINITY;
            w->idx[i] = -1;
        }
        for (int64_t s = 0; s < nvis; s++) {
            if (prune && visit[s].ub < thr_min)
                break;
            const int64_t base = visit[s].t * KNN_STILE;
            const float *qt = q + 4 * base;
            const float *T = tmax + s * KNN_CPU_OTILE;
            for (int o = 0; o < no; o++) {
                const float thr = w->kth[o] - KNN_MARGIN;
                if (!(T[o] >= thr))
                    continue;
                for (int jj = 0; jj < KNN_STILE; jj++) {
                    if (dot32(w->p32[o], qt + 4 * jj) >= thr) {
                        int64_t sj = base + jj;
                        double c2 = knn_chord2(w->p64[o], x64[sj], y64[sj], z64[sj]);
                        knn_list_insert(w->c2 + o * K, w->idx + o * K, K, 1, c2,
                                        A->ref_base + orig[sj]);
                    }
                }
            }
        }
        for (int o = 0; o < no; o++) {
            const int64_t i = w->row[o];
            for (int r = 0; r < K; r++) {
                const double c2 = w->c2[o * K + r];
                const int64_t idx = w->idx[o * K + r];
                if (A->mode == CASK_KNN_FINAL) {
                    ((int32_t *)j->out0)[i * K + r] = idx < 0 ? -1 : (int32_t)idx;
                    ((float *)j->out1)[i * K + r] =
                        idx < 0 ? NAN : (float)(A->scale * knn_angle(c2));
                } else {
                    cask_knn_best *b = (cask_knn_best *)j->out0 + i * K + r;
                    b->chord2 = idx < 0 ? INFINITY : c2;
                    b->idx = idx;
                }
            }
        }
    }
    free(w);
    free(order);
    free(visit);
    free(tmax);
    return 0;
}

cask_status knn_k_cpu_prep(cask_task_ctx *ctx)
{
    cask_knn_prep_args a;
    const void *ref;
    void *sorted, *scratch; /* the CPU sorts with its own (stable) tables */
    cask_status st = knn_k_job_prep(ctx, &a, &ref, &sorted, &scratch);
    if (st)
        return st;
    if (knn_k_cpu_prep_run(ref, a.m, a.in, sorted))
        return cask_task_fail(ctx, "knn prep_sorted: out of memory for %lld references",
                              (long long)a.m);
    return CASK_OK;
}

cask_status knn_k_cpu_order(cask_task_ctx *ctx)
{
    cask_knn_korder_args a;
    const void *obs;
    void *scratch;
    cask_status st = knn_k_job_order(ctx, &a, &obs, &scratch);
    if (st)
        return st;
    if (knn_k_cpu_order_run(obs, a.n, a.in, a.prune, scratch))
        return cask_task_fail(ctx, "knn korder: out of memory for %lld points", (long long)a.n);
    return CASK_OK;
}

cask_status knn_k_cpu_search(cask_task_ctx *ctx)
{
    knn_k_job j;
    cask_status st = knn_k_job_search(ctx, &j);
    if (st)
        return st;
    const knn_sorted_header *h = (const knn_sorted_header *)j.sorted;
    if (h->magic != KNN_SORTED_MAGIC || h->m != j.a.m)
        return cask_task_fail(ctx, "knn ksearch: buffer 1 is not %lld sorted references "
                              "(run prep_sorted on them first)", (long long)j.a.m);
    if (knn_k_cpu_search_run(&j))
        return cask_task_fail(ctx, "knn ksearch: out of memory for its working set");
    return CASK_OK;
}

/* The k best of two sorted rows a and b into a. */
static void merge_row(cask_knn_best *a, const cask_knn_best *b, int64_t k)
{
    cask_knn_best out[KNN_KMAX];
    int64_t ia = 0, ib = 0;
    for (int64_t r = 0; r < k; r++) {
        if (knn_better(b[ib].chord2, b[ib].idx, a[ia].chord2, a[ia].idx))
            out[r] = b[ib++];
        else
            out[r] = a[ia++];
    }
    memcpy(a, out, (size_t)k * sizeof *a);
}

cask_status knn_k_cpu_merge(cask_task_ctx *ctx)
{
    cask_knn_kmerge_args a;
    cask_knn_best *x;
    const cask_knn_best *y;
    cask_status st = knn_k_job_merge(ctx, &a, &x, &y);
    if (st)
        return st;
    for (int64_t i = 0; i < a.n; i++)
        merge_row(x + i * a.k, y + i * a.k, a.k);
    return CASK_OK;
}

cask_status knn_k_cpu_finish(cask_task_ctx *ctx)
{
    cask_knn_kfinish_args a;
    const cask_knn_best *best;
    int32_t *idx;
    float *dist;
    cask_status st = knn_k_job_finish(ctx, &a, &best, &idx, &dist);
    if (st)
        return st;
    for (int64_t i = 0; i < a.n * a.k; i++) {
        int ok = best[i].idx >= 0;
        idx[i] = ok ? (int32_t)best[i].idx : -1;
        dist[i] = ok ? (float)(a.scale * knn_angle(best[i].chord2)) : NAN;
    }
    return CASK_OK;
}
