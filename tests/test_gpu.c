/* test_gpu.c: GPU execution on real GPUs (suite gpu): transfers in every direction,
 * peer copies between all GPU pairs, eviction under a tiny memory limit, write-back,
 * CUDA failures reported, results identical for 1, 2, ... all GPUs, and side, urgent and
 * to-host side tasks (CASK_KERNEL_SIDE_STREAM, _URGENT_STREAM, _SIDE_TO_HOST) not held
 * behind queued kernels. Every test skips
 * (and says so) when no real GPU is present. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <time.h>
#include "common/gpu_kernels.h"
#endif

typedef struct { int32_t v; } add_args;

#ifdef CASK_HAVE_CUDA
static cask_status add_cpu(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    int32_t *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof(int32_t);
    for (size_t i = 0; i < n; i++)
        x[i] += a->v;
    return CASK_OK;
}

static cask_status axpy_cpu(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    const int32_t *x = cask_task_buffer(ctx, 0);
    int32_t *y = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 1) / sizeof(int32_t);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] * a->v + y[i];
    return CASK_OK;
}

static cask_status add_cuda(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_add(cask_task_buffer(ctx, 0),
                         (int64_t)(cask_task_buffer_size(ctx, 0) / sizeof(int32_t)), a->v,
                         cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "k_add launch: %s", test_gpu_error_string(e)) : CASK_OK;
}

static cask_status axpy_cuda(cask_task_ctx *ctx)
{
    const add_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_axpy(cask_task_buffer(ctx, 0), cask_task_buffer(ctx, 1),
                          (int64_t)(cask_task_buffer_size(ctx, 1) / sizeof(int32_t)), a->v,
                          cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "k_axpy launch: %s", test_gpu_error_string(e)) : CASK_OK;
}

static cask_status bad_cuda(cask_task_ctx *ctx)
{
    int e = test_gpu_bad_launch(cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "k_empty<<<1, 4096>>>: %s", test_gpu_error_string(e)) : CASK_OK;
}
#endif

typedef struct env {
    cask_runtime *rt;
    cask_kernel *add, *axpy;
    int ngpu;
} env;

/* Starts a runtime on ngpu real GPUs (-1 all); skips the test without a real GPU. */
static env start(int ngpu, size_t mem_limit)
{
    env e = {0};
#ifndef CASK_HAVE_CUDA
    cr_skip_test("no GPU: built without CUDA");
#else
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS,
                        .ngpu = ngpu, .ncpu = 2, .sim_gpus = 0 };
    if (mem_limit) {
        cfg.field_mask |= CASK_CONFIG_GPU_MEM_LIMIT;
        cfg.gpu_mem_limit = mem_limit;
    }
    cask_status st = cask_init(&cfg, &e.rt);
    if (st == CASK_ERR_NOT_FOUND)
        cr_skip_test("fewer GPUs present than the %d this test needs", ngpu);
    cr_assert_eq(st, CASK_OK, "cask_init: %s", cask_status_string(st));
    cask_runtime_info info;
    cask_runtime_query(e.rt, &info);
    if (info.ngpus == 0 || info.simulated_gpus) {
        cask_shutdown(e.rt);
        cr_skip_test("no GPU present");
    }
    e.ngpu = info.ngpus;
    cask_kernel_desc kd = { .name = "add", .cpu = add_cpu, .cuda = add_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kd, &e.add), CASK_OK);
    cask_kernel_desc kx = { .name = "axpy", .cpu = axpy_cpu, .cuda = axpy_cuda };
    cr_assert_eq(cask_kernel_register(e.rt, &kx, &e.axpy), CASK_OK);
#endif
    return e;
}

static int gpus_present(void)
{
#ifdef CASK_HAVE_CUDA
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS, .ncpu = 1 };
    cask_runtime *rt;
    if (cask_init(&cfg, &rt) != CASK_OK)
        return 0;
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    cask_shutdown(rt);
    return info.simulated_gpus ? 0 : info.ngpus;
#else
    return 0;
#endif
}

static void task_on(cask_graph *g, cask_kernel *k, int where, int device, int32_t v,
                    cask_access *acc, int nacc)
{
    add_args a = { v };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE |
                                        (device >= 0 ? CASK_TASK_DEVICE : 0),
                          .kernel = k, .access = acc, .naccess = nacc, .args = &a,
                          .args_size = sizeof a, .where = (uint32_t)where, .device = device };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
}

static void add_on(cask_graph *g, env *e, cask_data *d, int where, int device, int32_t v)
{
    cask_access acc = { d, CASK_RW };
    task_on(g, e->add, where, device, v, &acc, 1);
}

