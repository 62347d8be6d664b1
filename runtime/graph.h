/* graph.h (internal): tasks and graphs. */
#ifndef CASK_RUNTIME_GRAPH_H
#define CASK_RUNTIME_GRAPH_H

#include <pthread.h>
#include <stdatomic.h>
#include "runtime/runtime.h"
#include "runtime/arena.h"
#include "scheduler/sched.h"

typedef struct task_edge {
    struct cask_task *task;
    struct task_edge *next;
} task_edge;

struct cask_task {
    sched_node node;              /* must stay first: tasks sit in inboxes */
    _Atomic int32_t pending;      /* predecessors not yet finished in this run */
    int32_t indegree;
    int32_t nsucc;
    task_edge *succ;              /* built while adding tasks */
    struct cask_task **succv;     /* the same as an array, by ascending priority (at check) */
    struct sched_range *release;  /* big fan-outs: one range node per worker (at check) */
    struct cask_graph *graph;
    cask_kernel *kernel;
    cask_access *access;
    int naccess;
    int8_t level;                 /* priority level index 0..SCHED_PRIO_LEVELS-1 */
    uint8_t where;                /* CASK_WHERE_* allowed, resolved at add */
    int16_t device;               /* preferred GPU, -1 none */
    uint32_t id;
    void *args;
    size_t args_size;
    const char *name;
    int last_worker;              /* where it ran last (traces, tests) */
    int priority;                 /* as given (level is its clamped bucket) */
};

enum { GRAPH_IDLE = 0, GRAPH_RUNNING = 1 };

struct cask_graph {
    cask_runtime *rt;
    arena ar;
    cask_task **tasks;
    size_t ntasks, tasks_cap, nedges;
    cask_task **roots;
    size_t nroots;
    int roots_valid;
    int dirty;                    /* pending counts need a reset before the next run */
    struct cask_data **datas;     /* distinct handles used */
    size_t ndatas, datas_cap;
    sched_range *ranges;          /* one per worker, reused each run */

    _Atomic int64_t remaining;
    _Atomic int failed;
    _Atomic uint64_t ntasks_run;
    int state;
    int done;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    cask_status status;
    char error[CASK_ERRMSG_LEN];
    uint64_t t_submit, t_done;
    uint32_t id;
    uint32_t run;                 /* submissions so far (trace flow ids) */
    void (*fail_hook)(void *arg); /* called once, at the first failure of a run */
    void *fail_hook_arg;
};

/* Records the graph's first failure (later ones are ignored); thread safe. */
void graph_fail(cask_graph *g, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* fn(arg) is called at the first failure of each run (on the failing thread, with no
 * lock of the runtime held), e.g. to end asynchronous tasks that would wait forever.
 * Set before submitting. */
void graph_set_fail_hook(cask_graph *g, void (*fn)(void *arg), void *arg);
/* Formats "task NAME (kernel K, data a [R], b [W])" into buf. */
void graph_describe_task(const cask_task *t, char *buf, size_t len);
/* Called when remaining reaches 0. */
void graph_finish(cask_graph *g);

static inline int task_can_cpu(const cask_task *t)
{
    return (t->where & CASK_WHERE_CPU) != 0;
}
static inline int task_can_gpu(const cask_task *t)
{
    return (t->where & CASK_WHERE_GPU) != 0;
}

#endif
