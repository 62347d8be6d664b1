/* graph.c: building task graphs: tasks in the graph's slabs, the sequential task flow
 * from access modes, explicit edges, the short paths for plain tasks. A graph's creation,
 * failure record and destroy are in graph_life.c; the check in graph_check.c; running
 * and waiting in graph_run.c. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/graph.h"
#include "runtime/graph_build.h"
#include "runtime/graph_succ.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/subflow.h"

_Static_assert(sizeof(struct cask_task) == 96, "a task is 96 bytes (see graph.h)");
_Static_assert(offsetof(struct cask_task, where) == offsetof(struct cask_task, node.kind) + 1 &&
               offsetof(struct cask_task, indegree) + 4 == offsetof(struct cask_task, pending),
               "a task's fields in its node's spare bytes, after kind");
_Static_assert(offsetof(struct cask_task, nsucc) % 32 == 0 &&
               offsetof(struct cask_task, cold) + 8 == offsetof(struct cask_task, nsucc) + 32,
               "what an edge touches of its predecessor: one aligned 32 bytes (graph.h)");

const cask_task graph_no_pend = { .indegree = 1 };

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

/* after has one more predecessor: its counts, and the roots kept while building. */
static inline void count_pred(cask_graph *g, cask_task *after)
{
    int32_t d = after->indegree;
    after->indegree = d + 1;
    /* the count a run starts from: kept equal to indegree while building, so that the
     * first run needs no pass over the tasks */
    atomic_store_explicit(&after->pending, d + 1, memory_order_relaxed);
    /* no longer a root: usually the task just added, kept out of the roots (g->pend)
     * until the next is added; else, at its first predecessor, the roots are filtered at
     * check. The branch is on which task gains the edge, not on which of its edges this
     * is: in a graph built task by task it is the newest, every time. An edge to any
     * other task also voids the check: the newest task is kept aside only between an add
     * (which voided it: graph_task_room, append_task) and the next check (which flushes it),
     * so an edge to it needs no store for that (add_edge_quick). */
    if (g && __builtin_expect(after != g->pend, 0)) {
        g->roots_stale |= d == 0;
        g->roots_valid = 0;
    }
}

/* add_edge's every case (a subflow's edge, a successor array to grow, a big fan-out, an
 * edge against the order), out of line. */
static __attribute__((noinline)) int add_edge_slow(cask_graph *g, arena *a, cask_task *before,
                                                   cask_task *after)
{
    if (succ_push_slow(g, a, before, after))
        return -1;
    count_pred(g, after);
    if (g) {
        g->nedges++;
        g->roots_valid = 0;
        if (before->ord >= after->ord)
            reorder(g, before, after);
    }
    return 0;
}

/* An edge before -> after, two tasks of g (not the same), where that needs no call: 0
 * when done (a repeat of before's last edge is dropped), 1 when add_edge_slow must add it
 * (a list to grow, a block without room, a walk to re-place tasks; after may have moved
 * past before in the order already). */
static inline __attribute__((always_inline)) int add_edge_quick(cask_graph *g, arena *a,
                                                                cask_task *before, cask_task *after)
{
    int32_t n = before->nsucc;
    cask_task **last, **base = succ_slots(before, n, &last);
    if (*last == after)
        return 0;
    if (__builtin_expect(before->ord >= after->ord, 0)) {
        /* against the order: after, with no successor yet (a fan-in's sink added before
         * its predecessors), just moves past before; else reorder's walk. One task
         * twice (its ord is its own) also comes here, and leaves for the caller's slow
         * path, which refuses it (cask_task_depend checks it nowhere else). */
        if (after->nsucc | (before == after))
            return 1;
        after->ord = before->ord + 1;
        if (after->ord >= g->next_ord)
            g->next_ord = after->ord + 1;
    }
    /* the common case: room in before's successors, nothing (more) to re-place */
    if (__builtin_expect(push_succ_quick_n(a, before, base, after, n), 0))
        return 1;
    count_pred(g, after);   /* (roots_valid: see count_pred) */
    g->nedges++;
    return 0;
}

/* The same, every case: 0, or -1 out of memory. */
static inline __attribute__((always_inline)) int add_edge_ne(cask_graph *g, arena *a,
                                                             cask_task *before, cask_task *after)
{
    return add_edge_quick(g, a, before, after) ? add_edge_slow(g, a, before, after) : 0;
}

