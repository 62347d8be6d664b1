/* test_graph_batch.c: tasks added from arrays (cask_graph_add_batch: a cheap way to
 * build large graphs). A random DAG with repeated deps, a fan-in and a fan-out of 10,000 (long lists,
 * grown successor arrays, release ranges) computes what a sequential evaluation of the
 * same table gives, with every edge respected, on 1 and 4 workers; each task gets its own
 * copy of its arguments and its own kernel; batches follow tasks added alone and tasks
 * added alone follow batches (edges to them by handle); a bad entry anywhere (a dep not
 * before its task, decreasing offsets, a task without a kernel) is refused with nothing
 * added, even after slabs were filled, and the graph then builds and runs as if it had
 * not been tried; a running graph refuses a batch; a kernel that runs nowhere is found by
 * the check, as for a task added alone. */
#include <string.h>
#include "test_helpers.h"

#define MAXN 40000

static uint32_t dep_start[MAXN + 1], dep_index[4 * MAXN];
static uint64_t val[MAXN], want[MAXN];
static _Atomic int seq, when[MAXN], runs[MAXN];

/* Task i's value: from its index and its deps' values, which must be final when it runs. */
static uint64_t value_of(uint32_t i, const uint64_t *v)
{
    uint64_t h = mix(0, i);
    for (uint32_t j = dep_start[i]; j < dep_start[i + 1]; j++)
        h = mix(h, v[dep_index[j]]);
    return h;
}

static cask_status value_task(cask_task_ctx *ctx)
{
    uint32_t i = (uint32_t)arg_int(ctx);
    val[i] = value_of(i, val);
    atomic_fetch_add(&runs[i], 1);
    atomic_store(&when[i], atomic_fetch_add(&seq, 1));
    return CASK_OK;
}

/* The same, without a value: tasks added alone beside a batch of the same indexes. */
static cask_status count_task(cask_task_ctx *ctx)
{
    uint32_t i = (uint32_t)arg_int(ctx);
    atomic_fetch_add(&runs[i], 1);
    atomic_store(&when[i], atomic_fetch_add(&seq, 1));
    return CASK_OK;
}

/* The runtime's last error message. */
static const char *last_error(cask_runtime *rt)
{
    static char buf[512];
    buf[0] = 0;
    cask_runtime_error(rt, buf, sizeof buf);
    return buf;
}

static void reset(void)
{
    memset(val, 0, sizeof val);
    for (int i = 0; i < MAXN; i++) {
        atomic_store(&runs[i], 0);
        atomic_store(&when[i], -1);
    }
    atomic_store(&seq, 0);
}

/* Tasks [0, n) of the table: each ran once, after its deps, with the sequential value. */
static void check_table(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        want[i] = value_of(i, want);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(atomic_load(&runs[i]), 1, "task %u ran %d times", i, atomic_load(&runs[i]));
        for (uint32_t j = dep_start[i]; j < dep_start[i + 1]; j++)
            cr_assert_lt(atomic_load(&when[dep_index[j]]), atomic_load(&when[i]),
                         "task %u ran before its dep %u", i, dep_index[j]);
        cr_assert_eq(val[i], want[i], "task %u: value differs from the sequential one", i);
    }
}

/* Arguments: the index, one int each. */
static int idx[MAXN];

static cask_task_batch table_batch(cask_kernel *k, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        idx[i] = (int)i;
    cask_task_batch b = { .ntasks = n, .kernel = k, .args = idx, .args_size = sizeof(int),
                          .dep_start = dep_start, .dep_index = dep_index };
    return b;
}

/* Table task i added alone with kernel k, its deps named by their handles in t. */
static cask_task *add_alone(cask_graph *g, cask_kernel *k, uint32_t i, cask_task *const *t)
{
    cask_task *deps[8], *out = NULL;
    int nd = 0;
    idx[i] = (int)i;
    for (uint32_t j = dep_start[i]; j < dep_start[i + 1]; j++)
        deps[nd++] = t[dep_index[j]];
    cask_task_desc td = { .field_mask = CASK_TASK_DEPS | CASK_TASK_ARGS, .kernel = k,
                          .args = &idx[i], .args_size = sizeof(int), .deps = deps,
                          .ndeps = nd };
    cr_assert_eq(cask_graph_add_task(g, &td, &out), CASK_OK);
    return out;
}

