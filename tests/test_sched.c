/* tests/test_sched.c: the scheduler's behaviour seen from outside. Work is stolen when one
 * worker makes it all, idle workers sleep instead of spinning, a failing task fails its
 * graph cleanly, and shutdown waits for a graph nobody waited for. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cask/cask.h"
#include "test_helpers.h"


TestSuite(sched, .fini = leak_check, .timeout = 120);
TestSuite(sched_stress, .fini = leak_check, .timeout = 600);

/* ---- helpers ---- */

static cask_runtime *start_policy(int ncpu, int sched)
{
    cask_config cfg = { 0 };
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS;
    cfg.ncpu = ncpu;
    cfg.ngpu = 0;
    cfg.sim_gpus = 0;
    if (sched >= 0) {
        cfg.field_mask |= CASK_CONFIG_SCHED;
        cfg.sched = (cask_sched_policy)sched;
    }
    cask_runtime *rt = NULL;
    cask_status st = cask_init(&cfg, &rt);
    cr_assert_eq(st, CASK_OK, "cask_init(ncpu=%d): %s", ncpu, cask_status_string(st));
    return rt;
}

static cask_runtime *start(int ncpu) { return start_policy(ncpu, -1); }



static cask_task *add_named(cask_graph *g, cask_kernel *k, const char *name,
                            const cask_access *acc, int nacc)
{
    cask_task_desc td = { .kernel = k, .access = acc, .naccess = nacc };
    if (name) {
        td.field_mask |= CASK_TASK_NAME;
        td.name = name;
    }
    cask_task *t = NULL;
    cask_status st = cask_graph_add_task(g, &td, &t);
    cr_assert_eq(st, CASK_OK, "add_task: %s", cask_status_string(st));
    return t;
}

static cask_task *add(cask_graph *g, cask_kernel *k) { return add_named(g, k, NULL, NULL, 0); }


static void sleep_ns(long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

#define MAX_WORKERS 64

static int stats_of(cask_runtime *rt, cask_worker_stats *stats)
{
    int n = 0;
    cr_assert_eq(cask_runtime_nworkers(rt, &n), CASK_OK);
    cr_assert(n >= 1 && n <= MAX_WORKERS, "%d workers", n);
    cr_assert_eq(cask_runtime_stats(rt, stats, n), CASK_OK);
    return n;
}

static atomic_int ran;

static cask_status nap_task(cask_task_ctx *ctx)
{
    sleep_ns(20000);
    atomic_fetch_add(&ran, 1);
    return CASK_OK;
}

static cask_status count_task(cask_task_ctx *ctx)
{
    atomic_fetch_add(&ran, 1);
    return CASK_OK;
}

/* ---- stealing ---- */

/* One root makes 10k children ready at once on the worker that ran it; the other workers
 * have nothing of their own and can only get work by stealing it. */
static void fan_out_is_stolen(int sched)
{
    enum { NCPU = 4, CHILDREN = 10000 };
    cask_runtime *rt = start_policy(NCPU, sched);
    cask_kernel *count = kernel(rt, "root", count_task);
    cask_kernel *nap = kernel(rt, "nap", nap_task);
    cask_graph *g = graph(rt);
    cask_task *root = add(g, count);
    for (int i = 0; i < CHILDREN; i++)
        cr_assert_eq(cask_task_depend(add(g, nap), root), CASK_OK);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    atomic_store(&ran, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&ran), CHILDREN + 1);

    cask_worker_stats st[MAX_WORKERS];
    int n = stats_of(rt, st);
    cr_assert_eq(n, NCPU);
    uint64_t steals = 0, total = 0, most = 0;
    int active = 0;
    for (int w = 0; w < n; w++) {
        steals += st[w].steals;
        total += st[w].tasks_run;
        if (st[w].tasks_run > most)
            most = st[w].tasks_run;
        if (st[w].tasks_run > 0)
            active++;
        cr_assert_geq(st[w].steal_attempts, st[w].steals, "worker %d", w);
    }
    cr_assert_eq(total, CHILDREN + 1, "tasks_run adds up to %llu", (unsigned long long)total);
    cr_assert_gt(steals, 0, "no worker stole anything");
    cr_assert_geq(active, NCPU - 1, "only %d of %d workers ran tasks", active, NCPU);
    cr_assert_lt(most, total * 9 / 10, "one worker ran %llu of %llu tasks",
                 (unsigned long long)most, (unsigned long long)total);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, fan_out_is_stolen_by_idle_workers) { fan_out_is_stolen(-1); }
