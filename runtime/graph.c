/* graph.c: building task graphs (sequential task flow from access modes, explicit
 * edges), checking them (cycles, where tasks can run, busy data), running and waiting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/graph.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/subflow.h"
#include "scheduler/sched.h"

_Static_assert(sizeof(struct cask_task) == 96, "a task is 96 bytes (see graph.h)");
_Static_assert(offsetof(struct cask_task, where) == offsetof(struct cask_task, node.kind) + 1 &&
               offsetof(struct cask_task, ord) + 4 == offsetof(struct cask_task, pending),
               "a task's fields in its node's spare bytes, after kind");

static _Atomic uint32_t next_graph_id = 1;  /* ids only: never reused, so a stale id in a
                                              data handle cannot match a new graph */

cask_status cask_graph_create(cask_runtime *rt, cask_graph **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    cask_graph *g = calloc(1, sizeof *g);
    if (!g)
        return log_error(rt, CASK_ERR_NOMEM, "cask_graph_create");
    g->rt = rt;
    g->can = (rt->ncpu > 0 ? CASK_WHERE_CPU : 0) | (rt->ngpu > 0 ? CASK_WHERE_GPU : 0);
    arena_init(&g->ar, &rt->graph_pool);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->id = atomic_fetch_add(&next_graph_id, 1);
    g->done = 1;
    pthread_mutex_lock(&rt->lock);
    g->all_next = rt->graphs;
    if (rt->graphs)
        rt->graphs->all_prev = g;
    rt->graphs = g;
    pthread_mutex_unlock(&rt->lock);
    *out = g;
    return CASK_OK;
}

/* Keeps "every edge goes to a higher ord" after the edge before -> after went against
 * it (an edge to a task added earlier, as a fan-in's sink added first): raises the ords
 * of after and what follows it, as far as needed. A cycle shows as reaching `before`;
 * a long walk gives up. Either way the check then runs Kahn's algorithm, so that graphs
 * built in order (access modes, edges to later or newly placed tasks) skip it. */
static __attribute__((noinline)) void reorder(cask_graph *g, cask_task *before,
                                              cask_task *after)
{
    enum { WALK = 64 };
    cask_task *stack[WALK];
    int n = 0, visited = 0;
    after->ord = before->ord + 1;
    stack[n++] = after;
    while (n) {
        cask_task *t = stack[--n];
        if (t->ord >= g->next_ord)
            g->next_ord = t->ord + 1;
        cask_task **sv = task_succ(t);
        for (int32_t i = 0; i < t->nsucc; i++) {
            cask_task *s = sv[i];
            if (s->ord > t->ord)
                continue;
            if (s == before || ++visited > WALK || n == WALK) {
                g->maybe_cyclic = 1;   /* a cycle, or too far to follow */
                return;
            }
            s->ord = t->ord + 1;
            stack[n++] = s;
        }
    }
}

/* pred's successors are full (one inline, or an array of 4, 8, 16, ...): the next
 * array, out of line. */
static __attribute__((noinline)) int grow_succ(arena *a, cask_task *pred)
{
    int32_t n = pred->nsucc;
    cask_task **v = n == 1 ? arena_alloc(a, 4 * sizeof *v)
                           : arena_grow(a, pred->succv, (size_t)n * sizeof *v,
                                        2 * (size_t)n * sizeof *v);
    if (!v)
        return -1;
    if (n == 1)
        v[0] = pred->succ1;
    pred->succv = v;   /* the same field as succ1 */
    return 0;
}

/* Whether succ is already pred's last successor (a repeated edge; succ1 is NULL with
 * none). */
static inline int succ_is_last(cask_task *pred, const cask_task *succ)
{
    int32_t n = pred->nsucc;
    return (n > 1 ? pred->succv[n - 1] : pred->succ1) == succ;
}

/* Appends succ to pred's successors where that needs no call: room in the list, or a
 * second successor (its array of 4 taken from a here). 0, or -1 when push_succ must do it
 * (a list of 4, 8, ... full, the fan-out reaching SCHED_SPLIT_RELEASE, a full block). */