/* A random DAG of n tasks, each naming up to 4 of the 60 before it, repeats allowed; task
 * fan (if any) is a fan-in of the fan tasks before it, and task 0 precedes every task
 * after fan (a fan-out of n - fan - 1). */
static uint32_t random_table(uint32_t n, uint32_t fan, uint64_t seed)
{
    uint32_t e = 0;
    uint64_t s = seed;
    for (uint32_t i = 0; i < n; i++) {
        dep_start[i] = e;
        if (fan && i == fan) {
            for (uint32_t j = 0; j < fan; j++)
                dep_index[e++] = j;
            continue;
        }
        if (fan && i > fan)
            dep_index[e++] = 0;
        uint32_t span = i < 60 ? i : 60, want_n = span ? (uint32_t)(rng_next(&s) % 5) : 0;
        for (uint32_t k = 0; k < want_n; k++)
            dep_index[e++] = i - 1 - (uint32_t)(rng_next(&s) % span);
    }
    dep_start[n] = e;
    return e;
}

static void run_table(uint32_t n, uint32_t fan, int workers)
{
    reset();
    random_table(n, fan, 42 + n);
    cask_runtime *rt = start_runtime(workers, 0);
    cask_kernel *k = kernel(rt, "value", value_task);
    cask_graph *g = graph(rt);
    cask_task_batch b = table_batch(k, n);
    cask_task **out = malloc(n * sizeof *out);
    cr_assert_eq(cask_graph_add_batch(g, &b, out), CASK_OK, "%s", last_error(rt));
    for (uint32_t i = 1; i < n; i++)
        cr_assert(out[i] && out[i] != out[i - 1], "handle %u", i);
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, n);
    compute_ok(g);
    check_table(n);
    /* a second run: the same graph again */
    reset();
    compute_ok(g);
    check_table(n);
    free(out);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

Test(graph_batch, a_random_dag_computes_the_sequential_values_on_four_workers, .timeout = 60)
{
    run_table(20000, 0, 4);
}

Test(graph_batch, a_random_dag_computes_the_sequential_values_on_one_worker, .timeout = 60)
{
    run_table(5000, 0, 1);
}

Test(graph_batch, a_fan_in_and_a_fan_out_of_ten_thousand_respect_every_edge, .timeout = 60)
{
    run_table(21000, 10000, 4);
}

/* The edges of the batch are the edges of the table: as many as the same table added
 * task by task with CASK_TASK_DEPS gives (repeats are one edge either way). */
Test(graph_batch, the_batch_has_the_edges_of_the_same_table_added_task_by_task)
{
    uint32_t n = 3000;
    random_table(n, 0, 7);
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *k = kernel(rt, "value", value_task);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_task_batch b = table_batch(k, n);
    cr_assert_eq(cask_graph_add_batch(g1, &b, NULL), CASK_OK);
    cask_task **t = malloc(n * sizeof *t);
    for (uint32_t i = 0; i < n; i++)
        t[i] = add_alone(g2, k, i, t);
    cask_graph_info i1, i2;
    cr_assert_eq(cask_graph_query(g1, &i1), CASK_OK);
    cr_assert_eq(cask_graph_query(g2, &i2), CASK_OK);
    cr_assert_eq(i1.ntasks, i2.ntasks);
    cr_assert_eq(i1.nedges, i2.nedges, "batch %zu edges, task by task %zu", i1.nedges, i2.nedges);
    free(t);
    cask_graph_destroy(g1);
    cask_graph_destroy(g2);
    cask_shutdown(rt);
}

/* ---- arguments and kernels per task ---- */

typedef struct rec {
    int i;
    double x;
    char tag[12];
} rec;
static _Atomic int seen_a[64], seen_b[64];

