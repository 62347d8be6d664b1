/* array/linalg_dist.c: matrices whose tiles are spread 2-D block-cyclic over the ranks
 * of a job, and their tiled Cholesky factorization (cask/dist_matrix.h).
 *
 * Each lower tile is a datum of the job (cask_dist_data_create), declared on every rank
 * in the same order: row by row, (0,0), (1,0), (1,1), ... The factorization walks the
 * same tile operations as cask_array_cholesky (la_chol_walk, linalg.c) into one
 * distributed graph, each task pinned to the owner of the tile it writes
 * (cask_dist_graph_set_rank): the owner computes, and the distributed layer sends each
 * tile a task reads to the rank that runs it. Every tile is updated in order of k there
 * as here, so the bytes do not depend on the number of ranks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "array/array_internal.h"
#include "cask/dist_matrix.h"

struct cask_dist_matrix {
    cask_array_ctx *ctx;
    cask_dist *dist;
    cask_runtime *rt;
    int64_t n, t, nt;
    cask_dtype dt;
    size_t es;
    int p, q, me;
    char *mem;              /* this rank's tiles */
    size_t *off;            /* per lower tile: offset in mem, or SIZE_MAX (not here) */
    cask_data **h;          /* per lower tile: its handle */
    cask_kernel *loader;     /* cask_dist_matrix_set_loader, or NULL */
    char *loader_args;       /* its args, after the cask_dist_tile_args of each tile */
    size_t loader_size;
    uint64_t last_cpu, last_gpu, last_in;
    double last_plan_s, last_wait_s;
    char err[512];
};

static void dm_error(cask_dist_matrix *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
}

/* Index of lower tile (i,j), j <= i, in declaration order. */
static size_t tidx(int64_t i, int64_t j)
{
    return (size_t)(i * (i + 1) / 2 + j);
}

static int64_t side(const cask_dist_matrix *m, int64_t i)
{
    return la_tile_rows(m->n, m->t, i);
}

int cask_dist_matrix_owner(const cask_dist_matrix *m, int64_t i, int64_t j)
{
    if (!m || i < 0 || j < 0 || i >= m->nt || j > i) return -1;
    return (int)(i % m->p) * m->q + (int)(j % m->q);
}

void cask_dist_matrix_grid(const cask_dist_matrix *m, int *p, int *q, int64_t *ntiles)
{
    if (p) *p = m ? m->p : 0;
    if (q) *q = m ? m->q : 0;
    if (ntiles) *ntiles = m ? m->nt : 0;
}

