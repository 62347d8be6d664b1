/* test_graph_succ.c: a task's successor lists as building appends to them
 * (runtime/graph_succ.[ch]). A plain task naming its deps links them with the arena's free
 * pointer in a register, in a block counted to hold an array of 4 per dep; at a dep whose
 * list is full the rest go the general way, which grows it from that same block. Lists that grow in the middle of a deps
 * list must keep every edge, in the order added, and every array must stay inside its
 * block (run under ASan: tests/tsan/run.sh and the ASan build). */
#include <stdatomic.h>
#include <stdlib.h>
#include "test_helpers.h"
#include "runtime/graph.h"

static _Atomic long ran;

static cask_status nop_task(cask_task_ctx *ctx)
{
    (void)ctx;
    atomic_fetch_add(&ran, 1);
    return CASK_OK;
}

enum { M = 200000, MAXD = 9 };

/* Task i's deps, in the order named: two hubs (the last task whose id is a multiple of
 * 1000, and of 100, when not among the next), then the 7 tasks before it. A hub's list
 * grows to 1000 successors (arrays of up to 8 KiB, taken from the block the list after
 * it counts on); each task before fills its array of 4 at its 5th successor, named fifth
 * in a list of 9. */
static int deps_of(int i, int *p)
{
    int n = 0;
    int h2 = i / 1000 * 1000, h1 = i / 100 * 100;
    if (h2 < i - 7)
        p[n++] = h2;
    if (h1 < i - 7 && h1 != h2)
        p[n++] = h1;
    for (int d = 1; d <= 7 && d <= i; d++)
        p[n++] = i - d;
    return n;
}

Test(graph_succ, deps_lists_whose_arrays_grow_mid_list_keep_every_edge, .timeout = 120)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *k = kernel(rt, "nop", nop_task);
    cask_graph *g = graph(rt);
    cask_task **t = malloc(M * sizeof *t);
    int32_t *seen = calloc(M, sizeof *seen);
    cr_assert(t && seen);
    for (int i = 0; i < M; i++) {
        int p[MAXD];
        cask_task *in[MAXD];
        int n = deps_of(i, p);
        for (int j = 0; j < n; j++)
            in[j] = t[p[j]];
        cask_task_desc td = { .field_mask = n ? CASK_TASK_DEPS : 0, .kernel = k, .deps = in,
                              .ndeps = n };
        cr_assert_eq(cask_graph_add_task(g, &td, &t[i]), CASK_OK);
    }
    /* every edge where it belongs: p's successors are the tasks that named it, by id */
    long edges = 0;
    for (int i = 0; i < M; i++) {
        int p[MAXD];
        int n = deps_of(i, p);
        for (int j = 0; j < n; j++) {
            cask_task *pred = t[p[j]];
            int32_t at = seen[p[j]]++;
            if (at >= pred->nsucc || task_succ(pred)[at] != t[i])
                cr_assert_fail("task %d: successor %d of task %d is not it (%d successors)",
                               i, at, p[j], pred->nsucc);
            edges++;
        }
        if (t[i]->indegree != n)
            cr_assert_fail("task %d: %d predecessors, not %d", i, t[i]->indegree, n);
    }
    for (int q = 0; q < M; q++)
        if (t[q]->nsucc != seen[q])
            cr_assert_fail("task %d: %d successors, %d named it", q, t[q]->nsucc, seen[q]);
    cr_assert_eq(t[0]->nsucc, 999, "the first hub: named by every task up to 999");
    atomic_store(&ran, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&ran), M);
    cr_assert_gt(edges, 8L * M);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    free(t);
    free(seen);
    leak_check();
}

static cask_task *add_deps(cask_graph *g, cask_kernel *k, cask_task **deps, int n)
{
    cask_task_desc td = { .field_mask = n ? CASK_TASK_DEPS : 0, .kernel = k, .deps = deps,
                          .ndeps = n };
    cask_task *t = NULL;
    cr_assert_eq(cask_graph_add_task(g, &td, &t), CASK_OK);
    return t;
}

/* The same at the edge of a block, made exact: a task names p, whose list of 4 is full,
 * then q1, q2, q3, one successor each, in a block with just an array of 4 per dep left.
 * p's list grows by 64 bytes from that room; the arrays of q1 and q2 take the rest, and
 * q3's must come from a new block, not from past the end of this one. */
Test(graph_succ, a_list_grown_from_the_room_of_the_next_deps_leaves_them_room)
{
    cask_runtime *rt = start_runtime(1, 0);
    cask_kernel *k = kernel(rt, "nop", nop_task);
    cask_graph *g = graph(rt);
    cask_task *p = add_deps(g, k, NULL, 0);
    cask_task *q[3] = { add_deps(g, k, NULL, 0), add_deps(g, k, NULL, 0),
                        add_deps(g, k, NULL, 0) };
    for (int i = 0; i < 4; i++)
        add_deps(g, k, &p, 1);
    add_deps(g, k, q, 3);
    cr_assert_eq(p->nsucc, 4);
    cr_assert_eq(q[0]->nsucc + q[1]->nsucc + q[2]->nsucc, 3);
    cask_task *deps[4] = { p, q[0], q[1], q[2] };
    size_t want = 4 * 4 * sizeof(cask_task *);   /* an array of 4 per dep */
    while ((size_t)(g->ar.end - g->ar.cur) > want) {
        size_t pad = (size_t)(g->ar.end - g->ar.cur) - want;
        cr_assert(arena_alloc(&g->ar, pad > 65536 ? 65536 : pad));
    }
    cr_assert_eq((size_t)(g->ar.end - g->ar.cur), want);
    cask_task *t = add_deps(g, k, deps, 4);
    cr_assert_leq((uintptr_t)g->ar.cur, (uintptr_t)g->ar.end, "the arena's free pointer "
                  "went %td bytes past its block", g->ar.cur - g->ar.end);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(deps[i]->nsucc, i ? 2 : 5);
        cr_assert_eq(task_succ(deps[i])[deps[i]->nsucc - 1], t);
    }
    atomic_store(&ran, 0);
    compute_ok(g);
    cr_assert_eq(atomic_load(&ran), 10);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    leak_check();
}
