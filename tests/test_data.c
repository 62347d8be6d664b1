/* tests/test_data.c: data handles. Registering, creating, acquiring and destroying them,
 * what is busy when, names in errors; and, with simulated GPUs (host memory standing in
 * for device memory, separate replicas per GPU), the coherence of replicas: the latest
 * write is what every reader sees wherever it runs, write-back, and eviction/spill
 * under a tiny GPU memory limit without losing data; the internal discard, which
 * writes nothing back. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cask/cask.h"
#include "runtime/data.h"   /* data_destroy_discard */
#include "test_helpers.h"


TestSuite(data, .fini = leak_check, .timeout = 120);
TestSuite(data_stress, .fini = leak_check, .timeout = 600);

/* ---- helpers ---- */

static cask_runtime *start(int ncpu) { return start_runtime(ncpu, 0); }

/* ncpu CPU workers and nsim simulated GPUs, each limited to mem_limit bytes (0: none).
 * Skips the test where real GPUs are used instead (sim_gpus is ignored then). */
static cask_runtime *start_sim(int ncpu, int nsim, size_t mem_limit)
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
static cask_status cuda_refuses_real_gpu(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "test kernel has no real CUDA implementation");
}

static cask_kernel *dual_kernel(cask_runtime *rt, const char *name, cask_kernel_fn cpu)
{
    cask_kernel_desc kd = { .name = name, .cpu = cpu, .cuda = cuda_refuses_real_gpu };
    cask_kernel *k = NULL;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    return k;
}


enum { ON_ANY = -2, ON_CPU = -1 };   /* else a GPU index */

/* Adds a task with an int argument, placed on the CPU, on GPU `where`, or anywhere. */
static cask_task *add_on(cask_graph *g, cask_kernel *k, int where, int arg,
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

static totals stats_total(cask_runtime *rt)
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

static int record(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id >= 0 && id < MAX_IDS) {
        ran_on[id] = cask_task_device(ctx);
        buffer_seen[id] = cask_task_buffer(ctx, 0);
    }
    return id;
}

static void reset_records(void)
{
    for (int i = 0; i < MAX_IDS; i++) {
        ran_on[i] = INT_MIN;
        buffer_seen[i] = NULL;
    }
}

/* [0] W: a[i] = 3 i + 1 */
static cask_status fill_k(cask_task_ctx *ctx)
{
    record(ctx);
    int32_t *a = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *a;
    for (size_t i = 0; i < n; i++)
        a[i] = 3 * (int32_t)i + 1;
    return CASK_OK;
}

/* [0] RW: a[i] += 5 */
static cask_status add5_k(cask_task_ctx *ctx)
{
    record(ctx);
    int32_t *a = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *a;
    for (size_t i = 0; i < n; i++)
        a[i] += 5;
    return CASK_OK;
}

/* [0] R, [1] W: b = a */
static cask_status copy_k(cask_task_ctx *ctx)
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
static cask_status set_id_k(cask_task_ctx *ctx)
{
    int id = record(ctx);
    int32_t *a = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *a;
    for (size_t i = 0; i < n; i++)
        a[i] = id;
    return CASK_OK;
}

#define N 1024

static void expect_array(cask_data *d, int32_t mul, int32_t add, const char *what)
{
    int32_t *p = NULL;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, (void **)&p), CASK_OK, "%s", what);
    for (int i = 0; i < N; i++)
        cr_assert_eq(p[i], mul * i + add, "%s[%d] = %d, want %d", what, i, p[i], mul * i + add);
    cr_assert_eq(cask_data_release(d), CASK_OK);
}

/* ---- handles on the host ---- */

