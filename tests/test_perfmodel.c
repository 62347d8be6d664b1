/* tests/test_perfmodel.c: the cost model's choice between a CPU worker and a GPU for
 * kernels with CASK_KERNEL_COST_MODEL, on simulated GPUs (which run the CPU
 * implementation: the kernel below takes its time according to where it runs). Where
 * the CPU variant is faster it must win, where it is slower it must lose, a task waits
 * only behind GPU work of its priority or above, and a model kept in a file
 * (CASK_PERFMODEL) decides from a new process's first task on. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include "cask/cask.h"

static _Atomic int ran_cpu, ran_gpu;
static int cpu_us, gpu_us;

static void spin_us(int us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static cask_status work(cask_task_ctx *ctx)
{
    int gpu = cask_task_device(ctx) >= 0;
    spin_us(gpu ? gpu_us : cpu_us);
    atomic_fetch_add(gpu ? &ran_gpu : &ran_cpu, 1);
    return CASK_OK;
}

static cask_status never(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "a simulated GPU runs the CPU implementation");
}

static cask_runtime *rt;
static cask_kernel *k;

static void start(void)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND |
                     CASK_CONFIG_NGPU;
    cfg.ncpu = 2;
    cfg.sim_gpus = 1;
    cfg.ngpu = -1;
    cfg.bind = 0;
    setenv("CUDA_VISIBLE_DEVICES", "", 1);   /* simulated even on a GPU machine */
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    cr_assert(info.simulated_gpus && info.ngpus == 1, "no simulated GPU");
    cask_kernel_desc d = { .name = "test.costly", .cpu = work, .cuda = never,
                           .flags = CASK_KERNEL_COST_MODEL };
    cr_assert_eq(cask_kernel_register(rt, &d, &k), CASK_OK);
}

/* n independent tasks (own 4 KiB buffers), all ready at once; returns how many ran on
 * a CPU worker. */
static int run_batch(int n)
{
    cask_graph *g;
    cask_data **d = calloc((size_t)n, sizeof *d);
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(cask_data_create(rt, 4096, &d[i]), CASK_OK);
        cask_access a = { d[i], CASK_WRITE };
        cask_task_desc td = { .kernel = k, .access = &a, .naccess = 1 };
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    }
    atomic_store(&ran_cpu, 0);
    atomic_store(&ran_gpu, 0);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cask_graph_destroy(g);
    for (int i = 0; i < n; i++) cask_data_destroy(d[i]);
    free(d);
    cr_assert_eq(atomic_load(&ran_cpu) + atomic_load(&ran_gpu), n);
    return atomic_load(&ran_cpu);
}

/* Decisions are made as tasks become ready: a first batch is timed on the GPU, the next
 * sends one trial to a CPU worker (the rest to the GPU), and from then on both are known. */
static void calibrate(void)
{
    int cpu = 0, i;
    for (i = 0; i < 5 && !cpu; i++) cpu += run_batch(2);
    cr_assert(cpu == 1 && i >= 1, "calibration sent %d trials to CPU workers in %d batches",
              cpu, i);
}

/* The ratios are wide (100x, 2000x) so that a loaded machine cannot flip a decision: a
 * spin preempted for a scheduler quantum or two (a few ms) on the faster side must not
 * make it look slower than the other. Wrong decisions would make these tests slow, right
 * ones keep them short. */
Test(perfmodel, a_cpu_variant_that_is_faster_wins, .timeout = 60)
{
    unsetenv("CASK_PERFMODEL");
    cpu_us = 200;
    gpu_us = 20000;
    start();
    calibrate();
    int cpu = run_batch(30);
    cr_assert(cpu >= 24, "only %d of 30 tasks ran on the CPU workers (100x faster there)", cpu);
    cask_shutdown(rt);
}

Test(perfmodel, a_cpu_variant_that_is_slower_loses, .timeout = 60)
{
    unsetenv("CASK_PERFMODEL");
    cpu_us = 200000;
    gpu_us = 100;
    start();
    calibrate();
    int cpu = run_batch(5);
    cr_assert_eq(cpu, 0, "%d of 5 tasks ran on the CPU workers (2000x slower there)", cpu);
    cask_shutdown(rt);
}

