/* prio.h (internal): task priorities as levels. Building a task (runtime/) stores its
 * level; each worker (sched.h) keeps a deque per level. Both include this header, so
 * the graph code needs nothing of the scheduler to build a task. */
#ifndef CASK_RUNTIME_PRIO_H
#define CASK_RUNTIME_PRIO_H

/* Priorities are bucketed into levels, as StarPU's priority schedulers do: each worker
 * has one deque per level and serves the highest non-empty level first. The buckets are
 * logarithmic: 0; +-1; +-(2..3); +-(4..7); ... ; +-(>= 64): 15 levels. */
#define SCHED_PRIO_LEVELS 15
#define SCHED_PRIO_MID 7

static inline int sched_prio_level(int p)
{
    if (p == 0)
        return SCHED_PRIO_MID;
    unsigned a = p > 0 ? (unsigned)p : (unsigned)(-(long)p);
    int b = 32 - __builtin_clz(a);        /* 1 for 1, 2 for 2..3, 3 for 4..7, ... */
    if (b > SCHED_PRIO_MID)
        b = SCHED_PRIO_MID;
    return p > 0 ? SCHED_PRIO_MID + b : SCHED_PRIO_MID - b;
}

#endif
