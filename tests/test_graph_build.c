/* test_graph_build.c: what building keeps for the check (so that building is cheap): roots
 * kept while adding (an edge to an earlier task takes it out), successor arrays grown at
 * add (inline, small, large objects of the arena), big fan-outs found without a pass,
 * edges added while running merged before the next run; the arena's large objects,
 * which the pool keeps for the next graph; and predecessors named when a task is added
 * (CASK_TASK_DEPS): a random DAG built that way runs in an order that respects every
 * edge, as the same DAG built by cask_task_depend; repeats and edges that the access
 * modes also give are one edge; bad lists are refused with nothing added; a running
 * graph refuses them; children of a subflow may name their siblings. */
#include <string.h>
#include "test_helpers.h"
#include "runtime/arena.h"
#include "runtime/task_ctx.h"   /* a plain task's id (it has no arguments to carry one) */

#define MAXN 50000

static _Atomic int runs[MAXN];     /* times each task ran (its int argument) */
static _Atomic int seq;            /* completion order */
static _Atomic int when[MAXN];     /* seq at which it last ran */

static cask_status count_task(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    atomic_fetch_add(&runs[id], 1);
    atomic_store(&when[id], atomic_fetch_add(&seq, 1));
    return CASK_OK;
}

static void reset_counts(void)
{
    for (int i = 0; i < MAXN; i++) {
        atomic_store(&runs[i], 0);
        atomic_store(&when[i], -1);
    }
    atomic_store(&seq, 0);
}

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

/* ---- predecessors named at add (CASK_TASK_DEPS) ---- */

#define N 3000   /* tasks of the random DAGs below (MAXN bounds the ids) */

static const char *rt_error(cask_runtime *rt)
{
    static char buf[1024];
    cask_runtime_error(rt, buf, sizeof buf);
    return buf;
}

static cask_status add_with(cask_graph *g, cask_kernel *k, int id, cask_task *const *deps, int n,
                            cask_task **out)
{
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_DEPS, .kernel = k,
                          .args = &id, .args_size = sizeof id, .deps = deps, .ndeps = n };
    return cask_graph_add_task(g, &td, out);
}

/* A random DAG: task i waits for up to 3 of the 50 tasks before it. */
typedef struct dag {
    int n[N];
    int pred[N][3];
} dag;

static void make_dag(dag *d, uint64_t seed)
{
    for (int i = 0; i < N; i++) {
        int span = i < 50 ? i : 50, want = span ? (int)(rng_next(&seed) % 4) : 0;
        d->n[i] = 0;
        for (int j = 0; j < want; j++) {
            int p = i - 1 - (int)(rng_next(&seed) % (uint64_t)span);
            int dup = 0;
            for (int q = 0; q < d->n[i]; q++)
                dup |= d->pred[i][q] == p;
            if (!dup)
                d->pred[i][d->n[i]++] = p;
        }
    }
}

static void assert_order(const dag *d, int times)
{
    for (int i = 0; i < N; i++) {
        cr_assert_eq(atomic_load(&runs[i]), times, "task %d ran %d times", i, atomic_load(&runs[i]));
        for (int j = 0; j < d->n[i]; j++)
            cr_assert_lt(atomic_load(&when[d->pred[i][j]]), atomic_load(&when[i]),
                         "task %d ran before its predecessor %d", i, d->pred[i][j]);
    }
}