static cask_status rec_task(cask_task_ctx *ctx, _Atomic int *seen, int odd)
{
    size_t size = 0;
    const rec *r = cask_task_args(ctx, &size);
    if (!r || size != sizeof *r || (r->i & 1) != odd || r->x != r->i * 0.5)
        return cask_task_fail(ctx, "bad arguments");
    char tag[12];
    snprintf(tag, sizeof tag, "t%d", r->i);
    if (strcmp(tag, r->tag))
        return cask_task_fail(ctx, "bad tag");
    atomic_fetch_add(&seen[r->i], 1);
    return CASK_OK;
}
static cask_status even_task(cask_task_ctx *ctx) { return rec_task(ctx, seen_a, 0); }
static cask_status odd_task(cask_task_ctx *ctx) { return rec_task(ctx, seen_b, 1); }

Test(graph_batch, each_task_has_its_own_arguments_and_kernel)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *ka = kernel(rt, "even", even_task), *kb = kernel(rt, "odd", odd_task);
    rec r[64];
    cask_kernel *ks[64];
    for (int i = 0; i < 64; i++) {
        r[i] = (rec){ .i = i, .x = i * 0.5 };
        snprintf(r[i].tag, sizeof r[i].tag, "t%d", i);
        ks[i] = i & 1 ? kb : ka;
    }
    cask_graph *g = graph(rt);
    cask_task_batch b = { .ntasks = 64, .kernels = ks, .args = r, .args_size = sizeof(rec) };
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_OK);
    memset(r, 0, sizeof r);   /* copied at add */
    compute_ok(g);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(atomic_load(i & 1 ? &seen_b[i] : &seen_a[i]), 1, "task %d", i);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

/* ---- batches among tasks added alone ---- */

Test(graph_batch, batches_and_tasks_added_alone_mix_with_edges_by_handle, .timeout = 60)
{
    reset();
    uint32_t n = 2000;   /* table tasks 0..n-1: the batch is 1000..1999, the rest alone */
    random_table(n, 0, 11);
    cask_runtime *rt = start_runtime(4, 0);
    cask_kernel *k = kernel(rt, "value", value_task);
    cask_graph *g = graph(rt);
    cask_task *t[2000];
    for (uint32_t i = 0; i < 1000; i++)   /* alone, deps named */
        t[i] = add_alone(g, k, i, t);
    /* the batch holds its edges among its own tasks; those to tasks 0..999 by handle */
    static uint32_t ds[1001], di[4 * 1000];
    uint32_t e = 0;
    for (uint32_t i = 1000; i < n; i++) {
        ds[i - 1000] = e;
        idx[i] = (int)i;
        for (uint32_t j = dep_start[i]; j < dep_start[i + 1]; j++)
            if (dep_index[j] >= 1000)
                di[e++] = dep_index[j] - 1000;
    }
    ds[1000] = e;
    cask_task_batch b = { .ntasks = 1000, .kernel = k, .args = &idx[1000],
                          .args_size = sizeof(int), .dep_start = ds, .dep_index = di };
    cr_assert_eq(cask_graph_add_batch(g, &b, &t[1000]), CASK_OK);
    for (uint32_t i = 1000; i < n; i++)
        for (uint32_t j = dep_start[i]; j < dep_start[i + 1]; j++)
            if (dep_index[j] < 1000)
                cr_assert_eq(cask_task_depend(t[i], t[dep_index[j]]), CASK_OK);
    compute_ok(g);
    check_table(n);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

/* ---- refused batches ---- */

static void assert_tasks(cask_graph *g, size_t n)
{
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, n, "%zu tasks, expected %zu", info.ntasks, n);
}

/* A batch refused after it filled slabs (its bad entry at task 1400) leaves the graph as
 * it was: the 5 tasks before it run alone, and a good batch added after it builds and
 * runs as if the bad one had not been tried. (The 5 count their runs only: the batch's
 * first 5 tasks have their indexes and write their values.) */
