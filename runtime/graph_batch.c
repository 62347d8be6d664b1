/* graph_batch.c: cask_graph_add_batch, tasks added from arrays (a kernel or one per task,
 * arguments by stride, predecessors as offsets and indexes into the batch). Each task is
 * written in place in the graph's slab and its edges pushed onto its predecessors'
 * successor lists, with the graph's building state (the slab's place, ids, the roots,
 * the arena's free pointer) held in locals across tasks and none of the per-task work of
 * a call (a description read and checked, a handle per predecessor found by the caller):
 * a predecessor is found from its index. A batch's edges stay among its own tasks, so a
 * bad entry met on the way (a dep not before its task, a missing kernel) or a failed
 * allocation takes the whole batch back by restoring that state: nothing is added. */
#include <string.h>
#include "runtime/graph_build.h"
#include "runtime/graph_succ.h"
#include "runtime/log.h"

static const char call[] = "cask_graph_add_batch";

/* What the batch changes of g, as it was before: restored to take the batch back. */
typedef struct batch_undo {
    size_t ntasks, nslabs, nroots, nedges;
    cask_task *tcur, *tend, *pend, *unrunnable;
    task_link *bigs;
    uint32_t next_ord;
} batch_undo;

/* The checks that need no pass over the batch. */
static cask_status batch_check(cask_graph *g, const cask_task_batch *b)
{
    cask_runtime *rt = g->rt;
    size_t n = b->ntasks;
    if (n > (size_t)UINT32_MAX - g->ntasks)
        return log_error(rt, CASK_ERR_INVALID, "%s: %zu tasks after %zu (a graph holds at "
                         "most %u)", call, n, g->ntasks, UINT32_MAX);
    if (b->args_size > UINT32_MAX || (b->args_size && !b->args))
        return log_error(rt, CASK_ERR_INVALID, "%s: args_size %zu %s", call, b->args_size,
                         b->args ? "(at most UINT32_MAX bytes)" : "without args");
    if (!b->kernels && !b->kernel)
        return log_error(rt, CASK_ERR_INVALID, "%s: no kernel", call);
    if (b->dep_start && b->dep_start[n] != b->dep_start[0] && !b->dep_index)
        return log_error(rt, CASK_ERR_INVALID, "%s: %u deps and no dep_index", call,
                         b->dep_start[n] - b->dep_start[0]);
    return CASK_OK;
}

/* Takes the batch back (see the top): g as u recorded it, and the message of why. */
static __attribute__((noinline, cold)) cask_status batch_fail(cask_graph *g, const batch_undo *u,
                                                             const cask_task_batch *b,
                                                             size_t i, int why)
{
    g->ntasks = u->ntasks;
    g->nslabs = u->nslabs;   /* (the slabs made stay in the arena, unused) */
    g->tcur = u->tcur;
    g->tend = u->tend;
    g->tfast = NULL;         /* the next add takes the general path */
    g->pend = u->pend;
    g->nroots = u->nroots;
    g->nedges = u->nedges;
    g->unrunnable = u->unrunnable;
    g->bigs = u->bigs;
    g->next_ord = u->next_ord;
    cask_runtime *rt = g->rt;
    if (why == -1)
        return log_error(rt, CASK_ERR_NOMEM, "%s: task %zu of %zu (nothing added)", call, i,
                         b->ntasks);
    cask_kernel *k = b->kernels ? b->kernels[i] : b->kernel;
    if (!k)
        return log_error(rt, CASK_ERR_INVALID, "%s: task %zu has no kernel", call, i);
    if (!k->where_any)   /* (as graph_task_placement says it) */
        return log_error(rt, CASK_ERR_INVALID, "%s: task %zu: kernel %s has no "
                         "implementation for where=%u", call, i, k->name, CASK_WHERE_ANY);
    const uint32_t *ds = b->dep_start, *di = b->dep_index;
    if (ds[i + 1] < ds[i])
        return log_error(rt, CASK_ERR_INVALID, "%s: dep_start[%zu] = %u is below "
                         "dep_start[%zu] = %u", call, i + 1, ds[i + 1], i, ds[i]);
    uint32_t j = ds[i];
    while (j < ds[i + 1] && di[j] < i)
        j++;
    return log_error(rt, CASK_ERR_INVALID, "%s: task %zu waits for task %u of the batch, "
                     "not one before it (dep_index[%u])", call, i, di[j], j);
}

/* The edges to t (not written yet), task i of the batch whose first task is g's task
 * base, from the batch's tasks di[j0 .. e-1], each case checked (a list to grow, the room
 * in the arena's block, a long list whose predecessors are asked for ahead): how many;
 * -1 out of memory, -2 a dep not before t. */
static __attribute__((noinline)) int32_t link_other(cask_graph *g, cask_task **slabs,
                                                    size_t base, size_t i,
                                                    const uint32_t *di, uint32_t j0,
                                                    uint32_t e, cask_task *t)
{
    int32_t added = 0;
    int ahead = e - j0 > PLAIN_DEPS_ROOM;
    for (uint32_t j = j0; j < e; j++) {
        size_t x = di[j];
        if (x >= i)
            return -2;
        if (ahead) {   /* (a dep further on is not checked yet: only if in the batch) */
            size_t y = di[j + PLAIN_DEPS_AHEAD < e ? j + PLAIN_DEPS_AHEAD : j];
            if (y < i)
                __builtin_prefetch(&slab_task(slabs, base + y)->nsucc, 1);
        }
        int r = succ_push_new(g, &g->ar, slab_task(slabs, base + x), t);
        if (r < 0)
            return -1;
        added += r;
    }
    return added;
}