static void fill_seq(int32_t *x, size_t n, int32_t base)
{
    for (size_t i = 0; i < n; i++)
        x[i] = base + (int32_t)(i % 1000003);
}

Test(gpu, host_to_gpu_to_host_and_back_again)
{
    env e = start(1, 0);
    enum { N = 1 << 20 };
    int32_t *x = malloc(N * sizeof *x);
    fill_seq(x, N, 7);
    cask_data *d;
    cr_assert_eq(cask_data_register(e.rt, x, N * sizeof *x, &d), CASK_OK);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add_on(g, &e, d, CASK_WHERE_GPU, 0, 1);     /* H2D, then GPU write */
    add_on(g, &e, d, CASK_WHERE_CPU, -1, 10);   /* D2H, CPU write */
    add_on(g, &e, d, CASK_WHERE_GPU, 0, 100);   /* H2D again (GPU copy was invalidated) */
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(((int32_t *)p)[i], 7 + (int32_t)(i % 1000003) + 111, "element %zu", i);
    cask_data_release(d);
    int nw;
    cask_runtime_nworkers(e.rt, &nw);
    cask_worker_stats st[64];
    cask_runtime_stats(e.rt, st, nw);
    uint64_t h2d = 0;
    for (int i = 0; i < nw; i++)
        h2d += st[i].bytes_h2d;
    cr_assert_geq(h2d, 2ull * N * sizeof *x, "h2d bytes %llu", (unsigned long long)h2d);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
    free(x);
}

Test(gpu, runtime_allocated_data_lives_on_the_gpu_until_acquired)
{
    env e = start(1, 0);
    enum { N = 4096 };
    cask_data *d;
    cr_assert_eq(cask_data_create(e.rt, N * sizeof(int32_t), &d), CASK_OK);
    void *p;
    cr_assert_eq(cask_data_acquire(d, CASK_WRITE, &p), CASK_OK);
    memset(p, 0, N * sizeof(int32_t));
    cask_data_release(d);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int i = 0; i < 5; i++)
        add_on(g, &e, d, CASK_WHERE_GPU, 0, i);
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    cr_assert_eq(cask_data_acquire(d, CASK_READ, &p), CASK_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(((int32_t *)p)[i], 10);
    cask_data_release(d);
    cask_graph_destroy(g);
    cask_shutdown(e.rt);
}

Test(gpu, peer_copies_between_every_pair_of_gpus)
{
    if (gpus_present() < 2)
        cr_skip_test("needs 2 GPUs, %d present", gpus_present());
    env e = start(-1, 0);
    enum { N = 1 << 18 };
    int32_t *x = malloc(N * sizeof *x);
    for (int src = 0; src < e.ngpu; src++)
        for (int dst = 0; dst < e.ngpu; dst++) {
            if (src == dst)
                continue;
            fill_seq(x, N, src * 10 + dst);
            cask_data *d;
            cask_data_register(e.rt, x, N * sizeof *x, &d);
            cask_graph *g;
            cask_graph_create(e.rt, &g);
            add_on(g, &e, d, CASK_WHERE_GPU, src, 1);   /* valid only on src now */
            add_on(g, &e, d, CASK_WHERE_GPU, dst, 2);   /* peer copy src -> dst */
            cask_runtime_stats_reset(e.rt);
            cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
            int nw;
            cask_runtime_nworkers(e.rt, &nw);
            cask_worker_stats st[64];
            cask_runtime_stats(e.rt, st, nw);
            uint64_t peer = 0;
            for (int i = 0; i < nw; i++)
                peer += st[i].bytes_peer;
            cr_assert_eq(peer, (uint64_t)N * sizeof *x, "GPU %d -> %d: %llu peer bytes", src, dst,
                         (unsigned long long)peer);
            cr_assert_eq(cask_data_destroy(d), CASK_OK);
            for (size_t i = 0; i < N; i++)
                cr_assert_eq(x[i], src * 10 + dst + (int32_t)(i % 1000003) + 3,
                             "GPU %d -> %d element %zu", src, dst, i);
            cask_graph_destroy(g);
        }
    cask_shutdown(e.rt);
    free(x);
}

