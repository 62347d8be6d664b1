/* generate.h: synthetic points uniform on the sphere from a counter-based generator, so
 * point i is the same whatever the chunking, thread count or order of generation. */
#ifndef KNN_GENERATE_H
#define KNN_GENERATE_H

#include <stdint.h>

/* The streams of one seed: observations and references never share random numbers. */
enum { KNN_STREAM_OBS = 0, KNN_STREAM_REF = 1, KNN_STREAM_CENTRES = 2 };

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

/* Like knn_generate_points, but a mixture of `clusters` (> 0) Gaussian blobs on the
 * sphere, as populated places are: the blobs' centres are uniform on the sphere and
 * shared by both streams of a seed (observations fall where the references are); blob c
 * has angular standard deviation 0.2 to 3 degrees and weight decreasing with c (point i
 * picks blob floor(clusters * u^2)); a point is its blob's centre moved by a 2-D normal
 * offset in the tangent plane. Pure in (seed, stream, index, clusters). Thread safe. */
void knn_generate_clustered(uint64_t seed, uint64_t stream, int64_t first, int64_t n, int f64,
                            int64_t clusters, void *out);

#endif
