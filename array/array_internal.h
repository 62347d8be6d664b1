/* array/array_internal.h: the objects behind cask/array.h: the context, the nodes of
 * the expression DAG, and the plan that lowers nodes to tasks. Internal to array/. */
#ifndef CASK_ARRAY_INTERNAL_H
#define CASK_ARRAY_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>
#include "cask/cask.h"
#include "kernels/array_kernels.h"
#include "kernels/linalg_kernels.h"

#define MAXD CASK_ARRAY_MAX_DIMS

/* What a node is. */
typedef enum node_kind {
    NK_HOST = 0,    /* from_host: p.host */
    NK_NPY,         /* from_npy: blob = path, p.data_offset */
    NK_GEN,         /* generator: op AK_OP_SET (fill, imm0), ARANGE, RAND_U, RAND_N */
    NK_UNARY,       /* op AK_OP_NEG.. */
    NK_BINARY,      /* op AK_OP_ADD.. on in[0], in[1] (same dtype) */
    NK_SCALAR,      /* op AK_OP_ADD.. on in[0] and p.imm[0] (p.scalar_first) */
    NK_CAST,        /* in[0] to dtype */
    NK_BLOCKWISE,   /* user kernel p.kernel, index strings p.out_index/in_index, blob = args */
    NK_REDUCE,      /* p.red_op on in[0] along p.axis (-1: all), p.divisor */
    NK_MATMUL,      /* in[0] @ in[1] */
    NK_SLICE,       /* chunk-aligned window of in[0] starting at p.start (no task) */
    NK_EXPAND,      /* in[0] with a size-1 axis inserted at p.axis (no task) */
    NK_RECHUNK,     /* in[0] with new chunks */
    NK_CHOLESKY,    /* the lower Cholesky factor of in[0] (linalg.c) */
    NK_CHO_SOLVE,   /* in[1] solved against the factor in[0] (linalg_solve.c) */
    NK_DEVICE,      /* from_device: p.dev on GPU p.device; src[] views when contiguous */
    NK_KIND_COUNT
} node_kind;

/* Fixed-size parameters, zeroed before use: compared bytewise for sharing. */
typedef struct node_params {
    ak_scalar imm[3];
    const void *host;
    const void *dev;            /* NK_DEVICE: the user's GPU memory */
    int32_t device;             /* NK_DEVICE: its GPU */
    cask_kernel *kernel;
    double divisor;
    int64_t start[MAXD];
    int64_t data_offset;
    int32_t scalar_first;
    int32_t axis;
    int32_t red_op;
    int32_t has_div;
    char out_index[MAXD + 1];
    char in_index[AK_MAX_IN][MAXD + 1];
} node_params;

typedef struct plan_node plan_node;

struct cask_array {
    cask_array_ctx *ctx;
    uint64_t id;                /* never reused: keys of sharing and of the plan */
    int64_t refs;
    node_kind kind;
    int op;
    cask_dtype dtype;
    int ndim;
    int64_t shape[MAXD], chunk[MAXD], nch[MAXD];
    int64_t size, nchunks;
    int nin;
    cask_array *in[AK_MAX_IN];
    node_params p;
    void *blob;
    size_t blob_len;
    /* sharing table */
    uint64_t hash;
    int hashed;
    cask_array *hnext;
    /* every live node of the context */
    cask_array *prev_all, *next_all;
    /* kept chunks: persisted results (mat), or registered host chunks (src) */
    cask_data **mat;
    cask_data **src;
    /* per-run scratch */
    plan_node *pn;
};

struct cask_array_ctx {
    cask_runtime *rt;
    ak_kernels k;
    la_kernels la;              /* dense linear algebra tiles */
    void *la_gpu;               /* their cuSOLVER/cuBLAS handles (CUDA builds) */
    int fuse, cse, where, arity;
    int ngpus;
    uint64_t next_id;
    cask_array **buckets;
    size_t nbuckets, nhashed;
    cask_array *all;
    char err[512];
    cask_array_stats last;
    void *blas;
    void *jit;                  /* run-time compiled programs (CUDA builds with GPUs) */
    int use_jit;
    int ncpu;                   /* CPU workers of the runtime */
    int ncores;                 /* the cores its workers are pinned to (ncores_used) */
    int blas_threads;           /* CASK_ARRAY_OPT_BLAS_THREADS */
    int blas_noted;             /* the BLAS's load note logged (lower.c's plan_run) */
    cask_dist *dist;            /* cask_array_ctx_set_dist: to_npy across its ranks */
    int write_mode;
};

/* ---- array.c: context, nodes, shapes ---- */

