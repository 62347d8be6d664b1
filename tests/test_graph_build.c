/* test_graph_build.c: what building keeps for the check (so that building is cheap): roots
 * kept while adding (an edge to an earlier task takes it out; the newest task kept out of
 * them until the next is added or the check; edges between tasks of a graph that ran),
 * successor arrays grown at add (inline, small, large objects of the arena), big fan-outs
 * found without a pass, edges added while running merged before the next run; and the
 * arena's large objects, which the pool keeps for the next graph. Predecessors named when
 * a task is added (CASK_TASK_DEPS) are in test_graph_build_deps.c. */
#include <string.h>
#include "graph_build_helpers.h"
#include "test_helpers.h"
#include "runtime/arena.h"

static cask_task *add(cask_graph *g, cask_kernel *k, int id)
{
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .args = &id,
                          .args_size = sizeof id };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK);
    return t;
}

static void assert_runs(int n, int times)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&runs[i]), times, "task %d ran %d times, expected %d", i,
                     atomic_load(&runs[i]), times);
}

/* The sink is added first, as a root; each edge to it comes after other tasks were
 * added, so it cannot simply be dropped from the end of the roots kept while building. */
static void sink_added_first(int workers)
{
    reset_counts();
    cask_runtime *rt = start_runtime(workers, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    enum { N = 300 };
    cask_task *sink = add(g, k, 0);
    cask_task *mid = add(g, k, 1);
    for (int i = 2; i < N; i++) {
        cask_task *t = add(g, k, i);
        cr_assert_eq(cask_task_depend(sink, t), CASK_OK);
        if (i == 2)   /* an edge to the task added just before: one kept root less */
            cr_assert_eq(cask_task_depend(t, mid), CASK_OK);
    }
    for (int r = 1; r <= 2; r++) {
        compute_ok(g);
        assert_runs(N, r);
        cr_assert_eq(atomic_load(&when[0]), r * N - 1, "the sink ran before a predecessor");
        cr_assert_lt(atomic_load(&when[1]), atomic_load(&when[2]));
    }
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

Test(graph_build, a_sink_added_before_its_predecessors_runs_last_on_one_worker)
{
    sink_added_first(1);
}

Test(graph_build, a_sink_added_before_its_predecessors_runs_last_on_four_workers)
{
    sink_added_first(4);
}

/* A fan-out that becomes big after the graph ran once (its release ranges are made at
 * the next check), then grows past the arena's large-object size. */
Test(graph_build, a_fan_out_grown_between_runs_releases_every_successor_once)
{
    reset_counts();
    cask_runtime *rt = start_runtime(4, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    cask_task *root = add(g, k, 0);
    int n = 1;
    for (; n < 100; n++)
        cr_assert_eq(cask_task_depend(add(g, k, n), root), CASK_OK);
    compute_ok(g);
    assert_runs(n, 1);
    for (; n < 2000; n++)   /* past SCHED_SPLIT_RELEASE */
        cr_assert_eq(cask_task_depend(add(g, k, n), root), CASK_OK);
    compute_ok(g);
    for (int i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&runs[i]), i < 100 ? 2 : 1, "task %d", i);
    for (; n < 20000; n++)   /* 160 KB of successors: a large object of the arena */
        cr_assert_eq(cask_task_depend(add(g, k, n), root), CASK_OK);
    reset_counts();
    compute_ok(g);
    assert_runs(n, 1);
    for (int i = 1; i < n; i++)
        cr_assert_gt(atomic_load(&when[i]), atomic_load(&when[0]));
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

/* Graphs with large successor and task arrays, built and destroyed again and again: the
 * pool hands their blocks to the next graph (grown in place, copied into a spare). */
Test(graph_build, large_arrays_are_reused_by_the_next_graphs)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    for (int rep = 0; rep < 4; rep++) {
        reset_counts();
        cask_graph *g = graph(rt);
        int n = 30000 + rep * 5000;   /* more each time: spares too small at first */
        cask_task *root = add(g, k, 0);
        cask_task *sink = add(g, k, 1);
        for (int i = 2; i < n; i++) {
            cask_task *t = add(g, k, i);
            cr_assert_eq(cask_task_depend(t, root), CASK_OK);
            cr_assert_eq(cask_task_depend(sink, t), CASK_OK);
        }
        compute_ok(g);
        assert_runs(n, 1);
        cr_assert_eq(atomic_load(&when[1]), n - 1, "rep %d: the sink did not run last", rep);
        cask_graph_info info;
        cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
        cr_assert_eq(info.nedges, (size_t)(2 * (n - 2)));
        cask_graph_destroy(g);
    }
    cask_shutdown(rt);
    leak_check();
}

/* A reader added while its writer runs gets its edge through the dynamic path; the next
 * run must have it as a static edge (else the reader would wait forever, or run first). */
static atomic_int writes;
static atomic_int read_saw[4];
static cask_status slow_writer(cask_task_ctx *ctx)
{
    int *v = cask_task_buffer(ctx, 0);
    atomic_store(&gate_entered, 1);
    while (!atomic_load(&gate_open))
        spin_ns(10000);
    *v += 1;
    atomic_fetch_add(&writes, 1);
    return CASK_OK;
}
static cask_status reader(cask_task_ctx *ctx)
{
    const int *v = cask_task_buffer(ctx, 0);
    atomic_store(&read_saw[arg_int(ctx)], *v);
    return CASK_OK;
}

Test(graph_build, an_edge_added_while_running_holds_in_the_next_run, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *kw = kernel(rt, "slow_writer", slow_writer);
    cask_kernel *kr = kernel(rt, "reader", reader);
    int value = 0;
    cask_data *d = NULL;
    cr_assert_eq(cask_data_register(rt, &value, sizeof value, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access aw = { .data = d, .mode = CASK_RW };
    cask_task_desc tw = { .kernel = kw, .access = &aw, .naccess = 1 };
    cr_assert_eq(cask_graph_add_task(g, &tw, NULL), CASK_OK);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    wait_entered();
    int id = 0;
    cask_access ar = { .data = d, .mode = CASK_READ };
    cask_task_desc tr = { .field_mask = CASK_TASK_ARGS, .kernel = kr, .access = &ar,
                          .naccess = 1, .args = &id, .args_size = sizeof id };
    cr_assert_eq(cask_graph_add_task(g, &tr, NULL), CASK_OK);   /* while the writer runs */
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(atomic_load(&read_saw[0]), 1);
    compute_ok(g);   /* the reader's edge is static now */
    cr_assert_eq(atomic_load(&writes), 2);
    cr_assert_eq(atomic_load(&read_saw[0]), 2, "the reader ran before the writer");
    cask_graph_destroy(g);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cask_shutdown(rt);
    leak_check();
}

/* The newest task built is kept out of the roots until the next is added or the check
 * (graph.h, pend). Each way that can end leaves exactly the tasks without predecessors
 * as roots: its first edge while kept (t1), none (t0, t2: the last, kept at the check),
 * building on after a run (t3, t4; then t5-t7 by adds alone, with no edge added after
 * the run: the first add after a check takes the general path, and that sends the next
 * submit through the check, see tfast), and, in a graph of its own (a filter at the check
 * would hide a root too many in the first), a first edge after the next task was added
 * (u0). A root too many runs a task twice or before its predecessor; one too few never
 * runs it. */
static void kept_task(int workers)
{
    reset_counts();
    cask_runtime *rt = start_runtime(workers, 0);
    cask_kernel *k = kernel(rt, "plain", count_plain);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .kernel = k };
    cask_task *t[8];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK);
        if (i == 1)
            cr_assert_eq(cask_task_depend(t[1], t[0]), CASK_OK);
    }
    compute_ok(g);
    assert_runs(3, 1);
    cr_assert_lt(atomic_load(&when[0]), atomic_load(&when[1]));
    for (int i = 3; i < 5; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK);
    cr_assert_eq(cask_task_depend(t[3], t[2]), CASK_OK);
    compute_ok(g);
    assert_runs(3, 2);
    cr_assert_eq(atomic_load(&runs[3]), 1);
    cr_assert_eq(atomic_load(&runs[4]), 1);
    cr_assert_lt(atomic_load(&when[0]), atomic_load(&when[1]));
    cr_assert_lt(atomic_load(&when[2]), atomic_load(&when[3]));
    cr_assert_eq(cask_graph_add_task(g, &td, &t[5]), CASK_OK);
    cask_task_desc after4 = { .field_mask = CASK_TASK_DEPS, .kernel = k, .deps = &t[4],
                              .ndeps = 1 };
    cr_assert_eq(cask_graph_add_task(g, &after4, &t[6]), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &td, &t[7]), CASK_OK);   /* kept aside at submit */
    compute_ok(g);
    assert_runs(3, 3);
    cr_assert_eq(atomic_load(&runs[3]), 2);
    cr_assert_eq(atomic_load(&runs[4]), 2);
    cr_assert_eq(atomic_load(&runs[5]), 1, "a task added after a run, with no edge, ran %d "
                 "times", atomic_load(&runs[5]));
    cr_assert_eq(atomic_load(&runs[6]), 1);
    cr_assert_eq(atomic_load(&runs[7]), 1);
    cr_assert_lt(atomic_load(&when[4]), atomic_load(&when[6]));
    cask_graph_destroy(g);

    reset_counts();
    g = graph(rt);
    cask_task *u[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, &u[i]), CASK_OK);
    cr_assert_eq(cask_task_depend(u[0], u[1]), CASK_OK);
    compute_ok(g);
    assert_runs(3, 1);
    cr_assert_lt(atomic_load(&when[1]), atomic_load(&when[0]));
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