static inline int push_succ_quick(arena *a, cask_task *pred, cask_task *succ)
{
    int32_t n = pred->nsucc;
    cask_task **sv = n > 1 ? pred->succv : &pred->succ1;
    if (__builtin_expect((n >= 4 && (n & (n - 1)) == 0) || n + 1 == SCHED_SPLIT_RELEASE ||
                         (n == 1 && (size_t)(a->end - a->cur) < 4 * sizeof *sv), 0))
        return -1;
    if (n == 1) {   /* a second successor, the most common growth */
        sv = (cask_task **)a->cur;
        a->cur += 4 * sizeof *sv;
        sv[0] = pred->succ1;
        pred->succv = sv;
    }
    sv[n] = succ;   /* n 0: succ1 */
    pred->nsucc = n + 1;
    return 0;
}

static inline int push_succ(arena *a, cask_task *pred, cask_task *succ)
{
    int32_t n = pred->nsucc;
    /* the first successor inline (succ1); then arrays of 4, 8, 16, ... */
    if (__builtin_expect(n == 1 || (n >= 4 && (n & (n - 1)) == 0), 0) && grow_succ(a, pred))
        return -1;
    (n ? pred->succv : &pred->succ1)[n] = succ;   /* (n 1: the array just made) */
    pred->nsucc = n + 1;
    return 0;
}

/* A task whose fan-out just reached SCHED_SPLIT_RELEASE: the check gives it release
 * ranges. */
int graph_note_big(cask_graph *g, cask_task *t)
{
    task_link *l = arena_alloc(&g->ar, sizeof *l);
    if (!l)
        return -1;
    l->pred = t;
    l->succ = NULL;
    l->next = g->bigs;
    g->bigs = l;
    return 0;
}

/* after has one more predecessor: its counts, and the roots kept while building. */
static inline void count_pred(cask_graph *g, cask_task *after)
{
    if (after->indegree++ == 0 && g) {
        /* no longer a root: usually the task just added (its edges come right after it) */
        if (g->nroots && g->roots[g->nroots - 1] == after)
            g->nroots--;
        else
            g->roots_stale = 1;
    }
    /* the count a run starts from: kept equal to indegree while building, so that the
     * first run needs no pass over the tasks */
    atomic_store_explicit(&after->pending, after->indegree, memory_order_relaxed);
}

/* add_edge's every case (a subflow's edge, a successor array to grow, a big fan-out, an
 * edge against the order), out of line. */
static __attribute__((noinline)) int add_edge_slow(cask_graph *g, arena *a, cask_task *before,
                                                   cask_task *after)
{
    if (push_succ(a, before, after))
        return -1;
    count_pred(g, after);
    if (g) {
        g->nedges++;
        g->roots_valid = 0;
        if (before->nsucc == SCHED_SPLIT_RELEASE && graph_note_big(g, before))
            return -1;
        if (before->ord >= after->ord)
            reorder(g, before, after);
    }
    return 0;
}

/* An edge before -> after (g NULL: between children of a subflow); a repeat of before's
 * last edge is dropped. 0, or -1 out of memory. */
static inline __attribute__((always_inline)) int add_edge(cask_graph *g, arena *a, cask_task *before, cask_task *after)
{
    if (before == after || succ_is_last(before, after))
        return 0;
    if (__builtin_expect(!g, 0))
        return add_edge_slow(g, a, before, after);
    if (__builtin_expect(before->ord >= after->ord, 0)) {
        /* against the order: after, with no successor yet (a fan-in's sink added before
         * its predecessors), just moves past before; else reorder's walk */
        if (after->nsucc)
            return add_edge_slow(g, a, before, after);
        after->ord = before->ord + 1;
        if (after->ord >= g->next_ord)
            g->next_ord = after->ord + 1;
    }
    /* the common case: room in before's successors, nothing (more) to re-place */
    if (__builtin_expect(push_succ_quick(a, before, after), 0))
        return add_edge_slow(g, a, before, after);
    count_pred(g, after);
    g->nedges++;
    g->roots_valid = 0;
    return 0;
}

