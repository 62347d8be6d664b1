/* test_gpu_replay.c: graphs computed again replayed as CUDA graphs (suite gpu, real GPUs
 * only; the program says SKIP without one). A replay must give the same bits as the
 * usual path, happen only where it may (every task GPU-only, one GPU, a kernel that can
 * be captured), be recorded again when the graph changes, copy in what the host wrote
 * between runs, write back what the user registered, let tasks added while it runs wait
 * for it, count its tasks, and report a failure with its segment. Whether a run was
 * replayed is seen from the CUDA implementations' calls: a replay does not call them. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"
#include "gpu_main.h"
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime.h>
#include "common/gpu_kernels.h"

typedef struct { int32_t v; } add_args;

static _Atomic long cuda_calls;   /* CUDA implementations called (all kernels) */

static cask_status add_cuda(cask_task_ctx *ctx)
{
    atomic_fetch_add(&cuda_calls, 1);
    const add_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_add(cask_task_buffer(ctx, 0),
                         (int64_t)(cask_task_buffer_size(ctx, 0) / sizeof(int32_t)), a->v,
                         cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "k_add launch: %s", test_gpu_error_string(e)) : CASK_OK;
}

static cask_status add_cpu(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    int32_t *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof(int32_t);
    for (size_t i = 0; i < n; i++)
        x[i] += a->v;
    return CASK_OK;
}

/* buffers [0] R a, [1] RW b: b = a * v + b */
static cask_status axpy_cuda(cask_task_ctx *ctx)
{
    atomic_fetch_add(&cuda_calls, 1);
    const add_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_axpy(cask_task_buffer(ctx, 0), cask_task_buffer(ctx, 1),
                          (int64_t)(cask_task_buffer_size(ctx, 1) / sizeof(int32_t)), a->v,
                          cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "k_axpy launch: %s", test_gpu_error_string(e)) : CASK_OK;
}

/* synchronises its stream: cannot be captured */
static cask_status add_sync_cuda(cask_task_ctx *ctx)
{
    cask_status st = add_cuda(ctx);
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)cask_task_cuda_stream(ctx));
    if (st == CASK_OK && e != cudaSuccess)
        return cask_task_fail(ctx, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
    return st;
}

static cask_status trap_cuda(cask_task_ctx *ctx)
{
    atomic_fetch_add(&cuda_calls, 1);
    int e = test_gpu_trap_if(cask_task_buffer(ctx, 0), cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "k_trap_if launch: %s", test_gpu_error_string(e)) : CASK_OK;
}

typedef struct env {
    cask_runtime *rt;
    cask_kernel *add, *axpy, *add_sync, *add_any, *trap;
} env;

/* One GPU, 2 CPU workers; replay 1 on, 0 off, -1 from the environment. */
static env start(int replay)
{
    env e = {0};
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS |
                                      CASK_CONFIG_BIND,
                        .ngpu = 1, .ncpu = 2, .sim_gpus = 0, .bind = 0 };
    if (replay >= 0) {
        cfg.field_mask |= CASK_CONFIG_GRAPH_REPLAY;
        cfg.graph_replay = replay;
    }
    cask_status st = cask_init(&cfg, &e.rt);
    cr_assert_eq(st, CASK_OK, "cask_init: %s", cask_status_string(st));
    cask_kernel_desc kd = { .name = "add", .cuda = add_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.add), CASK_OK);
    kd = (cask_kernel_desc){ .name = "axpy", .cuda = axpy_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.axpy), CASK_OK);
    kd = (cask_kernel_desc){ .name = "add_sync", .cuda = add_sync_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.add_sync), CASK_OK);
    kd = (cask_kernel_desc){ .name = "add_any", .cpu = add_cpu, .cuda = add_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.add_any), CASK_OK);
    kd = (cask_kernel_desc){ .name = "trap_if", .cuda = trap_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.trap), CASK_OK);
    atomic_store(&cuda_calls, 0);
    return e;
}