cask_status cask_dist_matrix_create(cask_array_ctx *ctx, cask_dist *dist, int64_t n,
                                    int64_t tile, cask_dtype dtype, int p, int q,
                                    cask_dist_matrix **out)
{
    if (!ctx || !dist || !out) return CASK_ERR_INVALID;
    *out = NULL;
    int size = cask_dist_size(dist);
    if (p == 0 && q == 0) {
        /* the most square grid, p <= q: column-cyclic rather than row-cyclic when it
           cannot be square (a column's work, about j (nt - j) tile updates, is the same
           from both ends, a row's grows as i^2: 2 x 1 gave rank 1 a tenth more work
           than rank 0 at 16 tiles, 1 x 2 splits it evenly) */
        for (p = 1; (p + 1) * (p + 1) <= size; p++) {}
        while (size % p) p--;
        q = size / p;
    }
    if (n < 1 || tile < 1 || tile > INT32_MAX / 2 || p < 1 || q < 1 || (int64_t)p * q != size ||
        (dtype != CASK_FLOAT32 && dtype != CASK_FLOAT64))
        return arr_error(ctx, CASK_ERR_INVALID, "cask_dist_matrix_create: n %lld, tile %lld, "
                         "%s, grid %d x %d for %d ranks: n and tile >= 1, float32 or float64, "
                         "p * q the job's size", (long long)n, (long long)tile,
                         cask_dtype_name(dtype), p, q, size);
    cask_dist_matrix *m = calloc(1, sizeof *m);
    if (!m) return CASK_ERR_NOMEM;
    m->ctx = ctx;
    m->dist = dist;
    m->rt = ctx->rt;
    m->n = n;
    m->t = tile;
    m->nt = (n + tile - 1) / tile;
    m->dt = dtype;
    m->es = cask_dtype_size(dtype);
    m->p = p;
    m->q = q;
    m->me = cask_dist_rank(dist);
    size_t ntiles = tidx(m->nt, 0);
    m->off = malloc(ntiles * sizeof *m->off);
    m->h = calloc(ntiles, sizeof *m->h);
    if (!m->off || !m->h) goto nomem;
    size_t mine = 0;
    for (int64_t i = 0; i < m->nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            size_t b = (size_t)(side(m, i) * side(m, j)) * m->es;
            if (cask_dist_matrix_owner(m, i, j) == m->me) {
                m->off[tidx(i, j)] = mine;
                mine += (b + 63) & ~(size_t)63;
            } else {
                m->off[tidx(i, j)] = SIZE_MAX;
            }
        }
    if (mine && cask_host_alloc(m->rt, mine, (void **)&m->mem)) goto nomem;
    for (int64_t i = 0; i < m->nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            size_t x = tidx(i, j), b = (size_t)(side(m, i) * side(m, j)) * m->es;
            cask_status st = cask_dist_data_create(dist, b, cask_dist_matrix_owner(m, i, j),
                                                   m->off[x] == SIZE_MAX ? NULL : m->mem + m->off[x],
                                                   &m->h[x]);
            if (st) {
                dm_error(m, "declaring tile (%lld,%lld): %s: %s", (long long)i, (long long)j,
                         cask_status_string(st), cask_dist_error(dist));
                *out = m;   /* its handles so far are dist's: m must outlive them */
                return st;
            }
        }
    *out = m;
    return CASK_OK;
nomem:
    free(m->off);
    free(m->h);
    free(m);
    return arr_error(ctx, CASK_ERR_NOMEM, "cask_dist_matrix_create: out of memory");
}

cask_status cask_dist_matrix_tile(cask_dist_matrix *m, int64_t i, int64_t j, void **ptr,
                                  int64_t *rows, int64_t *cols)
{
    if (!m || i < 0 || j < 0 || i >= m->nt || j > i) return CASK_ERR_INVALID;
    size_t o = m->off[tidx(i, j)];
    if (ptr) *ptr = o == SIZE_MAX ? NULL : m->mem + o;
    if (rows) *rows = side(m, i);
    if (cols) *cols = side(m, j);
    return CASK_OK;
}

cask_status cask_dist_matrix_set_loader(cask_dist_matrix *m, cask_kernel *kernel,
                                        const void *args, size_t args_size)
{
    if (!m || (!kernel && args_size) || (args_size && !args)) return CASK_ERR_INVALID;
    char *a = NULL;
    if (kernel && !(a = malloc(sizeof(cask_dist_tile_args) + args_size))) return CASK_ERR_NOMEM;
    if (args_size) memcpy(a + sizeof(cask_dist_tile_args), args, args_size);
    free(m->loader_args);
    m->loader = kernel;
    m->loader_args = a;
    m->loader_size = args_size;
    return CASK_OK;
}

/* The tiles' loaders for a factorization (on), or none (off: the tiles then hold the
 * factor, which the loader does not make). */
static cask_status set_loaders(cask_dist_matrix *m, int on)
{
    for (int64_t i = 0; i < m->nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            cask_status st;
            if (on) {
                cask_dist_tile_args t = { i, j, i * m->t, j * m->t, side(m, i), side(m, j) };
                memcpy(m->loader_args, &t, sizeof t);
                st = cask_dist_data_set_loader(m->dist, m->h[tidx(i, j)], m->loader,
                                               m->loader_args, sizeof t + m->loader_size);
            } else {
                st = cask_dist_data_set_loader(m->dist, m->h[tidx(i, j)], NULL, NULL, 0);
            }
            if (st) {
                dm_error(m, "the loader of tile (%lld,%lld): %s", (long long)i, (long long)j,
                         cask_status_string(st));
                return st;
            }
        }
    return CASK_OK;
}

typedef struct dist_walk {
    cask_dist_matrix *m;
    cask_dist_graph *g;
} dist_walk;

