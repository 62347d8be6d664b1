/* chol_dist.c: cask-chol across the ranks of a job (cask/dist_matrix.h). Each rank
 * makes the tiles it owns (generated, or copied from --in, which every rank reads), the
 * ranks factor them together, and rank 0 gathers the factor when something needs it
 * whole (--check, --rhs, --digest, --out). The time printed is the slowest rank's, from
 * a barrier to the end of the factorization, tiles in host memory before and after. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "chol_app.h"

typedef struct fill_job {
    cask_dist_matrix *m;
    const chol_opts *o;
    const char *a;          /* --in's matrix, row-major; NULL: generate */
    int tid, nth;
} fill_job;

static void *fill_tiles(void *arg)
{
    fill_job *f = arg;
    int64_t nt, count = 0;
    size_t es = cask_dtype_size(f->o->dt);
    cask_dist_matrix_grid(f->m, NULL, NULL, &nt);
    for (int64_t i = 0; i < nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            void *p;
            int64_t r, c;
            if (cask_dist_matrix_tile(f->m, i, j, &p, &r, &c) || !p || count++ % f->nth != f->tid)
                continue;
            int64_t r0 = i * f->o->tile, c0 = j * f->o->tile;
            if (!f->a) {
                chol_generate_tile(p, f->o->dt, f->o->n, r0, c0, r, c, f->o->seed);
                continue;
            }
            for (int64_t x = 0; x < r; x++)
                memcpy((char *)p + (size_t)(x * c) * es,
                       f->a + (size_t)((r0 + x) * f->o->n + c0) * es, (size_t)c * es);
        }
    return NULL;
}

/* This rank's tiles from the generator or from a, by a few threads. */
static void fill(cask_dist_matrix *m, const chol_opts *o, const void *a, int local_size)
{
    long nc = sysconf(_SC_NPROCESSORS_ONLN) / (local_size > 0 ? local_size : 1);
    int nth = nc < 1 ? 1 : nc > 32 ? 32 : (int)nc;
    pthread_t th[32];
    fill_job jobs[32];
    int started[32];
    for (int t = 0; t < nth; t++) {
        jobs[t] = (fill_job){ m, o, a, t, nth };
        started[t] = pthread_create(&th[t], NULL, fill_tiles, &jobs[t]) == 0;
        if (!started[t]) fill_tiles(&jobs[t]);
    }
    for (int t = 0; t < nth; t++)
        if (started[t]) pthread_join(th[t], NULL);
}

/* The generated matrix's tiles as a loader makes them (cask_dist_matrix_set_loader):
 * the same values the ranks fill in, so a lost rank's tiles can be made again. */
typedef struct gen_args {
    int64_t n;
    uint64_t seed;
    int32_t dt, pad;
} gen_args;

static cask_status gen_tile(cask_task_ctx *ctx)
{
    size_t size = 0;
    const char *a = cask_task_args(ctx, &size);
    if (!a || size < sizeof(cask_dist_tile_args) + sizeof(gen_args))
        return cask_task_fail(ctx, "chol.tile: bad arguments"), CASK_ERR_INVALID;
    cask_dist_tile_args t;
    gen_args g;
    memcpy(&t, a, sizeof t);
    memcpy(&g, a + sizeof t, sizeof g);
    chol_generate_tile(cask_task_buffer(ctx, 0), (cask_dtype)g.dt, g.n, t.row0, t.col0, t.rows,
                       t.cols, g.seed);
    return CASK_OK;
}

/* X = A^-1 B with the factor l in host memory (rank 0, for --rhs). */
static cask_status solve_host(cask_array_ctx *ctx, const chol_opts *o, const void *l,
                              const void *b, void *x)
{
    int64_t ls[2] = {o->n, o->n}, lc[2] = {o->tile, o->tile};
    int64_t bs[2] = {o->n, o->rhs}, bc[2] = {o->tile, o->rhs};
    cask_array *L = NULL, *B = NULL, *X = NULL;
    cask_status st = cask_array_from_host(ctx, l, o->dt, 2, ls, lc, &L);
    if (!st) st = cask_array_from_host(ctx, b, o->dt, 2, bs, bc, &B);
    if (!st) st = cask_array_cho_solve(L, B, &X);
    if (!st) st = cask_array_compute(X, x, (size_t)(o->n * o->rhs) * cask_dtype_size(o->dt));
    cask_array_release(L);
    cask_array_release(B);
    cask_array_release(X);
    return st;
}