int graph_note_data(cask_graph *g, cask_data *d)
{
    if (d->stf_graph != g->id) {
        d->stf_graph = g->id;
        d->last_writer = NULL;
        d->readers = NULL;
    }
    if (d->listed_in == g->id)
        return 0;
    if (g->ndatas == g->datas_cap) {
        size_t cap = g->datas_cap ? g->datas_cap * 2 : 16;
        cask_data **n = realloc(g->datas, cap * sizeof *n);
        if (!n)
            return -1;
        g->datas = n;
        g->datas_cap = cap;
    }
    g->datas[g->ndatas++] = d;
    d->listed_in = g->id;
    return 0;
}

/* Every field of a new task written once (no memset of the whole task); priority 0 (a
 * priority, a name, arguments come after, from graph_task_extras). */
static inline __attribute__((always_inline)) void init_task(cask_task *t, cask_graph *g,
                                                            cask_kernel *k, uint32_t where,
                                                            int na, cask_access *acc,
                                                            int device, uint32_t ord, uint32_t id)
{
    t->node.next = NULL;
    t->node.kind = SCHED_NODE_TASK;
    t->where = (uint8_t)where;
    t->naccess = (uint8_t)na;
    t->level = (int8_t)sched_prio_level(0);
    t->ord = ord;
    atomic_init(&t->pending, 0);
    atomic_init(&t->done_run, 0);
    t->indegree = 0;
    t->nsucc = 0;
    t->succ1 = NULL;   /* add_edge compares it with the task it adds */
    t->graph = g;
    t->kernel = k;
    t->access = acc;
    t->args = NULL;
    atomic_init(&t->dyn, 0);
    atomic_init(&t->cold, NULL);
    t->id = id;
    t->last_worker = -1;
    t->device = (int8_t)device;
    t->flags = 0;
}

static inline __attribute__((always_inline)) cask_status make_task(cask_graph *g, arena *ar, const cask_task_desc *desc,
                                      const char *call, cask_task **out)
{
    cask_kernel *k = desc->kernel;
    int na = desc->naccess;
    uint64_t mask = desc->field_mask;
    /* the checks, with their messages out of line; the access loop only with buffers */
    if (__builtin_expect(!k || (unsigned)na > CASK_MAX_BUFFERS || (na && !desc->access), 0))
        return graph_bad_task(g, desc, call);
    for (int i = 0; i < na; i++) {
        const cask_access *a = &desc->access[i];
        if (__builtin_expect(!a->data || a->mode < CASK_READ || a->mode > CASK_RW ||
                             a->data->rt != g->rt, 0))
            return graph_bad_task(g, desc, call);
    }
    if (__builtin_expect((mask & CASK_TASK_ARGS) &&
                         ((desc->args_size && !desc->args) || desc->args_size > UINT32_MAX), 0))
        return graph_bad_task(g, desc, call);
    uint32_t where = k->where_any;
    int device = -1;
    if (__builtin_expect(mask & (CASK_TASK_WHERE | CASK_TASK_DEVICE), 0) || !where) {
        cask_status st = graph_task_placement(g, desc, call, &where, &device);
        if (st)
            return st;
    }

    cask_task *t = arena_alloc(ar, sizeof *t);
    /* tasks are written to memory that is not in cache (a big graph's blocks were last
     * used by the graph before): ask for the lines of the next tasks now, so that their
     * stores do not wait for them */
    __builtin_prefetch(ar->cur + 8 * sizeof *t, 1);
    __builtin_prefetch(ar->cur + 8 * sizeof *t + 64, 1);
    cask_access *acc = na ? arena_alloc(ar, (size_t)na * sizeof *acc) : NULL;
    if (!t || (na && !acc))
        return log_error(g->rt, CASK_ERR_NOMEM, "%s(%s)", call, k->name);
    if (na)
        memcpy(acc, desc->access, (size_t)na * sizeof *acc);
    init_task(t, g, k, where, na, acc, device, 0, 0);
    if (__builtin_expect(mask & (CASK_TASK_ARGS | CASK_TASK_NAME | CASK_TASK_PRIORITY), 0) &&
        graph_task_extras(ar, t, desc))
        return log_error(g->rt, CASK_ERR_NOMEM, "%s(%s)", call, k->name);
    *out = t;
    return CASK_OK;
}