static cask_status dist_emit(void *u, int op, la_args *a, const int64_t in[][2], int nin,
                             int prio)
{
    dist_walk *w = u;
    cask_dist_matrix *m = w->m;
    cask_access acc[3];
    int k = 0;
    for (int x = 0; x < nin; x++) {
        acc[k].data = m->h[tidx(in[x][0], in[x][1])];
        acc[k++].mode = CASK_READ;
    }
    acc[k].data = m->h[tidx(a->ti, a->tj)];
    acc[k++].mode = CASK_RW;
    cask_task_desc d;
    la_task_desc(m->ctx, op, a, acc, k, prio, &d);
    size_t index;
    cask_status st = cask_dist_graph_add_task(w->g, &d, &index);
    if (!st) st = cask_dist_graph_set_rank(w->g, index, cask_dist_matrix_owner(m, a->ti, a->tj));
    if (st)
        dm_error(m, "adding the task of tile (%lld,%lld): %s: %s", (long long)a->ti,
                 (long long)a->tj, cask_status_string(st), cask_dist_graph_error(w->g));
    return st;
}

/* Tasks run on CPU workers and on GPUs so far. */
static void tasks_run(cask_runtime *rt, uint64_t *cpu, uint64_t *gpu)
{
    int nw = 0;
    *cpu = *gpu = 0;
    cask_runtime_nworkers(rt, &nw);
    cask_worker_stats *s = calloc((size_t)(nw > 0 ? nw : 1), sizeof *s);
    if (s && cask_runtime_stats(rt, s, nw) == CASK_OK)
        for (int i = 0; i < nw; i++) *(s[i].kind ? gpu : cpu) += s[i].tasks_run;
    free(s);
}

/* After computing g (status st): keeps g's message in m on failure; destroys g. */
static cask_status graph_done(cask_dist_matrix *m, cask_dist_graph *g, const char *what,
                              cask_status st)
{
    if (st) {
        const char *e = cask_dist_graph_error(g);
        dm_error(m, "%s: %s", what, e && e[0] ? e : cask_status_string(st));
    }
    cask_dist_graph_destroy(g);
    return st;
}

