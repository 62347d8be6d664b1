/* kernels/array_cpu_vmath_avx2.c: the AVX2+FMA loops of the CPU vector math
 * (array_cpu_vmath.c), built with -mavx2 -mfma into a library of their own and called
 * only where the CPU has both. Each loop runs SLEEF's 8-wide (float) or 4-wide (double)
 * functions over whole vectors; the tail is padded into one more vector, so an element's
 * result depends on its value alone, never on where a tile or chunk boundary falls. */
#include <immintrin.h>
#include <string.h>
#include <sleef.h>
#include "kernels/array_vmath.h"

/* sin and cos: SLEEF picks its argument reduction per vector (a cheap one when every
 * lane is small, else one for larger arguments), so a lane's bits would depend on its
 * neighbours. Lanes above AK_VM_TRIG_SMALL are computed apart, each in a vector of its
 * own value, and the others with those lanes zeroed: every element then takes the path
 * its own value chooses. */
static inline __m256 trigf8(int cosine, __m256 v)
{
    return cosine ? Sleef_cosf8_u10avx2(v) : Sleef_sinf8_u10avx2(v);
}

static inline __m256d trigd4(int cosine, __m256d v)
{
    return cosine ? Sleef_cosd4_u10avx2(v) : Sleef_sind4_u10avx2(v);
}

static __m256 trig_f32(int cosine, __m256 v)
{
    __m256 big = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v),
                               _mm256_set1_ps(AK_VM_TRIG_SMALL_F32), _CMP_NLE_UQ);
    int m = _mm256_movemask_ps(big);
    if (!m) return trigf8(cosine, v);
    float in[8], out[8];
    _mm256_storeu_ps(in, v);
    _mm256_storeu_ps(out, trigf8(cosine, _mm256_andnot_ps(big, v)));
    for (int l = 0; l < 8; l++)
        if (m >> l & 1) out[l] = _mm256_cvtss_f32(trigf8(cosine, _mm256_set1_ps(in[l])));
    return _mm256_loadu_ps(out);
}

static __m256d trig_f64(int cosine, __m256d v)
{
    __m256d big = _mm256_cmp_pd(_mm256_andnot_pd(_mm256_set1_pd(-0.0), v),
                                _mm256_set1_pd(AK_VM_TRIG_SMALL_F64), _CMP_NLE_UQ);
    int m = _mm256_movemask_pd(big);
    if (!m) return trigd4(cosine, v);
    double in[4], out[4];
    _mm256_storeu_pd(in, v);
    _mm256_storeu_pd(out, trigd4(cosine, _mm256_andnot_pd(big, v)));
    for (int l = 0; l < 4; l++)
        if (m >> l & 1) out[l] = _mm256_cvtsd_f64(trigd4(cosine, _mm256_set1_pd(in[l])));
    return _mm256_loadu_pd(out);
}

void ak_vmath_f32_avx2(int f, const float *x, float *y, int64_t n)
{
    switch (f) {
    case AK_VM_EXP: AK_VM_LOOP(float, 8, _mm256_loadu_ps, _mm256_storeu_ps, __m256, Sleef_expf8_u10avx2(v)); break;
    case AK_VM_LOG: AK_VM_LOOP(float, 8, _mm256_loadu_ps, _mm256_storeu_ps, __m256, Sleef_logf8_u10avx2(v)); break;
    case AK_VM_SIN: AK_VM_LOOP(float, 8, _mm256_loadu_ps, _mm256_storeu_ps, __m256, trig_f32(0, v)); break;
    default: AK_VM_LOOP(float, 8, _mm256_loadu_ps, _mm256_storeu_ps, __m256, trig_f32(1, v)); break;
    }
}

void ak_vmath_f64_avx2(int f, const double *x, double *y, int64_t n)
{
    switch (f) {
    case AK_VM_EXP: AK_VM_LOOP(double, 4, _mm256_loadu_pd, _mm256_storeu_pd, __m256d, Sleef_expd4_u10avx2(v)); break;
    case AK_VM_LOG: AK_VM_LOOP(double, 4, _mm256_loadu_pd, _mm256_storeu_pd, __m256d, Sleef_logd4_u10avx2(v)); break;
    case AK_VM_SIN: AK_VM_LOOP(double, 4, _mm256_loadu_pd, _mm256_storeu_pd, __m256d, trig_f64(0, v)); break;
    default: AK_VM_LOOP(double, 4, _mm256_loadu_pd, _mm256_storeu_pd, __m256d, trig_f64(1, v)); break;
    }
}


void ak_vpow_f32_avx2(const float *x, const float *e, float *z, int64_t n)
{
    AK_VP_LOOP(float, 8, _mm256_loadu_ps, _mm256_storeu_ps, Sleef_powf8_u10avx2);
}

void ak_vpow_f64_avx2(const double *x, const double *e, double *z, int64_t n)
{
    AK_VP_LOOP(double, 4, _mm256_loadu_pd, _mm256_storeu_pd, Sleef_powd4_u10avx2);
}
