/* auto_method.c: the estimate behind `--method auto` (auto_method.h). */
#include "auto_method.h"

#include <math.h>
#include <stdlib.h>

#define SAMPLE_OBS KNN_AUTO_SAMPLE_OBS
#define SAMPLE_REF 2048

static void unit_of(const knn_points *p, int64_t i, double v[3])
{
    double lat, lon;
    knn_points_get(p, i, &lat, &lon);
    if (p->degrees) {
        lat *= M_PI / 180.0;
        lon *= M_PI / 180.0;
    }
    v[0] = cos(lat) * cos(lon);
    v[1] = cos(lat) * sin(lon);
    v[2] = sin(lat);
}

/* The r-th smallest (0-based) of a[0..n-1], reordering a (quickselect). */
static double select_nth(double *a, int64_t n, int64_t r)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = a[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (r <= j)
            hi = j;
        else if (r >= i)
            lo = i;
        else
            break;
    }
    return a[r];
}

static double angle(const double *a, const double *b)
{
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return 2.0 * asin(fmin(1.0, 0.5 * sqrt(dx * dx + dy * dy + dz * dz)));
}

/* The distance within which `want` of `total` points lie, from a sample of s of them
 * (distances d, reordered): the matching order statistic, or, when fewer than one
 * sample point is expected, the nearest scaled down by area. */
static double reach(double *d, int64_t s, int64_t total, double want)
{
    double expect = want * (double)s / (double)total;
    if (expect >= (double)s)
        return M_PI;
    if (expect >= 1.0)
        return select_nth(d, s, (int64_t)ceil(expect) - 1);
    return select_nth(d, s, 0) * sqrt(expect);
}

int knn_auto_applies(int64_t n, int64_t m, int64_t chunk)
{
    return m >= KNN_AUTO_MIN_REFS && n >= KNN_AUTO_MIN_OBS && chunk >= 1;
}

int64_t knn_auto_ref_samples(int64_t m)
{
    return m < SAMPLE_REF ? m : SAMPLE_REF;
}

int knn_auto_begin(knn_auto_est *e, const knn_points *obs, int64_t ostep,
                   const knn_points *ref, int64_t rstep, int64_t n, int64_t m, int k,
                   int64_t chunk)
{
    e->so = SAMPLE_OBS;
    e->sr = knn_auto_ref_samples(m);
    e->n = n;
    e->m = m;
    e->k = k;
    e->chunk = chunk;
    e->ov = malloc((size_t)e->so * 3 * sizeof *e->ov);
    e->rv = malloc((size_t)e->sr * 3 * sizeof *e->rv);
    if (!e->ov || !e->rv) {
        knn_auto_end(e, NULL, NULL);
        return -1;
    }
    for (int64_t i = 0; i < e->so; i++)
        unit_of(obs, i * ostep, e->ov + 3 * i);
    for (int64_t j = 0; j < e->sr; j++)
        unit_of(ref, j * rstep, e->rv + 3 * j);
    return 0;
}

double knn_auto_one(const knn_auto_est *e, int64_t i, double *scratch)
{
    int64_t so = e->so, sr = e->sr;
    const double *ov = e->ov, *rv = e->rv;
    double *d = scratch, *dk = scratch + (sr > so ? sr : so);
    for (int64_t j = 0; j < sr; j++)
        d[j] = angle(ov + 3 * i, rv + 3 * j);
    double r_k = reach(d, sr, e->m, (double)e->k);
    double r_t = reach(d, sr, e->m, 128.0);
    int64_t c = 0;
    for (int64_t j = 0; j < so; j++)
        if (j != i)
            dk[c++] = angle(ov + 3 * i, ov + 3 * j);
    double r_o = reach(dk, c, e->n, 64.0 * (double)e->n / (double)e->chunk);
    /* reach reordered d, which still holds the same distances: the count is the same */
    double lim = r_k + 2.0 * (r_t + r_o);
    int64_t in = 0;
    for (int64_t j = 0; j < sr; j++)
        in += d[j] <= lim;
    return (double)in / (double)sr;
}

int knn_auto_end(knn_auto_est *e, const double *fractions, double *fraction)
{
    int prune = 0;
    if (fractions) {
        double sum = 0;
        for (int64_t i = 0; i < e->so; i++)     /* in order: the same sum every time */
            sum += fractions[i];
        *fraction = sum / (double)e->so;
        prune = *fraction < (e->k > 1 ? KNN_AUTO_MAX_FRACTION_K : KNN_AUTO_MAX_FRACTION_K1);
    }
    free(e->ov);
    free(e->rv);
    e->ov = e->rv = NULL;
    return prune;
}

int knn_auto_prune(const knn_points *obs, const knn_points *ref, int k, int64_t chunk,
                   double *fraction)
{
    return knn_auto_prune_at(obs, obs->n / SAMPLE_OBS, obs->n, ref, k, chunk, fraction);
}

int knn_auto_prune_at(const knn_points *obs, int64_t ostep, int64_t n, const knn_points *ref,
                      int k, int64_t chunk, double *fraction)
{
    *fraction = 1.0;
    if (!knn_auto_applies(n, ref->n, chunk))
        return 0;
    knn_auto_est e;
    if (knn_auto_begin(&e, obs, ostep, ref, ref->n / knn_auto_ref_samples(ref->n), n, ref->n,
                       k, chunk))
        return 0;
    double *scratch = malloc(knn_auto_scratch_count(&e) * sizeof *scratch);
    double *f = malloc((size_t)e.so * sizeof *f);
    if (!scratch || !f) {
        free(scratch), free(f);
        knn_auto_end(&e, NULL, NULL);
        return 0;
    }
    for (int64_t i = 0; i < e.so; i++)
        f[i] = knn_auto_one(&e, i, scratch);
    int prune = knn_auto_end(&e, f, fraction);
    free(scratch), free(f);
    return prune;
}
