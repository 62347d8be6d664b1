/* tests/dist/test_dist_graph.c: task graphs run across the ranks of a job through the
 * public API (cask/distributed.h). Every check compares with the same computation done by
 * plain C in one process: the result must not depend on the number of ranks.
 *
 *   test_dist_graph flow       chunks owned round robin; fill, scale, a chain that
 *                              crosses ranks, partial sums and a reduction tree;
 *                              results home on their owners and gathered on rank 0;
 *                              computed twice
 *   test_dist_graph balance    every chunk owned by rank 0: the balancer spreads the
 *                              independent tasks over all ranks, results still right
 *   test_dist_graph taskfail   a task fails on the last rank (on the owner of chunk N-1
 *                              beyond N ranks): every rank returns the
 *                              failure naming it; the job then runs a new graph fine
 *   test_dist_graph mismatch   the last rank adds one task more: every rank refuses
 *   test_dist_graph kill       rank 1 dies inside a task (CASK_TEST_FREEZE=1: it stops
 *                              by SIGSTOP, found by the peer timeout and fenced out): the
 *                              survivors recompute what it held and finish with the
 *                              right values
 *   test_dist_graph overlap    rank 1 naps in one task while another of its tasks
 *                              makes a chunk rank 0 needs: rank 0 runs its task as
 *                              soon as that chunk comes, not after the nap (no
 *                              lockstep between ranks)
 * Under tests/dist/run.sh (kill: --survivors NP-1), or alone as a job of one. */
#include <math.h>
#include <signal.h>
#include <unistd.h>

#include "cask/cask.h"
#include "dist_test.h"

enum { N = 12, LEN = 1 << 14 };   /* chunks of LEN doubles */

static cask_status k_fill(cask_task_ctx *ctx)
{
    double *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *x;
    int64_t seed;
    memcpy(&seed, cask_task_args(ctx, NULL), sizeof seed);
    for (size_t k = 0; k < n; k++)
        x[k] = (double)(seed * 1000 + (int64_t)(k % 977));
    return CASK_OK;
}

static cask_status k_scale(cask_task_ctx *ctx)
{
    double *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *x;
    for (size_t k = 0; k < n; k++)
        x[k] = 2 * x[k] + 1;
    return CASK_OK;
}

/* [0] RW += [1] R */
static cask_status k_add(cask_task_ctx *ctx)
{
    double *y = cask_task_buffer(ctx, 0);
    const double *x = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *y;
    for (size_t k = 0; k < n; k++)
        y[k] += 0.5 * x[k];
    return CASK_OK;
}

/* [0] W one double = sum of [1] R */
static cask_status k_sum(cask_task_ctx *ctx)
{
    double *s = cask_task_buffer(ctx, 0);
    const double *x = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 1) / sizeof *x;
    double acc = 0;
    for (size_t k = 0; k < n; k++)
        acc += x[k];
    memset(s, 0, cask_task_buffer_size(ctx, 0));
    *s = acc;
    return CASK_OK;
}

/* [0] W = [1] R squared, elementwise (the balance test's independent work) */
static cask_status k_square(cask_task_ctx *ctx)
{
    double *y = cask_task_buffer(ctx, 0);
    const double *x = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 1) / sizeof *x;
    for (size_t k = 0; k < n; k++)
        y[k] = x[k] * x[k];
    return CASK_OK;
}

static cask_status k_fail(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "planted failure");
}

static cask_status k_nap(cask_task_ctx *ctx)
{
    (void)ctx;
    usleep(600 * 1000);
    return CASK_OK;
}

/* [0] W: [0] = when it ran (dt_now), [1] = [2][0] (the remote chunk); [1] R unused */
static cask_status k_stamp(cask_task_ctx *ctx)
{
    double *c = cask_task_buffer(ctx, 0);
    const double *b = cask_task_buffer(ctx, 2);
    c[0] = dt_now();
    c[1] = b[0];
    return CASK_OK;
}

static int die_rank = -1;   /* the rank whose "die" task kills it (rank 1) */

static cask_status k_die(cask_task_ctx *ctx)
{
    (void)ctx;
    if (die_rank == 1)
        raise(getenv("CASK_TEST_FREEZE") ? SIGSTOP : SIGKILL);
    return CASK_OK;   /* run again on a survivor by the recovery */
}

