/* array/linalg.c: the tiled Cholesky factorization of cask_array_cholesky.
 *
 * Right-looking, in sequential task flow as PLASMA's pdpotrf and Chameleon's pzpotrf:
 *   for k: POTRF (k,k); TRSM (i,k) for i > k;
 *          SYRK (i,i) and GEMM (i,j), k < j < i, with column k.
 * The runtime finds the DAG from the tiles' access modes. Each tile's updates come in
 * order of k (one chain per tile), so the bytes do not depend on where or when tasks run.
 * The first task to touch a tile of the factor copies it from the input (copy_in): the
 * input is never written. From host memory to host memory with GPUs, each tile is loaded
 * by a task of its own instead (LA_LOAD on the GPU's side stream, in the order the
 * columns are needed, a few in flight) and each final tile stored by one (LA_STORE), so
 * that the copies run beside the kernels rather than on their streams. Tiles above the
 * diagonal are zero tiles made on CPU workers, and only when the result is asked for
 * whole (a solve reads the lower ones only).
 *
 * Priorities: a task's distance, in panels, to the critical path. The critical path is
 * the chain POTRF (k,k), TRSM (k+1,k), SYRK (k+1,k+1), POTRF (k+1,k+1): 128, 64, 64 (the
 * top level: the scheduler's levels are logarithmic, cask/graph.h). The panel's other
 * TRSMs 48; an update of column j at step k is needed by panel j, j - k steps later: of
 * column k+1 32, of k+2 16, ... each step further one level lower, down to 1. Tasks
 * released together run in exact order. The top level runs on a GPU's urgent stream
 * (CASK_KERNEL_URGENT_STREAM), one after another ahead of the updates on the compute
 * streams, so that the next panel is factored while the GPU still works through the last
 * step's updates (the other TRSMs stay on the compute streams: side by side, not in
 * that one stream's line).
 *
 * TRSM by the inverse: on GPUs cuBLAS's trsm of a 2048 tile runs at a fifth of its GEMM's
 * rate (RESULTS 42), so a panel of at least la_inv_min TRSMs first inverts its diagonal
 * tile (TRINV, one trsm of the identity) and its TRSMs multiply by L^-1, where TRINV
 * found the tile well conditioned (LA_INV_COND): the residual bound holds either way.
 * CASK_CHOL_INVERSE=0 turns it off. */
#include <stdlib.h>
#include <string.h>
#include "array/array_internal.h"

static int la_dtype(cask_dtype dt)
{
    return dt == CASK_FLOAT64 ? LA_F64 : LA_F32;
}

/* Checks a matrix for cholesky / cho_solve: 2-D, square, square tiles, float. */
static cask_status check_square(cask_array *a, const char *what)
{
    cask_array_ctx *ctx = a->ctx;
    if (a->ndim != 2)
        return arr_error(ctx, CASK_ERR_INVALID, "%s needs a 2-D matrix (got %d-D)", what, a->ndim);
    if (a->shape[0] != a->shape[1])
        return arr_error(ctx, CASK_ERR_INVALID, "%s needs a square matrix (got %lldx%lld)", what,
                         (long long)a->shape[0], (long long)a->shape[1]);
    if (a->chunk[0] != a->chunk[1])
        return arr_error(ctx, CASK_ERR_INVALID, "%s needs square tiles (chunks %lldx%lld: "
                         "rechunk to equal sizes along both axes)", what,
                         (long long)a->chunk[0], (long long)a->chunk[1]);
    if (a->dtype != CASK_FLOAT32 && a->dtype != CASK_FLOAT64)
        return arr_error(ctx, CASK_ERR_INVALID, "%s needs float32 or float64 (got %s: "
                         "cask_array_astype first)", what, cask_dtype_name(a->dtype));
    if (a->chunk[0] > INT32_MAX / 2)
        return arr_error(ctx, CASK_ERR_INVALID, "%s: tiles of %lld rows are too large", what,
                         (long long)a->chunk[0]);
    return CASK_OK;
}

cask_status cask_array_cholesky(cask_array *a, cask_array **out)
{
    if (!a || !out) return CASK_ERR_INVALID;
    cask_status st = check_square(a, "cholesky");
    if (st) return st;
    cask_array *n;
    if ((st = node_new(a->ctx, NK_CHOLESKY, a->dtype, 2, a->shape, a->chunk, &n))) return st;
    node_add_input(n, a);
    *out = node_intern(n);
    return CASK_OK;
}

