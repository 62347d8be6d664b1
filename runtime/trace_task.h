/* trace_task.h (internal): what the runtime records in a trace (tasks, copies,
 * dependency arrows) and on which track, over the generic recorder of trace.h. */
#ifndef CASK_RUNTIME_TRACE_TASK_H
#define CASK_RUNTIME_TRACE_TASK_H

#include <stdio.h>
#include "runtime/graph.h"

typedef struct trace_state trace_state;

/* Opens rt->trace for rt->cfg.trace_path (tracks: CPU workers, then per GPU its compute
 * streams and copy engines). */
cask_status trace_task_open(cask_runtime *rt);
/* Writes (if write) and frees rt->trace. */
cask_status trace_task_close(cask_runtime *rt, int write);

int trace_track_cpu(const trace_state *ts, int worker);
int trace_track_gpu(const trace_state *ts, int gpu, int stream);
int trace_track_copy(const trace_state *ts, int gpu, int which);   /* DEV_STREAM_H2D/D2H/PEER */

/* A task ran on track over [t0, t1]: its slice, and the arrow from the task that
 * released it. Returns the end of the slice as recorded (at least t0 + 1), the time to
 * give trace_release for the arrows it starts. */
uint64_t trace_task(trace_state *ts, int track, const cask_task *t, uint64_t t0, uint64_t t1);
/* The worker that just finished a task (ending at t_end) released succ. */
void trace_release(trace_state *ts, int track, const cask_task *succ, uint64_t t_end);
/* A copy of `bytes` of data `data_id` on track over [t0, t1]. */
void trace_copy(trace_state *ts, int track, const char *what, uint32_t data_id, size_t bytes,
                int device, uint64_t t0, uint64_t t1);

#endif