/* Computes g twice, each run in an order that respects d's edges; then ends g and rt. */
static void run_twice_in_order(cask_runtime *rt, cask_graph *g, const dag *d)
{
    for (int r = 1; r <= 2; r++) {
        reset_counts();
        compute_ok(g);
        assert_order(d, 1);
    }
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

static void random_dag(int by_deps, int workers)
{
    static dag d;
    make_dag(&d, 42);
    cask_runtime *rt = start_runtime(workers, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    static cask_task *t[N];
    for (int i = 0; i < N; i++) {
        cask_task *in[3];
        for (int j = 0; j < d.n[i]; j++)
            in[j] = t[d.pred[i][j]];
        if (by_deps) {
            cr_assert_eq(add_with(g, k, i, in, d.n[i], &t[i]), CASK_OK);
        } else {
            cr_assert_eq(add_with(g, k, i, NULL, 0, &t[i]), CASK_OK);
            for (int j = 0; j < d.n[i]; j++)
                cr_assert_eq(cask_task_depend(t[i], in[j]), CASK_OK);
        }
    }
    run_twice_in_order(rt, g, &d);
}

Test(graph_build, deps_a_random_dag_named_at_add_respects_every_edge, .timeout = 60)
{
    random_dag(1, 4);
}

Test(graph_build, deps_the_same_dag_by_cask_task_depend_respects_every_edge, .timeout = 60)
{
    random_dag(0, 4);
}

Test(graph_build, deps_a_random_dag_named_at_add_on_one_worker, .timeout = 60)
{
    random_dag(1, 1);
}

/* Plain tasks (deps alone: cask_graph_add_task's short path), which carry no argument:
 * the id is the task's place in the graph. */
static cask_status count_plain(cask_task_ctx *ctx)
{
    int id = (int)ctx->task->id;
    atomic_fetch_add(&runs[id], 1);
    atomic_store(&when[id], atomic_fetch_add(&seq, 1));
    return CASK_OK;
}

/* The random DAG built by plain tasks naming their deps, with repeats in the lists (one
 * edge each) and task 0 named by every third task, so that its successors pass 512 (a
 * big fan-out, released in shares): runs twice in an order that respects every edge. */
static void plain_dag(int workers)
{
    static dag d;
    make_dag(&d, 7);
    for (int i = 3; i < N; i += 3) {   /* task 0 as a predecessor, unless it is one */
        int has = 0;
        for (int j = 0; j < d.n[i]; j++)
            has |= d.pred[i][j] == 0;
        if (!has && d.n[i] < 3)
            d.pred[i][d.n[i]++] = 0;
    }
    cask_runtime *rt = start_runtime(workers, 0);
    cask_kernel *k = kernel(rt, "plain", count_plain);
    cask_graph *g = graph(rt);
    static cask_task *t[N];
    int hub = 0;
    for (int i = 0; i < N; i++) {
        cask_task *in[6];
        int n = 0;
        for (int j = 0; j < d.n[i]; j++)
            in[n++] = t[d.pred[i][j]];
        if (n && i % 7 == 0)   /* a repeat, after another */
            in[n++] = in[0];
        if (n > 1 && i % 11 == 0) {   /* a repeat, right after itself */
            in[n] = in[n - 1];
            n++;
        }
        for (int j = 0; j < d.n[i]; j++)
            hub += d.pred[i][j] == 0;
        cask_task_desc td = { .field_mask = n ? CASK_TASK_DEPS : 0, .kernel = k, .deps = in,
                              .ndeps = n };
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK, "%s", rt_error(rt));
        cr_assert_eq((int)t[i]->id, i);
    }
    cr_assert_gt(hub, 512, "task 0 has %d successors", hub);
    cr_assert_eq(t[0]->nsucc, hub, "repeats are one edge");
    run_twice_in_order(rt, g, &d);
}

Test(graph_build, deps_plain_tasks_with_repeats_and_a_big_fanout_respect_every_edge, .timeout = 60)
{
    plain_dag(4);
}

Test(graph_build, deps_plain_tasks_on_one_worker, .timeout = 60)
{
    plain_dag(1);
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

/* The edges as the graph prints them: "tA -> tB" lines. */
static int count_edges(cask_graph *g, const char *edge)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    cr_assert_eq(cask_graph_dot(g, f, 0), CASK_OK);
    fclose(f);
    int n = 0;
    for (const char *p = buf; (p = strstr(p, edge)); p += strlen(edge))
        n++;
    free(buf);
    return n;
}

Test(graph_build, deps_repeats_and_access_mode_edges_are_one_edge)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    int id0 = 0, id2 = 2;
    cask_task_desc wd = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = &w, .naccess = 1,
                          .args = &id0, .args_size = sizeof id0 };
    cask_task *a, *b, *c;
    cr_assert_eq(cask_graph_add_task(g, &wd, &a), CASK_OK);          /* t0 writes d */
    cr_assert_eq(add_with(g, k, 1, NULL, 0, &b), CASK_OK);           /* t1 */
    cask_task *deps[] = { a, b, a, b, a };
    cask_task_desc rd = { .field_mask = CASK_TASK_ARGS | CASK_TASK_DEPS, .kernel = k,
                          .access = &r, .naccess = 1, .args = &id2, .args_size = sizeof id2,
                          .deps = deps, .ndeps = 5 };
    cr_assert_eq(cask_graph_add_task(g, &rd, &c), CASK_OK);          /* t2 reads d */
    cr_assert_eq(count_edges(g, "t0 -> t2;"), 1, "a->c from the access mode and the list: one");
    cr_assert_eq(count_edges(g, "t1 -> t2;"), 1);
    cr_assert_eq(count_edges(g, " -> "), 2);
    reset_counts();
    compute_ok(g);
    cr_assert_lt(atomic_load(&when[0]), atomic_load(&when[2]));
    cr_assert_lt(atomic_load(&when[1]), atomic_load(&when[2]));
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(rt);
    leak_check();
}

