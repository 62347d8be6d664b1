/* distributed/dist_recover.h: the state shared by dist_recover.c (the protocol of a
 * recovery: agree, exchange what was delivered, re-plan, run again) and dist_lineage.c
 * (what must be recomputed, from which sources). */
#ifndef CASK_DIST_DIST_RECOVER_H
#define CASK_DIST_DIST_RECOVER_H

#include "distributed/dist_impl.h"

enum { STATE_RECOVERING = 1, STATE_COMPLETED = 2, STATE_GONE = 3 };
/* A STATE_GONE carries the leaver's error, this long at most, as its bytes. */
enum { DIST_GONE_WHY = 400 };

/* The header of a STATE message (DIST_AM_STATE); its data: one byte per gather, then
 * one per datum, 1 where this rank delivered that gather / brought that datum home in
 * the failed run. */
typedef struct dist_state_hdr {
    uint32_t graph, epoch, run, flags, n;
} dist_state_hdr;

/* One load of a recovery plan on this rank: the source content of a datum into the
 * handle the plan starts from. */
typedef struct dist_load {
    uint32_t gid;
    cask_data *h;
    const void *snap;          /* from this snapshot, or (NULL) by the datum's loader */
} dist_load;

typedef struct dist_recovery {
    uint32_t computes;         /* computes of the graph so far (replayed on recovery) */
    int hopeless;              /* it reads lost data: no recovery can help */
    uint8_t *touched;          /* per gid: written by the graph */
    uint8_t *first_reads;      /* per gid: the graph's first access to it reads it */
    void **snap;               /* per gid: this rank's snapshot at the first compute */
    size_t nd;                 /* gids the per-gid arrays hold (data declared later are
                                  added by dist_recover_begin: this graph never uses them) */
    uint8_t *done;             /* ngathers + ndata: delivered / home in this compute */
    uint32_t done_run;         /* the run (compute) that done describes: a STATE of
                                  another run neither adds to it nor is lost by its
                                  reset at the next compute (under dist->mu) */
    uint8_t *orphan;           /* per gid: its owner was lost during this compute */
    size_t ndone;
    /* the protocol (under dist->mu) */
    uint32_t *state_epoch, *state_run;
    uint8_t *state_flags;
    uint32_t *completed_run;   /* per rank: the latest run it said it completed (a
                                  STATE_COMPLETED answer; kept when a later STATE of
                                  the same rank overwrites state_run) */
    uint32_t *ready_epoch;
    char (*gone_why)[DIST_GONE_WHY];   /* per rank: why it left the run, as its STATE_GONE
                                          said (its error then), or empty */
    /* the recovery plan */
    dist_task *saved_tasks;    /* the graph's own tasks while the plan is built */
    size_t saved_ntasks;
    dist_task *xt;             /* the tasks replayed: computes x the graph's tasks */
    size_t nxt;
    size_t nrun;               /* of which the recovery runs */
    uint8_t *skip, *out_home, *out_gather, *fresh;
    cask_data **start;
    cask_data **made;          /* start handles made here */
    size_t nmade;
    dist_load *loads;
    size_t nloads;
    dist_replan rp;
} dist_recovery;

/* dist_recover_msg.c */
/* Sends STATE h (with h->n bytes of what was delivered, copied) to rank `to`. */
void dist_rec_send_state(cask_dist *dist, int to, const dist_state_hdr *h, const uint8_t *bytes);
/* Waits for every survivor's STATE of failed_run (readies 0; value: failed_run) or READY
 * of at least value (readies 1): CASK_OK; CASK_ERR_PEER at a loss or a newer view not
 * agreed yet (agree again); CASK_ERR_PEER with *stop set and g->error written when the
 * recovery cannot go on (a survivor gave up on it, or left the job). */
cask_status dist_rec_wait(cask_dist_graph *g, int readies, uint32_t value, uint32_t failed_run,
                          int *stop);

/* dist_lineage.c */
cask_status dist_lineage_prepare(cask_dist_graph *g);   /* touched, first reads */
/* Snapshots this rank's owned data that the graph overwrites, reads first, and no
 * loader can make again (at the first compute). */
cask_status dist_lineage_snapshot(cask_dist_graph *g);
/* Survivors adopt the data of ranks out of the view (new owner: the next live rank);
 * on the new owner a home handle, filled by the loader if there is one. */
cask_status dist_lineage_adopt(cask_dist *dist, char *err, size_t errlen);
/* Builds the recovery plan of g (rec->rp etc.) from rec->done: which tasks to run,
 * which outputs are still wanted, where each input comes from. CASK_ERR_PEER with
 * g->error naming the chunks if a needed one has no source left. */
cask_status dist_lineage_plan(cask_dist_graph *g);
/* CASK_ERR_PEER, with g->error naming them, if g reads data of lost ranks that could
 * not be made again (no loader). */
cask_status dist_lineage_check_lost(cask_dist_graph *g);
/* Frees the recovery plan's own parts (not g's plan). */
void dist_lineage_free_plan(dist_recovery *rec);

#endif
