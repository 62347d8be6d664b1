/* kernels/array_kernels.h: the kernels behind lazy arrays (cask/array.h) and the
 * argument blocks the array layer (array/) passes them. Internal: shared by array/,
 * kernels/array_cpu.c and kernels/array_cuda.cu. All structs are plain data, copied as
 * task arguments. */
#ifndef CASK_KERNELS_ARRAY_KERNELS_H
#define CASK_KERNELS_ARRAY_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "cask/cask.h"
#include "kernels/array_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AK_MAX_DIMS 4
#define AK_MAX_IN 15          /* inputs of one task: CASK_MAX_BUFFERS - 1 */
#define AK_MAX_OPS 40         /* instructions of a fused program */
#define AK_MAX_SIDE 6         /* side registers of a program */
#define AK_PIECE 4096         /* min/max/arg partials: one entry per this many elements */

typedef union ak_scalar {
    double f;
    int64_t i;
    uint64_t u;
} ak_scalar;

/* Operand kinds of SET and binary instructions. */
enum { AK_OPND_NONE = 0, AK_OPND_IMM, AK_OPND_SIDE, AK_OPND_INPUT };

/* One instruction of an accumulator machine: acc = op(acc [, operand]). An 8-op chain
 * keeps its value in registers from load to store. Immediates of float type hold the
 * value in imm[0].f (already rounded to float32 for AK_F32), of integer type in .i. */
typedef struct ak_instr {
    uint8_t op;       /* AK_OP_* */
    uint8_t dt;       /* dtype of the result (and of acc/operand for binary ops) */
    uint8_t src_dt;   /* CAST: dtype of acc before */
    uint8_t okind;    /* AK_OPND_* for SET and binary ops */
    uint8_t oidx;     /* side register or input index */
    uint8_t rev;      /* binary: acc = op(operand, acc) */
    uint8_t pad[2];
    ak_scalar imm[3];
} ak_instr;

typedef struct ak_prog {
    int32_t nops;
    int32_t nin;              /* inputs (buffers 0..nin-1) */
    int32_t out_dt;           /* dtype of acc at the end */
    int32_t needs_gidx;       /* uses the global flat index (generators) */
    int32_t in_dt[AK_MAX_IN];
    ak_instr ops[AK_MAX_OPS];
} ak_prog;

/* A chunk: its extent and position in the whole array. ndim 0 is one element. */
typedef struct ak_geom {
    int32_t ndim;
    int32_t pad;
    int64_t n;                 /* elements of the chunk */
    int64_t shape[AK_MAX_DIMS];
    int64_t offset[AK_MAX_DIMS];
    int64_t gshape[AK_MAX_DIMS];
} ak_geom;

/* "array.fused": buffers [0..nin-1] R inputs, [nin] W output (geom.n elements of
 * prog.out_dt). Each element e of the chunk (row-major index j) reads input i at
 * sum_k j_k * in_stride[i][k] (0 along broadcast axes), or at e when in_contig[i]. */
typedef struct ak_fused_args {
    ak_prog prog;
    ak_geom geom;
    int64_t in_stride[AK_MAX_IN][AK_MAX_DIMS];
    uint8_t in_contig[AK_MAX_IN];
    uint8_t need_index;       /* some input is broadcast, or generators need indices */
    void *jit;                /* CUDA builds: the program compiled at run time, or NULL */
} ak_fused_args;

/* Reductions. */
enum {
    AK_RED_SUM_F = 0,   /* float sum: dyadic partials, float64 */
    AK_RED_SUM_I,       /* integer sum: wrapping int64 */
    AK_RED_MIN,
    AK_RED_MAX,
    AK_RED_ARGMIN,
    AK_RED_ARGMAX
};

/* A partial entry of the non-dyadic reductions: value (double for floats, int64 for
 * integers) and, for arg reductions, its index. idx -1 = empty. */
typedef struct ak_red_entry {
    ak_scalar v;
    int64_t idx;
} ak_red_entry;

/* Whether (v, i) should replace entry e in min/max/argmin/argmax: NaN wins (the first
 * NaN), then the smaller (larger) value, ties to the lower index; an empty entry has
 * idx -1. The same on CPU and GPU, and associative: any order gives one answer. */
