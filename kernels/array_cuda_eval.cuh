/* kernels/array_cuda_eval.cuh: the device side shared by the CUDA array kernels
 * (array_cuda.cu, array_cuda_reduce.cu): the accumulator, typed loads and stores, index
 * arithmetic, and the interpreter of fused programs (eval_prog). Internal. */
#ifndef CASK_KERNELS_ARRAY_CUDA_EVAL_CUH
#define CASK_KERNELS_ARRAY_CUDA_EVAL_CUH

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/array_kernels.h"

#define AK_THREADS 256

struct ak_ptrs {
    const void *in[AK_MAX_IN];
    void *out;
};

/* The accumulator of one element: one 64-bit register holding the bits of its current
 * dtype (float32 in the low half), so that a dtype change costs nothing. */
struct ak_acc {
    unsigned long long b;
    __device__ __forceinline__ float f() const { return __uint_as_float((unsigned)b); }
    __device__ __forceinline__ double d() const { return __longlong_as_double((long long)b); }
    __device__ __forceinline__ long long i() const { return (long long)b; }
    __device__ __forceinline__ void setf(float x) { b = __float_as_uint(x); }
    __device__ __forceinline__ void setd(double x) { b = (unsigned long long)__double_as_longlong(x); }
    __device__ __forceinline__ void seti(long long x) { b = (unsigned long long)x; }
};

static __device__ __forceinline__ void load_typed(int dt, const void *p, int64_t idx, ak_acc &o)
{
    switch (dt) {
    case AK_F32: o.setf(((const float *)p)[idx]); break;
    case AK_F64: o.setd(((const double *)p)[idx]); break;
    case AK_I32: o.seti(((const int32_t *)p)[idx]); break;
    case AK_U32: o.seti(((const uint32_t *)p)[idx]); break;
    default: o.seti(((const long long *)p)[idx]); break;
    }
}

static __device__ __forceinline__ void store_typed(int dt, void *p, int64_t idx, const ak_acc &a)
{
    switch (dt) {
    case AK_F32: ((float *)p)[idx] = a.f(); break;
    case AK_F64: ((double *)p)[idx] = a.d(); break;
    case AK_I32: ((int32_t *)p)[idx] = (int32_t)a.i(); break;
    case AK_U32: ((uint32_t *)p)[idx] = (uint32_t)a.i(); break;
    default: ((long long *)p)[idx] = a.i(); break;
    }
}

static __device__ __forceinline__ void unravel(const ak_geom &g, int64_t e, int64_t *j)
{
    for (int k = g.ndim - 1; k >= 0; k--) {
        j[k] = e % g.shape[k];
        e /= g.shape[k];
    }
}

static __device__ __forceinline__ int64_t flat_index(const ak_geom &g, const int64_t *j)
{
    int64_t f = 0;
    for (int k = 0; k < g.ndim; k++) f = f * g.gshape[k] + g.offset[k] + j[k];
    return f;
}

static __device__ __forceinline__ int64_t gidx_of(const ak_geom &g, int64_t e)
{
    int64_t j[AK_MAX_DIMS];
    unravel(g, e, j);
    return flat_index(g, j);
}

/* The library functions and generators are large: called out of line, once per element,
 * so that the interpreter (unrolled over V elements and every dtype) stays small enough
 * for the instruction cache. The cheap operations are inlined. */
static __device__ __noinline__ float f32_heavy(int op, float x, float y)
{
    return op == AK_OP_POW ? powf(x, y) : ak_f32_un(op, x);
}

static __device__ __noinline__ double f64_heavy(int op, double x, double y)
{
    return op == AK_OP_POW ? pow(x, y) : ak_f64_un(op, x);
}

static __device__ __noinline__ double gen_heavy(int op, int dt, uint64_t seed, uint64_t g,
                                                double p1, double p2)
{
    if (op == AK_OP_RAND_N) return ak_rand_normal(seed, g, p1, p2);
    if (dt == AK_F32) return ak_rand_uniform_f32(seed, g, (float)p1, (float)p2);
    return ak_rand_uniform(seed, g, p1, p2);
}


