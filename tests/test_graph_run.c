/* tests/test_graph_run.c: how a graph runs: again with the same tasks or with more,
 * submit then wait as compute does, a result that does not depend on the number of
 * workers, and the order that priorities give ready tasks on one worker. Suite graph, in
 * `meson test --suite unit`. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cask/cask.h"
#include "graph_helpers.h"
#include "test_helpers.h"

TestSuite(graph, .fini = leak_check, .timeout = 120);

/* ---- re-running ---- */

Test(graph, graph_runs_again_with_the_same_tasks)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    for (int i = 0; i < 10; i++)
        add(g, k, i, &rw, 1);
    for (int round = 1; round <= 3; round++) {
        compute_ok(g);
        cask_graph_info info;
        cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
        cr_assert_eq(info.ntasks, 10);
        cr_assert_eq(info.nedges, 9);
        cr_assert_eq(info.ntasks_run, 10);
        cr_assert_gt(info.elapsed_s, 0.0);
        int64_t *p;
        cr_assert_eq(cask_data_acquire(d, CASK_READ, (void **)&p), CASK_OK);
        cr_assert_eq(*p, 10 * round);
        cr_assert_eq(cask_data_release(d), CASK_OK);
    }
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 30);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, graph_grows_between_runs)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    add(g, k, 0, &rw, 1);
    compute_ok(g);
    add(g, k, 1, &rw, 1);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 3);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, submit_then_wait_equals_compute)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    for (int i = 0; i < 100; i++)
        add(g, k, i, &rw, 1);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 100);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- the result does not depend on the number of workers ---- */

#define RT_CHUNKS 256
#define RT_WORDS 512

typedef struct rt_fill_args { uint64_t seed; } rt_fill_args;

static cask_status rt_fill(cask_task_ctx *ctx)
{
    size_t size;
    const rt_fill_args *a = cask_task_args(ctx, &size);
    uint64_t *w = cask_task_buffer(ctx, 0);
    uint64_t s = a->seed;
    for (size_t i = 0; i < cask_task_buffer_size(ctx, 0) / sizeof *w; i++)
        w[i] = rng_next(&s);
    return CASK_OK;
}

static uint64_t hash_words(const uint64_t *w, size_t n)
{
    uint64_t h = 0x12345;
    for (size_t i = 0; i < n; i++)
        h = mix(h, w[i]);
    return h;
}

static cask_status rt_leaf(cask_task_ctx *ctx)
{
    const uint64_t *w = cask_task_buffer(ctx, 0);
    uint64_t *h = cask_task_buffer(ctx, 1);
    *h = hash_words(w, cask_task_buffer_size(ctx, 0) / sizeof *w);
    return CASK_OK;
}

/* Not commutative: a tree combined in another order gives another hash. */
static cask_status rt_combine(cask_task_ctx *ctx)
{
    uint64_t *a = cask_task_buffer(ctx, 0);
    const uint64_t *b = cask_task_buffer(ctx, 1);
    *a = mix(*a * 3, *b);
    return CASK_OK;
}

