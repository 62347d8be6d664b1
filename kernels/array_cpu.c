/* kernels/array_cpu.c: the CPU interpreter of fused elementwise programs (the
 * "array.fused" kernel) and the registration of every array kernel.
 *
 * A program is a list of accumulator instructions (array_kernels.h). The CPU runs it on
 * tiles of AK_TILE elements: each instruction is one tight loop over the tile, so the
 * per-instruction dispatch is paid once per tile and the loops vectorise. Values stay in
 * the tile buffers (L1/L2) between instructions: a chain reads its inputs and writes its
 * output once. */
/* The tile loops must vectorise whatever the build type (-O2's cheap cost model leaves
 * loops of unknown length scalar); set before the includes so that the inline helpers
 * share the options and inline. No fast-math: results stay those of the C library. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-math-errno")
#endif
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "kernels/array_kernels.h"
#include "kernels/array_vmath.h"

struct ak_scratch {
    _Alignas(64) unsigned char acc[2][AK_TILE * 8];
    _Alignas(64) unsigned char side[AK_MAX_SIDE][AK_TILE * 8];
    _Alignas(64) unsigned char opnd[AK_TILE * 8];
    _Alignas(64) int64_t g[AK_TILE];
};

ak_scratch *ak_scratch_new(void) { return aligned_alloc(64, sizeof(ak_scratch)); }
void ak_scratch_free(ak_scratch *s) { free(s); }

/* Row-major multi-index of element e of a chunk. */
static void unravel(const ak_geom *g, int64_t e, int64_t *j)
{
    for (int k = g->ndim - 1; k >= 0; k--) {
        j[k] = e % g->shape[k];
        e /= g->shape[k];
    }
}

int64_t ak_gidx(const ak_geom *g, int64_t e)
{
    int64_t j[AK_MAX_DIMS], flat = 0;
    unravel(g, e, j);
    for (int k = 0; k < g->ndim; k++) flat = flat * g->gshape[k] + g->offset[k] + j[k];
    return flat;
}

/* Global flat indices of elements [e0, e0+cnt). */
static void fill_gidx(const ak_geom *g, int64_t e0, int64_t cnt, int64_t *out)
{
    if (g->ndim <= 1) {
        int64_t base = g->ndim ? g->offset[0] + e0 : 0;
        for (int64_t i = 0; i < cnt; i++) out[i] = base + i;
        return;
    }
    int d = g->ndim, last = d - 1;
    int64_t j[AK_MAX_DIMS];
    unravel(g, e0, j);
    int64_t gstride[AK_MAX_DIMS];
    gstride[last] = 1;
    for (int k = last - 1; k >= 0; k--) gstride[k] = gstride[k + 1] * g->gshape[k + 1];
    int64_t i = 0;
    while (i < cnt) {
        int64_t row = 0;
        for (int k = 0; k < d; k++) row += (g->offset[k] + j[k]) * gstride[k];
        int64_t run = g->shape[last] - j[last];
        if (run > cnt - i) run = cnt - i;
        for (int64_t t = 0; t < run; t++) out[i + t] = row + t;
        i += run;
        j[last] += run;
        for (int k = last; k > 0 && j[k] >= g->shape[k]; k--) {
            j[k] = 0;
            j[k - 1]++;
        }
    }
}

/* Reads input elements through broadcast strides into dst (esize bytes each): by runs
 * along the last axis (copied when its stride is 1, one value repeated when 0). */
static void gather_input(const ak_fused_args *a, int in, const void *src, int64_t e0,
                         int64_t cnt, void *dst)
{
    const ak_geom *g = &a->geom;
    int es = ak_dt_size(a->prog.in_dt[in]);
    const int64_t *st = a->in_stride[in];
    int d = g->ndim;
    if (d == 0) {
        for (int64_t i = 0; i < cnt; i++) memcpy((char *)dst + i * es, src, (size_t)es);
        return;
    }
    int64_t j[AK_MAX_DIMS] = {0};
    unravel(g, e0, j);
    int last = d - 1;
    int64_t i = 0;
    while (i < cnt) {
        int64_t off = 0;
        for (int k = 0; k < d; k++) off += j[k] * st[k];
        int64_t run = g->shape[last] - j[last];
        if (run > cnt - i) run = cnt - i;
        const char *s0 = (const char *)src + off * es;
        char *d0 = (char *)dst + i * es;
        if (st[last] == 1) {
            memcpy(d0, s0, (size_t)(run * es));
        } else if (st[last] == 0) {
            if (es == 4) {
                uint32_t v;
                memcpy(&v, s0, 4);
                for (int64_t t = 0; t < run; t++) ((uint32_t *)d0)[t] = v;
            } else {
                uint64_t v;
                memcpy(&v, s0, 8);
                for (int64_t t = 0; t < run; t++) ((uint64_t *)d0)[t] = v;
            }
        } else {
            for (int64_t t = 0; t < run; t++)
                memcpy(d0 + t * es, s0 + t * st[last] * es, (size_t)es);
        }
        i += run;
        j[last] += run;
        for (int k = last; k > 0 && j[k] >= g->shape[k]; k--) {
            j[k] = 0;
            j[k - 1]++;
        }
    }
}