Test(graph_build, deps_bad_lists_are_refused_and_add_nothing)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt), *other = graph(rt);
    cask_task *a, *foreign, *t = NULL;
    cr_assert_eq(add_with(g, k, 0, NULL, 0, &a), CASK_OK);
    cr_assert_eq(add_with(other, k, 1, NULL, 0, &foreign), CASK_OK);
    cask_task *null_one[] = { a, NULL };
    cask_task *wrong_graph[] = { foreign };
    cr_assert_eq(add_with(g, k, 1, NULL, 2, &t), CASK_ERR_INVALID, "ndeps without an array");
    cr_assert_eq(add_with(g, k, 1, null_one, -1, &t), CASK_ERR_INVALID, "negative ndeps");
    cr_assert_eq(add_with(g, k, 1, null_one, 2, &t), CASK_ERR_INVALID, "a NULL task");
    cr_assert(strstr(rt_error(rt), "deps[1] is NULL"), "%s", rt_error(rt));
    cr_assert_eq(add_with(g, k, 1, wrong_graph, 1, &t), CASK_ERR_INVALID, "another graph's task");
    cr_assert(strstr(rt_error(rt), "another graph"), "%s", rt_error(rt));
    cr_assert_null(t);
    reset_counts();
    compute_ok(g);
    cr_assert_eq(atomic_load(&seq), 1, "only the first task was added");
    cask_graph_destroy(other);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

/* A plain task (deps alone) whose list turns bad after good deps: the edges it had made
 * from those deps go again (a dep holding one successor, named twice, gets its inline
 * slot back), and the next task takes its place. */
