/* tests/dist/test_dist_gather_decide.c: gathered values that the ranks decide on, and a
 * rank that leaves the others computing (cask_dist_graph_gather, cask_dist_graph_compute).
 *
 *   test_dist_gather_decide decide  what cask-jacobi does with its residuals: each rank's
 *                                   datum gathered to every rank, and every rank decides
 *                                   from what it got whether to compute again (a
 *                                   destination left unwritten made the ranks disagree,
 *                                   and the one that computed again waited for the others
 *                                   forever: the gather hang)
 *   test_dist_gather_decide leave   the last rank computes a graph once more than the
 *                                   others, then a graph they never make: both fail there
 *                                   at once, naming the rank that left, instead of waiting
 *                                   for ranks that finalized
 *
 * Results are checked against the reference of gather_helpers.h; placement by data
 * (CASK_DIST_STEAL off). Gathers in every arrangement of owner, writer, reader and root
 * are in test_dist_gather.c. Under tests/dist/run.sh, or alone as a job of one. */
#include "gather_helpers.h"

static void test_decide(env *e)
{
    int P = e->size, res[64];
    pattern *p = calloc(1, sizeof *p);
    CHECK(p, "out of memory");
    pattern_start(e, p, "decide", 0);
    for (int r = 0; r < P; r++) {
        res[r] = take(e, r);
        init_content(e, res[r], 5);
        add_op(p, res[r], 1, -1, -1, r);
    }
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e->dist, &g), "graph");
    for (int k = 0; k < p->nops; k++) {
        const op *o = &p->ops[k];
        mix_args a = { o->salt, 0, 1, 0 };
        cask_access acc[2] = { { e->pool[o->out], CASK_RW }, { e->pin[o->pin], CASK_READ } };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS, .kernel = e->mix, .access = acc,
                             .naccess = 2, .args = &a, .args_size = sizeof a };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add task");
    }
    uint64_t *got[64];
    for (int r = 0; r < P; r++) {
        got[r] = calloc(e->len[res[r]], sizeof(uint64_t));
        CHECK(got[r], "out of memory");
        for (int q = 0; q < P; q++)   /* to every rank, the owner too */
            CHECK_OK(cask_dist_graph_gather(g, e->pool[res[r]], q, q == e->rank ? got[r] : NULL),
                     "gather %d to %d", r, q);
    }
    /* compute until the gathered values say stop, as an iterative solver does */
    int n = 0;
    for (;;) {
        double t0 = dt_now();
        cask_status st = cask_dist_graph_compute(g);
        CHECK_OK(st, "decide, compute %d: %s (after %.1f s)", n, cask_dist_graph_error(g),
                 dt_now() - t0);
        n++;
        e->computes++;
        reference_run(e, p);
        uint64_t v = 0;
        for (int r = 0; r < P; r++)
            v += got[r][0];
        if ((n >= 3 && splitmix(&v) % 4 == 0) || n == 16)
            break;
    }
    for (int r = 0; r < P; r++)
        for (size_t j = 0; j < e->len[res[r]]; j++)
            CHECK(got[r][j] == e->ref[res[r]][j], "decide: after %d computes, datum of rank %d "
                  "gathered here: [%zu] = %#" PRIx64 ", expected %#" PRIx64, n, r, j, got[r][j],
                  e->ref[res[r]][j]);
    printf("[rank %d] decide: %d computes\n", e->rank, n);
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    for (int r = 0; r < P; r++)
        free(got[r]);
    free(p);
}

static void test_leave(env *e)
{
    int P = e->size, last = P - 1, x = take(e, 0);
    init_content(e, x, 9);
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e->dist, &g), "graph");
    for (int r = 0; r < P; r++) {   /* x travels through every rank */
        mix_args a = { 11, 0, 1, 0 };
        cask_access acc[2] = { { e->pool[x], CASK_RW }, { e->pin[r], CASK_READ } };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS, .kernel = e->mix, .access = acc,
                             .naccess = 2, .args = &a, .args_size = sizeof a };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add task");
    }
    uint64_t *got = e->rank == last ? malloc(e->len[x] * sizeof *got) : NULL;
    CHECK_OK(cask_dist_graph_gather(g, e->pool[x], last, got), "gather");
    for (int run = 0; run < 2; run++)
        CHECK_OK(cask_dist_graph_compute(g), "compute %d: %s", run, cask_dist_graph_error(g));
    if (e->rank == last && P > 1) {
        /* the others finalize now: this rank's extra compute must fail, not wait */
        double t0 = dt_now();
        cask_status st = cask_dist_graph_compute(g);
        double dt = dt_now() - t0;
        printf("[rank %d] leave: a compute the others do not make: %s after %.2f s: %s\n",
               e->rank, cask_status_string(st), dt, cask_dist_graph_error(g));
        CHECK(st == CASK_ERR_PEER, "an extra compute returned %s", cask_status_string(st));
        CHECK(strstr(cask_dist_graph_error(g), "left the job"), "message: %s",
              cask_dist_graph_error(g));
        CHECK(dt < 15, "the extra compute took %.1f s to fail", dt);
        cask_dist_graph *h;   /* a graph the others never make */
        CHECK_OK(cask_dist_graph_create(e->dist, &h), "graph");
        cask_access acc = { e->pool[x], CASK_RW };
        mix_args a = { 12, 0, 1, 0 };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS, .kernel = e->mix, .access = &acc,
                             .naccess = 1, .args = &a, .args_size = sizeof a };
        CHECK_OK(cask_dist_graph_add_task(h, &d, NULL), "add task");
        t0 = dt_now();
        st = cask_dist_graph_compute(h);
        dt = dt_now() - t0;
        printf("[rank %d] leave: a graph the others never make: %s after %.2f s: %s\n",
               e->rank, cask_status_string(st), dt, cask_dist_graph_error(h));
        CHECK(st == CASK_ERR_PEER, "a lone graph returned %s", cask_status_string(st));
        CHECK(strstr(cask_dist_graph_error(h), "left the job"), "message: %s",
              cask_dist_graph_error(h));
        CHECK(dt < 15, "the lone graph took %.1f s to fail", dt);
        CHECK_OK(cask_dist_graph_destroy(h), "destroy");
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    free(got);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "decide";
    int decide = !strcmp(what, "decide");
    if (!decide && strcmp(what, "leave")) {
        fprintf(stderr, "usage: test_dist_gather_decide decide|leave\n");
        return 2;
    }
    env e;
    setup(&e, 0);
    double t0 = dt_now();
    if (decide)
        test_decide(&e);
    else
        test_leave(&e);
    return finish(&e, "test_dist_gather_decide", what, t0);
}