Test(data, register_acquire_release_destroy)
{
    cask_runtime *rt = start(2);
    int32_t host[N];
    for (int i = 0; i < N; i++)
        host[i] = i;
    cask_data *d = NULL;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cr_assert_not_null(d);
    size_t bytes = 0;
    cr_assert_eq(cask_data_size(d, &bytes), CASK_OK);
    cr_assert_eq(bytes, sizeof host);
    int32_t *p = NULL;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, (void **)&p), CASK_OK);
    cr_assert_eq(p, host, "a registered handle is acquired in its own memory");
    cr_assert_eq(p[17], 17);
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cr_assert_eq(cask_data_acquire(d, CASK_RW, (void **)&p), CASK_OK);
    p[17] = -17;
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(host[17], -17);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, bad_registrations_are_invalid)
{
    cask_runtime *rt = start(1);
    int x;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, NULL, 4, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register(rt, &x, 0, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register(NULL, &x, sizeof x, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_create(rt, 0, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_create(rt, 16, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, destroy_of_null_is_ok)
{
    cr_assert_eq(cask_data_destroy(NULL), CASK_OK);
}

Test(data, created_handle_holds_what_a_task_wrote)
{
    cask_runtime *rt = start(2);
    cask_kernel *fill = kernel(rt, "fill", fill_k);
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &d), CASK_OK);
    size_t bytes = 0;
    cr_assert_eq(cask_data_size(d, &bytes), CASK_OK);
    cr_assert_eq(bytes, N * sizeof(int32_t));
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE };
    add_on(g, fill, ON_ANY, 0, &w, 1);
    compute_ok(g);
    expect_array(d, 3, 1, "created");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, created_handle_written_by_the_host_is_read_by_a_task)
{
    cask_runtime *rt = start(2);
    cask_kernel *copy = kernel(rt, "copy", copy_k);
    cask_data *d, *out;
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &d), CASK_OK);
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &out), CASK_OK);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, (void **)&p), CASK_OK);
    cr_assert_not_null(p);
    for (int i = 0; i < N; i++)
        p[i] = 2 * i + 9;
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access acc[2] = { { d, CASK_READ }, { out, CASK_WRITE } };
    add_on(g, copy, ON_ANY, 0, acc, 2);
    compute_ok(g);
    expect_array(out, 2, 9, "out");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_data_destroy(out), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, latest_write_is_visible_after_compute)
{
    cask_runtime *rt = start(4);
    cask_kernel *set = kernel(rt, "set", set_id_k);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE }, rw = { d, CASK_RW };
    for (int i = 1; i <= 20; i++)
        add_on(g, set, ON_ANY, i, &w, 1);
    add_on(g, add5, ON_ANY, 0, &rw, 1);
    compute_ok(g);
    expect_array(d, 0, 25, "after 20 writes and an add");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, host_changes_inside_acquire_reach_the_next_graph)
{
    cask_runtime *rt = start(2);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    add_on(g, add5, ON_ANY, 0, &rw, 1);
    compute_ok(g);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(d, CASK_RW, (void **)&p), CASK_OK);
    for (int i = 0; i < N; i++)
        p[i] = 10 * i;
    cr_assert_eq(cask_data_release(d), CASK_OK);
    compute_ok(g);
    expect_array(d, 10, 5, "after host write and add");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, acquire_twice_is_a_state_error)
{
    cask_runtime *rt = start(1);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_ERR_STATE);
    cr_assert_eq(cask_data_acquire(d, CASK_RW, &p), CASK_ERR_STATE);
    cr_assert_eq(cask_data_release(d), CASK_OK);
    cr_assert_eq(cask_data_release(d), CASK_ERR_STATE, "release without acquire");
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, acquire_with_bad_arguments_is_invalid)
{
    cask_runtime *rt = start(1);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, (cask_access_mode)0, &p), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_acquire(d, CASK_READ, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_acquire(NULL, CASK_READ, &p), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, handles_of_a_running_graph_are_busy)
{
    cask_runtime *rt = start(2);
    cask_kernel *gate = kernel(rt, "gate", gate_task);
    int x = 0, y = 0, z = 0;
    cask_data *dx, *dy, *dz;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &dx), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &y, sizeof y, &dy), CASK_OK);
    cr_assert_eq(cask_data_register(rt, &z, sizeof z, &dz), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access acc[2] = { { dx, CASK_READ }, { dy, CASK_RW } };
    add_on(g, gate, ON_ANY, 0, acc, 2);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    wait_entered();
    void *p;
    cr_assert_eq(cask_data_acquire(dx, CASK_READ, &p), CASK_ERR_BUSY, "acquire read");
    cr_assert_eq(cask_data_acquire(dy, CASK_RW, &p), CASK_ERR_BUSY, "acquire rw");
    cr_assert_eq(cask_data_destroy(dy), CASK_ERR_BUSY, "destroy");
    cr_assert_eq(cask_data_set_writeback(dy, 1), CASK_ERR_BUSY, "set_writeback");
    /* A handle the graph does not use is free. */
    cr_assert_eq(cask_data_acquire(dz, CASK_RW, &p), CASK_OK);
    cr_assert_eq(cask_data_release(dz), CASK_OK);
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_data_acquire(dy, CASK_RW, &p), CASK_OK, "acquire after wait");
    cr_assert_eq(cask_data_release(dy), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(dx), CASK_OK);
    cr_assert_eq(cask_data_destroy(dy), CASK_OK);
    cr_assert_eq(cask_data_destroy(dz), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, submitting_a_graph_over_an_acquired_handle_is_busy)
{
    cask_runtime *rt = start(2);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access rw = { d, CASK_RW };
    add_on(g, add5, ON_ANY, 0, &rw, 1);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_ERR_BUSY);
    cr_assert_eq(cask_data_release(d), CASK_OK);
    compute_ok(g);
    expect_array(d, 0, 5, "after release and compute");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, two_running_graphs_cannot_share_a_handle)
{
    cask_runtime *rt = start(2);
    cask_kernel *gate = kernel(rt, "gate", gate_task);
    cask_kernel *add5 = kernel(rt, "add5", add5_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_access rw = { d, CASK_RW };
    add_on(g1, gate, ON_ANY, 0, &rw, 1);
    add_on(g2, add5, ON_ANY, 0, &rw, 1);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    cr_assert_eq(cask_graph_submit(g1), CASK_OK);
    cr_assert_eq(cask_graph_submit(g2), CASK_ERR_BUSY);
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g1), CASK_OK);
    compute_ok(g2);
    expect_array(d, 0, 5, "after the second graph");
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static cask_status fail_k(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "bad value in row %d", 12);
}