Test(graph_build, deps_a_plain_list_bad_after_good_deps_takes_back_its_edges)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *k = kernel(rt, "plain", count_plain);
    cask_graph *g = graph(rt), *other = graph(rt);
    cask_task_desc plain = { .kernel = k };
    cask_task *a, *b, *c, *s, *foreign, *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &plain, &a), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &plain, &b), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &plain, &c), CASK_OK);
    cr_assert_eq(cask_graph_add_task(other, &plain, &foreign), CASK_OK);
    cask_task *first[] = { a };
    cask_task_desc after = { .field_mask = CASK_TASK_DEPS, .kernel = k, .deps = first, .ndeps = 1 };
    cr_assert_eq(cask_graph_add_task(g, &after, &s), CASK_OK);   /* a -> s */
    cask_task *bad[][6] = { { a, b, b, a, c, foreign }, { b, a, NULL } };
    int nbad[] = { 6, 3 };
    for (int i = 0; i < 2; i++) {
        after.deps = bad[i];
        after.ndeps = nbad[i];
        cr_assert_eq(cask_graph_add_task(g, &after, &t), CASK_ERR_INVALID, "list %d", i);
        cr_assert_null(t);
        cr_assert_eq(a->nsucc, 1, "list %d: a has %d successors", i, a->nsucc);
        cr_assert_eq(a->succ1, s);
        cr_assert_eq(b->nsucc + c->nsucc, 0, "list %d", i);
        cr_assert_eq(count_edges(g, " -> "), 1, "list %d", i);
    }
    cask_task *good[] = { c, a };
    after.deps = good;
    after.ndeps = 2;
    cr_assert_eq(cask_graph_add_task(g, &after, &t), CASK_OK);
    cr_assert_eq((int)t->id, 4, "the refused tasks took no place");
    cr_assert_eq(a->nsucc, 2);
    cr_assert_eq(count_edges(g, " -> "), 3);
    reset_counts();
    compute_ok(g);
    cr_assert_eq(atomic_load(&seq), 5, "%d tasks ran", atomic_load(&seq));
    cr_assert_lt(atomic_load(&when[0]), atomic_load(&when[3]));
    cr_assert_lt(atomic_load(&when[0]), atomic_load(&when[4]));
    cr_assert_lt(atomic_load(&when[2]), atomic_load(&when[4]));
    cask_graph_destroy(other);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

Test(graph_build, deps_a_running_graph_refuses_them, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *gate = kernel(rt, "gate", gate_task);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    cask_task *a;
    cask_task_desc gd = { .kernel = gate };
    cr_assert_eq(cask_graph_add_task(g, &gd, &a), CASK_OK);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    wait_entered();
    cask_task *t = NULL;
    cr_assert_eq(add_with(g, k, 1, &a, 1, &t), CASK_ERR_STATE);
    cr_assert(strstr(rt_error(rt), "explicit deps while the graph runs"), "%s",
              rt_error(rt));
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}

/* ---- in a subflow: c waits for a and b, its siblings; a dep outside is refused ---- */

static cask_kernel *kid_k;
static cask_task *outside;
static _Atomic int bad_spawn;

static cask_status spawner_task(cask_task_ctx *ctx)
{
    cask_task *a, *b;
    int ids[3] = { 10, 11, 12 };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = kid_k, .args = &ids[0],
                          .args_size = sizeof(int) };
    cask_status st = cask_task_spawn(ctx, &td, 0, &a);
    td.args = &ids[1];
    if (!st)
        st = cask_task_spawn(ctx, &td, 0, &b);
    cask_task *deps[] = { a, b };
    td.field_mask |= CASK_TASK_DEPS;
    td.args = &ids[2];
    td.deps = deps;
    td.ndeps = 2;
    if (!st)
        st = cask_task_spawn(ctx, &td, 0, NULL);
    cask_task *out[] = { outside };
    td.deps = out;
    td.ndeps = 1;
    atomic_store(&bad_spawn, cask_task_spawn(ctx, &td, 0, NULL));
    return st ? cask_task_fail(ctx, "spawn: %s", cask_status_string(st)) : CASK_OK;
}

Test(graph_build, deps_children_of_a_subflow_name_their_siblings, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *sp = kernel(rt, "spawner", spawner_task);
    kid_k = kernel(rt, "kid", count_task);
    cask_graph *g = graph(rt);
    cask_task_desc sd = { .kernel = sp };
    cr_assert_eq(add_with(g, kid_k, 0, NULL, 0, &outside), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &sd, NULL), CASK_OK);
    for (int r = 0; r < 2; r++) {
        reset_counts();
        compute_ok(g);
        cr_assert_eq(atomic_load(&runs[12]), 1);
        cr_assert_lt(atomic_load(&when[10]), atomic_load(&when[12]));
        cr_assert_lt(atomic_load(&when[11]), atomic_load(&when[12]));
        cr_assert_eq(atomic_load(&bad_spawn), CASK_ERR_INVALID, "a dep outside the subflow");
    }
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}
