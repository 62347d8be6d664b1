/* queue_node.h (internal): what a task or a range of tasks carries so that a worker's
 * inbox can hold it. Tasks and graphs (runtime/graph.h) embed these nodes; the
 * scheduler (sched.h) queues them. Here, so that the graph's types need no
 * scheduler header. */
#ifndef CASK_RUNTIME_QUEUE_NODE_H
#define CASK_RUNTIME_QUEUE_NODE_H

#include <stddef.h>
#include <stdint.h>

/* Something that can sit in a worker's inbox: a task, or a range of a graph's roots. */
typedef struct sched_node {
    struct sched_node *next;
    uint8_t kind;                /* SCHED_NODE_* */
    uint8_t owner[7];            /* the owner's (a task keeps fields there: runtime/graph.h);
                                    named, not padding, so that no store to the node may
                                    treat them as its own */
} sched_node;
enum { SCHED_NODE_TASK = 0, SCHED_NODE_RANGE = 1, SCHED_NODE_RELEASE = 2 };

/* A task releasing at least this many successors shares the work with other workers;
 * a successor waiting for at least SCHED_BIG_FANIN tasks has its count decremented in
 * per-worker batches instead of once per predecessor. */
#define SCHED_SPLIT_RELEASE 512
#define SCHED_BIG_FANIN 64

/* A range of a graph's roots (RANGE), or of a task's successors to release (RELEASE). */
typedef struct sched_range {
    sched_node node;
    struct cask_graph *graph;
    struct cask_task *parent;    /* RELEASE: whose successors */
    size_t begin, end;
} sched_range;

#endif
