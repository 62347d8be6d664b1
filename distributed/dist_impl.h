/* distributed/dist_impl.h: the insides of the distributed layer (include/cask/distributed.h)
 * shared by its files: a process's membership of the job (struct cask_dist), the wire
 * headers, and what each dist_*.c offers the others; a graph's own types are in
 * dist_graph.h. The protocol is described in docs/design/distributed-internals.md. */
#ifndef CASK_DIST_DIST_IMPL_H
#define CASK_DIST_DIST_IMPL_H

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "cask/cask.h"
#include "cask/distributed.h"
#include "transport/bootstrap.h"
#ifdef CASK_HAVE_UCX
#include "transport/ucx.h"
#endif

/* UCX handler ids of the distributed layer. */
enum { DIST_AM_DATA = 16, DIST_AM_CTRL = 17, DIST_AM_DASH = 18, DIST_AM_STATE = 20 };
/* (19: dist_steal_impl.h's DIST_AM_STEAL) */
enum dist_ctrl { CTRL_PLAN = 1, CTRL_DONE = 2, CTRL_ABORT = 3, CTRL_BARRIER = 4, CTRL_LEAVE = 5,
                 CTRL_MEMBER = 6, CTRL_READY = 7 };

/* Every message carries the sender's membership epoch (dist_membership.c): a message
 * of another epoch than the receiver's, or from a rank the survivors fenced out, is
 * dropped. */
typedef struct dist_data_hdr {
    uint32_t graph, run, gid, version, epoch;
} dist_data_hdr;

typedef struct dist_ctrl_hdr {
    uint32_t graph, run, type, status;
    uint32_t epoch, pad;
    uint64_t value;           /* PLAN: the graph's hash; BARRIER: its sequence;
                                 MEMBER: the ranks the sender holds dead (bit mask) */
} dist_ctrl_hdr;

/* A declared data handle; gid = its index in cask_dist.data. */
typedef struct dist_datum {
    cask_data *d;
    int owner;
    size_t bytes;
    int made_here;            /* made by cask_dist_data_create: finalize destroys it */
    void *reserved;           /* its inaccessible address range */
    cask_data *home;          /* the owner's handle of its content: d, or, once a
                                 survivor adopted it from a lost owner, cask's */
    int home_made;            /* home was made by cask (finalize destroys it) */
    int orig_owner;           /* owner as declared (owner changes by adoption) */
    int lost;                 /* adopted from a lost owner with no loader: no content */
    cask_kernel *loader;      /* cask_dist_data_set_loader, or NULL */
    void *loader_args;
    size_t loader_args_size;
} dist_datum;

/* A control message that came before this rank was ready for it. */
typedef struct dist_early {
    struct dist_early *next;
    int from;
    dist_ctrl_hdr h;
    char msg[256];
} dist_early;

struct cask_dist_graph;

struct cask_dist {
    cask_runtime *rt;
    xport_boot *boot;
#ifdef CASK_HAVE_UCX
    xport_ucx *ucx;           /* NULL in a job of one process */
#endif
    int rank, size, local_rank, local_size;
    int steal;
    dist_datum *data;
    size_t ndata, cap;
    cask_data **index_keys;   /* open addressing: handle -> gid */
    uint32_t *index_vals;
    size_t index_cap;
    uint32_t next_graph;
    uint32_t *gone_ok_run;    /* per destroyed graph (index id - 1): the last run it
                                 completed here, for a survivor that recovers that run
                                 late (dist_recover_msg.c); grown under mu by
                                 cask_dist_graph_destroy, 0 for graphs still alive */
    uint32_t ngone_ok;
    uint64_t barrier_seq;
    uint64_t *barrier_seen;   /* per rank: the last BARRIER sequence it reached (under mu) */

