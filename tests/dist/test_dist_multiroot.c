/* tests/dist/test_dist_multiroot.c: one datum gathered to several roots, with a rank
 * lost at a chosen point. An SPMD program for tests/dist/multiroot.sh, which
 * runs it under run.sh --survivors NP-1 with CASK_DIST_TEST_KILL=R:K for many K.
 *
 * The graph is cask-jacobi's former pattern, small: NB blocks u[b] (owner b % P, a
 * loader makes their first content), coupled to their neighbour (v[b] = u[b] + u[b+1],
 * then u[b] = v[b] / 4 + 1, in place), and a one-double residual r[b] = sum of u[b]
 * gathered to every rank but its owner (one datum, several roots). Every rank decides
 * from the gathered residuals whether to compute again, as cask-jacobi does. After
 * every compute, each rank compares every residual it holds (its own blocks' handles,
 * the gathered copies of the others) bit for bit with a replay of the same arithmetic
 * in plain C: a gather that a recovery skipped (stale destination), a lost DONE (a
 * hang, ended by run.sh) or a wrong value fails the case.
 *
 *   test_dist_multiroot [COMPUTES]      (default 5)
 */
#include <time.h>
#include <unistd.h>

#include "cask/cask.h"
#include "dist_test.h"

enum { NB = 8, LEN = 512 };

/* loader of u[b]: [0] W = b + k / LEN */
static cask_status k_load(cask_task_ctx *ctx)
{
    double *u = cask_task_buffer(ctx, 0);
    int b;
    memcpy(&b, cask_task_args(ctx, NULL), sizeof b);
    for (int k = 0; k < LEN; k++)
        u[k] = b + (double)k / LEN;
    return CASK_OK;
}

/* [0] W = [1] R + [2] R; a short nap spreads the ranks' timings */
static cask_status k_add(cask_task_ctx *ctx)
{
    double *v = cask_task_buffer(ctx, 0);
    const double *a = cask_task_buffer(ctx, 1), *c = cask_task_buffer(ctx, 2);
    for (int k = 0; k < LEN; k++)
        v[k] = a[k] + c[k];
    struct timespec ts = { 0, 1000000L };
    nanosleep(&ts, NULL);
    return CASK_OK;
}

/* [0] RW = [1] R / 4 + 1 */
static cask_status k_relax(cask_task_ctx *ctx)
{
    double *u = cask_task_buffer(ctx, 0);
    const double *v = cask_task_buffer(ctx, 1);
    for (int k = 0; k < LEN; k++)
        u[k] = v[k] / 4 + 1;
    return CASK_OK;
}

/* [0] W (one double) = sum of [1] R */
static cask_status k_resid(cask_task_ctx *ctx)
{
    double *r = cask_task_buffer(ctx, 0);
    const double *u = cask_task_buffer(ctx, 1);
    double s = 0;
    for (int k = 0; k < LEN; k++)
        s += u[k];
    *r = s;
    return CASK_OK;
}

static cask_kernel *reg(cask_runtime *rt, const char *name, cask_kernel_fn fn)
{
    cask_kernel_desc kd = { .name = name, .cpu = fn };
    cask_kernel *k;
    CHECK_OK(cask_kernel_register(rt, &kd, &k), "register %s", name);
    return k;
}

/* the replay: the same arithmetic in the same order */
static double ref_u[NB][LEN], ref_v[NB][LEN], ref_r[NB];

static void replay_init(void)
{
    for (int b = 0; b < NB; b++)
        for (int k = 0; k < LEN; k++)
            ref_u[b][k] = b + (double)k / LEN;
}

