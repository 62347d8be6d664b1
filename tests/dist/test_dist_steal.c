/* tests/dist/test_dist_steal.c: balancing while a distributed graph runs (an idle rank
 * runs CPU tasks of a busy one), as an SPMD program:
 *
 *   test_dist_steal moves      rank 1 is slowed 4x (CASK_DIST_SLOW_RANK): some of its
 *                              tasks run on other ranks (the counters say so), and the
 *                              results, an ordered reduction included, are the bytes of
 *                              a serial computation with the same kernels; two computes
 *   test_dist_steal off        the same with CASK_DIST_BALANCE=0: nothing moves, same bytes
 *   test_dist_steal thieffail  a task fails on the rank that took it: every rank returns
 *                              CASK_ERR_TASK_FAILED, the message says where it ran (a
 *                              compute in which no task of rank 1's moved, a loaded
 *                              machine, succeeds: it is computed again, 10 times at most)
 *   test_dist_steal thiefdie   the first rank that runs a task of rank 1's dies in it:
 *                              the survivors fail with CASK_ERR_PEER (its chunks have no
 *                              loader, so they cannot be recomputed), no hang
 *                              (run.sh --survivors NP-1)
 *   test_dist_steal badenv     (alone) a bad CASK_DIST_SLOW_RANK or CASK_DIST_BALANCE_BW
 *                              fails cask_dist_init with a message naming it
 *
 * Under tests/dist/run.sh NP (NP >= 2), badenv as a job of one. */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "cask/cask.h"
#include "dist_test.h"

enum { PER_RANK = 24, LEN = 2048, TAB = 256, REPS = 900 };

static int g_rank = -1;   /* this process's rank: the kernels tell a thief from the owner */

typedef struct work_args {
    int64_t owner;
    int32_t mode;             /* 0 plain, 1 fail off the owner, 2 the first thief dies */
    int32_t pad;
} work_args;

/* The body: y = a long, order-sensitive recurrence over x and a table. */
static void work_body(double *y, const double *x, const double *tab, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        double v = x[k];
        for (int j = 0; j < REPS; j++)
            v = v * 0.9990234375 + tab[(k + (size_t)j) % TAB] * 1e-3;
        y[k] = v;
    }
}

/* [0] W y, [1] R x, [2] R table */
static cask_status k_work(cask_task_ctx *ctx)
{
    const work_args *a = cask_task_args(ctx, NULL);
    if (a->owner != g_rank && a->mode == 1)
        return cask_task_fail(ctx, "planted failure on thief rank %d", g_rank);
    if (a->owner != g_rank && a->mode == 2) {
        const char *dir = getenv("CASK_TEST_DIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/thief-died", dir ? dir : "/tmp");
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd >= 0) {   /* the first thief only */
            printf("[rank %d] dying inside a task of rank %lld's\n", g_rank, (long long)a->owner);
            fflush(stdout);
            raise(SIGKILL);
        }
    }
    work_body(cask_task_buffer(ctx, 0), cask_task_buffer(ctx, 1), cask_task_buffer(ctx, 2),
              cask_task_buffer_size(ctx, 0) / sizeof(double));
    return CASK_OK;
}

/* [0] RW acc += 0.5 * [1] R */
static cask_status k_add(cask_task_ctx *ctx)
{
    double *acc = cask_task_buffer(ctx, 0);
    const double *y = cask_task_buffer(ctx, 1);
    for (size_t k = 0; k < cask_task_buffer_size(ctx, 0) / sizeof *acc; k++)
        acc[k] += 0.5 * y[k];
    return CASK_OK;
}

static double x_init(int64_t i, size_t k)
{
    return (double)((i * 7919 + (int64_t)k * 104729) % 1000003) / 1000003.0;
}

static double tab_init(int r, size_t k)
{
    return (double)((r + 1) * 31 + (int)(k % 97));
}

