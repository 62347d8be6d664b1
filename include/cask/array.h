/* cask/array.h: lazy chunked N-dimensional arrays, a layer above the task API.
 *
 * An array is a node of an expression DAG: building one (from host memory, a .npy file,
 * a generator, or an operation on other arrays) only records what it is. Nothing runs
 * until cask_array_compute / cask_array_persist, which cull what the requested results
 * do not need, fuse chains of elementwise operations into one task per chunk, and run
 * the tasks through the runtime (CPU workers and GPUs). Identical sub-expressions are
 * shared: building the same operation on the same inputs twice returns the same node.
 *
 * Layout: row-major (C order). Each axis is cut into chunks of a fixed size (the last
 * one may be shorter, "ragged"); a chunk is stored as one contiguous row-major block.
 *
 * Ownership: every function that returns a cask_array gives the caller one reference;
 * drop it with cask_array_release. Operations keep their own references to their
 * inputs, so inputs may be released as soon as the expressions using them are built.
 *
 * Thread safety: a context and its arrays are used from one thread at a time.
 *
 * Numerics (what is promised):
 *   - Elementwise operations on float32 are evaluated in float32, on float64 in float64,
 *     on integers in wrapping two's-complement arithmetic; integer division truncates and
 *     x/0 is 0. min/max propagate NaN. A fused chain gives bitwise the same values as the
 *     same operations run one task each, on the same kind of device.
 *   - Random arrays are a pure function of (seed, distribution, dtype, global element
 *     index): the same for any chunking, worker count and device (normal variates may
 *     differ in the last bit between CPU and GPU math libraries).
 *   - sum and mean of floats accumulate in float64 over a fixed binary tree of the global
 *     index along the reduced axis (pairwise sums of aligned power-of-two ranges; see
 *     docs/arrays.md), rounding once to the result type at the end. The result is
 *     bitwise identical for any chunking, worker count and mix of CPU and GPU workers.
 *     A full sum of an N-D array sums the last axis first, then the next, and so on.
 *     Integer sums are exact in wrapping int64. min/max/argmin/argmax are exact; ties go
 *     to the lowest index.
 *   - matmul is deterministic for a given chunking (tile products accumulated in the
 *     order of the inner chunk index), not across chunkings.
 */
#ifndef CASK_ARRAY_H
#define CASK_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "cask/distributed.h"
#include "cask/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CASK_ARRAY_MAX_DIMS 4
/* Reduce over every axis (cask_array_reduce's axis). */
#define CASK_AXIS_ALL (-100)

typedef enum cask_dtype {
    CASK_FLOAT32 = 0,
    CASK_FLOAT64,
    CASK_INT32,
    CASK_INT64,
    CASK_UINT32,
    CASK_DTYPE_COUNT_
} cask_dtype;

/* Bytes per element (0 for an unknown dtype). */
size_t cask_dtype_size(cask_dtype dt);
/* "float32", ... ("?" if unknown). */
const char *cask_dtype_name(cask_dtype dt);

/* The context arrays live in: kernels, the table of shared sub-expressions, options and
 * the statistics of the last run. Opaque. */
typedef struct cask_array_ctx cask_array_ctx;
/* A lazy array (a node of the expression DAG). Opaque, reference counted. */
typedef struct cask_array cask_array;

/* Creates a context on rt (registers the array kernels with rt). rt must outlive the
 * context. Several contexts may share a runtime. Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. */
cask_status cask_array_ctx_create(cask_runtime *rt, cask_array_ctx **out);

/* Frees the context and every array still alive in it (their persisted chunks too).
 * Arrays of the context must not be used afterwards. Call it before cask_shutdown of
 * its runtime, and not while a compute of it runs. ctx may be NULL. */
cask_status cask_array_ctx_destroy(cask_array_ctx *ctx);

