/* distributed/dist_steal_impl.h: the insides of run-time balancing, shared by dist_steal.c
 * (state, idleness, the victim's side: wrapping, shipping a task, its result),
 * dist_steal_exec.c (the thief's side: taking a task, running it, the input cache) and
 * dist_steal_life.c (init, the thread's start and stop, finalize, the run hooks). */
#ifndef CASK_DIST_DIST_STEAL_IMPL_H
#define CASK_DIST_DIST_STEAL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "distributed/dist_impl.h"
#include "distributed/dist_steal.h"

/* UCX handler id of balancing messages. */
enum { DIST_AM_STEAL = 19 };   /* dist_impl.h has 16..18 */
enum { ST_IDLE = 1, ST_TASK = 2, ST_RESULT = 3 };
enum { STEAL_CREDIT = 2,     /* tasks a rank may have out at one peer before it knows
                                how fast that peer serves them */
       STEAL_CREDIT_MAX = 8,
       STEAL_MAX_KERNELS = 64,
       STEAL_ADV = 8,        /* kernel times an IDLE message carries */
       STEAL_ALIGN = 64,
       STEAL_FAILED_RUNS = 4,   /* failed runs remembered (graphs computing at once) */
       STEAL_WORTH = 4 };     /* a task moves only if it takes this many times its bytes'
                                 time on the wire (a quarter of its time at most goes to
                                 moving it) */

typedef struct steal_hdr {
    uint32_t type;
    uint32_t graph, run;
    uint32_t index;           /* TASK: the task's number in the graph */
    uint32_t ticket;          /* TASK, RESULT: the victim's slot (generation << 16 | slot);
                                 IDLE: the sender's sequence (messages are not ordered) */
    int32_t status;           /* RESULT: CASK_OK, or the failure (data: the message) */
    uint32_t inmask;          /* TASK: accesses whose content the data carries */
    uint32_t keepmask;        /* TASK: inputs the thief keeps (or has kept) for this run */
    uint32_t idle;            /* IDLE: 1 idle (during run `run` of graph `graph`), 0 busy */
    uint64_t exec_ns;         /* RESULT: how long the thief took to run it */
    uint32_t khash[STEAL_ADV];   /* IDLE: kernels (hash of the name) the sender timed, */
    uint32_t kus[STEAL_ADV];     /* and its time of one body of each, microseconds */
    uint32_t version[CASK_MAX_BUFFERS];   /* TASK: version of each access */
} steal_hdr;

/* A kernel and the wrapper of the same name that the local graph runs instead. */
typedef struct steal_kernel {
    cask_kernel *orig, *wrap;
    uint32_t hash;            /* of the name (kernels are named alike on every rank) */
    _Atomic uint64_t ns;      /* learnt time of one body here (EWMA), 0: unknown */
} steal_kernel;

/* One task of a graph as the wrapper sees it. */
typedef struct steal_task {
    struct dist_steal *S;
    struct cask_dist_graph *g;
    size_t index;
    steal_kernel *k;
    int stealable;
    uint32_t keep;            /* inputs read by several tasks here: a thief keeps them */
    uint32_t version[CASK_MAX_BUFFERS];
} steal_task;

struct dist_steal_graph {
    steal_task *tasks;        /* by task index (this rank's only are set) */
    uint32_t *keep_idx;       /* gid -> row of sent, UINT32_MAX none */
    uint64_t *sent;           /* row x size: (run << 32 | version + 1) last sent to a peer
                                 (under S->mu) */
    _Atomic size_t out, in;   /* tasks run elsewhere / taken from others, all runs */
    int local_done;           /* this run's local graph finished (computing thread) */
};

/* A task of this rank's running on a peer (victim side). */
typedef struct vslot {
    int used, peer;
    int result_seen, send_done;
    uint32_t gen, graph, run;
    struct cask_dist_graph *g;
    cask_task_async *tok;
    int nout;
    double move_ns;           /* estimated time of its bytes on the wire */
    void *out[CASK_MAX_BUFFERS];
    size_t outsz[CASK_MAX_BUFFERS];
    size_t outlen;
    char *in, *res;           /* packed inputs (being sent), packed outputs (landing) */
    size_t in_cap, res_cap;
    char name[80];
} vslot;

/* A task taken from a peer (thief side). */
typedef struct tslot {
    struct tslot *next;       /* free list or run queue */
    struct tslot *all_next;   /* every slot made */
    struct dist_steal *S;
    int victim;
    uint32_t graph, run, ticket, index;
    cask_kernel *kernel;
    char *args;
    size_t args_size, args_cap;
    int naccess;
    cask_access_mode mode[CASK_MAX_BUFFERS];
    uint32_t gid[CASK_MAX_BUFFERS], version[CASK_MAX_BUFFERS];
    size_t size[CASK_MAX_BUFFERS], off[CASK_MAX_BUFFERS];
    uint32_t inmask, keepmask;
    size_t inlen;
    uint64_t exec_ns;
    double wait_t0;           /* since when it waits for a kept input, 0 not */
    char *buf, *out;
    size_t cap, out_cap, outlen;
    char name[80];
} tslot;

