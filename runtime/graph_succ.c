/* graph_succ.c: a task's successor list, the out-of-line cases (see graph_succ.h). */
#include "runtime/graph_succ.h"

int succ_grow(arena *a, cask_task *pred)
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

void succ_unpush(cask_task *pred, const cask_task *succ)
{
    int32_t n = pred->nsucc;
    if (!n || !succ_is_last(pred, succ))
        return;
    if (n == 2)
        pred->succ1 = pred->succv[0];
    else if (n == 1)
        pred->succ1 = NULL;
    pred->nsucc = n - 1;
}

/* A task whose fan-out just passed half of SCHED_SPLIT_RELEASE: the check gives it
 * release ranges if it reaches SCHED_SPLIT_RELEASE. */
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

/* Every task whose fan-out reaches SCHED_SPLIT_RELEASE comes here when it passes half of
 * it (its array of SCHED_SPLIT_RELEASE / 2 is full then), so that push_succ_quick_n need
 * not look. */
int succ_push_slow(cask_graph *g, arena *a, cask_task *pred, cask_task *succ)
{
    /* a block with less than an array of 4 left is left (push_succ_quick_n needs that room) */
    if (arena_reserve(a, SUCC_ROOM))
        return -1;
    if (push_succ(a, pred, succ))
        return -1;
    if (g && pred->nsucc == SCHED_SPLIT_RELEASE / 2 + 1 && graph_note_big(g, pred))
        return -1;
    return 0;
}

int graph_push_succ(cask_graph *g, cask_task *pred, cask_task *succ)
{
    return succ_push_slow(g, &g->ar, pred, succ);
}
