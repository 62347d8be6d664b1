/* test_graph_build_deps.c: predecessors named when a task is added (CASK_TASK_DEPS): a
 * random DAG built that way runs in an order that respects every edge, as the same DAG
 * built by cask_task_depend, and so do plain tasks (deps alone) with repeats and a big
 * fan-out; repeats and edges that the access modes also give are one edge; bad lists are
 * refused with nothing added (a plain task takes back the edges it had made); a running
 * graph refuses them; children of a subflow may name their siblings. */
#include <string.h>
#include "graph_build_helpers.h"
#include "test_helpers.h"

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
