/* perfmodel.h: the cost model that places tasks of kernels with CASK_KERNEL_COST_MODEL
 * on a CPU worker or a GPU, whichever is expected to finish them first (StarPU's dmda:
 * expected finish = work queued there + input copies + the task's own time).
 *
 * A task's own time comes from what tasks of its kernel took on that kind of worker at
 * the same footprint (a hash of its buffers' sizes), learnt as they run: CPU workers
 * time the kernel call, GPU workers the device time per task of a finished group
 * (gpu_commit.h). A footprint not timed on a kind is predicted from the kernel's other
 * footprints there, by a least-squares line of log time against log bytes (two sizes at
 * least); with no prediction, one task at a time goes there to be timed (calibration).
 * The times are kept in the kernel (runtime/perf_data.h) and between runs in a file
 * (runtime/perf_file.c). */
#ifndef CASK_SCHED_PERFMODEL_H
#define CASK_SCHED_PERFMODEL_H

#include <stdint.h>
#include "runtime/sched.h"
#include "runtime/graph.h"

/* t's footprint (never 0), and its buffers' total bytes in *bytes. */
uint64_t perf_footprint(const struct cask_task *t, uint64_t *bytes);

/* Learns one measured time of a task of k at footprint fp on a kind (PERF_CPU/GPU). */
void perf_learn(cask_kernel *k, uint64_t fp, uint64_t bytes, int kind, uint64_t ns);

/* The time of one task of k at (fp, bytes) on kind: measured, else predicted from other
 * sizes; 0 if neither. *measured (may be NULL): 1 if measured at this footprint. */
uint64_t perf_estimate(const cask_kernel *k, uint64_t fp, uint64_t bytes, int kind,
                       int *measured);

/* WORKER_CPU or WORKER_GPU for a ready task t that could run on either (its kernel has
 * CASK_KERNEL_COST_MODEL, both implementations, no device named). Marks a CPU choice
 * (TASK_COSTED_CPU) and counts it in the CPU backlog. */
int perf_choose(sched *s, struct cask_task *t);

/* A CPU worker finished t: if the cost model sent it there, out of the backlog. */
void perf_cpu_done(sched *s, struct cask_task *t);

/* 1 if placement should ask perf_choose about t. */
static inline int perf_wants(const sched *s, const struct cask_task *t)
{
    return (t->kernel->flags & CASK_KERNEL_COST_MODEL) && t->kernel->cpu && t->kernel->cuda &&
           task_can_cpu(t) && s->ncpu > 0 && t->device < 0;
}

#endif
