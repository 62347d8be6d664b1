/* tests/test_graph_deps.c: the order that dependencies impose on a graph's tasks. Edges
 * from access modes (checked against a sequential replay of random task sequences over a
 * few data handles), explicit dependencies, and cycles, which are reported before
 * anything runs. Suite graph runs in `meson test --suite unit`, graph_stress in
 * `--suite stress`. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cask/cask.h"
#include "graph_helpers.h"
#include "test_helpers.h"

TestSuite(graph, .fini = leak_check, .timeout = 120);
TestSuite(graph_stress, .fini = leak_check, .timeout = 600);

/* ---- random sequences of tasks over a few data handles ---- */

#define RD_NDATA 5
#define RD_MAXACC 3
typedef struct rd_task {
    int nacc;
    int data[RD_MAXACC];
    cask_access_mode mode[RD_MAXACC];
    int explicit_pred;   /* -1 or an earlier task this one depends on explicitly */
} rd_task;

static rd_task rd[MAX_TASKS];
static uint64_t rd_seen[MAX_TASKS][RD_MAXACC];

/* Reads what its R/RW buffers hold, writes W/RW buffers with a value derived from its id
 * and (RW) the old value. */
static cask_status rd_kernel(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id < 0 || id >= MAX_TASKS)
        return cask_task_fail(ctx, "bad id %d", id);
    started[id] = atomic_fetch_add(&ticks, 1);
    atomic_fetch_add(&runs[id], 1);
    const rd_task *t = &rd[id];
    if (cask_task_nbuffers(ctx) != t->nacc)
        return cask_task_fail(ctx, "task %d: %d buffers, want %d", id,
                              cask_task_nbuffers(ctx), t->nacc);
    for (int i = 0; i < t->nacc; i++) {
        uint64_t *v = cask_task_buffer(ctx, i);
        if (!v || cask_task_buffer_size(ctx, i) != sizeof(uint64_t))
            return cask_task_fail(ctx, "task %d: buffer %d is %p, %zu bytes", id, i,
                                  (void *)v, cask_task_buffer_size(ctx, i));
        if (t->mode[i] & CASK_READ)
            rd_seen[id][i] = *v;
    }
    if (id % 5 == 0)
        spin_ns(1000 * (id % 3));
    for (int i = 0; i < t->nacc; i++) {
        uint64_t *v = cask_task_buffer(ctx, i);
        if (t->mode[i] == CASK_WRITE)
            *v = mix(0x5eed, (uint64_t)id * 16 + (uint64_t)i);
        else if (t->mode[i] == CASK_RW)
            *v = mix(rd_seen[id][i], (uint64_t)id * 16 + (uint64_t)i);
    }
    ended[id] = atomic_fetch_add(&ticks, 1);
    return CASK_OK;
}

static void rd_generate(uint64_t seed, int ntasks)
{
    uint64_t s = seed;
    for (int id = 0; id < ntasks; id++) {
        rd_task *t = &rd[id];
        t->nacc = (int)(rng_next(&s) % (RD_MAXACC + 1));
        int used = 0;
        for (int i = 0; i < t->nacc; i++) {
            int d;
            do
                d = (int)(rng_next(&s) % RD_NDATA);
            while (used & (1 << d));
            used |= 1 << d;
            t->data[i] = d;
            uint64_t r = rng_next(&s) % 10;
            t->mode[i] = r < 5 ? CASK_READ : r < 7 ? CASK_WRITE : CASK_RW;
        }
        t->explicit_pred = -1;
        if (id > 0 && rng_next(&s) % 8 == 0)
            t->explicit_pred = (int)(rng_next(&s) % (uint64_t)id);
    }
}

/* Replays the tasks in submission order; checks what each saw and that every RAW, WAR
 * and WAW pair ran in order; updates the expected values. */
