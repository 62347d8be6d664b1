/* kernels/array_ops.h: the scalar semantics of the array operations, shared word for
 * word by the CPU kernels (array_cpu.c) and the CUDA kernels (array_cuda.cu) so that
 * both compute the same values: integer wrapping, division by zero, NaN rules,
 * saturating casts, the counter-based random generator, and the dyadic (aligned
 * power-of-two) decomposition that makes sums independent of chunking.
 * Floating additions and products use AK_*ADD/AK_*MUL, which on the GPU are the
 * round-to-nearest intrinsics: nvcc may not contract them into FMAs, so results match
 * the CPU bit for bit where the C library is not involved. */
#ifndef CASK_KERNELS_ARRAY_OPS_H
#define CASK_KERNELS_ARRAY_OPS_H

#include <stdint.h>
#include <math.h>

#ifdef __CUDACC__
#define AK_HD __host__ __device__ __forceinline__
#else
#define AK_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define AK_FADD(a, b) __fadd_rn((a), (b))
#define AK_FSUB(a, b) __fsub_rn((a), (b))
#define AK_FMUL(a, b) __fmul_rn((a), (b))
#define AK_FDIV(a, b) __fdiv_rn((a), (b))
#define AK_DADD(a, b) __dadd_rn((a), (b))
#define AK_DSUB(a, b) __dsub_rn((a), (b))
#define AK_DMUL(a, b) __dmul_rn((a), (b))
#define AK_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define AK_FADD(a, b) ((a) + (b))
#define AK_FSUB(a, b) ((a) - (b))
#define AK_FMUL(a, b) ((a) * (b))
#define AK_FDIV(a, b) ((a) / (b))
#define AK_DADD(a, b) ((a) + (b))
#define AK_DSUB(a, b) ((a) - (b))
#define AK_DMUL(a, b) ((a) * (b))
#define AK_DDIV(a, b) ((a) / (b))
#endif

/* Element types; the same numbers as cask_dtype. */
enum { AK_F32 = 0, AK_F64 = 1, AK_I32 = 2, AK_I64 = 3, AK_U32 = 4, AK_NDT = 5 };

AK_HD int ak_dt_size(int dt) { return (dt == AK_F64 || dt == AK_I64) ? 8 : 4; }
AK_HD int ak_dt_is_float(int dt) { return dt == AK_F32 || dt == AK_F64; }

/* Opcodes of a program (see array_kernels.h). Unary and binary codes follow the
 * order of cask_unary_op / cask_binary_op. */
enum {
    AK_OP_SET = 0,     /* acc = operand */
    AK_OP_ARANGE,      /* acc = imm0 + g * imm1 (g: global flat index) */
    AK_OP_RAND_U,      /* acc = uniform(seed imm0, g) in [imm1, imm2) */
    AK_OP_RAND_N,      /* acc = imm1 + imm2 * normal(seed imm0, g) */
    AK_OP_CAST,        /* acc = (dt) acc, acc had dtype src_dt */
    AK_OP_PUT,         /* side[oidx] = acc */
    AK_OP_UNARY0,      /* + cask_unary_op: acc = f(acc) */
    AK_OP_NEG = AK_OP_UNARY0, AK_OP_ABS, AK_OP_SQRT, AK_OP_EXP, AK_OP_LOG, AK_OP_SIN,
    AK_OP_COS, AK_OP_SQUARE,
    AK_OP_BINARY0,     /* + cask_binary_op: acc = f(acc, operand) (or f(operand, acc)) */
    AK_OP_ADD = AK_OP_BINARY0, AK_OP_SUB, AK_OP_MUL, AK_OP_DIV, AK_OP_MIN, AK_OP_MAX,
    AK_OP_POW,
    AK_OP_COUNT
};

/* ---- floating point ---- */

AK_HD float ak_f32_un(int op, float x)
{
    switch (op) {
    case AK_OP_NEG: return -x;
    case AK_OP_ABS: return fabsf(x);
    case AK_OP_SQRT: return sqrtf(x);
    case AK_OP_EXP: return expf(x);
    case AK_OP_LOG: return logf(x);
    case AK_OP_SIN: return sinf(x);
    case AK_OP_COS: return cosf(x);
    default: return AK_FMUL(x, x);
    }
}