/* What the check needs to know of t, kept as tasks are added (so that it needs one
 * pass over the tasks): a priority, a task no worker can run. */
static inline void note_task(cask_graph *g, cask_task *t)
{
    g->any_priority |= task_priority(t) != 0;
    if (__builtin_expect(!(t->where & g->can), 0) && !g->unrunnable)
        g->unrunnable = t;
}

void graph_orphan_all(cask_runtime *rt)
{
    pthread_mutex_lock(&rt->lock);
    for (cask_graph *g = rt->graphs; g; g = g->all_next) {
        g->orphan = 1;
        g->ar.pool = NULL;
    }
    rt->graphs = NULL;
    pthread_mutex_unlock(&rt->lock);
}

/* Appends t to g->tasks and, when built (not added while running), to the roots kept
 * while building: it has no predecessor yet. */
/* Doubles (from 256) the task pointer array *v of capacity *cap in g's arena: a big
 * graph's comes from the pool's spares. -1 out of memory (*v untouched). */
static int grow_list(cask_graph *g, cask_task ***v, size_t *cap)
{
    size_t n = *cap ? *cap * 2 : 256;
    cask_task **a = arena_grow(&g->ar, *v, *cap * sizeof *a, n * sizeof *a);
    if (!a)
        return -1;
    *v = a;
    *cap = n;
    return 0;
}

static __attribute__((noinline)) int grow_lists(cask_graph *g, int building)
{
    if (g->ntasks == g->tasks_cap && grow_list(g, &g->tasks, &g->tasks_cap))
        return -1;
    if (building && g->nroots == g->roots_cap && grow_list(g, &g->roots, &g->roots_cap))
        return -1;
    return 0;
}

static inline int append_task(cask_graph *g, cask_task *t, int building)
{
    if (__builtin_expect(g->ntasks == g->tasks_cap || (building && g->nroots == g->roots_cap), 0) &&
        grow_lists(g, building))
        return -1;
    t->id = (uint32_t)g->ntasks;
    t->ord = g->next_ord++;
    g->tasks[g->ntasks++] = t;
    if (building)
        g->roots[g->nroots++] = t;
    else
        g->roots_rescan = 1;   /* the workers read roots while it runs: found at check */
    g->roots_valid = 0;
    return 0;
}

static inline cask_status link_static(cask_graph *g, cask_task *t)
{
    cask_runtime *rt = g->rt;
    cask_access *acc = t->access;
    /* sequential task flow: RAW, WAR and WAW edges in submission order */
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = acc[i].data;
        if (graph_note_data(g, d))
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
        if (d->last_writer && add_edge(g, &g->ar, d->last_writer, t))
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
        if (acc[i].mode & CASK_WRITE) {
            for (reader_list *r = d->readers; r; r = r->next)
                if (add_edge(g, &g->ar, r->task, t))
                    return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
            d->readers = NULL;
        } else {
            reader_list *r = arena_alloc(&g->ar, sizeof *r);
            if (!r)
                return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
            r->task = t;
            r->next = d->readers;
            d->readers = r;
        }
    }
    for (int i = 0; i < t->naccess; i++)
        if (acc[i].mode & CASK_WRITE) {
            acc[i].data->last_writer = t;
            acc[i].data->readers = NULL;
        }
    return CASK_OK;
}

/* The common task, in few instructions: no buffers, arguments, name, priority or
 * placement (deps alone may be given), added while building, with room in the arena and
 * in the lists. NULL when it is not (the general path then makes it, with its checks and
 * messages). */
