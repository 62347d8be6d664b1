/* kernels/array_cpu_vmath.c: vector math of the CPU programs (see array_vmath.h).
 *
 * With SLEEF on x86-64: the AVX-512 loops (array_cpu_vmath_avx512.c) where the CPU has
 * AVX-512 F and DQ, the AVX2+FMA loops (array_cpu_vmath_avx2.c) where it has those, SSE2
 * loops (every x86-64) otherwise; a tail shorter than a vector is padded into
 * one, so the same value gives the same bits wherever it sits. Error bounds (SLEEF's
 * documentation, u10 functions): 1.0 ULP for exp, log, pow; 1.0 ULP for sin and cos with
 * |x| <= 1e28 (float) or 1e299 (double), beyond that some value in [-1, 1]. Without SLEEF
 * (or off x86-64): the C library's functions, one element at a time (glibc: exp, log,
 * sin, cos within 1 ULP for float, 1 ULP for double except pow; see docs/arrays.md). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-math-errno")
#endif
#include <math.h>
#include <string.h>
#include "kernels/array_vmath.h"

#if defined(CASK_HAVE_SLEEF) && defined(__x86_64__)
#define AK_VM_SLEEF 1
#include <emmintrin.h>
#include <sleef.h>

/* 2: AVX-512 (F and DQ), 1: AVX2 and FMA, 0: SSE2 */
static int vm_level(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return 2;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* sin and cos lane by lane independent: see trig_f32 in array_cpu_vmath_avx2.c */
static inline __m128 trigf4(int cosine, __m128 v)
{
    return cosine ? Sleef_cosf4_u10sse2(v) : Sleef_sinf4_u10sse2(v);
}

static inline __m128d trigd2(int cosine, __m128d v)
{
    return cosine ? Sleef_cosd2_u10sse2(v) : Sleef_sind2_u10sse2(v);
}

static __m128 trig_f32(int cosine, __m128 v)
{
    __m128 big = _mm_cmpnle_ps(_mm_andnot_ps(_mm_set1_ps(-0.0f), v),
                               _mm_set1_ps(AK_VM_TRIG_SMALL_F32));
    int m = _mm_movemask_ps(big);
    if (!m) return trigf4(cosine, v);
    float in[4], out[4];
    _mm_storeu_ps(in, v);
    _mm_storeu_ps(out, trigf4(cosine, _mm_andnot_ps(big, v)));
    for (int l = 0; l < 4; l++)
        if (m >> l & 1) out[l] = _mm_cvtss_f32(trigf4(cosine, _mm_set1_ps(in[l])));
    return _mm_loadu_ps(out);
}

static __m128d trig_f64(int cosine, __m128d v)
{
    __m128d big = _mm_cmpnle_pd(_mm_andnot_pd(_mm_set1_pd(-0.0), v),
                                _mm_set1_pd(AK_VM_TRIG_SMALL_F64));
    int m = _mm_movemask_pd(big);
    if (!m) return trigd2(cosine, v);
    double in[2], out[2];
    _mm_storeu_pd(in, v);
    _mm_storeu_pd(out, trigd2(cosine, _mm_andnot_pd(big, v)));
    for (int l = 0; l < 2; l++)
        if (m >> l & 1) out[l] = _mm_cvtsd_f64(trigd2(cosine, _mm_set1_pd(in[l])));
    return _mm_loadu_pd(out);
}

#endif

void ak_vmath_f32(int f, const float *x, float *y, int64_t n)
{
#ifdef AK_VM_SLEEF
    int lv = vm_level();
    if (lv) {
        if (lv == 2) ak_vmath_f32_avx512(f, x, y, n);
        else ak_vmath_f32_avx2(f, x, y, n);
        return;
    }
    switch (f) {
    case AK_VM_EXP: AK_VM_LOOP(float, 4, _mm_loadu_ps, _mm_storeu_ps, __m128, Sleef_expf4_u10sse2(v)); break;
    case AK_VM_LOG: AK_VM_LOOP(float, 4, _mm_loadu_ps, _mm_storeu_ps, __m128, Sleef_logf4_u10sse2(v)); break;
    case AK_VM_SIN: AK_VM_LOOP(float, 4, _mm_loadu_ps, _mm_storeu_ps, __m128, trig_f32(0, v)); break;
    default: AK_VM_LOOP(float, 4, _mm_loadu_ps, _mm_storeu_ps, __m128, trig_f32(1, v)); break;
    }
#else
    for (int64_t i = 0; i < n; i++)
        y[i] = f == AK_VM_EXP ? expf(x[i]) : f == AK_VM_LOG ? logf(x[i])
             : f == AK_VM_SIN ? sinf(x[i]) : cosf(x[i]);
#endif
}

void ak_vmath_f64(int f, const double *x, double *y, int64_t n)
{
#ifdef AK_VM_SLEEF
    int lv = vm_level();
    if (lv) {
        if (lv == 2) ak_vmath_f64_avx512(f, x, y, n);
        else ak_vmath_f64_avx2(f, x, y, n);
        return;
    }
    switch (f) {
    case AK_VM_EXP: AK_VM_LOOP(double, 2, _mm_loadu_pd, _mm_storeu_pd, __m128d, Sleef_expd2_u10sse2(v)); break;
    case AK_VM_LOG: AK_VM_LOOP(double, 2, _mm_loadu_pd, _mm_storeu_pd, __m128d, Sleef_logd2_u10sse2(v)); break;
    case AK_VM_SIN: AK_VM_LOOP(double, 2, _mm_loadu_pd, _mm_storeu_pd, __m128d, trig_f64(0, v)); break;
    default: AK_VM_LOOP(double, 2, _mm_loadu_pd, _mm_storeu_pd, __m128d, trig_f64(1, v)); break;
    }
#else
    for (int64_t i = 0; i < n; i++)
        y[i] = f == AK_VM_EXP ? exp(x[i]) : f == AK_VM_LOG ? log(x[i])
             : f == AK_VM_SIN ? sin(x[i]) : cos(x[i]);
#endif
}

void ak_vpow_f32(const float *x, const float *e, float *z, int64_t n)
{
#ifdef AK_VM_SLEEF
    int lv = vm_level();
    if (lv) {
        if (lv == 2) ak_vpow_f32_avx512(x, e, z, n);
        else ak_vpow_f32_avx2(x, e, z, n);
        return;
    }
    AK_VP_LOOP(float, 4, _mm_loadu_ps, _mm_storeu_ps, Sleef_powf4_u10sse2);
#else
    for (int64_t i = 0; i < n; i++) z[i] = powf(x[i], e[i]);
#endif
}

void ak_vpow_f64(const double *x, const double *e, double *z, int64_t n)
{
#ifdef AK_VM_SLEEF
    int lv = vm_level();
    if (lv) {
        if (lv == 2) ak_vpow_f64_avx512(x, e, z, n);
        else ak_vpow_f64_avx2(x, e, z, n);
        return;
    }
    AK_VP_LOOP(double, 2, _mm_loadu_pd, _mm_storeu_pd, Sleef_powd2_u10sse2);
#else
    for (int64_t i = 0; i < n; i++) z[i] = pow(x[i], e[i]);
#endif
}

const char *ak_vmath_name(void)
{
#ifdef AK_VM_SLEEF
    static const char *const name[3] = {"SLEEF SSE2", "SLEEF AVX2", "SLEEF AVX-512"};
    return name[vm_level()];
#else
    return "libm (scalar)";
#endif
}