typedef struct env {
    cask_runtime *rt;
    cask_dist *dist;
    int rank, size;
    cask_kernel *fill, *scale, *add, *sum, *square, *fail, *die, *nap, *stamp;
} env;

static cask_kernel *reg(cask_runtime *rt, const char *name, cask_kernel_fn fn)
{
    cask_kernel_desc kd = { .name = name, .cpu = fn };
    cask_kernel *k;
    CHECK_OK(cask_kernel_register(rt, &kd, &k), "register %s", name);
    return k;
}

static void setup(env *e, int timeout_ms)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = 2, .bind = 0, .ngpu = 0 };
    CHECK_OK(cask_init(&cfg, &e->rt), "cask_init");
    cask_dist_config dc = { .field_mask = CASK_DIST_PEER_TIMEOUT_MS | CASK_DIST_HEARTBEAT_MS,
                            .peer_timeout_ms = timeout_ms, .heartbeat_ms = 200 };
    cask_status st = cask_dist_init(e->rt, &dc, &e->dist);
    char err[1024];
    cask_runtime_error(e->rt, err, sizeof err);
    CHECK_OK(st, "cask_dist_init: %s", err);
    e->rank = dt_rank_ = cask_dist_rank(e->dist);
    e->size = cask_dist_size(e->dist);
    e->fill = reg(e->rt, "fill", k_fill);
    e->scale = reg(e->rt, "scale", k_scale);
    e->add = reg(e->rt, "add", k_add);
    e->sum = reg(e->rt, "sum", k_sum);
    e->square = reg(e->rt, "square", k_square);
    e->fail = reg(e->rt, "fail", k_fail);
    e->die = reg(e->rt, "die", k_die);
    e->nap = reg(e->rt, "nap", k_nap);
    e->stamp = reg(e->rt, "stamp", k_stamp);
}

static void teardown(env *e)
{
    CHECK_OK(cask_dist_finalize(e->dist), "cask_dist_finalize");
    CHECK_OK(cask_shutdown(e->rt), "cask_shutdown");
}

static void add1(cask_dist_graph *g, cask_kernel *k, cask_data *a, cask_access_mode ma,
                 cask_data *b, cask_access_mode mb, const void *args, size_t nargs,
                 const char *name)
{
    cask_access acc[2] = { { a, ma }, { b, mb } };
    cask_task_desc d = { .field_mask = CASK_TASK_NAME | (nargs ? CASK_TASK_ARGS : 0),
                         .kernel = k, .access = acc, .naccess = b ? 2 : 1,
                         .args = args, .args_size = nargs, .name = name };
    CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add task %s", name);
}

/* ---- flow ---- */

static void reference_flow(double chunks[N][LEN], double *total)
{
    for (int i = 0; i < N; i++)
        for (int k = 0; k < LEN; k++)
            chunks[i][k] = 2.0 * (double)(i * 1000 + k % 977) + 1;
    for (int i = 0; i + 1 < N; i++)
        for (int k = 0; k < LEN; k++)
            chunks[i + 1][k] += 0.5 * chunks[i][k];
    double part[N];
    for (int i = 0; i < N; i++) {
        part[i] = 0;
        for (int k = 0; k < LEN; k++)
            part[i] += chunks[i][k];
    }
    for (int step = 1; step < N; step *= 2)
        for (int i = 0; i + step < N; i += 2 * step)
            part[i] += 0.5 * part[i + step];
    *total = part[0];
}

