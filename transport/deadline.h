/* transport/deadline.h (internal): the absolute time that pthread_cond_timedwait takes,
 * on a condition variable of the default clock (CLOCK_REALTIME), ms milliseconds from
 * now. Used by the bootstrap's PMIx fence and the UCX handshakes. */
#ifndef CASK_TRANSPORT_DEADLINE_H
#define CASK_TRANSPORT_DEADLINE_H

#include <time.h>

static inline void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

#endif
