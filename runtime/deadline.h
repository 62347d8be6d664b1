/* runtime/deadline.h (internal): the absolute time that pthread_cond_timedwait takes, some
 * time from now, on the clock of the condition variable it waits on (CLOCK_REALTIME for
 * the default attributes, CLOCK_MONOTONIC where pthread_condattr_setclock chose it). For
 * the runtime's timed waits: the scheduler's sleeps, the spill threads, the distributed
 * membership and stealing loops, the bootstrap's PMIx fence and the UCX handshakes. */
#ifndef CASK_RUNTIME_DEADLINE_H
#define CASK_RUNTIME_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* *ts: ns nanoseconds after now on clock clk. */
static inline void deadline_after_ns(struct timespec *ts, clockid_t clk, uint64_t ns)
{
    clock_gettime(clk, ts);
    ts->tv_sec += (time_t)(ns / 1000000000u);
    ts->tv_nsec += (long)(ns % 1000000000u);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* *ts: ms milliseconds after now on CLOCK_REALTIME (a condition variable's default). */
static inline void deadline_in(struct timespec *ts, int ms)
{
    deadline_after_ns(ts, CLOCK_REALTIME, (uint64_t)ms * 1000000u);
}

#endif