void la_task_desc(cask_array_ctx *ctx, int op, la_args *a, const cask_access *acc, int nacc,
                  int prio, cask_task_desc *d)
{
    a->op = op;
    a->gpu = ctx->la_gpu;
    memset(d, 0, sizeof *d);
    d->kernel = ctx->la.k[op];
    d->access = acc;
    d->naccess = nacc;
    d->field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY;
    d->args = a;
    d->args_size = sizeof *a;
    d->priority = prio;
    if (op == LA_ZERO || op == LA_LOAD || op == LA_STORE || op == LA_TRINV) {
        d->field_mask |= CASK_TASK_WHERE;
        d->where = op == LA_ZERO ? CASK_WHERE_CPU : CASK_WHERE_GPU;
    } else if (ctx->where != CASK_WHERE_ANY) {
        d->field_mask |= CASK_TASK_WHERE;
        d->where = (uint32_t)ctx->where;
    }
}

/* la_task, with the task in *out (NULL: not wanted). */
static cask_status la_task_out(plan *pl, int op, la_args *a, const cask_access *acc, int nacc,
                               int prio, cask_task **out)
{
    static const char *const names[LA_OP_COUNT] = {
        "linalg.potrf", "linalg.trsm", "linalg.syrk", "linalg.gemm", "linalg.zero",
        "linalg.load", "linalg.store", "linalg.trinv"
    };
    cask_task_desc d;
    la_task_desc(pl->ctx, op, a, acc, nacc, prio, &d);
    cask_status st = cask_graph_add_task(pl->g, &d, out);
    if (st)
        return arr_error(pl->ctx, st, "cannot add task %s: %s", names[op], cask_status_string(st));
    pl->st.ntasks++;
    pl->st.ntasks_compute++;
    /* the tiles run side by side, one BLAS thread each */
    pl->blas_threads = 1;
    return CASK_OK;
}

cask_status la_task(plan *pl, int op, la_args *a, const cask_access *acc, int nacc, int prio)
{
    return la_task_out(pl, op, a, acc, nacc, prio, NULL);
}

int64_t la_tile_rows(int64_t n, int64_t t, int64_t i)
{
    return i * t + t <= n ? t : n - i * t;
}

/* Priority of an update of column j at step k (see the top of the file). */
static int update_prio(int64_t k, int64_t j)
{
    int64_t d = j - k;   /* >= 1 */
    return d >= 6 ? 1 : 1 << (6 - d);
}

/* Loads (stores) in flight at most: each waits for the one LA_IO_WINDOW before it, so
 * that a few copies keep the link busy while the GPU worker's stream slots stay free for
 * the kernels (all 136 loads of n = 32768 at once took 17 of its 20 slots: RESULTS 41). */
#define LA_IO_WINDOW 4

typedef struct chol_state {
    plan *pl;
    cask_array *A, *L;
    int64_t nt, t, n;
    size_t es;
    const char *src;     /* A's host memory (a from_host array), read by the tasks */
    char *dst;           /* the user's output, written by the final tasks */
    cask_data **h;       /* the factor's tile handles, lower triangle, nt x nt */
    uint8_t *touched;    /* the tile has been copied in */
    int io;              /* loads and stores are tasks of their own (la_io_tasks) */
    cask_data *inv;      /* the latest TRINV's output (L^-1 of the panel's diagonal) */
    int32_t *inv_ok;     /* its verdict: pl_inv_ok[k] */
    int32_t *pl_inv_ok;  /* the plan node's verdicts (la_inv_ok), one per diagonal tile */
    cask_task *last[2][LA_IO_WINDOW];   /* the latest loads [0] and stores [1] */
    int64_t nio[2];
} chol_state;

/* Adds copy task op (LA_LOAD or LA_STORE) of tile c, after the one LA_IO_WINDOW before. */
static cask_status chol_io_task(chol_state *s, int op, la_args *a, int64_t c, int prio)
{
    int w = op == LA_STORE;
    cask_access acc = {s->h[c], w ? CASK_READ : CASK_WRITE};
    cask_task *t = NULL, **slot = &s->last[w][s->nio[w]++ % LA_IO_WINDOW];
    cask_status st = la_task_out(s->pl, op, a, &acc, 1, prio, &t);
    if (!st && *slot && (st = cask_task_depend(t, *slot)))
        return arr_error(s->pl->ctx, st, "cannot order the tile copies: %s",
                         cask_status_string(st));
    if (!st) *slot = t;
    return st;
}

