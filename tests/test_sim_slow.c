/* test_sim_slow.c: a simulated GPU slowed as a competing load would (CASK_SIM_GPU_SLOW),
 * and what cask's dynamic placement buys against a static equal split then.
 *
 * The workload is tests/sim_load.h's: waves of tasks that sleep their device time (so
 * that timings hold on a loaded 2-core machine), each wave after a join of the previous
 * one. The static split binds half of each wave to each GPU; cask places the same tasks.
 * Timing checks compare medians of several runs that alternate the two, with margins
 * well below what is measured (bench/RESULTS.md, section 14). */
#include <stdlib.h>
#include "test_helpers.h"
#include "sim_load.h"

TestSuite(sim_slow, .fini = leak_check, .timeout = 240);

/* cask_init with CASK_SIM_GPU_SLOW=spec on 2 simulated GPUs: its status. */
static cask_status init_with(const char *spec)
{
    setenv("CASK_SIM_GPU_SLOW", spec, 1);
    cask_config cfg = { .field_mask = CASK_CONFIG_SIM_GPUS | CASK_CONFIG_NCPU | CASK_CONFIG_NGPU,
                        .sim_gpus = 2, .ncpu = 1, .ngpu = -1 };
    cask_runtime *rt = NULL;
    cask_status st = cask_init(&cfg, &rt);
    unsetenv("CASK_SIM_GPU_SLOW");
    if (rt)
        cask_shutdown(rt);
    return st;
}

Test(sim_slow, bad_slowdowns_are_refused_and_good_ones_accepted)
{
    const char *bad[] = { "1", "1:", "1:0.5", "1:x", "x:3", "-1:3", "16:3", "1:3:5-2", "1:3:5",
                          "1:3:5-5", "1:3,1:2", "1:3;0:2", "1:2000", "5:3" /* only 2 GPUs */ };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(init_with(bad[i]), CASK_ERR_INVALID, "CASK_SIM_GPU_SLOW=\"%s\" accepted", bad[i]);
    const char *good[] = { "1:3", "0:1.5", "1:3:20-140", "1:3:100-", "0:2,1:4:0.5-10" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_expect_eq(init_with(good[i]), CASK_OK, "CASK_SIM_GPU_SLOW=\"%s\" refused", good[i]);
}

/* Median over reps of static / cask times of one workload; also the cask run's tasks
 * per GPU (last rep). */
static double speedup(int waves, int per_wave, int task_us, const char *slow, int reps,
                      int64_t *tasks_gpu1)
{
    double even[2] = { 1.0, 1.0 };
    sim_load_cfg st = { 2, waves, per_wave, task_us, even, slow };
    sim_load_cfg dyn = st;
    dyn.split = NULL;
    double ts[15], tc[15];
    char err[256];
    sim_load_result r;
    cr_assert(reps <= 15);
    for (int i = 0; i < reps; i++) {
        cr_assert_eq(sim_load_run(&st, &r, err, sizeof err), 0, "%s", err);
        ts[i] = r.seconds;
        cr_assert_eq(sim_load_run(&dyn, &r, err, sizeof err), 0, "%s", err);
        tc[i] = r.seconds;
        if (tasks_gpu1)
            *tasks_gpu1 = r.tasks[1];
    }
    double ms = sim_load_median(ts, reps), mc = sim_load_median(tc, reps);
    cr_log_info("sim_slow: %d x %d tasks of %d us, slow \"%s\": static %.1f ms, cask %.1f ms, "
                "speed-up %.2f", waves, per_wave, task_us, slow ? slow : "", ms * 1e3, mc * 1e3, ms / mc);
    return ms / mc;
}

/* The speed-up of cask over the static split, measured again once (more runs) if the
 * first measurement misses `want`: a loaded machine can spoil one set of runs. */
static double speedup_at_least(int waves, int per_wave, int task_us, const char *slow,
                               double want)
{
    double s = speedup(waves, per_wave, task_us, slow, 5, NULL);
    if (s < want)
        s = speedup(waves, per_wave, task_us, slow, 9, NULL);
    return s;
}

Test(sim_slow, slowed_gpu_runs_a_task_factor_times_longer)
{
    /* one task bound to each GPU in turn: GPU 1 slowed 3x takes about 3x as long */
    double one[2] = { 1.0, 0.0 }, other[2] = { 0.0, 1.0 };
    sim_load_cfg c0 = { 2, 1, 1, 20000, one, "1:3" }, c1 = { 2, 1, 1, 20000, other, "1:3" };
    double t0[5], t1[5];
    char err[256];
    sim_load_result r;
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(sim_load_run(&c0, &r, err, sizeof err), 0, "%s", err);
        t0[i] = r.seconds;
        cr_assert_eq(sim_load_run(&c1, &r, err, sizeof err), 0, "%s", err);
        t1[i] = r.seconds;
        cr_assert_eq(r.tasks[1], 1);
    }
    double ratio = sim_load_median(t1, 5) / sim_load_median(t0, 5);
    cr_expect(ratio > 2.4 && ratio < 3.6, "a task on the GPU slowed 3x took %.2fx as long", ratio);
}