    pthread_mutex_t mu;       /* what handlers and the computing thread share */
    pthread_cond_t cv;
    int *lost;                /* per rank: 1 once it failed (the transport said so) */
    int nlost;
    int *left;                /* per rank: 1 once it left the job (dist_leave.c) */
    int nleft;
    char left_why[256];       /* the failure a rank that left had seen, if any */
    char lost_heard[256];     /* a lost rank first heard of in another rank's ABORT,
                                 not by this rank's transport: its LEAVE repeats it */
    int left_by;
    uint32_t failed_graph, failed_run;   /* this rank's latest failed run, if any: its */
    cask_status failed_st;               /* LEAVE repeats it (dist_leave.c) */
    char failed_msg[512];
    /* membership (dist_membership.c; under mu) */
    uint32_t epoch;           /* agreed views so far */
    uint8_t *excluded;        /* per rank: out of the agreed view (dead or fenced) */
    int nexcluded;
    uint64_t suspects;        /* ranks others hold dead, not yet agreed */
    uint64_t silent;          /* lost here only by silence (the peer timeout): heard
                                 again before a view leaves them out, they are back */
    uint64_t heard_back;      /* silent ranks heard again since (the agreement's cue) */
    uint32_t *mem_epoch;      /* per rank: epoch of its latest MEMBER message */
    uint64_t *mem_mask;       /* and its mask */
    int agreeing;             /* this rank's compute thread is agreeing now */
    int fenced;               /* the others hold this rank dead: it must stop */
    char fenced_msg[512];
    cask_kernel *k_restore;   /* dist_recover.c: a snapshot back into a handle */
    struct dist_testkill *testkill;   /* CASK_DIST_TEST_KILL / _FREEZE, or NULL */
    dist_early *early;        /* control messages for graphs not computing yet */
    cask_kernel *k_send, *k_recv, *k_deliver, *k_copy, *k_mark;   /* dist_xfer.c's tasks */
    cask_kernel *k_reduce, *k_reduce_load;   /* dist_reduce.c's (made at its first call) */
    /* NCCL (dist_nccl.c): GPU-made chunks travel GPU to GPU when every rank can */
    int nccl_all;             /* every rank has a GPU and NCCL (agreed at init) */
    int nccl_device;          /* this rank's GPU for NCCL */
    struct dist_nccl *nccl;   /* the communicator, made by the first graph needing it */
    cask_kernel *k_nsend, *k_nrecv, *k_ndeliver;
    /* GPU chunks by UCX, GPU memory to GPU memory (dist_gpux.c), and the choice of the
     * route per transfer (dist_route.c) */
    int gpu_device;           /* this rank's GPU, -1 none (real GPUs, or simulated ones
                                 with CASK_DIST_SIM_GPU_UCX=1: gpu_sim) */
    int gpu_sim;
    FILE *xlog;               /* CASK_DIST_XFER_LOG (dist_xlog.c), NULL: off */
    struct dist_route *route; /* every rank's abilities and the cost model (agreed) */
    cask_kernel *k_gsend, *k_grecv, *k_gdeliver;
    struct cask_dist_graph *graphs;   /* created and not destroyed (handlers look here) */
    struct dist_dash *dash;   /* this job in the live dashboard (dist_dashboard.c) */
    struct dist_steal *stl;   /* balancing while running (dist_steal.c), NULL if off */
    char err[1024];
};

#include "distributed/dist_graph.h"   /* a graph: tasks, slots, sends, gathers */

static inline double dist_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The argument of a transfer task (dist_xfer.c, dist_nccl.c): its dist_send,
 * dist_slot or dist_local_copy. */
typedef struct dist_xfer_arg {
    void *p;
} dist_xfer_arg;

static inline void *dist_xfer_arg_of(cask_task_ctx *ctx)
{
    const dist_xfer_arg *a = cask_task_args(ctx, NULL);
    return a->p;
}

/* dist_data.c */
cask_status dist_gid(const cask_dist *dist, const cask_data *d, uint32_t *gid);

