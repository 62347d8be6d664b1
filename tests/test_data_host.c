/* tests/test_data_host.c: data handles on the host. Registering, creating, acquiring and
 * destroying them, what is busy when (acquired handles, handles of a running graph),
 * names in errors, and shutdown flushing handles never destroyed. Suite data, in `meson
 * test --suite unit`. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cask/cask.h"
#include "data_helpers.h"
#include "test_helpers.h"

TestSuite(data, .fini = leak_check, .timeout = 120);

/* ---- handles on the host ---- */

Test(data, register_acquire_release_destroy)
{
    cask_runtime *rt = start(2);
    int32_t host[N];
    for (int i = 0; i < N; i++)
        host[i] = i;
    cask_data *d = NULL;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cr_assert_not_null(d);
    size_t bytes = 0;
    cr_assert_eq(cask_data_size(d, &bytes), CASK_OK);
    cr_assert_eq(bytes, sizeof host);
    int32_t *p = NULL;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, (void **)&p), CASK_OK);
    cr_assert_eq(p, host, "a registered handle is acquired in its own memory");
    cr_assert_eq(p[17], 17);
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cr_assert_eq(cask_data_acquire(d, CASK_RW, (void **)&p), CASK_OK);
    p[17] = -17;
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(host[17], -17);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, bad_registrations_are_invalid)
{
    cask_runtime *rt = start(1);
    int x;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, NULL, 4, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register(rt, &x, 0, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register(NULL, &x, sizeof x, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_create(rt, 0, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_create(rt, 16, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, destroy_of_null_is_ok)
{
    cr_assert_eq(cask_data_destroy(NULL), CASK_OK);
}

Test(data, created_handle_holds_what_a_task_wrote)
{
    cask_runtime *rt = start(2);
    cask_kernel *fill = kernel(rt, "fill", fill_k);
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &d), CASK_OK);
    size_t bytes = 0;
    cr_assert_eq(cask_data_size(d, &bytes), CASK_OK);
    cr_assert_eq(bytes, N * sizeof(int32_t));
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE };
    add_on(g, fill, ON_ANY, 0, &w, 1);
    compute_ok(g);
    expect_array(d, 3, 1, "created");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, created_handle_written_by_the_host_is_read_by_a_task)
{
    cask_runtime *rt = start(2);
    cask_kernel *copy = kernel(rt, "copy", copy_k);
    cask_data *d, *out;
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &d), CASK_OK);
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &out), CASK_OK);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, (void **)&p), CASK_OK);
    cr_assert_not_null(p);
    for (int i = 0; i < N; i++)
        p[i] = 2 * i + 9;
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access acc[2] = { { d, CASK_READ }, { out, CASK_WRITE } };
    add_on(g, copy, ON_ANY, 0, acc, 2);
    compute_ok(g);
    expect_array(out, 2, 9, "out");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_data_destroy(out), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, latest_write_is_visible_after_compute)
{
    cask_runtime *rt = start(4);
    cask_kernel *set = kernel(rt, "set", set_id_k);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE }, rw = { d, CASK_RW };
    for (int i = 1; i <= 20; i++)
        add_on(g, set, ON_ANY, i, &w, 1);
    add_on(g, add5, ON_ANY, 0, &rw, 1);
    compute_ok(g);
    expect_array(d, 0, 25, "after 20 writes and an add");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, host_changes_inside_acquire_reach_the_next_graph)
{
    cask_runtime *rt = start(2);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    add_on(g, add5, ON_ANY, 0, &rw, 1);
    compute_ok(g);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(d, CASK_RW, (void **)&p), CASK_OK);
    for (int i = 0; i < N; i++)
        p[i] = 10 * i;
    cr_assert_eq(cask_data_release(d), CASK_OK);
    compute_ok(g);
    expect_array(d, 10, 5, "after host write and add");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, acquire_twice_is_a_state_error)
{
    cask_runtime *rt = start(1);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_ERR_STATE);
    cr_assert_eq(cask_data_acquire(d, CASK_RW, &p), CASK_ERR_STATE);
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cr_assert_eq(cask_data_release(d), CASK_ERR_STATE, "release without acquire");
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, acquire_with_bad_arguments_is_invalid)
{
    cask_runtime *rt = start(1);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, (cask_access_mode)0, &p), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_acquire(d, CASK_READ, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_acquire(NULL, CASK_READ, &p), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, handles_of_a_running_graph_are_busy)
{
    cask_runtime *rt = start(2);
    cask_kernel *gate = kernel(rt, "gate", gate_task);
    int x = 0, y = 0, z = 0;
    cask_data *dx, *dy, *dz;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &dx), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &y, sizeof y, &dy), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &z, sizeof z, &dz), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access acc[2] = { { dx, CASK_READ }, { dy, CASK_RW } };
    add_on(g, gate, ON_ANY, 0, acc, 2);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    wait_entered();
    void *p;
    cr_assert_eq(cask_data_acquire(dx, CASK_READ, &p), CASK_ERR_BUSY, "acquire read");
    cr_assert_eq(cask_data_acquire(dy, CASK_RW, &p), CASK_ERR_BUSY, "acquire rw");
    cr_assert_eq(cask_data_destroy(dy), CASK_ERR_BUSY, "destroy");
    cr_assert_eq(cask_data_set_writeback(dy, 1), CASK_ERR_BUSY, "set_writeback");
    /* A handle the graph does not use is free. */
    cr_assert_eq(cask_data_acquire(dz, CASK_RW, &p), CASK_OK);
    cr_assert_eq(cask_data_release(dz), CASK_OK);
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_data_acquire(dy, CASK_RW, &p), CASK_OK, "acquire after wait");
    cr_assert_eq(cask_data_release(dy), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(dx), CASK_OK);
    cr_assert_eq(cask_data_destroy(dy), CASK_OK);
    cr_assert_eq(cask_data_destroy(dz), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, submitting_a_graph_over_an_acquired_handle_is_busy)
{
    cask_runtime *rt = start(2);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    add_on(g, add5, ON_ANY, 0, &rw, 1);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_ERR_BUSY);
    cr_assert_eq(cask_data_release(d), CASK_OK);
    compute_ok(g);
    expect_array(d, 0, 5, "after release and compute");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, two_running_graphs_cannot_share_a_handle)
{
    cask_runtime *rt = start(2);
    cask_kernel *gate = kernel(rt, "gate", gate_task);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_access rw = { d, CASK_RW };
    add_on(g1, gate, ON_ANY, 0, &rw, 1);
    add_on(g2, add5, ON_ANY, 0, &rw, 1);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cr_assert_eq(cask_graph_submit(g1), CASK_OK);
    cr_assert_eq(cask_graph_submit(g2), CASK_ERR_BUSY);
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g1), CASK_OK);
    compute_ok(g2);
    expect_array(d, 0, 5, "after the second graph");
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static cask_status fail_k(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "bad value in row %d", 12);
}