Test(graph_batch, a_bad_dep_late_in_a_batch_adds_nothing, .timeout = 60)
{
    reset();
    uint32_t n = 1500;
    random_table(n, 0, 5);
    cask_runtime *rt = start_runtime(4, 0);
    cask_kernel *k = kernel(rt, "value", value_task), *kc = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    /* 5 tasks alone, as table tasks 0..4 would be (task 0..4 have deps among them) */
    cask_task *t[5];
    for (uint32_t i = 0; i < 5; i++)
        t[i] = add_alone(g, kc, i, t);
    cask_task_batch b = table_batch(k, n);
    uint32_t bad = dep_start[1400];
    cr_assert_lt(bad, dep_start[1401], "task 1400 has deps");
    uint32_t keep = dep_index[bad];
    dep_index[bad] = 1400;   /* itself */
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    cr_assert(strstr(last_error(rt), "task 1400"), "%s", last_error(rt));
    dep_index[bad] = 1450;   /* a later one */
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    dep_index[bad] = keep;
    assert_tasks(g, 5);
    compute_ok(g);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&runs[i]), i < 5, "task %u ran %d times", i,
                     atomic_load(&runs[i]));
    for (uint32_t i = 0; i < 5; i++)
        for (uint32_t j = dep_start[i]; j < dep_start[i + 1]; j++)
            cr_assert_lt(atomic_load(&when[dep_index[j]]), atomic_load(&when[i]));
    /* the table's tasks 0..1499 as a batch after the 5 (their indexes start at 0 in it) */
    reset();
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_OK);
    assert_tasks(g, 1505);
    compute_ok(g);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&runs[i]), i < 5 ? 2 : 1, "task %u ran %d times", i,
                     atomic_load(&runs[i]));
    for (uint32_t i = 0; i < n; i++)
        want[i] = value_of(i, want);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(val[i], want[i], "task %u: value differs from the sequential one", i);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

/* A bad index far out in a long list (a fan-in's, whose deps are asked for ahead of the
 * one linked) is refused, and nothing is read through it. */
Test(graph_batch, a_bad_index_in_a_long_list_is_refused)
{
    uint32_t n = 12000, fan = 10000;
    random_table(n, fan, 3);
    cask_runtime *rt = start_runtime(1, 0);
    cask_kernel *k = kernel(rt, "value", value_task);
    cask_graph *g = graph(rt);
    cask_task_batch b = table_batch(k, n);
    dep_index[dep_start[fan] + 5000] = 0xfffffff0u;
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    cr_assert(strstr(last_error(rt), "task 10000 waits for task 4294967280"), "%s",
              last_error(rt));
    assert_tasks(g, 0);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

Test(graph_batch, decreasing_offsets_and_missing_kernels_are_refused)
{
    cask_runtime *rt = start_runtime(1, 0);
    cask_kernel *k = kernel(rt, "value", value_task);
    cask_graph *g = graph(rt);
    uint32_t ds[4] = { 0, 0, 1, 0 }, di[2] = { 0, 1 };
    cask_task_batch b = { .ntasks = 3, .kernel = k, .dep_start = ds, .dep_index = di };
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    cr_assert(strstr(last_error(rt), "dep_start[3]"), "%s", last_error(rt));
    ds[3] = 2;
    cask_kernel *ks[3] = { k, NULL, k };
    b.kernels = ks;
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    cr_assert(strstr(last_error(rt), "task 1 has no kernel"), "%s", last_error(rt));
    b.kernels = NULL;
    b.kernel = NULL;
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    b.kernel = k;
    b.dep_index = NULL;
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    b.dep_index = di;
    b.args_size = 4;   /* without args */
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_INVALID);
    b.args_size = 0;
    cr_assert_eq(cask_graph_add_batch(g, NULL, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_add_batch(NULL, &b, NULL), CASK_ERR_INVALID);
    assert_tasks(g, 0);
    b.ntasks = 0;
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_OK);
    b.ntasks = 3;
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_OK);
    assert_tasks(g, 3);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

Test(graph_batch, a_running_graph_refuses_a_batch, .timeout = 60)
{
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *gk = kernel(rt, "gate", gate_task);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .kernel = gk };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    wait_entered();
    cask_task_batch b = { .ntasks = 2, .kernel = gk };
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_ERR_STATE);
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    assert_tasks(g, 1);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

static cask_status never(cask_task_ctx *ctx)
{
    (void)ctx;
    return CASK_OK;
}

Test(graph_batch, a_kernel_that_runs_nowhere_is_found_by_the_check)
{
    cask_runtime *rt = start_runtime(1, 0);
    cask_kernel_desc kd = { .name = "gpu-only", .cuda = never };
    cask_kernel *k;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_graph *g = graph(rt);
    cask_task_batch b = { .ntasks = 3, .kernel = k };
    cr_assert_eq(cask_graph_add_batch(g, &b, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_UNSUPPORTED);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}