cask_status arr_error(cask_array_ctx *ctx, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A zeroed node prototype of kind, dtype and shape, with chunks (NULL = automatic). */
cask_status node_new(cask_array_ctx *ctx, node_kind kind, cask_dtype dt, int ndim,
                     const int64_t *shape, const int64_t *chunks, cask_array **out);
/* Adds an input reference to a prototype. */
void node_add_input(cask_array *n, cask_array *in);
/* Finishes a prototype: returns an identical existing node (and frees n) or n. */
cask_array *node_intern(cask_array *n);
/* Frees a prototype that was never interned. */
void node_discard(cask_array *n);
/* Removes n from the sharing table (it no longer stands for its expression). */
void node_unshare(cask_array *n);
void node_set_chunks(cask_array *n, const int64_t *chunks);
int dtype_valid(int dt);
int shape_valid(int ndim, const int64_t *shape);

/* Chunk geometry: multi-index of linear chunk c, and the block it covers. */
void chunk_index(const cask_array *n, int64_t c, int64_t *idx);
int64_t chunk_linear(const cask_array *n, const int64_t *idx);
void chunk_geom(const cask_array *n, const int64_t *idx, ak_geom *g);
/* The arguments of a host transfer of linear chunk c (scatter, .npy write, device
 * scatter): zeroed, with the chunk's geometry and element size; the caller adds where. */
void chunk_host_args(const cask_array *n, int64_t c, ak_host_args *h);
size_t chunk_bytes(const cask_array *n, const int64_t *idx);

/* ---- build.c: shared helpers of the builders ---- */

/* x converted to dt (x itself, retained, if already). */
cask_status arr_cast(cask_array *x, cask_dtype dt, cask_array **out);
/* x rechunked to chunks (x itself, retained, if the same). */
cask_status arr_rechunk(cask_array *x, const int64_t *chunks, cask_array **out);
/* Broadcast shape of inputs, and the inputs rechunked to agree; out_in[] are new refs. */
cask_status arr_broadcast(cask_array_ctx *ctx, int nin, cask_array *const *in,
                          int *ndim, int64_t *shape, int64_t *chunks, cask_array **out_in);
cask_dtype dtype_promote(cask_dtype a, cask_dtype b);

/* ---- plan (lower.c, fuse.c, reduce.c, matmul.c) ---- */

enum { ROLE_ROOT = 0, ROLE_INLINE, ROLE_SHARED, ROLE_ALIAS, ROLE_MAT };

typedef struct prog_cache {
    int state;                   /* 0 not built, 1 built, -1 failed */
    ak_prog prog;
    int nops_nodes;              /* array operations folded in */
    int next;
    cask_array *ext[AK_MAX_IN];  /* the node behind each input slot */
} prog_cache;

struct plan_node {
    cask_array *node;
    int role;
    int is_output;
    cask_array *group;           /* ROLE_INLINE: the root whose program computes it */
    int nconsumers;
    int cons_cap;
    cask_array **consumers;
    int g_ops, g_loads;          /* ROOT: budget of its program */
    cask_data **chunks;          /* handle of each chunk once lowered */
    prog_cache *pc;
    int visited;
    int whole;                   /* every chunk lowered at once (linear algebra) */
    int32_t *la_inv_ok;          /* Cholesky: TRINV's verdict per diagonal tile */
    void *dst;                   /* the user's output, written by the tasks themselves */
};

typedef struct plan {
    cask_array_ctx *ctx;
    cask_graph *g;
    plan_node **nodes;           /* inputs before consumers */
    size_t nnodes, cap;
    plan_node **all;             /* every plan node, for freeing */
    size_t nall, allcap;
    cask_data **temps;           /* handles to destroy after the run */
    size_t ntemps, tcap;
    cask_array_stats st;
    int persist;                 /* outputs keep their chunks */
    int chunk_counter;           /* round-robin GPU hints */
    long minflt0;                /* process minor faults when lowering began */
    int blas_threads;            /* CPU BLAS threads the run's products want; 0: none */
} plan;

cask_status plan_init(plan *pl, cask_array_ctx *ctx, int n, cask_array *const *arrays,
                      int persist);
void plan_free(plan *pl);
/* Runs the plan's graph (the BLAS's threads set for it), fills the context's statistics;
 * the graph's error as the context's on failure. */
cask_status plan_run(plan *pl);
/* The data handle of chunk c of node n, adding the tasks that make it. */
cask_status plan_chunk(plan *pl, cask_array *n, int64_t c, cask_data **out);
cask_status plan_chunk_idx(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);
/* A new handle of bytes, destroyed after the run unless kept. */
cask_status plan_handle(plan *pl, size_t bytes, int temp, cask_data **out);
/* The handle of n's chunk idx: kept when n is persisted by this plan, else temporary. */
cask_status plan_out_handle(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);
/* Adds a task; where_any: the kernel has CPU and GPU implementations. */
cask_status plan_task(plan *pl, cask_kernel *k, const cask_access *acc, int nacc,
                      const void *args, size_t args_size, const char *name, int both,
                      int device_hint);

/* fuse.c */
void fuse_assign_roles(plan *pl);
/* Program computing expr inside the group of root; fills ext[] slots. 0 or -1. */
int fuse_build_prog(plan *pl, cask_array *root, cask_array *expr, prog_cache *pc);
/* The program of root computing expr (built once per plan; on overflow the group is
 * split into more roots). */
cask_status fuse_root_prog(plan *pl, cask_array *root, cask_array *expr, prog_cache **out);
/* Input strides of ext node x for output chunk idx of a node shaped like out. */
void fuse_input_layout(const cask_array *out, const int64_t *oidx, const cask_array *x,
                       int64_t *xidx, int64_t *stride, uint8_t *contig);
/* The fused args of a program for chunk idx of out; requests the inputs' chunks. */
cask_status fuse_chunk_args(plan *pl, cask_array *out, const int64_t *idx, prog_cache *pc,
                            ak_fused_args *a, cask_access *acc);
/* Lowers chunk idx of an elementwise group root. */
cask_status fuse_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);
int node_fusible(const cask_array *n);

