/* timing.h: the wall clock and the median that every benchmark reports. */
#ifndef CASK_BENCH_TIMING_H
#define CASK_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n-1] (sorts v in place); n > 0. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