/* Options of a context (cask_array_ctx_set). */
typedef enum cask_array_option {
    CASK_ARRAY_OPT_FUSE = 0,       /* 1 (default): fuse elementwise chains; 0: one task
                                      per operation and chunk */
    CASK_ARRAY_OPT_WHERE,          /* cask_where for the array tasks that have both a CPU
                                      and a GPU implementation. Default CASK_WHERE_ANY */
    CASK_ARRAY_OPT_CSE,            /* 1 (default): share identical sub-expressions */
    CASK_ARRAY_OPT_COMBINE_ARITY,  /* partial results one reduction task combines,
                                      2..15. Default 8 */
    CASK_ARRAY_OPT_JIT,            /* 1 (default): on GPUs, compile each fused program to
                                      its own kernel at run time (NVRTC, when the build
                                      has it); 0: interpret programs. Same results. */
    CASK_ARRAY_OPT_BLAS_THREADS    /* threads of each CPU tile product (the BLAS's own):
                                      0 (default) decides per run: 1 when a product has
                                      at least as many output tiles as CPU workers (the
                                      workers run tiles in parallel), else workers /
                                      tiles. Same results either way. */
} cask_array_option;
cask_status cask_array_ctx_set(cask_array_ctx *ctx, cask_array_option opt, int64_t value);

/* The message of the context's last failure ("" if none); valid until the next call. */
const char *cask_array_ctx_error(const cask_array_ctx *ctx);

/* ---- creating arrays ----
 * shape: ndim sizes, each >= 1 (ndim 0..CASK_ARRAY_MAX_DIMS). chunks: ndim chunk sizes
 * (>= 1; larger than the axis means one chunk), or NULL to let cask choose (about
 * 8 Mi elements per chunk, cut along the leading axes). */

/* Wraps host memory holding a row-major array. Not copied: data must stay valid and
 * unchanged while the array (or anything built from it that is not persisted) exists. */
cask_status cask_array_from_host(cask_array_ctx *ctx, const void *data, cask_dtype dtype,
                                 int ndim, const int64_t *shape, const int64_t *chunks,
                                 cask_array **out);

/* Wraps GPU memory holding a row-major array: dev_ptr is memory of GPU device (the
 * runtime's GPU index = the CUDA device ordinal; host memory for a simulated GPU),
 * e.g. a CuPy or PyTorch tensor's data. Not copied where the layout allows: when every
 * chunk is one contiguous piece of the array (chunks cut along the first axis only, as
 * with chunks NULL or {c, shape[1], ...}), each chunk is a view of dev_ptr
 * (cask_data_register_device) that tasks on that GPU read in place, and a task on
 * another GPU gets a peer copy; other chunks are gathered by device-to-device copy
 * tasks when computed. Only CPU tasks copy to the host. The caller keeps ownership:
 * dev_ptr must stay valid, and unchanged, while the array (or anything built from it
 * that is not persisted) exists, and at least until every compute using it returned;
 * cask never writes or frees it. Persisting such an array (chunked contiguously) keeps
 * the views. Errors: CASK_ERR_INVALID (NULL pointer, a runtime without GPUs, no GPU
 * device, bad dtype, shape or chunks: message in cask_array_ctx_error), CASK_ERR_NOMEM. */
cask_status cask_array_from_device(cask_array_ctx *ctx, const void *dev_ptr, int device,
                                   cask_dtype dtype, int ndim, const int64_t *shape,
                                   const int64_t *chunks, cask_array **out);

/* An array read lazily, chunk by chunk, from a .npy file (versions 1-3, little-endian
 * <f4 <f8 <i4 <i8 <u4, C order). The header is read now (CASK_ERR_IO, CASK_ERR_FORMAT,
 * CASK_ERR_UNSUPPORTED); the data when computed. The file must not change meanwhile. */
cask_status cask_array_from_npy(cask_array_ctx *ctx, const char *path,
                                const int64_t *chunks, cask_array **out);

/* Every element = value (converted to dtype). */
cask_status cask_array_full(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                            const int64_t *shape, const int64_t *chunks, double value,
                            cask_array **out);
cask_status cask_array_zeros(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                             const int64_t *shape, const int64_t *chunks, cask_array **out);
cask_status cask_array_ones(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                            const int64_t *shape, const int64_t *chunks, cask_array **out);

/* 1-D: element i = start + i * step (computed in float64 for float types, int64 for
 * integer types, then converted). */