Test(data, errors_name_the_data)
{
    cask_runtime *rt = start(2);
    cask_kernel *k = kernel(rt, "checker", fail_k);
    int32_t host[N] = { 0 };
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    /* 63 characters: the longest name kept whole. */
    const char *name = "temperature_2024_chunk_0007_of_0128_xxxxxxxxxxxxxxxxxxxxxxxxxxx";
    cr_assert_eq(strlen(name), 63);
    cr_assert_eq(cask_data_set_name(d, name), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access r = { d, CASK_READ };
    add_on(g, k, ON_ANY, 0, &r, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    const char *msg = cask_graph_error(g);
    cr_assert_not_null(strstr(msg, name), "no data name in: %s", msg);
    cr_assert_not_null(strstr(msg, "bad value in row 12"), "no message in: %s", msg);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, set_name_copies_and_survives_a_long_name)
{
    cask_runtime *rt = start(1);
    cask_kernel *k = kernel(rt, "checker", fail_k);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    char name[300];
    memset(name, 'q', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    cask_status st = cask_data_set_name(d, name);
    cr_assert(st == CASK_OK || st == CASK_ERR_INVALID, "%s", cask_status_string(st));
    strcpy(name, "short_name");
    cr_assert_eq(cask_data_set_name(d, name), CASK_OK);
    strcpy(name, "overwritten");
    cask_graph *g = graph(rt);
    cask_access r = { d, CASK_READ };
    add_on(g, k, ON_ANY, 0, &r, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert_not_null(strstr(cask_graph_error(g), "short_name"), "%s", cask_graph_error(g));
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, shutdown_flushes_handles_never_destroyed)
{
    cask_runtime *rt = start(2);
    cask_kernel *fill = kernel(rt, "fill", fill_k);
    static int32_t host[N];
    cask_data *d, *created;
    cr_assert_eq(cask_data_register(rt, host, sizeof host, &d), CASK_OK);
    cr_assert_eq(cask_data_create(rt, 4096, &created), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE };
    add_on(g, fill, ON_ANY, 0, &w, 1);
    compute_ok(g);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(host[i], 3 * i + 1);
}

/* ---- simulated GPUs: coherence ---- */

Test(data, simulated_gpu_tasks_run_where_they_are_told)
{
    cask_runtime *rt = start_sim(2, 2, 0);
    cask_kernel *set = dual_kernel(rt, "set", set_id_k);
    int32_t a[N], b[N], c[N];
    cask_data *da, *db, *dc;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, b, sizeof b, &db), CASK_OK);
    cr_assert_eq(cask_data_register(rt, c, sizeof c, &dc), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { da, CASK_WRITE }, wb = { db, CASK_WRITE }, wc = { dc, CASK_WRITE };
    reset_records();
    add_on(g, set, 0, 1, &wa, 1);
    add_on(g, set, 1, 2, &wb, 1);
    add_on(g, set, ON_CPU, 3, &wc, 1);
    compute_ok(g);
    cr_assert_eq(ran_on[1], 0);
    cr_assert_eq(ran_on[2], 1);
    cr_assert_eq(ran_on[3], -1);
    cr_assert_neq(buffer_seen[1], (void *)a, "GPU 0 wrote the host memory directly");
    cr_assert_neq(buffer_seen[2], (void *)b, "GPU 1 wrote the host memory directly");
    cr_assert_neq(buffer_seen[1], buffer_seen[2]);
    expect_array(da, 0, 1, "a");
    expect_array(db, 0, 2, "b");
    expect_array(dc, 0, 3, "c");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(db), CASK_OK);
    cr_assert_eq(cask_data_destroy(dc), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* write on GPU 0 -> read on GPU 1 -> write on CPU -> read on GPU 0, GPU 1 and CPU. GPU 0
 * still holds the first version: reading it there must not see that stale replica. */
Test(data, latest_write_reaches_every_place_through_gpu_gpu_cpu_chain)
{
    cask_runtime *rt = start_sim(2, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *add5 = dual_kernel(rt, "add5", add5_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], b1[N], out[3][N];
    cask_data *da, *db1, *dout[3];
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, b1, sizeof b1, &db1), CASK_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cask_data_register(rt, out[i], sizeof out[i], &dout[i]), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { da, CASK_WRITE }, rwa = { da, CASK_RW };
    cask_access a_to_b1[2] = { { da, CASK_READ }, { db1, CASK_WRITE } };
    reset_records();
    add_on(g, fill, 0, 1, &wa, 1);            /* GPU 0 writes 3i+1 */
    add_on(g, copy, 1, 2, a_to_b1, 2);        /* GPU 1 reads it */
    add_on(g, add5, ON_CPU, 3, &rwa, 1);      /* CPU makes it 3i+6 */
    const int places[3] = { 0, 1, ON_CPU };
    for (int i = 0; i < 3; i++) {
        cask_access acc[2] = { { da, CASK_READ }, { dout[i], CASK_WRITE } };
        add_on(g, copy, places[i], 4 + i, acc, 2);
    }
    compute_ok(g);
    cr_assert_eq(ran_on[1], 0);
    cr_assert_eq(ran_on[2], 1);
    cr_assert_eq(ran_on[3], -1);
    cr_assert_eq(ran_on[4], 0);
    cr_assert_eq(ran_on[5], 1);
    cr_assert_eq(ran_on[6], -1);
    expect_array(db1, 3, 1, "read on GPU 1");
    expect_array(dout[0], 3, 6, "read on GPU 0");
    expect_array(dout[1], 3, 6, "read on GPU 1");
    expect_array(dout[2], 3, 6, "read on CPU");
    expect_array(da, 3, 6, "acquired");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(db1), CASK_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cask_data_destroy(dout[i]), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, write_on_one_gpu_invalidates_the_other)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *add5 = dual_kernel(rt, "add5", add5_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o0[N], o1[N], o2[N];
    cask_data *da, *d0, *d1, *d2;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o0, sizeof o0, &d0), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o1, sizeof o1, &d1), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o2, sizeof o2, &d2), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { da, CASK_WRITE }, rwa = { da, CASK_RW };
    cask_access to0[2] = { { da, CASK_READ }, { d0, CASK_WRITE } };
    cask_access to1[2] = { { da, CASK_READ }, { d1, CASK_WRITE } };
    cask_access to2[2] = { { da, CASK_READ }, { d2, CASK_WRITE } };
    add_on(g, fill, 0, 1, &wa, 1);     /* 3i+1 on GPU 0 */
    add_on(g, copy, 1, 2, to0, 2);     /* GPU 1 gets a replica */
    add_on(g, add5, 0, 3, &rwa, 1);    /* GPU 0 writes 3i+6: GPU 1's replica is stale */
    add_on(g, copy, 1, 4, to1, 2);     /* GPU 1 must fetch again */
    add_on(g, add5, 1, 5, &rwa, 1);    /* 3i+11 on GPU 1 */
    add_on(g, copy, 0, 6, to2, 2);     /* GPU 0 must fetch again */
    compute_ok(g);
    expect_array(d0, 3, 1, "first read on GPU 1");
    expect_array(d1, 3, 6, "second read on GPU 1");
    expect_array(d2, 3, 11, "read on GPU 0");
    expect_array(da, 3, 11, "acquired");
    /* And again: the second run starts from 3i+11 on the host, stale everywhere else. */
    compute_ok(g);
    expect_array(d1, 3, 6, "second run");
    expect_array(da, 3, 11, "second run, acquired");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(d0), CASK_OK);
    cr_assert_eq(cask_data_destroy(d1), CASK_OK);
    cr_assert_eq(cask_data_destroy(d2), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* a (N words, zeroed by the caller or static) registered as *da, with write-back on if
 * asked, then written 3i+1 by fill on simulated GPU gpu: the graph, computed. */
static cask_graph *fill_on_gpu(cask_runtime *rt, int32_t *a, int gpu, int writeback,
                               cask_data **da)
{
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cr_assert_eq(cask_data_register(rt, a, N * sizeof *a, da), CASK_OK);
    if (writeback)
        cr_assert_eq(cask_data_set_writeback(*da, 1), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access wa = { *da, CASK_WRITE };
    add_on(g, fill, gpu, 1, &wa, 1);
    compute_ok(g);
    return g;
}

Test(data, acquire_returns_the_latest_gpu_write)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(da, CASK_READ, (void **)&p), CASK_OK);
    cr_assert_eq(p, a);
    for (int i = 0; i < N; i++)
        cr_assert_eq(p[i], 3 * i + 1);
    cr_assert_eq(cask_data_release(da), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, host_write_in_acquire_invalidates_gpu_replicas)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o[N];
    cask_data *da, *dout;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o, sizeof o, &dout), CASK_OK);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_access wa = { da, CASK_WRITE };
    add_on(g1, fill, 0, 1, &wa, 1);
    compute_ok(g1);
    int32_t *p;
    cr_assert_eq(cask_data_acquire(da, CASK_RW, (void **)&p), CASK_OK);
    for (int i = 0; i < N; i++)
        p[i] = 7 * i - 3;
    cr_assert_eq(cask_data_release(da), CASK_OK);
    cask_access acc[2] = { { da, CASK_READ }, { dout, CASK_WRITE } };
    add_on(g2, copy, 0, 2, acc, 2);   /* GPU 0 still has 3i+1 */
    compute_ok(g2);
    expect_array(dout, 7, -3, "read on GPU 0 after a host write");
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(dout), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, acquire_for_reading_keeps_gpu_replicas_valid)
{
    cask_runtime *rt = start_sim(1, 1, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o[N];
    cask_data *da, *dout;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_create(rt, sizeof o, &dout), CASK_OK);
    cask_graph *g1 = graph(rt), *g2 = graph(rt);
    cask_access wa = { da, CASK_WRITE };
    add_on(g1, fill, 0, 1, &wa, 1);
    compute_ok(g1);
    expect_array(da, 3, 1, "acquired for reading");
    totals before = stats_total(rt);
    cask_access acc[2] = { { da, CASK_READ }, { dout, CASK_WRITE } };
    add_on(g2, copy, 0, 2, acc, 2);
    compute_ok(g2);
    totals after = stats_total(rt);
    cr_assert_eq(after.h2d, before.h2d, "GPU 0's valid replica was copied again (%llu bytes)",
                 (unsigned long long)(after.h2d - before.h2d));
    expect_array(dout, 3, 1, "read on GPU 0");
    cr_assert_eq(cask_graph_destroy(g1), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g2), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(dout), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, gpu_reads_count_host_to_device_bytes)
{
    cask_runtime *rt = start_sim(1, 1, 0);
    cask_kernel *copy = dual_kernel(rt, "copy", copy_k);
    static int32_t a[N], o[N];
    cask_data *da, *dout;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_register(rt, o, sizeof o, &dout), CASK_OK);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access acc[2] = { { da, CASK_READ }, { dout, CASK_WRITE } };
    add_on(g, copy, 0, 1, acc, 2);
    compute_ok(g);
    totals t = stats_total(rt);
    cr_assert_geq(t.h2d, sizeof a, "h2d %llu bytes", (unsigned long long)t.h2d);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_data_destroy(dout), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, writeback_puts_gpu_results_in_host_memory_when_the_graph_ends)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 1, &da);
    /* Written back: the host memory is current without an acquire. */
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 3 * i + 1, "a[%d] = %d before any acquire", i, a[i]);
    totals before = stats_total(rt);
    expect_array(da, 3, 1, "acquired");
    totals after = stats_total(rt);
    cr_assert_eq(after.d2h, before.d2h, "acquire copied again after a write-back");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, without_writeback_host_memory_waits_for_acquire)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    memset(a, 0, sizeof a);
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    /* The result lives on GPU 1 only; the host copy is brought up to date lazily. */
    cr_assert_eq(a[5], 0, "the result reached the host without write-back or acquire");
    expect_array(da, 3, 1, "acquired");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, writeback_can_be_switched_off_again)
{
    cask_runtime *rt = start_sim(1, 1, 0);
    int32_t a[4] = { 0 };
    cask_data *da;
    cr_assert_eq(cask_data_register(rt, a, sizeof a, &da), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(da, 1), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(da, 0), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(NULL, 1), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, destroy_flushes_the_latest_gpu_write_to_registered_memory)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 0, 0, &da);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(da), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 3 * i + 1);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* The internal discard (the distributed plan's scratch copies, dist_plan_free): the
 * handle goes without the write-back that cask_data_destroy does above. */
Test(data, discard_leaves_registered_memory_as_it_was)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    memset(a, 0, sizeof a);
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(data_destroy_discard(da), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 0, "word %d written back by a discard", i);
    cr_assert_eq(data_destroy_discard(NULL), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, shutdown_flushes_the_latest_gpu_write_to_registered_memory)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    static int32_t a[N];
    cask_data *da;
    cask_graph *g = fill_on_gpu(rt, a, 1, 0, &da);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i], 3 * i + 1);
}

