/* cask/distributed.h: running one task graph across the processes of a job (one process per
 * node or per GPU), started by a PMIx launcher:
 *
 *     mpirun -n 4 ./prog            srun --mpi=pmix -n 4 ./prog
 *
 * The model is SPMD with a sequential task flow, as StarPU-MPI's: every process runs
 * the same program, registers the same data handles and adds the same tasks in the same
 * order. Each data handle has an owner rank, which holds its initial content. cask
 * then places each task on the rank that holds most of its input bytes (ties: the rank
 * holding what it writes, then the lowest rank), every rank deriving the same placement
 * without talking; a task is run by its rank (or, when balancing while running, by an
 * idle rank on its behalf: its inputs go there and its outputs come back, the results
 * are the same bytes; see cask_dist_config.balance), and the data it reads from other
 * ranks is sent there (UCX active messages, rendezvous and zero copy for large
 * chunks). After the graph, each datum's latest content is back in its owner's handle
 * and, if asked with cask_dist_graph_gather, in the root's handle too.
 *
 * A program started without a launcher is a job of one process: the same code runs
 * everything locally and needs no network.
 *
 * Failures never hang. A task failure on any rank, or a graph that differs between
 * ranks, makes cask_dist_graph_compute return an error on every rank, with a message
 * naming the rank and the cause. A rank that dies (UCX peer error, its process gone, or
 * silent for CASK_PEER_TIMEOUT_MS) is survived: the other ranks agree on who is gone
 * (one view, numbered by an epoch, held by a majority of the previous one), adopt its
 * data, recompute what it held from the tasks that made it (back to the sources: the
 * owners' handles, snapshots cask takes of inputs the graph overwrites, and loaders,
 * cask_dist_data_set_loader) and finish the compute with the results of a run without
 * failure. A lost chunk needed again with no reproducible source (user memory of the
 * lost rank, no loader) fails the compute with CASK_ERR_PEER naming the chunks. A rank
 * that was only slow and was held dead is fenced out: its compute returns
 * CASK_ERR_PEER ("fenced out"), and nothing it sends is taken. See docs/distributed.md
 * ("Failures: what survives what") for the model and its limits.
 */
#ifndef CASK_DIST_H
#define CASK_DIST_H

#include <stddef.h>
#include <stdint.h>
#include "cask/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* This process's membership of the job: transport, peers, registered data. Opaque. */
typedef struct cask_dist cask_dist;

enum cask_dist_field {
    CASK_DIST_PEER_TIMEOUT_MS = 1u << 0,
    CASK_DIST_HEARTBEAT_MS    = 1u << 1,
    CASK_DIST_STEAL           = 1u << 2,
    CASK_DIST_BALANCE         = 1u << 3
};

typedef struct cask_dist_config {
    uint64_t field_mask;
    int peer_timeout_ms;   /* a peer silent this long is dead. CASK_PEER_TIMEOUT_MS;
                              30000 */
    int heartbeat_ms;      /* CASK_UCX_HEARTBEAT_MS; 1000 */
    int steal;             /* move tasks from ranks with more work to ranks with less
                              when placing them (see docs). CASK_DIST_STEAL; 1 */
    int balance;           /* while running, let an idle rank run CPU tasks of a busy
                              one (their inputs travel to it, their outputs come back;
                              results are the same bytes; see docs). CASK_DIST_BALANCE;
                              0 (opt-in: see docs/distributed.md, Limits) */
} cask_dist_config;

/* Joins the job: learns rank and size from the launcher (PMIx), connects to every
 * other process (UCX). Collective: every rank calls it. cfg may be NULL. On failure
 * cask_runtime_error(rt) has the message. Errors: CASK_ERR_PEER (launcher or peers
 * unreachable), CASK_ERR_LAUNCH (one of several processes started without PMIx, e.g.
 * `srun --mpi=none`: refused rather than run as N copies; the message names the fix),
 * CASK_ERR_UNSUPPORTED (several processes but cask built without UCX),
 * CASK_ERR_UCX, CASK_ERR_NOMEM. rt must outlive the returned context. */
cask_status cask_dist_init(cask_runtime *rt, const cask_dist_config *cfg, cask_dist **out);

