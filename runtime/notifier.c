/* notifier.c: see notifier.h. The seq_cst fences pair a pusher's "publish work, then
 * read sleepers" with a waiter's "count as sleeper, then look for work", so one of the
 * two always sees the other (no lost wake-up). */
#include <errno.h>
#include <time.h>
#include "runtime/notifier.h"
#include "runtime/deadline.h"

int notifier_init(notifier *n)
{
    atomic_init(&n->epoch, 0);
    atomic_init(&n->sleepers, 0);
    if (pthread_mutex_init(&n->lock, NULL))
        return -1;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&n->cond, &a);
    pthread_condattr_destroy(&a);
    return rc ? -1 : 0;
}

void notifier_destroy(notifier *n)
{
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->lock);
}

uint64_t notifier_prepare(notifier *n)
{
    uint64_t e = atomic_load_explicit(&n->epoch, memory_order_acquire);
    atomic_fetch_add_explicit(&n->sleepers, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    return e;
}

void notifier_cancel(notifier *n)
{
    atomic_fetch_sub_explicit(&n->sleepers, 1, memory_order_relaxed);
}

void notifier_commit(notifier *n, uint64_t epoch, uint64_t timeout_ns)
{
    pthread_mutex_lock(&n->lock);
    if (timeout_ns) {
        struct timespec ts;
        deadline_after_ns(&ts, CLOCK_MONOTONIC, timeout_ns);
        while (atomic_load_explicit(&n->epoch, memory_order_relaxed) == epoch)
            if (pthread_cond_timedwait(&n->cond, &n->lock, &ts) == ETIMEDOUT)
                break;
    } else {
        while (atomic_load_explicit(&n->epoch, memory_order_relaxed) == epoch)
            pthread_cond_wait(&n->cond, &n->lock);
    }
    pthread_mutex_unlock(&n->lock);
    atomic_fetch_sub_explicit(&n->sleepers, 1, memory_order_relaxed);
}

void notifier_notify(notifier *n, int all)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&n->sleepers, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&n->lock);
    atomic_fetch_add_explicit(&n->epoch, 1, memory_order_release);
    if (all)
        pthread_cond_broadcast(&n->cond);
    else
        pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->lock);
}