cask_status cask_array_arange(cask_array_ctx *ctx, cask_dtype dtype, int64_t n,
                              double start, double step, int64_t chunk, cask_array **out);

/* Uniform on [lo, hi) and normal (mean, stddev) random arrays of CASK_FLOAT32 or
 * CASK_FLOAT64, from a counter-based generator (Philox4x32-10) keyed by seed and the
 * global element index: independent of chunking (see Numerics above). */
cask_status cask_array_random_uniform(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                                      const int64_t *shape, const int64_t *chunks,
                                      uint64_t seed, double lo, double hi,
                                      cask_array **out);
cask_status cask_array_random_normal(cask_array_ctx *ctx, cask_dtype dtype, int ndim,
                                     const int64_t *shape, const int64_t *chunks,
                                     uint64_t seed, double mean, double stddev,
                                     cask_array **out);

/* ---- references and properties ---- */

/* Adds a reference (returns a). */
cask_array *cask_array_retain(cask_array *a);
/* Drops a reference; the array is freed with its last one. a may be NULL. */
void cask_array_release(cask_array *a);

typedef struct cask_array_meta {
    cask_dtype dtype;
    int ndim;
    int64_t shape[CASK_ARRAY_MAX_DIMS];
    int64_t chunks[CASK_ARRAY_MAX_DIMS];   /* chunk size per axis (last may be ragged) */
    int64_t nchunks[CASK_ARRAY_MAX_DIMS];  /* chunks per axis */
    int64_t size;                          /* elements */
    int64_t total_chunks;
    int persisted;                         /* 1 once persisted */
} cask_array_meta;
cask_status cask_array_get_meta(const cask_array *a, cask_array_meta *meta);

/* ---- elementwise operations (lazy) ---- */

typedef enum cask_unary_op {
    CASK_NEG = 0, CASK_ABS, CASK_SQRT, CASK_EXP, CASK_LOG, CASK_SIN, CASK_COS, CASK_SQUARE,
    CASK_UNARY_COUNT_
} cask_unary_op;

typedef enum cask_binary_op {
    CASK_ADD = 0, CASK_SUB, CASK_MUL, CASK_DIV, CASK_MIN, CASK_MAX, CASK_POW,
    CASK_BINARY_COUNT_
} cask_binary_op;

/* Result dtype: neg/abs/square keep it; sqrt/exp/log/sin/cos of integers give float64. */
cask_status cask_array_unary(cask_unary_op op, cask_array *a, cask_array **out);

/* Numpy broadcasting: shapes are aligned at their last axis; an axis of size 1 (or a
 * missing leading axis) is repeated. The result dtype is the larger of the two in the
 * order int32 < uint32 < int64 < float32 < float64. Chunks come from the operands (an
 * operand chunked differently along a shared axis is rechunked to the first's chunks).
 * Errors: CASK_ERR_INVALID (shapes do not broadcast, arrays of different contexts). */
cask_status cask_array_binary(cask_binary_op op, cask_array *a, cask_array *b,
                              cask_array **out);
/* a op scalar, or scalar op a when scalar_first. The result keeps a's dtype. */
cask_status cask_array_binary_scalar(cask_binary_op op, cask_array *a, double scalar,
                                     int scalar_first, cask_array **out);

/* Converts to dtype: float to integer truncates toward zero and saturates at the
 * integer type's range (NaN gives 0); integer to integer wraps. */
cask_status cask_array_astype(cask_array *a, cask_dtype dtype, cask_array **out);

/* ---- reductions (lazy) ---- */

typedef enum cask_reduce_op {
    CASK_REDUCE_SUM = 0, CASK_REDUCE_MIN, CASK_REDUCE_MAX, CASK_REDUCE_MEAN,
    CASK_REDUCE_ARGMIN, CASK_REDUCE_ARGMAX, CASK_REDUCE_VAR, CASK_REDUCE_STD,
    CASK_REDUCE_COUNT_
} cask_reduce_op;

