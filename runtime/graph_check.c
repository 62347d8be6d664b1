/* graph_check.c: checking a graph before it runs (cycles, where tasks can run) and
 * turning its successor lists into arrays, once per change of the graph. */
#include <stdlib.h>
#include "runtime/graph.h"
#include "runtime/log.h"

static int cmp_edge_prio(const void *a, const void *b)
{
    const task_edge *x = *(task_edge *const *)a, *y = *(task_edge *const *)b;
    if (x->task->priority != y->task->priority)
        return x->task->priority < y->task->priority ? -1 : 1;
    return x->task->id > y->task->id ? -1 : (x->task->id < y->task->id);
}

static int cmp_root_prio(const void *a, const void *b)
{
    const cask_task *x = *(cask_task *const *)a, *y = *(cask_task *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Successor lists become arrays (released in order, pushed on a LIFO deque): sorted by
 * ascending priority, tasks released together run highest priority first; roots sorted
 * by descending priority come out of their ranges in that order. Tasks with a big
 * fan-out get range nodes so that their release can be shared among workers. Done once
 * per change of the graph, so it costs nothing per run. tmp (by_prio only) holds nsucc
 * entries. */
int graph_compact_task(arena *a, cask_task *t, int nw, int by_prio, task_edge **tmp,
                       int count_list)
{
    t->succv = NULL;
    t->release = NULL;
    size_t k = (size_t)t->nsucc;
    if (count_list) {
        /* edges added while the graph ran are in the list only (a running task's nsucc
         * must not change under the worker releasing its successors) */
        k = 0;
        for (task_edge *e = t->succ; e; e = e->next)
            k++;
        t->nsucc = (int32_t)k;
    }
    if (k == 0)
        return 0;
    if (k == 1) {   /* the most common case: the edge itself holds the array */
        t->succv = &t->succ->task;
        return 0;
    }
    cask_task **v = arena_alloc(a, k * sizeof *v);
    if (!v)
        return -1;
    if (by_prio) {
        size_t n = 0;
        for (task_edge *e = t->succ; e; e = e->next)
            tmp[n++] = e;
        qsort(tmp, k, sizeof *tmp, cmp_edge_prio);
        for (size_t j = 0; j < k; j++)
            v[j] = tmp[j]->task;
    } else {   /* the list is newest first: release in the order tasks were added */
        size_t j = k;
        for (task_edge *e = t->succ; e; e = e->next)
            v[--j] = e->task;
    }
    t->succv = v;
    if (k >= SCHED_SPLIT_RELEASE && nw > 1) {
        t->release = arena_calloc(a, (size_t)nw * sizeof *t->release);
        if (!t->release)
            return -1;
    }
    return 0;
}

/* Kahn's algorithm, only for graphs with an explicit edge to an earlier task (edges from
 * access modes and to later tasks cannot close a cycle). */
static cask_status find_cycle(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    size_t n = g->ntasks;
    int32_t *deg = malloc((n ? n : 1) * sizeof *deg);
    cask_task **queue = malloc((n ? n : 1) * sizeof *queue);
    if (!deg || !queue) {
        free(deg);
        free(queue);
        return log_error(rt, CASK_ERR_NOMEM, "graph check");
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++) {
        deg[i] = g->tasks[i]->indegree;
        if (deg[i] == 0)
            queue[tail++] = g->tasks[i];
    }
    while (head < tail) {
        cask_task *t = queue[head++];
        for (task_edge *e = t->succ; e; e = e->next)
            if (--deg[e->task->id] == 0)
                queue[tail++] = e->task;
    }
    cask_status st = CASK_OK;
    if (tail < n) {
        const cask_task *c = NULL;
        for (size_t i = 0; i < n && !c; i++)
            if (deg[i] > 0)
                c = g->tasks[i];
        graph_fail(g, CASK_ERR_CYCLE, "dependency cycle through task %s (%zu tasks in cycles)",
                   c->name, n - tail);
        st = log_error(rt, CASK_ERR_CYCLE, "dependency cycle through task %s", c->name);
    }
    free(deg);
    free(queue);
    return st;
}

/* Computes roots, checks for cycles and that every task can run somewhere, and makes the
 * successor arrays: one pass over the tasks. */
cask_status graph_check(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    size_t n = g->ntasks;
    free(g->roots);
    g->roots = NULL;
    g->nroots = 0;
    if (g->maybe_cyclic) {
        cask_status st = find_cycle(g);
        if (st)
            return st;
    }
    if (g->unrunnable) {
        char d[256];
        graph_describe_task(g->unrunnable, d, sizeof d);
        graph_fail(g, CASK_ERR_UNSUPPORTED, "%s: no worker can run it (%d CPU workers, %d GPUs)",
                   d, rt->ncpu, rt->ngpu);
        return log_error(rt, CASK_ERR_UNSUPPORTED, "%s: no worker can run it", d);
    }
    int nw = rt->sched->nworkers;
    int any = g->any_priority, count = g->lists_grew;
    size_t maxdeg = 0;
    if (any)
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            for (task_edge *e = g->tasks[i]->succ; e; e = e->next)
                k++;
            if (k > maxdeg)
                maxdeg = k;
        }
    task_edge **tmp = any ? malloc((maxdeg ? maxdeg : 1) * sizeof *tmp) : NULL;
    size_t roots_cap = 64, nroots = 0;
    cask_task **roots = malloc(roots_cap * sizeof *roots);
    if (!roots || (any && !tmp)) {
        free(tmp);
        free(roots);
        return log_error(rt, CASK_ERR_NOMEM, "graph check");
    }
    /* one pass over the tasks (the cycle, priority and can-run facts were kept while
     * building) */
    for (size_t i = 0; i < n; i++) {
        cask_task *t = g->tasks[i];
        /* the walk is bound by cache misses on tasks and on their edges, which sit near
         * the tasks that were added after them: ask for both ahead of time */
        if (i + 16 < n)
            __builtin_prefetch(g->tasks[i + 16]);
        if (i + 8 < n)
            __builtin_prefetch(g->tasks[i + 8]->succ);
        if (t->indegree == 0) {
            if (nroots == roots_cap) {
                cask_task **r = realloc(roots, 2 * roots_cap * sizeof *r);
                if (!r) {
                    free(tmp);
                    free(roots);
                    return log_error(rt, CASK_ERR_NOMEM, "graph check");
                }
                roots = r;
                roots_cap *= 2;
            }
            roots[nroots++] = t;
        }
        if (graph_compact_task(&g->ar, t, nw, any, tmp, count)) {
            free(tmp);
            free(roots);
            return log_error(rt, CASK_ERR_NOMEM, "graph check");
        }
    }
    g->lists_grew = 0;
    free(tmp);
    g->roots = roots;
    g->nroots = nroots;
    if (any)
        qsort(g->roots, g->nroots, sizeof *g->roots, cmp_root_prio);
    g->roots_valid = 1;
    return CASK_OK;
}
