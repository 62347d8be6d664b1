/* tests/test_graph_misuse.c: what building and running a graph refuses: tasks without a
 * kernel, too many or bad accesses, an unknown or impossible place, a CUDA-only kernel
 * without a GPU, changes to a running graph; and the trivial cases that must work
 * (destroying NULL, computing an empty graph). Suite graph, in `meson test --suite
 * unit`. */
#include <criterion/criterion.h>
#include <stdatomic.h>

#include "cask/cask.h"
#include "graph_helpers.h"
#include "test_helpers.h"

TestSuite(graph, .fini = leak_check, .timeout = 120);

/* ---- misuse ---- */

static cask_status nop_task(cask_task_ctx *ctx) { return CASK_OK; }

Test(graph, task_without_kernel_is_invalid)
{
    cask_runtime *rt = start(1);
    cask_graph *g = graph(rt);
    cask_task_desc td = { 0 };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_add_task(g, NULL, &t), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_add_task(NULL, &td, &t), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static cask_status count_buffers_task(cask_task_ctx *ctx)
{
    if (cask_task_nbuffers(ctx) != CASK_MAX_BUFFERS)
        return cask_task_fail(ctx, "%d buffers", cask_task_nbuffers(ctx));
    for (int i = 0; i < CASK_MAX_BUFFERS; i++) {
        int *v = cask_task_buffer(ctx, i);
        if (!v || cask_task_buffer_size(ctx, i) != sizeof(int))
            return cask_task_fail(ctx, "buffer %d", i);
        *v += i;
    }
    return CASK_OK;
}

Test(graph, max_buffers_are_accepted_and_one_more_is_invalid)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "many", count_buffers_task);
    int host[CASK_MAX_BUFFERS + 1] = { 0 };
    cask_data *d[CASK_MAX_BUFFERS + 1];
    cask_access acc[CASK_MAX_BUFFERS + 1];
    for (int i = 0; i <= CASK_MAX_BUFFERS; i++) {
        cr_assert_eq(cask_data_register(rt, &host[i], sizeof host[i], &d[i]), CASK_OK);
        acc[i] = (cask_access){ d[i], CASK_RW };
    }
    cask_graph *g = graph(rt);
    cask_task_desc td = { .kernel = k, .access = acc, .naccess = CASK_MAX_BUFFERS + 1 };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID);
    td.naccess = CASK_MAX_BUFFERS;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    for (int i = 0; i <= CASK_MAX_BUFFERS; i++)
        cr_assert_eq(cask_data_destroy(d[i]), CASK_OK);
    for (int i = 0; i < CASK_MAX_BUFFERS; i++)
        cr_assert_eq(host[i], i);
    cr_assert_eq(host[CASK_MAX_BUFFERS], 0);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, bad_accesses_are_invalid)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "nop", nop_task);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_task *t = NULL;
    cask_access null_data = { NULL, CASK_READ };
    cask_task_desc td = { .kernel = k, .access = &null_data, .naccess = 1 };
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID, "NULL data");
    cask_access mode0 = { d, (cask_access_mode)0 };
    td.access = &mode0;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID, "mode 0");
    cask_access mode4 = { d, (cask_access_mode)4 };
    td.access = &mode4;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID, "mode 4");
    td.access = NULL;
    td.naccess = 2;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID, "NULL access array");
    cask_access ok = { d, CASK_READ };
    td.access = &ok;
    td.naccess = -1;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID, "negative naccess");
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, 0, "a rejected task was added");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, unknown_where_is_invalid)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "nop", nop_task);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .field_mask = CASK_TASK_WHERE, .kernel = k, .where = 7 };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, cpu_only_kernel_forced_on_gpu_is_invalid)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "nop", nop_task);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .field_mask = CASK_TASK_WHERE, .kernel = k, .where = CASK_WHERE_GPU };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static atomic_int cuda_calls;
static cask_status cuda_only_task(cask_task_ctx *ctx)
{
    atomic_fetch_add(&cuda_calls, 1);
    return CASK_OK;
}

Test(graph, cuda_only_kernel_without_gpu_is_unsupported_at_submit)
{
    cask_runtime *rt = start(2);
    cask_kernel_desc kd = { .name = "gpu_only", .cuda = cuda_only_task };
    cask_kernel *k;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_kernel *cpu = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    add(g, cpu, 0, NULL, 0);
    cask_task_desc td = { .kernel = k };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK, "known only at submit");
    reset_clock();
    cr_assert_eq(cask_graph_submit(g), CASK_ERR_UNSUPPORTED);
    cr_assert_eq(atomic_load(&runs[0]), 0, "a task ran in a graph that was refused");
    cr_assert_eq(atomic_load(&cuda_calls), 0);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* A running graph takes new tasks (see test_dynamic.c); explicit edges,
 * a second submit and destroy are still refused while it runs. */
Test(graph, changing_a_running_graph_is_refused_but_adding_tasks_is_not)
{
    cask_runtime *rt = start(2);
    cask_kernel *gate = kernel(rt, "gate", gate_task);
    cask_kernel *tick = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    cask_task *a = add(g, gate, 0, NULL, 0);
    cask_task *b = add(g, tick, 1, NULL, 0);
    cr_assert_eq(cask_task_depend(b, a), CASK_OK);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    reset_clock();
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    wait_entered();
    cask_task *c = add(g, tick, 2, NULL, 0);   /* while running: runs in this run */
    cr_assert_eq(cask_task_depend(c, b), CASK_ERR_STATE, "explicit edge while running");
    cr_assert_eq(cask_graph_submit(g), CASK_ERR_STATE, "submit while running");
    cr_assert_eq(cask_graph_destroy(g), CASK_ERR_BUSY, "destroy while running");
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(atomic_load(&runs[1]), 1);
    cr_assert_eq(atomic_load(&runs[2]), 1, "the task added while running did not run");
    /* Finished: it can be changed again. */
    cask_task_desc td = { .kernel = tick };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, destroy_of_null_is_ok)
{
    cr_assert_eq(cask_graph_destroy(NULL), CASK_OK);
}

Test(graph, empty_graph_computes)
{
    cask_runtime *rt = start(2);
    cask_graph *g = graph(rt);
    compute_ok(g);
    compute_ok(g);
    cr_assert_str_eq(cask_graph_error(g), "");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
