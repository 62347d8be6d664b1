/* tests/test_graph_task.c: what a task sees while it runs (its buffers, arguments, name,
 * device and worker) and what a graph's DOT output names. Suite graph, in `meson test
 * --suite unit`. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"
#include "graph_helpers.h"
#include "test_helpers.h"

TestSuite(graph, .fini = leak_check, .timeout = 120);

/* ---- what a task sees ---- */

typedef struct ctx_seen {
    int nbuffers;
    void *buf0, *buf_out_of_range;
    size_t size0, size_out_of_range;
    int device, worker;
    void *stream;
    char name[64];
    int args_aligned;
    char args[40];
    size_t args_size;
} ctx_seen;
static ctx_seen seen_ctx;

static cask_status look_task(cask_task_ctx *ctx)
{
    seen_ctx.nbuffers = cask_task_nbuffers(ctx);
    seen_ctx.buf0 = cask_task_buffer(ctx, 0);
    seen_ctx.buf_out_of_range = cask_task_buffer(ctx, 1);
    seen_ctx.size0 = cask_task_buffer_size(ctx, 0);
    seen_ctx.size_out_of_range = cask_task_buffer_size(ctx, -1);
    seen_ctx.device = cask_task_device(ctx);
    seen_ctx.worker = cask_task_worker(ctx);
    seen_ctx.stream = cask_task_cuda_stream(ctx);
    snprintf(seen_ctx.name, sizeof seen_ctx.name, "%s", cask_task_name(ctx));
    const void *a = cask_task_args(ctx, &seen_ctx.args_size);
    seen_ctx.args_aligned = (uintptr_t)a % alignof(max_align_t) == 0;
    if (a && seen_ctx.args_size)
        memcpy(seen_ctx.args, a, seen_ctx.args_size < sizeof seen_ctx.args
                                     ? seen_ctx.args_size : sizeof seen_ctx.args);
    return CASK_OK;
}

Test(graph, task_sees_its_buffers_args_name_and_worker)
{
    cask_runtime *rt = start(3);
    cask_kernel *k = kernel(rt, "look", look_task);
    char host[100];
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    char args[33];
    memset(args, 'a', sizeof args);
    cask_access acc = { d, CASK_READ };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME, .kernel = k,
                          .access = &acc, .naccess = 1, .args = args + 1,
                          .args_size = 32, .name = "my-task" };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    memset(args, 'z', sizeof args); /* the graph holds its own copy */
    compute_ok(g);
    cr_assert_eq(seen_ctx.nbuffers, 1);
    cr_assert_eq(seen_ctx.buf0, host, "a CPU task works in the registered memory");
    cr_assert_null(seen_ctx.buf_out_of_range);
    cr_assert_eq(seen_ctx.size0, sizeof host);
    cr_assert_eq(seen_ctx.size_out_of_range, 0);
    cr_assert_eq(seen_ctx.device, -1);
    cr_assert_null(seen_ctx.stream);
    cr_assert(seen_ctx.worker >= 0 && seen_ctx.worker < 3, "worker %d", seen_ctx.worker);
    cr_assert_str_eq(seen_ctx.name, "my-task");
    cr_assert(seen_ctx.args_aligned, "args are not aligned");
    cr_assert_eq(seen_ctx.args_size, 32);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(seen_ctx.args[i], 'a', "args byte %d", i);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, task_name_defaults_to_the_kernel_name)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "look", look_task);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .kernel = k };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    compute_ok(g);
    cr_assert_str_eq(seen_ctx.name, "look");
    cr_assert_eq(seen_ctx.nbuffers, 0);
    cr_assert_eq(seen_ctx.args_size, 0);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, dot_output_names_tasks_and_edges)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    int x;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cr_assert_eq(cask_data_set_name(d, "the_data"), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    add(g, k, 0, &w, 1);
    add(g, k, 1, &r, 1);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(cask_graph_dot(g, f, 1), CASK_OK);
    fclose(f);
    cr_assert_not_null(strstr(text, "digraph"), "%s", text);
    cr_assert_not_null(strstr(text, "->"), "%s", text);
    cr_assert_not_null(strstr(text, "tick"), "%s", text);
    cr_assert_not_null(strstr(text, "the_data"), "%s", text);
    free(text);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