static void run(const char *what, int mode, int balance)
{
    setenv("CASK_DIST_STEAL", "0", 1);            /* placement by data only */
    setenv("CASK_DIST_SLOW_RANK", "1:4", 1);      /* rank 1's bodies take 4x as long */
    setenv("CASK_DIST_BALANCE", balance ? "1" : "0", 1);
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = 1, .bind = 0, .ngpu = 0 };
    cask_runtime *rt;
    CHECK_OK(cask_init(&cfg, &rt), "cask_init");
    cask_dist_config dc = { .field_mask = CASK_DIST_PEER_TIMEOUT_MS | CASK_DIST_HEARTBEAT_MS,
                            .peer_timeout_ms = 3000, .heartbeat_ms = 200 };
    cask_dist *dist;
    cask_status st = cask_dist_init(rt, &dc, &dist);
    char err[1024];
    cask_runtime_error(rt, err, sizeof err);
    CHECK_OK(st, "cask_dist_init: %s", err);
    int me = g_rank = dt_rank_ = cask_dist_rank(dist), P = cask_dist_size(dist);
    CHECK(P >= 2, "needs 2 ranks or more");
    cask_kernel_desc kw = { .name = "work", .cpu = k_work }, ka = { .name = "add", .cpu = k_add };
    cask_kernel *kwork, *kadd;
    CHECK_OK(cask_kernel_register(rt, &kw, &kwork), "register");
    CHECK_OK(cask_kernel_register(rt, &ka, &kadd), "register");

    int n = PER_RANK * P;
    double *xs = calloc((size_t)n * LEN, sizeof *xs), *ys = calloc((size_t)n * LEN, sizeof *ys);
    double *tabs = calloc((size_t)P * TAB, sizeof *tabs), *acc = calloc(LEN, sizeof *acc);
    cask_data **x = calloc((size_t)n, sizeof *x), **y = calloc((size_t)n, sizeof *y);
    cask_data **tab = calloc((size_t)P, sizeof *tab), *hacc;
    CHECK(xs && ys && tabs && acc && x && y && tab, "memory");
    for (int r = 0; r < P; r++) {
        for (size_t k = 0; k < TAB; k++)
            tabs[(size_t)r * TAB + k] = tab_init(r, k);
        CHECK_OK(cask_dist_data_create(dist, TAB * sizeof(double), r, tabs + (size_t)r * TAB,
                                       &tab[r]), "tab");
    }
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < LEN; k++)
            xs[(size_t)i * LEN + k] = x_init(i, k);
        CHECK_OK(cask_dist_data_create(dist, LEN * sizeof(double), i % P, xs + (size_t)i * LEN,
                                       &x[i]), "x");
        CHECK_OK(cask_dist_data_create(dist, LEN * sizeof(double), i % P,
                                       i % P == 0 ? ys + (size_t)i * LEN : NULL, &y[i]), "y");
    }
    CHECK_OK(cask_dist_data_create(dist, LEN * sizeof(double), 0, acc, &hacc), "acc");
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(dist, &g), "graph");
    for (int i = 0; i < n; i++) {
        work_args a = { i % P, i % P == 1 ? mode : 0, 0 };
        cask_access acc3[3] = { { y[i], CASK_WRITE }, { x[i], CASK_READ }, { tab[i % P], CASK_READ } };
        char name[32];
        snprintf(name, sizeof name, "work[%d]", i);
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME, .kernel = kwork,
                             .access = acc3, .naccess = 3, .args = &a, .args_size = sizeof a,
                             .name = name };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add %s", name);
    }
    for (int i = 0; i < n; i++) {   /* the reduction, in a fixed order */
        cask_access acc2[2] = { { hacc, CASK_RW }, { y[i], CASK_READ } };
        cask_task_desc d = { .field_mask = CASK_TASK_NAME, .kernel = kadd, .access = acc2,
                             .naccess = 2, .name = "add" };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add add");
        if (i % P)
            CHECK_OK(cask_dist_graph_gather(g, y[i], 0, me == 0 ? ys + (size_t)i * LEN : NULL),
                     "gather");
    }

    /* thieffail, thiefdie: whether an idle rank takes one of rank 1's tasks depends on
     * the machine (on a loaded one, rank 1 may look idle itself and take others'); a
     * compute where none moved succeeds everywhere (agreed), and the next compute tries
     * again: the failure must come, and be reported so, within FAIL_TRIES computes */
    enum { FAIL_TRIES = 10 };
    int runs = mode ? FAIL_TRIES : 2;
    size_t out = 0, in = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = dt_now();
        st = cask_dist_graph_compute(g);
        double dt = dt_now() - t0;
        cask_dist_graph_info info;
        CHECK_OK(cask_dist_graph_query(g, &info), "query");
        out = info.stolen_out;
        in = info.stolen_in;
        printf("[rank %d] %s run %d: %s in %.3f s; tasks moved out %zu, in %zu%s%s\n", me, what,
               r, cask_status_string(st), dt, out, in, st ? ": " : "",
               st ? cask_dist_graph_error(g) : "");
        if (mode && st == CASK_OK) {   /* nothing of rank 1's moved: try again */
            CHECK(me != 1 || out == 0, "rank 1's tasks ran elsewhere %zu times, yet no "
                  "failure", out);
            continue;
        }
        if (mode == 1) {
            CHECK(st == CASK_ERR_TASK_FAILED, "compute returned %s", cask_status_string(st));
            CHECK(strstr(cask_dist_graph_error(g), "planted failure on thief") &&
                  strstr(cask_dist_graph_error(g), "moved from rank 1"),
                  "message: %s", cask_dist_graph_error(g));
            CHECK(dt < 30, "took %.1f s", dt);
            cask_dist_graph_destroy(g);
            CHECK_OK(cask_dist_finalize(dist), "finalize");
            cask_shutdown(rt);
            goto done;
        }
        if (mode == 2) {
            CHECK(st == CASK_ERR_PEER, "compute returned %s", cask_status_string(st));
            CHECK(dt < 30, "took %.1f s to notice", dt);
            cask_dist_graph_destroy(g);
            st = cask_dist_finalize(dist);   /* the loss was agreed on: OK, or its error */
            CHECK(st == CASK_OK || st == CASK_ERR_PEER, "finalize after a lost rank: %s",
                  cask_status_string(st));
            cask_shutdown(rt);
            dt_report_survivor(me);
            printf("[rank %d] survived\n", me);
            fflush(stdout);
            _exit(0);
        }
        CHECK_OK(st, "compute: %s", cask_dist_graph_error(g));
    }
    CHECK(!mode, "no task of rank 1's ran on another rank in %d computes", FAIL_TRIES);
    if (balance) {
        if (me == 1)
            CHECK(out > 0, "the slowed rank's tasks never ran elsewhere");
        if (P == 2 && me == 0)
            CHECK(in > 0, "rank 0 never ran a task of rank 1's");
    } else {
        CHECK(out == 0 && in == 0, "balancing is off, yet %zu tasks moved out, %zu in", out, in);
    }
    if (me == 0) {
        void *p;
        CHECK_OK(cask_data_acquire(hacc, CASK_READ, &p), "acquire");
        CHECK_OK(cask_data_release(hacc), "release");
        for (int i = 0; i < n; i += P) {
            CHECK_OK(cask_data_acquire(y[i], CASK_READ, &p), "acquire");
            CHECK_OK(cask_data_release(y[i]), "release");
        }
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    CHECK_OK(cask_dist_finalize(dist), "finalize");
    CHECK_OK(cask_shutdown(rt), "shutdown");
    if (me == 0) {
        /* checked after the job ended: the serial run takes seconds on a loaded host, and
           the peers, already in cask_dist_finalize, waited that long for rank 0 (a peer
           timeout of 3 s ended them, at load 30 on 2 cores) */
        /* the same kernels, serially, in the same order */
        double *yr = calloc(LEN, sizeof *yr), *ar = calloc(LEN, sizeof *ar);
        CHECK(yr && ar, "memory");
        for (int r = 0; r < runs; r++)
            for (int i = 0; i < n; i++) {
                work_body(yr, xs + (size_t)i * LEN, tabs + (size_t)(i % P) * TAB, LEN);
                if (r == runs - 1)
                    CHECK(!memcmp(yr, ys + (size_t)i * LEN, LEN * sizeof *yr),
                          "y[%d] differs from the serial computation", i);
                for (size_t k = 0; k < LEN; k++)
                    ar[k] += 0.5 * yr[k];
            }
        CHECK(!memcmp(ar, acc, LEN * sizeof *ar), "the reduction differs from the serial one");
        free(yr);
        free(ar);
    }
done:   /* the buffers outlive the handles registered on them: freed after shutdown */
    free(xs);
    free(ys);
    free(tabs);
    free(acc);
    free(x);
    free(y);
    free(tab);
}