static inline __attribute__((always_inline)) cask_task *add_plain(cask_graph *g,
                                                                  const cask_task_desc *desc,
                                                                  int *oom)
{
    cask_kernel *k = desc->kernel;
    arena *ar = &g->ar;
    uint64_t mask = desc->field_mask;
    if (__builtin_expect((mask & ~(uint64_t)CASK_TASK_DEPS) || desc->naccess || !k ||
                         !(k->where_any & g->can) || (size_t)(ar->end - ar->cur) < sizeof(cask_task) ||
                         g->ntasks == g->tasks_cap || g->nroots == g->roots_cap, 0))
        return NULL;
    int nd = 0;
    if (mask & CASK_TASK_DEPS) {
        nd = desc->ndeps;
        if (nd < 0 || (nd && !desc->deps))
            return NULL;
        for (int i = 0; i < nd; i++) {
            const cask_task *d = desc->deps[i];
            if (__builtin_expect(!d || d->graph != g || task_sub(d), 0))
                return NULL;
        }
    }
    cask_task *t = (cask_task *)ar->cur;
    ar->cur += sizeof *t;   /* a multiple of 16, as arena_alloc keeps */
    __builtin_prefetch(ar->cur + 8 * sizeof *t, 1);
    __builtin_prefetch(ar->cur + 8 * sizeof *t + 64, 1);
    uint32_t id = (uint32_t)g->ntasks;
    init_task(t, g, k, k->where_any, 0, NULL, -1, g->next_ord++, id);
    g->tasks[id] = t;
    g->ntasks = id + 1;
    g->roots[g->nroots++] = t;
    g->roots_valid = 0;
    /* its edges: t is the newest task (every dep's ord is below its own) and the last
     * root, so only the deps' successor lists change per edge; t's counts once */
    int32_t added = 0;
    for (int i = 0; i < nd; i++) {
        cask_task *p = desc->deps[i];
        if (succ_is_last(p, t))
            continue;   /* named twice */
        if (__builtin_expect(push_succ_quick(ar, p, t), 0) &&
            (push_succ(ar, p, t) || (p->nsucc == SCHED_SPLIT_RELEASE && graph_note_big(g, p)))) {
            *oom = 1;
            break;
        }
        added++;
    }
    if (added) {   /* no longer a root */
        t->indegree = added;
        atomic_store_explicit(&t->pending, added, memory_order_relaxed);
        g->nroots--;
        g->nedges += (size_t)added;
    }
    return t;
}

static cask_status add_task_general(cask_graph *g, const cask_task_desc *desc, cask_task **out);

