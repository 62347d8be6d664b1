/* lib_call.c: the runtime's thread for calls into threaded libraries.
 *
 * A threaded BLAS (OpenBLAS) or an OpenMP runtime keeps a pool of threads, which the OS
 * places, and the thread that calls in works beside them. Called from whichever worker
 * runs the task, each call came from another thread, woken on a core where one of the
 * pool's threads had been running: the two shared a core until the OS moved one, and
 * every thread of the call waited for the slowest. One cblas_sgemm of 2048^2 on 16 Xeon
 * cores took 20.9 ms called from the task's worker (2 workers taking turns) against 15.8
 * ms from 1 worker and 16.3-16.6 ms from the program's main thread (docs/arrays.md). So
 * such calls are handed to one thread of the runtime, always the same, started on first
 * use and unbound (it keeps the affinity of the thread that started the runtime's first
 * call: the process's cores); the task's worker sleeps until the call returns. */
#include <stdio.h>
#include "runtime/lib_call.h"

void lib_caller_init(lib_caller *c)
{
    pthread_mutex_init(&c->serial, NULL);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->started = c->stop = 0;
    c->fn = NULL;
    c->arg = NULL;
}

static void *lib_caller_main(void *arg)
{
    lib_caller *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->fn && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->fn)
            break;
        void (*fn)(void *) = c->fn;
        void *a = c->arg;
        pthread_mutex_unlock(&c->mu);
        fn(a);
        pthread_mutex_lock(&c->mu);
        c->fn = NULL;   /* done: the waiter sees it */
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

void lib_caller_run(lib_caller *c, void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&c->serial);
    pthread_mutex_lock(&c->mu);
    if (!c->started && pthread_create(&c->thread, NULL, lib_caller_main, c) == 0)
        c->started = 1;
    if (!c->started) {   /* no thread: call here */
        pthread_mutex_unlock(&c->mu);
        fn(arg);
        pthread_mutex_unlock(&c->serial);
        return;
    }
    c->fn = fn;
    c->arg = arg;
    pthread_cond_broadcast(&c->cv);
    while (c->fn)   /* one call at a time (serial): NULL again when it has returned */
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&c->serial);
}

void lib_caller_destroy(lib_caller *c)
{
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_broadcast(&c->cv);
    int started = c->started;
    pthread_mutex_unlock(&c->mu);
    if (started)
        pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->serial);
}
