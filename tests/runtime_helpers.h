/* tests/runtime_helpers.h: what the test_runtime*.c files share: the suite's init, which
 * clears the CASK_* environment (no real GPU counted), a config of CPU workers only,
 * cask_runtime_query's answer, and a tiny graph to show the workers really run tasks. */
#ifndef CASK_TEST_RUNTIME_HELPERS_H
#define CASK_TEST_RUNTIME_HELPERS_H

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"

static inline void clear_env(void)
{
    static const char *vars[] = { "CASK_NCPU", "CASK_NGPU", "CASK_SCHED", "CASK_LOG",
                                  "CASK_GPU_MEM_LIMIT", "CASK_BIND", "CASK_SIM_GPUS",
                                  "CASK_GPU_STREAMS", "CASK_TRACE", "CASK_STATS" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    /* No real GPU gets in the way of the worker counts these tests check. */
    setenv("CASK_NGPU", "0", 1);
}

/* A config that starts ncpu CPU workers and no GPU. */
static inline cask_config cpu_config(int ncpu)
{
    cask_config cfg = { 0 };
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU;
    cfg.ncpu = ncpu;
    cfg.ngpu = 0;
    return cfg;
}

static inline cask_runtime_info query(cask_runtime *rt)
{
    cask_runtime_info info;
    memset(&info, 0xff, sizeof info);
    cr_assert_eq(cask_runtime_query(rt, &info), CASK_OK);
    return info;
}

/* ---- a tiny graph to show the workers really run tasks ---- */

static atomic_int tasks_done;

static inline cask_status count_task(cask_task_ctx *ctx)
{
    atomic_fetch_add(&tasks_done, 1);
    return CASK_OK;
}

static inline void run_tasks(cask_runtime *rt, int n)
{
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "count", .cpu = count_task };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    for (int i = 0; i < n; i++) {
        cask_task_desc td = { .kernel = k };
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    }
    atomic_store(&tasks_done, 0);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cr_assert_eq(atomic_load(&tasks_done), n);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
}

#endif
