/* test_replay_sim.c: graph replays on simulated GPUs (suite unit). A simulated GPU's
 * replay runs the plan's tasks' CPU implementations in its order on the stand-in's
 * worker instead of launching a CUDA graph, so everything of a replay but the capture
 * and the launch (when a graph is replayed, its plan, pinning, copies in, write-backs,
 * completion, counts, tasks added meanwhile, failures) is checked without a GPU. Skips
 * where real GPUs are in use (test_gpu_replay.c covers them). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"

typedef struct { int32_t v; } add_args;

static cask_status add_cpu(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    int32_t *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof(int32_t);
    for (size_t i = 0; i < n; i++)
        x[i] = (int32_t)((uint32_t)x[i] + (uint32_t)a->v);
    return CASK_OK;
}

/* [0] R a, [1] RW b: b = a * v + b */
static cask_status axpy_cpu(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    const int32_t *x = cask_task_buffer(ctx, 0);
    int32_t *y = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 1) / sizeof(int32_t);
    for (size_t i = 0; i < n; i++)   /* (wrapping: the values grow run after run) */
        y[i] = (int32_t)((uint32_t)x[i] * (uint32_t)a->v + (uint32_t)y[i]);
    return CASK_OK;
}

/* fails where buffer 0's first element is 7 */
static cask_status fail7_cpu(cask_task_ctx *ctx)
{
    const int32_t *x = cask_task_buffer(ctx, 0);
    return x[0] == 7 ? cask_task_fail(ctx, "found a 7") : CASK_OK;
}

typedef struct env {
    cask_runtime *rt;
    cask_kernel *add, *axpy, *fail7;
} env;

/* 2 CPU workers, one simulated GPU (limited to mem bytes if not 0); replay 1, 0, or -1
 * (the environment). The kernels' "CUDA implementation" is their CPU one: a simulated
 * GPU runs CPU implementations, and it makes them GPU kernels. */
static env start(int replay, size_t mem)
{
    env e = {0};
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND,
                        .ncpu = 2, .sim_gpus = 1, .bind = 0 };
    if (replay >= 0) {
        cfg.field_mask |= CASK_CONFIG_GRAPH_REPLAY;
        cfg.graph_replay = replay;
    }
    if (mem) {
        cfg.field_mask |= CASK_CONFIG_GPU_MEM_LIMIT;
        cfg.gpu_mem_limit = mem;
    }
    cr_assert_eq(cask_init(&cfg, &e.rt), CASK_OK);
    cask_runtime_info info;
    cask_runtime_query(e.rt, &info);
    if (!info.simulated_gpus) {
        cask_shutdown(e.rt);
        cr_skip_test("real GPUs in use: simulated-GPU tests skipped");
    }
    cask_kernel_desc kd = { .name = "add", .cpu = add_cpu, .cuda = add_cpu };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.add), CASK_OK);
    kd = (cask_kernel_desc){ .name = "axpy", .cpu = axpy_cpu, .cuda = axpy_cpu };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.axpy), CASK_OK);
    kd = (cask_kernel_desc){ .name = "fail7", .cpu = fail7_cpu, .cuda = fail7_cpu };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.fail7), CASK_OK);
    return e;
}

static void task(cask_graph *g, cask_kernel *k, uint32_t where, int32_t v, cask_access *acc,
                 int nacc)
{
    add_args a = { v };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = k,
                          .access = acc, .naccess = nacc, .args = &a, .args_size = sizeof a,
                          .where = where };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
}

static void add(cask_graph *g, env *e, cask_data *d, int32_t v)
{
    cask_access acc = { d, CASK_RW };
    task(g, e->add, CASK_WHERE_GPU, v, &acc, 1);
}

enum { NDATA = 6, N = 1031 };

static cask_data *data_of(env *e, int32_t first)
{
    cask_data *d;
    cr_assert_eq(cask_data_create(e->rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        ((int32_t *)p)[j] = first + j % 11;
    cask_data_release(d);
    return d;
}

static size_t compute(cask_graph *g, size_t *ntasks)
{
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks_run, info.ntasks, "%zu of %zu tasks counted", info.ntasks_run,
                 info.ntasks);
    if (ntasks)
        *ntasks = info.ntasks;
    return info.ntasks_replayed;
}

/* Chains and fan-ins over NDATA handles, 5 runs, contents after each appended to out
 * (5 * NDATA * N ints); replayed[r]: tasks replayed in run r. */
static void chains(int replay, int32_t *out, size_t *replayed)
{
    env e = start(replay, 0);
    cask_data *d[NDATA];
    for (int i = 0; i < NDATA; i++)
        d[i] = data_of(&e, i * 5);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < NDATA; i++) {
            add(g, &e, d[i], r + i + 1);
            cask_access acc[2] = { { d[i], CASK_READ }, { d[(i + 1) % NDATA], CASK_RW } };
            task(g, e.axpy, CASK_WHERE_GPU, (i & 1) ? 3 : -2, acc, 2);
        }
    for (int r = 0; r < 5; r++) {
        replayed[r] = compute(g, NULL);
        for (int i = 0; i < NDATA; i++) {
            void *p;
            cr_assert_eq(cask_data_acquire(d[i], CASK_READ, &p), CASK_OK);
            memcpy(out + ((size_t)r * NDATA + (size_t)i) * N, p, N * sizeof(int32_t));
            cask_data_release(d[i]);
        }
    }
    cask_graph_destroy(g);
    for (int i = 0; i < NDATA; i++)
        cask_data_destroy(d[i]);
    cask_shutdown(e.rt);
}