Test(sched, fan_out_is_stolen_under_ws_policy) { fan_out_is_stolen(CASK_SCHED_WS); }

Test(sched, independent_roots_spread_over_workers)
{
    enum { NCPU = 4, N = 4000 };
    cask_runtime *rt = start(NCPU);
    cask_kernel *nap = kernel(rt, "nap", nap_task);
    cask_graph *g = graph(rt);
    for (int i = 0; i < N; i++)
        add(g, nap);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    atomic_store(&ran, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&ran), N);
    cask_worker_stats st[MAX_WORKERS];
    int n = stats_of(rt, st);
    int active = 0;
    for (int w = 0; w < n; w++)
        active += st[w].tasks_run > 0;
    cr_assert_geq(active, NCPU - 1, "only %d of %d workers ran tasks", active, NCPU);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* Every policy must respect dependencies: a fan-out/fan-in with a chain behind it. */
static atomic_int phase_errors;
static atomic_int phase_done[3];

static cask_status phase0(cask_task_ctx *ctx)
{
    atomic_fetch_add(&phase_done[0], 1);
    return CASK_OK;
}
static cask_status phase1(cask_task_ctx *ctx)
{
    if (atomic_load(&phase_done[0]) != 1)
        atomic_fetch_add(&phase_errors, 1);
    atomic_fetch_add(&phase_done[1], 1);
    return CASK_OK;
}
static cask_status phase2(cask_task_ctx *ctx)
{
    if (atomic_load(&phase_done[1]) != 1000)
        atomic_fetch_add(&phase_errors, 1);
    atomic_fetch_add(&phase_done[2], 1);
    return CASK_OK;
}

static void policy_respects_dependencies(int sched)
{
    cask_runtime *rt = start_policy(4, sched);
    cask_kernel *k0 = kernel(rt, "p0", phase0);
    cask_kernel *k1 = kernel(rt, "p1", phase1);
    cask_kernel *k2 = kernel(rt, "p2", phase2);
    cask_graph *g = graph(rt);
    cask_task *root = add(g, k0);
    cask_task *sink = add(g, k2);
    for (int i = 0; i < 1000; i++) {
        cask_task *mid = add(g, k1);
        cr_assert_eq(cask_task_depend(mid, root), CASK_OK);
        cr_assert_eq(cask_task_depend(sink, mid), CASK_OK);
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++)
            atomic_store(&phase_done[i], 0);
        atomic_store(&phase_errors, 0);
        compute_ok(g);
        cr_assert_eq(atomic_load(&phase_errors), 0);
        cr_assert_eq(atomic_load(&phase_done[2]), 1);
    }
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, ws_policy_respects_dependencies) { policy_respects_dependencies(CASK_SCHED_WS); }
Test(sched, locality_policy_respects_dependencies)
{
    policy_respects_dependencies(CASK_SCHED_LOCALITY);
}
Test(sched, eager_policy_respects_dependencies)
{
    policy_respects_dependencies(CASK_SCHED_EAGER);
}

/* ---- idle workers sleep ---- */

static void assert_idle_is_cheap(cask_runtime *rt, const char *when)
{
    sleep_ns(50 * 1000000L); /* a runtime may spin briefly before it sleeps */
    cask_worker_stats before[MAX_WORKERS], after[MAX_WORKERS];
    int n = stats_of(rt, before);
    double cpu0 = cpu_seconds();
    sleep_ns(200 * 1000000L);
    double cpu = cpu_seconds() - cpu0;
    stats_of(rt, after);
    cr_assert_lt(cpu, 0.050, "%s: %d idle workers burnt %.0f ms of CPU in 200 ms", when, n,
                 cpu * 1e3);
    for (int w = 0; w < n; w++)
        cr_assert_lt(after[w].busy_ns - before[w].busy_ns, 1000000u,
                     "%s: worker %d was busy %llu ns while idle", when, w,
                     (unsigned long long)(after[w].busy_ns - before[w].busy_ns));
}