Test(data, created_handle_lives_on_a_gpu_and_is_acquired_on_the_host)
{
    cask_runtime *rt = start_sim(1, 2, 0);
    cask_kernel *fill = dual_kernel(rt, "fill", fill_k);
    cask_kernel *add5 = dual_kernel(rt, "add5", add5_k);
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, N * sizeof(int32_t), &d), CASK_OK);
    cask_graph *g = graph(rt);
    cask_access w = { d, CASK_WRITE }, rw = { d, CASK_RW };
    add_on(g, fill, 0, 1, &w, 1);
    add_on(g, add5, 1, 2, &rw, 1);
    compute_ok(g);
    expect_array(d, 3, 6, "created, written on GPUs");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- simulated GPUs: a tiny memory forces eviction and spills ---- */

#define CHUNKS 32
#define CHUNK_BYTES 8192
#define CHUNK_WORDS (CHUNK_BYTES / sizeof(int64_t))

/* [0] W: chunk c gets c * 1e6 + word index. arg: c */
static cask_status chunk_fill_k(cask_task_ctx *ctx)
{
    int c = arg_int(ctx);
    int64_t *w = cask_task_buffer(ctx, 0);
    for (size_t i = 0; i < CHUNK_WORDS; i++)
        w[i] = (int64_t)c * 1000000 + (int64_t)i;
    return CASK_OK;
}

