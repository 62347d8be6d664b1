/* knn_clock.h: the monotonic clock in seconds that cask-knn's timings (and cask.knn's)
 * read. */
#ifndef KNN_CLOCK_H
#define KNN_CLOCK_H

#include <time.h>

static inline double knn_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
