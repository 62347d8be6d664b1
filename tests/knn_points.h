/* tests/knn_points.h: random points for the knn tests: a splitmix64 stream whose state
 * (knn_rng) each test sets for a set of its own, and (lat, lon) float degrees uniform on
 * the sphere. Each test file that includes it has its own stream. */
#ifndef CASK_TEST_KNN_POINTS_H
#define CASK_TEST_KNN_POINTS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t knn_rng = 1;
static double urand(void)
{
    uint64_t z = (knn_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return ((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0);
}

/* n random (lat, lon) in degrees, uniform on the sphere, as float. */
static float *random_points(int64_t n)
{
    float *p = malloc((size_t)n * 2 * sizeof(float));
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) {
        p[2 * i] = (float)(asin(2 * urand() - 1) * (180.0 / M_PI));
        p[2 * i + 1] = (float)(urand() * 360.0 - 180.0);
    }
    return p;
}

#endif
