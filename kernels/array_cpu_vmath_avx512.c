/* kernels/array_cpu_vmath_avx512.c: the AVX-512 loops of the CPU vector math
 * (array_cpu_vmath.c), built with -mavx512f -mavx512dq into a library of their own and
 * called only where the CPU has both. SLEEF's 16-wide (float) or 8-wide (double) u10
 * functions, the same error bounds as the AVX2 loops; the tail is padded into one more
 * vector, so an element's result depends on its value alone, never on where a tile or
 * chunk boundary falls. */
#include <immintrin.h>
#include <string.h>
#include <sleef.h>
#include "kernels/array_vmath.h"

/* sin and cos lane by lane independent: see trig_f32 in array_cpu_vmath_avx2.c */
static inline __m512 trigf16(int cosine, __m512 v)
{
    return cosine ? Sleef_cosf16_u10avx512f(v) : Sleef_sinf16_u10avx512f(v);
}

static inline __m512d trigd8(int cosine, __m512d v)
{
    return cosine ? Sleef_cosd8_u10avx512f(v) : Sleef_sind8_u10avx512f(v);
}

static __m512 trig_f32(int cosine, __m512 v)
{
    __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(AK_VM_TRIG_SMALL_F32),
                                       _CMP_NLE_UQ);
    if (!big) return trigf16(cosine, v);
    __m512 r = trigf16(cosine, _mm512_maskz_mov_ps((__mmask16)~big, v));
    float in[16], out[16];
    _mm512_storeu_ps(in, v);
    _mm512_storeu_ps(out, r);
    for (int l = 0; l < 16; l++)
        if (big >> l & 1) out[l] = _mm512_cvtss_f32(trigf16(cosine, _mm512_set1_ps(in[l])));
    return _mm512_loadu_ps(out);
}

static __m512d trig_f64(int cosine, __m512d v)
{
    __mmask8 big = _mm512_cmp_pd_mask(_mm512_abs_pd(v), _mm512_set1_pd(AK_VM_TRIG_SMALL_F64),
                                      _CMP_NLE_UQ);
    if (!big) return trigd8(cosine, v);
    __m512d r = trigd8(cosine, _mm512_maskz_mov_pd((__mmask8)~big, v));
    double in[8], out[8];
    _mm512_storeu_pd(in, v);
    _mm512_storeu_pd(out, r);
    for (int l = 0; l < 8; l++)
        if (big >> l & 1) out[l] = _mm512_cvtsd_f64(trigd8(cosine, _mm512_set1_pd(in[l])));
    return _mm512_loadu_pd(out);
}

void ak_vmath_f32_avx512(int f, const float *x, float *y, int64_t n)
{
    switch (f) {
    case AK_VM_EXP: AK_VM_LOOP(float, 16, _mm512_loadu_ps, _mm512_storeu_ps, __m512, Sleef_expf16_u10avx512f(v)); break;
    case AK_VM_LOG: AK_VM_LOOP(float, 16, _mm512_loadu_ps, _mm512_storeu_ps, __m512, Sleef_logf16_u10avx512f(v)); break;
    case AK_VM_SIN: AK_VM_LOOP(float, 16, _mm512_loadu_ps, _mm512_storeu_ps, __m512, trig_f32(0, v)); break;
    default: AK_VM_LOOP(float, 16, _mm512_loadu_ps, _mm512_storeu_ps, __m512, trig_f32(1, v)); break;
    }
}

void ak_vmath_f64_avx512(int f, const double *x, double *y, int64_t n)
{
    switch (f) {
    case AK_VM_EXP: AK_VM_LOOP(double, 8, _mm512_loadu_pd, _mm512_storeu_pd, __m512d, Sleef_expd8_u10avx512f(v)); break;
    case AK_VM_LOG: AK_VM_LOOP(double, 8, _mm512_loadu_pd, _mm512_storeu_pd, __m512d, Sleef_logd8_u10avx512f(v)); break;
    case AK_VM_SIN: AK_VM_LOOP(double, 8, _mm512_loadu_pd, _mm512_storeu_pd, __m512d, trig_f64(0, v)); break;
    default: AK_VM_LOOP(double, 8, _mm512_loadu_pd, _mm512_storeu_pd, __m512d, trig_f64(1, v)); break;
    }
}

void ak_vpow_f32_avx512(const float *x, const float *e, float *z, int64_t n)
{
    AK_VP_LOOP(float, 16, _mm512_loadu_ps, _mm512_storeu_ps, Sleef_powf16_u10avx512f);
}

void ak_vpow_f64_avx512(const double *x, const double *e, double *z, int64_t n)
{
    AK_VP_LOOP(double, 8, _mm512_loadu_pd, _mm512_storeu_pd, Sleef_powd8_u10avx512f);
}