cask_status cask_graph_add_task(cask_graph *g, const cask_task_desc *desc, cask_task **out)
{
    if (!g || !desc)
        return CASK_ERR_INVALID;
    if (atomic_load_explicit(&g->state, memory_order_acquire) == GRAPH_RUNNING)
        return graph_add_running(g, desc, out);
    int oom = 0;
    cask_task *t = add_plain(g, desc, &oom);
    if (__builtin_expect(t != NULL, 1)) {
        if (__builtin_expect(oom, 0))
            return log_error(g->rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
        if (out)
            *out = t;
        return CASK_OK;
    }
    return add_task_general(g, desc, out);
}

/* cask_graph_add_task's every other case. */
static __attribute__((noinline)) cask_status add_task_general(cask_graph *g,
                                                              const cask_task_desc *desc,
                                                              cask_task **out)
{
    uint64_t mask = desc->field_mask;
    cask_status st;
    if (mask & CASK_TASK_DEPS) {   /* checked before anything is added; messages apart */
        int bad = desc->ndeps < 0 || (desc->ndeps && !desc->deps);
        for (int i = 0; !bad && i < desc->ndeps; i++)
            bad = !desc->deps[i] || desc->deps[i]->graph != g || task_sub(desc->deps[i]);
        if (__builtin_expect(bad, 0))
            return graph_check_deps(g, NULL, desc, "cask_graph_add_task");
    }
    cask_task *t = NULL;
    if ((st = make_task(g, &g->ar, desc, "cask_graph_add_task", &t)))
        return st;
    if (append_task(g, t, 1))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
    note_task(g, t);
    if (t->naccess && (st = link_static(g, t)))
        return st;
    if (mask & CASK_TASK_DEPS)
        for (int i = 0; i < desc->ndeps; i++)
            if (add_edge(g, &g->ar, desc->deps[i], t))
                return log_error(g->rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
    if (out)
        *out = t;
    return CASK_OK;
}

/* Appends t, added while g runs, to g's task list (g->lock held). */
int graph_append_running(cask_graph *g, cask_task *t)
{
    return append_task(g, t, 0);
}

/* cask_task_depend's other cases: tasks of two graphs, children of a subflow, a running
 * graph. */
static __attribute__((noinline)) cask_status depend_other(cask_task *after, cask_task *before)
{
    cask_graph *g = after->graph;
    if (after->graph != before->graph)
        return CASK_ERR_INVALID;
    if (task_sub(after) || task_sub(before))   /* children of a subflow, before they are launched */
        return subflow_depend(after, before);
    return log_error(g->rt, CASK_ERR_STATE, "cask_task_depend(%s after %s): graph is "
                     "running (tasks added while it runs take their order from access "
                     "modes)", task_name(after), task_name(before));
}

cask_status cask_task_depend(cask_task *after, cask_task *before)
{
    if (!after || !before || after == before)
        return CASK_ERR_INVALID;
    cask_graph *g = after->graph;
    if (__builtin_expect(after->graph != before->graph || task_sub(after) || task_sub(before) ||
                         atomic_load_explicit(&g->state, memory_order_acquire) == GRAPH_RUNNING, 0))
        return depend_other(after, before);
    if (add_edge(g, &g->ar, before, after))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_task_depend");
    return CASK_OK;
}

void graph_describe_task(const cask_task *t, char *buf, size_t len)
{
    int n = snprintf(buf, len, "task %s (kernel %s", task_name(t), t->kernel->name);
    static const char *mode[] = {"?", "R", "W", "RW"};
    for (int i = 0; i < t->naccess && n > 0 && (size_t)n < len; i++)
        n += snprintf(buf + n, len - n, "%s%s [%s]", i ? ", " : "; data ",
                      t->access[i].data->name, mode[t->access[i].mode & 3]);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - n, ")");
}

void graph_fail(cask_graph *g, cask_status st, const char *fmt, ...)
{
    int first = 0;
    pthread_mutex_lock(&g->lock);
    if (g->status == CASK_OK) {
        g->status = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error, sizeof g->error, fmt, ap);
        va_end(ap);
        atomic_store(&g->failed, 1);
        first = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (first && g->fail_hook)
        g->fail_hook(g->fail_hook_arg);
}

void graph_set_fail_hook(cask_graph *g, void (*fn)(void *arg), void *arg)
{
    g->fail_hook = fn;
    g->fail_hook_arg = arg;
}

cask_status cask_graph_destroy(cask_graph *g)
{
    if (!g)
        return CASK_OK;
    pthread_mutex_lock(&g->lock);
    int busy = !g->done;
    pthread_mutex_unlock(&g->lock);
    if (busy)
        return log_error(g->rt, CASK_ERR_BUSY, "cask_graph_destroy: graph is running");
    if (!g->orphan) {
        cask_runtime *rt = g->rt;
        pthread_mutex_lock(&rt->lock);
        if (g->all_prev)
            g->all_prev->all_next = g->all_next;
        else
            rt->graphs = g->all_next;
        if (g->all_next)
            g->all_next->all_prev = g->all_prev;
        pthread_mutex_unlock(&rt->lock);
    }
    arena_free_all(&g->ar);   /* tasks, roots and all that they point to */
    free(g->datas);
    free(g->ranges);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
    free(g);
    return CASK_OK;
}

/* ---- the same, for the other parts of the runtime ---- */

int graph_push_succ(arena *a, cask_task *pred, cask_task *succ)
{
    return push_succ(a, pred, succ);
}

int graph_add_edge(cask_graph *g, arena *a, cask_task *before, cask_task *after)
{
    return add_edge(g, a, before, after);
}

cask_status graph_make_task(cask_graph *g, arena *ar, const cask_task_desc *desc,
                            const char *call, cask_task **out)
{
    return make_task(g, ar, desc, call, out);
}

void graph_note_task(cask_graph *g, cask_task *t)
{
    return note_task(g, t);
}

cask_status graph_link_static(cask_graph *g, cask_task *t)
{
    return link_static(g, t);
}