static void test_flow(void)
{
    env e;
    setup(&e, 10000);
    static double ref[N][LEN];
    double ref_total;
    reference_flow(ref, &ref_total);

    /* chunk i and part i are owned by rank i % size; the owner's memory is here */
    double *mem[N], *pmem[N];
    cask_data *x[N], *part[N];
    for (int i = 0; i < N; i++) {
        int owner = i % e.size;
        mem[i] = owner == e.rank ? calloc(LEN, sizeof(double)) : NULL;
        pmem[i] = owner == e.rank ? calloc(LEN, sizeof(double)) : NULL;
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), owner, mem[i], &x[i]), "x");
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), owner, pmem[i], &part[i]),
                 "part");
    }
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    for (int i = 0; i < N; i++) {
        int64_t seed = i;
        add1(g, e.fill, x[i], CASK_WRITE, NULL, 0, &seed, sizeof seed, "fill");
        add1(g, e.scale, x[i], CASK_RW, NULL, 0, NULL, 0, "scale");
    }
    for (int i = 0; i + 1 < N; i++)
        add1(g, e.add, x[i + 1], CASK_RW, x[i], CASK_READ, NULL, 0, "chain");
    for (int i = 0; i < N; i++)
        add1(g, e.sum, part[i], CASK_WRITE, x[i], CASK_READ, NULL, 0, "sum");
    /* parts hold one double in their first element: reduce pairwise (k_add on 1 elem
     * would add the whole chunk; the sums only fill element 0, the rest stays 0) */
    for (int step = 1; step < N; step *= 2)
        for (int i = 0; i + step < N; i += 2 * step)
            add1(g, e.add, part[i], CASK_RW, part[i + step], CASK_READ, NULL, 0, "reduce");
    double *total = e.rank == 0 ? calloc(LEN, sizeof(double)) : NULL;
    double *last = e.rank == 0 ? calloc(LEN, sizeof(double)) : NULL;
    CHECK_OK(cask_dist_graph_gather(g, part[0], 0, total), "gather");
    CHECK_OK(cask_dist_graph_gather(g, x[N - 1], 0, last), "gather");

    for (int run = 0; run < 2; run++) {
        if (e.rank == 0) {
            memset(total, 0, LEN * sizeof(double));
            memset(last, 0, LEN * sizeof(double));
        }
        cask_status st = cask_dist_graph_compute(g);
        CHECK_OK(st, "compute (run %d): %s", run, cask_dist_graph_error(g));
        if (e.rank == 0) {
            CHECK(fabs(total[0] - ref_total) <= 1e-9 * fabs(ref_total), "run %d: total %.17g, "
                  "expected %.17g", run, total[0], ref_total);
            for (int k = 0; k < LEN; k++)
                CHECK(last[k] == ref[N - 1][k], "run %d: gathered chunk %d[%d] = %g, not %g",
                      run, N - 1, k, last[k], ref[N - 1][k]);
        }
        /* every owner's memory holds its chunks' final content */
        for (int i = 0; i < N; i++) {
            if (!mem[i])
                continue;
            void *p;
            CHECK_OK(cask_data_acquire(x[i], CASK_READ, &p), "acquire");
            for (int k = 0; k < LEN; k++)
                CHECK(((double *)p)[k] == ref[i][k], "run %d: chunk %d[%d] at its owner is %g, "
                      "not %g", run, i, k, ((double *)p)[k], ref[i][k]);
            cask_data_release(x[i]);
        }
    }
    cask_dist_graph_info info;
    CHECK_OK(cask_dist_graph_query(g, &info), "query");
    printf("[rank %d] flow: %zu of %zu tasks here, %zu phases, %zu chunks out (%llu B), "
           "%zu in, %.3f s (%.3f s waiting)\n", e.rank, info.ntasks_here, info.ntasks,
           info.nphases, info.transfers_out, (unsigned long long)info.bytes_out,
           info.transfers_in, info.elapsed_s, info.comm_wait_s);
    if (e.size > 1)
        CHECK(info.ntasks_here > 0, "rank %d got no task", e.rank);
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    teardown(&e);
    for (int i = 0; i < N; i++) {
        free(mem[i]);
        free(pmem[i]);
    }
    free(total);
    free(last);
}

/* ---- balance ---- */