/* What dynamic placement must buy, on the CPU: one GPU slowed 3x for the whole run. Waves of 4
 * tasks: the static split waits for the slowed GPU's 2 tasks in every wave (6 task times);
 * cask gives it 1 and the other GPU 3 (3 task times). Without leaving tasks to a faster
 * GPU, the slowed one takes 2 per wave as well (measured 1.0x). */
Test(sim_slow, one_gpu_slowed_3x_cask_at_least_1_3x_faster_than_static_split)
{
    double s = speedup_at_least(8, 4, 5000, "1:3", 1.3);
    cr_expect(s >= 1.3, "cask %.2fx faster than the static equal split (want >= 1.3)", s);
}

/* The same when the GPU is slowed for part of the run only: from 10 ms after the first
 * task (the estimates were learnt at full speed) until 200 ms: most of the static split's
 * run (about 220 ms), the rest of cask's. Measured without late binding: 1.13x. A window
 * that ends early cannot give 1.3x against anything (0-60 ms: at most 1.2x in theory);
 * bench-sim-gpus --window measured those (bench/RESULTS.md, section 14). */
Test(sim_slow, gpu_slowed_3x_for_part_of_the_run_cask_at_least_1_3x_faster)
{
    double s = speedup_at_least(8, 4, 5000, "1:3:10-200", 1.3);
    cr_expect(s >= 1.3, "cask %.2fx faster than the static equal split (want >= 1.3)", s);
}

/* One wave of 16 tasks (bench-knn's shape: 8 chunks per GPU), GPU slowed 3x: the ideal
 * is 2x (12 task times against 24). A guard against losing the balance, not a check of
 * late binding. A GPU worker commits three long tasks before any is timed (real GPUs run
 * them side by side and hold their share of a loaded GPU so: bench/RESULTS.md, section
 * 17); a simulated GPU runs them one after the other, so the slowed one ends with 5 of
 * the 16 and cask gets 1.6x here (2.0x when it committed two); losing the balance gives
 * 1.0x. Tasks of 10 ms: the wave is short, so the few milliseconds a worker thread waits
 * for a core on a loaded machine are a large part of 5 ms tasks (1.46x once, at load 43
 * during a CI run); the bound keeps a margin below 1.6x for them. */
Test(sim_slow, one_wave_of_16_with_one_gpu_slowed_3x_cask_at_least_1_4x_faster)
{
    double s = speedup_at_least(1, 16, 10000, "1:3", 1.4);
    cr_expect(s >= 1.4, "cask %.2fx faster than the static equal split (want >= 1.4)", s);
}

/* Nothing slowed: cask no slower than the static equal split (within noise). */
Test(sim_slow, equal_gpus_cask_not_slower_than_static_split)
{
    double s = speedup(8, 4, 5000, NULL, 5, NULL);
    if (s < 0.9)
        s = speedup(8, 4, 5000, NULL, 9, NULL);
    cr_expect(s >= 0.9, "cask %.2fx the speed of the static equal split (want >= 0.9)", s);
}