/* Evaluates the program for elements e[0..V) into acc[0..V). Each instruction is one
 * uniform branch on (op, dtype) followed by straight-line code over the V elements. */
#define CODE(op, dt) ((op) * 8 + (dt))
#define FOR_V _Pragma("unroll") for (int v = 0; v < V; v++)
#define UN_F(OPC)                                                                      \
    case CODE(OPC, AK_F32): FOR_V acc[v].setf(ak_f32_un(OPC, acc[v].f())); break;     \
    case CODE(OPC, AK_F64): FOR_V acc[v].setd(ak_f64_un(OPC, acc[v].d())); break;
#define UN_H(OPC)                                                                      \
    case CODE(OPC, AK_F32): FOR_V acc[v].setf(ak_f32_un(OPC, acc[v].f())); break;     \
    case CODE(OPC, AK_F64): FOR_V acc[v].setd(f64_heavy(OPC, acc[v].d(), 0.0)); break;
#define BIN_C(OPC, F32, F64)                                                           \
    case CODE(OPC, AK_F32): FOR_V acc[v].setf(F32(OPC, acc[v].f(), o[v].f())); break;  \
    case CODE(OPC, AK_F64): FOR_V acc[v].setd(F64(OPC, acc[v].d(), o[v].d())); break;
#define BIN_F(OPC, F32, F64)                                                           \
    case CODE(OPC, AK_F32):                                                            \
        FOR_V {                                                                        \
            float x = acc[v].f(), y = o[v].f();                                        \
            acc[v].setf(rev ? F32(OPC, y, x) : F32(OPC, x, y));                        \
        }                                                                              \
        break;                                                                         \
    case CODE(OPC, AK_F64):                                                            \
        FOR_V {                                                                        \
            double x = acc[v].d(), y = o[v].d();                                       \
            acc[v].setd(rev ? F64(OPC, y, x) : F64(OPC, x, y));                        \
        }                                                                              \
        break;

