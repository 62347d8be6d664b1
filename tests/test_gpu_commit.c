/* test_gpu_commit.c: what a GPU learns of a kernel's cost from the groups it finishes
 * (runtime/gpu_commit.[ch]). Tasks that run side by side on a GPU's streams finish in
 * bursts: with two in flight, one after the whole of both and the other a moment later.
 * Learnt group by group, such a GPU's estimate swung between the two (on 2 H200s under a
 * competing load: "0.14 ms per task here" for tasks of 3.6 ms), and late binding then
 * committed to the loaded GPU what the other would have finished sooner. Learnt over as
 * many tasks as were in flight together, it is the device time per task. */
#include <stdlib.h>
#include "test_helpers.h"
#include "runtime/runtime.h"
#include "runtime/gpu_commit.h"
#include "runtime/placement.h"
#include "runtime/graph.h"

TestSuite(gpu_commit);

#define MS 1000000ull

/* est within 5% of want */
static void expect_near(uint64_t est, double want_ms, const char *what)
{
    double got = (double)est / (double)MS;
    cr_expect(got > want_ms * 0.95 && got < want_ms * 1.05, "%s: %.3f ms per task, not %.3f",
              what, got, want_ms);
}

/* n pairs of tasks side by side on GPU gpu: the first of each pair finishes first_ns
 * after the task before it, the second 0.2 ms later. */
static void pairs(gpu_est_sum *s, struct cask_kernel *k, int gpu, int n, uint64_t first_ns)
{
    for (int i = 0; i < n; i++) {
        gpu_est_add(s, k, gpu, 2, 1, first_ns);
        gpu_est_add(s, k, gpu, 2, 1, 200000);
    }
}

Test(gpu_commit, two_in_flight_learn_the_device_time_per_task)
{
    struct cask_kernel k = { 0 };
    gpu_est_sum s = { 0 };
    /* pairs on two streams: 2.75 ms of device time per task */
    pairs(&s, &k, 0, 12, 5300000);
    expect_near(gpu_est(&k, 0), 2.75, "pairs");
    /* and the sum's phase does not matter: it may begin with the short one */
    struct cask_kernel k2 = { 0 };
    gpu_est_sum s2 = { 0 };
    gpu_est_add(&s2, &k2, 1, 2, 1, 200000);
    pairs(&s2, &k2, 1, 12, 5300000);
    expect_near(gpu_est(&k2, 1), 2.75, "pairs, out of phase");
    cr_expect_eq(gpu_est(&k2, 0), 0, "GPU 0 learnt what GPU 1 ran");
}

Test(gpu_commit, waves_of_four_and_one_at_a_time)
{
    struct cask_kernel k = { 0 };
    gpu_est_sum s = { 0 };
    for (int i = 0; i < 8; i++) {   /* 4 side by side: 10.4 ms, then three just after */
        gpu_est_add(&s, &k, 0, 4, 1, 10400000);
        for (int j = 0; j < 3; j++)
            gpu_est_add(&s, &k, 0, 4, 1, 100000);
    }
    expect_near(gpu_est(&k, 0), 2.675, "waves of 4");
    struct cask_kernel one = { 0 };
    gpu_est_sum s1 = { 0 };
    for (int i = 0; i < 5; i++)
        gpu_est_add(&s1, &one, 0, 1, 1, 3 * MS);
    expect_near(gpu_est(&one, 0), 3.0, "one at a time");
    /* a group of 3 tasks: its time is theirs */
    struct cask_kernel grp = { 0 };
    gpu_est_sum sg = { 0 };
    gpu_est_add(&sg, &grp, 0, 3, 3, 6 * MS);
    expect_near(gpu_est(&grp, 0), 2.0, "a group of 3");
}

Test(gpu_commit, another_kernel_starts_the_sum_over)
{
    struct cask_kernel a = { 0 }, b = { 0 };
    gpu_est_sum s = { 0 };
    pairs(&s, &a, 0, 6, 5300000);
    /* a short task of another kernel between two of a's: its time is not a's */
    gpu_est_add(&s, &b, 0, 1, 1, 40000);
    pairs(&s, &a, 0, 1, 5300000);
    expect_near(gpu_est(&a, 0), 2.75, "a, after b");
    expect_near(gpu_est(&b, 0), 0.04, "b");
}

Test(gpu_commit, a_device_that_slows_down_is_followed)
{
    struct cask_kernel k = { 0 };
    gpu_est_sum s = { 0 };
    pairs(&s, &k, 0, 6, 5300000);
    pairs(&s, &k, 0, 10, 7000000);   /* a competing load: 3.6 ms per task from now */
    expect_near(gpu_est(&k, 0), 3.6, "slowed");
}

/* Placement of a task whose kernel is not timed on every GPU: no estimate to compare, so
 * the shortest queue, each GPU weighed by its speed on the last kernel timed on all
 * (gpu_note_speeds). On 2 H200s the reference's one prep task of cask-knn, whose kernel
 * runs once a run and so was timed on one GPU only, went by turns and landed on the GPU
 * with a competing load: 0.45-0.9 ms there against 0.02-0.04, while every search waited
 * for it. */
Test(gpu_commit, a_kernel_not_timed_everywhere_goes_to_the_faster_gpu)
{
    cask_runtime *rt = calloc(1, sizeof *rt);
    sched *s = calloc(1, sizeof *s);
    worker *w = calloc(2, sizeof *w);
    cr_assert(rt && s && w);
    rt->cfg.sched = CASK_SCHED_LOCALITY;
    s->rt = rt;
    s->ngpu = 2;
    s->w = w;
    struct cask_kernel timed = { 0 }, fresh = { 0 };
    /* a kernel timed on both: GPU 1 takes 3x as long */
    gpu_est_learn(&timed, 0, 2 * MS);
    gpu_est_learn(&timed, 1, 6 * MS);
    gpu_note_speeds(s, &timed);
    cr_expect_eq(atomic_load(&s->gpu_slow_ppm[0]), 1000000u);
    cr_expect_eq(atomic_load(&s->gpu_slow_ppm[1]), 3000000u);
    /* a kernel timed on GPU 1 only (it ran there once): placed 8 times with both queues
       empty, never on GPU 1; by turns, half would be */
    gpu_est_learn(&fresh, 1, 1 * MS);
    cask_task t = { .kernel = &fresh, .device = -1 };
    int on1 = 0;
    for (int i = 0; i < 8; i++)
        on1 += placement_pick_gpu(s, &t) == 1;
    cr_expect_eq(on1, 0, "%d of 8 went to the GPU 3x slower", on1);
    /* a longer queue still moves it: 3 tasks queued on GPU 0 against none on GPU 1 */
    atomic_store(&w[0].queued, 3);
    cr_expect_eq(placement_pick_gpu(s, &t), 1, "GPU 0 with 3 queued is not the shorter wait");
    /* equal GPUs, or speeds not known: by turns, as before */
    atomic_store(&w[0].queued, 0);
    atomic_store(&s->gpu_slow_ppm[1], 0);
    on1 = 0;
    for (int i = 0; i < 8; i++)
        on1 += placement_pick_gpu(s, &t) == 1;
    cr_expect_eq(on1, 4, "speeds unknown: %d of 8 on GPU 1, not by turns", on1);
    free(w);
    free(s);
    free(rt);
}