static void test_balance(void)
{
    env e;
    setup(&e, 10000);
    enum { M = 32 };
    double *in[M], *out[M];
    cask_data *xi[M], *xo[M];
    for (int i = 0; i < M; i++) {
        in[i] = out[i] = NULL;
        if (e.rank == 0) {
            in[i] = malloc(LEN * sizeof(double));
            out[i] = calloc(LEN, sizeof(double));
            for (int k = 0; k < LEN; k++)
                in[i][k] = i + 0.001 * k;
        }
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), 0, in[i], &xi[i]), "in");
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), 0, out[i], &xo[i]), "out");
    }
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    for (int i = 0; i < M; i++)
        add1(g, e.square, xo[i], CASK_WRITE, xi[i], CASK_READ, NULL, 0, "square");
    CHECK_OK(cask_dist_graph_compute(g), "compute: %s", cask_dist_graph_error(g));
    cask_dist_graph_info info;
    CHECK_OK(cask_dist_graph_query(g, &info), "query");
    printf("[rank %d] balance: %zu of %zu tasks here (%zu moved here), %zu chunks in, %zu out\n",
           e.rank, info.ntasks_here, info.ntasks, info.moved, info.transfers_in,
           info.transfers_out);
    if (e.size > 1) {
        CHECK(info.ntasks_here >= (size_t)(M / e.size / 2), "rank %d runs only %zu of %d tasks", e.rank,
              info.ntasks_here, M);
        if (e.rank != 0)
            CHECK(info.moved == info.ntasks_here, "tasks here that were not moved here");
    }
    if (e.rank == 0)
        for (int i = 0; i < M; i++) {
            void *p;
            CHECK_OK(cask_data_acquire(xo[i], CASK_READ, &p), "acquire");
            for (int k = 0; k < LEN; k++) {
                double v = in[i][k] * in[i][k];
                CHECK(((double *)p)[k] == v, "out %d[%d] = %g, not %g", i, k, ((double *)p)[k], v);
            }
            cask_data_release(xo[i]);
        }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    teardown(&e);
    for (int i = 0; i < M; i++) {
        free(in[i]);
        free(out[i]);
    }
}

/* ---- gathers ---- */

/* A datum no task uses, gathered to its own owner: the root copies it from its handle
 * (this used to leave the root waiting for a transfer nobody sent); gathered to rank 0
 * too, which gets its own copy (test_dist_gather.c covers gathers in depth). */
static void test_gather(void)
{
    env e;
    setup(&e, 10000);
    double *mem[N] = {0}, *out = calloc(LEN, sizeof(double)), *dest = calloc(LEN, sizeof(double));
    double *dest0 = calloc(LEN, sizeof(double));
    cask_data *x[N], *y;
    for (int i = 0; i < N; i++) {
        int owner = i % e.size;
        if (owner == e.rank) {
            mem[i] = malloc(LEN * sizeof(double));
            for (int k = 0; k < LEN; k++)
                mem[i][k] = 1000.0 * i + k;
        }
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), owner, mem[i], &x[i]), "x");
    }
    CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), 0, e.rank == 0 ? out : NULL, &y),
             "y");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    add1(g, e.add, y, CASK_RW, x[0], CASK_READ, NULL, 0, "read");   /* x[1]: used by no task */
    int owner = 1 % e.size;
    CHECK_OK(cask_dist_graph_gather(g, x[1 % N], owner, e.rank == owner ? dest : NULL), "gather");
    CHECK_OK(cask_dist_graph_gather(g, x[1 % N], 0, e.rank == 0 ? dest0 : NULL), "gather 2");
    double t0 = dt_now();
    CHECK_OK(cask_dist_graph_compute(g), "compute: %s", cask_dist_graph_error(g));
    CHECK(dt_now() - t0 < 30, "compute took %.1f s", dt_now() - t0);
    if (e.rank == owner)
        for (int k = 0; k < LEN; k++)
            CHECK(dest[k] == 1000.0 * (1 % N) + k, "gathered [%d] = %g", k, dest[k]);
    if (e.rank == 0)
        for (int k = 0; k < LEN; k++)
            CHECK(dest0[k] == 1000.0 * (1 % N) + k, "gathered to 0 [%d] = %g", k, dest0[k]);
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    teardown(&e);
    for (int i = 0; i < N; i++)
        free(mem[i]);
    free(out);
    free(dest);
    free(dest0);
}

/* ---- failures ---- */

