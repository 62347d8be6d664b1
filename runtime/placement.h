/* placement.h: which kind of worker a ready task goes to, and which GPU. */
#ifndef CASK_SCHED_PLACEMENT_H
#define CASK_SCHED_PLACEMENT_H

#include "runtime/sched.h"

/* WORKER_GPU if the task can and should run on a GPU, else WORKER_CPU. */
int placement_kind(const sched *s, const struct cask_task *t);
/* Index (in s->w) of the GPU worker for t, by policy: the task's device if it names
 * one; locality: the GPU holding most of its input bytes unless that GPU's queue is far
 * longer than the shortest or less than half of its input bytes are there; eager: the
 * shortest queue; ws: round-robin. A queue counts the work committed to its device as
 * one more task; once t's kernel has a service time on every GPU (gpu_commit.h), the
 * "shortest" is the GPU expected to finish t first. */
int placement_pick_gpu(sched *s, const struct cask_task *t);
/* A GPU worker stole task t queued on another. */
void placement_moved(sched *s, worker *from, worker *to, const struct cask_task *t);
/* d (+1 or -1) tasks placed on GPU worker w not yet started, of t's priority level:
 * w->queued and w->queued_lvl. */
void placement_queued(worker *w, const struct cask_task *t, int d);

#endif