static void rd_check(int ntasks, uint64_t expect[RD_NDATA])
{
    int last_writer[RD_NDATA];
    static int readers[RD_NDATA][MAX_TASKS];
    int nreaders[RD_NDATA] = { 0 };
    for (int d = 0; d < RD_NDATA; d++)
        last_writer[d] = -1;
    for (int id = 0; id < ntasks; id++) {
        const rd_task *t = &rd[id];
        cr_assert_eq(atomic_load(&runs[id]), 1, "task %d ran %d times", id,
                     atomic_load(&runs[id]));
        if (t->explicit_pred >= 0)
            assert_before(t->explicit_pred, id);
        for (int i = 0; i < t->nacc; i++) {
            int d = t->data[i];
            if (t->mode[i] & CASK_READ)
                cr_assert_eq(rd_seen[id][i], expect[d], "task %d read data %d: got %llx, "
                             "want %llx", id, d, (unsigned long long)rd_seen[id][i],
                             (unsigned long long)expect[d]);
            if (last_writer[d] >= 0)
                assert_before(last_writer[d], id);  /* RAW, WAW */
            if (t->mode[i] & CASK_WRITE) {
                for (int r = 0; r < nreaders[d]; r++)
                    assert_before(readers[d][r], id);  /* WAR */
                nreaders[d] = 0;
                last_writer[d] = id;
                expect[d] = t->mode[i] == CASK_WRITE
                    ? mix(0x5eed, (uint64_t)id * 16 + (uint64_t)i)
                    : mix(expect[d], (uint64_t)id * 16 + (uint64_t)i);
            } else {
                readers[d][nreaders[d]++] = id;
            }
        }
    }
}