/* The same, where before and after may be one task (no edge then). */
static inline __attribute__((always_inline)) int add_edge(cask_graph *g, arena *a,
                                                          cask_task *before, cask_task *after)
{
    return before == after ? 0 : add_edge_ne(g, a, before, after);
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

/* Validates desc and makes its task at mem (NULL: from arena ar), not linked anywhere. */
static inline __attribute__((always_inline)) cask_status make_task(cask_graph *g, arena *ar, const cask_task_desc *desc,
                                      const char *call, cask_task *mem, cask_task **out)
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

    cask_task *t = mem ? mem : arena_alloc(ar, sizeof *t);
    TASK_PREFETCH(t);
    cask_access *acc = na ? arena_alloc(ar, (size_t)na * sizeof *acc) : NULL;
    if (!t || (na && !acc))
        return log_error(g->rt, CASK_ERR_NOMEM, "%s(%s)", call, k->name);
    if (na)
        memcpy(acc, desc->access, (size_t)na * sizeof *acc);
    init_task(t, g, k, where, na, acc, device, 0, 0, 0);
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

/* Doubles (from 256) the pointer array *v of capacity *cap in g's arena: a big graph's
 * comes from the pool's spares. -1 out of memory (*v untouched). */
static int grow_list(cask_graph *g, void *v, size_t *cap)
{
    size_t n = *cap ? *cap * 2 : 256;
    void **a = arena_grow(&g->ar, *(void **)v, *cap * sizeof *a, n * sizeof *a);
    if (!a)
        return -1;
    *(void **)v = a;
    *cap = n;
    return 0;
}

int graph_new_slab(cask_graph *g)
{
    if (g->nslabs == g->slabs_cap && grow_list(g, &g->slabs, &g->slabs_cap))
        return -1;
    /* aligned to a line (the arena gives 16 bytes): each task then starts at 0 or 32 in
     * a line, takes two lines, and its successor group (graph.h) sits in one */
    char *m = arena_alloc(&g->ar, TASK_SLAB * sizeof(cask_task) + 48);
    if (!m)
        return -1;
    cask_task *s = (cask_task *)(((uintptr_t)m + 63) & ~(uintptr_t)63);
    g->slabs[g->nslabs++] = s;
    g->tcur = s;
    g->tend = s + TASK_SLAB;
    g->tfast = NULL;
    return 0;
}

/* Whether g's roots lack the room that building keeps: two more, the task kept aside
 * (g->pend) and the one that takes its place. */
static inline int roots_short(const cask_graph *g)
{
    return g->roots_cap - g->nroots < 2;
}

/* Room for g's next task: a place at g->tcur and, when built (not added while running),
 * the room kept in the roots. When built, also how far the adds after it may go on
 * checking g->tfast alone: while each takes one place and at most one slot of the roots
 * (graph_roots_keep), the room kept stays (the check, and a new slab, end that); and
 * roots_valid is cleared here for them. -1 out of memory. */
int graph_task_room(cask_graph *g, int building)
{
    if (g->tcur == g->tend && graph_new_slab(g))
        return -1;
    if (!building)
        return 0;
    if (roots_short(g) && grow_list(g, &g->roots, &g->roots_cap))
        return -1;
    size_t places = (size_t)(g->tend - g->tcur), slots = g->roots_cap - g->nroots - 2;
    g->tfast = g->tcur + (places < slots ? places : slots);
    g->roots_valid = 0;
    return 0;
}

/* Counts t, made at g->tcur, as g's newest task and, when built (not added while
 * running), as a root while it has no predecessor (graph_roots_keep). */
static inline void append_task(cask_graph *g, cask_task *t, int building)
{
    g->tcur = t + 1;
    t->id = (uint32_t)g->ntasks++;
    t->ord = g->next_ord++;
    if (building)
        graph_roots_keep(g, t);
    else
        g->roots_rescan = 1;   /* the workers read roots while it runs: found at check */
    g->roots_valid = 0;
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

static cask_status add_task_general(cask_graph *g, const cask_task_desc *desc, cask_task **out);

/* The edges of plain task t (not written yet) from its deps i0.. (the edges of those
 * before are made), each dep checked on the way, their count in *nadded: 0, or -1 if a
 * dep is NULL, of another graph or a subflow's child (every edge made is taken back), or
 * -2 out of memory (the edges made stay). t is the newest task (every dep's ord is below
 * its own), so only the deps' successor lists change. A list past PLAIN_DEPS_ROOM asks
 * for the deps ahead of the one it links. */
static int plain_deps_link(cask_graph *g, cask_task *t, cask_task *const *deps, int nd, int i0,
                           int32_t *nadded)
{
    arena *ar = &g->ar;
    int32_t added = 0;
    for (int i = i0; i < nd; i++) {
        cask_task *p = deps[i];
        if (nd > PLAIN_DEPS_ROOM) {
            /* a long list (a fan-in's sink): its deps were built long before, their
             * lines out of cache; ask for the edge group of one further on */
            cask_task *q = deps[i + PLAIN_DEPS_AHEAD < nd ? i + PLAIN_DEPS_AHEAD : i];
            __builtin_prefetch(&q->nsucc, 1);
        }
        if (__builtin_expect(!graph_dep_ok(g, NULL, p), 0)) {
            while (i-- > 0)
                succ_unpush(deps[i], t);
            return -1;
        }
        int r = succ_push_new(g, ar, p, t);
        if (r < 0) {
            *nadded = added;
            return -2;
        }
        added += r;
    }
    *nadded = added;
    return 0;
}

/* add_plain_deps from dep i0, added edges made: the general push for each edge, then t
 * appended. */
static __attribute__((noinline)) cask_status plain_deps_finish(cask_graph *g,
                                                               const cask_task_desc *desc,
                                                               cask_task **out, cask_task *t,
                                                               int i0, int32_t added)
{
    int32_t more;
    int r = plain_deps_link(g, t, desc->deps, desc->ndeps, i0, &more);
    if (__builtin_expect(r == -1, 0))
        return add_task_general(g, desc, out);
    added += more;
    append_plain(g, t, desc->kernel, added);   /* out of memory: with the edges it got */
    g->nedges += (size_t)added;
    if (__builtin_expect(r, 0))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", task_name(t));
    if (out)
        *out = t;
    return CASK_OK;
}

/* add_plain_deps's other entries: a bad count or list (the general path tells what is
 * wrong), a long list, or too little room in the arena's block for its short path. */
static __attribute__((noinline)) cask_status plain_deps_other(cask_graph *g,
                                                              const cask_task_desc *desc,
                                                              cask_task **out, cask_task *t)
{
    if (desc->ndeps < 0 || (desc->ndeps && !desc->deps))
        return add_task_general(g, desc, out);
    return plain_deps_finish(g, desc, out, t, 0, 0);
}

/* A plain task that names its deps (CASK_TASK_DEPS), at t = g->tcur: its edges, then its
 * counts, written once. With up to PLAIN_DEPS_ROOM deps and an array of 4 free per dep
 * left in the arena's block, the edges are linked with the block's free pointer
 * in a register and without a call, so that the common case needs no stack frame; a
 * list that must grow, and a dep that is NULL, of another graph or a subflow's child,
 * leave for plain_deps_finish (the general path, which tells what is wrong). */
static __attribute__((noinline)) cask_status add_plain_deps(cask_graph *g,
                                                            const cask_task_desc *desc,
                                                            cask_task **out, cask_task *t)
{
    int nd = desc->ndeps;
    cask_task *const *deps = desc->deps;
    TASK_PREFETCH(t);
    char *cur = g->ar.cur;
    /* (nd below 0 is above PLAIN_DEPS_ROOM as unsigned) */
    if (__builtin_expect((unsigned)nd > PLAIN_DEPS_ROOM || !deps ||
                         (size_t)(g->ar.end - cur) < (unsigned)nd * SUCC_ROOM, 0))
        return plain_deps_other(g, desc, out, t);
    int32_t added = 0;
    cask_task *const *dp = deps, *const *end = deps + nd;
    for (; dp != end; dp++) {
        cask_task *p = *dp;
        int32_t n = p ? p->nsucc : 0;
        if (__builtin_expect(!graph_dep_ok(g, NULL, p) || succ_full(n), 0)) {
            g->ar.cur = cur;
            return plain_deps_finish(g, desc, out, t, (int)(dp - desc->deps), added);
        }
        cask_task **last, **base = succ_slots(p, n, &last);
        if (*last == t)
            continue;   /* named twice */
        cur = succ_push_room(cur, p, base, t, n);
        added++;
    }
    g->ar.cur = cur;
    append_plain(g, t, desc->kernel, added);
    g->nedges += (size_t)added;
    if (out)
        *out = t;
    return CASK_OK;
}

/* The common task in few instructions, and without a frame: no buffers, arguments,
 * name, priority or placement, added while building, with room in the slab and the
 * roots (deps alone may be named: add_plain_deps). Every other case: add_task_general,
 * with its checks and messages. */
cask_status cask_graph_add_task(cask_graph *g, const cask_task_desc *desc, cask_task **out)
{
    if (__builtin_expect(!g || !desc, 0))
        return CASK_ERR_INVALID;
    if (atomic_load_explicit(&g->state, memory_order_acquire) == GRAPH_RUNNING)
        return graph_add_running(g, desc, out);
    cask_kernel *k = desc->kernel;
    uint64_t mask = desc->field_mask;
    cask_task *t = g->tcur;
    if (__builtin_expect((mask & ~(uint64_t)CASK_TASK_DEPS) || desc->naccess || !k ||
                         !(k->where_any & g->can) || (uintptr_t)t >= (uintptr_t)g->tfast, 0))
        return add_task_general(g, desc, out);
    if (mask & CASK_TASK_DEPS)
        return add_plain_deps(g, desc, out, t);
    TASK_PREFETCH(t);
    append_plain(g, t, k, 0);
    if (out)
        *out = t;
    return CASK_OK;
}

/* cask_graph_add_task's every other case. */
static __attribute__((noinline)) cask_status add_task_general(cask_graph *g,
                                                              const cask_task_desc *desc,
                                                              cask_task **out)
{
    uint64_t mask = desc->field_mask;
    cask_status st;
    /* the deps, checked before anything is added */
    if ((mask & CASK_TASK_DEPS) && (st = graph_check_deps(g, NULL, desc, "cask_graph_add_task")))
        return st;
    cask_task *t = NULL;
    if (graph_task_room(g, 1))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)",
                         desc->kernel ? desc->kernel->name : "?");
    if ((st = make_task(g, &g->ar, desc, "cask_graph_add_task", g->tcur, &t)))
        return st;
    append_task(g, t, 1);
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

/* Notes t, made by graph_make_task while g runs, as added (g->lock held). */
void graph_append_running(cask_graph *g, cask_task *t)
{
    append_task(g, t, 0);
}

/* cask_task_depend's other cases: one task twice, tasks of two graphs, children of a
 * subflow, a running graph, and tasks with a cold record that are none of these. */
static __attribute__((noinline)) cask_status depend_other(cask_task *after, cask_task *before)
{
    cask_graph *g = after->graph;
    if (after == before || after->graph != before->graph)
        return CASK_ERR_INVALID;
    if (task_sub(after) || task_sub(before))   /* children of a subflow, before they are launched */
        return subflow_depend(after, before);
    if (task_spawned(after) || task_spawned(before))   /* a child whose kernel returned */
        return log_error(g->rt, CASK_ERR_INVALID, "cask_task_depend(%s after %s): a child of "
                         "a subflow takes edges only from its siblings, before the kernel "
                         "that spawned it returns (it runs in that run alone)",
                         task_name(after), task_name(before));
    if (atomic_load_explicit(&g->state, memory_order_acquire) == GRAPH_RUNNING)
        return log_error(g->rt, CASK_ERR_STATE, "cask_task_depend(%s after %s): graph is "
                         "running (tasks added while it runs take their order from access "
                         "modes)", task_name(after), task_name(before));
    if (add_edge_ne(g, &g->ar, before, after))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_task_depend");
    return CASK_OK;
}

/* cask_task_depend's edge that add_edge_quick could not add. */
static __attribute__((noinline)) cask_status depend_slow(cask_graph *g, cask_task *before,
                                                         cask_task *after)
{
    if (before == after)
        return depend_other(after, before);
    if (add_edge_slow(g, &g->ar, before, after))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_task_depend");
    return CASK_OK;
}

cask_status cask_task_depend(cask_task *after, cask_task *before)
{
    if (__builtin_expect(!after || !before, 0))
        return CASK_ERR_INVALID;
    cask_graph *g = after->graph;
    /* one test for the rare cases: a task with a cold record (a name, a priority, a
     * subflow child) goes the long way */
    uintptr_t cold = (uintptr_t)task_cold_of(after) | (uintptr_t)task_cold_of(before);
    int running = atomic_load_explicit(&g->state, memory_order_acquire) == GRAPH_RUNNING;
    if (__builtin_expect((g != before->graph) | (cold != 0) | running, 0))
        return depend_other(after, before);   /* (one task twice: add_edge_quick) */
    /* the slow cases as a tail call: the common one needs no stack frame */
    if (__builtin_expect(add_edge_quick(g, &g->ar, before, after), 0))
        return depend_slow(g, before, after);
    return CASK_OK;
}

/* ---- the same, for the other parts of the runtime ---- */

int graph_add_edge(cask_graph *g, arena *a, cask_task *before, cask_task *after)
{
    if (g)
        return add_edge(g, a, before, after);
    if (before == after || succ_is_last(before, after))
        return 0;
    return add_edge_slow(NULL, a, before, after);
}

cask_status graph_make_task(cask_graph *g, arena *ar, const cask_task_desc *desc,
                            const char *call, cask_task **out)
{
    if (ar)
        return make_task(g, ar, desc, call, NULL, out);
    if (graph_task_room(g, 0))
        return log_error(g->rt, CASK_ERR_NOMEM, "%s(%s)", call,
                         desc->kernel ? desc->kernel->name : "?");
    return make_task(g, &g->ar, desc, call, g->tcur, out);
}

void graph_note_task(cask_graph *g, cask_task *t)
{
    return note_task(g, t);
}

cask_status graph_link_static(cask_graph *g, cask_task *t)
{
    return link_static(g, t);
}