/* reduce.c, matmul.c */
cask_status reduce_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);
cask_status matmul_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);

/* linalg.c, linalg_solve.c: the whole factorization / solve is lowered at the first
 * chunk asked for (every tile depends on others); then each chunk's handle is known. */
cask_status chol_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);
cask_status chosolve_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);
/* Lowers a factorization whose result goes to host memory out (row-major, whole): its
 * final tasks write each tile there themselves, zeros above the diagonal too, so the
 * tiles need no scatter. 1 if done so, 0 if it was lowered already (then scatter). */
int chol_lower_to_host(plan *pl, cask_array *n, void *out, cask_status *st);
/* Adds a tile task of op with args a (both: CPU and GPU kernels; priority p). */
cask_status la_task(plan *pl, int op, la_args *a, const cask_access *acc, int nacc, int prio);
/* The descriptor of a tile task of ctx's kernels (la_task adds it to a plan's graph,
 * linalg_dist.c to a distributed one): a's op and GPU cache set, ctx's placement option
 * (LA_ZERO: CPU workers). d points at acc and a, which must outlive its use. */
void la_task_desc(cask_array_ctx *ctx, int op, la_args *a, const cask_access *acc, int nacc,
                  int prio, cask_task_desc *d);
/* Rows of tile row i of a matrix of order n in tiles of t (the last may be smaller). */
int64_t la_tile_rows(int64_t n, int64_t t, int64_t i);
/* The right-looking tiled Cholesky of an n x n matrix in tiles of t, in sequential task
 * flow (linalg.c): emit is called for each tile operation in order, with its la_args
 * filled but for the fields of where the tiles live (gpu, copy_in, src_host, dst_host),
 * the tiles it reads (in[x] = {row, column}; the target is (a->ti, a->tj), read and
 * written) and its priority. Stops at emit's first error and returns it. With inv, a
 * panel of at least la_inv_min(t) TRSMs also has a TRINV of its diagonal tile (emitted with
 * in = {k, k}, target (k, k): the emitter gives it an output of its own) and TRSMs with
 * a->inv set, which read that output after L. */
typedef cask_status (*la_chol_emit)(void *u, int op, la_args *a, const int64_t in[][2],
                                    int nin, int prio);
cask_status la_chol_walk(int64_t n, int64_t t, int dt, int inv, la_chol_emit emit, void *u);
/* TRSMs a panel needs for its diagonal tile to be inverted: TRINV (one GPU trsm of the
 * identity) sits on the critical path, each TRSM by the inverse saves part of its time.
 * On an H200 (RESULTS 42.1), f32: at 2048 TRINV takes 1.0 ms and saves 0.29 ms a TRSM
 * (4 pay for it); at 4096 it takes 3.6 ms and saves 0.4 (9 do); the inverse made n =
 * 32768 at 4096 3-6% slower (42.2), with 4. */
static inline int64_t la_inv_min(int64_t t)
{
    return t <= 2048 ? 4 : (9 * t + 4095) / 4096;
}

/* device.c: chunk idx of a from_device array (its view, or a gather task) */
cask_status device_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out);

/* npy.c */
/* The .npy header (version 1) of an array into buf (NPY_HEADER_MAX bytes); returns its
 * length, where the data start (a multiple of 64). */
#define NPY_HEADER_MAX 448
size_t npy_header(char *buf, cask_dtype dt, int ndim, const int64_t *shape);
cask_status npy_write_header(const char *path, cask_dtype dt, int ndim, const int64_t *shape,
                             int64_t *data_offset, char *err, size_t errlen);

/* npy_dist.c: cask_array_to_npy across the ranks of ctx->dist. */
cask_status npy_dist_write(cask_array *a, const char *path);

double arr_now(void);

#endif
