/* kernels/array_cpu_loops.c: the typed tile loops of the CPU program interpreter
 * (array_cpu.c): unary and binary operations and casts over up to AK_TILE elements.
 *
 * Meson builds this file once per instruction set (kernels/meson.build: baseline x86-64,
 * AVX2, AVX-512; one build elsewhere) with AK_LOOPS_ISA naming the variant, and the
 * interpreter picks the widest the CPU runs (ak_loops_pick). Every operation here is
 * one IEEE operation per element (add, sub, mul, div, sqrt, min/max, neg, abs, casts,
 * integer arithmetic), built with -ffp-contract=off and -fno-math-errno: the vector
 * width changes the speed, never a bit of the result. exp, log, sin, cos and pow go to
 * the vector math (array_vmath.h), which picks its own variant. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#include <math.h>
#include <string.h>
#include "kernels/array_cpu_loops.h"
#include "kernels/array_vmath.h"

#ifndef AK_LOOPS_ISA
#define AK_LOOPS_ISA base
#endif
#define AK_LCAT2(a, b) a##_##b
#define AK_LCAT(a, b) AK_LCAT2(a, b)
#define AK_LNAME(f) AK_LCAT(f, AK_LOOPS_ISA)

/* exp, log, sin, cos, pow: the wide builds call SLEEF's loops of their own width, the
 * baseline build the vector math's dispatch (SSE2 SLEEF, or the C library) */
#if defined(CASK_HAVE_SLEEF) && defined(__x86_64__) && defined(AK_LOOPS_WIDE)
#define VM_F32 AK_LNAME(ak_vmath_f32)
#define VM_F64 AK_LNAME(ak_vmath_f64)
#define VP_F32 AK_LNAME(ak_vpow_f32)
#define VP_F64 AK_LNAME(ak_vpow_f64)
#else
#define VM_F32 ak_vmath_f32
#define VM_F64 ak_vmath_f64
#define VP_F32 ak_vpow_f32
#define VP_F64 ak_vpow_f64
#endif

/* ---- typed loops: dst = f(src [, operand]); dst may be src ---- */

#define UN_LOOP(T, EXPR)                                                               \
    do {                                                                               \
        const T *x_ = (const T *)src;                                                  \
        T *y_ = (T *)dst;                                                              \
        for (int64_t i = 0; i < cnt; i++) { T v = x_[i]; y_[i] = (EXPR); }             \
    } while (0)

#define I32UN(o, v) ((int32_t)ak_int_un(o, AK_I32, v))
#define U32UN(o, v) ((uint32_t)ak_int_un(o, AK_U32, v))
#define I64UN(o, v) (ak_int_un(o, AK_I64, v))

#define UN_INT(T, FN)                                                                  \
    switch (op) {                                                                      \
    case AK_OP_NEG: UN_LOOP(T, FN(AK_OP_NEG, v)); break;                               \
    case AK_OP_ABS: UN_LOOP(T, FN(AK_OP_ABS, v)); break;                               \
    case AK_OP_SQUARE: UN_LOOP(T, FN(AK_OP_SQUARE, v)); break;                         \
    default: UN_LOOP(T, v); break;                                                     \
    }

/* Floats: neg, abs, sqrt (correctly rounded: the compiler's vector sqrt) and square
 * inline; exp, log, sin, cos through the vector math (array_vmath.h). */
#define UN_FLOAT(T, ABS, SQRT, MUL, VM)                                                \
    switch (op) {                                                                      \
    case AK_OP_NEG: UN_LOOP(T, -v); break;                                             \
    case AK_OP_ABS: UN_LOOP(T, ABS(v)); break;                                         \
    case AK_OP_SQRT: UN_LOOP(T, SQRT(v)); break;                                       \
    case AK_OP_EXP: VM(AK_VM_EXP, (const T *)src, (T *)dst, cnt); break;               \
    case AK_OP_LOG: VM(AK_VM_LOG, (const T *)src, (T *)dst, cnt); break;               \
    case AK_OP_SIN: VM(AK_VM_SIN, (const T *)src, (T *)dst, cnt); break;               \
    case AK_OP_COS: VM(AK_VM_COS, (const T *)src, (T *)dst, cnt); break;               \
    default: UN_LOOP(T, MUL(v, v)); break;                                             \
    }

void AK_LNAME(ak_loop_unary)(int op, int dt, const void *src, void *dst, int64_t cnt)
{
    switch (dt) {
    case AK_F32: UN_FLOAT(float, fabsf, sqrtf, AK_FMUL, VM_F32); break;
    case AK_F64: UN_FLOAT(double, fabs, sqrt, AK_DMUL, VM_F64); break;
    case AK_I32: UN_INT(int32_t, I32UN); break;
    case AK_U32: UN_INT(uint32_t, U32UN); break;
    default: UN_INT(int64_t, I64UN); break;
    }
}

/* dst = f(src, b) or, with rev, f(b, src); b an array (B_AT(i) = b_[i]) or one value
 * (B_AT(i) = bv), so an immediate costs no fill. */
#define BIN_LOOP(T, EXPR, B_AT)                                                        \
    do {                                                                               \
        const T *x_ = (const T *)src;                                                  \
        T *y_ = (T *)dst;                                                              \
        if (!rev)                                                                      \
            for (int64_t i = 0; i < cnt; i++) { T u = x_[i], w = B_AT(i); y_[i] = (EXPR); } \
        else                                                                           \
            for (int64_t i = 0; i < cnt; i++) { T u = B_AT(i), w = x_[i]; y_[i] = (EXPR); } \
    } while (0)

