/* test_future.c: futures on tasks and on a datum's last writer: waiting for,
 * testing and calling back on one task without waiting for the graph, and the task's
 * error carried by its future. */
#include <string.h>
#include "test_helpers.h"

#define NT 10000
#define NCHAINS 100

static _Atomic int done_flag[NT];
static _Atomic int callbacks;
static _Atomic int callback_saw_unfinished;

static cask_status mark_task(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id % 997 == 0)
        spin_ns(20000);
    atomic_store(&done_flag[id], 1);
    return CASK_OK;
}

static void on_done(cask_future *f, void *arg)
{
    int id = (int)(intptr_t)arg;
    if (!cask_future_test(f) || !atomic_load(&done_flag[id]))
        atomic_fetch_add(&callback_saw_unfinished, 1);
    atomic_fetch_add(&callbacks, 1);
}

Test(future, futures_on_10000_tasks, .timeout = 120)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    cask_kernel *k = kernel(rt, "mark", mark_task);
    static cask_data *d[NCHAINS];
    static int mem[NCHAINS];
    for (int c = 0; c < NCHAINS; c++)
        cr_assert_eq(cask_data_register(rt, &mem[c], sizeof mem[c], &d[c]), CASK_OK);
    static cask_task *t[NT];
    static cask_future *f[NT];
    for (int i = 0; i < NT; i++) {
        atomic_store(&done_flag[i], 0);
        cask_access a = { d[i % NCHAINS], CASK_RW };   /* 100 chains of 100 */
        cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = &a,
                              .naccess = 1, .args = &i, .args_size = sizeof i };
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK);
    }
    atomic_store(&callbacks, 0);
    atomic_store(&callback_saw_unfinished, 0);
    /* half before submit (for the next run), half while it runs */
    for (int i = 0; i < NT; i += 2) {
        cr_assert_eq(cask_task_future(t[i], &f[i]), CASK_OK);
        cr_assert_eq(cask_future_then(f[i], on_done, (void *)(intptr_t)i), CASK_OK);
    }
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    for (int i = 1; i < NT; i += 2) {
        cr_assert_eq(cask_task_future(t[i], &f[i]), CASK_OK);
        cr_assert_eq(cask_future_then(f[i], on_done, (void *)(intptr_t)i), CASK_OK);
    }
    /* wait in an order unrelated to the graph's */
    uint64_t rng = 3;
    for (int n = 0; n < NT; n++) {
        int i = (int)(rng_next(&rng) % NT);
        cr_assert_eq(cask_future_wait(f[i]), CASK_OK);
        cr_assert(atomic_load(&done_flag[i]), "future %d done before its task", i);
        cr_assert(cask_future_test(f[i]));
    }
    for (int i = 0; i < NT; i++) {
        cr_assert_eq(cask_future_wait(f[i]), CASK_OK);
        cr_assert_str_eq(cask_future_error(f[i]), "");
    }
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(atomic_load(&callbacks), NT, "callbacks %d", atomic_load(&callbacks));
    cr_assert_eq(atomic_load(&callback_saw_unfinished), 0);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    for (int c = 0; c < NCHAINS; c++)
        cr_assert_eq(cask_data_destroy(d[c]), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* A future returns as soon as its task is done, while the rest of the graph is held. */
Test(future, a_future_does_not_wait_for_the_whole_graph, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    cask_kernel *gate = kernel(rt, "gate", gate_task), *k = kernel(rt, "mark", mark_task);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cask_task_desc gd = { .kernel = gate };
    cr_assert_eq(cask_graph_add_task(g, &gd, NULL), CASK_OK);
    int id = 5;
    atomic_store(&done_flag[id], 0);
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .args = &id,
                          .args_size = sizeof id };
    cask_task *t;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cask_future *f;
    cr_assert_eq(cask_task_future(t, &f), CASK_OK);
    cr_assert_eq(cask_future_wait(f), CASK_OK);
    cr_assert(atomic_load(&done_flag[id]));
    cr_assert_eq(atomic_load(&gate_open), 0);   /* the gate still holds the graph */
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

static cask_status fail_task(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "bad input %d", arg_int(ctx));
}