template <int V, bool IDX = true>
static __device__ __forceinline__ void eval_prog(const ak_fused_args &A, const ak_ptrs &P,
                                                 const int64_t *e, ak_acc *acc)
{
    const ak_prog &p = A.prog;
    const int nd = A.geom.ndim;
    unsigned long long side[AK_MAX_SIDE][V];
    int64_t mi[IDX ? V : 1][AK_MAX_DIMS];
    int64_t g[IDX ? V : 1];
    if (IDX && A.need_index) {
        FOR_V {
            unravel(A.geom, e[v], mi[v]);
            g[v] = flat_index(A.geom, mi[v]);
        }
    }
    for (int pc = 0; pc < p.nops; pc++) {
        const ak_instr &ins = p.ops[pc];
        /* the 8 header bytes in one constant-cache load */
        const unsigned long long w = *reinterpret_cast<const unsigned long long *>(&ins);
        const int op = (int)(w & 0xff), dt = (int)((w >> 8) & 0xff), okind = (int)((w >> 24) & 0xff);
        const int oidx = (int)((w >> 32) & 0xff), rev = (int)((w >> 40) & 0xff);
        ak_acc o[V];
        if (okind == AK_OPND_IMM) {
            unsigned long long bits = dt == AK_F32 ? (unsigned long long)__float_as_uint((float)ins.imm[0].f)
                                                   : ins.imm[0].u;
            FOR_V o[v].b = bits;
        } else if (okind == AK_OPND_SIDE) {
            FOR_V o[v].b = side[oidx][v];
        } else if (okind == AK_OPND_INPUT) {
            const int k = oidx;
            const void *src = P.in[k];
            if (!IDX || A.in_contig[k]) {
                FOR_V load_typed(dt, src, e[v], o[v]);
            } else {
                FOR_V {
                    int64_t idx = 0;
                    for (int a = 0; a < nd; a++) idx += mi[IDX ? v : 0][a] * A.in_stride[k][a];
                    load_typed(dt, src, idx, o[v]);
                }
            }
        }
        if (op < AK_OP_UNARY0) {
            switch (op) {
            case AK_OP_SET:
                FOR_V acc[v] = o[v];
                break;
            case AK_OP_ARANGE:
                FOR_V {
                    if (dt == AK_F32 || dt == AK_F64) {
                        double x = AK_DADD(ins.imm[0].f, AK_DMUL((double)g[IDX ? v : 0], ins.imm[1].f));
                        if (dt == AK_F32) acc[v].setf((float)x);
                        else acc[v].setd(x);
                    } else {
                        acc[v].seti(ak_int_norm(dt, ins.imm[0].u + (uint64_t)g[IDX ? v : 0] * ins.imm[1].u));
                    }
                }
                break;
            case AK_OP_RAND_U:
            case AK_OP_RAND_N:
                FOR_V {
                    double x = gen_heavy(op, dt, ins.imm[0].u, (uint64_t)g[IDX ? v : 0],
                                         ins.imm[1].f, ins.imm[2].f);
                    if (dt == AK_F32) acc[v].setf((float)x);
                    else acc[v].setd(x);
                }
                break;
            case AK_OP_CAST: {
                const int sd = (int)((w >> 16) & 0xff);
                FOR_V {
                    if (sd == AK_F32 || sd == AK_F64) {
                        double x = sd == AK_F32 ? (double)acc[v].f() : acc[v].d();
                        if (dt == AK_F32) acc[v].setf((float)x);
                        else if (dt == AK_F64) acc[v].setd(x);
                        else acc[v].seti(ak_float_to_int(dt, x));
                    } else {
                        long long x = acc[v].i();
                        if (dt == AK_F32) acc[v].setf((float)x);
                        else if (dt == AK_F64) acc[v].setd((double)x);
                        else acc[v].seti(ak_int_norm(dt, (uint64_t)x));
                    }
                }
                break;
            }
            default: /* AK_OP_PUT */
                FOR_V side[oidx][v] = acc[v].b;
            }
            continue;
        }
        if (dt == AK_F32 || dt == AK_F64) {
            switch (CODE(op, dt)) {
            UN_F(AK_OP_NEG)
            UN_F(AK_OP_ABS)
            UN_F(AK_OP_SQRT)
            UN_F(AK_OP_SQUARE)
            UN_H(AK_OP_EXP)
            UN_H(AK_OP_LOG)
            UN_H(AK_OP_SIN)
            UN_H(AK_OP_COS)
            BIN_C(AK_OP_ADD, ak_f32_bin, ak_f64_bin)   /* commutative: rev changes nothing */
            BIN_F(AK_OP_SUB, ak_f32_bin, ak_f64_bin)
            BIN_C(AK_OP_MUL, ak_f32_bin, ak_f64_bin)
            BIN_F(AK_OP_DIV, ak_f32_bin, ak_f64_bin)
            BIN_F(AK_OP_MIN, ak_f32_bin, ak_f64_bin)
            BIN_F(AK_OP_MAX, ak_f32_bin, ak_f64_bin)
            BIN_F(AK_OP_POW, f32_heavy, f64_heavy)
            default: break;
            }
        } else if (op < AK_OP_BINARY0) {
            FOR_V acc[v].seti(ak_int_un(op, dt, acc[v].i()));
        } else {
            FOR_V {
                long long x = acc[v].i(), y = o[v].i();
                acc[v].seti(rev ? ak_int_bin(op, dt, y, x) : ak_int_bin(op, dt, x, y));
            }
        }
    }
}

static inline unsigned grid_for(int64_t items, int64_t per_block)
{
    int64_t b = (items + per_block - 1) / per_block;
    if (b < 1) b = 1;
    if (b > 65535) b = 65535;
    return (unsigned)b;
}

static inline cask_status launched(cask_task_ctx *ctx, const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return CASK_OK;
}

static inline cudaStream_t stream_of(cask_task_ctx *ctx) { return (cudaStream_t)cask_task_cuda_stream(ctx); }

#endif
