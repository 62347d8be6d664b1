/* tests/test_knn_io_generate.c: cask-knn's synthetic points (apps/knn), linked without
 * the runtime: the same points however they are cut into chunks, distinct seeds and
 * streams, float points rounded from the double ones, uniform on the sphere, a pure
 * random function. Each test states one behaviour. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"

Test(knn_generate, points_do_not_depend_on_chunking)
{
    enum { N = 1000 };
    static double whole[2 * N], parts[2 * N];
    knn_generate_points(42, KNN_STREAM_OBS, 0, N, 1, whole);
    for (int64_t first = 0; first < N; first += 7)
        knn_generate_points(42, KNN_STREAM_OBS, first, first + 7 <= N ? 7 : N - first, 1,
                            parts + 2 * first);
    cr_assert(memcmp(whole, parts, sizeof whole) == 0);
}

Test(knn_generate, seeds_and_streams_differ)
{
    double a[2], b[2], c[2];
    knn_generate_points(1, KNN_STREAM_OBS, 5, 1, 1, a);
    knn_generate_points(2, KNN_STREAM_OBS, 5, 1, 1, b);
    knn_generate_points(1, KNN_STREAM_REF, 5, 1, 1, c);
    cr_assert(a[0] != b[0] && a[0] != c[0] && b[0] != c[0]);
}

Test(knn_generate, float_points_round_the_double_ones)
{
    double d[20];
    float f[20];
    knn_generate_points(7, KNN_STREAM_REF, 100, 10, 1, d);
    knn_generate_points(7, KNN_STREAM_REF, 100, 10, 0, f);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(f[i], (float)d[i]);
}

Test(knn_generate, points_are_uniform_on_the_sphere)
{
    enum { N = 200000 };
    double *p = malloc(2 * N * sizeof *p);
    knn_generate_points(3, KNN_STREAM_OBS, 0, N, 1, p);
    double sz = 0, sz2 = 0, east = 0, sx = 0;
    for (int i = 0; i < N; i++) {
        double lat = p[2 * i], lon = p[2 * i + 1];
        cr_assert(lat >= -M_PI_2 && lat <= M_PI_2 && lon >= -M_PI && lon < M_PI);
        double z = sin(lat);
        sz += z;
        sz2 += z * z;
        sx += cos(lat) * cos(lon);
        east += lon >= 0;
    }
    /* z = sin(lat) uniform on [-1, 1]: mean 0, E[z^2] = 1/3; lon uniform. 5 sigma. */
    double sd = 1 / sqrt((double)N);
    cr_assert(fabs(sz / N) < 5 * sd * 0.58, "mean z %g", sz / N);
    cr_assert(fabs(sz2 / N - 1.0 / 3) < 5 * sd * 0.3, "mean z^2 %g", sz2 / N);
    cr_assert(fabs(sx / N) < 5 * sd * 0.58, "mean x %g", sx / N);
    cr_assert(fabs(east / N - 0.5) < 5 * sd * 0.5, "east fraction %g", east / N);
    free(p);
}

Test(knn_generate, rng_is_a_pure_function)
{
    cr_assert_eq(knn_rng_u64(9, 1, 12345), knn_rng_u64(9, 1, 12345));
    cr_assert_neq(knn_rng_u64(9, 1, 12345), knn_rng_u64(9, 1, 12346));
    double u = knn_rng_uniform(9, 0, 0);
    cr_assert(u >= 0 && u < 1);
}
