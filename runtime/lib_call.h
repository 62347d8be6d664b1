/* lib_call.h (internal): the runtime's one thread for calls into threaded libraries
 * (cask_task_call_on_lib_thread). */
#ifndef CASK_RUNTIME_LIB_CALL_H
#define CASK_RUNTIME_LIB_CALL_H

#include <pthread.h>

typedef struct lib_caller {
    pthread_mutex_t serial;   /* one call at a time, held across a call */
    pthread_mutex_t mu;       /* the hand-over below */
    pthread_cond_t cv;
    pthread_t thread;
    int started, stop;
    void (*fn)(void *);       /* the call handed over; NULL: none, or it has returned */
    void *arg;
} lib_caller;

void lib_caller_init(lib_caller *c);
/* Stops the thread (if it was started). No call may be under way. */
void lib_caller_destroy(lib_caller *c);
/* Runs fn(arg) on the thread, started on first use, and waits for it; falls back to
 * the calling thread if the thread cannot be started. Thread safe. */
void lib_caller_run(lib_caller *c, void (*fn)(void *), void *arg);

#endif