Test(gpu, graph_three_times_the_memory_limit_completes_by_eviction)
{
    const size_t limit = 64u << 20;
    env e = start(1, limit);
    enum { CHUNKS = 48, N = 1 << 20 };        /* 48 x 4 MiB = 3 x the limit */
    int32_t *x = malloc((size_t)CHUNKS * N * sizeof *x);
    cask_data *d[CHUNKS], *acc;
    int32_t *accbuf = calloc(N, sizeof *accbuf);
    for (int c = 0; c < CHUNKS; c++) {
        fill_seq(x + (size_t)c * N, N, c);
        cask_data_register(e.rt, x + (size_t)c * N, N * sizeof *x, &d[c]);
    }
    cask_data_register(e.rt, accbuf, N * sizeof *accbuf, &acc);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int c = 0; c < CHUNKS; c++)
        add_on(g, &e, d[c], CASK_WHERE_GPU, 0, c);          /* dirty on the GPU */
    for (int c = 0; c < CHUNKS; c++) {                      /* read them all again */
        cask_access a2[2] = { { d[c], CASK_READ }, { acc, CASK_RW } };
        task_on(g, e.axpy, CASK_WHERE_GPU, 0, 1, a2, 2);
    }
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    int nw;
    cask_runtime_nworkers(e.rt, &nw);
    cask_worker_stats st[64];
    cask_runtime_stats(e.rt, st, nw);
    uint64_t ev = 0, sp = 0;
    for (int i = 0; i < nw; i++) {
        ev += st[i].evictions;
        sp += st[i].spills;
    }
    cr_assert_gt(ev, 0);
    cr_assert_gt(sp, 0);
    void *p;
    cr_assert_eq(cask_data_acquire(acc, CASK_READ, &p), CASK_OK);
    for (size_t i = 0; i < N; i++) {
        int64_t want = 0;
        for (int c = 0; c < CHUNKS; c++)
            want += c + (int32_t)(i % 1000003) + c;
        cr_assert_eq(((int32_t *)p)[i], (int32_t)want, "element %zu", i);
    }
    cask_data_release(acc);
    for (int c = 0; c < CHUNKS; c++)
        cask_data_destroy(d[c]);
    for (int c = 0; c < CHUNKS; c++)
        for (size_t i = 0; i < N; i += 4099)
            cr_assert_eq(x[(size_t)c * N + i], 2 * c + (int32_t)(i % 1000003), "chunk %d elem %zu", c, i);
    cask_graph_destroy(g);
    cask_shutdown(e.rt);
    free(x);
    free(accbuf);
}

Test(gpu, writeback_puts_results_in_host_memory_when_the_graph_ends)
{
    env e = start(1, 0);
    enum { N = 1 << 16 };
    int32_t *x = calloc(N, sizeof *x);
    cask_data *d;
    cask_data_register(e.rt, x, N * sizeof *x, &d);
    cr_assert_eq(cask_data_set_writeback(d, 1), CASK_OK);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    add_on(g, &e, d, CASK_WHERE_GPU, 0, 5);
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    /* no acquire: the write-back copy already landed */
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(x[i], 5);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
    free(x);
}

Test(gpu, failing_launch_names_the_task_and_the_cuda_error)
{
#ifdef CASK_HAVE_CUDA
    env e = start(1, 0);
    cask_kernel *bad;
    cask_kernel_desc kd = { .name = "bad_launch", .cuda = bad_cuda };
    cask_kernel_register(e.rt, &kd, &bad);
    int32_t x[16] = {0};
    cask_data *d;
    cask_data_register(e.rt, x, sizeof x, &d);
    cask_data_set_name(d, "victim");
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    cask_access acc = { d, CASK_RW };
    cask_task_desc td = { .field_mask = CASK_TASK_NAME, .kernel = bad, .access = &acc, .naccess = 1,
                          .name = "bad[0]" };
    cask_graph_add_task(g, &td, NULL);
    add_on(g, &e, d, CASK_WHERE_GPU, 0, 1);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    const char *m = cask_graph_error(g);
    cr_assert(strstr(m, "bad[0]") && strstr(m, "victim") && strstr(m, "k_empty"), "message: %s", m);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(e.rt);
#else
    cr_skip_test("no GPU: built without CUDA");
#endif
}

#ifdef CASK_HAVE_CUDA
/* A host function on the task's stream stamps when the stream got there. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void CUDART_CB stamp_fn(void *p)
{
    *(volatile double *)p = now_s();
}

typedef struct stamp_args { double *at; long long cycles; } stamp_args;

static cask_status spin_then_stamp_cuda(cask_task_ctx *ctx)
{
    const stamp_args *a = cask_task_args(ctx, NULL);
    int e = test_gpu_spin(a->cycles, 1, cask_task_cuda_stream(ctx));
    if (!e)
        e = (int)cudaLaunchHostFunc((cudaStream_t)cask_task_cuda_stream(ctx), stamp_fn, a->at);
    return e ? cask_task_fail(ctx, "spin: %s", test_gpu_error_string(e)) : CASK_OK;
}

/* The CPU task making the side task's input: late enough that the long kernel is
 * surely queued first. */
