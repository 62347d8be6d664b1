/* tests/test_runtime.c: starting and stopping the runtime, its configuration fields,
 * cask_runtime_query, host memory, the runtime's error message and kernels. The
 * configuration from the environment is in test_runtime_env.c. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cask/cask.h"
#include "runtime_helpers.h"
#include "test_helpers.h"

TestSuite(runtime, .init = clear_env, .fini = leak_check, .timeout = 60);

/* host_alloc_of_absurd_size_is_nomem asks for more than any machine has: sanitizers must
 * let malloc return NULL instead of aborting. */
__attribute__((used)) const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
__attribute__((used)) const char *__tsan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* ---- init and shutdown ---- */

Test(runtime, init_and_shutdown_with_null_config)
{
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(NULL, &rt), CASK_OK);
    cr_assert_not_null(rt);
    run_tasks(rt, 100);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static void init_run_shutdown(int ncpu)
{
    cask_config cfg = cpu_config(ncpu);
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK, "ncpu %d", ncpu);
    cr_assert_eq(query(rt).ncpu_workers, ncpu);
    run_tasks(rt, 1000);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, init_with_one_worker) { init_run_shutdown(1); }
Test(runtime, init_with_two_workers) { init_run_shutdown(2); }
Test(runtime, init_with_four_workers) { init_run_shutdown(4); }

Test(runtime, more_workers_than_cores_work)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    init_run_shutdown((int)(cores > 0 ? cores : 1) * 4 + 1);
}

Test(runtime, more_workers_than_cores_work_unbound)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cask_config cfg = cpu_config((int)(cores > 0 ? cores : 1) * 2 + 1);
    cfg.field_mask |= CASK_CONFIG_BIND;
    cfg.bind = 0;
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    run_tasks(rt, 1000);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, init_and_shutdown_repeatedly)
{
    for (int i = 0; i < 20; i++) {
        cask_config cfg = cpu_config(1 + i % 4);
        cask_runtime *rt;
        cr_assert_eq(cask_init(&cfg, &rt), CASK_OK, "round %d", i);
        cr_assert_eq(cask_shutdown(rt), CASK_OK, "round %d", i);
    }
}

Test(runtime, two_runtimes_coexist)
{
    cask_config cfg = cpu_config(2);
    cask_runtime *a, *b;
    cr_assert_eq(cask_init(&cfg, &a), CASK_OK);
    cr_assert_eq(cask_init(&cfg, &b), CASK_OK);
    run_tasks(a, 500);
    run_tasks(b, 500);
    cr_assert_eq(cask_shutdown(a), CASK_OK);
    run_tasks(b, 500);
    cr_assert_eq(cask_shutdown(b), CASK_OK);
}

Test(runtime, shutdown_of_null_is_ok)
{
    cr_assert_eq(cask_shutdown(NULL), CASK_OK);
}

Test(runtime, init_without_out_pointer_is_invalid)
{
    cr_assert_eq(cask_init(NULL, NULL), CASK_ERR_INVALID);
}

Test(runtime, negative_ncpu_is_invalid)
{
    cask_config cfg = cpu_config(-3);
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_ERR_INVALID);
}

Test(runtime, unknown_sched_policy_is_invalid)
{
    cask_config cfg = cpu_config(1);
    cfg.field_mask |= CASK_CONFIG_SCHED;
    cfg.sched = (cask_sched_policy)99;
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_ERR_INVALID);
}

Test(runtime, unknown_log_level_is_invalid)
{
    cask_config cfg = cpu_config(1);
    cfg.field_mask |= CASK_CONFIG_LOG_LEVEL;
    cfg.log_level = (cask_log_level)99;
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_ERR_INVALID);
}