/* Leaves the job. Collective unless peers failed: waits (bounded) for the other ranks.
 * Frees every placeholder and copy cask made; the user's handles stay the user's.
 * dist may be NULL. */
cask_status cask_dist_finalize(cask_dist *dist);

int cask_dist_rank(const cask_dist *dist);
int cask_dist_size(const cask_dist *dist);
/* Rank among the processes on this node, and their number (pick a GPU with it). */
int cask_dist_local_rank(const cask_dist *dist);
int cask_dist_local_size(const cask_dist *dist);
/* 1 if rank is lost to this process (its failure was seen, or an agreed view left it
 * out): after a compute that survived a loss, whatever the lost rank was to do after it
 * (write the results gathered to it) will not happen. 0 otherwise, also for a rank out
 * of range or a NULL dist. Thread safe. */
int cask_dist_rank_lost(cask_dist *dist, int rank);

/* Waits for every rank (CASK_ERR_PEER if one is lost, or left the job: finalized after
 * a failure of its own). */
cask_status cask_dist_barrier(cask_dist *dist);

/* Message of the last failure of dist ("" if none); valid until the next call. */
const char *cask_dist_error(const cask_dist *dist);

/* ---- data ---- */

/* Declares that rank owner holds d's initial content. Every rank calls it for the same
 * handles in the same order (this order names the data across ranks) with the same
 * owner; d must have the same size everywhere. On ranks other than the owner d is only
 * a name: its content is not read, and cask never writes it unless a gather sends
 * content there. Errors: CASK_ERR_INVALID (owner out of range, d already declared),
 * CASK_ERR_NOMEM. Not thread safe (declare from one thread). */
cask_status cask_dist_set_owner(cask_dist *dist, cask_data *d, int owner);

/* The owner of d; CASK_ERR_NOT_FOUND if d was not declared. */
cask_status cask_dist_owner(const cask_dist *dist, const cask_data *d, int *owner);

/* A convenience for the usual case: on the owner, registers host_ptr (bytes long, kept
 * by the caller as with cask_data_register; NULL: the runtime allocates); on other
 * ranks makes a placeholder that takes no memory (never acquire it there: the address
 * is reserved but inaccessible). Then declares the owner. cask_dist_finalize destroys
 * the handle (the caller must not); host_ptr must stay valid until then. */
cask_status cask_dist_data_create(cask_dist *dist, size_t bytes, int owner, void *host_ptr,
                                  cask_data **out);

/* Declares how to make d's initial content again on any rank: a loader, run when a
 * rank holding d was lost and d's content as the graph first read it is needed again
 * (cask_dist_graph_compute recomputes lost chunks from their sources). The loader is a
 * task with one buffer, d, written whole (CASK_WRITE), run on a CPU worker of whichever
 * survivor holds d then, with args (args_size bytes, copied now; this rank's own
 * pointers may be in them: each rank passes its own). It must write the same bytes on
 * every rank: read a file region, generate from a seed, copy from an input every rank
 * holds. Every rank should declare the same loaders (a rank without one cannot make
 * d). Data without a loader whose owner is lost can be recomputed only if a task
 * writes it; otherwise the compute fails naming it. Replaces an earlier loader.
 * Errors: CASK_ERR_INVALID (NULL dist, d or kernel; args_size without args),
 * CASK_ERR_NOT_FOUND (d not declared), CASK_ERR_NOMEM. Not thread safe (declare from
 * one thread, as cask_dist_set_owner). */
cask_status cask_dist_data_set_loader(cask_dist *dist, cask_data *d, cask_kernel *kernel,
                                      const void *args, size_t args_size);

/* ---- graphs ---- */

/* A graph run across the ranks; built identically on every rank. Opaque. */
typedef struct cask_dist_graph cask_dist_graph;

cask_status cask_dist_graph_create(cask_dist *dist, cask_dist_graph **out);

/* Adds a task, as cask_graph_add_task (same descriptor and dependency rules); every
 * handle it uses must have been declared with cask_dist_set_owner. *index (may be NULL)
 * is the task's number in the graph, the same on every rank. Errors: as
 * cask_graph_add_task, CASK_ERR_NOT_FOUND (undeclared data), CASK_ERR_STATE (graph
 * already computed once: build a new graph). */