Test(data, errors_name_the_data)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "checker", fail_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    /* 63 characters: the longest name kept whole. */
    const char *name = "temperature_2024_chunk_0007_of_0128_xxxxxxxxxxxxxxxxxxxxxxxxxxx";
    cr_assert_eq(strlen(name), 63);
    cr_assert_eq(cask_data_set_name(d, name), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access r = { d, CASK_READ };
    add_on(g, k, ON_ANY, 0, &r, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    const char *msg = cask_graph_error(g);
    cr_assert_not_null(strstr(msg, name), "no data name in: %s", msg);
    cr_assert_not_null(strstr(msg, "bad value in row 12"), "no message in: %s", msg);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, set_name_copies_and_survives_a_long_name)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "checker", fail_k);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    char name[300];
    memset(name, 'q', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    cask_status st = cask_data_set_name(d, name);
    cr_assert(st == CASK_OK || st == CASK_ERR_INVALID, "%s", cask_status_string(st));
    strcpy(name, "short_name");
    cr_assert_eq(cask_data_set_name(d, name), CASK_OK);
    strcpy(name, "overwritten");
    cask_graph *g = graph(rt);
    cask_access r = { d, CASK_READ };
    add_on(g, k, ON_ANY, 0, &r, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert_not_null(strstr(cask_graph_error(g), "short_name"), "%s", cask_graph_error(g));
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, shutdown_flushes_handles_never_destroyed)
{
    cask_runtime *rt = start(2);
    cask_kernel *fill = kernel(rt, "fill", fill_k);
    static int32_t host[N];
    cask_data *d, *created;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cr_assert_eq(cask_data_create(rt, 4096, &created), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE };
    add_on(g, fill, ON_ANY, 0, &w, 1);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(host[i], 3 * i + 1);
}