/* Reduces along axis (negative counts from the end) or over CASK_AXIS_ALL, removing
 * it. Result dtype: sum of floats keeps the float type, of integers gives int64;
 * mean/var/std give the float type (float64 for integers); min/max keep the dtype;
 * argmin/argmax give int64 (the index along the axis, or the flat row-major index
 * for CASK_AXIS_ALL). var/std use ddof 0 (cask_array_var for another ddof). Computed
 * as a tree of partial reductions (see Numerics). */
cask_status cask_array_reduce(cask_reduce_op op, cask_array *a, int axis, cask_array **out);
/* Variance / standard deviation with ddof: sum((x - mean)^2) / (n - ddof), two passes,
 * all in float64 and rounded at the end. */
cask_status cask_array_var(cask_array *a, int axis, int ddof, cask_array **out);
cask_status cask_array_std(cask_array *a, int axis, int ddof, cask_array **out);

/* ---- structure ---- */

/* Matrix product of two 2-D arrays (m x k) @ (k x n), computed by tiles (cuBLAS on
 * GPU, a blocked loop on CPU). Both are converted to their common dtype; b is rechunked
 * along axis 0 to a's chunks along axis 1 if they differ. */
cask_status cask_array_matmul(cask_array *a, cask_array *b, cask_array **out);

/* ---- dense linear algebra (lazy; docs/linalg.md) ---- */

/* The Cholesky factor L of a symmetric positive definite matrix a (A = L L^T, L lower
 * triangular, zeros above the diagonal, as numpy.linalg.cholesky), by tiles: a's chunks
 * are the tiles and must be square (the same size along both axes; the last row and
 * column of tiles may be smaller). Only the lower triangle of a is read. Right-looking
 * tile algorithm in sequential task flow: for each k, POTRF of tile (k,k), TRSM of the
 * tiles below it, SYRK of the diagonal tiles and GEMM of the others to their right; a
 * task with both a CPU (OpenBLAS's LAPACK and BLAS) and a GPU (cuSOLVER, cuBLAS) kernel
 * runs where the scheduler's cost model expects it to finish first, and tasks on the
 * critical path (the factorization's next panel) have the higher priorities. Each tile's
 * updates are applied in order of k, so the bytes are the same for any worker count.
 * Errors, now: CASK_ERR_INVALID (not 2-D, not square, tiles not square, a dtype other
 * than float32 or float64: message in cask_array_ctx_error). When computed:
 * CASK_ERR_NOT_SPD, with a message naming the first tile whose diagonal block failed and
 * the order of the leading minor of a (1-based, as LAPACK's info) that is not positive
 * or not finite; the graph stops there. */
cask_status cask_array_cholesky(cask_array *a, cask_array **out);

/* Solves A x = b for x given the Cholesky factor l of A (cask_array_cholesky): forward
 * substitution with L, then backward with L^T, by tiles (TRSM and GEMM tasks). b is 1-D
 * of length n or 2-D n x k (k right-hand sides); its chunks along axis 0 become l's
 * tiles' (rechunked if they differ). x has b's shape and l's dtype. Errors:
 * CASK_ERR_INVALID (shapes, dtypes, l not 2-D square with square tiles). */
cask_status cask_array_cho_solve(cask_array *l, cask_array *b, cask_array **out);

/* The sub-array [start[i], stop[i]) along each axis. Must be chunk-aligned: each start
 * a multiple of the axis' chunk size, each stop a multiple of it or the axis' size
 * (CASK_ERR_INVALID otherwise; rechunk first). Costs no task: the slice's chunks are the
 * input's chunks, and only the chunks the slice covers are ever computed. */
cask_status cask_array_slice(cask_array *a, const int64_t *start, const int64_t *stop,
                             cask_array **out);

/* The same values with new chunk sizes (copy tasks, each output chunk assembled from
 * the input chunks it overlaps). */
cask_status cask_array_rechunk(cask_array *a, const int64_t *chunks, cask_array **out);

/* Inserts an axis of size 1 at position axis (0..ndim), e.g. to broadcast a reduction
 * back against its input. No task. */
cask_status cask_array_expand_dims(cask_array *a, int axis, cask_array **out);