/* Rank 0, after the factorization: the factor gathered into l, then what chol_finish
 * does. Returns the exit code. */
static int finish_root(cask_runtime *rt, cask_array_ctx *ctx, const chol_opts *o,
                       const void *a, const void *l, double *res, double *berr)
{
    size_t es = cask_dtype_size(o->dt);
    void *b = NULL, *x = NULL, *gen = NULL;
    int rc = 1;
    cask_status st = CASK_OK;
    if (!a && o->check) {   /* the generated matrix, whole, for the checks */
        if ((st = cask_host_alloc(rt, (size_t)(o->n * o->n) * es, &gen))) goto out;
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        chol_generate(gen, o->dt, o->n, o->seed, nc > 0 ? (int)nc : 1);
        a = gen;
    }
    if (o->rhs) {
        b = malloc((size_t)(o->n * o->rhs) * es);
        x = malloc((size_t)(o->n * o->rhs) * es);
        if (!b || !x) goto out;
        chol_generate_rhs(b, o->dt, o->n, o->rhs, o->seed);
        if ((st = solve_host(ctx, o, l, b, x))) goto out;
    }
    rc = chol_finish(ctx, o, a, l, b, x, res, berr);
out:
    if (st) fprintf(stderr, "cask-chol: %s: %s\n", cask_status_string(st), cask_array_ctx_error(ctx));
    cask_host_free(rt, gen);
    free(b);
    free(x);
    return rc;
}