static cask_status slow_add_cpu(cask_task_ctx *ctx)
{
    struct timespec d = { 0, 100 * 1000 * 1000 };
    nanosleep(&d, NULL);
    return add_cpu(ctx);
}

static cask_status stamp_cuda(cask_task_ctx *ctx)
{
    const stamp_args *a = cask_task_args(ctx, NULL);
    cudaError_t e = cudaLaunchHostFunc((cudaStream_t)cask_task_cuda_stream(ctx), stamp_fn, a->at);
    return e ? cask_task_fail(ctx, "cudaLaunchHostFunc: %s", cudaGetErrorString(e)) : CASK_OK;
}
#endif

/* One compute stream; a long kernel queued first (its kernel flagged spin_flags: 0, on
 * the compute stream, or CASK_KERNEL_SIDE_STREAM, on the side stream); then a task of a
 * kernel flagged flags at priority prio whose input a CPU task made. Returns 1 if that
 * task ran before the long kernel ended. */
static int runs_before_queued_kernel(uint32_t spin_flags, uint32_t flags, int prio)
{
#ifdef CASK_HAVE_CUDA
    cask_runtime *rt;
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS |
                                      CASK_CONFIG_GPU_STREAMS,
                        .ngpu = 1, .ncpu = 2, .sim_gpus = 0, .gpu_streams = 1 };
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_kernel *spin, *stamp, *add_host;
    cask_kernel_desc ks = { .name = "spin", .cuda = spin_then_stamp_cuda, .flags = spin_flags };
    cask_kernel_desc ku = { .name = "stamp", .cuda = stamp_cuda, .flags = flags };
    cask_kernel_desc kp = { .name = "slow_add", .cpu = slow_add_cpu };
    cr_assert_eq(cask_kernel_register(rt, &ks, &spin), CASK_OK);
    cr_assert_eq(cask_kernel_register(rt, &ku, &stamp), CASK_OK);
    cr_assert_eq(cask_kernel_register(rt, &kp, &add_host), CASK_OK);
    int32_t x[1024] = {0}, y[16] = {0};
    cask_data *dx, *dy;
    cr_assert_eq(cask_data_register(rt, x, sizeof x, &dx), CASK_OK);
    cr_assert_eq(cask_data_register(rt, y, sizeof y, &dy), CASK_OK);
    double spin_end = 0, stamp_at = 0, t0 = now_s();
    /* about a second on a 2 GHz GPU */
    stamp_args sa = { &spin_end, 2000000000LL }, ua = { &stamp_at, 0 };
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_access ay = { dy, CASK_RW }, ax = { dx, CASK_RW }, rx = { dx, CASK_READ };
    add_args one = { 1 };
    cask_task_desc t[3] = {
        { .field_mask = CASK_TASK_ARGS, .kernel = spin, .access = &ay, .naccess = 1, .args = &sa,
          .args_size = sizeof sa },
        { .field_mask = CASK_TASK_ARGS, .kernel = add_host, .access = &ax, .naccess = 1,
          .args = &one, .args_size = sizeof one },
        { .field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY, .kernel = stamp, .access = &rx,
          .naccess = 1, .args = &ua, .args_size = sizeof ua, .priority = prio } };
    for (int i = 0; i < 3; i++) cr_assert_eq(cask_graph_add_task(g, &t[i], NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    cr_assert(spin_end > 0 && stamp_at > 0, "both host functions ran");
    cr_assert_gt(spin_end - t0, 0.3, "the long kernel ran %.3f s: too short to tell", spin_end - t0);
    cask_graph_destroy(g);
    cask_data_destroy(dx);
    cask_data_destroy(dy);
    cask_shutdown(rt);
    return stamp_at < spin_end;
#else
    (void)spin_flags; (void)flags; (void)prio;
    return 0;
#endif
}

/* A task flagged CASK_KERNEL_SIDE_STREAM runs on the side stream as soon as its input is
 * on the GPU, not after the long kernel queued on the compute stream; unflagged, it
 * waits for it (which shows the test can tell). */
Test(gpu, side_stream_task_is_not_held_behind_a_queued_kernel)
{
#ifdef CASK_HAVE_CUDA
    cr_assert(runs_before_queued_kernel(0, CASK_KERNEL_SIDE_STREAM, 0),
              "the side task waited for the kernel queued on the compute stream");
    cr_assert(!runs_before_queued_kernel(0, 0, 0), "a task on the one compute stream did not "
              "wait for the kernel queued before it");
#else
    cr_skip_test("no GPU: built without CUDA");
#endif
}

/* At the top priority level (64 and above) such a task runs on the urgent stream as soon
 * as its input is on the GPU; below it, it stays on the compute stream, behind the long
 * kernel (which shows the test can tell). */
Test(gpu, urgent_stream_task_is_not_held_behind_a_queued_kernel)
{
#ifdef CASK_HAVE_CUDA
    cr_assert(runs_before_queued_kernel(0, CASK_KERNEL_URGENT_STREAM, 64),
              "a top-priority urgent task waited for the queued kernel");
    cr_assert(!runs_before_queued_kernel(0, CASK_KERNEL_URGENT_STREAM, 32),
              "an urgent kernel's task at priority 32 did not wait: it should have stayed on "
              "the compute stream");
#else
    cr_skip_test("no GPU: built without CUDA");
#endif
}

/* A side task flagged CASK_KERNEL_SIDE_TO_HOST runs on the second side stream: not behind
 * a long kernel queued on the first side stream; without the flag it waits for it on the
 * one side stream (which shows the test can tell). */
Test(gpu, side_to_host_task_is_not_held_behind_the_side_stream)
{
#ifdef CASK_HAVE_CUDA
    cr_assert(runs_before_queued_kernel(CASK_KERNEL_SIDE_STREAM,
                                        CASK_KERNEL_SIDE_STREAM | CASK_KERNEL_SIDE_TO_HOST, 0),
              "the to-host side task waited for the kernel queued on the side stream");
    cr_assert(!runs_before_queued_kernel(CASK_KERNEL_SIDE_STREAM, CASK_KERNEL_SIDE_STREAM, 0),
              "a side task did not wait for the kernel queued before it on the side stream");
#else
    cr_skip_test("no GPU: built without CUDA");
#endif
}

/* A deterministic pipeline over many chunks: the same bytes whatever the GPU count. */
static void pipeline(int ngpu, int32_t *out, size_t chunks, size_t n)
{
    env e = start(ngpu, 0);
    int32_t *x = malloc(chunks * n * sizeof *x);
    fill_seq(x, chunks * n, 3);
    cask_data **d = malloc(chunks * sizeof *d);
    for (size_t c = 0; c < chunks; c++)
        cask_data_register(e.rt, x + c * n, n * sizeof *x, &d[c]);
    cask_graph *g;
    cask_graph_create(e.rt, &g);
    for (int round = 0; round < 3; round++)
        for (size_t c = 0; c < chunks; c++) {
            add_on(g, &e, d[c], CASK_WHERE_GPU, -1, round + 1);
            if (c > 0) {   /* chunk c also reads its neighbour: data moves between GPUs */
                cask_access a2[2] = { { d[c - 1], CASK_READ }, { d[c], CASK_RW } };
                task_on(g, e.axpy, CASK_WHERE_GPU, -1, 3, a2, 2);
            }
        }
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    for (size_t c = 0; c < chunks; c++)
        cask_data_destroy(d[c]);
    memcpy(out, x, chunks * n * sizeof *x);
    cask_graph_destroy(g);
    cask_shutdown(e.rt);
    free(d);
    free(x);
}

Test(gpu, results_identical_for_every_gpu_count)
{
    int have = gpus_present();
    if (have < 1)
        cr_skip_test("no GPU present");
    enum { CHUNKS = 32, N = 1 << 16 };
    int32_t *ref = malloc((size_t)CHUNKS * N * sizeof *ref);
    int32_t *got = malloc((size_t)CHUNKS * N * sizeof *got);
    pipeline(1, ref, CHUNKS, N);
    for (int k = 2; k <= have; k *= 2) {
        pipeline(k, got, CHUNKS, N);
        cr_assert_eq(memcmp(ref, got, (size_t)CHUNKS * N * sizeof *ref), 0, "%d GPUs differ from 1", k);
    }
    if (have > 1 && (have & (have - 1))) {
        pipeline(have, got, CHUNKS, N);
        cr_assert_eq(memcmp(ref, got, (size_t)CHUNKS * N * sizeof *ref), 0, "%d GPUs differ", have);
    }
    free(ref);
    free(got);
}

/* Without a GPU the whole suite is skipped, visibly: exit code 77 is Meson's SKIP. */
int main(int argc, char *argv[])
{
    int n = gpus_present();
    if (n == 0) {
        printf("SKIP: no GPU present (CUDA %s): the gpu suite needs a real GPU\n",
#ifdef CASK_HAVE_CUDA
               "built in"
#else
               "not built"
#endif
        );
        return 77;
    }
    printf("gpu suite: %d GPU%s present\n", n, n > 1 ? "s" : "");
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