/* Whether a factorization of ctx loads and stores host tiles by tasks of their own: where
 * its tiles may run on GPUs (simulated GPUs run the CPU kernels of those with GPU ones). */
static int la_io_tasks(const cask_array_ctx *ctx)
{
    return ctx->ngpus > 0 && ctx->where != CASK_WHERE_CPU && la_has_gpu_kernels();
}

/* The user's tile (i,j) at base (a row-major matrix of order s->n). */
static void user_tile(const chol_state *s, int64_t i, int64_t j, la_args *a)
{
    memset(a, 0, sizeof *a);
    a->dt = s->es == 8 ? LA_F64 : LA_F32;
    a->ti = i;
    a->tj = j;
    a->m = la_tile_rows(s->n, s->t, i);
    a->n = la_tile_rows(s->n, s->t, j);
}

/* A load task for every tile of the lower triangle, column by column (the order the
 * factorization first needs them: column 0 by the panel, then the updates of column 1,
 * 2, ... at step 0), the earlier columns first among the roots. */
static cask_status chol_loads(chol_state *s)
{
    cask_status st = CASK_OK;
    for (int64_t j = 0; j < s->nt && !st; j++)
        for (int64_t i = j; i < s->nt && !st; i++) {
            int64_t c = i * s->nt + j, idx[2] = {i, j};
            if (!s->h[c] && (st = plan_out_handle(s->pl, s->L, idx, &s->h[c]))) break;
            la_args a;
            user_tile(s, i, j, &a);
            a.copy_in = 1;
            a.src_host = s->src + (size_t)(i * s->t * s->n + j * s->t) * s->es;
            a.src_ld = s->n;
            int64_t prio = 256 + s->nt - j;
            st = chol_io_task(s, LA_LOAD, &a, c, prio > 1 << 20 ? 1 << 20 : (int)prio);
            s->touched[c] = 1;
        }
    return st;
}

/* A store task for final tile (i,j), which its writer just got: issued as soon as it is
 * ready (the top priority level) and run beside the kernels. */
static cask_status chol_store(chol_state *s, int64_t i, int64_t j)
{
    la_args a;
    user_tile(s, i, j, &a);
    a.dst_host = s->dst + (size_t)(i * s->t * s->n + j * s->t) * s->es;
    a.dst_ld = s->n;
    return chol_io_task(s, LA_STORE, &a, i * s->nt + j, 64);
}

/* The access of tile (i,j) being updated: the first update copies it in from A (two
 * accesses: A's tile read, the factor's written), later ones read-write it. Fills acc
 * from *nacc and sets a->copy_in; for copy_in the source must come first, so the caller
 * fills the other inputs after. */
static cask_status tile_target(chol_state *s, int64_t i, int64_t j, cask_access *src,
                               cask_access *dst, la_args *a)
{
    int64_t c = i * s->nt + j;
    cask_status st;
    src->data = NULL;   /* (no source access unless copied in from A's chunk) */
    if (!s->h[c]) {
        int64_t idx[2] = {i, j};
        if ((st = plan_out_handle(s->pl, s->L, idx, &s->h[c]))) return st;
    }
    dst->data = s->h[c];
    if (s->touched[c]) {
        dst->mode = CASK_RW;
        a->copy_in = 0;
        return CASK_OK;
    }
    dst->mode = CASK_WRITE;
    a->copy_in = 1;
    s->touched[c] = 1;
    if (s->src) {   /* straight from the user's matrix: no chunk of A, no access */
        a->src_host = s->src + (size_t)(i * s->t * s->n + j * s->t) * s->es;
        a->src_ld = s->n;
        src->data = NULL;
        return CASK_OK;
    }
    int64_t idx[2] = {i, j};
    if ((st = plan_chunk_idx(s->pl, s->A, idx, &src->data))) return st;
    src->mode = CASK_READ;
    return CASK_OK;
}