int chol_dist_run(cask_runtime *rt, cask_array_ctx *ctx, cask_dist *dist, chol_opts *o)
{
    int me = cask_dist_rank(dist), size = cask_dist_size(dist), rc = 1;
    cask_dist_matrix *m = NULL;
    void *a = NULL, *l = NULL;
    double *times = calloc((size_t)o->repeat, sizeof *times);
    cask_status st = times ? CASK_OK : CASK_ERR_NOMEM;
    const char *msg = "";
    if (o->resident) {
        if (me == 0) fprintf(stderr, "cask-chol: --resident runs in one process only\n");
        rc = 2;
        goto out;
    }
    if (!st && o->in && (st = chol_read_input(rt, ctx, o, &a))) {
        rc = st == CASK_ERR_INVALID ? 2 : 1;
        goto out;
    }
    if (!st && (st = cask_dist_matrix_create(ctx, dist, o->n, o->tile, o->dt, o->grid_p,
                                             o->grid_q, &m))) {
        msg = m ? cask_dist_matrix_error(m) : cask_array_ctx_error(ctx);
        goto fail;
    }
    if (!o->in) {   /* generated: a loader makes the tiles again (no copy kept aside) */
        cask_kernel_desc kd = { .name = "chol.tile", .cpu = gen_tile };
        cask_kernel *k = NULL;
        gen_args ga = { o->n, o->seed, (int32_t)o->dt, 0 };
        if ((st = cask_kernel_register(rt, &kd, &k)) ||
            (st = cask_dist_matrix_set_loader(m, k, &ga, sizeof ga))) {
            msg = "registering the tiles' loader";
            goto fail;
        }
    }
    for (int r = -o->warmup; r < o->repeat && !st; r++) {
        fill(m, o, a, cask_dist_local_size(dist));
        if ((st = cask_dist_barrier(dist))) {
            msg = cask_dist_error(dist);
            goto fail;
        }
        double t0 = chol_now_s();
        st = cask_dist_cholesky(m);
        int64_t ns = (int64_t)((chol_now_s() - t0) * 1e9);
        if (st) {
            msg = cask_dist_matrix_error(m);
            goto fail;
        }
        if ((st = cask_dist_allreduce(dist, &ns, 1, CASK_DIST_MAX))) {
            msg = cask_dist_error(dist);
            goto fail;
        }
        if (r >= 0) times[r] = (double)ns * 1e-9;
    }
    uint64_t c, g, in;
    double plan_s, wait_s;
    cask_dist_matrix_last_run(m, &c, &g, &in, &plan_s, &wait_s);
    int64_t sums[3] = {(int64_t)c, (int64_t)g, (int64_t)in};
    if ((st = cask_dist_allreduce(dist, sums, 3, CASK_DIST_SUM))) {
        msg = cask_dist_error(dist);
        goto fail;
    }
    qsort(times, (size_t)o->repeat, sizeof *times, chol_cmp_d);
    double med = times[o->repeat / 2], gf = (double)o->n * o->n * o->n / 3.0 / med * 1e-9;
    int p, q;
    cask_dist_matrix_grid(m, &p, &q, NULL);
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    if (me == 0 && !o->quiet)
        printf("cholesky n=%lld tile=%lld %s, %d ranks (grid %dx%d): %.4f s (median of %d; "
               "min %.4f, max %.4f), %.1f GFLOP/s\ntiles ran: %lld tasks on CPU workers, %lld "
               "on GPUs (rank 0: %d CPU workers, %d GPUs%s); %lld tiles sent between ranks\n",
               (long long)o->n, (long long)o->tile, cask_dtype_name(o->dt), size, p, q, med,
               o->repeat, times[0], times[o->repeat - 1], gf, (long long)sums[0],
               (long long)sums[1], info.ncpu_workers, info.ngpus,
               info.simulated_gpus ? " simulated" : "", (long long)sums[2]);
    if (me == 0 && !o->quiet)
        printf("rank 0, last run: planning %.4f s, waiting for other ranks' tiles %.4f s\n",
               plan_s, wait_s);
    int whole = o->check || o->rhs || o->digest || o->out;
    if (whole && me == 0 &&
        (st = cask_host_alloc(rt, (size_t)(o->n * o->n) * cask_dtype_size(o->dt), &l)))
        goto fail;
    if (whole && (st = cask_dist_matrix_gather(m, 0, me == 0 ? l : NULL))) {
        msg = cask_dist_matrix_error(m);
        goto fail;
    }
    double res = -1, berr = -1;
    rc = 0;
    if (whole && me == 0) rc = finish_root(rt, ctx, o, a, l, &res, &berr);
    if (me == 0 && o->json && !rc)
        printf("{\"bench\":\"cask-chol\",\"n\":%lld,\"tile\":%lld,\"dtype\":\"%s\",\"mode\":\"host\","
               "\"ranks\":%d,\"grid\":\"%dx%d\",\"cpu_workers\":%d,\"gpus\":%d,\"median_s\":%.6f,"
               "\"min_s\":%.6f,\"gflops\":%.1f,\"tasks_cpu\":%lld,\"tasks_gpu\":%lld,"
               "\"tiles_sent\":%lld,\"residual\":%.3e,\"backward_error\":%.3e}\n",
               (long long)o->n, (long long)o->tile, cask_dtype_name(o->dt), size, p, q,
               info.ncpu_workers, info.ngpus, med, times[0], gf, (long long)sums[0],
               (long long)sums[1], (long long)sums[2], res, berr);
    goto out;
fail:
    /* every rank has the same status and message (the failing rank and task named):
       rank 0 says it */
    if (me == 0)
        fprintf(stderr, "cask-chol: rank %d: %s: %s\n", me, cask_status_string(st), msg);
    rc = st == CASK_ERR_NOT_SPD ? 3 : st == CASK_ERR_INVALID ? 2 : 1;
out:
    if (cask_dist_finalize(dist) && !rc) rc = 1;
    cask_dist_matrix_destroy(m);
    cask_host_free(rt, a);
    cask_host_free(rt, l);
    free(times);
    return rc;
}