AK_HD double ak_f64_un(int op, double x)
{
    switch (op) {
    case AK_OP_NEG: return -x;
    case AK_OP_ABS: return fabs(x);
    case AK_OP_SQRT: return sqrt(x);
    case AK_OP_EXP: return exp(x);
    case AK_OP_LOG: return log(x);
    case AK_OP_SIN: return sin(x);
    case AK_OP_COS: return cos(x);
    default: return AK_DMUL(x, x);
    }
}

/* min/max propagate NaN (the first NaN operand wins), as numpy.minimum. */
AK_HD float ak_f32_bin(int op, float x, float y)
{
    switch (op) {
    case AK_OP_ADD: return AK_FADD(x, y);
    case AK_OP_SUB: return AK_FSUB(x, y);
    case AK_OP_MUL: return AK_FMUL(x, y);
    case AK_OP_DIV: return AK_FDIV(x, y);
    case AK_OP_MIN: return (x != x) ? x : (y != y) ? y : (y < x ? y : x);
    case AK_OP_MAX: return (x != x) ? x : (y != y) ? y : (y > x ? y : x);
    default: return powf(x, y);
    }
}

AK_HD double ak_f64_bin(int op, double x, double y)
{
    switch (op) {
    case AK_OP_ADD: return AK_DADD(x, y);
    case AK_OP_SUB: return AK_DSUB(x, y);
    case AK_OP_MUL: return AK_DMUL(x, y);
    case AK_OP_DIV: return AK_DDIV(x, y);
    case AK_OP_MIN: return (x != x) ? x : (y != y) ? y : (y < x ? y : x);
    case AK_OP_MAX: return (x != x) ? x : (y != y) ? y : (y > x ? y : x);
    default: return pow(x, y);
    }
}

/* ---- integers, held in int64: int32 sign-extended, uint32 zero-extended ---- */

AK_HD int64_t ak_int_norm(int dt, uint64_t v)
{
    if (dt == AK_I32) return (int64_t)(int32_t)(uint32_t)v;
    if (dt == AK_U32) return (int64_t)(uint32_t)v;
    return (int64_t)v;
}

AK_HD int64_t ak_int_un(int op, int dt, int64_t x)
{
    uint64_t u = (uint64_t)x;
    switch (op) {
    case AK_OP_NEG: return ak_int_norm(dt, 0 - u);
    case AK_OP_ABS: return x < 0 ? ak_int_norm(dt, 0 - u) : x;
    case AK_OP_SQUARE: return ak_int_norm(dt, u * u);
    default: return x;   /* float functions never reach integers (the builder casts) */
    }
}

AK_HD int64_t ak_int_pow(int dt, int64_t b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
    uint64_t r = 1, base = (uint64_t)b;
    uint64_t k = (uint64_t)e;
    while (k) {
        if (k & 1) r *= base;
        base *= base;
        k >>= 1;
    }
    return ak_int_norm(dt, r);
}

AK_HD int64_t ak_int_bin(int op, int dt, int64_t x, int64_t y)
{
    switch (op) {
    case AK_OP_ADD: return ak_int_norm(dt, (uint64_t)x + (uint64_t)y);
    case AK_OP_SUB: return ak_int_norm(dt, (uint64_t)x - (uint64_t)y);
    case AK_OP_MUL: return ak_int_norm(dt, (uint64_t)x * (uint64_t)y);
    case AK_OP_DIV:
        if (y == 0) return 0;
        if (y == -1) return ak_int_norm(dt, 0 - (uint64_t)x);  /* MIN / -1 wraps */
        return x / y;
    case AK_OP_MIN: return y < x ? y : x;
    case AK_OP_MAX: return y > x ? y : x;
    default: return ak_int_pow(dt, x, y);
    }
}