/* The final operation on tile (i,j) writes it to the user's output, if there is one. */
static void final_to(chol_state *s, la_args *a, int64_t i, int64_t j)
{
    if (!s->dst) return;
    a->dst_host = s->dst + (size_t)(i * s->t * s->n + j * s->t) * s->es;
    a->dst_ld = s->n;
}

/* The local graph's side of la_chol_walk: the target copied in at its first touch and
 * written out to the user's matrix by its final operation. */
static cask_status chol_emit(void *u, int op, la_args *a, const int64_t in[][2], int nin,
                             int prio)
{
    chol_state *s = u;
    cask_access acc[5], src, dst;
    la_args b = *a;
    cask_status st;
    if (op == LA_TRINV) {   /* L_kk read, its inverse written to a handle of its own */
        int64_t k = a->ti, bk = a->n;
        if ((st = plan_handle(s->pl, (size_t)(bk * bk) * s->es, 1, &s->inv))) return st;
        s->inv_ok = s->pl_inv_ok + k;
        b.inv_ok = s->inv_ok;
        cask_access ia[2] = {{s->h[k * s->nt + k], CASK_READ}, {s->inv, CASK_WRITE}};
        return la_task(s->pl, op, &b, ia, 2, prio);
    }
    st = tile_target(s, a->ti, a->tj, &src, &dst, &b);
    if (st) return st;
    int m = 0;
    if (src.data) acc[m++] = src;
    for (int x = 0; x < nin; x++) {
        acc[m].data = s->h[in[x][0] * s->nt + in[x][1]];
        acc[m++].mode = CASK_READ;
    }
    if (b.inv) {   /* L^-1 after L */
        acc[m].data = s->inv;
        acc[m++].mode = CASK_READ;
        b.inv_ok = s->inv_ok;
    }
    acc[m++] = dst;
    int final = op == LA_POTRF || op == LA_TRSM;
    if (final && !s->io) final_to(s, &b, a->ti, a->tj);
    if ((st = la_task(s->pl, op, &b, acc, m, prio))) return st;
    return final && s->io && s->dst ? chol_store(s, a->ti, a->tj) : CASK_OK;
}

cask_status la_chol_walk(int64_t n, int64_t t, int dt, int inv, la_chol_emit emit, void *u)
{
    int64_t nt = (n + t - 1) / t;
    cask_status st = CASK_OK;
    for (int64_t k = 0; k < nt && !st; k++) {
        int64_t bk = la_tile_rows(n, t, k);
        la_args a;
        memset(&a, 0, sizeof a);
        a.dt = dt;
        a.ti = a.tj = k;
        a.row0 = k * t;
        a.n = bk;
        if ((st = emit(u, LA_POTRF, &a, NULL, 0, 128))) break;
        int by_inv = inv && nt - k - 1 >= la_inv_min(t);
        if (by_inv) {
            int64_t in[1][2] = {{k, k}};
            a.m = bk;
            if ((st = emit(u, LA_TRINV, &a, in, 1, 128))) break;
        }
        /* TRSM (i,k): A_ik L_kk^-T */
        for (int64_t i = k + 1; i < nt && !st; i++) {
            int64_t in[1][2] = {{k, k}};
            memset(&a, 0, sizeof a);
            a.dt = dt;
            a.ti = i;
            a.tj = k;
            a.row0 = i * t;
            a.side = 'R';
            a.trans = 1;
            a.inv = by_inv;
            a.m = la_tile_rows(n, t, i);
            a.n = bk;
            st = emit(u, LA_TRSM, &a, in, 1, i == k + 1 ? 64 : 48);
        }
        /* updates of the trailing matrix with column k */
        for (int64_t i = k + 1; i < nt && !st; i++) {
            int64_t bi = la_tile_rows(n, t, i);
            for (int64_t j = k + 1; j <= i && !st; j++) {
                int64_t in[2][2] = {{i, k}, {j, k}};
                memset(&a, 0, sizeof a);
                a.dt = dt;
                a.ti = i;
                a.tj = j;
                a.row0 = i * t;
                a.k = bk;
                if (j == i) {   /* SYRK: C -= L_ik L_ik^T (the next panel's: critical) */
                    a.n = bi;
                    st = emit(u, LA_SYRK, &a, in, 1, j == k + 1 ? 64 : update_prio(k, j));
                } else {        /* GEMM: C -= L_ik L_jk^T */
                    a.m = bi;
                    a.n = la_tile_rows(n, t, j);
                    a.tb = 1;
                    st = emit(u, LA_GEMM, &a, in, 2, update_prio(k, j));
                }
            }
        }
    }
    return st;
}