static uint64_t reduction_tree(int ncpu)
{
    cask_runtime *rt = start(ncpu);
    cask_kernel *fill = kernel(rt, "fill", rt_fill);
    cask_kernel *leaf = kernel(rt, "leaf", rt_leaf);
    cask_kernel *combine = kernel(rt, "combine", rt_combine);
    cask_data *chunk[RT_CHUNKS], *h[RT_CHUNKS];
    for (int i = 0; i < RT_CHUNKS; i++) {
        cr_assert_eq(cask_data_create(rt, RT_WORDS * sizeof(uint64_t), &chunk[i]), CASK_OK);
        cr_assert_eq(cask_data_create(rt, sizeof(uint64_t), &h[i]), CASK_OK);
    }
    cask_graph *g = graph(rt);
    for (int i = 0; i < RT_CHUNKS; i++) {
        rt_fill_args fa = { .seed = 77 + (uint64_t)i };
        cask_access w = { chunk[i], CASK_WRITE };
        cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = fill, .access = &w,
                              .naccess = 1, .args = &fa, .args_size = sizeof fa };
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
        cask_access acc[2] = { { chunk[i], CASK_READ }, { h[i], CASK_WRITE } };
        cask_task_desc ld = { .kernel = leaf, .access = acc, .naccess = 2 };
        cr_assert_eq(cask_graph_add_task(g, &ld, NULL), CASK_OK);
    }
    for (int stride = 1; stride < RT_CHUNKS; stride *= 2)
        for (int i = 0; i + stride < RT_CHUNKS; i += 2 * stride) {
            cask_access acc[2] = { { h[i], CASK_RW }, { h[i + stride], CASK_READ } };
            cask_task_desc cd = { .kernel = combine, .access = acc, .naccess = 2 };
            cr_assert_eq(cask_graph_add_task(g, &cd, NULL), CASK_OK);
        }
    compute_ok(g);
    uint64_t *p, result;
    cr_assert_eq(cask_data_acquire(h[0], CASK_READ, (void **)&p), CASK_OK);
    result = *p;
    cr_assert_eq(cask_data_release(h[0]), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    for (int i = 0; i < RT_CHUNKS; i++) {
        cr_assert_eq(cask_data_destroy(chunk[i]), CASK_OK);
        cr_assert_eq(cask_data_destroy(h[i]), CASK_OK);
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    return result;
}

static uint64_t reduction_reference(void)
{
    static uint64_t w[RT_WORDS];
    uint64_t h[RT_CHUNKS];
    for (int i = 0; i < RT_CHUNKS; i++) {
        uint64_t s = 77 + (uint64_t)i;
        for (int j = 0; j < RT_WORDS; j++)
            w[j] = rng_next(&s);
        h[i] = hash_words(w, RT_WORDS);
    }
    for (int stride = 1; stride < RT_CHUNKS; stride *= 2)
        for (int i = 0; i + stride < RT_CHUNKS; i += 2 * stride)
            h[i] = mix(h[i] * 3, h[i + stride]);
    return h[0];
}

Test(graph, reduction_gives_the_same_result_on_1_2_4_and_8_workers)
{
    uint64_t want = reduction_reference();
    const int workers[] = { 1, 2, 4, 8 };
    for (size_t i = 0; i < sizeof workers / sizeof workers[0]; i++)
        cr_assert_eq(reduction_tree(workers[i]), want, "%d workers", workers[i]);
}

/* ---- priorities ---- */

static int order[MAX_TASKS];
static atomic_int norder;

static cask_status record_order_task(cask_task_ctx *ctx)
{
    order[atomic_fetch_add(&norder, 1)] = arg_int(ctx);
    return CASK_OK;
}

static cask_task *add_prio(cask_graph *g, cask_kernel *k, int arg, int prio)
{
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY, .kernel = k,
                          .args = &arg, .args_size = sizeof arg, .priority = prio };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK);
    return t;
}

