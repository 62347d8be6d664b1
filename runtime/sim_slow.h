/* sim_slow.h: slowing a simulated GPU as a competing load would (CASK_SIM_GPU_SLOW).
 *
 * A simulated GPU runs a task's CPU code on its worker thread; the time that took is the
 * task's work at full speed. A slowed GPU completes that work on a virtual device clock
 * instead: the device runs one task at a time, and during its slow window it advances
 * at 1/factor of real time. The worker sees the task finish only when the virtual clock
 * says so, so the scheduler meets a slow device exactly as it meets a real GPU with
 * tasks in flight (depth, estimates, stealing). */
#ifndef CASK_RUNTIME_SIM_SLOW_H
#define CASK_RUNTIME_SIM_SLOW_H

#include <stddef.h>
#include <stdint.h>

#define SIM_SLOW_MAX 16

/* One slowed GPU: factor >= 1 between from_ns and to_ns after the origin: when the first
 * task started on a simulated GPU of the runtime. */
typedef struct sim_slow {
    int gpu;
    double factor;
    uint64_t from_ns, to_ns;   /* to_ns = UINT64_MAX: until the end */
} sim_slow;

/* Parses "GPU:FACTOR[:FROM_MS-[TO_MS]][,...]" (e.g. "1:3", "1:3:200-600", "0:2:100-")
 * into out[0..*n-1]. GPU 0..15, each at most once; FACTOR 1..1000; FROM_MS < TO_MS.
 * Returns 0, or -1 with a message in err. */
int sim_slow_parse(const char *s, sim_slow *out, int max, int *n, char *err, size_t errlen);

/* The virtual time at which work_ns of full-speed work that starts at start_ns ends on a
 * GPU slowed by s (NULL: not slowed); origin_ns is when the window's times count from. */
uint64_t sim_slow_finish(const sim_slow *s, uint64_t origin_ns, uint64_t start_ns,
                         uint64_t work_ns);

#endif
