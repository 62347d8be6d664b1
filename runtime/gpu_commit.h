/* gpu_commit.h: per-GPU service-time estimates, and whether a GPU worker should commit a
 * task to its device now or leave it queued for a GPU expected to finish it sooner.
 *
 * Why: a GPU worker keeps tasks in flight on its device, and a task launched there can
 * no longer move. When one GPU is slower (a competing load, a smaller card), the tasks
 * it commits near the end of a wave are what everyone waits for while the other GPUs
 * idle. So a worker takes a task only if it would finish it no later than the other GPUs
 * would finish everything still queued, this task included; otherwise it leaves the
 * task in its deque, where the others steal it (late binding). */
#ifndef CASK_SCHED_GPU_COMMIT_H
#define CASK_SCHED_GPU_COMMIT_H

#include <stdint.h>
#include "runtime/sched.h"

/* Estimated service time of one task of k on GPU gpu (ns), 0 if none learnt there yet. */
uint64_t gpu_est(const cask_kernel *k, int gpu);

/* Learns one observed per-task service time of k on GPU gpu: smoothed (1/4), but two
 * samples in a row off by 1.5x the same way (a device that slowed down or recovered)
 * replace it by their mean. One odd sample (groups overlapping on streams, a hiccup)
 * moves it a quarter only. Called by that GPU's worker only. */
void gpu_est_learn(cask_kernel *k, int gpu, uint64_t sample_ns);

/* A GPU's running sum of device time per kernel, over the groups of tasks finished since
 * its last estimate. Groups that run side by side on a GPU's streams finish in bursts:
 * with two in flight, one finishes after the whole of both and the other a moment later,
 * so one group's time says nothing of a task's cost; the sum over as many tasks as were
 * in flight together does (the device time per task, the figure placement and late
 * binding compare across GPUs). Owned by that GPU's worker; zeroed to start. */
typedef struct gpu_est_sum {
    const cask_kernel *kernel;    /* the kernel summed, NULL none */
    uint64_t fp, bytes;           /* the footprint of its first task (perfmodel.h), for
                                     kernels with CASK_KERNEL_COST_MODEL */
    uint64_t ns;
    int tasks, need;
} gpu_est_sum;

/* Adds a finished group of ntasks tasks of k on GPU gpu that took ns of device time (from
 * its issue or the device's previous completion, whichever was later), finished with
 * depth tasks in flight on the device (its own included). A sum of another kernel starts
 * over. Once the sum holds as many tasks as were in flight when it began, their mean is
 * learnt (gpu_est_learn) and the sum starts over: then 1, else 0. */
int gpu_est_add(gpu_est_sum *s, cask_kernel *k, int gpu, int depth, int ntasks, uint64_t ns);
/* Before gpu_est_add of a group whose first task is first: when that starts a new sum of
 * a kernel with CASK_KERNEL_COST_MODEL, notes first's footprint, under which the sum's
 * mean is also learnt for the cost model (perfmodel.h). */
void gpu_est_note_first(gpu_est_sum *s, const struct cask_task *first);

/* After k's estimate changed: if k is timed on every GPU of s, each GPU's time for it
 * against the fastest's becomes that GPU's s->gpu_slow_ppm (a hint for kernels not timed
 * everywhere yet: placement_pick_gpu). Any GPU worker; relaxed atomics. */
void gpu_note_speeds(sched *s, const cask_kernel *k);

/* 1 if GPU worker w should start t now; 0 if another GPU, with what it already has in
 * flight and every GPU task still queued, is expected to finish t clearly sooner. Tasks
 * bound to a device, a single GPU, and kernels not yet timed on every GPU always give 1.
 * This GPU counts the faster of its estimate and its last sample, the others the slower
 * of theirs, so that a task is left only on firm evidence.
 * *others_ns (if not NULL) gets when the other GPUs are expected to be done, from now.
 * Reads the other workers' published state only (no lock). */
int gpu_commit_ok(worker *w, const struct cask_task *t, uint64_t now, uint64_t *others_ns);

#endif
