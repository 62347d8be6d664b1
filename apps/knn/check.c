/* check.c: the float64 brute force behind `cask-knn --check`. It scans references by
 * squared chord between unit vectors (differences first, so small distances keep their
 * precision), then settles the winner, and the near-ties with it, by the haversine
 * formula, and measures the result's error against that. */
#include "check.h"

#include <math.h>
#include <stdlib.h>

#define DEG (M_PI / 180.0)

double knn_haversine(double lat1, double lon1, double lat2, double lon2)
{
    double sl = sin(0.5 * (lat2 - lat1)), so = sin(0.5 * (lon2 - lon1));
    double a = sl * sl + cos(lat1) * cos(lat2) * so * so;
    return 2.0 * asin(fmin(1.0, sqrt(a)));
}

static void radians_of(const knn_points *p, int64_t i, double *lat, double *lon)
{
    knn_points_get(p, i, lat, lon);
    if (p->degrees) {
        *lat *= DEG;
        *lon *= DEG;
    }
}

cask_status knn_check(const knn_points *obs, const knn_points *ref, const int32_t *index,
                      const float *dist, double scale, int64_t k, knn_check_report *out)
{
    const double floor_rad = 1e-12;
    int64_t m = ref->n, n = obs->n;
    double *u = malloc((size_t)m * 3 * sizeof *u);
    double *rr = malloc((size_t)m * 2 * sizeof *rr);

    *out = (knn_check_report){0};
    out->m = m;
    out->first_bad_index = out->worst_chosen = out->worst_reported = -1;
    if (k > n)
        k = n;
    if (!u || !rr) {
        free(u);
        free(rr);
        return CASK_ERR_NOMEM;
    }
    for (int64_t j = 0; j < m; j++) {
        double la, lo;
        radians_of(ref, j, &la, &lo);
        rr[2 * j] = la;
        rr[2 * j + 1] = lo;
        u[3 * j] = cos(la) * cos(lo);
        u[3 * j + 1] = cos(la) * sin(lo);
        u[3 * j + 2] = sin(la);
    }
    for (int64_t s = 0; s < k; s++) {
        int64_t i = knn_check_row(n, k, s);
        double la, lo;
        radians_of(obs, i, &la, &lo);
        double x = cos(la) * cos(lo), y = cos(la) * sin(lo), z = sin(la);
        double best = INFINITY;
        for (int64_t j = 0; j < m; j++) {
            double dx = x - u[3 * j], dy = y - u[3 * j + 1], dz = z - u[3 * j + 2];
            double c2 = dx * dx + dy * dy + dz * dz;
            if (c2 < best)
                best = c2;
        }
        /* The haversine decides among all within rounding of the best chord. */
        double dbest = INFINITY;
        int64_t jbest = -1;
        double lim = best * (1 + 1e-9) + 1e-300;
        for (int64_t j = 0; j < m; j++) {
            double dx = x - u[3 * j], dy = y - u[3 * j + 1], dz = z - u[3 * j + 2];
            if (dx * dx + dy * dy + dz * dz <= lim) {
                double d = knn_haversine(la, lo, rr[2 * j], rr[2 * j + 1]);
                if (d < dbest) {
                    dbest = d;
                    jbest = j;
                }
            }
        }
        out->checked++;
        int64_t got = index[i];
        if (got < 0 || got >= m) {
            if (out->bad_index++ == 0)
                out->first_bad_index = i;
            continue;
        }
        if (got != jbest)
            out->other_choice++;
        double den = fmax(dbest, floor_rad);
        double dchosen = knn_haversine(la, lo, rr[2 * got], rr[2 * got + 1]);
        double ec = fabs(dchosen - dbest) / den;
        double er = fabs((double)dist[i] / scale - dbest) / den;
        if (isnan(er))
            er = INFINITY;
        if (out->worst_chosen < 0 || ec > out->max_err_chosen) {
            out->max_err_chosen = ec;
            out->worst_chosen = i;
        }
        if (out->worst_reported < 0 || er > out->max_err_reported) {
            out->max_err_reported = er;
            out->worst_reported = i;
        }
    }
    free(u);
    free(rr);
    return CASK_OK;
}

void knn_check_print(FILE *f, const char *prog, const knn_check_report *r)
{
    int ok = r->bad_index == 0 && r->max_err_chosen <= KNN_CHECK_TOL_CHOSEN &&
             r->max_err_reported <= KNN_CHECK_TOL_REPORTED;
    fprintf(f, "%s: check: %lld observations x %lld references against a float64 brute "
               "force: %s\n", prog, (long long)r->checked, (long long)r->m,
            ok ? "ok" : "FAILED");
    fprintf(f, "%s: check: max relative error of the chosen reference's distance %.3g "
               "(limit %g, obs %lld), of the reported distance %.3g (limit %g, obs %lld)\n",
            prog, r->max_err_chosen, KNN_CHECK_TOL_CHOSEN, (long long)r->worst_chosen,
            r->max_err_reported, KNN_CHECK_TOL_REPORTED, (long long)r->worst_reported);
    if (r->other_choice)
        fprintf(f, "%s: check: %lld chose another reference than the brute force "
                   "(equal or nearly equal distances)\n", prog, (long long)r->other_choice);
    if (r->bad_index)
        fprintf(f, "%s: check: %lld reference indices out of range, the first at obs %lld\n",
                prog, (long long)r->bad_index, (long long)r->first_bad_index);
}
