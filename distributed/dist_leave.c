/* distributed/dist_leave.c: a rank that leaves the job while another still needs it.
 *
 * cask_dist_finalize tells every rank that this one leaves (LEAVE) before it says
 * goodbye to the transport. A rank that has said goodbye is not a failure for the
 * transport (xport_ucx: its endpoint closing is expected), so without LEAVE a rank
 * still computing a graph that needs the leaver (its data, its DONE, its PLAN) would
 * wait for it forever. That happens when the ranks of a program stop agreeing on what
 * to compute: one computes a graph once more, or a graph the others never make, while
 * they finalize (for instance because a gathered value it decides on differed: a
 * destination the planner never filled, docs/design/distributed-internals.md, "Other failures"). The run then fails on
 * the rank that waits, naming the rank that left and the graph and run, instead of
 * hanging. A rank that left after sending its DONE of the run computing here is not
 * needed by that run: its data for it were all sent before. */
#include "distributed/dist_impl.h"
#include "distributed/dist_steal.h"

#include <stdio.h>
#include <stdlib.h>

/* Whether g's current run or plan agreement still needs rank r (under dist->mu). */
static int needs(const cask_dist_graph *g, int r)
{
    return g->running ? g->done_from[r] < g->run : !g->plan_seen[r];
}

/* A rank g still needs that left, or -1 (under dist->mu). */
static int left_needed(const cask_dist_graph *g)
{
    const cask_dist *dist = g->dist;
    for (int r = 0; dist->nleft && r < dist->size; r++)
        if (dist->left[r] && needs(g, r))
            return r;
    return -1;
}

static void left_message(const cask_dist_graph *g, int r, char *buf, size_t len)
{
    const cask_dist *dist = g->dist;
    if (dist->left_why[0]) {   /* it left after a failure: that is the cause */
        snprintf(buf, len, "%s (as rank %d reported before leaving the job)", dist->left_why,
                 dist->left_by);
        return;
    }
    snprintf(buf, len, "rank %d left the job (cask_dist_finalize) while rank %d still needed "
             "it for graph %u (compute %u): every rank must compute the same graphs, the same "
             "number of times", r, g->dist->rank, g->id, g->run);
}

cask_status dist_left_broken(cask_dist_graph *g)
{
    int r = left_needed(g);
    if (r < 0)
        return CASK_OK;
    left_message(g, r, g->error, sizeof g->error);
    return CASK_ERR_PEER;
}

int dist_left_recovery(const cask_dist_graph *g, char *buf, size_t len)
{
    const cask_dist *dist = g->dist;
    for (int r = 0; dist->nleft && r < dist->size; r++) {
        if (!dist->left[r] || dist->excluded[r] || r == dist->rank)
            continue;
        char lost[160];
        dist_excluded_list(dist, -1, 0, lost, sizeof lost);
        int n = snprintf(buf, len, "rank %d left the job while rank %d recovered graph %u "
                         "from the loss of rank %s: the survivors cannot finish it without "
                         "it", r, dist->rank, g->id, lost);
        if (dist->left_why[0] && n > 0 && (size_t)n < len)
            snprintf(buf + n, len - (size_t)n, " (rank %d reported: %s)", dist->left_by,
                     dist->left_why);
        return r;
    }
    return -1;
}

void dist_leave_announce(cask_dist *dist)
{
    /* a rank that saw a rank fail says so: the others may not have noticed yet. It may
     * have learnt it from another rank's ABORT or LEAVE rather than by its own transport
     * (at 32 ranks a survivor then named the first rank to leave instead of the lost
     * one): those messages name the lost rank too. */
    pthread_mutex_lock(&dist->mu);
    char why[sizeof dist->left_why] = "";
    if (dist->nlost && dist_all_losses_agreed(dist)) {
        /* the losses were agreed on; unless this rank's recovery then failed (a lost
         * chunk without a source, say), it leaves after a good end. If it failed, its
         * error is the cause a survivor still recovering must name, not "left" alone:
         * that survivor may hear of this LEAVE before any other word of the failure. */
        if (dist->failed_graph && dist->failed_st == CASK_ERR_PEER)
            snprintf(why, sizeof why, "%.250s", dist->failed_msg);
    } else if (dist->nlost)
        snprintf(why, sizeof why, "%.250s", dist->err);   /* a control message: 255 B */
    else if (dist->lost_heard[0])
        snprintf(why, sizeof why, "%.250s", dist->lost_heard);
    else if (dist->left_why[0])
        snprintf(why, sizeof why, "%.250s", dist->left_why);
    /* A run that failed here (a task's failure, not a loss) failed everywhere: an ABORT
     * says so. This rank may have heard it from the failing rank before a peer did
     * (no order between different senders), and its LEAVE must not then be that peer's
     * cause ("left while needed"): it repeats the ABORT (the handler applies it
     * first). Not a loss's CASK_ERR_PEER: that would start a recovery there. */
    uint32_t graph = 0, run = 0;
    cask_status st = why[0] ? CASK_ERR_PEER : CASK_OK;
    char msg[sizeof dist->failed_msg];
    if (!why[0] && dist->failed_graph && dist->failed_st != CASK_ERR_PEER) {
        graph = dist->failed_graph;
        run = dist->failed_run;
        st = dist->failed_st;
        snprintf(msg, sizeof msg, "%s", dist->failed_msg);
    } else {
        snprintf(msg, sizeof msg, "%s", why);
    }
    pthread_mutex_unlock(&dist->mu);
    dist_ctrl_all(dist, graph, run, CTRL_LEAVE, (uint32_t)st, 0, msg);
}

void dist_leave_note_failure(cask_dist_graph *g, cask_status st)
{
    cask_dist *dist = g->dist;
    pthread_mutex_lock(&dist->mu);
    int remote = g->abort_run && g->abort_run == g->run;   /* the ABORT it repeats */
    dist->failed_graph = g->id;
    dist->failed_run = g->run;
    dist->failed_st = remote && g->abort_status ? g->abort_status : st;
    snprintf(dist->failed_msg, sizeof dist->failed_msg, "%.*s",
             (int)sizeof dist->failed_msg - 1, remote ? g->abort_msg : g->error);
    pthread_mutex_unlock(&dist->mu);
}

void dist_on_leave(cask_dist *dist, int from, const char *why_left)
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
        if (why_left && *why_left && !dist->left_why[0]) {
            snprintf(dist->left_why, sizeof dist->left_why, "%s", why_left);
            dist->left_by = from;
        }
        /* Receives of runs that still need it may never complete: end them now. A run
         * that already broke (a lost rank, an ABORT: a rank that failed sends it before
         * it leaves) keeps its own cause. The handler leaves g->error to the computing
         * side (dist_broken). */
        for (struct cask_dist_graph *g = dist->graphs; g && ng < MAXG; g = g->next) {
            if (!g->running || dist->nlost || (g->abort_run && g->abort_run == g->run) ||
                g->send_status || !needs(g, from))
                continue;
            left_message(g, from, why[ng], sizeof why[ng]);
            tok[ng] = dist_xfer_take_waiting(g, &ntok[ng]);
            g->handlers_in++;
            gs[ng++] = g;
        }
    }
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    for (int i = 0; i < ng; i++)
        dist_xfer_end_run(gs[i], tok[i], ntok[i], CASK_ERR_PEER, why[i]);
    dist_steal_on_leave(dist, from);   /* tasks moved there by balancing, unanswered */
    pthread_mutex_lock(&dist->mu);
    for (int i = 0; i < ng; i++)
        gs[i]->handlers_in--;
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}
