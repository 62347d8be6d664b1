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

int knn_auto_prune(const knn_points *obs, const knn_points *ref, int k, int64_t chunk,
                   double *fraction)
{
    *fraction = 1.0;
    if (ref->n < KNN_AUTO_MIN_REFS || obs->n < KNN_AUTO_MIN_OBS || chunk < 1)
        return 0;
    int64_t so = SAMPLE_OBS, sr = ref->n < SAMPLE_REF ? ref->n : SAMPLE_REF;
    double *ov = malloc((size_t)so * 3 * sizeof *ov), *rv = malloc((size_t)sr * 3 * sizeof *rv);
    double *d = malloc((size_t)(sr > so ? sr : so) * sizeof *d);
    double *dk = malloc((size_t)sr * sizeof *dk);
    if (!ov || !rv || !d || !dk) {
        free(ov), free(rv), free(d), free(dk);
        return 0;
    }
    for (int64_t i = 0; i < so; i++)
        unit_of(obs, knn_auto_sample_row(obs->n, i), ov + 3 * i);
    for (int64_t j = 0; j < sr; j++)
        unit_of(ref, j * (ref->n / sr), rv + 3 * j);
    double sum = 0;
    for (int64_t i = 0; i < so; i++) {
        for (int64_t j = 0; j < sr; j++)
            d[j] = angle(ov + 3 * i, rv + 3 * j);
        double r_k = reach(d, sr, ref->n, (double)k);
        double r_t = reach(d, sr, ref->n, 128.0);
        int64_t c = 0;
        for (int64_t j = 0; j < so; j++)
            if (j != i)
                dk[c++] = angle(ov + 3 * i, ov + 3 * j);
        double r_o = reach(dk, c, obs->n, 64.0 * (double)obs->n / (double)chunk);
        for (int64_t j = 0; j < sr; j++)
            d[j] = angle(ov + 3 * i, rv + 3 * j);
        double lim = r_k + 2.0 * (r_t + r_o);
        int64_t in = 0;
        for (int64_t j = 0; j < sr; j++)
            in += d[j] <= lim;
        sum += (double)in / (double)sr;
    }
    free(ov), free(rv), free(d), free(dk);
    *fraction = sum / (double)so;
    return *fraction < (k > 1 ? KNN_AUTO_MAX_FRACTION_K : KNN_AUTO_MAX_FRACTION_K1);
}