Test(sched, workers_sleep_after_init)
{
    cask_runtime *rt = start(4);
    assert_idle_is_cheap(rt, "after init");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, workers_sleep_after_a_graph)
{
    cask_runtime *rt = start(8);
    cask_kernel *count = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    for (int i = 0; i < 100000; i++)
        add(g, count);
    compute_ok(g);
    assert_idle_is_cheap(rt, "after a graph");
    compute_ok(g); /* and they wake up again */
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, busy_time_is_counted_while_tasks_run)
{
    cask_runtime *rt = start(2);
    cask_kernel *nap = kernel(rt, "nap", nap_task);
    cask_graph *g = graph(rt);
    for (int i = 0; i < 1000; i++)
        add(g, nap);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    compute_ok(g);
    cask_worker_stats st[MAX_WORKERS];
    int n = stats_of(rt, st);
    uint64_t busy = 0;
    for (int w = 0; w < n; w++)
        busy += st[w].busy_ns;
    /* 1000 naps of at least 20 us */
    cr_assert_geq(busy, 20000000u, "busy_ns %llu", (unsigned long long)busy);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- failure ---- */

static atomic_int successors_ran, independents_ran;

static cask_status explode(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "boom %d", 42);
}

static cask_status successor(cask_task_ctx *ctx)
{
    atomic_fetch_add(&successors_ran, 1);
    return CASK_OK;
}

static cask_status independent(cask_task_ctx *ctx)
{
    atomic_fetch_add(&independents_ran, 1);
    return CASK_OK;
}

static cask_status write_seven(cask_task_ctx *ctx)
{
    *(int *)cask_task_buffer(ctx, 0) = 7;
    return CASK_OK;
}