cask_status cask_dist_cholesky(cask_dist_matrix *m)
{
    if (!m) return CASK_ERR_INVALID;
    m->err[0] = '\0';
    dist_walk w = { m, NULL };
    cask_status st = m->loader ? set_loaders(m, 1) : CASK_OK;
    if (st) return st;
    st = cask_dist_graph_create(m->dist, &w.g);
    if (st) {
        dm_error(m, "cask_dist_graph_create: %s", cask_status_string(st));
        return st;
    }
    st = la_chol_walk(m->n, m->t, m->dt == CASK_FLOAT64 ? LA_F64 : LA_F32, 0, dist_emit,
                      &w);
    if (st) {
        cask_dist_graph_destroy(w.g);
        return st;
    }
    uint64_t c0, g0, c1, g1;
    tasks_run(m->rt, &c0, &g0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((st = cask_dist_graph_plan(w.g))) {
        dm_error(m, "planning the factorization: %s", cask_dist_graph_error(w.g));
        cask_dist_graph_destroy(w.g);
        return st;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    m->last_plan_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cask_dist_graph_info info;
    memset(&info, 0, sizeof info);
    cask_dist_graph_query(w.g, &info);
    /* the tiles run side by side, one BLAS thread each (the count is process-wide: set
       for this run only, as plan_run does) */
    int blas_old = ak_blas_name() ? ak_blas_threads_get() : 0;
    if (blas_old > 1) ak_blas_threads_set(1);
    cask_status cst = cask_dist_graph_compute(w.g);
    memset(&info, 0, sizeof info);
    cask_dist_graph_query(w.g, &info);
    m->last_wait_s = info.comm_wait_s;
    st = graph_done(m, w.g, "cholesky", cst);
    if (m->loader) {
        cask_status s2 = set_loaders(m, 0);
        if (!st) st = s2;
    }
    if (blas_old > 1) ak_blas_threads_set(blas_old);
    /* The tiles are the caller's host memory: the factor there, and no replica left on
       a GPU (the caller may refill the tiles for the next factorization) */
    for (int64_t i = 0; i < m->nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            size_t x = tidx(i, j);
            void *p;
            if (m->off[x] == SIZE_MAX) continue;
            cask_status s2 = cask_data_acquire(m->h[x], CASK_RW, &p);
            if (!s2) s2 = cask_data_release(m->h[x]);
            if (s2 && !st) {
                dm_error(m, "tile (%lld,%lld) back to host memory: %s", (long long)i,
                         (long long)j, cask_status_string(s2));
                st = s2;
            }
        }
    tasks_run(m->rt, &c1, &g1);
    m->last_cpu = c1 - c0;
    m->last_gpu = g1 - g0;
    m->last_in = info.transfers_in;
    return st;
}

void cask_dist_matrix_last_run(const cask_dist_matrix *m, uint64_t *tasks_cpu,
                               uint64_t *tasks_gpu, uint64_t *tiles_in, double *plan_s,
                               double *wait_s)
{
    if (plan_s) *plan_s = m ? m->last_plan_s : 0;
    if (wait_s) *wait_s = m ? m->last_wait_s : 0;
    if (tasks_cpu) *tasks_cpu = m ? m->last_cpu : 0;
    if (tasks_gpu) *tasks_gpu = m ? m->last_gpu : 0;
    if (tiles_in) *tiles_in = m ? m->last_in : 0;
}

cask_status cask_dist_matrix_gather(cask_dist_matrix *m, int root, void *dest)
{
    if (!m) return CASK_ERR_INVALID;
    m->err[0] = '\0';
    if (root < 0 || root >= cask_dist_size(m->dist) || (root == m->me && !dest)) {
        dm_error(m, "cask_dist_matrix_gather: root %d of %d%s", root, cask_dist_size(m->dist),
                 root == m->me && !dest ? ", no destination there" : "");
        return CASK_ERR_INVALID;
    }
    int here = root == m->me;
    size_t ntiles = tidx(m->nt, 0), total = 0;
    size_t *at = here ? malloc(ntiles * sizeof *at) : NULL;
    if (here && !at) return CASK_ERR_NOMEM;
    for (int64_t i = 0; here && i < m->nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            at[tidx(i, j)] = total;
            total += (size_t)(side(m, i) * side(m, j)) * m->es;
        }
    char *buf = here ? malloc(total ? total : 1) : NULL;
    cask_dist_graph *g = NULL;
    cask_status st = here && !buf ? CASK_ERR_NOMEM : cask_dist_graph_create(m->dist, &g);
    for (int64_t i = 0; !st && i < m->nt; i++)
        for (int64_t j = 0; !st && j <= i; j++)
            st = cask_dist_graph_gather(g, m->h[tidx(i, j)], root,
                                        here ? buf + at[tidx(i, j)] : NULL);
    if (!st) {
        st = graph_done(m, g, "gathering the matrix", cask_dist_graph_compute(g));
        g = NULL;
    }
    if (g) cask_dist_graph_destroy(g);
    if (!st && here) {   /* tiles to row-major, zeros above the diagonal tiles */
        char *d = dest;
        size_t row = (size_t)m->n * m->es;
        for (int64_t i = 0; i < m->nt; i++) {
            int64_t r = side(m, i);
            for (int64_t rr = 0; rr < r; rr++) {
                char *line = d + (size_t)(i * m->t + rr) * row;
                for (int64_t j = 0; j <= i; j++) {
                    size_t cb = (size_t)side(m, j) * m->es;
                    memcpy(line + (size_t)(j * m->t) * m->es, buf + at[tidx(i, j)] + (size_t)rr * cb, cb);
                }
                size_t used = (size_t)(i * m->t + r) * m->es;
                if (used > row) used = row;
                memset(line + used, 0, row - used);
            }
        }
    }
    free(buf);
    free(at);
    return st;
}

const char *cask_dist_matrix_error(const cask_dist_matrix *m)
{
    return m ? m->err : "";
}

void cask_dist_matrix_destroy(cask_dist_matrix *m)
{
    if (!m) return;
    if (m->mem) cask_host_free(m->rt, m->mem);
    free(m->off);
    free(m->h);
    free(m->loader_args);
    free(m);
}