Test(runtime, fields_not_in_mask_are_ignored)
{
    /* Garbage in fields whose bits are clear must not be read. */
    cask_config cfg;
    memset(&cfg, 0xa5, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU;
    cfg.ncpu = 2;
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(query(rt).ncpu_workers, 2);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- query ---- */

Test(runtime, query_reports_the_configuration)
{
    cask_config cfg = cpu_config(3);
    cfg.field_mask |= CASK_CONFIG_SCHED;
    cfg.sched = CASK_SCHED_EAGER;
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_runtime_info info = query(rt);
    cr_assert_eq(info.ncpu_workers, 3);
    cr_assert_eq(info.ngpus, 0);
    cr_assert_eq(info.simulated_gpus, 0);
    cr_assert_eq(info.sched, CASK_SCHED_EAGER);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_geq(info.ncores, 1);
    cr_assert_leq(info.ncores, online > 0 ? online : 1 << 20);
    int nworkers = -1;
    cr_assert_eq(cask_runtime_nworkers(rt, &nworkers), CASK_OK);
    cr_assert_eq(nworkers, 3);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, default_worker_count_is_all_cores_without_gpus)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU, .ngpu = 0 };
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_runtime_info info = query(rt);
    cr_assert_eq(info.ncpu_workers, info.ncores_used);
    cr_assert_leq(info.ncores_used, info.ncores);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, query_counts_simulated_gpus)
{
    /* ngpu left to its default: simulated GPUs stand in only where no real GPU is used. */
    unsetenv("CASK_NGPU");
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS, .ncpu = 2,
                        .sim_gpus = 2 };
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_runtime_info info = query(rt);
    if (!info.simulated_gpus) {
        cask_shutdown(rt);
        cr_skip_test("real GPUs in use");
    }
    cr_assert_eq(info.ngpus, 2);
    cr_assert_eq(info.simulated_gpus, 1);
    cr_assert_eq(info.ncpu_workers, 2);
    int nworkers = -1;
    cr_assert_eq(cask_runtime_nworkers(rt, &nworkers), CASK_OK);
    cr_assert_eq(nworkers, 4);
    cask_worker_stats stats[4];
    cr_assert_eq(cask_runtime_stats(rt, stats, 4), CASK_OK);
    cr_assert_eq(stats[0].kind, 0);
    cr_assert_eq(stats[0].device, -1);
    cr_assert_eq(stats[1].kind, 0);
    cr_assert_eq(stats[2].kind, 1);
    cr_assert_eq(stats[2].device, 0);
    cr_assert_eq(stats[3].kind, 1);
    cr_assert_eq(stats[3].device, 1);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, query_rejects_null)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_runtime_query(rt, NULL), CASK_ERR_INVALID);
    cask_runtime_info info;
    cr_assert_eq(cask_runtime_query(NULL, &info), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, stats_count_the_tasks_run_and_reset_zeroes_them)
{
    cask_config cfg = cpu_config(2);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    run_tasks(rt, 300);
    cask_worker_stats stats[2];
    cr_assert_eq(cask_runtime_stats(rt, stats, 2), CASK_OK);
    cr_assert_eq(stats[0].tasks_run + stats[1].tasks_run, 300);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cr_assert_eq(cask_runtime_stats(rt, stats, 2), CASK_OK);
    cr_assert_eq(stats[0].tasks_run + stats[1].tasks_run, 0);
    cr_assert_eq(stats[0].steals + stats[1].steals, 0);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, stats_with_too_many_workers_is_invalid)
{
    cask_config cfg = cpu_config(2);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_worker_stats stats[3];
    cr_assert_eq(cask_runtime_stats(rt, stats, 3), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- host memory ---- */

Test(runtime, host_alloc_gives_aligned_writable_memory)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    const size_t sizes[] = { 1, 100, 4096, 1 << 20, 64u << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        void *p = NULL;
        cr_assert_eq(cask_host_alloc(rt, sizes[i], &p), CASK_OK, "%zu bytes", sizes[i]);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 64, 0, "%zu bytes at %p", sizes[i], p);
        memset(p, 0x5a, sizes[i]);
        cr_assert_eq(((unsigned char *)p)[sizes[i] - 1], 0x5a);
        cr_assert_eq(cask_host_free(rt, p), CASK_OK);
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, host_alloc_of_zero_bytes_is_invalid)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    void *p = NULL;
    cr_assert_eq(cask_host_alloc(rt, 0, &p), CASK_ERR_INVALID);
    cr_assert_eq(cask_host_alloc(rt, 16, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, host_alloc_of_absurd_size_is_nomem)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    void *p = NULL;
    cr_assert_eq(cask_host_alloc(rt, SIZE_MAX / 2, &p), CASK_ERR_NOMEM);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, host_free_of_null_is_ok)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_host_free(rt, NULL), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- error message ---- */

static cask_status failing_task(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "disk %d is on fire", 7);
}

static void fail_a_graph(cask_runtime *rt)
{
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "burn", .cpu = failing_task };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_task_desc td = { .kernel = k };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
}

Test(runtime, error_message_is_empty_after_init)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    char buf[256];
    memset(buf, 'x', sizeof buf);
    cr_assert_eq(cask_runtime_error(rt, buf, sizeof buf), CASK_OK);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, error_message_tells_the_last_failure)
{
    cask_config cfg = cpu_config(2);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    fail_a_graph(rt);
    char buf[512];
    cr_assert_eq(cask_runtime_error(rt, buf, sizeof buf), CASK_OK);
    cr_assert_not_null(strstr(buf, "disk 7 is on fire"), "message: %s", buf);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, error_message_is_truncated_and_terminated)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    fail_a_graph(rt);
    char buf[16];
    memset(buf, 'x', sizeof buf);
    cr_assert_eq(cask_runtime_error(rt, buf, 8), CASK_OK);
    cr_assert_eq(strlen(buf), 7);
    cr_assert_eq(buf[8], 'x', "wrote past len");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, error_message_records_a_bad_call)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "nothing" };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_ERR_INVALID);
    char buf[256];
    cr_assert_eq(cask_runtime_error(rt, buf, sizeof buf), CASK_OK);
    cr_assert_gt(strlen(buf), 0, "a failed call left no message");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- kernels ---- */

Test(runtime, kernel_without_implementation_is_invalid)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_kernel *k;
    cask_kernel_desc none = { .name = "none" };
    cr_assert_eq(cask_kernel_register(rt, &none, &k), CASK_ERR_INVALID);
    cask_kernel_desc unnamed = { .cpu = count_task };
    cr_assert_eq(cask_kernel_register(rt, &unnamed, &k), CASK_ERR_INVALID);
    cr_assert_eq(cask_kernel_register(rt, NULL, &k), CASK_ERR_INVALID);
    cask_kernel_desc ok = { .name = "ok", .cpu = count_task };
    cr_assert_eq(cask_kernel_register(rt, &ok, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, kernel_name_is_copied)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    char name[32];
    strcpy(name, "burn");
    cask_kernel *k;
    cask_kernel_desc kd = { .name = name, .cpu = failing_task };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    strcpy(name, "XXXX");
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_task_desc td = { .kernel = k };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert_not_null(strstr(cask_graph_error(g), "burn"), "%s", cask_graph_error(g));
    cr_assert_null(strstr(cask_graph_error(g), "XXXX"), "%s", cask_graph_error(g));
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