/* Task i's copy of its arguments from g's arena, or NULL out of memory. */
static __attribute__((noinline)) void *batch_args(cask_graph *g, const cask_task_batch *b,
                                                  size_t i)
{
    size_t sz = b->args_size;
    uint64_t *m = arena_alloc(&g->ar, 16 + sz);   /* the size in the 16 bytes before */
    if (!m)
        return NULL;
    m[0] = sz;
    memcpy(m + 2, (const char *)b->args + i * sz, sz);
    return m + 2;
}

/* The building state that cask_graph_add_batch keeps in locals, written back to g: the
 * next task's place, the task kept aside, the roots kept, the task count (and the ord
 * that follows it: the batch's tasks take ords in order), the arena's free pointer. */
static inline void write_back(cask_graph *g, cask_task *t, cask_task *pend, size_t nroots,
                              size_t ntasks, char *cur)
{
    g->next_ord += (uint32_t)(ntasks - g->ntasks);
    g->tcur = t;
    g->pend = pend;
    g->nroots = nroots;
    g->ntasks = ntasks;
    g->ar.cur = cur;
}

cask_status cask_graph_add_batch(cask_graph *g, const cask_task_batch *b, cask_task **out)
{
    if (!g || !b)
        return CASK_ERR_INVALID;
    if (atomic_load_explicit(&g->state, memory_order_acquire) == GRAPH_RUNNING)
        return log_error(g->rt, CASK_ERR_STATE, "%s: graph is running (tasks added while it "
                         "runs take their order from access modes)", call);
    cask_status st = batch_check(g, b);
    if (st || !b->ntasks)
        return st;
    batch_undo u = { g->ntasks, g->nslabs, g->nroots, g->nedges, g->tcur, g->tend, g->pend,
                     g->unrunnable, g->bigs, g->next_ord };
    size_t n = b->ntasks, base = g->ntasks;
    const uint32_t *ds = b->dep_start, *di = b->dep_index;
    cask_kernel *const *ks = b->kernels;
    cask_kernel *k = b->kernel;
    uint32_t can = g->can, s0 = ds ? ds[0] : 0, ord0 = g->next_ord;
    if (!ks && !k->where_any)
        return batch_fail(g, &u, b, 0, -2);
    uint32_t where = ks ? 0 : k->where_any;
    /* g's building state in locals: written back before a call that reads it (a new
       slab, a list to grow, arguments) and at the end; ids and ords follow i */
    cask_task *t = g->tcur, *tfast = g->tfast, **slabs = g->slabs, **roots = g->roots;
    cask_task *pend = g->pend;
    size_t nroots = g->nroots, nedges = 0;
    char *cur = g->ar.cur, *end = g->ar.end;
    for (size_t i = 0; i < n; i++) {
        if (ks) {
            k = ks[i];
            if (__builtin_expect(!k || !k->where_any, 0))
                return batch_fail(g, &u, b, i, -2);
            where = k->where_any;
        }
        if (__builtin_expect((uintptr_t)t >= (uintptr_t)tfast, 0)) {
            write_back(g, t, pend, nroots, base + i, cur);
            if (graph_task_room(g, 1))
                return batch_fail(g, &u, b, i, -1);
            t = g->tcur;
            tfast = g->tfast;
            slabs = g->slabs;
            roots = g->roots;
            cur = g->ar.cur;
            end = g->ar.end;
        }
        TASK_PREFETCH(t);
        int32_t added = 0;
        if (ds) {
            uint32_t e = ds[i + 1], nd = e - s0;
            if (__builtin_expect(e < s0, 0))
                return batch_fail(g, &u, b, i, -2);
            uint32_t j = s0;
            /* the common case: a short list, an array of 4 free per dep in the block */
            if (__builtin_expect(nd <= PLAIN_DEPS_ROOM && (size_t)(end - cur) >= nd * SUCC_ROOM, 1))
                for (; j < e; j++) {
                    size_t x = di[j];
                    if (__builtin_expect(x >= i, 0))
                        return batch_fail(g, &u, b, i, -2);
                    cask_task *p = slab_task(slabs, base + x);
                    int32_t c = p->nsucc;
                    if (__builtin_expect(succ_full(c), 0))
                        break;
                    cask_task **last, **sv = succ_slots(p, c, &last);
                    if (*last == t)
                        continue;   /* named twice */
                    cur = succ_push_room(cur, p, sv, t, c);
                    added++;
                }
            if (__builtin_expect(j < e, 0)) {   /* the rest, each case checked */
                g->ar.cur = cur;
                int32_t r = link_other(g, slabs, base, i, di, j, e, t);
                cur = g->ar.cur;
                end = g->ar.end;
                if (r < 0)
                    return batch_fail(g, &u, b, i, r);
                added += r;
            }
            s0 = e;
        }
        void *a = NULL;
        if (b->args_size) {
            g->ar.cur = cur;
            a = batch_args(g, b, i);
            cur = g->ar.cur;
            end = g->ar.end;
            if (!a)
                return batch_fail(g, &u, b, i, -1);
        }
        init_task(t, g, k, where, 0, NULL, -1, ord0 + (uint32_t)i, (uint32_t)(base + i), added);
        t->args = a;
        nroots = graph_roots_join(roots, nroots, pend);   /* graph_roots_keep, on the locals */
        pend = t;
        nedges += (size_t)added;
        if (__builtin_expect(!(where & can), 0) && !g->unrunnable)
            g->unrunnable = t;   /* (the check reports it, as for a task added alone) */
        if (out)
            out[i] = t;
        t++;
    }
    write_back(g, t, pend, nroots, base + n, cur);
    g->nedges += nedges;
    return CASK_OK;
}
