/* tests/data_helpers.h: what the test_data_*.c files share: runtimes of CPU workers
 * alone or with simulated GPUs, kernels with a CPU and a refusing "CUDA" implementation,
 * adding a task placed on the CPU, a GPU or anywhere, the transfer and eviction totals of
 * the workers' stats, and kernels over int32 arrays of N words that record where each
 * task ran. Each file that includes it has its own records. */
#ifndef CASK_TEST_DATA_HELPERS_H
#define CASK_TEST_DATA_HELPERS_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"
#include "test_helpers.h"

static inline cask_runtime *start(int ncpu) { return start_runtime(ncpu, 0); }

/* ncpu CPU workers and nsim simulated GPUs, each limited to mem_limit bytes (0: none).
 * Skips the test where real GPUs are used instead (sim_gpus is ignored then). */
static inline cask_runtime *start_sim(int ncpu, int nsim, size_t mem_limit)
{
    cask_config cfg = { 0 };
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS;
    cfg.ncpu = ncpu;
    cfg.sim_gpus = nsim;
    if (mem_limit) {
        cfg.field_mask |= CASK_CONFIG_GPU_MEM_LIMIT;
        cfg.gpu_mem_limit = mem_limit;
    }
    cask_runtime *rt = NULL;
    cask_status st = cask_init(&cfg, &rt);
    cr_assert_eq(st, CASK_OK, "cask_init(sim_gpus=%d): %s", nsim, cask_status_string(st));
    cask_runtime_info info;
    cr_assert_eq(cask_runtime_query(rt, &info), CASK_OK);
    if (!info.simulated_gpus) {
        cask_shutdown(rt);
        cr_skip_test("real GPUs in use: simulated-GPU tests skipped");
    }
    cr_assert_eq(info.ngpus, nsim);
    return rt;
}

/* A kernel with a CPU and a "CUDA" implementation. On simulated GPUs the runtime runs
 * the CPU one; the CUDA one only refuses a real stream, so that a misconfigured run
 * fails cleanly instead of touching device pointers from the host. */
static inline cask_status cuda_refuses_real_gpu(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "test kernel has no real CUDA implementation");
}

static inline cask_kernel *dual_kernel(cask_runtime *rt, const char *name,
                                       cask_kernel_fn cpu)
{
    cask_kernel_desc kd = { .name = name, .cpu = cpu, .cuda = cuda_refuses_real_gpu };
    cask_kernel *k = NULL;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    return k;
}

enum { ON_ANY = -2, ON_CPU = -1 };   /* else a GPU index */

/* Adds a task with an int argument, placed on the CPU, on GPU `where`, or anywhere. */
static inline cask_task *add_on(cask_graph *g, cask_kernel *k, int where, int arg,
                                const cask_access *acc, int nacc)
{
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = acc,
                          .naccess = nacc, .args = &arg, .args_size = sizeof arg };
    if (where == ON_CPU) {
        td.field_mask |= CASK_TASK_WHERE;
        td.where = CASK_WHERE_CPU;
    } else if (where >= 0) {
        td.field_mask |= CASK_TASK_WHERE | CASK_TASK_DEVICE;
        td.where = CASK_WHERE_GPU;
        td.device = where;
    }
    cask_task *t = NULL;
    cask_status st = cask_graph_add_task(g, &td, &t);
    cr_assert_eq(st, CASK_OK, "add_task: %s", cask_status_string(st));
    return t;
}

typedef struct totals {
    uint64_t h2d, d2h, peer, evictions, spills;
} totals;

static inline totals stats_total(cask_runtime *rt)
{
    int n = 0;
    cr_assert_eq(cask_runtime_nworkers(rt, &n), CASK_OK);
    cask_worker_stats *st = calloc((size_t)n, sizeof *st);
    cr_assert_eq(cask_runtime_stats(rt, st, n), CASK_OK);
    totals t = { 0 };
    for (int i = 0; i < n; i++) {
        t.h2d += st[i].bytes_h2d;
        t.d2h += st[i].bytes_d2h;
        t.peer += st[i].bytes_peer;
        t.evictions += st[i].evictions;
        t.spills += st[i].spills;
    }
    free(st);
    return t;
}

/* ---- kernels over int32 arrays; the int argument is a task id ---- */

#define MAX_IDS 256
static int ran_on[MAX_IDS];          /* cask_task_device of each task id */
static void *buffer_seen[MAX_IDS];   /* its first buffer's pointer */

static inline int record(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id >= 0 && id < MAX_IDS) {
        ran_on[id] = cask_task_device(ctx);
        buffer_seen[id] = cask_task_buffer(ctx, 0);
    }
    return id;
}

static inline void reset_records(void)
{
    for (int i = 0; i < MAX_IDS; i++) {
        ran_on[i] = INT_MIN;
        buffer_seen[i] = NULL;
    }
}

/* [0] W: a[i] = 3 i + 1 */
static inline cask_status fill_k(cask_task_ctx *ctx)
{
    record(ctx);
    int32_t *a = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *a;
    for (size_t i = 0; i < n; i++)
        a[i] = 3 * (int32_t)i + 1;
    return CASK_OK;
}

/* [0] RW: a[i] += 5 */
static inline cask_status add5_k(cask_task_ctx *ctx)
{
    record(ctx);
    int32_t *a = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *a;
    for (size_t i = 0; i < n; i++)
        a[i] += 5;
    return CASK_OK;
}

/* [0] R, [1] W: b = a */
static inline cask_status copy_k(cask_task_ctx *ctx)
{
    record(ctx);
    const int32_t *a = cask_task_buffer(ctx, 0);
    int32_t *b = cask_task_buffer(ctx, 1);
    if (cask_task_buffer_size(ctx, 0) != cask_task_buffer_size(ctx, 1))
        return cask_task_fail(ctx, "sizes differ");
    memcpy(b, a, cask_task_buffer_size(ctx, 0));
    return CASK_OK;
}

/* [0] W: a[i] = the id */
static inline cask_status set_id_k(cask_task_ctx *ctx)
{
    int id = record(ctx);
    int32_t *a = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *a;
    for (size_t i = 0; i < n; i++)
        a[i] = id;
    return CASK_OK;
}

#define N 1024

static inline void expect_array(cask_data *d, int32_t mul, int32_t add, const char *what)
{
    int32_t *p = NULL;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, (void **)&p), CASK_OK, "%s", what);
    for (int i = 0; i < N; i++)
        cr_assert_eq(p[i], mul * i + add, "%s[%d] = %d, want %d", what, i, p[i], mul * i + add);
    cr_assert_eq(cask_data_release(d), CASK_OK);
}

#endif