AK_HD int ak_better(int op, int isf, ak_scalar v, int64_t i, ak_scalar ev, int64_t eidx)
{
    if (eidx < 0) return 1;
    if (i < 0) return 0;
    int lt, eq;
    int want_min = op == AK_RED_MIN || op == AK_RED_ARGMIN;
    if (isf) {
        int vn = v.f != v.f, en = ev.f != ev.f;
        if (vn || en) return vn && (!en || i < eidx);
        lt = want_min ? v.f < ev.f : v.f > ev.f;
        eq = v.f == ev.f;
    } else {
        lt = want_min ? v.i < ev.i : v.i > ev.i;
        eq = v.i == ev.i;
    }
    return lt || (eq && i < eidx);
}

/* "array.reduce_partial": buffers [0..nin-1] R inputs of the program, [nin] W partial.
 * The chunk (f.geom) is seen as outer x len x inner, the reduced axis being len (for a
 * reduction over all axes: outer = inner = 1, len = n, index = global flat index).
 * Partial layouts:
 *   AK_RED_SUM_F: int64 K, int64 node[K] (pos << 6 | level), then double
 *                 [outer][K][inner] (nodes: the dyadic cover of [c0, c0+len) with
 *                 cap AK_DY_CAP);
 *   others:       ak_red_entry [outer][nb][inner], entry b covering axis positions
 *                 [b*AK_PIECE, (b+1)*AK_PIECE) of the chunk. */
typedef struct ak_red_args {
    ak_fused_args f;
    int32_t op;
    int32_t all;
    int32_t src_float;        /* value type of the program result */
    int32_t pad;
    int64_t outer, len, inner;
    int64_t c0;               /* global position of the chunk's first element on the axis */
    int64_t nb;               /* non-dyadic: entries per lane */
    int64_t K;                /* dyadic: nodes */
} ak_red_args;

/* "array.reduce_combine" (CPU): buffers [0..nparts-1] R partials of adjacent segments,
 * in order, [nparts] W: the partial of their union (final = 0), or the result chunk
 * (final = 1; outer*inner elements of out_dt: value, mean = value / divisor, or int64
 * index). */
typedef struct ak_comb_args {
    int32_t op;
    int32_t final;
    int32_t nparts;
    int32_t out_dt;
    int32_t src_float;        /* values of the partials are doubles (else int64) */
    int32_t has_div;          /* final: divide by divisor */
    int64_t outer, inner;
    int64_t nb[AK_MAX_IN];    /* non-dyadic: entries per lane of each part */
    int64_t nb_out;           /* non-dyadic, not final: 1 */
    int64_t K_out;            /* dyadic, not final: nodes of the union's cover */
    int64_t seg0, seg1;       /* dyadic: the union segment */
    double divisor;
} ak_comb_args;

/* Bytes of a dyadic partial. */
static inline size_t ak_dy_bytes(int64_t K, int64_t outer, int64_t inner)
{
    return (size_t)(1 + K) * 8 + (size_t)(outer * K * inner) * 8;
}

/* "array.copy" (rechunk): buffers [0..nin-1] R input blocks, [nin] output (W if first
 * else RW). Copies the overlap of each input block with the output block. */
typedef struct ak_copy_args {
    int32_t ndim;
    int32_t esize;
    int32_t nin;
    int32_t pad;
    int64_t out_shape[AK_MAX_DIMS], out_off[AK_MAX_DIMS];
    int64_t in_shape[AK_MAX_IN][AK_MAX_DIMS], in_off[AK_MAX_IN][AK_MAX_DIMS];
} ak_copy_args;

/* Host transfers (CPU only): "array.gather" copies a block of a row-major host array
 * (whole shape gshape) into buffer 0 (W); "array.scatter" copies buffer 0 (R) into it;
 * "array.npy_read" / "array.npy_write" do the same with a file at byte data_offset. */
/* "array.gather_dev" / "array.scatter_dev" take the same arguments with src / dst in the
 * user's GPU memory (a simulated GPU's: host memory, where the CPU versions run); they
 * run on GPU workers only (array_cuda_dev.cu). */
typedef struct ak_host_args {
    const void *src;          /* gather */
    void *dst;                /* scatter */
    const char *path;         /* npy: file (kept alive by the caller during the run) */
    int64_t data_offset;
    int32_t esize;
    int32_t pad;
    ak_geom geom;             /* block and whole shape */
} ak_host_args;

/* "array.matmul": buffers [0] R A tile (m x k), [1] R B tile (k x n), [2] C tile
 * (m x n): C = A B (beta 0, W) or C += A B (beta 1, RW). */
typedef struct ak_mm_args {
    int32_t dt;
    int32_t beta;
    int64_t m, n, k;
    void *blas;               /* ak_blas_cache of the array context (CUDA builds) */
} ak_mm_args;