static void random_sequences(int ncpu, int nseeds, int ntasks)
{
    cask_runtime *rt = start(ncpu);
    cask_kernel *k = kernel(rt, "rd", rd_kernel);
    for (int seed = 1; seed <= nseeds; seed++) {
        uint64_t host[RD_NDATA], expect[RD_NDATA];
        cask_data *data[RD_NDATA];
        for (int d = 0; d < RD_NDATA; d++) {
            host[d] = expect[d] = 1000u * (unsigned)d + (unsigned)seed;
            cr_assert_eq(cask_data_register(rt, &host[d], sizeof host[d], &data[d]), CASK_OK);
        }
        rd_generate((uint64_t)seed, ntasks);
        cask_graph *g = graph(rt);
        cask_task *tasks[MAX_TASKS];
        for (int id = 0; id < ntasks; id++) {
            cask_access acc[RD_MAXACC];
            for (int i = 0; i < rd[id].nacc; i++)
                acc[i] = (cask_access){ data[rd[id].data[i]], rd[id].mode[i] };
            tasks[id] = add(g, k, id, acc, rd[id].nacc);
            if (rd[id].explicit_pred >= 0)
                cr_assert_eq(cask_task_depend(tasks[id], tasks[rd[id].explicit_pred]), CASK_OK);
        }
        /* Twice: a graph can be re-run and continues from the data's current content. */
        for (int round = 0; round < 2; round++) {
            reset_clock();
            cask_status st = cask_graph_compute(g);
            cr_assert_eq(st, CASK_OK, "seed %d: %s %s", seed, cask_status_string(st),
                         cask_graph_error(g));
            rd_check(ntasks, expect);
        }
        cr_assert_eq(cask_graph_destroy(g), CASK_OK);
        for (int d = 0; d < RD_NDATA; d++) {
            uint64_t *p;
            cr_assert_eq(cask_data_acquire(data[d], CASK_READ, (void **)&p), CASK_OK);
            cr_assert_eq(*p, expect[d], "seed %d data %d", seed, d);
            cr_assert_eq(cask_data_release(data[d]), CASK_OK);
            cr_assert_eq(cask_data_destroy(data[d]), CASK_OK);
            cr_assert_eq(host[d], expect[d], "seed %d data %d after destroy", seed, d);
        }
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, access_modes_order_random_sequences_on_four_workers)
{
    random_sequences(4, 40, 300);
}

Test(graph, access_modes_order_random_sequences_on_one_worker)
{
    random_sequences(1, 10, 300);
}

Test(graph, access_modes_order_random_sequences_on_many_workers)
{
    random_sequences(9, 20, 1000);
}

Test(graph_stress, access_modes_order_long_random_sequences)
{
    random_sequences(8, 200, MAX_TASKS);
}

/* ---- explicit dependencies ---- */

Test(graph, explicit_dependencies_order_a_chain)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    enum { N = 300 };
    cask_task *t[N];
    /* Added in reverse so that submission order is no help. */
    for (int i = N - 1; i >= 0; i--)
        t[i] = add(g, k, i, NULL, 0);
    for (int i = 1; i < N; i++)
        cr_assert_eq(cask_task_depend(t[i], t[i - 1]), CASK_OK);
    reset_clock();
    compute_ok(g);
    for (int i = 1; i < N; i++)
        assert_before(i - 1, i);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, explicit_dependencies_join_a_diamond)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    enum { W = 64 };
    cask_task *top = add(g, k, 0, NULL, 0);
    cask_task *bottom = add(g, k, W + 1, NULL, 0);
    for (int i = 1; i <= W; i++) {
        cask_task *mid = add(g, k, i, NULL, 0);
        cr_assert_eq(cask_task_depend(mid, top), CASK_OK);
        cr_assert_eq(cask_task_depend(bottom, mid), CASK_OK);
    }
    reset_clock();
    compute_ok(g);
    for (int i = 1; i <= W; i++) {
        assert_before(0, i);
        assert_before(i, W + 1);
    }
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, W + 2);
    cr_assert_eq(info.nedges, 2 * W);
    cr_assert_eq(info.ntasks_run, W + 2);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, duplicate_explicit_dependency_runs_each_task_once)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    cask_task *a = add(g, k, 0, NULL, 0);
    cask_task *b = add(g, k, 1, NULL, 0);
    cr_assert_eq(cask_task_depend(b, a), CASK_OK);
    cask_status st = cask_task_depend(b, a);
    cr_assert(st == CASK_OK, "a repeated edge is harmless: %s", cask_status_string(st));
    reset_clock();
    compute_ok(g);
    assert_before(0, 1);
    cr_assert_eq(atomic_load(&runs[0]), 1);
    cr_assert_eq(atomic_load(&runs[1]), 1);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, explicit_dependency_on_itself_is_invalid)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    cask_task *a = add(g, k, 0, NULL, 0);
    cr_assert_eq(cask_task_depend(a, a), CASK_ERR_INVALID);
    cr_assert_eq(cask_task_depend(a, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_task_depend(NULL, a), CASK_ERR_INVALID);
    /* with a successor, and after it: still refused, and no edge made (the graph runs) */
    cask_task *b = add(g, k, 1, NULL, 0);
    cr_assert_eq(cask_task_depend(b, a), CASK_OK);
    cr_assert_eq(cask_task_depend(a, a), CASK_ERR_INVALID);
    cr_assert_eq(cask_task_depend(b, b), CASK_ERR_INVALID);
    reset_clock();
    compute_ok(g);
    assert_before(0, 1);
    cr_assert_eq(atomic_load(&runs[0]), 1);
    cr_assert_eq(atomic_load(&runs[1]), 1);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, explicit_dependency_across_graphs_is_invalid)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_task *a = add(g1, k, 0, NULL, 0);
    cask_task *b = add(g2, k, 1, NULL, 0);
    cr_assert_eq(cask_task_depend(a, b), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- cycles ---- */

static void assert_cycle_rejected(cask_graph *g, int ntasks)
{
    reset_clock();
    cask_status st = cask_graph_compute(g);
    cr_assert_eq(st, CASK_ERR_CYCLE, "compute gave %s", cask_status_string(st));
    for (int i = 0; i < ntasks; i++)
        cr_assert_eq(atomic_load(&runs[i]), 0, "task %d ran in a graph with a cycle", i);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
}

Test(graph, two_task_cycle_is_reported)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    cask_task *a = add(g, k, 0, NULL, 0);
    cask_task *b = add(g, k, 1, NULL, 0);
    cr_assert_eq(cask_task_depend(a, b), CASK_OK);
    cr_assert_eq(cask_task_depend(b, a), CASK_OK);
    assert_cycle_rejected(g, 2);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, long_cycle_behind_a_root_is_reported_and_nothing_runs)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    enum { N = 50 };
    cask_task *t[N];
    for (int i = 0; i < N; i++)
        t[i] = add(g, k, i, NULL, 0);
    for (int i = 2; i < N; i++)
        cr_assert_eq(cask_task_depend(t[i], t[i - 1]), CASK_OK);
    cr_assert_eq(cask_task_depend(t[1], t[0]), CASK_OK);      /* t0 is a root */
    cr_assert_eq(cask_task_depend(t[10], t[N - 1]), CASK_OK); /* t10 .. tN-1 loop */
    assert_cycle_rejected(g, N);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, cycle_through_access_modes_and_an_explicit_edge_is_reported)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    uint64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    cask_task *writer = add(g, k, 0, &w, 1);
    cask_task *reader = add(g, k, 1, &r, 1);  /* reader after writer (RAW) */
    cr_assert_eq(cask_task_depend(writer, reader), CASK_OK);
    assert_cycle_rejected(g, 2);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, submit_reports_a_cycle_too)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "tick", tick_task);
    cask_graph *g = graph(rt);
    cask_task *a = add(g, k, 0, NULL, 0);
    cask_task *b = add(g, k, 1, NULL, 0);
    cask_task *c = add(g, k, 2, NULL, 0);
    cr_assert_eq(cask_task_depend(b, a), CASK_OK);
    cr_assert_eq(cask_task_depend(c, b), CASK_OK);
    cr_assert_eq(cask_task_depend(a, c), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_ERR_CYCLE);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