static void task(cask_graph *g, cask_kernel *k, int32_t v, cask_access *acc, int nacc)
{
    add_args a = { v };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = acc,
                          .naccess = nacc, .args = &a, .args_size = sizeof a };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
}

static void add(cask_graph *g, cask_kernel *k, cask_data *d, int32_t v)
{
    cask_access acc = { d, CASK_RW };
    task(g, k, v, &acc, 1);
}

static void axpy(cask_graph *g, env *e, cask_data *a, cask_data *b, int32_t v)
{
    cask_access acc[2] = { { a, CASK_READ }, { b, CASK_RW } };
    task(g, e->axpy, v, acc, 2);
}

enum { NDATA = 8, N = 4099 };

/* A graph of chains and fan-ins over NDATA handles: 3 rounds of an add on each, then an
 * axpy of each into its neighbour. 6 * NDATA tasks. */
static void build(cask_graph *g, env *e, cask_data **d)
{
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < NDATA; i++)
            add(g, e->add, d[i], r * 10 + i + 1);
        for (int i = 0; i < NDATA; i++)
            axpy(g, e, d[i], d[(i + 1) % NDATA], (i & 1) ? 3 : -2);
    }
}

static void make_data(env *e, cask_data **d)
{
    for (int i = 0; i < NDATA; i++) {
        cr_assert_eq(cask_data_create(e->rt, N * sizeof(int32_t), &d[i]), CASK_OK);
        void *p;
        cr_assert_eq(cask_data_acquire(d[i], CASK_WRITE, &p), CASK_OK);
        for (int j = 0; j < N; j++)
            ((int32_t *)p)[j] = i * 7 + j % 13;
        cask_data_release(d[i]);
    }
}

/* The handles' contents, concatenated (malloc'd). */
static int32_t *contents(cask_data **d)
{
    int32_t *out = malloc(sizeof(int32_t) * NDATA * N);
    for (int i = 0; i < NDATA; i++) {
        void *p;
        cr_assert_eq(cask_data_acquire(d[i], CASK_READ, &p), CASK_OK);
        memcpy(out + i * N, p, sizeof(int32_t) * N);
        cask_data_release(d[i]);
    }
    return out;
}

/* Runs the graph of build() `runs` times (reading the data back after each run when
 * read_between) and returns the final contents; *calls: CUDA implementations called. */
static int32_t *run(int replay, int runs, int read_between, long *calls)
{
    env e = start(replay);
    cask_data *d[NDATA];
    make_data(&e, d);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(e.rt, &g), CASK_OK);
    build(g, &e, d);
    for (int r = 0; r < runs; r++) {
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "run %d: %s", r, cask_graph_error(g));
        cask_graph_info info;
        cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
        cr_assert_eq(info.ntasks_run, info.ntasks, "run %d: %zu of %zu tasks counted", r,
                     info.ntasks_run, info.ntasks);
        cr_assert_eq(info.ntasks_replayed, replay == 1 && r >= 1 ? info.ntasks : 0,
                     "run %d: %zu replayed", r, info.ntasks_replayed);
        if (read_between)
            free(contents(d));
    }
    int32_t *out = contents(d);
    *calls = atomic_load(&cuda_calls);
    cask_graph_destroy(g);
    for (int i = 0; i < NDATA; i++)
        cask_data_destroy(d[i]);
    cask_shutdown(e.rt);
    return out;
}

Test(replay, replayed_runs_give_the_same_bits_as_usual_runs)
{
    long on_calls, off_calls;
    int32_t *on = run(1, 6, 1, &on_calls);
    int32_t *off = run(0, 6, 1, &off_calls);
    cr_assert_eq(off_calls, 6 * 6 * NDATA, "usual path: every task called each run");
    /* run 1 as usual, run 2 recorded (called once more), runs 3-6 replayed */
    cr_assert_eq(on_calls, 2 * 6 * NDATA, "replay: %ld CUDA calls", on_calls);
    for (size_t i = 0; i < (size_t)NDATA * N; i++)
        cr_assert_eq(on[i], off[i], "element %zu: replayed %d, usual %d", i, on[i], off[i]);
    free(on);
    free(off);
}