static void fill_imm(int dt, ak_scalar v, int64_t cnt, void *dst)
{
    switch (dt) {
    case AK_F32: { float x = (float)v.f; for (int64_t i = 0; i < cnt; i++) ((float *)dst)[i] = x; break; }
    case AK_F64: for (int64_t i = 0; i < cnt; i++) ((double *)dst)[i] = v.f; break;
    case AK_I32: for (int64_t i = 0; i < cnt; i++) ((int32_t *)dst)[i] = (int32_t)v.i; break;
    case AK_U32: for (int64_t i = 0; i < cnt; i++) ((uint32_t *)dst)[i] = (uint32_t)v.i; break;
    default: for (int64_t i = 0; i < cnt; i++) ((int64_t *)dst)[i] = v.i; break;
    }
}

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

static void apply_unary(int op, int dt, const void *src, void *dst, int64_t cnt)
{
    switch (dt) {
    case AK_F32: UN_FLOAT(float, fabsf, sqrtf, AK_FMUL, ak_vmath_f32); break;
    case AK_F64: UN_FLOAT(double, fabs, sqrt, AK_DMUL, ak_vmath_f64); break;
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
    if (dt == AK_F32) ak_vpow_f32(base, ex, dst, cnt);
    else ak_vpow_f64(base, ex, dst, cnt);
}

/* b: the operand array, or NULL for the immediate imm. tmp: a tile of scratch. */
static void apply_binary(int op, int dt, const void *src, const void *b, ak_scalar imm,
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

static void apply_cast(int sd, int dd, const void *src, void *dst, int64_t cnt)
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

static void apply_gen(const ak_instr *ins, const int64_t *g, int64_t cnt, void *acc)
{
    int dt = ins->dt;
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t gi = (uint64_t)g[i];
        switch (ins->op) {
        case AK_OP_ARANGE:
            if (ak_dt_is_float(dt)) {
                double v = AK_DADD(ins->imm[0].f, AK_DMUL((double)gi, ins->imm[1].f));
                if (dt == AK_F32) ((float *)acc)[i] = (float)v;
                else ((double *)acc)[i] = v;
            } else {
                int64_t v = ak_int_norm(dt, ins->imm[0].u + gi * ins->imm[1].u);
                if (dt == AK_I64) ((int64_t *)acc)[i] = v;
                else if (dt == AK_I32) ((int32_t *)acc)[i] = (int32_t)v;
                else ((uint32_t *)acc)[i] = (uint32_t)v;
            }
            break;
        case AK_OP_RAND_U:
            if (dt == AK_F32)
                ((float *)acc)[i] = ak_rand_uniform_f32(ins->imm[0].u, gi, (float)ins->imm[1].f,
                                                        (float)ins->imm[2].f);
            else
                ((double *)acc)[i] = ak_rand_uniform(ins->imm[0].u, gi, ins->imm[1].f,
                                                     ins->imm[2].f);
            break;
        default: {
            double v = ak_rand_normal(ins->imm[0].u, gi, ins->imm[1].f, ins->imm[2].f);
            if (dt == AK_F32) ((float *)acc)[i] = (float)v;
            else ((double *)acc)[i] = v;
        }
        }
    }
}

/* Runs the program on elements [e0, e0+cnt) (cnt <= AK_TILE) and returns where the
 * result is: out, unless the program only reads an input or a side register (then that
 * place, nothing copied). Values move between s->acc buffers and the last instruction
 * writes out directly; a SET of a contiguous input reads it in place. */
static const void *eval_tile(const ak_fused_args *a, void *const *in, int64_t e0, int64_t cnt,
                             void *out, ak_scratch *s)
{
    const ak_prog *p = &a->prog;
    void *acc = s->acc[0], *other = s->acc[1];
    const void *cur = acc;   /* where the accumulator's value is */
    if (p->needs_gidx) fill_gidx(&a->geom, e0, cnt, s->g);
    for (int pc = 0; pc < p->nops; pc++) {
        const ak_instr *ins = &p->ops[pc];
        const void *opnd = NULL;
        if (ins->okind == AK_OPND_SIDE) {
            opnd = s->side[ins->oidx];
        } else if (ins->okind == AK_OPND_INPUT) {
            int k = ins->oidx, es = ak_dt_size(p->in_dt[k]);
            if (a->in_contig[k]) {
                opnd = (const char *)in[k] + e0 * es;
            } else {
                void *dst = ins->op == AK_OP_SET ? acc : s->opnd;
                gather_input(a, k, in[k], e0, cnt, dst);
                opnd = dst;
            }
        }
        /* the last instruction writes the output itself */
        void *dst = pc == p->nops - 1 ? out : acc;
        switch (ins->op) {
        case AK_OP_SET:
            if (ins->okind == AK_OPND_IMM) {
                fill_imm(ins->dt, ins->imm[0], cnt, acc);
                cur = acc;
            } else {
                cur = opnd;
            }
            break;
        case AK_OP_ARANGE:
        case AK_OP_RAND_U:
        case AK_OP_RAND_N:
            apply_gen(ins, s->g, cnt, dst);
            cur = dst;
            break;
        case AK_OP_CAST: {
            if (dst == acc && cur == acc) {   /* the new type goes to the other buffer */
                dst = other;
                other = acc;
                acc = dst;
            }
            apply_cast(ins->src_dt, ins->dt, cur, dst, cnt);
            cur = dst;
            break;
        }
        case AK_OP_PUT:
            if (s->side[ins->oidx] != cur)
                memcpy(s->side[ins->oidx], cur, (size_t)(cnt * ak_dt_size(ins->dt)));
            break;
        default:
            if (ins->op < AK_OP_BINARY0)
                apply_unary(ins->op, ins->dt, cur, dst, cnt);
            else
                apply_binary(ins->op, ins->dt, cur, ins->okind == AK_OPND_IMM ? NULL : opnd,
                             ins->imm[0], ins->rev, dst, cnt, s->opnd);
            cur = dst;
        }
    }
    return cur;
}

void ak_cpu_eval_tile(const ak_fused_args *a, void *const *in, int64_t e0, int64_t cnt,
                      void *out, ak_scratch *s)
{
    const void *r = eval_tile(a, in, e0, cnt, out, s);
    if (r != out) memcpy(out, r, (size_t)(cnt * ak_dt_size(a->prog.out_dt)));
}

const void *ak_cpu_eval_tile_ref(const ak_fused_args *a, void *const *in, int64_t e0,
                                 int64_t cnt, void *out, ak_scratch *s)
{
    return eval_tile(a, in, e0, cnt, out, s);
}

cask_status ak_cpu_fused(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_fused_args *a = cask_task_args(ctx, &asz);
    if (!a || asz < sizeof(*a)) return cask_task_fail(ctx, "bad arguments");
    int nin = a->prog.nin;
    void *in[AK_MAX_IN];
    for (int i = 0; i < nin; i++) in[i] = cask_task_buffer(ctx, i);
    char *out = cask_task_buffer(ctx, nin);
    size_t osz = (size_t)ak_dt_size(a->prog.out_dt);
    if (cask_task_buffer_size(ctx, nin) < (size_t)a->geom.n * osz)
        return cask_task_fail(ctx, "output buffer too small");
    ak_scratch *s = ak_scratch_new();
    if (!s) return cask_task_fail(ctx, "out of memory");
    for (int64_t e0 = 0; e0 < a->geom.n; e0 += AK_TILE) {
        int64_t cnt = a->geom.n - e0 < AK_TILE ? a->geom.n - e0 : AK_TILE;
        ak_cpu_eval_tile(a, in, e0, cnt, out + e0 * osz, s);
    }
    ak_scratch_free(s);
    return CASK_OK;
}

/* ---- registration ---- */

static cask_status reg(cask_runtime *rt, const char *name, cask_kernel_fn cpu,
                       cask_kernel_fn cuda, cask_kernel **out)
{
    cask_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.cpu = cpu;
    d.cuda = cuda;
    return cask_kernel_register(rt, &d, out);
}

#ifdef CASK_HAVE_CUDA
#define CUDA_IMPL(f) f
#else
#define CUDA_IMPL(f) NULL
#endif

cask_status ak_kernels_register(cask_runtime *rt, ak_kernels *k)
{
    cask_status st;
    memset(k, 0, sizeof *k);
    if ((st = reg(rt, "array.fused", ak_cpu_fused, CUDA_IMPL(ak_cuda_fused), &k->fused)) ||
        (st = reg(rt, "array.reduce_partial", ak_cpu_reduce_partial,
                  CUDA_IMPL(ak_cuda_reduce_partial), &k->reduce_partial)) ||
        (st = reg(rt, "array.reduce_combine", ak_cpu_reduce_combine, NULL,
                  &k->reduce_combine)) ||
        (st = reg(rt, "array.copy", ak_cpu_copy, CUDA_IMPL(ak_cuda_copy), &k->copy)) ||
        (st = reg(rt, "array.gather", ak_cpu_gather, NULL, &k->gather)) ||
        (st = reg(rt, "array.scatter", ak_cpu_scatter, NULL, &k->scatter)) ||
        (st = reg(rt, "array.npy_read", ak_cpu_npy_read, NULL, &k->npy_read)) ||
        (st = reg(rt, "array.npy_write", ak_cpu_npy_write, NULL, &k->npy_write)) ||
        (st = reg(rt, "array.matmul", ak_cpu_matmul, CUDA_IMPL(ak_cuda_matmul), &k->matmul)))
        return st;
    return CASK_OK;
}
