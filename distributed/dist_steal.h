/* distributed/dist_steal.h: balancing while a distributed graph runs (dist_steal.c).
 *
 * The plan stays as it is; a planned CPU task may run on another rank instead of its
 * own ("remote execution"): when it is about to start on its (busy) rank and a peer
 * has announced itself idle, its inputs go to that peer, which runs the same kernel on
 * them and sends the outputs back; the task ends when they land. Its successors,
 * transfers and gathers are the plan's, so results are the same bytes. See
 * docs/design/distributed-internals.md, "Balance while running". */
#ifndef CASK_DIST_DIST_STEAL_H
#define CASK_DIST_DIST_STEAL_H

#include "cask/cask.h"

struct cask_dist;
struct cask_dist_graph;
struct cask_dist_config;
struct dist_xfer_arg;

/* At cask_dist_init, before the transport connects (registers the message handler):
 * reads CASK_DIST_BALANCE, CASK_DIST_BALANCE_BW and CASK_DIST_SLOW_RANK. Sets
 * dist->stl (NULL when neither balancing nor the slow-rank hook is on). */
cask_status dist_steal_init(struct cask_dist *dist, const struct cask_dist_config *cfg);
/* Registers the balancing message handler (before the transport connects). */
void dist_steal_register(struct cask_dist *dist);
/* After the transport connected: starts the thread that announces idleness and runs
 * tasks taken from others. */
cask_status dist_steal_start(struct cask_dist *dist);
/* At finalize, before the transport goes: stops the thread. */
void dist_steal_stop(struct cask_dist *dist);
/* At finalize, after the transport went (no handler runs any more): frees everything. */
void dist_steal_finalize(struct cask_dist *dist);
/* peer was lost: tasks it had taken from this rank fail (progress thread). */
void dist_steal_on_lost(struct cask_dist *dist, int peer);
/* peer left the job (cask_dist_finalize, its LEAVE): tasks it had taken from this rank
 * and not answered fail (progress thread). A thief leaves only after its run of their
 * graph ended, which, with this rank's tasks unfinished, means it failed: the run fails
 * here too, with that cause once it is heard (not a hang). */
void dist_steal_on_leave(struct cask_dist *dist, int peer);

/* Planning (dist_local.c): prepares g's tasks for remote execution (before adding them). */
cask_status dist_steal_plan(struct cask_dist_graph *g);
/* Planning: if task i may run elsewhere (or the slow-rank hook is on), turns *desc into
 * its wrapper (the kernel of the same name that decides where the body runs), whose
 * argument *arg (copied by cask_graph_add_task) names the task. */
void dist_steal_wrap(struct cask_dist_graph *g, size_t i, cask_task_desc *desc,
                     struct dist_xfer_arg *arg);
void dist_steal_graph_free(struct cask_dist_graph *g);
/* Tasks of g that ran on other ranks / that this rank ran for others, so far. */
void dist_steal_counts(const struct cask_dist_graph *g, size_t *out, size_t *in);

/* A run of g begins / its local graph finished / the run ended with st (the computing
 * thread). A run that failed is remembered: a task of it that peers gave this rank is
 * answered with that failure (g->error) instead of being run or refused. */
void dist_steal_run_begin(struct cask_dist_graph *g);
void dist_steal_local_done(struct cask_dist_graph *g);
void dist_steal_run_end(struct cask_dist_graph *g, cask_status st);

#endif
