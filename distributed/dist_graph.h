/* distributed/dist_graph.h: a distributed graph as every rank holds it: the tasks as
 * declared, the plan's slots (chunks received), sends, NCCL transfers, local copies and
 * gathers, and the graph itself with its runs. Included by dist_impl.h. */
#ifndef CASK_DIST_DIST_GRAPH_H
#define CASK_DIST_DIST_GRAPH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "cask/cask.h"
#include "cask/distributed.h"

typedef struct dist_access {
    uint32_t gid;
    cask_access_mode mode;
} dist_access;

typedef struct dist_task {
    cask_kernel *kernel;
    dist_access *access;
    int naccess;
    void *args;
    size_t args_size;
    char *name;
    uint64_t field_mask;
    int priority;
    uint32_t where;
    int device;
    int pin;                  /* the rank it must run on (cask_dist_graph_set_rank), or -1 */
    /* plan */
    int rank;
    int phase;
    int moved;                /* placed off its best rank by the balancer */
    cask_data **local;        /* on its rank: the handle of each access */
} dist_task;

/* Where one version of a datum lives on this rank, or arrives. */
typedef struct dist_slot {
    uint32_t gid, version;
    cask_data *h;             /* local handle holding it */
    void *buf;                /* landing buffer, h's registered memory;
                                 NULL for an NCCL slot (h is then on the GPU) */
    int nccl;                 /* comes by NCCL, seq-th of the plan's NCCL transfers */
    uint32_t seq;
    uint32_t order;           /* its place among this rank's NCCL transfers */
    int gpu_ucx;              /* comes by UCX into gbuf, h's pinned GPU replica */
    void *gbuf;
    int staged;               /* GPU-made, read on a GPU, but lands in host memory */
    int exchange;             /* step at whose end it must be here */
    int from;
    uint32_t arrived_run;     /* run whose copy landed, 0: none (under dist->mu) */
    uint32_t done_run;        /* run whose deliver task ran (final slots) */
    uint32_t landing_run;     /* run of the copy being received */
    int landing_direct;       /* the latest copy landed straight into dest (the next
                                 run's cannot land before this run's deliver ran) */
    cask_task_async *waiting; /* its receive task, waiting for it (under dist->mu) */
    double wait_t0;           /* when that task began waiting */
    double t_arrive;          /* CASK_DIST_XFER_LOG only (dist_xlog.c) */
    struct cask_dist_graph *graph;
    cask_data *home;          /* final: copy into the owner's user handle */
    void *dest;               /* final: copy into the gather destination */
    void **also;              /* final: further destinations of gathers of this datum
                                 to this rank (malloc'ed, nalso of them) */
    int nalso;
    struct dist_slot *hnext;  /* hash chain */
} dist_slot;

/* One chunk this rank sends at an exchange step. */
typedef struct dist_send {
    int exchange;
    int to;
    uint32_t gid, version;
    cask_data *h;             /* local handle holding that version */
    struct cask_dist_graph *graph;
    cask_task_async *tok;     /* its send task, until UCX completes it */
    int nccl;                 /* goes by NCCL, seq-th of the plan's NCCL transfers */
    uint32_t seq;
    uint32_t order;           /* its place among this rank's NCCL transfers */
    int gpu_ucx;              /* goes by UCX from GPU memory (dist_gpux.c) */
    int staged;               /* GPU-made, read on a GPU, but leaves from host memory */
    uint32_t run;             /* the run and (gpu_ucx) device address of the send posted */
    void *gptr;
    double t_task, t_post;    /* CASK_DIST_XFER_LOG only (dist_xlog.c) */
} dist_send;

/* An NCCL transfer of this rank's, in issue order (dist_nccl.c; under its lock). */
typedef struct dist_nccl_op {
    int ready;                /* its task ran: the chunk is ready at event ev */
    int peer, recv;
    void *buf;
    size_t bytes;
    void *ev;                 /* cudaEvent_t, made at first use */
    cask_task_async *tok;
    char what[96];
} dist_nccl_op;

/* A copy between two handles of this rank at the end (a version in a copy handle that
 * must reach the user's handle). */
