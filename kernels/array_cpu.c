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
#include "kernels/array_cpu_loops.h"

struct ak_scratch {
    _Alignas(64) unsigned char acc[2][AK_TILE * 8];
    _Alignas(64) unsigned char side[AK_MAX_SIDE][AK_TILE * 8];
    _Alignas(64) unsigned char opnd[AK_TILE * 8];
    _Alignas(64) int64_t g[AK_TILE];
    const ak_loops *loops;
};

ak_scratch *ak_scratch_new(void)
{
    ak_scratch *s = aligned_alloc(64, sizeof(ak_scratch));
    if (s) s->loops = ak_loops_pick();
    return s;
}
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

/* The typed loops: the widest build of array_cpu_loops.c this CPU runs, at most the one
 * CASK_CPU_ISA names ("baseline", "avx2", "avx512"; read once per task). */
const ak_loops *ak_loops_pick(void)
{
    static const ak_loops base = {"baseline", ak_loop_unary_base, ak_loop_binary_base,
                                  ak_loop_cast_base};
#if defined(__x86_64__)
    static const ak_loops avx2 = {"AVX2", ak_loop_unary_avx2, ak_loop_binary_avx2,
                                  ak_loop_cast_avx2};
    static const ak_loops avx512 = {"AVX-512", ak_loop_unary_avx512, ak_loop_binary_avx512,
                                    ak_loop_cast_avx512};
    const char *cap = getenv("CASK_CPU_ISA");
    int most = !cap || !*cap ? 2 : !strcmp(cap, "avx512") ? 2 : !strcmp(cap, "avx2") ? 1 : 0;
    __builtin_cpu_init();
    if (most >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
        return &avx512;
    if (most >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &avx2;
#endif
    return &base;
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
    const ak_loops *lp = s->loops;
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
            lp->cast(ins->src_dt, ins->dt, cur, dst, cnt);
            cur = dst;
            break;
        }
        case AK_OP_PUT:
            if (s->side[ins->oidx] != cur)
                memcpy(s->side[ins->oidx], cur, (size_t)(cnt * ak_dt_size(ins->dt)));
            break;
        default:
            if (ins->op < AK_OP_BINARY0)
                lp->unary(ins->op, ins->dt, cur, dst, cnt);
            else
                lp->binary(ins->op, ins->dt, cur, ins->okind == AK_OPND_IMM ? NULL : opnd,
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
        (st = reg(rt, "array.gather_dev", ak_cpu_gather, CUDA_IMPL(ak_cuda_gather_dev),
                  &k->gather_dev)) ||
        (st = reg(rt, "array.scatter_dev", ak_cpu_scatter, CUDA_IMPL(ak_cuda_scatter_dev),
                  &k->scatter_dev)) ||
        (st = reg(rt, "array.npy_read", ak_cpu_npy_read, NULL, &k->npy_read)) ||
        (st = reg(rt, "array.npy_write", ak_cpu_npy_write, NULL, &k->npy_write)) ||
        (st = reg(rt, "array.matmul", ak_cpu_matmul, CUDA_IMPL(ak_cuda_matmul), &k->matmul)))
        return st;
    return CASK_OK;
}
