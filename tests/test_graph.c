/* tests/test_graph.c: building and running task graphs. Dependencies from access modes
 * (checked against a sequential replay of random task sequences), explicit dependencies,
 * cycles, misuse errors, re-running a graph, results independent of the worker count,
 * priorities, the task context, and graphs of a million tasks.
 * Suite graph runs in `meson test --suite unit`, graph_stress in `--suite stress`. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cask/cask.h"
#include "test_helpers.h"

TestSuite(graph, .fini = leak_check, .timeout = 120);
TestSuite(graph_stress, .fini = leak_check, .timeout = 600);

/* ---- helpers ---- */

static cask_runtime *start(int ncpu) { return start_runtime(ncpu, 0); }

/* Adds a task with an int argument and the given accesses. */
static cask_task *add(cask_graph *g, cask_kernel *k, int arg, const cask_access *acc, int nacc)
{
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = acc,
                          .naccess = nacc, .args = &arg, .args_size = sizeof arg };
    cask_task *t = NULL;
    cask_status st = cask_graph_add_task(g, &td, &t);
    cr_assert_eq(st, CASK_OK, "add_task: %s", cask_status_string(st));
    return t;
}

/* A logical clock: every task takes a tick when it starts and when it ends, so "a ended
 * before b started" is end[a] < start[b]. */
static atomic_uint_fast64_t ticks;
#define MAX_TASKS 4096
static uint64_t started[MAX_TASKS], ended[MAX_TASKS];
static atomic_int runs[MAX_TASKS];

static void reset_clock(void)
{
    atomic_store(&ticks, 1);
    memset(started, 0, sizeof started);
    memset(ended, 0, sizeof ended);
    for (int i = 0; i < MAX_TASKS; i++)
        atomic_store(&runs[i], 0);
}

static cask_status tick_task(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id < 0 || id >= MAX_TASKS)
        return cask_task_fail(ctx, "bad id %d", id);
    started[id] = atomic_fetch_add(&ticks, 1);
    atomic_fetch_add(&runs[id], 1);
    if (id % 7 == 0)
        spin_ns(2000);
    ended[id] = atomic_fetch_add(&ticks, 1);
    return CASK_OK;
}

static void assert_before(int a, int b)
{
    cr_assert(ended[a] != 0 && started[b] != 0, "task %d or %d did not run", a, b);
    cr_assert_lt(ended[a], started[b], "task %d (end %llu) must finish before task %d "
                 "(start %llu)", a, (unsigned long long)ended[a], b,
                 (unsigned long long)started[b]);
}

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

/* ---- re-running ---- */

static cask_status increment_task(cask_task_ctx *ctx)
{
    int64_t *v = cask_task_buffer(ctx, 0);
    *v += 1;
    return CASK_OK;
}

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

/* ---- a million tasks ---- */

#define MAX_WORKERS 64
static struct { _Alignas(64) uint64_t n; } per_worker[MAX_WORKERS];

static cask_status count_per_worker(cask_task_ctx *ctx)
{
    per_worker[cask_task_worker(ctx)].n++;
    return CASK_OK;
}

static uint64_t total_per_worker(void)
{
    uint64_t n = 0;
    for (int i = 0; i < MAX_WORKERS; i++)
        n += per_worker[i].n;
    return n;
}

static void independent_tasks(int ncpu, int ntasks)
{
    cask_runtime *rt = start(ncpu);
    cask_kernel *k = kernel(rt, "count", count_per_worker);
    cask_graph *g = graph(rt);
    cask_task_desc td = { .kernel = k };
    for (int i = 0; i < ntasks; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    memset(per_worker, 0, sizeof per_worker);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), (uint64_t)ntasks);
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, (size_t)ntasks);
    cr_assert_eq(info.ntasks_run, (size_t)ntasks);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph, million_independent_tasks_complete)
{
    independent_tasks(2, 1000000);
}

Test(graph_stress, million_independent_tasks_on_many_workers)
{
    independent_tasks(16, 1000000);
}

static int64_t chain_last;

static cask_status chain_step(cask_task_ctx *ctx)
{
    int i = arg_int(ctx);
    if (chain_last != i - 1)
        return cask_task_fail(ctx, "chain task %d ran after %lld", i, (long long)chain_last);
    chain_last = i;
    return CASK_OK;
}

Test(graph_stress, million_task_chain_by_explicit_dependencies)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "step", chain_step);
    cask_graph *g = graph(rt);
    cask_task *prev = NULL;
    for (int i = 0; i < 1000000; i++) {
        cask_task *t = add(g, k, i, NULL, 0);
        if (prev)
            cr_assert_eq(cask_task_depend(t, prev), CASK_OK);
        prev = t;
    }
    chain_last = -1;
    compute_ok(g);
    cr_assert_eq(chain_last, 999999);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph_stress, million_task_chain_by_access_modes)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    cask_task_desc td = { .kernel = k, .access = &rw, .naccess = 1 };
    for (int i = 0; i < 1000000; i++)
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 1000000);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph_stress, million_readers_then_one_writer)
{
    /* WAR with a huge reader set: the writer waits for a million readers. */
    cask_runtime *rt = start(4);
    cask_kernel *count = kernel(rt, "count", count_per_worker);
    cask_kernel *inc = kernel(rt, "inc", increment_task);
    int64_t x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access r = { d, CASK_READ }, rw = { d, CASK_RW };
    cask_task_desc rd_desc = { .kernel = count, .access = &r, .naccess = 1 };
    for (int i = 0; i < 1000000; i++)
        cr_assert_eq(cask_graph_add_task(g, &rd_desc, NULL), CASK_OK);
    cask_task_desc wr_desc = { .kernel = inc, .access = &rw, .naccess = 1 };
    cr_assert_eq(cask_graph_add_task(g, &wr_desc, NULL), CASK_OK);
    memset(per_worker, 0, sizeof per_worker);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), 1000000);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(x, 1);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(graph_stress, million_task_random_dag)
{
    cask_runtime *rt = start(8);
    cask_kernel *k = kernel(rt, "count", count_per_worker);
    cask_graph *g = graph(rt);
    enum { N = 1000000, WINDOW = 100 };
    cask_task **t = malloc(N * sizeof *t);
    cr_assert_not_null(t);
    uint64_t s = 9;
    cask_task_desc td = { .kernel = k };
    for (int i = 0; i < N; i++) {
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK);
        int npred = i == 0 ? 0 : (int)(rng_next(&s) % 4);
        int last = -1;
        for (int p = 0; p < npred; p++) {
            int back = 1 + (int)(rng_next(&s) % (uint64_t)(i < WINDOW ? i : WINDOW));
            if (i - back == last)
                continue;
            last = i - back;
            cr_assert_eq(cask_task_depend(t[i], t[i - back]), CASK_OK);
        }
    }
    memset(per_worker, 0, sizeof per_worker);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), N);
    compute_ok(g);
    cr_assert_eq(total_per_worker(), 2 * N);
    free(t);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
