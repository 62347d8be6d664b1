/* notifier.h: lets idle workers sleep instead of spinning, and wakes one when work
 * appears. The pusher pays only an atomic load unless someone sleeps (the two-phase
 * wait of Taskflow's notifier / an eventcount). */
#ifndef CASK_SCHED_NOTIFIER_H
#define CASK_SCHED_NOTIFIER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct notifier {
    _Alignas(64) _Atomic uint64_t epoch;
    _Atomic int sleepers;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} notifier;

int notifier_init(notifier *n);
void notifier_destroy(notifier *n);

/* Waiter, phase 1: announce intent to sleep; returns the epoch to pass to commit. The
 * caller must look for work once more after this and call cancel if it finds some. */
uint64_t notifier_prepare(notifier *n);
void notifier_cancel(notifier *n);
/* Waiter, phase 2: sleeps until notified after prepare (or timeout_ns, 0 = none). */
void notifier_commit(notifier *n, uint64_t epoch, uint64_t timeout_ns);

/* After making work visible: wakes one (or all) sleepers, if any. */
void notifier_notify(notifier *n, int all);

#endif