/* Saturating truncation of a float to an integer type; NaN gives 0. */
AK_HD int64_t ak_float_to_int(int dt, double x)
{
    if (x != x) return 0;
    if (dt == AK_I32) {
        if (x <= -2147483648.0) return INT32_MIN;
        if (x >= 2147483647.0) return INT32_MAX;
    } else if (dt == AK_U32) {
        if (x <= 0.0) return 0;
        if (x >= 4294967295.0) return (int64_t)UINT32_MAX;
    } else {
        if (x <= -9223372036854775808.0) return INT64_MIN;
        if (x >= 9223372036854775807.0) return INT64_MAX;
    }
    return (int64_t)x;
}

/* ---- Philox4x32-10 (Salmon et al., SC'11), keyed by the seed, counted by index ---- */

#define AK_TAG_UNIFORM 0x756e6966u
#define AK_TAG_NORMAL 0x6e6f726du

AK_HD void ak_philox(uint64_t seed, uint64_t ctr, uint32_t tag, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = tag, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* 53 random bits as a double in [0, 1). */
AK_HD double ak_u01(uint32_t a, uint32_t b)
{
    uint64_t m = ((uint64_t)a << 21) ^ (uint64_t)(b >> 11);
    return (double)(m & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

AK_HD double ak_rand_uniform(uint64_t seed, uint64_t g, double lo, double hi)
{
    uint32_t w[4];
    ak_philox(seed, g, AK_TAG_UNIFORM, w);
    return AK_DADD(lo, AK_DMUL(AK_DSUB(hi, lo), ak_u01(w[0], w[1])));
}

/* float32 uniform from 24 bits, so that every value is a float in [lo, hi). */
AK_HD float ak_rand_uniform_f32(uint64_t seed, uint64_t g, float lo, float hi)
{
    uint32_t w[4];
    ak_philox(seed, g, AK_TAG_UNIFORM, w);
    float u = (float)(w[0] >> 8) * (1.0f / 16777216.0f);
    float r = AK_FADD(lo, AK_FMUL(AK_FSUB(hi, lo), u));
    return r < hi ? r : lo;   /* rounding could reach hi */
}

/* Standard normal by Box-Muller on the two halves of one Philox draw (cosine branch). */
AK_HD double ak_rand_normal(uint64_t seed, uint64_t g, double mean, double sd)
{
    uint32_t w[4];
    ak_philox(seed, g, AK_TAG_NORMAL, w);
    double u1 = 1.0 - ak_u01(w[0], w[1]);           /* (0, 1] */
    double u2 = ak_u01(w[2], w[3]);
    double r = sqrt(-2.0 * log(u1));
    double z = AK_DMUL(r, cos(AK_DMUL(6.283185307179586, u2)));
    return AK_DADD(mean, AK_DMUL(sd, z));
}

/* ---- dyadic decomposition ----
 * A range [c0, c1) of an axis is cut greedily, left to right, into the largest ranges
 * [p, p + 2^L) with p a multiple of 2^L (and L <= cap): the canonical cover by nodes of
 * the binary tree over the whole axis. A node's value is defined as value(left half) +
 * value(right half), down to single elements, whoever computes it; a sum over [0, n) is
 * the right fold of its canonical nodes. So the result does not depend on where chunk
 * boundaries fall. */

#define AK_DY_CAP 11   /* nodes made by the partial stage have at most 2^11 elements */

AK_HD int ak_dy_level(int64_t p, int64_t end, int cap)
{
    int L = 0;
    while (L < cap && L < 62 && ((p >> L) & 1) == 0 && (int64_t)2 << L <= end - p) L++;
    return L;
}

AK_HD int64_t ak_dy_count(int64_t c0, int64_t c1, int cap)
{
    int64_t k = 0;
    for (int64_t p = c0; p < c1; p += (int64_t)1 << ak_dy_level(p, c1, cap)) k++;
    return k;
}

AK_HD int ak_popcount64(uint64_t x)
{
    int c = 0;
    for (; x; x &= x - 1) c++;
    return c;
}

/* Node k (0-based, left to right) of the cover of [c0, c1) with cap, in O(log) steps
 * (the GPU needs it per thread block): the cover is the set bits of A - c0 ascending
 * (up to the first multiple A of 2^cap), whole 2^cap nodes, then the set bits of
 * c1 - B descending (from the last multiple B); inside one 2^cap block the same split
 * at the highest bit where c0 and c1 - 1 differ, unless [c0, c1) is itself one node. */
AK_HD void ak_dy_split(int64_t c0, int64_t c1, int cap, int64_t *s_lo, int64_t *s_hi)
{
    int64_t C = (int64_t)1 << cap;
    int64_t A = (c0 + C - 1) & ~(C - 1), B = c1 & ~(C - 1);
    if (A <= B) {
        *s_lo = A;
        *s_hi = B;
        return;
    }
    uint64_t d = (uint64_t)(c0 ^ (c1 - 1));
    int m = 63;
    while (m > 0 && !((d >> m) & 1)) m--;
    int64_t s = d ? ((c1 - 1) >> m) << m : c0;
    *s_lo = *s_hi = s;
}

AK_HD int ak_dy_single(int64_t c0, int64_t c1, int cap)
{
    int64_t n = c1 - c0;
    return (n & (n - 1)) == 0 && (c0 & (n - 1)) == 0 && n <= ((int64_t)1 << cap);
}

AK_HD int64_t ak_dy_count_fast(int64_t c0, int64_t c1, int cap)
{
    if (ak_dy_single(c0, c1, cap)) return 1;
    int64_t lo, hi;
    ak_dy_split(c0, c1, cap, &lo, &hi);
    return ak_popcount64((uint64_t)(lo - c0)) + ((hi - lo) >> cap) +
           ak_popcount64((uint64_t)(c1 - hi));
}

AK_HD void ak_dy_node(int64_t c0, int64_t c1, int cap, int64_t k, int64_t *pos, int *lvl)
{
    if (ak_dy_single(c0, c1, cap)) {
        int L = 0;
        while (((int64_t)1 << L) < c1 - c0) L++;
        *pos = c0;
        *lvl = L;
        return;
    }
    int64_t lo, hi;
    ak_dy_split(c0, c1, cap, &lo, &hi);
    uint64_t left = (uint64_t)(lo - c0), right = (uint64_t)(c1 - hi);
    int nl = ak_popcount64(left);
    int64_t nm = (hi - lo) >> cap;
    if (k < nl) {   /* the k-th lowest set bit of left */
        uint64_t x = left;
        for (int64_t j = 0; j < k; j++) x &= x - 1;
        int L = 0;
        while (!((x >> L) & 1)) L++;
        *pos = c0 + (int64_t)(left & (((uint64_t)1 << L) - 1));
        *lvl = L;
        return;
    }
    if (k < nl + nm) {
        *pos = lo + ((k - nl) << cap);
        *lvl = cap;
        return;
    }
    int64_t j = k - nl - nm;   /* the j-th highest set bit of right */
    int L = 63;
    for (;; L--) {
        if ((right >> L) & 1) {
            if (j == 0) break;
            j--;
        }
    }
    *pos = hi + (int64_t)(right & ~((((uint64_t)2) << L) - 1));
    *lvl = L;
}

/* Canonical sum of 2^L contiguous values (the reference shape of a node's tree). */
#ifdef __CUDACC__
__host__ __device__
#else
static
#endif
inline double ak_canon_sum(const double *x, int L)
{
    if (L == 0) return x[0];
    if (L == 1) return AK_DADD(x[0], x[1]);
    if (L == 2) return AK_DADD(AK_DADD(x[0], x[1]), AK_DADD(x[2], x[3]));
    /* iterative: sums of aligned groups of 4, then pairwise levels in place would need
     * scratch; the binary-counter walk gives the same tree */
    double st[64];
    int64_t n = (int64_t)1 << L;
    for (int64_t i = 0; i < n; i += 4) {
        double v = AK_DADD(AK_DADD(x[i], x[i + 1]), AK_DADD(x[i + 2], x[i + 3]));
        int lvl = 2;
        int64_t j = i >> 2;
        while (j & 1) {
            v = AK_DADD(st[lvl], v);
            lvl++;
            j >>= 1;
        }
        st[lvl] = v;
    }
    return st[L];
}

#endif