/* A run that failed here: tasks of it taken from peers get this answer. */
typedef struct steal_failed_run {
    uint32_t graph, run;      /* graph 0: unused (graph ids start at 1) */
    cask_status st;
    char msg[768];
} steal_failed_run;

/* An input a thief keeps for later tasks of the same run. */
typedef struct steal_cached {
    struct steal_cached *next;
    uint32_t graph, run, gid, version;
    void *buf;
    size_t bytes;
    int refs;
} steal_cached;

struct dist_steal {
    cask_dist *dist;
    int balance;
    double bw;                /* bytes/s assumed for moving a task's data */
    int slow_rank;            /* test hook: -1 none */
    double slow_factor;
    int slow_spin;            /* burn the CPU (a slower core) rather than sleep */
    pthread_mutex_t mu;       /* everything below unless said */
    pthread_cond_t cv;
    pthread_t thread;
    int thread_on, stop;
    steal_kernel kern[STEAL_MAX_KERNELS];   /* set while planning (computing thread) */
    _Atomic int nkern;        /* entries set (each before it is counted) */
    _Atomic uint32_t *adv_hash, *adv_us;   /* per peer x STEAL_ADV: what its IDLE said */
    _Atomic int *idle;        /* per peer: it said it is idle (lock-free reads) */
    _Atomic int nidle;
    uint32_t *idle_seq;       /* per peer: sequence of its latest IDLE (progress thread) */
    _Atomic uint64_t *idle_run;   /* per peer: graph << 32 | run it said it is idle in */
    uint32_t told_seq;        /* of this rank's latest IDLE (under mu) */
    _Atomic uint64_t cur_run; /* graph << 32 | run of the latest run begun here */
    int *inflight;            /* per peer: this rank's tasks it runs */
    double *svc_ns;           /* per peer: its time to serve one of them (EWMA), 0 unknown */
    int rr;
    vslot *vs;
    int nvs;
    tslot *tall, *tfree, *qhead, *qtail;
    tslot *deferred;          /* taken tasks waiting for an input another one brings */
    steal_failed_run failed[STEAL_FAILED_RUNS];   /* the latest, a ring */
    int failed_next;
    steal_cached *cache;
    _Atomic int active, active_done;   /* graphs computing here / whose local graph ended */
    _Atomic int exec_busy;    /* the thread runs a taken task */
    _Atomic int bodies;       /* wrapped task bodies running here now */
    _Atomic uint64_t started; /* wrapped task bodies started here, ever */
    int announced;            /* what this rank last told (under mu) */
    uint64_t announced_run;   /* the run it said it is idle in (under mu) */
};

/* dist_steal.c */
/* The test hook (CASK_DIST_SLOW_RANK): on the slowed rank, sleeps or spins (factor - 1)
 * x el after a body that took el seconds; returns the time added. */
double steal_slow_down(struct dist_steal *S, double el);
/* Tells every live peer whether this rank is idle (in run `run`, graph << 32 | run).
 * Under S->mu. */
void steal_tell_idle(struct dist_steal *S, int idle, uint64_t run);
#ifdef CASK_HAVE_UCX
void steal_on_msg(void *arg, xport_ucx_msg *m);
#endif
void steal_send_result(struct dist_steal *S, tslot *ts, cask_status st, const char *msg);
/* The wrapper kernel of every stealable task: ships it to an idle peer, or runs it here. */
cask_status steal_wrap_cpu(cask_task_ctx *ctx);
/* dist_steal_exec.c */
#ifdef CASK_HAVE_UCX
void steal_on_task(struct dist_steal *S, xport_ucx_msg *m, const steal_hdr *h);
#endif
/* Runs the taken tasks queued (thread, S->mu held; unlocks while running). */
void steal_exec_queued(struct dist_steal *S);
/* Answers a taken task that will not run here (this rank leaves the job). */
void steal_refuse(struct dist_steal *S, tslot *ts);
/* The balancing thread (arg: S): announces idleness, runs taken tasks. */
void *steal_thread(void *arg);
void steal_cache_drop_graph(struct dist_steal *S, uint32_t graph);

static inline size_t steal_align(size_t n)
{
    return (n + STEAL_ALIGN - 1) & ~(size_t)(STEAL_ALIGN - 1);
}

/* Grows *buf to n bytes (keeping nothing); 0 on success. */
static inline int steal_grow(char **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    char *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

#endif
