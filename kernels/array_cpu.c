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
#include "kernels/array_kernels.h"

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

/* Reads input elements through broadcast strides into dst (esize bytes each). */
static void gather_input(const ak_fused_args *a, int in, const void *src, int64_t e0,
                         int64_t cnt, void *dst)
{
    const ak_geom *g = &a->geom;
    int es = ak_dt_size(a->prog.in_dt[in]);
    const int64_t *st = a->in_stride[in];
    int64_t j[AK_MAX_DIMS] = {0};
    unravel(g, e0, j);
    int d = g->ndim;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t off = 0;
        for (int k = 0; k < d; k++) off += j[k] * st[k];
        memcpy((char *)dst + i * es, (const char *)src + off * es, (size_t)es);
        for (int k = d - 1; k >= 0; k--) {
            if (++j[k] < g->shape[k]) break;
            j[k] = 0;
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

/* ---- typed loops ---- */

#define UN_LOOP(T, EXPR)                                                               \
    do {                                                                               \
        T *x_ = (T *)acc;                                                              \
        for (int64_t i = 0; i < cnt; i++) { T v = x_[i]; x_[i] = (EXPR); }             \
    } while (0)

#define UN_ALL(T, FN)                                                                  \
    switch (op) {                                                                      \
    case AK_OP_NEG: UN_LOOP(T, FN(AK_OP_NEG, v)); break;                               \
    case AK_OP_ABS: UN_LOOP(T, FN(AK_OP_ABS, v)); break;                               \
    case AK_OP_SQRT: UN_LOOP(T, FN(AK_OP_SQRT, v)); break;                             \
    case AK_OP_EXP: UN_LOOP(T, FN(AK_OP_EXP, v)); break;                               \
    case AK_OP_LOG: UN_LOOP(T, FN(AK_OP_LOG, v)); break;                               \
    case AK_OP_SIN: UN_LOOP(T, FN(AK_OP_SIN, v)); break;                               \
    case AK_OP_COS: UN_LOOP(T, FN(AK_OP_COS, v)); break;                               \
    default: UN_LOOP(T, FN(AK_OP_SQUARE, v)); break;                                   \
    }

#define I32UN(o, v) ((int32_t)ak_int_un(o, AK_I32, v))
#define U32UN(o, v) ((uint32_t)ak_int_un(o, AK_U32, v))
#define I64UN(o, v) (ak_int_un(o, AK_I64, v))

static void apply_unary(int op, int dt, void *acc, int64_t cnt)
{
    switch (dt) {
    case AK_F32: UN_ALL(float, ak_f32_un); break;
    case AK_F64: UN_ALL(double, ak_f64_un); break;
    case AK_I32: UN_ALL(int32_t, I32UN); break;
    case AK_U32: UN_ALL(uint32_t, U32UN); break;
    default: UN_ALL(int64_t, I64UN); break;
    }
}

/* acc = f(acc, b) or, with rev, acc = f(b, acc). */
#define BIN_LOOP(T, EXPR)                                                              \
    do {                                                                               \
        T *__restrict o_ = (T *)acc;                                                   \
        const T *__restrict b_ = (const T *)b;                                         \
        if (!rev)                                                                      \
            for (int64_t i = 0; i < cnt; i++) { T u = o_[i], w = b_[i]; o_[i] = (EXPR); } \
        else                                                                           \
            for (int64_t i = 0; i < cnt; i++) { T u = b_[i], w = o_[i]; o_[i] = (EXPR); } \
    } while (0)

#define BIN_ALL(T, FN)                                                                 \
    switch (op) {                                                                      \
    case AK_OP_ADD: BIN_LOOP(T, FN(AK_OP_ADD, u, w)); break;                           \
    case AK_OP_SUB: BIN_LOOP(T, FN(AK_OP_SUB, u, w)); break;                           \
    case AK_OP_MUL: BIN_LOOP(T, FN(AK_OP_MUL, u, w)); break;                           \
    case AK_OP_DIV: BIN_LOOP(T, FN(AK_OP_DIV, u, w)); break;                           \
    case AK_OP_MIN: BIN_LOOP(T, FN(AK_OP_MIN, u, w)); break;                           \
    case AK_OP_MAX: BIN_LOOP(T, FN(AK_OP_MAX, u, w)); break;                           \
    default: BIN_LOOP(T, FN(AK_OP_POW, u, w)); break;                                  \
    }

#define I32BIN(o, u, w) ((int32_t)ak_int_bin(o, AK_I32, u, w))
#define U32BIN(o, u, w) ((uint32_t)ak_int_bin(o, AK_U32, u, w))
#define I64BIN(o, u, w) (ak_int_bin(o, AK_I64, u, w))

static void apply_binary(int op, int dt, void *acc, const void *b, int rev, int64_t cnt)
{
    switch (dt) {
    case AK_F32: BIN_ALL(float, ak_f32_bin); break;
    case AK_F64: BIN_ALL(double, ak_f64_bin); break;
    case AK_I32: BIN_ALL(int32_t, I32BIN); break;
    case AK_U32: BIN_ALL(uint32_t, U32BIN); break;
    default: BIN_ALL(int64_t, I64BIN); break;
    }
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

void ak_cpu_eval_tile(const ak_fused_args *a, void *const *in, int64_t e0, int64_t cnt,
                      void *out, ak_scratch *s)
{
    const ak_prog *p = &a->prog;
    void *acc = s->acc[0], *other = s->acc[1];
    if (p->needs_gidx) fill_gidx(&a->geom, e0, cnt, s->g);
    for (int pc = 0; pc < p->nops; pc++) {
        const ak_instr *ins = &p->ops[pc];
        const void *opnd = NULL;
        if (ins->okind == AK_OPND_IMM) {
            fill_imm(ins->dt, ins->imm[0], cnt, s->opnd);
            opnd = s->opnd;
        } else if (ins->okind == AK_OPND_SIDE) {
            opnd = s->side[ins->oidx];
        } else if (ins->okind == AK_OPND_INPUT) {
            int k = ins->oidx, es = ak_dt_size(p->in_dt[k]);
            if (a->in_contig[k]) {
                opnd = (const char *)in[k] + e0 * es;
            } else {
                gather_input(a, k, in[k], e0, cnt, s->opnd);
                opnd = s->opnd;
            }
        }
        switch (ins->op) {
        case AK_OP_SET:
            memcpy(acc, opnd, (size_t)(cnt * ak_dt_size(ins->dt)));
            break;
        case AK_OP_ARANGE:
        case AK_OP_RAND_U:
        case AK_OP_RAND_N:
            apply_gen(ins, s->g, cnt, acc);
            break;
        case AK_OP_CAST: {
            apply_cast(ins->src_dt, ins->dt, acc, other, cnt);
            void *t = acc;
            acc = other;
            other = t;
            break;
        }
        case AK_OP_PUT:
            memcpy(s->side[ins->oidx], acc, (size_t)(cnt * ak_dt_size(ins->dt)));
            break;
        default:
            if (ins->op < AK_OP_BINARY0) apply_unary(ins->op, ins->dt, acc, cnt);
            else apply_binary(ins->op, ins->dt, acc, opnd, ins->rev, cnt);
        }
    }
    memcpy(out, acc, (size_t)(cnt * ak_dt_size(p->out_dt)));
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