Test(perfmodel, a_kept_model_decides_from_the_first_task_of_the_next_process, .timeout = 60)
{
    char path[] = "/tmp/cask-perfmodel-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    unlink(path);   /* (a missing file is an empty model) */
    setenv("CASK_PERFMODEL", path, 1);
    cpu_us = 200;
    gpu_us = 20000;
    start();
    calibrate();
    cask_shutdown(rt);
    FILE *f = fopen(path, "r");
    cr_assert(f, "the model was not written to %s", path);
    char line[512];
    int lines = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        found |= strncmp(line, "test.costly\t", 12) == 0;
    }
    fclose(f);
    cr_assert(found, "no line of test.costly in %d lines", lines);
    /* a new runtime: no calibration, the CPU from the first batch on */
    start();
    int cpu = run_batch(10);
    cr_assert(cpu >= 8, "only %d of 10 on the CPU workers with the kept model", cpu);
    cask_shutdown(rt);
    unsetenv("CASK_PERFMODEL");
    unlink(path);
}

static cask_status fill_work(cask_task_ctx *ctx)
{
    (void)ctx;
    spin_us(2000);
    return CASK_OK;
}

/* 100 tasks of a kernel without the flag queued on the GPU (2 ms each, priority 0), then
 * 4 of the costly kernel at priority prio (1 ms on the GPU, 20 ms on a CPU worker), ready
 * when the first of the 100 is done. Returns how many of the 4 ran on a CPU worker. */
static int costly_behind_a_queue(int prio)
{
    unsetenv("CASK_PERFMODEL");
    cpu_us = 20000;
    gpu_us = 1000;
    start();
    calibrate();
    cask_kernel *fill;
    cask_kernel_desc fd = { .name = "test.fill", .cpu = fill_work, .cuda = never };
    cr_assert_eq(cask_kernel_register(rt, &fd, &fill), CASK_OK);
    enum { NFILL = 100, N = NFILL + 4 };
    cask_data *d[N];
    cask_task *first = NULL;
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(cask_data_create(rt, 4096, &d[i]), CASK_OK);
        /* the 4 after the first fill task: the rest queued by then */
        cask_access a = { d[i], CASK_WRITE };
        cask_task_desc td = { .field_mask = CASK_TASK_PRIORITY | (i < NFILL ? 0 : CASK_TASK_DEPS),
                              .kernel = i < NFILL ? fill : k, .access = &a, .naccess = 1,
                              .priority = i < NFILL ? 0 : prio, .deps = &first, .ndeps = 1 };
        cr_assert_eq(cask_graph_add_task(g, &td, i ? NULL : &first), CASK_OK);
    }
    atomic_store(&ran_cpu, 0);
    atomic_store(&ran_gpu, 0);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cask_graph_destroy(g);
    for (int i = 0; i < N; i++) cask_data_destroy(d[i]);
    cr_assert_eq(atomic_load(&ran_cpu) + atomic_load(&ran_gpu), 4);
    int cpu = atomic_load(&ran_cpu);
    cask_shutdown(rt);
    return cpu;
}

/* A task waits on a GPU only behind what is queued there at its priority level or above:
 * at the top level, the 200 ms of updates queued at priority 0 do not count and it stays
 * on the GPU (1 ms) rather than take 20 ms on a CPU worker (the panel of a tiled
 * factorization at small tiles, where the GPU holds thousands of updates). At the lowest
 * level the whole queue counts and the CPU workers take some (which shows the test can
 * tell). */
Test(perfmodel, a_task_waits_only_behind_work_of_its_priority_or_above, .timeout = 60)
{
    int hi = costly_behind_a_queue(64);
    cr_assert_eq(hi, 0, "%d of 4 top-priority tasks ran on the CPU workers (20x slower "
                 "there), as if behind the GPU's queue of lower priority", hi);
    int lo = costly_behind_a_queue(-64);
    cr_assert_geq(lo, 2, "only %d of 4 lowest-priority tasks ran on the CPU workers, behind "
                  "200 ms queued on the GPU", lo);
}

/* Without the flag, a task that can use a GPU goes to one, as before. */
Test(perfmodel, without_the_flag_gpu_tasks_stay_on_the_gpu, .timeout = 60)
{
    unsetenv("CASK_PERFMODEL");
    cpu_us = 200;
    gpu_us = 2000;
    start();
    cask_kernel_desc d = { .name = "test.plain", .cpu = work, .cuda = never };
    cr_assert_eq(cask_kernel_register(rt, &d, &k), CASK_OK);
    run_batch(4);
    int cpu = run_batch(10);
    cr_assert_eq(cpu, 0, "%d tasks of a kernel without the flag ran on CPU workers", cpu);
    cask_shutdown(rt);
}
