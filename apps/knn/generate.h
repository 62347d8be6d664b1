/* generate.h: synthetic points uniform on the sphere from a counter-based generator, so
 * point i is the same whatever the chunking, thread count or order of generation. */
#ifndef KNN_GENERATE_H
#define KNN_GENERATE_H

#include <stdint.h>

/* The streams of one seed: observations and references never share random numbers. */
enum { KNN_STREAM_OBS = 0, KNN_STREAM_REF = 1 };

/* 64 random bits for (seed, stream, counter): a splitmix64 finaliser applied to a key
 * derived from seed and stream plus the counter times the golden-ratio increment, i.e.
 * the counter-th output of a splitmix64 sequence per (seed, stream). Pure. */
uint64_t knn_rng_u64(uint64_t seed, uint64_t stream, uint64_t counter);

/* A double in [0, 1) from the 53 high bits of knn_rng_u64. */
double knn_rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter);

/* Writes points first .. first+n-1 of (seed, stream) into out (n x 2 interleaved
 * latitude, longitude, in radians, double if f64 else float): with u, v the uniform
 * numbers at counters 2i and 2i+1, lat = asin(2u - 1), lon = 2 pi v - pi. Thread safe. */
void knn_generate_points(uint64_t seed, uint64_t stream, int64_t first, int64_t n, int f64,
                         void *out);

#endif
