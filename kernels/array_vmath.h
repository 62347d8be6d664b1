/* kernels/array_vmath.h: vector math of the CPU programs (array_cpu_vmath.c): exp, log,
 * sin, cos and pow over arrays, through SLEEF's 1.0-ULP functions (Sleef_*_u10) where the
 * build found SLEEF, the C library's scalar functions otherwise. Each element's result is
 * a function of its value alone (no dependence on position, tile or chunk). Internal. */
#ifndef CASK_KERNELS_ARRAY_VMATH_H
#define CASK_KERNELS_ARRAY_VMATH_H

#include <stdint.h>

enum { AK_VM_EXP = 0, AK_VM_LOG, AK_VM_SIN, AK_VM_COS };

/* sin/cos arguments up to these share a vector (SLEEF's cheapest reduction covers
 * |x| < 125 for float, < 15 for double); larger ones are computed one per vector. */
#define AK_VM_TRIG_SMALL_F32 100.0f
#define AK_VM_TRIG_SMALL_F64 10.0

/* y[i] = f(x[i]), i < n; y may be x. */
void ak_vmath_f32(int f, const float *x, float *y, int64_t n);
void ak_vmath_f64(int f, const double *x, double *y, int64_t n);
/* z[i] = pow(x[i], e[i]); z may be x or e. */
void ak_vpow_f32(const float *x, const float *e, float *z, int64_t n);
void ak_vpow_f64(const double *x, const double *e, double *z, int64_t n);
/* What computes them here: "SLEEF AVX-512", "SLEEF AVX2", "SLEEF SSE2" or "libm (scalar)". */
const char *ak_vmath_name(void);

/* The AVX2+FMA loops (array_cpu_vmath_avx2.c, x86-64 builds with SLEEF). */
void ak_vmath_f32_avx2(int f, const float *x, float *y, int64_t n);
void ak_vmath_f64_avx2(int f, const double *x, double *y, int64_t n);
void ak_vpow_f32_avx2(const float *x, const float *e, float *z, int64_t n);
void ak_vpow_f64_avx2(const double *x, const double *e, double *z, int64_t n);
/* The AVX-512 loops (array_cpu_vmath_avx512.c, x86-64 builds with SLEEF). */
void ak_vmath_f32_avx512(int f, const float *x, float *y, int64_t n);
void ak_vmath_f64_avx512(int f, const double *x, double *y, int64_t n);
void ak_vpow_f32_avx512(const float *x, const float *e, float *z, int64_t n);
void ak_vpow_f64_avx512(const double *x, const double *e, double *z, int64_t n);


/* y[i] = f(x[i]) for i < n, W lanes at a time (VT v = LD(x); ST(y, CALL) with CALL in
 * terms of v); the tail is padded into one more vector, so an element's result depends on
 * its value alone, never on where a tile or chunk ends. Used by the SSE2 and AVX2 loops
 * (array_cpu_vmath.c, array_cpu_vmath_avx2.c); needs <string.h>. */
#define AK_VM_LOOP(T, W, LD, ST, VT, CALL)                                                   \
    do {                                                                               \
        int64_t i = 0;                                                                 \
        for (; i + W <= n; i += W) {                                                   \
            VT v = LD(x + i);                                                          \
            ST(y + i, CALL);                                                           \
        }                                                                              \
        if (i < n) {                                                                   \
            T bx[W] = {0};                                                             \
            memcpy(bx, x + i, (size_t)(n - i) * sizeof(T));                            \
            VT v = LD(bx);                                                             \
            ST(bx, CALL);                                                              \
            memcpy(y + i, bx, (size_t)(n - i) * sizeof(T));                            \
        }                                                                              \
    } while (0)

/* z[i] = FN(x[i], e[i]) for i < n (pow: x the base), W lanes at a time, the tail padded
 * as in AK_VM_LOOP. */
#define AK_VP_LOOP(T, W, LD, ST, FN)                                                   \
    do {                                                                               \
        int64_t i = 0;                                                                 \
        for (; i + W <= n; i += W) ST(z + i, FN(LD(x + i), LD(e + i)));                \
        if (i < n) {                                                                   \
            T bx[W] = {0}, be[W] = {0};                                                \
            memcpy(bx, x + i, (size_t)(n - i) * sizeof(T));                            \
            memcpy(be, e + i, (size_t)(n - i) * sizeof(T));                            \
            ST(bx, FN(LD(bx), LD(be)));                                                \
            memcpy(z + i, bx, (size_t)(n - i) * sizeof(T));                            \
        }                                                                              \
    } while (0)

#endif
