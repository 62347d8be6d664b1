/* distributed/dist_local.c: turning this rank's share of a planned distributed graph into
 * one local cask graph: its tasks in plan order, with the transfer tasks of each
 * exchange step (dist_xfer.c, dist_nccl.c) between the phases. */
#include <stdlib.h>
#include <string.h>
#include "distributed/dist_impl.h"
#include "distributed/dist_steal.h"
#include "runtime/graph.h"

/* The local graph: exchange step 0's transfers, phase 0's tasks, exchange 1, ...,
 * the final exchange, the final local copies. This order is a valid sequential order
 * of everything this rank does (the phases respect every dependency), so cask's own
 * sequential task flow derives the dependencies, and each task waits only for what it
 * uses: phases overlap, and a chunk leaves as soon as it is made. */
static cask_status add_task(cask_dist_graph *g, size_t i)
{
    dist_task *t = &g->tasks[i];
    cask_access acc[CASK_MAX_BUFFERS];
    for (int a = 0; a < t->naccess; a++)
        acc[a] = (cask_access){ t->local[a], t->access[a].mode };
    cask_task_desc desc = {
        .field_mask = t->field_mask & (CASK_TASK_ARGS | CASK_TASK_PRIORITY | CASK_TASK_NAME |
                                       CASK_TASK_WHERE | CASK_TASK_DEVICE),
        .kernel = t->kernel, .access = acc, .naccess = t->naccess,
        .args = t->args, .args_size = t->args_size, .priority = t->priority,
        .name = t->name, .where = t->where, .device = t->device };
    dist_xfer_arg wrap;
    dist_steal_wrap(g, i, &desc, &wrap);   /* may run on an idle rank (dist_steal.c) */
    cask_status st = g->dist->testkill ? dist_testkill_probe(g, acc, t->naccess) : CASK_OK;
    if (!st)
        st = cask_graph_add_task(g->local, &desc, NULL);
    if (st)
        dist_graph_error(g, "task %zu (%s) on rank %d: %s", i, t->name ? t->name : t->kernel->name,
                         g->dist->rank, cask_status_string(st));
    return st;
}

cask_status dist_local_build(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    size_t nsteps = (size_t)g->nphases + 1;
    /* stable counting sorts: tasks here by phase, sends and slots by exchange step */
    size_t *start = calloc(nsteps + 1, sizeof *start);
    size_t *order = malloc((g->ntasks_here ? g->ntasks_here : 1) * sizeof *order);
    dist_send *sends = malloc((g->nsends ? g->nsends : 1) * sizeof *sends);
    dist_slot **slots = malloc((g->nslots ? g->nslots : 1) * sizeof *slots);
    cask_status st = start && order && sends && slots ? CASK_OK : CASK_ERR_NOMEM;
    if (!st)
        st = dist_steal_plan(g);
    if (!st) {
        for (size_t i = 0; i < g->ntasks; i++)
            if (g->tasks[i].rank == dist->rank)
                start[g->tasks[i].phase + 1]++;
        for (size_t p = 0; p < nsteps; p++)
            start[p + 1] += start[p];
        for (size_t i = 0; i < g->ntasks; i++)
            if (g->tasks[i].rank == dist->rank)
                order[start[g->tasks[i].phase]++] = i;
        /* start[p] is now the end of phase p */
        size_t *cnt = calloc(nsteps + 1, sizeof *cnt);
        if (!cnt) {
            st = CASK_ERR_NOMEM;
        } else {
            for (size_t i = 0; i < g->nsends; i++)
                cnt[g->sends[i].exchange + 1]++;
            for (size_t e = 0; e < nsteps; e++)
                cnt[e + 1] += cnt[e];
            for (size_t i = 0; i < g->nsends; i++)
                sends[cnt[g->sends[i].exchange]++] = g->sends[i];
            if (g->nsends)   /* g->sends is NULL when there are none */
                memcpy(g->sends, sends, g->nsends * sizeof *sends);
            memset(cnt, 0, (nsteps + 1) * sizeof *cnt);
            for (size_t i = 0; i < g->nslots; i++)
                cnt[g->slots[i]->exchange + 1]++;
            for (size_t e = 0; e < nsteps; e++)
                cnt[e + 1] += cnt[e];
            for (size_t i = 0; i < g->nslots; i++)
                slots[cnt[g->slots[i]->exchange]++] = g->slots[i];
            if (g->nslots)
                memcpy(g->slots, slots, g->nslots * sizeof *slots);
            free(cnt);
        }
    }
    if (!st)
        st = cask_graph_create(dist->rt, &g->local);
    if (!st && g->replan)   /* a recovery: its sources are loaded first */
        st = dist_recover_add_loads(g);
    size_t si = 0, li = 0, ti = 0;
    for (int e = 0; e <= g->nphases && !st; e++) {
        st = dist_xfer_add_exchange(g, e, &si, &li);
        for (; !st && e < g->nphases && ti < start[e]; ti++)
            st = add_task(g, order[ti]);
    }
    if (!st)
        st = dist_xfer_add_copies(g);
    if (!st)
        st = dist_xfer_order_nccl(g);
    if (!st)
        graph_set_fail_hook(g->local, dist_xfer_on_local_failure, g);
    free(start);
    free(order);
    free(sends);
    free(slots);
    return st;
}
