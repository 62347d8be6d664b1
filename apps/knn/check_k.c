/* check_k.c: `cask-knn --check` with --k K > 1: a float64 brute force (haversine on every
 * reference) keeps the K smallest distances of each sampled observation, and rank r of
 * the result is compared with the r-th of them. */
#include "kout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "knn_chunks.h"

#define DEG (M_PI / 180.0)

static void radians_of(const knn_points *p, int64_t i, double *lat, double *lon)
{
    knn_points_get(p, i, lat, lon);
    if (p->degrees) {
        *lat *= DEG;
        *lon *= DEG;
    }
}

static void worst(double e, int64_t i, double *max, int64_t *at)
{
    if (isnan(e))
        e = INFINITY;
    if (*at < 0 || e > *max) {
        *max = e;
        *at = i;
    }
}

cask_status knn_check_k(const knn_points *obs, const knn_points *ref, const int32_t *index,
                        const float *dist, int k, double scale, int64_t samples,
                        knn_check_report *out)
{
    const double floor_rad = 1e-12;
    int64_t m = ref->n, n = obs->n;
    double *rr = malloc((size_t)m * 2 * sizeof *rr);
    double *best = malloc((size_t)k * sizeof *best);
    *out = (knn_check_report){0};
    out->m = m;
    out->first_bad_index = out->worst_chosen = out->worst_reported = -1;
    if (!rr || !best) {
        free(rr);
        free(best);
        return CASK_ERR_NOMEM;
    }
    if (samples > n)
        samples = n;
    for (int64_t j = 0; j < m; j++)
        radians_of(ref, j, &rr[2 * j], &rr[2 * j + 1]);
    for (int64_t s = 0; s < samples; s++) {
        int64_t i = knn_check_row(n, samples, s);
        double la, lo;
        radians_of(obs, i, &la, &lo);
        for (int r = 0; r < k; r++)
            best[r] = INFINITY;
        for (int64_t j = 0; j < m; j++) { /* the k smallest, ascending */
            double d = knn_haversine(la, lo, rr[2 * j], rr[2 * j + 1]);
            if (!(d < best[k - 1]))
                continue;
            int p = k - 1;
            while (p > 0 && d < best[p - 1]) {
                best[p] = best[p - 1];
                p--;
            }
            best[p] = d;
        }
        out->checked++;
        for (int r = 0; r < k; r++) {
            int64_t got = index[i * k + r];
            int repeated = 0;
            for (int q = 0; q < r; q++)
                repeated |= index[i * k + q] == got;
            if (r >= m) { /* fewer references than k: nothing there */
                if (got != -1 && out->bad_index++ == 0)
                    out->first_bad_index = i;
                continue;
            }
            if (got < 0 || got >= m || repeated) {
                if (out->bad_index++ == 0)
                    out->first_bad_index = i;
                continue;
            }
            double den = fmax(best[r], floor_rad);
            double dchosen = knn_haversine(la, lo, rr[2 * got], rr[2 * got + 1]);
            if (dchosen != best[r])
                out->other_choice++;
            worst(fabs(dchosen - best[r]) / den, i, &out->max_err_chosen, &out->worst_chosen);
            worst(fabs((double)dist[i * k + r] / scale - best[r]) / den, i,
                  &out->max_err_reported, &out->worst_reported);
        }
    }
    free(rr);
    free(best);
    return CASK_OK;
}

cask_status knn_check_samples(const knn_points *obs, const knn_points *ref, const int32_t *index,
                              const float *dist, int k, double scale, int64_t samples,
                              knn_check_report *out)
{
    knn_points s;
    if (samples > obs->n)
        samples = obs->n;
    if (knn_points_alloc(samples, obs->f64, obs->degrees, NULL, &s))
        return CASK_ERR_NOMEM;
    size_t row = 2 * knn_elem_bytes(obs);
    for (int64_t i = 0; i < samples; i++)
        memcpy((char *)s.data + (size_t)i * row,
               (const char *)obs->data + (size_t)knn_check_row(obs->n, samples, i) * row, row);
    /* the sampled rows alone: sample i is row i of s, and the check's sample i too */
    cask_status st = k > 1 ? knn_check_k(&s, ref, index, dist, k, scale, samples, out)
                           : knn_check(&s, ref, index, dist, scale, samples, out);
    int64_t *rows[] = {&out->first_bad_index, &out->worst_chosen, &out->worst_reported};
    for (int r = 0; r < 3 && !st; r++)
        if (*rows[r] >= 0)
            *rows[r] = knn_check_row(obs->n, samples, *rows[r]);
    knn_points_free(&s);
    return st;
}