typedef struct dist_local_copy {
    cask_data *from;
    cask_data *to;            /* the owner's user handle, or NULL */
    void *dest;               /* a gather destination, or NULL */
    void **also;              /* further gather destinations (malloc'ed), nalso */
    int nalso;
    struct cask_dist_graph *graph;
    uint32_t gid;
    uint32_t done_run;        /* run whose copy task ran */
    int gpu_made;             /* the version was made by a GPU task: a mark alone (no to,
                                 dest) is a GPU task then, so that it moves nothing */
} dist_local_copy;

typedef struct dist_gather {
    uint32_t gid;
    int root;
    void *dest;               /* on root: where the bytes go */
} dist_gather;

struct cask_dist_graph {
    cask_dist *dist;
    uint32_t id;
    struct cask_dist_graph *next;   /* dist->graphs */
    dist_task *tasks;
    size_t ntasks, tasks_cap;
    dist_gather *gathers;
    size_t ngathers;
    int planned;
    uint64_t hash;
    /* plan */
    int nphases;              /* exchange steps: 0..nphases (the last one final) */
    cask_graph *local;        /* this rank's tasks, sends and receives: one cask graph */
    dist_slot **slot_hash;    /* (gid, version) -> slot */
    size_t slot_hash_cap;
    dist_slot **slots;        /* every slot made (to free) */
    size_t nslots, slots_cap;
    dist_send *sends;
    size_t nsends, sends_cap;
    dist_local_copy *copies;
    size_t ncopies, copies_cap;
    cask_data **made;         /* handles the plan created (copies), freed at destroy */
    size_t nmade, made_cap;
    size_t ntasks_here, moved;
    uint64_t bytes_out, bytes_in;
    size_t transfers_out, transfers_in;
    uint32_t nccl_transfers;  /* in the whole plan (the same on every rank) */
    dist_nccl_op *nccl_ops;   /* this rank's, by order */
    uint32_t nccl_here, nccl_next;   /* how many; the next to issue (this run) */
    int plan_failed;
    cask_status plan_status;
    int *plan_seen;           /* per rank: PLAN received (under dist->mu) */
    uint64_t *plan_hash;
    uint32_t *plan_ep;        /* per rank: the epoch its PLAN was sent in */
    cask_status *plan_st;
    /* run (under dist->mu unless said) */
    uint32_t run;             /* computes so far (messages carry it) */
    int running;
    int handlers_in;          /* handlers ending this run's tasks after unlocking: the
                                 compute does not return (nor the graph go) before */
    uint32_t *done_from;      /* per rank: run of its last DONE */
    uint32_t abort_run;       /* run another rank aborted, 0 none */
    uint32_t abort_epoch;     /* the view it aborted it in (a recovery's run is run again
                                 under the same number in a later view) */
    int abort_from;
    cask_status abort_status;
    char abort_msg[512];
    long sends_pending;
    long recvs_pending;
    cask_status send_status;
    char send_msg[256];
    double elapsed_s, comm_wait_s;
    uint64_t host_staging[2]; /* by run parity: bytes of GPU->GPU chunks that crossed
                                 host memory (a copy may land before its run starts) */
    size_t transfers_gpu_ucx, transfers_nccl;   /* planned, this rank's (in and out) */
    struct dist_steal_graph *stl;   /* balancing while running (dist_steal.c) */
    uint32_t ok_run;          /* last run this rank completed with success */
    uint32_t plan_epoch;      /* the view the plan was made for */
    struct dist_recovery *rec;   /* dist_recover.c's state, from the first compute */
    const struct dist_replan *replan;   /* planning a recovery (dist_plan.c reads it) */
    char error[1024];
};

/* What a recovery plan differs in from a normal one (dist_recover.c makes it, dist_plan.c
 * follows it): the tasks not run, the outputs still wanted, the handle on each datum's
 * owner that holds the content the plan starts from. Ranks excluded from the view
 * (dist->excluded) get nothing. */
typedef struct dist_replan {
    const uint8_t *skip;      /* per task of g->tasks: not planned */
    const uint8_t *out_home;  /* per gid: the final version goes to the owner's home */
    const uint8_t *out_gather;/* per gather: still to deliver */
    cask_data *const *start;  /* per gid: on its owner, the handle the plan starts from
                                 (NULL elsewhere or where unused) */
    const uint8_t *fresh;     /* per gid: that handle is not the owner's home (the
                                 same on every rank) */
} dist_replan;

#endif