Test(sched, failing_task_fails_the_graph_and_names_task_kernel_message_and_data)
{
    cask_runtime *rt = start(4);
    cask_kernel *kfail = kernel(rt, "explode", explode);
    cask_kernel *ksucc = kernel(rt, "successor", successor);
    cask_kernel *kind = kernel(rt, "independent", independent);
    cask_kernel *kseven = kernel(rt, "write_seven", write_seven);
    int alpha = 0, beta = 0, gamma_ = 0;
    cask_data *a, *b, *c;
    cr_assert_eq(cask_data_register(rt, &alpha, sizeof alpha, &a), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &beta, sizeof beta, &b), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &gamma_, sizeof gamma_, &c), CASK_OK);
    cr_assert_eq(cask_data_set_name(a, "alpha_chunk"), CASK_OK);
    cr_assert_eq(cask_data_set_name(b, "beta_chunk"), CASK_OK);

    cask_graph *g = graph(rt);
    cask_access wb = { b, CASK_WRITE };
    cask_task *first = add_named(g, kseven, "first", &wb, 1);
    cask_access fail_acc[2] = { { a, CASK_WRITE }, { b, CASK_READ } };
    cask_task *failer = add_named(g, kfail, "failer", fail_acc, 2);
    cask_access ra = { a, CASK_READ };
    cask_task *s1 = add_named(g, ksucc, "succ1", &ra, 1);        /* RAW on alpha */
    cask_task *s2 = add_named(g, ksucc, "succ2", NULL, 0);
    cr_assert_eq(cask_task_depend(s2, s1), CASK_OK);             /* transitively */
    cask_task *s3 = add_named(g, ksucc, "succ3", NULL, 0);
    cr_assert_eq(cask_task_depend(s3, failer), CASK_OK);         /* explicitly */
    for (int i = 0; i < 100; i++)
        add_named(g, kind, NULL, NULL, 0);
    (void)first;

    atomic_store(&successors_ran, 0);
    atomic_store(&independents_ran, 0);
    cask_status st = cask_graph_compute(g);
    cr_assert_eq(st, CASK_ERR_TASK_FAILED, "compute gave %s", cask_status_string(st));
    const char *msg = cask_graph_error(g);
    cr_assert_not_null(msg);
    cr_assert_not_null(strstr(msg, "failer"), "no task name in: %s", msg);
    cr_assert_not_null(strstr(msg, "explode"), "no kernel name in: %s", msg);
    cr_assert_not_null(strstr(msg, "boom 42"), "no kernel message in: %s", msg);
    cr_assert_not_null(strstr(msg, "alpha_chunk"), "no data name in: %s", msg);
    cr_assert_not_null(strstr(msg, "beta_chunk"), "no data name in: %s", msg);
    cr_assert_eq(atomic_load(&successors_ran), 0, "a successor of the failed task ran");

    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_lt(info.ntasks_run, info.ntasks, "%zu of %zu tasks ran", info.ntasks_run,
                 info.ntasks);
    cr_assert_geq(info.ntasks_run, 2, "the writer and the failer ran");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);

    /* Work done before the failure is kept, and nothing stays busy. */
    int *p;
    cr_assert_eq(cask_data_acquire(b, CASK_READ, (void **)&p), CASK_OK);
    cr_assert_eq(*p, 7);
    cr_assert_eq(cask_data_release(b), CASK_OK);
    cr_assert_eq(cask_data_destroy(a), CASK_OK);
    cr_assert_eq(cask_data_destroy(b), CASK_OK);
    cr_assert_eq(cask_data_destroy(c), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, graph_error_is_empty_before_and_after_a_good_run)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    add(g, k);
    cr_assert_str_eq(cask_graph_error(g), "");
    compute_ok(g);
    cr_assert_str_eq(cask_graph_error(g), "");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, many_tasks_failing_at_once_do_not_hang)
{
    cask_runtime *rt = start(8);
    cask_kernel *kfail = kernel(rt, "explode", explode);
    cask_kernel *ksucc = kernel(rt, "successor", successor);
    cask_graph *g = graph(rt);
    cask_task *sink = add(g, ksucc);
    for (int i = 0; i < 5000; i++)
        cr_assert_eq(cask_task_depend(sink, add(g, kfail)), CASK_OK);
    atomic_store(&successors_ran, 0);
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
        cr_assert_not_null(strstr(cask_graph_error(g), "boom 42"), "%s", cask_graph_error(g));
    }
    cr_assert_eq(atomic_load(&successors_ran), 0);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static atomic_int fail_budget;

static cask_status fail_once(cask_task_ctx *ctx)
{
    if (atomic_fetch_sub(&fail_budget, 1) > 0)
        return cask_task_fail(ctx, "transient");
    return CASK_OK;
}

Test(sched, failed_graph_can_run_again)
{
    cask_runtime *rt = start(4);
    cask_kernel *kflaky = kernel(rt, "flaky", fail_once);
    cask_kernel *ksucc = kernel(rt, "successor", successor);
    cask_graph *g = graph(rt);
    cask_task *flaky = add(g, kflaky);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(cask_task_depend(add(g, ksucc), flaky), CASK_OK);
    atomic_store(&fail_budget, 1);
    atomic_store(&successors_ran, 0);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert_eq(atomic_load(&successors_ran), 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&successors_ran), 100);
    cr_assert_str_eq(cask_graph_error(g), "", "the old failure is still reported");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static cask_status return_io_error(cask_task_ctx *ctx) { return CASK_ERR_IO; }