/* [0] RW: += 1 */
static cask_status chunk_inc_k(cask_task_ctx *ctx)
{
    int64_t *w = cask_task_buffer(ctx, 0);
    for (size_t i = 0; i < CHUNK_WORDS; i++)
        w[i] += 1;
    return CASK_OK;
}

/* [0] R, [1] W (one int64): sum */
static cask_status chunk_sum_k(cask_task_ctx *ctx)
{
    const int64_t *w = cask_task_buffer(ctx, 0);
    int64_t s = 0;
    for (size_t i = 0; i < CHUNK_WORDS; i++)
        s += w[i];
    *(int64_t *)cask_task_buffer(ctx, 1) = s;
    return CASK_OK;
}

static void small_gpu_memory(int nsim, int rounds)
{
    cask_runtime *rt = start_sim(2, nsim, 64 * 1024);
    cask_kernel *fillk = dual_kernel(rt, "chunk_fill", chunk_fill_k);
    cask_kernel *inck = dual_kernel(rt, "chunk_inc", chunk_inc_k);
    cask_kernel *sumk = dual_kernel(rt, "chunk_sum", chunk_sum_k);
    int64_t *host = calloc(CHUNKS, CHUNK_BYTES);
    int64_t sums_host[CHUNKS];
    cask_data *chunk[CHUNKS], *sum[CHUNKS];
    for (int c = 0; c < CHUNKS; c++) {
        cr_assert_eq(cask_data_register(rt, host + c * CHUNK_WORDS, CHUNK_BYTES, &chunk[c]),
                     CASK_OK);
        cr_assert_eq(cask_data_register(rt, &sums_host[c], sizeof sums_host[c], &sum[c]),
                     CASK_OK);
    }
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cask_graph *g = graph(rt);
    for (int c = 0; c < CHUNKS; c++) {
        cask_access w = { chunk[c], CASK_WRITE };
        add_on(g, fillk, c % nsim, c, &w, 1);
    }
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < CHUNKS; c++) {
            cask_access rw = { chunk[c], CASK_RW };
            add_on(g, inck, (c + r + 1) % nsim, c, &rw, 1);
        }
    for (int c = 0; c < CHUNKS; c++) {
        cask_access acc[2] = { { chunk[c], CASK_READ }, { sum[c], CASK_WRITE } };
        add_on(g, sumk, (c + 1) % nsim, c, acc, 2);
    }
    compute_ok(g);
    totals t = stats_total(rt);
    cr_assert_gt(t.evictions + t.spills, 0, "256 KiB went through 64 KiB GPUs with no "
                 "eviction");
    cr_assert_gt(t.spills, 0, "dirty replicas were dropped without a spill (or not counted)");
    for (int c = 0; c < CHUNKS; c++) {
        int64_t *w;
        cr_assert_eq(cask_data_acquire(chunk[c], CASK_READ, (void **)&w), CASK_OK);
        int64_t want_sum = 0;
        for (size_t i = 0; i < CHUNK_WORDS; i++) {
            int64_t want = (int64_t)c * 1000000 + (int64_t)i + rounds;
            cr_assert_eq(w[i], want, "chunk %d word %zu: %lld, want %lld", c, i,
                         (long long)w[i], (long long)want);
            want_sum += want;
        }
        cr_assert_eq(cask_data_release(chunk[c]), CASK_OK);
        int64_t *s;
        cr_assert_eq(cask_data_acquire(sum[c], CASK_READ, (void **)&s), CASK_OK);
        cr_assert_eq(*s, want_sum, "sum of chunk %d", c);
        cr_assert_eq(cask_data_release(sum[c]), CASK_OK);
    }
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    for (int c = 0; c < CHUNKS; c++) {
        cr_assert_eq(cask_data_destroy(chunk[c]), CASK_OK);
        cr_assert_eq(cask_data_destroy(sum[c]), CASK_OK);
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    free(host);
}

