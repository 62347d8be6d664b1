/* tests/test_data_coherence.c: the coherence of replicas on simulated GPUs (host memory
 * standing in for device memory, separate replicas per GPU): tasks run where they are
 * told, the latest write is what every reader sees wherever it runs, acquire and host
 * writes against GPU replicas, write-back, flushes at destroy and shutdown, and the
 * internal discard, which writes nothing back. Suite data, in `meson test --suite
 * unit`. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "cask/cask.h"
#include "runtime/data.h"   /* data_destroy_discard */
#include "data_helpers.h"
#include "test_helpers.h"

TestSuite(data, .fini = leak_check, .timeout = 120);

/* ---- simulated GPUs: coherence ---- */

Test(data, simulated_gpu_tasks_run_where_they_are_told)
{
    cask_runtime *rt = start_sim(2, 2, 0);
    cask_kernel *set = dual_kernel(rt, "set", set_id_k);
    int32_t a[N], b[N], c[N];
    cask_data *da, *db, *dc;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, b, sizeof b, &db), CASK_OK);
    cr_assert_eq(cask_data_register(rt, c, sizeof c, &dc), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { da, CASK_WRITE }, wb = { db, CASK_WRITE }, wc = { dc, CASK_WRITE };
    reset_records();
    add_on(g, set, 0, 1, &wa, 1);
    add_on(g, set, 1, 2, &wb, 1);
    add_on(g, set, ON_CPU, 3, &wc, 1);
    compute_ok(g);
    cr_assert_eq(ran_on[1], 0);
    cr_assert_eq(ran_on[2], 1);
    cr_assert_eq(ran_on[3], -1);
    cr_assert_neq(buffer_seen[1], (void *)a, "GPU 0 wrote the host memory directly");
    cr_assert_neq(buffer_seen[2], (void *)b, "GPU 1 wrote the host memory directly");
    cr_assert_neq(buffer_seen[1], buffer_seen[2]);
    expect_array(da, 0, 1, "a");
    expect_array(db, 0, 2, "b");
    expect_array(dc, 0, 3, "c");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(db), CASK_OK);
    cr_assert_eq(cask_data_destroy(dc), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* write on GPU 0 -> read on GPU 1 -> write on CPU -> read on GPU 0, GPU 1 and CPU. GPU 0
 * still holds the first version: reading it there must not see that stale replica. */
Test(data, latest_write_reaches_every_place_through_gpu_gpu_cpu_chain)
{
    cask_runtime *rt = start_sim(2, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *add5 = dual_kernel(rt, "add5", add5_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], b1[N], out[3][N];
    cask_data *da, *db1, *dout[3];
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, b1, sizeof b1, &db1), CASK_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cask_data_register(rt, out[i], sizeof out[i], &dout[i]), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { da, CASK_WRITE }, rwa = { da, CASK_RW };
    cask_access a_to_b1[2] = { { da, CASK_READ }, { db1, CASK_WRITE } };
    reset_records();
    add_on(g, fill, 0, 1, &wa, 1);            /* GPU 0 writes 3i+1 */
    add_on(g, copy, 1, 2, a_to_b1, 2);        /* GPU 1 reads it */
    add_on(g, add5, ON_CPU, 3, &rwa, 1);      /* CPU makes it 3i+6 */
    const int places[3] = { 0, 1, ON_CPU };
    for (int i = 0; i < 3; i++) {
        cask_access acc[2] = { { da, CASK_READ }, { dout[i], CASK_WRITE } };
        add_on(g, copy, places[i], 4 + i, acc, 2);
    }
    compute_ok(g);
    cr_assert_eq(ran_on[1], 0);
    cr_assert_eq(ran_on[2], 1);
    cr_assert_eq(ran_on[3], -1);
    cr_assert_eq(ran_on[4], 0);
    cr_assert_eq(ran_on[5], 1);
    cr_assert_eq(ran_on[6], -1);
    expect_array(db1, 3, 1, "read on GPU 1");
    expect_array(dout[0], 3, 6, "read on GPU 0");
    expect_array(dout[1], 3, 6, "read on GPU 1");
    expect_array(dout[2], 3, 6, "read on CPU");
    expect_array(da, 3, 6, "acquired");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(db1), CASK_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cask_data_destroy(dout[i]), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, write_on_one_gpu_invalidates_the_other)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *add5 = dual_kernel(rt, "add5", add5_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o0[N], o1[N], o2[N];
    cask_data *da, *d0, *d1, *d2;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o0, sizeof o0, &d0), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o1, sizeof o1, &d1), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o2, sizeof o2, &d2), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { da, CASK_WRITE }, rwa = { da, CASK_RW };
    cask_access to0[2] = { { da, CASK_READ }, { d0, CASK_WRITE } };
    cask_access to1[2] = { { da, CASK_READ }, { d1, CASK_WRITE } };
    cask_access to2[2] = { { da, CASK_READ }, { d2, CASK_WRITE } };
    add_on(g, fill, 0, 1, &wa, 1);     /* 3i+1 on GPU 0 */
    add_on(g, copy, 1, 2, to0, 2);     /* GPU 1 gets a replica */
    add_on(g, add5, 0, 3, &rwa, 1);    /* GPU 0 writes 3i+6: GPU 1's replica is stale */
    add_on(g, copy, 1, 4, to1, 2);     /* GPU 1 must fetch again */
    add_on(g, add5, 1, 5, &rwa, 1);    /* 3i+11 on GPU 1 */
    add_on(g, copy, 0, 6, to2, 2);     /* GPU 0 must fetch again */
    compute_ok(g);
    expect_array(d0, 3, 1, "first read on GPU 1");
    expect_array(d1, 3, 6, "second read on GPU 1");
    expect_array(d2, 3, 11, "read on GPU 0");
    expect_array(da, 3, 11, "acquired");
    /* And again: the second run starts from 3i+11 on the host, stale everywhere else. */
    compute_ok(g);
    expect_array(d1, 3, 6, "second run");
    expect_array(da, 3, 11, "second run, acquired");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(d0), CASK_OK);
    cr_assert_eq(cask_data_destroy(d1), CASK_OK);
    cr_assert_eq(cask_data_destroy(d2), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* a (N words, zeroed by the caller or static) registered as *da, with write-back on if
 * asked, then written 3i+1 by fill on simulated GPU gpu: the graph, computed. */
static cask_graph *fill_on_gpu(cask_runtime *rt, int32_t *a, int gpu, int writeback,
                               cask_data **da)
{
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cr_assert_eq(cask_data_register(rt, a, N * sizeof *a, da), CASK_OK);
    if (writeback)
        cr_assert_eq(cask_data_set_writeback(*da, 1), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { *da, CASK_WRITE };
    add_on(g, fill, gpu, 1, &wa, 1);
    compute_ok(g);
    return g;
}

Test(data, acquire_returns_the_latest_gpu_write)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(da, CASK_READ, (void **)&p), CASK_OK);
    cr_assert_eq(p, a);
    for (int i = 0; i < N; i++)
        cr_assert_eq(p[i], 3 * i + 1);
    cr_assert_eq(cask_data_release(da), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, host_write_in_acquire_invalidates_gpu_replicas)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o[N];
    cask_data *da, *dout;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o, sizeof o, &dout), CASK_OK);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_access wa = { da, CASK_WRITE };
    add_on(g1, fill, 0, 1, &wa, 1);
    compute_ok(g1);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(da, CASK_RW, (void **)&p), CASK_OK);
    for (int i = 0; i < N; i++)
        p[i] = 7 * i - 3;
    cr_assert_eq(cask_data_release(da), CASK_OK);
    cask_access acc[2] = { { da, CASK_READ }, { dout, CASK_WRITE } };
    add_on(g2, copy, 0, 2, acc, 2);   /* GPU 0 still has 3i+1 */
    compute_ok(g2);
    expect_array(dout, 7, -3, "read on GPU 0 after a host write");
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(dout), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, acquire_for_reading_keeps_gpu_replicas_valid)
{
    cask_runtime *rt = start_sim(1, 1, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o[N];
    cask_data *da, *dout;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_create(rt, sizeof o, &dout), CASK_OK);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_access wa = { da, CASK_WRITE };
    add_on(g1, fill, 0, 1, &wa, 1);
    compute_ok(g1);
    expect_array(da, 3, 1, "acquired for reading");
    totals before = stats_total(rt);
    cask_access acc[2] = { { da, CASK_READ }, { dout, CASK_WRITE } };
    add_on(g2, copy, 0, 2, acc, 2);
    compute_ok(g2);
    totals after = stats_total(rt);
    cr_assert_eq(after.h2d, before.h2d, "GPU 0's valid replica was copied again (%llu bytes)",
                 (unsigned long long)(after.h2d - before.h2d));
    expect_array(dout, 3, 1, "read on GPU 0");
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(dout), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, gpu_reads_count_host_to_device_bytes)
{
    cask_runtime *rt = start_sim(1, 1, 0);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o[N];
    cask_data *da, *dout;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o, sizeof o, &dout), CASK_OK);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access acc[2] = { { da, CASK_READ }, { dout, CASK_WRITE } };
    add_on(g, copy, 0, 1, acc, 2);
    compute_ok(g);
    totals t = stats_total(rt);
    cr_assert_geq(t.h2d, sizeof a, "h2d %llu bytes", (unsigned long long)t.h2d);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(dout), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, writeback_puts_gpu_results_in_host_memory_when_the_graph_ends)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 1, &da);
    /* Written back: the host memory is current without an acquire. */
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 3 * i + 1, "a[%d] = %d before any acquire", i, a[i]);
    totals before = stats_total(rt);
    expect_array(da, 3, 1, "acquired");
    totals after = stats_total(rt);
    cr_assert_eq(after.d2h, before.d2h, "acquire copied again after a write-back");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, without_writeback_host_memory_waits_for_acquire)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    memset(a, 0, sizeof a);
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    /* The result lives on GPU 1 only; the host copy is brought up to date lazily. */
    cr_assert_eq(a[5], 0, "the result reached the host without write-back or acquire");
    expect_array(da, 3, 1, "acquired");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, writeback_can_be_switched_off_again)
{
    cask_runtime *rt = start_sim(1, 1, 0);
    int32_t a[4] = { 0 };
    cask_data *da;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(da, 1), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(da, 0), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(NULL, 1), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, destroy_flushes_the_latest_gpu_write_to_registered_memory)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 0, 0, &da);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 3 * i + 1);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* The internal discard (the distributed plan's scratch copies, dist_plan_free): the
 * handle goes without the write-back that cask_data_destroy does above. */
Test(data, discard_leaves_registered_memory_as_it_was)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    memset(a, 0, sizeof a);
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(data_destroy_discard(da), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 0, "word %d written back by a discard", i);
    cr_assert_eq(data_destroy_discard(NULL), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, shutdown_flushes_the_latest_gpu_write_to_registered_memory)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 3 * i + 1);
}

Test(data, created_handle_lives_on_a_gpu_and_is_acquired_on_the_host)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *add5 = dual_kernel(rt, "add5", add5_k);
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE }, rw = { d, CASK_RW };
    add_on(g, fill, 0, 1, &w, 1);
    add_on(g, add5, 1, 2, &rw, 1);
    compute_ok(g);
    expect_array(d, 3, 6, "created, written on GPUs");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