Test(sched, kernel_returning_an_error_status_fails_the_graph_with_it)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "reader", return_io_error);
    cask_graph *g = graph(rt);
    add_named(g, k, "read_file", NULL, 0);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_IO);
    cr_assert_not_null(strstr(cask_graph_error(g), "read_file"), "%s", cask_graph_error(g));
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(sched, long_failure_message_is_kept_whole_or_truncated_safely)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "explode_long", explode);
    cask_graph *g = graph(rt);
    char name[2000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    add_named(g, k, name, NULL, 0);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert_gt(strlen(cask_graph_error(g)), 0);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- shutdown ---- */

Test(sched, shutdown_waits_for_a_submitted_graph, .timeout = 60)
{
    cask_runtime *rt = start(2);
    cask_kernel *nap = kernel(rt, "nap", nap_task);
    cask_graph *g = graph(rt);
    cask_task *prev = NULL;
    for (int i = 0; i < 2000; i++) {
        cask_task *t = add(g, nap);
        if (i % 10 == 0 && prev)
            cr_assert_eq(cask_task_depend(t, prev), CASK_OK);
        prev = t;
    }
    atomic_store(&ran, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    /* No wait: shutdown lets the graph finish first. The graph stays the caller's. */
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    cr_assert_eq(atomic_load(&ran), 2000, "shutdown returned before the graph finished");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
}

Test(sched, shutdown_waits_for_a_failing_graph, .timeout = 60)
{
    cask_runtime *rt = start(4);
    cask_kernel *nap = kernel(rt, "nap", nap_task);
    cask_kernel *kfail = kernel(rt, "explode", explode);
    cask_graph *g = graph(rt);
    for (int i = 0; i < 1000; i++)
        add(g, nap);
    add(g, kfail);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
}

Test(sched, shutdown_frees_kernels_and_data_left_behind, .timeout = 60)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "count", count_task);
    cask_graph *g = graph(rt);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_access rw = { d, CASK_RW };
    for (int i = 0; i < 100; i++)
        add_named(g, k, NULL, &rw, 1);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK); /* d is freed here: ASan sees no leak */
}

Test(sched_stress, submit_and_shutdown_repeatedly, .timeout = 300)
{
    for (int round = 0; round < 200; round++) {
        cask_runtime *rt = start(1 + round % 8);
        cask_kernel *k = kernel(rt, "count", count_task);
        cask_graph *g = graph(rt);
        for (int i = 0; i < 500; i++)
            add(g, k);
        atomic_store(&ran, 0);
        cr_assert_eq(cask_graph_submit(g), CASK_OK);
        cr_assert_eq(cask_shutdown(rt), CASK_OK);
        cr_assert_eq(atomic_load(&ran), 500, "round %d", round);
        cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    }
}

Test(sched_stress, many_small_graphs_back_to_back)
{
    cask_runtime *rt = start(8);
    cask_kernel *k = kernel(rt, "count", count_task);
    atomic_store(&ran, 0);
    for (int round = 0; round < 20000; round++) {
        cask_graph *g = graph(rt);
        cask_task *a = add(g, k), *b = add(g, k), *c = add(g, k);
        cr_assert_eq(cask_task_depend(c, a), CASK_OK);
        cr_assert_eq(cask_task_depend(c, b), CASK_OK);
        compute_ok(g);
        cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    }
    cr_assert_eq(atomic_load(&ran), 60000);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static cask_graph *concurrent_graphs[8];
static atomic_int concurrent_ran[8];

static cask_status concurrent_task(cask_task_ctx *ctx)
{
    size_t n;
    const int *which = cask_task_args(ctx, &n);
    atomic_fetch_add(&concurrent_ran[*which], 1);
    return CASK_OK;
}

Test(sched_stress, several_graphs_run_at_once)
{
    cask_runtime *rt = start(4);
    cask_kernel *k = kernel(rt, "conc", concurrent_task);
    for (int gi = 0; gi < 8; gi++) {
        concurrent_graphs[gi] = graph(rt);
        cask_task *prev = NULL;
        for (int i = 0; i < 20000; i++) {
            cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .args = &gi,
                                  .args_size = sizeof gi };
            cask_task *t;
            cr_assert_eq(cask_graph_add_task(concurrent_graphs[gi], &td, &t), CASK_OK);
            if (prev && i % 3)
                cr_assert_eq(cask_task_depend(t, prev), CASK_OK);
            prev = t;
        }
        atomic_store(&concurrent_ran[gi], 0);
    }
    for (int gi = 0; gi < 8; gi++)
        cr_assert_eq(cask_graph_submit(concurrent_graphs[gi]), CASK_OK);
    for (int gi = 7; gi >= 0; gi--) {
        cr_assert_eq(cask_graph_wait(concurrent_graphs[gi]), CASK_OK);
        cr_assert_eq(atomic_load(&concurrent_ran[gi]), 20000);
        cr_assert_eq(cask_graph_destroy(concurrent_graphs[gi]), CASK_OK);
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
