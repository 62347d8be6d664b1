/* tests/test_graph_scale.c: graphs of a million tasks: independent, chained by explicit
 * dependencies or by access modes, a million readers before one writer, a random DAG.
 * Suite graph (one case) runs in `meson test --suite unit`, graph_stress in `--suite
 * stress`. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"
#include "graph_helpers.h"
#include "test_helpers.h"

TestSuite(graph, .fini = leak_check, .timeout = 120);
TestSuite(graph_stress, .fini = leak_check, .timeout = 600);

/* ---- a million tasks ---- */

#define MAX_WORKERS 64
static struct { _Alignas(64) uint64_t n; } per_worker[MAX_WORKERS];

static cask_status count_per_worker(cask_task_ctx *ctx)
{
    per_worker[cask_task_worker(ctx)].n++;
    return CASK_OK;
}

static uint64_t total_per_worker(void)
{
    uint64_t n = 0;
    for (int i = 0; i < MAX_WORKERS; i++)
        n += per_worker[i].n;
    return n;
}

static void independent_tasks(int ncpu, int ntasks)
{
    cask_runtime *rt = start(ncpu);
    cask_kernel *k = kernel(rt, "count", count_per_worker);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .kernel = k };
    for (int i = 0; i < ntasks; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    memset(per_worker, 0, sizeof per_worker);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), (uint64_t)ntasks);
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, (size_t)ntasks);
    cr_assert_eq(info.ntasks_run, (size_t)ntasks);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, million_independent_tasks_complete)
{
    independent_tasks(2, 1000000);
}

Test(graph_stress, million_independent_tasks_on_many_workers)
{
    independent_tasks(16, 1000000);
}

static int64_t chain_last;

static cask_status chain_step(cask_task_ctx *ctx)
{
    int i = arg_int(ctx);
    if (chain_last != i - 1)
        return cask_task_fail(ctx, "chain task %d ran after %lld", i, (long long)chain_last);
    chain_last = i;
    return CASK_OK;
}

Test(graph_stress, million_task_chain_by_explicit_dependencies)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "step", chain_step);
    cask_graph *g = graph(rt);
    cask_task *prev = NULL;
    for (int i = 0; i < 1000000; i++) {
        cask_task *t = add(g, k, i, NULL, 0);
        if (prev)
            cr_assert_eq(cask_task_depend(t, prev), CASK_OK);
        prev = t;
    }
    chain_last = -1;
    compute_ok(g);
    cr_assert_eq(chain_last, 999999);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph_stress, million_task_chain_by_access_modes)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    cask_task_desc td = { .kernel = k, .access = &rw, .naccess = 1 };
    for (int i = 0; i < 1000000; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 1000000);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph_stress, million_readers_then_one_writer)
{
    /* WAR with a huge reader set: the writer waits for a million readers. */
    cask_runtime *rt = start(4);
    cask_kernel *count = kernel(rt, "count", count_per_worker);
    cask_kernel *inc = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access r = { d, CASK_READ }, rw = { d, CASK_RW };
    cask_task_desc rd_desc = { .kernel = count, .access = &r, .naccess = 1 };
    for (int i = 0; i < 1000000; i++)
        cr_assert_eq(cask_graph_add_task(g, &rd_desc, NULL), CASK_OK);
    cask_task_desc wr_desc = { .kernel = inc, .access = &rw, .naccess = 1 };
    cr_assert_eq(cask_graph_add_task(g, &wr_desc, NULL), CASK_OK);
    memset(per_worker, 0, sizeof per_worker);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), 1000000);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 1);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph_stress, million_task_random_dag)
{
    cask_runtime *rt = start(8);
    cask_kernel *k = kernel(rt, "count", count_per_worker);
    cask_graph *g = graph(rt);
    enum { N = 1000000, WINDOW = 100 };
    cask_task **t = malloc(N * sizeof *t);
    cr_assert_not_null(t);
    uint64_t s = 9;
    cask_task_desc td = { .kernel = k };
    for (int i = 0; i < N; i++) {
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK);
        int npred = i == 0 ? 0 : (int)(rng_next(&s) % 4);
        int last = -1;
        for (int p = 0; p < npred; p++) {
            int back = 1 + (int)(rng_next(&s) % (uint64_t)(i < WINDOW ? i : WINDOW));
            if (i - back == last)
                continue;
            last = i - back;
            cr_assert_eq(cask_task_depend(t[i], t[i - back]), CASK_OK);
        }
    }
    memset(per_worker, 0, sizeof per_worker);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), N);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), 2 * N);
    free(t);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
