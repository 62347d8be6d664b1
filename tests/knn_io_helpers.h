/* tests/knn_io_helpers.h: what the CSV and .npy reader tests of cask-knn's IO layer
 * share: the read options for plain degrees, and a check of one point's exact values. */
#ifndef CASK_TEST_KNN_IO_HELPERS_H
#define CASK_TEST_KNN_IO_HELPERS_H

#include <criterion/criterion.h>
#include <stdint.h>

#include "points.h"

static const knn_read_opts DEG = {NULL, NULL, 1, 0};

static inline void expect_point(const knn_points *p, int64_t i, double lat, double lon)
{
    double a, b;
    knn_points_get(p, i, &a, &b);
    cr_assert(a == lat && b == lon, "point %lld is (%.17g, %.17g), want (%.17g, %.17g)",
              (long long)i, a, b, lat, lon);
}

#endif