static cask_status plus_task(cask_task_ctx *ctx)
{
    *(int *)cask_task_buffer(ctx, 0) += 1;
    return CASK_OK;
}

Test(future, a_future_carries_its_tasks_error, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    cask_kernel *bad = kernel(rt, "bad", fail_task), *plus = kernel(rt, "plus", plus_task);
    int x = 0, y = 0;
    cask_data *dx, *dy;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &dx), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &y, sizeof y, &dy), CASK_OK);
    cask_access ax = { dx, CASK_RW }, ay = { dy, CASK_RW };
    cask_task_desc ok = { .kernel = plus, .access = &ay, .naccess = 1 };
    int v = 42;
    cask_task_desc fails = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME, .kernel = bad,
                             .access = &ax, .naccess = 1, .args = &v, .args_size = sizeof v,
                             .name = "parse" };
    cask_task_desc after = { .kernel = plus, .access = &ax, .naccess = 1 };
    cask_task *t_ok, *t_bad, *t_after;
    cr_assert_eq(cask_graph_add_task(g, &ok, &t_ok), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &fails, &t_bad), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &after, &t_after), CASK_OK);
    cask_future *f_ok, *f_bad, *f_after, *f_x;
    cr_assert_eq(cask_task_future(t_ok, &f_ok), CASK_OK);
    cr_assert_eq(cask_task_future(t_bad, &f_bad), CASK_OK);
    cr_assert_eq(cask_task_future(t_after, &f_after), CASK_OK);
    cr_assert_eq(cask_data_future(g, dx, &f_x), CASK_OK);   /* last writer of x: t_after */
    cr_assert_eq(cask_future_wait(f_bad), CASK_ERR_STATE, "wait before submit must not hang");
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cr_assert_eq(cask_future_wait(f_bad), CASK_ERR_TASK_FAILED);
    cr_assert(strstr(cask_future_error(f_bad), "bad input 42"), "%s", cask_future_error(f_bad));
    cr_assert(strstr(cask_future_error(f_bad), "parse"), "%s", cask_future_error(f_bad));
    cr_assert_eq(cask_future_wait(f_after), CASK_ERR_CANCELLED);
    cr_assert_eq(cask_future_wait(f_x), CASK_ERR_CANCELLED);
    cask_status st_ok = cask_future_wait(f_ok);   /* may have run, or been skipped */
    cr_assert(st_ok == CASK_OK || st_ok == CASK_ERR_CANCELLED);
    cr_assert_eq(cask_graph_wait(g), CASK_ERR_TASK_FAILED);
    cr_assert(strstr(cask_graph_error(g), "bad input 42"));
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(dx), CASK_OK);
    cr_assert_eq(cask_data_destroy(dy), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

Test(future, a_data_future_waits_for_the_last_writer, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    cask_kernel *plus = kernel(rt, "plus", plus_task);
    int x = 0, y = 0;
    cask_data *dx, *dy;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &dx), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &y, sizeof y, &dy), CASK_OK);
    cask_future *none;
    cr_assert_eq(cask_data_future(g, dy, &none), CASK_OK);
    cr_assert(cask_future_test(none), "no writer: done at once");
    cask_access ax = { dx, CASK_RW };
    cask_task_desc td = { .kernel = plus, .access = &ax, .naccess = 1 };
    for (int i = 0; i < 50; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cask_future *fx;
    cr_assert_eq(cask_data_future(g, dx, &fx), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cr_assert_eq(cask_future_wait(fx), CASK_OK);
    cr_assert_eq(x, 50, "x = %d when its last writer's future was done", x);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(dx), CASK_OK);
    cr_assert_eq(cask_data_destroy(dy), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}