Test(replay_sim, replayed_from_the_second_run_on_with_the_same_results)
{
    size_t nint = 5 * NDATA * N, on_r[5], off_r[5];
    int32_t *on = malloc(nint * sizeof *on), *off = malloc(nint * sizeof *off);
    chains(1, on, on_r);
    chains(0, off, off_r);
    for (int r = 0; r < 5; r++) {
        cr_assert_eq(off_r[r], 0, "replay off: run %d replayed %zu", r, off_r[r]);
        cr_assert_eq(on_r[r], r == 0 ? 0 : 6 * NDATA, "replay on: run %d replayed %zu", r, on_r[r]);
    }
    cr_assert_eq(memcmp(on, off, nint * sizeof *on), 0, "replayed results differ");
    free(on);
    free(off);
}

/* Replayed runs of a one-task graph computed 3 times, replay from the environment. */
static size_t replayed_with_env(const char *value)
{
    setenv("CASK_GRAPH_REPLAY", value, 1);
    env e = start(-1, 0);
    unsetenv("CASK_GRAPH_REPLAY");
    cask_data *d = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, &e, d, 1);
    size_t n = 0;
    for (int r = 0; r < 3; r++)
        n += compute(g, NULL) ? 1 : 0;
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
    return n;
}

Test(replay_sim, the_environment_turns_it_on_and_off)
{
    cr_assert_eq(replayed_with_env("1"), 2, "CASK_GRAPH_REPLAY=1: runs 2 and 3 replayed");
    cr_assert_eq(replayed_with_env("0"), 0, "CASK_GRAPH_REPLAY=0: none replayed");
}

Test(replay_sim, simulated_gpus_do_not_replay_unless_asked)
{
    unsetenv("CASK_GRAPH_REPLAY");
    env e = start(-1, 0);
    cask_data *d = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, &e, d, 1);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(compute(g, NULL), 0);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay_sim, a_bad_environment_value_is_refused)
{
    setenv("CASK_GRAPH_REPLAY", "2", 1);
    cask_runtime *rt = NULL;
    cask_status st = cask_init(NULL, &rt);
    unsetenv("CASK_GRAPH_REPLAY");
    cr_assert_eq(st, CASK_ERR_INVALID);
}

Test(replay_sim, a_changed_graph_runs_as_usual_once_then_is_replayed_again)
{
    env e = start(1, 0);
    cask_data *d = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, &e, d, 1);
    add(g, &e, d, 2);
    size_t n;
    cr_assert_eq(compute(g, &n), 0);
    cr_assert_eq(compute(g, NULL), n);
    add(g, &e, d, 3);
    cr_assert_eq(compute(g, &n), 0, "the changed graph was replayed at once");
    cr_assert_eq(n, 3);
    cr_assert_eq(compute(g, NULL), 3);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        cr_assert_eq(((int32_t *)p)[j], j % 11 + 3 + 3 + 6 + 6);
    cask_data_release(d);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay_sim, what_the_host_wrote_between_runs_is_copied_in)
{
    env e = start(1, 0);
    cask_data *d = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int i = 0; i < 4; i++)
        add(g, &e, d, 1);
    for (int r = 0; r < 4; r++) {
        void *p;
        cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
        for (int j = 0; j < N; j++)
            ((int32_t *)p)[j] = 100 * r;
        cask_data_release(d);
        cr_assert_eq(compute(g, NULL), r ? 4 : 0);
        cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
        for (int j = 0; j < N; j++)
            cr_assert_eq(((int32_t *)p)[j], 100 * r + 4, "run %d element %d", r, j);
        cask_data_release(d);
    }
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay_sim, registered_memory_with_write_back_holds_the_results)
{
    env e = start(1, 0);
    int32_t *x = calloc(N, sizeof *x);
    cask_data *d;
    cr_assert_eq(cask_data_register(e.rt, x, N * sizeof *x, &d), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(d, 1), CASK_OK);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, &e, d, 2);
    add(g, &e, d, 3);
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(compute(g, NULL), r ? 2 : 0);
        for (int j = 0; j < N; j++)
            cr_assert_eq(x[j], 5 * (r + 1), "run %d element %d", r, j);
    }
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
    free(x);
}

