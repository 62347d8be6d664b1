/* dist/dist_leave.c: a rank that leaves the job while another still needs it.
 *
 * cask_dist_finalize tells every rank that this one leaves (LEAVE) before it says
 * goodbye to the transport. A rank that has said goodbye is not a failure for the
 * transport (xport_ucx: its endpoint closing is expected), so without LEAVE a rank
 * still computing a graph that needs the leaver (its data, its DONE, its PLAN) would
 * wait for it forever. That happens when the ranks of a program stop agreeing on what
 * to compute: one computes a graph once more, or a graph the others never make, while
 * they finalize (for instance because a gathered value it decides on differed: a
 * destination the planner never filled, docs/distributed.md). The run then fails on
 * the rank that waits, naming the rank that left and the graph and run, instead of
 * hanging. A rank that left after sending its DONE of the run computing here is not
 * needed by that run: its data for it were all sent before. */
#include "dist/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>

/* Whether g's current run or plan agreement still needs rank r (under dist->mu). */
static int needs(const cask_dist_graph *g, int r)
{
    return g->running ? g->done_from[r] < g->run : !g->plan_seen[r];
}

cask_status dist_left_broken(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    if (!dist->nleft)
        return CASK_OK;
    for (int r = 0; r < dist->size; r++)
        if (dist->left[r] && needs(g, r)) {
            dist_graph_error(g, "rank %d left the job (cask_dist_finalize) while rank %d still "
                             "needed it for graph %u (compute %u): every rank must compute the "
                             "same graphs, the same number of times", r, dist->rank, g->id,
                             g->run);
            return CASK_ERR_PEER;
        }
    return CASK_OK;
}

void dist_leave_announce(cask_dist *dist)
{
    dist_ctrl_all(dist, 0, 0, CTRL_LEAVE, 0, 0, NULL);
}

void dist_on_leave(cask_dist *dist, int from)
{
    enum { MAXG = 16 };
    cask_task_async **tok[MAXG];
    struct cask_dist_graph *gs[MAXG];
    size_t ntok[MAXG];
    char why[MAXG][sizeof ((cask_dist_graph *)0)->error];
    int ng = 0;
    pthread_mutex_lock(&dist->mu);
    if (!dist->left[from]) {
        dist->left[from] = 1;
        dist->nleft++;
        /* receives of runs that still need it may never complete: end them now */
        for (struct cask_dist_graph *g = dist->graphs; g && ng < MAXG; g = g->next)
            if (g->running && needs(g, from) && dist_left_broken(g)) {
                snprintf(why[ng], sizeof why[ng], "%s", g->error);
                tok[ng] = dist_xfer_take_waiting(g, &ntok[ng]);
                g->handlers_in++;
                gs[ng++] = g;
            }
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    for (int i = 0; i < ng; i++)
        dist_xfer_end_run(gs[i], tok[i], ntok[i], CASK_ERR_PEER, why[i]);
    pthread_mutex_lock(&dist->mu);
    for (int i = 0; i < ng; i++)
        gs[i]->handlers_in--;
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}