Test(data, tiny_gpu_memory_evicts_and_spills_without_losing_data)
{
    small_gpu_memory(2, 2);
}

Test(data, tiny_memory_of_one_gpu_evicts_and_spills_without_losing_data)
{
    small_gpu_memory(1, 1);
}

Test(data_stress, tiny_gpu_memory_over_many_rounds)
{
    small_gpu_memory(2, 50);
}

/* ---- simulated GPUs: random sequences, every task anywhere ---- */

#define RS_NDATA 6
#define RS_WORDS 512
#define RS_MAXACC 3
#define RS_MAXTASKS 2000

typedef struct rs_task {
    int nacc;
    int data[RS_MAXACC];
    cask_access_mode mode[RS_MAXACC];
    int where;
} rs_task;
static rs_task rs[RS_MAXTASKS];
static uint64_t rs_seen[RS_MAXTASKS][RS_MAXACC];



/* Every chunk holds one value in all its words; a torn or stale copy shows. */
static cask_status rs_kernel(cask_task_ctx *ctx)
{
    int id = arg_int(ctx);
    if (id < 0 || id >= RS_MAXTASKS)
        return cask_task_fail(ctx, "bad id");
    const rs_task *t = &rs[id];
    if (t->where >= 0 && cask_task_device(ctx) != t->where)
        return cask_task_fail(ctx, "task %d on device %d, want %d", id,
                              cask_task_device(ctx), t->where);
    if (t->where == ON_CPU && cask_task_device(ctx) != -1)
        return cask_task_fail(ctx, "task %d on device %d, want CPU", id, cask_task_device(ctx));
    for (int i = 0; i < t->nacc; i++) {
        uint64_t *w = cask_task_buffer(ctx, i);
        if (t->mode[i] & CASK_READ) {
            for (int j = 1; j < RS_WORDS; j++)
                if (w[j] != w[0])
                    return cask_task_fail(ctx, "task %d: buffer %d is torn at word %d", id,
                                          i, j);
            rs_seen[id][i] = w[0];
        }
    }
    for (int i = 0; i < t->nacc; i++) {
        uint64_t *w = cask_task_buffer(ctx, i);
        uint64_t v;
        if (t->mode[i] == CASK_WRITE)
            v = mix(0x5eed, (uint64_t)id * 16 + (uint64_t)i);
        else if (t->mode[i] == CASK_RW)
            v = mix(rs_seen[id][i], (uint64_t)id * 16 + (uint64_t)i);
        else
            continue;
        for (int j = 0; j < RS_WORDS; j++)
            w[j] = v;
    }
    return CASK_OK;
}

