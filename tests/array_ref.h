/* tests/array_ref.h: straightforward reference loops for the array tests
 * (test_array.c, test_array_gpu.c): element access by dtype, test data, random shapes
 * and chunkings, and the documented summation tree written out literally. */
#ifndef CASK_TESTS_ARRAY_REF_H
#define CASK_TESTS_ARRAY_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"

static inline uint64_t ref_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A number in [lo, hi). */
static inline int64_t ref_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(ref_splitmix(s) % (uint64_t)(hi - lo));
}

static inline double ref_get(const void *p, cask_dtype dt, int64_t i)
{
    switch (dt) {
    case CASK_FLOAT32: return ((const float *)p)[i];
    case CASK_FLOAT64: return ((const double *)p)[i];
    case CASK_INT32: return ((const int32_t *)p)[i];
    case CASK_UINT32: return ((const uint32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

static inline int64_t ref_geti(const void *p, cask_dtype dt, int64_t i)
{
    switch (dt) {
    case CASK_INT32: return ((const int32_t *)p)[i];
    case CASK_UINT32: return ((const uint32_t *)p)[i];
    case CASK_INT64: return ((const int64_t *)p)[i];
    default: return (int64_t)ref_get(p, dt, i);
    }
}

static inline void ref_set(void *p, cask_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case CASK_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CASK_FLOAT64: ((double *)p)[i] = v; break;
    case CASK_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CASK_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

/* Error of got against ref, a value computed in a wider type (double for float32
 * results, long double for float64), in units in the last place of dt at ref. NaN
 * against NaN and equal infinities are 0; a reference past dt's range rounds to
 * infinity first. */
static inline double ref_ulps(long double got, long double ref, cask_dtype dt)
{
    int p = dt == CASK_FLOAT32 ? 24 : 53, emin = dt == CASK_FLOAT32 ? -125 : -1021;
    long double max = dt == CASK_FLOAT32 ? 3.40282346638528859812e+38L : 1.79769313486231570815e+308L;
    if (isnan(got) || isnan(ref)) return isnan(got) && isnan(ref) ? 0 : INFINITY;
    if (fabsl(ref) > max && !isinf(ref)) ref = ref > 0 ? INFINITY : -INFINITY;
    if (isinf(got) || isinf(ref)) return got == ref ? 0 : INFINITY;
    int e;
    frexpl(ref, &e);
    if (e < emin) e = emin;
    return (double)(fabsl(got - ref) / ldexpl(1.0L, e - p));
}

/* n values: floats in [-4, 4) (a few exact zeros), integers in [-50, 50) (uint32 [0, 100)). */
static inline void *ref_data(cask_dtype dt, int64_t n, uint64_t seed)
{
    void *p = malloc((size_t)n * cask_dtype_size(dt) + 8);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = ref_splitmix(&s);
        double v;
        if (dt == CASK_FLOAT32 || dt == CASK_FLOAT64)
            v = (r % 17 == 0) ? 0.0 : ((double)(r >> 11) / 9007199254740992.0) * 8.0 - 4.0;
        else if (dt == CASK_UINT32)
            v = (double)(r % 100);
        else
            v = (double)(int64_t)(r % 100) - 50.0;
        ref_set(p, dt, i, v);
    }
    return p;
}

/* A random shape of ndim axes (sizes 1..maxsize) and a chunking with ragged ends. */
static inline void ref_shape(uint64_t *s, int ndim, int64_t maxsize, int64_t *shape,
                             int64_t *chunks)
{
    for (int k = 0; k < ndim; k++) {
        shape[k] = ref_range(s, 1, maxsize + 1);
        chunks[k] = ref_range(s, 1, shape[k] + 1);
    }
}

static inline int64_t ref_size(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    return n;
}

/* The documented float sum: the canonical pairwise tree over aligned power-of-two
 * ranges of the index, right-folded over the cover of [0, n). Written recursively. */
static inline double ref_node(const double *x, int64_t p, int L)
{
    if (L == 0) return x[p];
    int64_t h = (int64_t)1 << (L - 1);
    return ref_node(x, p, L - 1) + ref_node(x, p + h, L - 1);
}

static inline double ref_tree_sum(const double *x, int64_t n)
{
    int64_t pos[64];
    int lvl[64], k = 0;
    for (int64_t p = 0; p < n; k++) {
        int L = 0;
        while (((p >> L) & 1) == 0 && ((int64_t)2 << L) <= n - p) L++;
        pos[k] = p;
        lvl[k] = L;
        p += (int64_t)1 << L;
    }
    double v = ref_node(x, pos[k - 1], lvl[k - 1]);
    for (int i = k - 2; i >= 0; i--) v = ref_node(x, pos[i], lvl[i]) + v;
    return v;
}

#endif