/* ---- user kernels on blocks ---- */

/* What a user kernel run by map_blocks / blockwise sees, at the start of its argument
 * bytes (get it with cask_array_task_block). Buffers 0..nin-1 are the input blocks
 * (row-major, shapes below), buffer nin is the output block to write. */
typedef struct cask_array_block_desc {
    cask_dtype dtype;
    int ndim;
    int input;                               /* which input array (blockwise) */
    int64_t shape[CASK_ARRAY_MAX_DIMS];      /* of this block */
    int64_t offset[CASK_ARRAY_MAX_DIMS];     /* global index of its first element */
} cask_array_block_desc;

typedef struct cask_array_block {
    int nin;                                 /* input buffers */
    cask_array_block_desc out;               /* the output block */
    int64_t out_chunk[CASK_ARRAY_MAX_DIMS];  /* its chunk index */
    cask_array_block_desc in[CASK_MAX_BUFFERS - 1];
    size_t user_args_size;                   /* bytes of user arguments that follow */
} cask_array_block;

/* Inside a user kernel: the block description, and (if not NULL) the user's argument
 * bytes given to map_blocks / blockwise. NULL if the task was not made by them. */
const cask_array_block *cask_array_task_block(const cask_task_ctx *tctx,
                                              const void **user_args, size_t *user_size);

/* Runs kernel once per output chunk. Inputs are broadcast together as for
 * cask_array_binary (their dtypes kept); the output has their broadcast shape and
 * chunks and dtype out_dtype. Buffer i is input i's block for the chunk (a broadcast
 * input gives its own, smaller block), buffer nin the output block (CASK_WRITE).
 * args (args_size bytes, may be NULL) are copied. nin is 0..CASK_MAX_BUFFERS-1. */
cask_status cask_array_map_blocks(cask_kernel *kernel, int nin, cask_array *const *in,
                                  cask_dtype out_dtype, const void *args, size_t args_size,
                                  cask_array **out);

/* Index-notation blocks, as dask.array.blockwise: out_index names the output axes with
 * letters ("ij"), in_index[i] those of input i ("ik", "kj"). Letters of the output must
 * appear in some input; the output's chunks along a letter are that input axis'
 * chunks (inputs sharing a letter must agree on its size and chunks). Letters absent
 * from the output are contracted: the kernel then gets every block along them, for
 * each input in order, its blocks in row-major order of its contracted letters (at most
 * CASK_MAX_BUFFERS-1 blocks in all). Buffer order and descriptions as map_blocks.
 * Example: "ij" from "ik","kj" gives a kernel that sees row i of a's blocks and column j
 * of b's blocks. */
cask_status cask_array_blockwise(cask_kernel *kernel, const char *out_index, int nin,
                                 cask_array *const *in, const char *const *in_index,
                                 cask_dtype out_dtype, const void *args, size_t args_size,
                                 cask_array **out);

/* ---- running ---- */

/* Computes a into host memory out (row-major, cask_array_meta.size elements of its
 * dtype; bytes is the space at out, CASK_ERR_INVALID if too small). Blocks until done.
 * Errors: those of the graph (cask_array_ctx_error says which task failed). */
cask_status cask_array_compute(cask_array *a, void *out, size_t bytes);

/* Computes a into GPU memory: dev_ptr on GPU device (as cask_array_from_device),
 * row-major, bytes the space there (CASK_ERR_INVALID if too small). Each chunk of the
 * result is copied there, device to device, by a task on a GPU (device, unless the
 * scheduler puts it on another GPU: then a peer copy) from wherever the task that made
 * it ran, which is a GPU unless the context's CASK_ARRAY_OPT_WHERE lets a CPU worker
 * compute it (set CASK_WHERE_GPU to keep every byte off the host). Blocks until the
 * copies completed: dev_ptr then holds the result for any stream. The caller owns
 * dev_ptr. Errors: CASK_ERR_INVALID (NULL, no GPU device, too small), those of the
 * graph (cask_array_ctx_error says which task failed). Thread safety: as compute. */
cask_status cask_array_compute_to_device(cask_array *a, void *dev_ptr, size_t bytes,
                                         int device);