static void badenv(void)
{
    static const char *const cases[][2] = {
        { "CASK_DIST_SLOW_RANK", "1:4" },      /* rank 1 of a job of one */
        { "CASK_DIST_SLOW_RANK", "0" },
        { "CASK_DIST_SLOW_RANK", "0:0.5" },
        { "CASK_DIST_SLOW_RANK", "0:2:nap" },
        { "CASK_DIST_BALANCE_BW", "fast" },
        { "CASK_DIST_BALANCE_BW", "-1" },
    };
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU, .ncpu = 1 };
    cask_runtime *rt;
    CHECK_OK(cask_init(&cfg, &rt), "cask_init");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsetenv("CASK_DIST_SLOW_RANK");
        unsetenv("CASK_DIST_BALANCE_BW");
        setenv(cases[i][0], cases[i][1], 1);
        cask_dist *dist = NULL;
        cask_status st = cask_dist_init(rt, NULL, &dist);
        char err[1024];
        cask_runtime_error(rt, err, sizeof err);
        CHECK(st == CASK_ERR_INVALID && !dist, "%s=%s: cask_dist_init returned %s", cases[i][0],
              cases[i][1], cask_status_string(st));
        CHECK(strstr(err, cases[i][0]), "%s=%s: message: %s", cases[i][0], cases[i][1], err);
        printf("%s=%s: %s\n", cases[i][0], cases[i][1], err);
    }
    unsetenv("CASK_DIST_BALANCE_BW");
    setenv("CASK_DIST_SLOW_RANK", "0:2:spin", 1);   /* valid */
    cask_dist *dist;
    CHECK_OK(cask_dist_init(rt, NULL, &dist), "a valid CASK_DIST_SLOW_RANK refused");
    CHECK_OK(cask_dist_finalize(dist), "finalize");
    CHECK_OK(cask_shutdown(rt), "shutdown");
    dt_rank_ = 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "moves";
    if (!strcmp(what, "moves"))
        run(what, 0, 1);
    else if (!strcmp(what, "off"))
        run(what, 0, 0);
    else if (!strcmp(what, "thieffail"))
        run(what, 1, 1);
    else if (!strcmp(what, "thiefdie"))
        run(what, 2, 1);
    else if (!strcmp(what, "badenv"))
        badenv();
    else {
        fprintf(stderr, "usage: test_dist_steal moves|off|thieffail|thiefdie|badenv\n");
        return 2;
    }
    if (dt_rank_ == 0)
        printf("test_dist_steal %s: ok\n", what);
    return 0;
}
