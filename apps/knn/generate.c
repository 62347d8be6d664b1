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
