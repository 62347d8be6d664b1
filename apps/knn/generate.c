/* generate.c: synthetic points uniform on the sphere for `cask-knn --generate`. Each
 * point is a pure function of (seed, stream, index): generation can be split into any
 * chunks, run by any threads in any order, and give the same bits. */
#include "generate.h"

#include <math.h>

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define GOLDEN 0x9e3779b97f4a7c15ull

uint64_t knn_rng_u64(uint64_t seed, uint64_t stream, uint64_t counter)
{
    uint64_t key = mix64(seed ^ mix64(stream * GOLDEN + 0x632be59bd9b4e019ull));
    return mix64(key + (counter + 1) * GOLDEN);
}

double knn_rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter)
{
    return (double)(knn_rng_u64(seed, stream, counter) >> 11) * 0x1.0p-53;
}

void knn_generate_points(uint64_t seed, uint64_t stream, int64_t first, int64_t n, int f64,
                         void *out)
{
    uint64_t key = mix64(seed ^ mix64(stream * GOLDEN + 0x632be59bd9b4e019ull));
    for (int64_t k = 0; k < n; k++) {
        uint64_t c = 2 * (uint64_t)(first + k);
        double u = (double)(mix64(key + (c + 1) * GOLDEN) >> 11) * 0x1.0p-53;
        double v = (double)(mix64(key + (c + 2) * GOLDEN) >> 11) * 0x1.0p-53;
        double lat = asin(2.0 * u - 1.0);
        double lon = 2.0 * M_PI * v - M_PI;
        if (f64) {
            ((double *)out)[2 * k] = lat;
            ((double *)out)[2 * k + 1] = lon;
        } else {
            ((float *)out)[2 * k] = (float)lat;
            ((float *)out)[2 * k + 1] = (float)lon;
        }
    }
}

/* Centre (unit vector) and spread (radians) of blob c of seed. */
static void blob(uint64_t seed, int64_t c, double v[3], double *sigma)
{
    double u = knn_rng_uniform(seed, KNN_STREAM_CENTRES, 3 * (uint64_t)c);
    double w = knn_rng_uniform(seed, KNN_STREAM_CENTRES, 3 * (uint64_t)c + 1);
    double s = knn_rng_uniform(seed, KNN_STREAM_CENTRES, 3 * (uint64_t)c + 2);
    double lat = asin(2.0 * u - 1.0), lon = 2.0 * M_PI * w - M_PI;
    v[0] = cos(lat) * cos(lon);
    v[1] = cos(lat) * sin(lon);
    v[2] = sin(lat);
    *sigma = (0.2 + 2.8 * s) * (M_PI / 180.0);
}

void knn_generate_clustered(uint64_t seed, uint64_t stream, int64_t first, int64_t n, int f64,
                            int64_t clusters, void *out)
{
    for (int64_t k = 0; k < n; k++) {
        uint64_t c4 = 4 * (uint64_t)(first + k);
        double pick = knn_rng_uniform(seed, stream, c4);
        int64_t c = (int64_t)((double)clusters * pick * pick);
        if (c >= clusters)
            c = clusters - 1;
        double v[3], sigma;
        blob(seed, c, v, &sigma);
        /* tangent basis e1, e2 at v */
        double a[3] = {fabs(v[0]) < 0.9 ? 1.0 : 0.0, fabs(v[0]) < 0.9 ? 0.0 : 1.0, 0.0};
        double e1[3] = {a[1] * v[2] - a[2] * v[1], a[2] * v[0] - a[0] * v[2],
                        a[0] * v[1] - a[1] * v[0]};
        double l1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
        for (int i = 0; i < 3; i++)
            e1[i] /= l1;
        double e2[3] = {v[1] * e1[2] - v[2] * e1[1], v[2] * e1[0] - v[0] * e1[2],
                        v[0] * e1[1] - v[1] * e1[0]};
        /* Box-Muller: two standard normals */
        double u1 = knn_rng_uniform(seed, stream, c4 + 1), u2 = knn_rng_uniform(seed, stream, c4 + 2);
        double rad = sqrt(-2.0 * log(1.0 - u1)), th = 2.0 * M_PI * u2;
        double g1 = rad * cos(th) * sigma, g2 = rad * sin(th) * sigma;
        double p[3], len = 0;
        for (int i = 0; i < 3; i++) {
            p[i] = v[i] + g1 * e1[i] + g2 * e2[i];
            len += p[i] * p[i];
        }
        len = sqrt(len);
        double lat = asin(fmax(-1.0, fmin(1.0, p[2] / len))), lon = atan2(p[1], p[0]);
        if (f64) {
            ((double *)out)[2 * k] = lat;
            ((double *)out)[2 * k + 1] = lon;
        } else {
            ((float *)out)[2 * k] = (float)lat;
            ((float *)out)[2 * k + 1] = (float)lon;
        }
    }
}