Test(replay, results_stay_on_the_gpu_between_replays_without_reads)
{
    long on_calls, off_calls;
    int32_t *on = run(1, 5, 0, &on_calls);
    int32_t *off = run(0, 5, 0, &off_calls);
    cr_assert_eq(on_calls, 2 * 6 * NDATA);
    cr_assert_eq(memcmp(on, off, sizeof(int32_t) * NDATA * N), 0);
    free(on);
    free(off);
}

Test(replay, the_environment_turns_it_off)
{
    setenv("CASK_GRAPH_REPLAY", "0", 1);
    long calls;
    free(run(-1, 4, 0, &calls));
    unsetenv("CASK_GRAPH_REPLAY");
    cr_assert_eq(calls, 4 * 6 * NDATA, "CASK_GRAPH_REPLAY=0: %ld calls", calls);
}

Test(replay, a_changed_graph_runs_as_usual_then_is_recorded_again)
{
    env e = start(1);
    cask_data *d[NDATA];
    make_data(&e, d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    build(g, &e, d);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    cr_assert_eq(atomic_load(&cuda_calls), 2 * 6 * NDATA);
    add(g, e.add, d[0], 1000);   /* a new task: the shape changed */
    long before = atomic_load(&cuda_calls);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    /* usual, recorded, replayed, replayed */
    cr_assert_eq(atomic_load(&cuda_calls) - before, 2 * (6 * NDATA + 1));
    cask_graph_destroy(g);
    for (int i = 0; i < NDATA; i++)
        cask_data_destroy(d[i]);
    cask_shutdown(e.rt);
}

Test(replay, data_the_host_wrote_between_runs_is_copied_in_first)
{
    env e = start(1);
    cask_data *d;
    cr_assert_eq(cask_data_create(e.rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    memset(p, 0, N * sizeof(int32_t));
    cask_data_release(d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int i = 0; i < 10; i++)
        add(g, e.add, d, 1);
    for (int r = 0; r < 5; r++) {
        cr_assert_eq(cask_data_acquire(d, CASK_RW, &p), CASK_OK);
        for (int j = 0; j < N; j++) {
            cr_assert_eq(((int32_t *)p)[j], r ? 100 * (r - 1) + 10 : 0, "run %d element %d", r, j);
            ((int32_t *)p)[j] = 100 * r;   /* the next run must start from this */
        }
        cask_data_release(d);
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    }
    cr_assert_eq(atomic_load(&cuda_calls), 2 * 10, "replayed from run 3 on");
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        cr_assert_eq(((int32_t *)p)[j], 410);
    cask_data_release(d);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay, registered_memory_gets_the_results_back)
{
    env e = start(1);
    int32_t *x = calloc(N, sizeof *x);
    cask_data *d;
    cr_assert_eq(cask_data_register(e.rt, x, N * sizeof *x, &d), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(d, 1), CASK_OK);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int i = 0; i < 4; i++)
        add(g, e.add, d, i + 1);   /* + 10 a run */
    for (int r = 0; r < 5; r++) {
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
        for (int j = 0; j < N; j++)   /* written back before compute returned */
            cr_assert_eq(x[j], 10 * (r + 1), "run %d element %d", r, j);
    }
    cr_assert_eq(atomic_load(&cuda_calls), 2 * 4);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
    free(x);
}

Test(replay, a_kernel_that_cannot_be_captured_runs_the_usual_way)
{
    env e = start(1);
    cask_data *d;
    cr_assert_eq(cask_data_create(e.rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    memset(p, 0, N * sizeof(int32_t));
    cask_data_release(d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, e.add, d, 1);
    add(g, e.add_sync, d, 2);   /* synchronises: the capture fails */
    for (int r = 0; r < 4; r++)
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "run %d: %s", r, cask_graph_error(g));
    /* 4 usual runs, and the calls of the failed recording (1 or 2) */
    long calls = atomic_load(&cuda_calls);
    cr_assert(calls >= 4 * 2 + 1 && calls <= 4 * 2 + 2, "%ld calls", calls);
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        cr_assert_eq(((int32_t *)p)[j], 12, "element %d", j);
    cask_data_release(d);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay, a_task_that_may_run_on_the_cpu_is_not_replayed)
{
    env e = start(1);
    cask_data *d;
    cr_assert_eq(cask_data_create(e.rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    memset(p, 0, N * sizeof(int32_t));
    cask_data_release(d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, e.add, d, 1);
    add(g, e.add_any, d, 1);   /* CPU or GPU: the scheduler chooses each time */
    for (int r = 0; r < 4; r++)
        cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    cr_assert_geq(atomic_load(&cuda_calls), 4, "the GPU-only task called every run");
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        cr_assert_eq(((int32_t *)p)[j], 8);
    cask_data_release(d);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay, a_task_added_while_a_replay_runs_waits_for_it)
{
    env e = start(1);
    cask_data *d;
    cr_assert_eq(cask_data_create(e.rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    memset(p, 0, N * sizeof(int32_t));
    cask_data_release(d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int i = 0; i < 50; i++)
        add(g, e.add, d, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);   /* recorded */
    cr_assert_eq(cask_graph_submit(g), CASK_OK);    /* replayed */
    add_args a = { 1000 };
    cask_access acc = { d, CASK_RW };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = e.add_any,
                          .access = &acc, .naccess = 1, .args = &a, .args_size = sizeof a,
                          .where = CASK_WHERE_CPU };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_wait(g), CASK_OK, "%s", cask_graph_error(g));
    cr_assert_eq(atomic_load(&cuda_calls), 2 * 50, "the third run was a replay");
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        cr_assert_eq(((int32_t *)p)[j], 3 * 50 + 1000, "element %d", j);
    cask_data_release(d);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay, a_fault_inside_a_replay_names_the_replayed_segment)
{
    env e = start(1);
    cask_data *flag, *d;
    cr_assert_eq(cask_data_create(e.rt, sizeof(int32_t), &flag), CASK_OK);
    cr_assert_eq(cask_data_create(e.rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(flag, CASK_WRITE, &p), CASK_OK);
    *(int32_t *)p = 0;
    cask_data_release(flag);
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    memset(p, 0, N * sizeof(int32_t));
    cask_data_release(d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, e.add, d, 1);
    cask_access acc = { flag, CASK_READ };
    task(g, e.trap, 0, &acc, 1);
    add(g, e.add, d, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));   /* recorded */
    cr_assert_eq(atomic_load(&cuda_calls), 2 * 3);
    cr_assert_eq(cask_data_acquire(flag, CASK_WRITE, &p), CASK_OK);
    *(int32_t *)p = 1;   /* copied in before the next replay, which then traps */
    cask_data_release(flag);
    cask_status st = cask_graph_compute(g);
    cr_assert_neq(st, CASK_OK, "a trapping replay succeeded");
    cr_assert(strstr(cask_graph_error(g), "replay of 3 tasks") != NULL, "error: %s",
              cask_graph_error(g));
    cr_assert_eq(atomic_load(&cuda_calls), 2 * 3, "the failing run was a replay");
    /* the context is lost after a trap: no shutdown (the test's process ends here) */
}

CASK_GPU_TEST_MAIN("test_gpu_replay")

#else

int main(void)
{
    printf("SKIP: built without CUDA: test_gpu_replay needs a real GPU\n");
    return 77;
}

#endif