Test(graph_build, the_task_kept_out_of_the_roots_joins_them_only_without_predecessors,
     .timeout = 60)
{
    kept_task(1);
    kept_task(4);
}

/* Edges between tasks of a graph that ran, with no task added in between: each turns a
 * root into a task with a predecessor, so the next submit must check the graph again. If
 * it did not, the old roots would run the task at once and again after its predecessor.
 * The first edge goes against the order (a moves past c), the second along it. */
static void edges_after_a_run(int workers)
{
    reset_counts();
    cask_runtime *rt = start_runtime(workers, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    cask_task *a = add(g, k, 0), *b = add(g, k, 1), *c = add(g, k, 2);
    compute_ok(g);
    assert_runs(3, 1);
    cr_assert_eq(cask_task_depend(a, c), CASK_OK);
    compute_ok(g);
    assert_runs(3, 2);
    cr_assert_lt(atomic_load(&when[2]), atomic_load(&when[0]));
    cr_assert_eq(cask_task_depend(c, b), CASK_OK);
    compute_ok(g);
    assert_runs(3, 3);
    cr_assert_lt(atomic_load(&when[1]), atomic_load(&when[2]));
    cr_assert_lt(atomic_load(&when[2]), atomic_load(&when[0]));
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

Test(graph_build, edges_added_between_runs_to_roots_check_the_graph_again, .timeout = 60)
{
    edges_after_a_run(1);
    edges_after_a_run(4);
}

/* ---- the arena's large objects ---- */

Test(graph_build, arena_large_objects_grow_keep_their_bytes_and_return_to_the_pool)
{
    arena_pool pool;
    arena_pool_init(&pool, (size_t)64 << 20);
    arena a;
    arena_init(&a, &pool);
    size_t n = 16;   /* ints; grows from a small allocation to large objects */
    int *v = arena_alloc(&a, n * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (int)i;
    for (; n < ((size_t)1 << 20); n *= 2) {
        int *w = arena_grow(&a, v, n * sizeof *v, 2 * n * sizeof *v);
        cr_assert_not_null(w);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(w[i], (int)i, "element %zu lost growing to %zu", i, 2 * n);
        for (size_t i = n; i < 2 * n; i++)
            w[i] = (int)i;
        v = w;
    }
    void *last = v;
    arena_free_all(&a);
    cr_assert_eq(pool.nspares, 1, "the large object was not kept");
    /* the next arena gets it back for an object that fits, without malloc */
    arena_init(&a, &pool);
    void *again = arena_alloc(&a, 100 * 1024);
    cr_assert_eq(again, last);
    cr_assert_eq(pool.nspares, 0);
    /* a bigger one than any spare comes from malloc; both go back */
    cr_assert_not_null(arena_alloc(&a, (size_t)8 << 20));
    arena_free_all(&a);
    cr_assert_eq(pool.nspares, 2);
    /* adopting moves large objects too */
    arena b;
    arena_init(&a, &pool);
    arena_init(&b, &pool);
    cr_assert_not_null(arena_alloc(&b, 200 * 1024));
    cr_assert_not_null(arena_alloc(&b, 64));
    arena_adopt(&a, &b);
    cr_assert_null(b.large);
    cr_assert_not_null(a.large);
    arena_free_all(&b);
    arena_free_all(&a);
    cr_assert_eq(pool.nspares, 2);
    arena_pool_destroy(&pool);
}

Test(graph_build, arena_pool_keeps_the_biggest_spares)
{
    arena_pool pool;
    arena_pool_init(&pool, (size_t)1 << 30);
    arena a;
    arena_init(&a, &pool);
    for (int i = 0; i < ARENA_POOL_SPARES + 4; i++)
        cr_assert_not_null(arena_alloc(&a, (size_t)(100 + i) * 1024));
    arena_free_all(&a);
    cr_assert_eq(pool.nspares, ARENA_POOL_SPARES);
    arena_init(&a, &pool);   /* the smallest kept fits 104 KB: the four smallest went */
    cr_assert_not_null(arena_alloc(&a, 104 * 1024));
    cr_assert_eq(pool.nspares, ARENA_POOL_SPARES - 1);
    arena_free_all(&a);
    arena_pool_destroy(&pool);
}