/* The CPU BLAS (array_cpu_matmul.c): its name, or NULL in a build without one; its
 * process-wide thread count (1 without one; asking opens the library, kernels/blas_load.h).
 * Set it only while no tile runs. */
const char *ak_blas_name(void);
/* What cask did as the first product opened OpenBLAS (the library fell back to its
 * generic core on a CPU with wider vectors: cask had it choose again; or it could not be
 * opened), a sentence for the log; *warn 1 when the generic kernels or the loop still
 * run. NULL when there was nothing to say, no BLAS, or before the first product. */
const char *ak_blas_core_note(int *warn);
int ak_blas_threads_get(void);
void ak_blas_threads_set(int n);

/* The kernels, registered once per array context. */
typedef struct ak_kernels {
    cask_kernel *fused;
    cask_kernel *reduce_partial;
    cask_kernel *reduce_combine;
    cask_kernel *copy;
    cask_kernel *gather;
    cask_kernel *scatter;
    cask_kernel *gather_dev;     /* the same from / to a whole array in GPU memory */
    cask_kernel *scatter_dev;
    cask_kernel *npy_read;
    cask_kernel *npy_write;
    cask_kernel *matmul;
} ak_kernels;

cask_status ak_kernels_register(cask_runtime *rt, ak_kernels *out);

/* Elements the CPU interpreter evaluates at a time (its registers are tiles). */
#define AK_TILE 1024

/* Scratch of the CPU interpreter (about 90 KiB), one per running task. */
typedef struct ak_scratch ak_scratch;
ak_scratch *ak_scratch_new(void);
void ak_scratch_free(ak_scratch *s);

/* CPU implementations (array_cpu.c, array_cpu_reduce.c). */
cask_status ak_cpu_fused(cask_task_ctx *ctx);
cask_status ak_cpu_reduce_partial(cask_task_ctx *ctx);
cask_status ak_cpu_reduce_combine(cask_task_ctx *ctx);
cask_status ak_cpu_copy(cask_task_ctx *ctx);
cask_status ak_cpu_gather(cask_task_ctx *ctx);
cask_status ak_cpu_scatter(cask_task_ctx *ctx);
cask_status ak_cpu_npy_read(cask_task_ctx *ctx);
cask_status ak_cpu_npy_write(cask_task_ctx *ctx);
cask_status ak_cpu_matmul(cask_task_ctx *ctx);

/* The interpreter, reused by the reduction partials: evaluates a program on the
 * elements [e0, e0 + cnt) (cnt <= AK_TILE) of the chunk; the result (cnt values of
 * prog.out_dt, packed) goes to out. */
void ak_cpu_eval_tile(const ak_fused_args *a, void *const *in, int64_t e0, int64_t cnt,
                      void *out, ak_scratch *s);
/* The same, but the result may be left where it is: returns out, or the input or
 * scratch buffer that holds it (valid until the next call with s). */
const void *ak_cpu_eval_tile_ref(const ak_fused_args *a, void *const *in, int64_t e0,
                                 int64_t cnt, void *out, ak_scratch *s);
/* Global flat index of element e of the chunk g. */
int64_t ak_gidx(const ak_geom *g, int64_t e);

#ifdef CASK_HAVE_CUDA
/* CUDA implementations (array_cuda.cu). */
cask_status ak_cuda_fused(cask_task_ctx *ctx);
cask_status ak_cuda_reduce_partial(cask_task_ctx *ctx);
cask_status ak_cuda_copy(cask_task_ctx *ctx);
cask_status ak_cuda_gather_dev(cask_task_ctx *ctx);
cask_status ak_cuda_scatter_dev(cask_task_ctx *ctx);
cask_status ak_cuda_matmul(cask_task_ctx *ctx);
/* cuBLAS handles per stream, owned by an array context. */
void *ak_blas_cache_create(void);
void ak_blas_cache_destroy(void *cache);
/* Run-time compiled programs (array_jit.cu), owned by an array context: the kernel of a
 * program (compiled on first use; NULL without NVRTC or if compilation failed), and its
 * launch (0, or -1: interpret instead). */
void *ak_jit_cache_create(void);
void ak_jit_cache_destroy(void *cache);
void *ak_jit_kernel(void *cache, const ak_prog *p, int need_index);
int ak_jit_launch(void *kernel, const ak_fused_args *a, const void *const *in, void *out,
                  void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