/* Lowers the whole factorization n once (dst: the user's output, or NULL). */
static cask_status chol_lower_once(plan *pl, cask_array *n, char *dst)
{
    plan_node *pn = n->pn;
    if (pn->whole) return CASK_OK;
    int64_t nt = n->nch[0];
    chol_state s;
    memset(&s, 0, sizeof s);
    s.pl = pl;
    s.A = n->in[0];
    s.L = n;
    s.nt = nt;
    s.t = n->chunk[0];
    s.n = n->shape[0];
    s.es = cask_dtype_size(n->dtype);
    /* a matrix wrapped from host memory is read there by the tasks themselves */
    if (s.A->kind == NK_HOST && !s.A->mat && s.A->p.host) s.src = s.A->p.host;
    s.dst = dst;
    if (!pn->chunks) pn->chunks = calloc((size_t)n->nchunks, sizeof *pn->chunks);
    s.touched = calloc((size_t)(nt * nt), 1);
    if (!s.touched || !pn->chunks) {
        free(s.touched);
        return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    }
    s.h = pn->chunks;
    s.io = (s.src || s.dst) && la_io_tasks(pl->ctx);
    /* TRSMs by the inverse of the diagonal tile where a GPU may run them (CASK_CHOL_INVERSE=0:
       never); the verdicts outlive the lowering, as the tasks read them */
    const char *ev = getenv("CASK_CHOL_INVERSE");
    int inv = la_io_tasks(pl->ctx) && !(ev && !strcmp(ev, "0"));
    if (inv && !pn->la_inv_ok && !(pn->la_inv_ok = calloc((size_t)nt, sizeof(int32_t)))) {
        free(s.touched);
        return arr_error(pl->ctx, CASK_ERR_NOMEM, "out of memory");
    }
    s.pl_inv_ok = pn->la_inv_ok;
    cask_status st = s.io && s.src ? chol_loads(&s) : CASK_OK;
    if (!st) st = la_chol_walk(s.n, s.t, la_dtype(n->dtype), inv, chol_emit, &s);
    free(s.touched);
    if (!st) pn->whole = 1;
    return st;
}

int chol_lower_to_host(plan *pl, cask_array *n, void *out, cask_status *st)
{
    if (n->pn->whole) return 0;
    if ((*st = chol_lower_once(pl, n, out))) return 1;
    /* the tiles above the diagonal: zeros, one task per tile row, on CPU workers */
    int64_t nt = n->nch[0], t = n->chunk[0], N = n->shape[0];
    size_t es = cask_dtype_size(n->dtype);
    for (int64_t i = 0; i + 1 < nt && !*st; i++) {
        la_args a;
        memset(&a, 0, sizeof a);
        a.dt = la_dtype(n->dtype);
        a.ti = i;
        a.tj = i + 1;
        a.m = la_tile_rows(N, t, i);
        a.n = N - (i + 1) * t;
        a.dst_host = (char *)out + (size_t)(i * t * N + (i + 1) * t) * es;
        a.dst_ld = N;
        *st = la_task(pl, LA_ZERO, &a, NULL, 0, 0);
    }
    return 1;
}

cask_status chol_lower_chunk(plan *pl, cask_array *n, const int64_t *idx, cask_data **out)
{
    plan_node *pn = n->pn;
    int64_t nt = n->nch[0];
    cask_status st = chol_lower_once(pl, n, NULL);
    if (st) return st;
    int64_t i = idx[0], j = idx[1];
    if (j <= i) {
        *out = pn->chunks[i * nt + j];
        return CASK_OK;
    }
    /* a tile above the diagonal: zeros */
    if ((st = plan_out_handle(pl, n, idx, out))) return st;
    la_args a;
    memset(&a, 0, sizeof a);
    a.ti = i;
    a.tj = j;
    cask_access acc = {*out, CASK_WRITE};
    return la_task(pl, LA_ZERO, &a, &acc, 1, 0);
}