Test(replay_sim, a_task_that_may_run_on_the_cpu_keeps_the_graph_on_the_usual_path)
{
    env e = start(1, 0);
    cask_data *d = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, &e, d, 1);
    cask_access acc = { d, CASK_RW };
    task(g, e.add, CASK_WHERE_ANY, 1, &acc, 1);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(compute(g, NULL), 0);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay_sim, a_task_added_while_a_replay_runs_waits_for_it)
{
    env e = start(1, 0);
    cask_data *d = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int i = 0; i < 30; i++)
        add(g, &e, d, 1);
    compute(g, NULL);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cask_access acc = { d, CASK_RW };
    task(g, e.add, CASK_WHERE_CPU, 1000, &acc, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK, "%s", cask_graph_error(g));
    cask_graph_info info;
    cask_graph_query(g, &info);
    cr_assert_eq(info.ntasks_replayed, 30, "the second run was a replay");
    cr_assert_eq(info.ntasks_run, 31);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int j = 0; j < N; j++)
        cr_assert_eq(((int32_t *)p)[j], j % 11 + 60 + 1000, "element %d", j);
    cask_data_release(d);
    /* the graph grew: the next run is a usual one */
    cr_assert_eq(compute(g, NULL), 0);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
}

Test(replay_sim, a_failing_task_in_a_replay_fails_the_graph_with_its_name)
{
    env e = start(1, 0);
    cask_data *d = data_of(&e, 0), *flag = data_of(&e, 0);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add(g, &e, d, 1);
    cask_access acc = { flag, CASK_READ };
    cask_task_desc td = { .field_mask = CASK_TASK_WHERE | CASK_TASK_NAME, .kernel = e.fail7,
                          .access = &acc, .naccess = 1, .where = CASK_WHERE_GPU,
                          .name = "the checker" };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    add(g, &e, d, 1);
    compute(g, NULL);
    cr_assert_eq(compute(g, NULL), 3);
    void *p;
    cr_assert_eq(cask_data_acquire(flag, CASK_WRITE, &p), CASK_OK);
    ((int32_t *)p)[0] = 7;
    cask_data_release(flag);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    cr_assert(strstr(cask_graph_error(g), "the checker") && strstr(cask_graph_error(g), "found a 7"),
              "error: %s", cask_graph_error(g));
    cask_graph_info info;
    cask_graph_query(g, &info);
    cr_assert_eq(info.ntasks_replayed, 0);
    /* the failure cleared, the graph replays again, its data unpinned and usable */
    cr_assert_eq(cask_data_acquire(flag, CASK_WRITE, &p), CASK_OK);
    ((int32_t *)p)[0] = 0;
    cask_data_release(flag);
    cr_assert_eq(compute(g, NULL), 3);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_data_destroy(flag);
    cask_shutdown(e.rt);
}

Test(replay_sim, data_evicted_between_runs_comes_back_for_the_replay)
{
    /* room for about 3 chunks: a second graph over 3 others pushes the first one's out */
    env e = start(1, 3 * N * sizeof(int32_t) + 4096);
    cask_data *a = data_of(&e, 1), *b = data_of(&e, 2), *o[3];
    for (int i = 0; i < 3; i++)
        o[i] = data_of(&e, 0);
    cask_graph *g, *h;
    cask_graph_create(e.rt, &g);
    cask_graph_create(e.rt, &h);
    add(g, &e, a, 1);
    cask_access acc[2] = { { a, CASK_READ }, { b, CASK_RW } };
    task(g, e.axpy, CASK_WHERE_GPU, 2, acc, 2);
    for (int i = 0; i < 3; i++)
        add(h, &e, o[i], 1);
    int32_t ea = 1, eb = 2;   /* element 0 of a and b */
    for (int r = 0; r < 5; r++) {
        cr_assert_eq(compute(g, NULL), r ? 2 : 0, "run %d", r);
        ea += 1;
        eb = ea * 2 + eb;
        compute(h, NULL);
    }
    void *p;
    cr_assert_eq(cask_data_acquire(b, CASK_READ, &p), CASK_OK);
    cr_assert_eq(((int32_t *)p)[0], eb);
    cask_data_release(b);
    int nw;
    cask_runtime_nworkers(e.rt, &nw);
    cask_worker_stats st[8];
    cask_runtime_stats(e.rt, st, nw);
    uint64_t ev = 0;
    for (int i = 0; i < nw; i++)
        ev += st[i].evictions;
    cr_assert_gt(ev, 0, "nothing was evicted: the test did not test eviction");
    cask_graph_destroy(g);
    cask_graph_destroy(h);
    cask_data_destroy(a);
    cask_data_destroy(b);
    for (int i = 0; i < 3; i++)
        cask_data_destroy(o[i]);
    cask_shutdown(e.rt);
}