Test(graph, one_worker_runs_ready_tasks_by_priority)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "rec", record_order_task);
    cask_graph *g = graph(rt);
    enum { N = 200 };
    /* A root releases N tasks at once; their priorities are a shuffled permutation with
     * negative ones too, so that neither submission order nor sign helps. */
    cask_task *root = add_prio(g, k, -1000, 0);
    int prio[N];
    for (int i = 0; i < N; i++)
        prio[i] = i - N / 2;
    uint64_t s = 42;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(rng_next(&s) % (uint64_t)(i + 1));
        int tmp = prio[i]; prio[i] = prio[j]; prio[j] = tmp;
    }
    for (int i = 0; i < N; i++) {
        cask_task *t = add_prio(g, k, prio[i], prio[i]);
        cr_assert_eq(cask_task_depend(t, root), CASK_OK);
    }
    atomic_store(&norder, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&norder), N + 1);
    cr_assert_eq(order[0], -1000);
    for (int i = 1; i < N; i++)
        cr_assert_gt(order[i], order[i + 1], "position %d: priority %d ran before %d", i,
                     order[i], order[i + 1]);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, one_worker_runs_small_priorities_in_order)
{
    /* Priorities -2..2 with ties, released at once by a root. */
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "rec", record_order_task);
    cask_graph *g = graph(rt);
    cask_task *root = add_prio(g, k, -1000, 0);
    uint64_t s = 7;
    enum { N = 100 };
    for (int i = 0; i < N; i++) {
        int p = (int)(rng_next(&s) % 5) - 2;
        cr_assert_eq(cask_task_depend(add_prio(g, k, p, p), root), CASK_OK);
    }
    atomic_store(&norder, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&norder), N + 1);
    for (int i = 1; i < N; i++)
        cr_assert_geq(order[i], order[i + 1], "position %d: priority %d ran before %d", i,
                      order[i], order[i + 1]);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, newly_ready_high_priority_task_overtakes_waiting_ones)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "rec", record_order_task);
    cask_graph *g = graph(rt);
    cask_task *root = add_prio(g, k, 0, 0);
    cask_task *high = add_prio(g, k, 1, 10);
    cr_assert_eq(cask_task_depend(high, root), CASK_OK);
    for (int i = 0; i < 5; i++) {
        cask_task *low = add_prio(g, k, 100 + i, 1);
        cr_assert_eq(cask_task_depend(low, root), CASK_OK);
    }
    cask_task *after_high = add_prio(g, k, 2, 100);
    cr_assert_eq(cask_task_depend(after_high, high), CASK_OK);
    atomic_store(&norder, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&norder), 8);
    cr_assert_eq(order[0], 0);
    cr_assert_eq(order[1], 1);
    cr_assert_eq(order[2], 2, "the priority-100 successor waited behind priority-1 tasks");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, waiting_high_priority_task_runs_before_a_newly_ready_lower_one)
{
    /* root releases x (200) and y (100); x runs and releases z (5). Ready now: y and z;
     * y must run first though z is the newest. */
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "rec", record_order_task);
    cask_graph *g = graph(rt);
    cask_task *root = add_prio(g, k, 0, 0);
    cask_task *x = add_prio(g, k, 200, 200);
    cask_task *y = add_prio(g, k, 100, 100);
    cask_task *z = add_prio(g, k, 5, 5);
    cr_assert_eq(cask_task_depend(x, root), CASK_OK);
    cr_assert_eq(cask_task_depend(y, root), CASK_OK);
    cr_assert_eq(cask_task_depend(z, x), CASK_OK);
    atomic_store(&norder, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&norder), 4);
    cr_assert_eq(order[1], 200);
    cr_assert_eq(order[2], 100, "priority %d ran before the waiting priority 100", order[2]);
    cr_assert_eq(order[3], 5);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* Roots pinned to one GPU (CASK_TASK_DEVICE) start in the order of their priorities and,
 * among equals, in the order they were added: the GPU worker keeps them in a FIFO, so the
 * roots must reach it in order (they were once handed on in reverse, and a GPU started a
 * graph's inputs last-added first). */
Test(graph, pinned_roots_on_a_gpu_start_in_order)
{
    cask_runtime *rt = start_runtime(1, 1);
    cask_kernel *k = kernel(rt, "rec", record_order_task);
    cask_graph *g = graph(rt);
    enum { N = 64 };
    for (int i = 0; i <= N; i++) {
        int arg = i < N ? i : -1, prio = i < N ? 0 : 5;   /* the last added: first */
        cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY |
                                            CASK_TASK_WHERE | CASK_TASK_DEVICE,
                              .kernel = k, .args = &arg, .args_size = sizeof arg,
                              .priority = prio, .where = CASK_WHERE_GPU, .device = 0 };
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    }
    for (int round = 0; round < 3; round++) {
        atomic_store(&norder, 0);
        compute_ok(g);
        cr_assert_eq(atomic_load(&norder), N + 1);
        cr_assert_eq(order[0], -1, "round %d: the priority-5 root ran at %d, not first", round,
                     order[0]);
        for (int i = 1; i <= N; i++)
            cr_assert_eq(order[i], i - 1, "round %d: position %d ran root %d", round, i,
                         order[i]);
    }
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