/* Computes n arrays of one context in one graph (shared parts run once). */
cask_status cask_array_compute_many(cask_array_ctx *ctx, int n, cask_array *const *arrays,
                                    void *const *outs, const size_t *bytes);

/* Computes a and writes it to a .npy file (version 1 header; chunks written in
 * parallel). Errors: CASK_ERR_IO and those of compute.
 *
 * Across the ranks of a job (cask_array_ctx_set_dist): collective, every rank calls it
 * with the same array (built alike) and path. The array's slabs along its first axis
 * (one per chunk there) are shared out, contiguous runs of them to each rank, and each
 * rank computes its own. In place (the path on a file system every rank sees, checked;
 * cask_dist_file_open), each writes them at their offsets, rank 0 the header, and the
 * file appears under its name only when every slab was reported written: a rank lost
 * meanwhile has its slabs computed and written again by the survivors (the array is a
 * pure expression every rank holds), and only if that fails too does the call fail,
 * naming them (CASK_ERR_IO). Gathered, the slabs travel to rank 0, which writes them
 * all; a rank lost then fails the call on every rank (CASK_ERR_PEER). The returned
 * status is the same on every rank. The
 * message (cask_array_ctx_error) says, after a success, how the file was written when
 * it could not be in place as asked ("auto"). */
cask_status cask_array_to_npy(cask_array *a, const char *path);

/* Makes cask_array_to_npy of ctx's arrays write across the ranks of dist, in mode
 * (cask_dist_write_mode: in place when every rank sees the file, gathered to rank 0, or
 * the first that works); dist NULL, or a job of one rank: one process (the default).
 * dist must outlive the context's writes. Only cask_array_to_npy is distributed: the
 * other calls compute on this rank alone. Errors: CASK_ERR_INVALID (bad mode). */
cask_status cask_array_ctx_set_dist(cask_array_ctx *ctx, cask_dist *dist,
                                    cask_dist_write_mode mode);

/* Computes the arrays and keeps their chunks as runtime data handles (where they were
 * made: on GPU if computed there). The arrays then stand for their values: later
 * expressions read the kept chunks instead of recomputing, and the inputs of a
 * persisted array are released. Persisting a slice persists what it slices. */
cask_status cask_array_persist(cask_array_ctx *ctx, int n, cask_array *const *arrays);

/* ---- inspecting ---- */

typedef struct cask_array_stats {
    size_t nnodes;          /* array nodes the requested results needed */
    size_t ntasks;          /* tasks of the graph */
    size_t nedges;
    size_t ntasks_compute;  /* tasks other than loads from host/file and stores to it */
    size_t ntasks_fused;    /* tasks running a program of 2 or more operations */
    size_t nops_fused;      /* array operations folded into those programs */
    size_t nhandles;        /* data handles the graph used (temporary and kept) */
    double build_s;         /* time to optimise and lower to tasks */
    double elapsed_s;       /* time the graph ran (0 for cask_array_plan) */
    size_t minor_faults;    /* minor page faults of the whole process from lowering to the
                               end of the run (getrusage): pages touched for the first time,
                               most often fresh chunk memory */
    size_t host_cached_bytes; /* host chunk memory the runtime's cache holds for reuse,
                               read when the statistics are asked for
                               (cask_runtime_host_cache) */
    size_t ntiles_inverted; /* cask_array_cholesky on GPUs: diagonal tiles whose inverse
                               the TRSMs below them multiplied by, in place of a
                               triangular solve (docs/linalg.md, "Accuracy") */
} cask_array_stats;

/* Statistics of the context's last compute or persist. */
cask_status cask_array_last_stats(const cask_array_ctx *ctx, cask_array_stats *out);

/* Optimises and lowers arrays to a task graph as compute would, runs nothing, fills
 * stats (may be NULL) and writes the graph in Graphviz dot to dot (may be NULL). */
cask_status cask_array_plan(cask_array_ctx *ctx, int n, cask_array *const *arrays,
                            cask_array_stats *stats, FILE *dot);

#ifdef __cplusplus
}
#endif
#endif
