/* graph_build.h (internal): what the paths that add tasks to a graph being built share
 * (graph.c, one task at a time; graph_batch.c, from arrays). Callers are the graph's one
 * builder. */
#ifndef CASK_RUNTIME_GRAPH_BUILD_H
#define CASK_RUNTIME_GRAPH_BUILD_H

#include "runtime/graph.h"

/* Tasks are written to memory that is not in cache (a big graph's blocks were last used
 * by the graph before): the lines of the task 8 places on are asked for as each task is
 * made, so that its stores do not wait for them. */
#define TASK_PREFETCH(t)                                                                  \
    do {                                                                                  \
        __builtin_prefetch((t) + 8, 1);                                                   \
        __builtin_prefetch((char *)((t) + 8) + 64, 1);                                    \
    } while (0)

/* Every field of a new task written once (no memset of the whole task); priority 0 (a
 * priority, a name, arguments come after, from graph_task_extras). */
static inline __attribute__((always_inline)) void init_task(cask_task *t, cask_graph *g,
                                                            cask_kernel *k, uint32_t where,
                                                            int na, cask_access *acc,
                                                            int device, uint32_t ord, uint32_t id,
                                                            int32_t npred)
{
    /* in the order of the fields, so that neighbours are written together */
    t->node.next = NULL;
    t->node.kind = SCHED_NODE_TASK;
    t->where = (uint8_t)where;
    t->naccess = (uint8_t)na;
    t->level = (int8_t)sched_prio_level(0);
    t->indegree = npred;
    atomic_init(&t->pending, npred);
    atomic_init(&t->done_run, 0);
    t->id = id;
    t->last_worker = -1;
    t->device = (int8_t)device;
    t->flags = 0;
    t->nsucc = 0;
    t->ord = ord;
    t->succ1 = NULL;   /* add_edge compares it with the task it adds */
    t->graph = g;
    atomic_init(&t->cold, NULL);
    t->kernel = k;
    t->access = acc;
    t->args = NULL;
    atomic_init(&t->dyn, 0);
}

/* A plain task naming up to this many deps links them with the arena's free pointer in a
 * register (add_plain_deps, cask_graph_add_batch), in a block with an array of 4 free per
 * dep. */
#define PLAIN_DEPS_ROOM 64
/* A longer list (a fan-in's sink, its deps built long before and out of cache) asks for
 * the deps this far ahead of the one it links. */
#define PLAIN_DEPS_AHEAD 16

/* Room for g's next task at g->tcur (a new slab if need be) and, when building (not added
 * while running), the room kept in the roots; sets g->tfast (graph.h). -1 out of memory. */
int graph_task_room(cask_graph *g, int building) __attribute__((noinline));

/* g's newest task t (at g->tcur), with npred predecessors: counted, and a root while it
 * has none. */
static inline __attribute__((always_inline)) void append_plain(cask_graph *g, cask_task *t,
                                                               cask_kernel *k, int32_t npred)
{
    uint32_t id = (uint32_t)g->ntasks;
    init_task(t, g, k, k->where_any, 0, NULL, -1, g->next_ord++, id, npred);
    g->tcur = t + 1;
    g->ntasks = id + 1;
    graph_roots_keep(g, t);   /* (roots_valid: cleared by graph_task_room, see tfast) */
}

#endif