/* dist.c */
void dist_fail(cask_dist *dist, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sends a control message to every live rank but this one. */
void dist_ctrl_all(cask_dist *dist, uint32_t graph, uint32_t run, uint32_t type,
                   uint32_t status, uint64_t value, const char *msg);
/* Handle lookup for messages: the graph of id (under dist->mu). */
struct cask_dist_graph *dist_find_graph(cask_dist *dist, uint32_t id);

/* dist_dashboard.c: the job's view in each rank's live dashboard. Register before the
 * transport connects; announce this rank's URL after; leave before the transport goes. */
cask_status dist_dashboard_register(cask_dist *dist);
void dist_dashboard_announce(cask_dist *dist);
void dist_dashboard_leave(cask_dist *dist);

/* dist_graph.c */
void dist_graph_error(cask_dist_graph *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* dist_plan.c */
cask_status dist_plan(cask_dist_graph *g);
uint64_t dist_graph_hash(const cask_dist_graph *g);
dist_slot *dist_slot_find(const cask_dist_graph *g, uint32_t gid, uint32_t version);
void dist_plan_free(cask_dist_graph *g);
/* Frees n slots and their array (slots taken off a graph: dist_recover.c). */
void dist_plan_free_slots(cask_runtime *rt, dist_slot **slots, size_t n);
/* dist_local.c: this rank's local graph from the plan (g->local). */
cask_status dist_local_build(cask_dist_graph *g);
/* Applies a control message to g (under dist->mu). */
void dist_apply_ctrl(cask_dist_graph *g, int from, const dist_ctrl_hdr *h, const char *msg);

/* dist_run.c */
typedef int (*dist_ready_fn)(cask_dist_graph *g, void *arg);
/* Waits (bounded by failure detection) until ready(g, arg) or the run is broken (then
 * its cause), or, ignore_broken, until ready or 30 s after a loss. */
cask_status dist_wait_until(cask_dist_graph *g, dist_ready_fn ready, void *arg,
                            int ignore_broken);
/* Runs g->local once (run g->run) and agrees on the verdict with the other ranks of the
 * view (DONE or ABORT); drains the transfers. */
cask_status dist_run_local(cask_dist_graph *g);
/* Handlers (progress thread). */
void dist_on_ctrl(cask_dist *dist, int from, const dist_ctrl_hdr *h, const char *msg);
void dist_on_barrier(cask_dist *dist, int from, uint64_t seq);
/* Why the current run of g cannot go on (under dist->mu; sets g->error), or CASK_OK. */
cask_status dist_broken(cask_dist_graph *g);

/* dist_leave.c: a rank that left (cask_dist_finalize) while another still needs it */
/* Tells every rank that this one leaves (before the transport's goodbyes). */
void dist_leave_announce(cask_dist *dist);
/* Handler of LEAVE from rank `from` (progress thread), with the failure it had seen
 * (why, may be empty): ends the runs that need it. */
void dist_on_leave(cask_dist *dist, int from, const char *why);
/* A run of g failed here with st (computing thread): remembered for the LEAVE. */
void dist_leave_note_failure(cask_dist_graph *g, cask_status st);
/* Why g's current run (or plan agreement) cannot go on because a rank it needs left
 * (under dist->mu; sets g->error), or CASK_OK. */
cask_status dist_left_broken(cask_dist_graph *g);
/* A rank of the agreed view (not this one) that left the job, which a recovery of g
 * cannot do without (its STATE or READY will never come), its message in buf; or -1
 * (under dist->mu). */
int dist_left_recovery(const cask_dist_graph *g, char *buf, size_t len);
/* dist_membership.c: one agreed view of the live ranks, with an epoch. */
/* Whether a loss (the transport's, or one another rank reports) or a newer view is
 * not agreed yet, or this rank was fenced out (under mu). */
int dist_unagreed(const cask_dist *dist);
/* Whether every rank lost is out of the agreed view (under mu or single threaded). */
int dist_all_losses_agreed(cask_dist *dist);
/* The ranks out of the agreed view (with_lost: and those lost, not agreed yet) but
 * `skip` (-1: none), as "1, 5" in buf (truncated to len), or "?" when there is none:
 * for messages (under mu). */
void dist_excluded_list(const cask_dist *dist, int skip, int with_lost, char *buf, size_t len);
/* The survivors agree on who is gone: returns when every live rank reports the same
 * set of dead ranks (then dist->excluded and dist->epoch are the new view), or
 * CASK_ERR_PEER when this rank is fenced out (it is in the set, or the view is no
 * majority of the previous one) or the job has more than 64 ranks; err says why. */
cask_status dist_member_agree(cask_dist *dist, char *err, size_t errlen);
/* dist_member_agree if a loss is not agreed yet; CASK_OK otherwise. */
cask_status dist_member_settle(cask_dist *dist);
/* A MEMBER message (progress thread). */
void dist_member_on_msg(cask_dist *dist, int from, const dist_ctrl_hdr *h);
/* The transport heard again from a rank it had found silent (its progress thread):
 * unless a view left it out already, it is not lost any more. */
void dist_member_on_back(cask_dist *dist, int peer);
/* Whether peer, silent for the peer timeout, stays a suspect that a message takes
 * back: another rank is held lost already and no majority would remain without peer.
 * Not under dist->mu. */
int dist_member_keep_suspect(cask_dist *dist, int peer);
/* Ends the waiting receives of every running graph with why (a loss to agree on). */
void dist_member_break_runs(cask_dist *dist, const char *why);

/* dist_recover.c: finishing a run that lost ranks, on the survivors (see the file). */
cask_status dist_recover_init(cask_dist *dist);
/* At the start of each compute: after a recovery, the plan over the survivors; at the
 * first, snapshots of the owned inputs the graph overwrites and no loader makes. */
cask_status dist_recover_begin(cask_dist_graph *g);
/* Makes g's recovery record (what was delivered, STATE answers) before its PLAN is
 * sent, so that no STATE for g can come before it; failures are left to the compute. */
void dist_recover_prepare(cask_dist_graph *g);
/* The compute's run failed with CASK_ERR_PEER: agree, re-plan, re-run until done. */
cask_status dist_recover(cask_dist_graph *g);
void dist_recover_on_ready(cask_dist_graph *g, int from, const dist_ctrl_hdr *h);
/* After a compute ended (g->running 0): answers the STATE requests that came while it
 * still ran the run they ask about (the handler answers only a rank not computing). */
void dist_recover_answer_late(cask_dist_graph *g);
/* A STATE message (progress thread). */
void dist_on_state(cask_dist *dist, int from, const void *hdr, size_t hdr_len, void *ucx_msg);
/* Adds the loading tasks of a recovery plan to g->local (first in it). */
cask_status dist_recover_add_loads(cask_dist_graph *g);
void dist_recover_free(cask_dist_graph *g);
/* dist_lineage.c: survivors adopt the data of ranks out of the view (new owner: the
 * next live rank), filled by its loader where it has one. */
cask_status dist_lineage_adopt(cask_dist *dist, char *err, size_t errlen);
/* dist_testkill.c: CASK_DIST_TEST_KILL / _FREEZE / _DROP_DONE / ... (tests only). */
cask_status dist_testkill_init(cask_dist *dist);
/* Before each task of this rank's local graph: a probe task (only under the test
 * hook) that kills or freezes this process when it starts. */
cask_status dist_testkill_probe(cask_dist_graph *g, const cask_access *acc, int nacc);
/* CASK_DIST_TEST_DROP_DONE=R:S:N[:G]: on rank R, the DONE of run N (of graph G, if given)
 * from rank S is dropped
 * as if it came after a view change (1: drop it). Called under dist->mu. */
int dist_testkill_drop_done(const cask_dist *dist, uint32_t graph, int from, uint32_t run);
/* CASK_DIST_TEST_STALL=R:MS: on rank R, the first news of a loss (a lost peer, or a
 * MEMBER naming one: on the transport's progress thread) sleeps MS ms. Not under
 * dist->mu. */
void dist_testkill_on_lost(cask_dist *dist);
/* CASK_DIST_TEST_NOTE_LATE=R:MS: on rank R, a failed run waits MS ms before noting what
 * it delivered (dist_recover.c). Not under dist->mu. */
void dist_testkill_note_late(const cask_dist *dist);
/* CASK_DIST_TEST_GIVE_UP=R[:quiet]: on rank R, once, 1 (its first recovery gives up
 * where it plans: dist_recover.c), 2 with quiet (without telling the others); else 0.
 * Not under dist->mu. */
int dist_testkill_give_up(cask_dist *dist);
/* CASK_DIST_TEST_PLAN_LATE=R:MS: on rank R, each plan waits MS ms after it settled the
 * view (dist_run.c). Not under dist->mu. */
void dist_testkill_plan_late(const cask_dist *dist);
/* CASK_DIST_TEST_JOIN_KILL=R:STEP[:late]: rank R SIGKILLs itself in cask_dist_init just
 * before the join's collective named step ("nccl", "route"); with late, the others
 * begin that step only once they have seen R lost (at most 10 s). */
void dist_testkill_join(cask_dist *dist, const char *step);
/* CASK_DIST_TEST_KILL_WRITE=R:wN|R:mN|R:commit: on rank `rank`, the kind of point where
 * dist_file.c kills it ('w' its N-th write, 'm' its N-th mark, 'c' the commit; N in *at),
 * or 0. */
char dist_testkill_file(int rank, long *at);

/* dist_xfer.c: the tasks that move chunks (send, receive, deliver, copy) and the
 * handler of data messages. */
cask_status dist_xfer_register(cask_dist *dist);
/* Adds this rank's transfer tasks of exchange step e to g->local (planning): the
 * sends from *send_i and the slots from *slot_i while their step is e (g->sends and
 * g->slots are sorted by step); advances both. */
cask_status dist_xfer_add_exchange(cask_dist_graph *g, int e, size_t *send_i, size_t *slot_i);
/* Adds the copies between this rank's handles at the end (planning). */
cask_status dist_xfer_add_copies(cask_dist_graph *g);
/* The run cannot go on: takes every receive task of g still waiting (under dist->mu)
 * into *n tokens of a malloc'ed array (NULL if none), to pass to dist_xfer_end_run
 * after unlocking. */
cask_task_async **dist_xfer_take_waiting(cask_dist_graph *g, size_t *n);
/* A run of g broke with st (why): ends the receives taken (tok, n; frees tok) and the
 * NCCL transfers waiting for their turn, and aborts the NCCL transfers in flight,
 * which a peer may never match. Without dist->mu. */
void dist_xfer_end_run(cask_dist_graph *g, cask_task_async **tok, size_t n, cask_status st,
                       const char *why);
/* The local graph's failure hook: ends this rank's waiting receives, aborts NCCL
 * transfers in flight. */
void dist_xfer_on_local_failure(void *graph);
/* ucx_msg is the xport_ucx_msg of the data (progress thread). */
void dist_on_data(cask_dist *dist, int from, const dist_data_hdr *h, void *ucx_msg);
/* Numbers this rank's NCCL transfers in plan sequence order (planning). */
cask_status dist_xfer_order_nccl(cask_dist_graph *g);
/* Completions of a UCX send (arg: dist_send) and receive (arg: dist_slot), and the body
 * of a receive task (waits, without a worker, until its slot's copy landed); shared
 * with dist_gpux.c. */
void dist_xfer_sent(void *arg, cask_status st, const char *why);
void dist_xfer_landed(void *arg, cask_status st, const char *why);
cask_status dist_xfer_recv_wait(cask_task_ctx *ctx);
/* The body of a send task from host memory (a CPU task, or a simulated GPU's). */
cask_status dist_xfer_send_host(cask_task_ctx *ctx);

/* dist_route.c: how a chunk goes from rank `from` to rank `to` (planning; the same
 * answer on every rank). gpu_ends: made on a GPU and read by a GPU task. */
enum dist_route_kind { DIST_ROUTE_HOST = 0, DIST_ROUTE_NCCL = 1, DIST_ROUTE_UCX_CUDA = 2 };
/* At init, collective (after dist_nccl_init): every rank's GPU, UCX CUDA support and
 * NCCL, the forced route (CASK_DIST_GPU_XPORT) and the cost model (CASK_DIST_XPORT_MODEL)
 * of rank 0; turns NCCL off where two ranks share a GPU. Registers dist_gpux.c's
 * kernels. */
cask_status dist_route_init(cask_dist *dist);
int dist_route_choose(const cask_dist *dist, int from, int to, size_t bytes, int gpu_ends);
void dist_route_free(cask_dist *dist);
/* The choice itself, from a table (dist->route); and a table without a job, for tests:
 * n ranks, each with its GPU (-1 none), UCX CUDA support, host id and GPU bus id; the
 * settings as CASK_DIST_GPU_XPORT and CASK_DIST_XPORT_MODEL would give them (NULL:
 * unset). NULL with err set on bad settings. */
int dist_route_decide(const struct dist_route *R, int from, int to, size_t bytes, int gpu_ends);
struct dist_route *dist_route_new_for_test(int n, const int *gpu, const int *ucx_cuda,
                                           const char *const *host, const char *const *bus,
                                           int nccl_all, const char *force, const char *model,
                                           char *err, size_t errlen);
void dist_route_delete(struct dist_route *R);

/* dist_gpux.c (CUDA and UCX builds; stubs otherwise) */
cask_status dist_gpux_register(cask_dist *dist);
/* dist_xlog.c: CASK_DIST_XFER_LOG, a line of times a transfer (off: no clock read). */
void dist_xlog_open(cask_dist *dist);
void dist_xlog_close(cask_dist *dist);
double dist_xlog_now(const cask_dist *dist);             /* 0 when off */
void dist_xlog_send(cask_dist *dist, const dist_send *s, uint32_t run);   /* takes mu */
void dist_xlog_recv(cask_dist *dist, const dist_slot *s, uint32_t run, double t_wait);   /* under mu */
void dist_xlog_wait(cask_dist *dist, const dist_slot *s, uint32_t run, double t);   /* under mu */

/* dist_xfer.c: a final slot's deliver task after its chunk came into a GPU replica
 * (buffers: [0] the replica, [1] the owner's handle if home): on the GPU, and where the
 * replica is host memory (a simulated GPU's). */
#ifdef CASK_HAVE_CUDA
cask_status dist_xfer_deliver_gpu(cask_task_ctx *ctx);
#endif
cask_status dist_xfer_deliver_mem(cask_task_ctx *ctx);

/* Pins slot s's GPU landing buffer (planning). */
cask_status dist_gpux_pin(cask_dist_graph *g, dist_slot *s);
/* Unpins every landing buffer of g (before its handles go). */
void dist_gpux_graph_free(cask_dist_graph *g);
/* The same for n slots taken out of their graph (drop_plan, dist_recover.c). */
void dist_gpux_unpin(cask_dist *dist, dist_slot **slots, size_t n);
#ifdef CASK_HAVE_UCX
/* Before the transport is made: this rank's GPU (dist->gpu_device), and a progress
 * thread that makes it current (UCX's CUDA transports work in its context). */
void dist_gpux_thread_setup(cask_dist *dist, xport_ucx_config *uc);
#endif

/* dist_nccl.c (stubs without NCCL). NCCL transfers are tasks on this rank's NCCL GPU,
 * issued on the communicator's own stream after the task's stream (so after the copies
 * that brought the chunk there), ended by a poller thread when they finish. Every rank
 * issues its NCCL transfers in the plan's global order (the order in which the
 * sequential task flow created them; a task that is ready before its turn waits, and
 * the one that fills the gap issues it): that is a topological order of the whole
 * job's graph, so the earliest unfinished transfer always has both ends able to issue
 * it, and the communicator, which runs them in issue order, cannot deadlock. Computing
 * two distributed graphs with NCCL transfers at the same time is not supported. */
/* At init, collective: does every rank have a GPU and NCCL? Registers the kernels. */
cask_status dist_nccl_init(cask_dist *dist);
/* Collective (every rank, after the plan agreement of a graph with NCCL transfers):
 * makes the communicator and connects every pair, once per job. */
cask_status dist_nccl_ensure(cask_dist *dist, char *err, size_t errlen);
/* A run broke: transfers in flight can no longer finish; aborts the communicator
 * (later graphs needing it fail). Thread safe. */
void dist_nccl_abort(cask_dist *dist, const char *why);
int dist_nccl_busy(cask_dist *dist);
/* A run of g starts: nothing issued yet. */
void dist_nccl_run_start(cask_dist_graph *g);
/* A run of g broke: ends the transfers whose task ran but which wait for their turn. */
void dist_nccl_end_waiting(cask_dist_graph *g, cask_status st, const char *why);
void dist_nccl_graph_free(cask_dist_graph *g);
void dist_nccl_finalize(cask_dist *dist);

#endif