#define B_ARR(i) (b_[i])
#define B_ONE(i) (bv)

#define BIN_ALL(T, FN, B_AT)                                                           \
    switch (op) {                                                                      \
    case AK_OP_ADD: BIN_LOOP(T, FN(AK_OP_ADD, u, w), B_AT); break;                     \
    case AK_OP_SUB: BIN_LOOP(T, FN(AK_OP_SUB, u, w), B_AT); break;                     \
    case AK_OP_MUL: BIN_LOOP(T, FN(AK_OP_MUL, u, w), B_AT); break;                     \
    case AK_OP_DIV: BIN_LOOP(T, FN(AK_OP_DIV, u, w), B_AT); break;                     \
    case AK_OP_MIN: BIN_LOOP(T, FN(AK_OP_MIN, u, w), B_AT); break;                     \
    case AK_OP_MAX: BIN_LOOP(T, FN(AK_OP_MAX, u, w), B_AT); break;                     \
    default: BIN_LOOP(T, FN(AK_OP_POW, u, w), B_AT); break;                            \
    }

#define I32BIN(o, u, w) ((int32_t)ak_int_bin(o, AK_I32, u, w))
#define U32BIN(o, u, w) ((uint32_t)ak_int_bin(o, AK_U32, u, w))
#define I64BIN(o, u, w) (ak_int_bin(o, AK_I64, u, w))

/* Float pow through the vector math: base and exponent as arrays (an immediate is
 * spread over the tile first). */
static void float_pow(int dt, const void *src, const void *b, ak_scalar imm, int rev, void *dst,
                      int64_t cnt, void *tmp)
{
    if (!b) {
        if (dt == AK_F32) for (int64_t i = 0; i < cnt; i++) ((float *)tmp)[i] = (float)imm.f;
        else for (int64_t i = 0; i < cnt; i++) ((double *)tmp)[i] = imm.f;
        b = tmp;
    }
    const void *base = rev ? b : src, *ex = rev ? src : b;
    if (dt == AK_F32) VP_F32(base, ex, dst, cnt);
    else VP_F64(base, ex, dst, cnt);
}

/* b: the operand array, or NULL for the immediate imm. tmp: a tile of scratch. */
void AK_LNAME(ak_loop_binary)(int op, int dt, const void *src, const void *b, ak_scalar imm,
                         int rev, void *dst, int64_t cnt, void *tmp)
{
    if (op == AK_OP_POW && ak_dt_is_float(dt)) {
        float_pow(dt, src, b, imm, rev, dst, cnt, tmp);
        return;
    }
#define BIN_DT(T, FN, VAL)                                                             \
    if (b) {                                                                           \
        const T *b_ = (const T *)b;                                                    \
        BIN_ALL(T, FN, B_ARR);                                                         \
    } else {                                                                           \
        T bv = (T)(VAL);                                                               \
        BIN_ALL(T, FN, B_ONE);                                                         \
    }
    switch (dt) {
    case AK_F32: { BIN_DT(float, ak_f32_bin, imm.f); break; }
    case AK_F64: { BIN_DT(double, ak_f64_bin, imm.f); break; }
    case AK_I32: { BIN_DT(int32_t, I32BIN, imm.i); break; }
    case AK_U32: { BIN_DT(uint32_t, U32BIN, imm.i); break; }
    default: { BIN_DT(int64_t, I64BIN, imm.i); break; }
    }
#undef BIN_DT
}

/* dst (dtype dd) = convert(src (dtype sd)). */
#define CAST_FROM(TS, GET)                                                             \
    do {                                                                               \
        const TS *s_ = (const TS *)src;                                                \
        switch (dd) {                                                                  \
        case AK_F32: for (int64_t i = 0; i < cnt; i++) ((float *)dst)[i] = (float)GET(s_[i]); break; \
        case AK_F64: for (int64_t i = 0; i < cnt; i++) ((double *)dst)[i] = (double)GET(s_[i]); break; \
        case AK_I32: for (int64_t i = 0; i < cnt; i++) ((int32_t *)dst)[i] = (int32_t)TOINT(AK_I32, s_[i]); break; \
        case AK_U32: for (int64_t i = 0; i < cnt; i++) ((uint32_t *)dst)[i] = (uint32_t)TOINT(AK_U32, s_[i]); break; \
        default: for (int64_t i = 0; i < cnt; i++) ((int64_t *)dst)[i] = TOINT(AK_I64, s_[i]); break; \
        }                                                                              \
    } while (0)
#define ID(x) (x)

void AK_LNAME(ak_loop_cast)(int sd, int dd, const void *src, void *dst, int64_t cnt)
{
    if (ak_dt_is_float(sd)) {
#define TOINT(d, x) ak_float_to_int(d, (double)(x))
        if (sd == AK_F32) CAST_FROM(float, ID);
        else CAST_FROM(double, ID);
#undef TOINT
    } else {
#define TOINT(d, x) ak_int_norm(d, (uint64_t)(int64_t)(x))
        /* integer to float converts from int64 in one rounding */
#define I64OF(x) ((int64_t)(x))
        if (sd == AK_I32) CAST_FROM(int32_t, I64OF);
        else if (sd == AK_U32) CAST_FROM(uint32_t, I64OF);
        else CAST_FROM(int64_t, I64OF);
#undef I64OF
#undef TOINT
    }
}