cask_status cask_dist_graph_add_task(cask_dist_graph *g, const cask_task_desc *desc,
                                     size_t *index);

/* After each compute, dest (on rank root, bytes of d long, the caller's) holds d's final
 * content; other ranks pass NULL. Every rank calls it alike (root and d the same). A
 * datum may be gathered to several roots, and to one root into several destinations:
 * each root receives it once per compute and fills all of its destinations. dest may
 * be the buffer d was registered over on its owner (then it is already there).
 * Between computes the caller may read and write dest; during one, only cask writes
 * it. Errors: CASK_ERR_INVALID (root out of range, dest NULL on root),
 * CASK_ERR_NOT_FOUND (d not declared), CASK_ERR_STATE (graph planned already). */
cask_status cask_dist_graph_gather(cask_dist_graph *g, cask_data *d, int root, void *dest);

/* Runs the graph on all ranks and waits. Collective. The first compute places the
 * tasks and checks that every rank built the same graph (CASK_ERR_INVALID on every
 * rank otherwise); a graph can be computed again. A rank lost during the compute is
 * survived (see the top of this file): the survivors finish it and return CASK_OK, and
 * later computes run on the survivors. Returns on every rank the first failure
 * anywhere: CASK_ERR_TASK_FAILED (a task failed, on whichever rank), CASK_ERR_PEER (a
 * rank was lost and its chunks cannot be recomputed, or this rank was fenced out, or
 * too few ranks survive to hold a majority), CASK_ERR_NOMEM, ...;
 * cask_dist_graph_error says what happened where. A recovery replays the graph's
 * earlier computes too (a graph computed again starts from what the last one left):
 * between computes, the program must not change the data the graph reads. */
cask_status cask_dist_graph_compute(cask_dist_graph *g);

/* Message of the last failure ("" if none). */
const char *cask_dist_graph_error(const cask_dist_graph *g);

/* Where task index runs (after the first compute, or after cask_dist_graph_plan). */
cask_status cask_dist_graph_task_rank(const cask_dist_graph *g, size_t index, int *rank);

/* Places the tasks without running them (the first compute does it otherwise):
 * lets a program print or check the placement. Collective. */
cask_status cask_dist_graph_plan(cask_dist_graph *g);

typedef struct cask_dist_graph_info {
    size_t ntasks;            /* in the whole graph */
    size_t ntasks_here;       /* placed on this rank */
    size_t nphases;           /* exchange steps of the plan (a plan order only: each
                                 rank runs one local graph, transfers included, and
                                 every task waits only for the chunks it uses) */
    size_t transfers_out, transfers_in;   /* chunks sent / received per compute */
    uint64_t bytes_out, bytes_in;         /* their bytes */
    size_t moved;             /* tasks the balancer moved off the rank holding most
                                 of their input (steal) */
    size_t stolen_out;        /* tasks of this rank's that ran on idle ranks (balancing
                              while running), all computes so far */
    size_t stolen_in;         /* tasks of other ranks' that ran here */
    double elapsed_s;         /* last compute, wall time */
    double comm_wait_s;       /* of which waiting for other ranks' data */
    size_t transfers_gpu_ucx; /* this rank's (in and out) that go GPU memory to GPU
                                 memory by UCX (CUDA-aware UCX: cuda_ipc in a node) */
    size_t transfers_nccl;    /* this rank's (in and out) that go by NCCL */
    uint64_t host_staging_bytes;   /* last compute: bytes of chunks made on a GPU and
                                      read by a GPU task on another rank that crossed
                                      host memory in cask's code (sent from or landed
                                      in a host buffer); 0 when every such chunk went
                                      GPU to GPU */
} cask_dist_graph_info;
cask_status cask_dist_graph_query(const cask_dist_graph *g, cask_dist_graph_info *info);

/* Describes the transport between processes this build uses, into buf (len bytes):
 * the UCX library (version, the wheel or the system's) and whether it moves CUDA
 * memory; "no UCX" in a build without it. For --version lines. Thread safe. */
void cask_dist_transport_describe(char *buf, size_t len);

/* Frees the graph and the copies it made. Not while it computes. g may be NULL. */
cask_status cask_dist_graph_destroy(cask_dist_graph *g);

#ifdef __cplusplus
}
#endif
#endif
