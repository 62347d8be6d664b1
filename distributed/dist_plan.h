/* distributed/dist_plan.h (internal): the planner's state, shared by dist_plan.c (tasks,
 * phases, transfers) and dist_plan_final.c (the final exchange: gathers and copies home).
 * The same on every rank. */
#ifndef CASK_DIST_DIST_PLAN_H
#define CASK_DIST_DIST_PLAN_H

#include "distributed/dist_impl.h"

/* A handle of one datum on one rank, in the plan's terms: hid 0 is the user's handle
 * on the owner; the others are copies. */
typedef struct phandle {
    int rank;
    int last_use;             /* latest phase of a task using it */
    int last_send;            /* latest exchange step that sends from it, -1 none */
    cask_data *local;         /* on this rank: the cask handle */
} phandle;

typedef struct ploc {
    int h;                    /* index into pdatum.h */
    int avail;                /* phase from which the latest version is readable there */
} ploc;

typedef struct pdatum {
    uint32_t version;
    int prod_phase;           /* phase of the latest version's producer, -1 initial */
    int holder;               /* index into h: where it was produced */
    phandle *h;
    int nh, caph;
    ploc *locs;               /* handles holding the latest version */
    int nlocs, capl;
    int touched;              /* written by the graph */
    int gpu_made;             /* the latest version's producer runs on a GPU if it can */
} pdatum;

typedef struct planner {
    cask_dist_graph *g;
    cask_dist *dist;
    int me;                   /* this rank; -1 in the dry pass (no local effects) */
    int balance;              /* move tasks off ranks past their quota */
    double quota;             /* bytes of work a rank takes before giving tasks away */
    pdatum *pd;
    double *load;
    double total;
    int maxphase;
    uint32_t nccl_seq;        /* NCCL transfers planned so far (every rank alike) */
    const dist_replan *rp;    /* a recovery plan (dist_recover.c), or NULL */
    cask_status st;
} planner;

/* The location (index in d->locs) of the latest version of d on rank r, or -1. */
int plan_loc_on(const pdatum *d, int r);
/* A new landing slot of this rank (P->g->slots), or NULL out of memory (P->st). */
dist_slot *plan_new_slot(planner *P);
/* Notes a send of gid at version from this rank's handle h to rank `to` at exchange
 * step `exchange` (by NCCL with sequence seq when nccl). */
void plan_push_send(planner *P, int exchange, int to, uint32_t gid, uint32_t version,
                    cask_data *h, int nccl, uint32_t seq);
/* On this rank: a copy handle for datum gid, filled by a transfer (incoming: a landing
 * buffer registered as a handle, given in *buf_out) or by a task (runtime-allocated);
 * NULL on failure (P->st). */
cask_data *plan_make_local_copy(planner *P, uint32_t gid, uint32_t version, int incoming,
                                void **buf_out);
/* Whether the latest version of d goes to reader by NCCL (made on a GPU, read on one;
 * reader NULL: a final copy, by UCX), and then its number in the plan's order of NCCL
 * transfers (*seq). */
int plan_by_nccl(planner *P, const pdatum *d, const dist_task *reader, uint32_t *seq);
/* The final exchange: every gathered or written datum's last version to its owner and
 * to the ranks that gather it (copies here, sends, landing slots). */
void plan_final(planner *P, int final_exchange);

#endif