static void test_taskfail(void)
{
    env e;
    setup(&e, 10000);
    int victim = e.size - 1 < N ? e.size - 1 : N - 1;   /* beyond N ranks: chunk N-1's */
    cask_data *x[N];
    for (int i = 0; i < N; i++)
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), i % e.size, NULL, &x[i]),
                 "x");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    for (int i = 0; i < N; i++) {
        int64_t seed = i;
        add1(g, e.fill, x[i], CASK_WRITE, NULL, 0, &seed, sizeof seed, "fill");
    }
    /* on the victim's chunk; the others wait for its result */
    add1(g, e.fail, x[victim], CASK_RW, NULL, 0, NULL, 0, "doomed");
    for (int i = 0; i < N; i++)
        if (i != victim)
            add1(g, e.add, x[i], CASK_RW, x[victim], CASK_READ, NULL, 0, "after");
    double t0 = dt_now();
    cask_status st = cask_dist_graph_compute(g);
    printf("[rank %d] taskfail: %s after %.2f s: %s\n", e.rank, cask_status_string(st),
           dt_now() - t0, cask_dist_graph_error(g));
    CHECK(st == CASK_ERR_TASK_FAILED, "compute returned %s, not a task failure",
          cask_status_string(st));
    CHECK(strstr(cask_dist_graph_error(g), "doomed") &&
          strstr(cask_dist_graph_error(g), "planted failure"),
          "the message does not name the task and its reason: %s", cask_dist_graph_error(g));
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    /* the job is still usable */
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    for (int i = 0; i < N; i++) {
        int64_t seed = i;
        add1(g, e.fill, x[i], CASK_WRITE, NULL, 0, &seed, sizeof seed, "fill");
        if (i)
            add1(g, e.add, x[i], CASK_RW, x[i - 1], CASK_READ, NULL, 0, "after");
    }
    CHECK_OK(cask_dist_graph_compute(g), "compute after a failure: %s", cask_dist_graph_error(g));
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    teardown(&e);
}

static void test_mismatch(void)
{
    env e;
    setup(&e, 10000);
    cask_data *x[N];
    for (int i = 0; i < N; i++)
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), i % e.size, NULL, &x[i]),
                 "x");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    for (int i = 0; i < N; i++) {
        int64_t seed = i;
        add1(g, e.fill, x[i], CASK_WRITE, NULL, 0, &seed, sizeof seed, "fill");
    }
    if (e.rank == e.size - 1 && e.size > 1)
        add1(g, e.scale, x[0], CASK_RW, NULL, 0, NULL, 0, "extra");
    cask_status st = cask_dist_graph_compute(g);
    printf("[rank %d] mismatch: %s: %s\n", e.rank, cask_status_string(st), cask_dist_graph_error(g));
    if (e.size > 1) {
        CHECK(st == CASK_ERR_INVALID, "compute returned %s", cask_status_string(st));
        CHECK(strstr(cask_dist_graph_error(g), "another graph"), "message: %s",
              cask_dist_graph_error(g));
    } else {
        CHECK_OK(st, "one rank cannot disagree with itself");
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    teardown(&e);
}

static void test_kill(void)
{
    env e;
    /* 3 s: between netns hosts the SIGKILLed rank is found by the timeout. 10 s for
     * big jobs on one host (found there by the process check): 32 ranks on 2 loaded
     * cores failed cask_dist_init with 3 s, before the kill (a rank unscheduled 3 s). */
    const char *np = getenv("OMPI_COMM_WORLD_SIZE");
    if (!np)
        np = getenv("CASK_SIZE");
    setup(&e, np && atoi(np) > 8 ? 10000 : 3000);
    CHECK(e.size >= 2, "needs 2 ranks");
    die_rank = e.rank;
    cask_data *x[N];
    for (int i = 0; i < N; i++)
        CHECK_OK(cask_dist_data_create(e.dist, LEN * sizeof(double), i % e.size, NULL, &x[i]),
                 "x");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    for (int i = 0; i < N; i++) {
        int64_t seed = i;
        add1(g, e.fill, x[i], CASK_WRITE, NULL, 0, &seed, sizeof seed, "fill");
    }
    add1(g, e.die, x[1], CASK_RW, NULL, 0, NULL, 0, "die");   /* x[1] lives on rank 1 */
    for (int i = 0; i < N; i++)
        if (i != 1)
            add1(g, e.add, x[i], CASK_RW, x[1], CASK_READ, NULL, 0, "after");
    double t0 = dt_now();
    cask_status st = cask_dist_graph_compute(g);
    double dt = dt_now() - t0;
    printf("[rank %d] kill: %s after %.2f s: %s\n", e.rank, cask_status_string(st), dt,
           cask_dist_graph_error(g));
    CHECK(st == CASK_OK, "compute returned %s: %s", cask_status_string(st),
          cask_dist_graph_error(g));
    CHECK(dt < 20, "took %.1f s to recover", dt);
    for (int i = 0; i < N; i++) {   /* x[i] = fill(i) + 0.5 fill(1) on its (live) owner */
        if (i % e.size != e.rank || i == 1)
            continue;
        double *p;
        CHECK_OK(cask_data_acquire(x[i], CASK_READ, (void **)&p), "acquire");
        for (size_t k = 0; k < LEN; k += 97) {
            double want = (double)(i * 1000 + (int64_t)(k % 977)) +
                          0.5 * (double)(1000 + (int64_t)(k % 977));
            CHECK(p[k] == want, "x[%d][%zu] = %g, want %g", i, k, p[k], want);
        }
        CHECK_OK(cask_data_release(x[i]), "release");
    }
    cask_dist_graph_destroy(g);
    st = cask_dist_finalize(e.dist);
    CHECK(st == CASK_OK, "finalize after a recovered loss: %s", cask_status_string(st));
    cask_shutdown(e.rt);
    dt_report_survivor(e.rank);
    printf("[rank %d] survived\n", e.rank);
    fflush(stdout);
    _exit(0);
}

