/* graph_check.c: checking a graph before it runs (cycles, where tasks can run), once per
 * change of the graph. Building keeps what the check needs (roots, successor arrays, the
 * tasks with a big fan-out, whether an edge could close a cycle), so that a graph
 * without priorities and without tasks added while it ran is checked without a pass
 * over its tasks. */
#include <stdlib.h>
#include "runtime/graph.h"
#include "runtime/log.h"
#include "runtime/sched.h"   /* the worker count: one release range per worker */

static int cmp_succ_prio(const void *a, const void *b)
{
    const cask_task *x = *(cask_task *const *)a, *y = *(cask_task *const *)b;
    int px = task_priority(x), py = task_priority(y);
    if (px != py)
        return px < py ? -1 : 1;
    return x->id > y->id ? -1 : (x->id < y->id);
}

static int cmp_root_prio(const void *a, const void *b)
{
    const cask_task *x = *(cask_task *const *)a, *y = *(cask_task *const *)b;
    int px = task_priority(x), py = task_priority(y);
    if (px != py)
        return px > py ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Successor arrays are released in order and pushed on a LIFO deque: sorted by
 * ascending priority, tasks released together run highest priority first; roots sorted
 * by descending priority come out of their ranges in that order. Tasks with a big
 * fan-out get range nodes so that their release can be shared among workers. */
int graph_compact_task(arena *a, cask_task *t, int nw, int by_prio)
{
    size_t k = (size_t)t->nsucc;
    if (by_prio && k > 1)
        qsort(t->succv, k, sizeof *t->succv, cmp_succ_prio);
    if (k >= SCHED_SPLIT_RELEASE && nw > 1) {
        task_cold *c = task_cold_get(a, t);
        if (!c)
            return -1;
        if (!c->release && !(c->release = arena_calloc(a, (size_t)nw * sizeof *c->release)))
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
        deg[i] = graph_task(g, i)->indegree;
        if (deg[i] == 0)
            queue[tail++] = graph_task(g, i);
    }
    while (head < tail) {
        cask_task *t = queue[head++];
        cask_task **sv = task_succ(t);
        for (int32_t j = 0; j < t->nsucc; j++)
            if (--deg[sv[j]->id] == 0)
                queue[tail++] = sv[j];
    }
    cask_status st = CASK_OK;
    if (tail < n) {
        const cask_task *c = NULL;
        for (size_t i = 0; i < n && !c; i++)
            if (deg[i] > 0)
                c = graph_task(g, i);
        graph_fail(g, CASK_ERR_CYCLE, "dependency cycle through task %s (%zu tasks in cycles)",
                   task_name(c), n - tail);
        st = log_error(rt, CASK_ERR_CYCLE, "dependency cycle through task %s", task_name(c));
    }
    free(deg);
    free(queue);
    return st;
}

/* Edges added while the graph ran join their predecessors' arrays (oldest first). */
static int merge_late(cask_graph *g)
{
    task_link *rev = NULL;
    for (task_link *l = g->late; l;) {
        task_link *next = l->next;
        l->next = rev;
        rev = l;
        l = next;
    }
    g->late = NULL;
    for (task_link *l = rev; l; l = l->next) {
        if (graph_push_succ(g, l->pred, l->succ))
            return -1;
    }
    return 0;
}

/* The roots from scratch (tasks were added while the graph ran), and with priorities the
 * successor arrays sorted: one pass over the tasks. */
static int full_pass(cask_graph *g, int nw, int by_prio)
{
    size_t n = g->ntasks, nroots = 0;
    if (g->roots_cap < n) {   /* (not read by workers: the graph is not running) */
        cask_task **r = arena_grow(&g->ar, g->roots, g->roots_cap * sizeof *r, n * sizeof *r);
        if (!r)
            return -1;
        g->roots = r;
        g->roots_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        cask_task *t = graph_task(g, i);
        if (t->indegree == 0)
            g->roots[nroots++] = t;
        if (by_prio && graph_compact_task(&g->ar, t, nw, 1))
            return -1;
    }
    g->nroots = nroots;
    return 0;
}

/* Computes roots, checks for cycles and that every task can run somewhere, and readies
 * the successor arrays. */
cask_status graph_check(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    int nw = rt->sched->nworkers;
    graph_roots_flush(g);
    g->tfast = NULL;   /* the next add takes the general path (graph_task_room): it clears
                          roots_valid and finds the room in the roots again */
    if (g->late && merge_late(g))
        return log_error(rt, CASK_ERR_NOMEM, "graph check");
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
    int any = g->any_priority;
    if (any || g->roots_rescan) {
        if (full_pass(g, nw, any))
            return log_error(rt, CASK_ERR_NOMEM, "graph check");
    } else if (g->roots_stale) {
        /* a task kept as a root got a predecessor later (an edge to an earlier task) */
        size_t k = 0;
        for (size_t i = 0; i < g->nroots; i++)
            if (g->roots[i]->indegree == 0)
                g->roots[k++] = g->roots[i];
        g->nroots = k;
    }
    /* (kept from check to check: a task noted at half the split may reach it later) */
    for (task_link *l = g->bigs; l; l = l->next)
        if (graph_compact_task(&g->ar, l->pred, nw, 0))
            return log_error(rt, CASK_ERR_NOMEM, "graph check");
    if (any)
        qsort(g->roots, g->nroots, sizeof *g->roots, cmp_root_prio);
    g->roots_stale = 0;
    g->roots_rescan = 0;
    g->roots_valid = 1;
    return CASK_OK;
}