static void random_sequences_on_sim_gpus(int ncpu, int nsim, size_t mem_limit, int nseeds,
                                         int ntasks)
{
    cask_runtime *rt = start_sim(ncpu, nsim, mem_limit);
    cask_kernel *k = dual_kernel(rt, "rs", rs_kernel);
    static uint64_t host[RS_NDATA][RS_WORDS];
    for (int seed = 1; seed <= nseeds; seed++) {
        uint64_t expect[RS_NDATA];
        cask_data *data[RS_NDATA];
        for (int d = 0; d < RS_NDATA; d++) {
            expect[d] = 1000u * (unsigned)d + (unsigned)seed;
            for (int j = 0; j < RS_WORDS; j++)
                host[d][j] = expect[d];
            cr_assert_eq(cask_data_register(rt, host[d], sizeof host[d], &data[d]), CASK_OK);
        }
        uint64_t s = (uint64_t)seed * 7919;
        cask_graph *g = graph(rt);
        for (int id = 0; id < ntasks; id++) {
            rs_task *t = &rs[id];
            t->nacc = 1 + (int)(rng_next(&s) % RS_MAXACC);
            int used = 0;
            cask_access acc[RS_MAXACC];
            for (int i = 0; i < t->nacc; i++) {
                int d;
                do
                    d = (int)(rng_next(&s) % RS_NDATA);
                while (used & (1 << d));
                used |= 1 << d;
                uint64_t r = rng_next(&s) % 10;
                t->data[i] = d;
                t->mode[i] = r < 5 ? CASK_READ : r < 7 ? CASK_WRITE : CASK_RW;
                acc[i] = (cask_access){ data[d], t->mode[i] };
            }
            int w = (int)(rng_next(&s) % (uint64_t)(nsim + 2));
            t->where = w == nsim ? ON_ANY : w == nsim + 1 ? ON_CPU : w;
            add_on(g, k, t->where, id, acc, t->nacc);
        }
        for (int round = 0; round < 2; round++) {
            compute_ok(g);
            for (int id = 0; id < ntasks; id++) {
                const rs_task *t = &rs[id];
                for (int i = 0; i < t->nacc; i++) {
                    int d = t->data[i];
                    if (t->mode[i] & CASK_READ)
                        cr_assert_eq(rs_seen[id][i], expect[d],
                                     "seed %d round %d task %d read data %d: stale or early",
                                     seed, round, id, d);
                    if (t->mode[i] == CASK_WRITE)
                        expect[d] = mix(0x5eed, (uint64_t)id * 16 + (uint64_t)i);
                    else if (t->mode[i] == CASK_RW)
                        expect[d] = mix(expect[d], (uint64_t)id * 16 + (uint64_t)i);
                }
            }
        }
        cr_assert_eq(cask_graph_destroy(g), CASK_OK);
        for (int d = 0; d < RS_NDATA; d++) {
            cr_assert_eq(cask_data_destroy(data[d]), CASK_OK);
            for (int j = 0; j < RS_WORDS; j++)
                cr_assert_eq(host[d][j], expect[d], "seed %d data %d word %d", seed, d, j);
        }
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(data, random_sequences_stay_coherent_over_cpu_and_two_simulated_gpus)
{
    random_sequences_on_sim_gpus(2, 2, 0, 20, 300);
}

Test(data, random_sequences_stay_coherent_under_eviction)
{
    /* Room for 4 of the 6 chunks of 4 KiB per GPU; a task uses up to 3. */
    random_sequences_on_sim_gpus(2, 2, 4 * RS_WORDS * sizeof(uint64_t), 10, 300);
}

Test(data_stress, random_sequences_stay_coherent_over_four_simulated_gpus)
{
    random_sequences_on_sim_gpus(4, 4, 4 * RS_WORDS * sizeof(uint64_t), 100, RS_MAXTASKS);
}