/* ---- overlap ---- */

static void test_overlap(void)
{
    setenv("CASK_DIST_STEAL", "0", 1);   /* placement by data only */
    env e;
    setup(&e, 10000);
    int other = e.size > 1 ? 1 : 0;
    static double amem[LEN], cmem[8];
    cask_data *a, *b, *s, *c;
    CHECK_OK(cask_dist_data_create(e.dist, sizeof amem, 0, amem, &a), "a");
    CHECK_OK(cask_dist_data_create(e.dist, 8 * sizeof(double), other, NULL, &b), "b");
    CHECK_OK(cask_dist_data_create(e.dist, 8 * sizeof(double), other, NULL, &s), "s");
    CHECK_OK(cask_dist_data_create(e.dist, sizeof cmem, 0, cmem, &c), "c");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e.dist, &g), "graph");
    int64_t seed = 7;
    add1(g, e.fill, b, CASK_WRITE, NULL, 0, &seed, sizeof seed, "fill b");   /* on rank 1 */
    add1(g, e.nap, s, CASK_RW, NULL, 0, NULL, 0, "nap");                     /* on rank 1 */
    cask_access acc[3] = { { c, CASK_WRITE }, { a, CASK_READ }, { b, CASK_READ } };
    cask_task_desc d = { .field_mask = CASK_TASK_NAME, .kernel = e.stamp, .access = acc,
                         .naccess = 3, .name = "stamp" };
    size_t stamp_index;
    CHECK_OK(cask_dist_graph_add_task(g, &d, &stamp_index), "add stamp");   /* on rank 0 */
    for (int run = 0; run < 2; run++) {
        double t0 = dt_now();
        CHECK_OK(cask_dist_graph_compute(g), "compute: %s", cask_dist_graph_error(g));
        double total = dt_now() - t0;
        int where;
        CHECK_OK(cask_dist_graph_task_rank(g, stamp_index, &where), "task rank");
        CHECK(where == 0, "the stamp task went to rank %d", where);
        if (e.rank == 0) {
            void *p;
            CHECK_OK(cask_data_acquire(c, CASK_READ, &p), "acquire c");
            double ran_at = ((double *)p)[0] - t0, got = ((double *)p)[1];
            CHECK_OK(cask_data_release(c), "release c");
            printf("[rank 0] overlap run %d: stamp ran %.3f s into a %.3f s compute\n", run,
                   ran_at, total);
            CHECK(got == 7000.0, "the stamp task read %g from rank %d's chunk, not 7000", got,
                  other);
            CHECK(total >= 0.55, "the compute ended (%.3f s) before rank %d's nap", total,
                  other);
            if (other)
                CHECK(ran_at < 0.35, "the stamp task waited %.3f s: for the nap on rank 1, "
                      "not only for the chunk it reads", ran_at);
        }
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    teardown(&e);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "flow";
    if (!strcmp(what, "flow"))
        test_flow();
    else if (!strcmp(what, "balance"))
        test_balance();
    else if (!strcmp(what, "taskfail"))
        test_taskfail();
    else if (!strcmp(what, "mismatch"))
        test_mismatch();
    else if (!strcmp(what, "kill"))
        test_kill();
    else if (!strcmp(what, "gather"))
        test_gather();
    else if (!strcmp(what, "overlap"))
        test_overlap();
    else {
        fprintf(stderr, "usage: test_dist_graph flow|balance|taskfail|mismatch|kill|gather|overlap\n");
        return 2;
    }
    if (dt_rank_ == 0)
        printf("test_dist_graph %s: ok\n", what);
    return 0;
}