static void replay_compute(void)
{
    for (int b = 0; b < NB; b++)
        for (int k = 0; k < LEN; k++)
            ref_v[b][k] = ref_u[b][k] + ref_u[(b + 1) % NB][k];
    for (int b = 0; b < NB; b++) {
        for (int k = 0; k < LEN; k++)
            ref_u[b][k] = ref_v[b][k] / 4 + 1;
        double s = 0;
        for (int k = 0; k < LEN; k++)
            s += ref_u[b][k];
        ref_r[b] = s;
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int computes = argc > 1 ? atoi(argv[1]) : 5;
    if (computes < 1) {
        fprintf(stderr, "usage: test_dist_multiroot [COMPUTES >= 1]\n");
        return 2;
    }
    cask_runtime *rt;
    cask_dist *dist;
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = 1, .bind = 0, .ngpu = 0 };
    setenv("CASK_DIST_STEAL", "0", 1);   /* placement by owner: the kill points are stable */
    CHECK_OK(cask_init(&cfg, &rt), "cask_init");
    cask_dist_config dc = { .field_mask = CASK_DIST_PEER_TIMEOUT_MS | CASK_DIST_HEARTBEAT_MS,
                            .peer_timeout_ms = 5000, .heartbeat_ms = 200 };
    CHECK_OK(cask_dist_init(rt, &dc, &dist), "cask_dist_init");
    int me = dt_rank_ = cask_dist_rank(dist), P = cask_dist_size(dist);
    CHECK(P >= 2, "needs 2 ranks or more");
    cask_kernel *kload = reg(rt, "mr.load", k_load), *kadd = reg(rt, "mr.add", k_add),
                *krelax = reg(rt, "mr.relax", k_relax), *kres = reg(rt, "mr.resid", k_resid);
    cask_data *u[NB], *v[NB], *r[NB];
    static double gathered[NB];
    for (int b = 0; b < NB; b++) {
        int owner = b % P;
        CHECK_OK(cask_dist_data_create(dist, LEN * sizeof(double), owner, NULL, &u[b]), "u");
        CHECK_OK(cask_dist_data_set_loader(dist, u[b], kload, &b, sizeof b), "loader");
        CHECK_OK(cask_dist_data_create(dist, LEN * sizeof(double), owner, NULL, &v[b]), "v");
        CHECK_OK(cask_dist_data_create(dist, sizeof(double), owner, NULL, &r[b]), "r");
        if (owner == me) {   /* the first content, as the loader makes it */
            double *p;
            CHECK_OK(cask_data_acquire(u[b], CASK_WRITE, (void **)&p), "acquire");
            for (int k = 0; k < LEN; k++)
                p[k] = b + (double)k / LEN;
            CHECK_OK(cask_data_release(u[b]), "release");
        }
        gathered[b] = -1;
    }
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(dist, &g), "graph");
    for (int b = 0; b < NB; b++) {
        cask_access a[3] = { { v[b], CASK_WRITE }, { u[b], CASK_READ },
                             { u[(b + 1) % NB], CASK_READ } };
        cask_task_desc d = { .kernel = kadd, .access = a, .naccess = 3 };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add %d", b);
    }
    for (int b = 0; b < NB; b++) {
        cask_access a[2] = { { u[b], CASK_RW }, { v[b], CASK_READ } };
        cask_task_desc d = { .kernel = krelax, .access = a, .naccess = 2 };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "relax %d", b);
        cask_access ar[2] = { { r[b], CASK_WRITE }, { u[b], CASK_READ } };
        cask_task_desc dr = { .kernel = kres, .access = ar, .naccess = 2 };
        CHECK_OK(cask_dist_graph_add_task(g, &dr, NULL), "resid %d", b);
    }
    for (int b = 0; b < NB; b++)   /* one datum, several roots (every rank but its owner) */
        for (int root = 0; root < P; root++)
            if (root != b % P)
                CHECK_OK(cask_dist_graph_gather(g, r[b], root,
                                                root == me ? &gathered[b] : NULL), "gather");
    replay_init();
    double t0 = dt_now();
    int done = 0;
    for (;;) {
        cask_status st = cask_dist_graph_compute(g);
        CHECK(st == CASK_OK, "compute %d: %s: %s", done + 1, cask_status_string(st),
              cask_dist_graph_error(g));
        done++;
        replay_compute();
        double sum = 0;
        for (int b = 0; b < NB; b++) {
            double got;
            if (b % P == me) {
                double *p;
                CHECK_OK(cask_data_acquire(r[b], CASK_READ, (void **)&p), "acquire r");
                got = *p;
                CHECK_OK(cask_data_release(r[b]), "release r");
            } else {
                got = gathered[b];
            }
            CHECK(!memcmp(&got, &ref_r[b], sizeof got), "compute %d: residual of block %d "
                  "(owner %d) is %.17g here, the replay says %.17g%s", done, b, b % P, got,
                  ref_r[b], b % P == me ? "" : " (gathered: a stale destination?)");
            sum += got;
        }
        /* decide from the gathered values, as cask-jacobi does */
        if (done >= computes || sum < 0)
            break;
    }
    printf("[rank %d] %d computes ok in %.2f s\n", me, done, dt_now() - t0);
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    CHECK_OK(cask_dist_finalize(dist), "finalize");
    cask_shutdown(rt);
    dt_report_survivor(me);
    _exit(0);
}
