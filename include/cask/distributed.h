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
 * writes it; otherwise the compute fails naming it. Replaces an earlier loader; kernel
 * NULL (no args) removes it: once the graphs go on from content its loader does not
 * make (a later graph reading the results of earlier ones), a lost d then fails the
 * compute that needs it, naming it, instead of being made as it first was.
 * Errors: CASK_ERR_INVALID (NULL dist or d; args without a kernel, args_size without
 * args),
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

/* Runs task index on rank (owner computes, as StarPU-MPI's STARPU_EXECUTE_ON_NODE)
 * instead of where its data and the balance would put it; rank -1 undoes it. A pinned
 * task is never moved by the planner's balance nor stolen while it runs; if rank is
 * lost, the task is placed as any other. Every rank calls it alike (it is part of the
 * graph the ranks check is the same). Errors: CASK_ERR_INVALID (index or rank out of
 * range), CASK_ERR_STATE (graph planned). Not thread safe (build from one thread). */
cask_status cask_dist_graph_set_rank(cask_dist_graph *g, size_t index, int rank);

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
 * lets a program print or check the placement, or take the plan's one-time costs out of
 * a timed loop (routes; the NCCL communicator, made by the first plan whose transfers
 * use NCCL). Collective. */
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

/* ---- collectives ---- */

typedef enum cask_dist_op {
    CASK_DIST_MIN = 0,   /* identity INT64_MAX */
    CASK_DIST_MAX,       /* identity INT64_MIN */
    CASK_DIST_SUM,       /* identity 0 (wrapping) */
    CASK_DIST_BOR        /* bitwise or; identity 0 */
} cask_dist_op;

/* Combines the n values at v of every rank element by element with op; on return v
 * holds the result, the same on every rank. Collective: every rank calls it with the
 * same n and op (a small distributed graph: a tree of combines to rank 0, then a copy
 * to each rank). It survives a rank lost meanwhile as a compute does; that rank's
 * values then count or not (the op's identity in their place): every survivor gets
 * the same result. With one rank, v is left as it is. Errors: CASK_ERR_INVALID (NULL
 * dist or v, n 0, bad op), CASK_ERR_NOMEM, or those of cask_dist_graph_compute, the
 * message in cask_dist_error. Call it from one thread. */
cask_status cask_dist_allreduce(cask_dist *dist, int64_t *v, size_t n, cask_dist_op op);

/* ---- one output file written by the ranks ----
 *
 * Results are written where they are computed: every rank writes its own parts of the
 * file at their offsets (pwrite into the one file all of them hold open), as MPI-IO
 * does, when the file is on a file system every rank sees; otherwise the caller gathers
 * the parts to one rank (the root, rank 0), which writes them all. The file appears
 * under its name only when complete: the ranks write a temporary file beside it,
 * PATH.tmp.PID.TOKEN (PID the root's process id, TOKEN 16 random hex digits), and a
 * commit renames it once every
 * part (a "unit": a chunk of the caller's) was reported written by some rank. A rank
 * lost while writing leaves its units unreported: the caller writes them again (its
 * recomputation does) or the commit fails naming them; never a file with a hole. */

typedef enum cask_dist_write_mode {
    CASK_DIST_WRITE_AUTO = 0,    /* in place if every rank sees the file, else gathered
                                    (cask_dist_file_note says why) */
    CASK_DIST_WRITE_IN_PLACE,    /* in place; an error if a rank does not see the file */
    CASK_DIST_WRITE_GATHER       /* rank 0 writes everything */
} cask_dist_write_mode;

/* "auto", "inplace" (or "in-place"), "gather" into *mode; CASK_ERR_INVALID otherwise. */
cask_status cask_dist_write_mode_parse(const char *s, cask_dist_write_mode *mode);

typedef struct cask_dist_file cask_dist_file;

/* Collective: the root (cask_dist_file_root: rank 0 unless it was lost) creates the
 * temporary file beside path (mode 0666 less the umask; CASK_ERR_IO on every rank if it
 * cannot, the message naming it), and with AUTO or IN_PLACE and several ranks every
 * other rank opens it by its name, which no other file can have: a rank that can is on
 * the same file system. In place when every rank could (and mode is not GATHER): then
 * each holds it open for writing. With AUTO and a rank that could not, the file is
 * gathered: only the root holds it, and
 * cask_dist_file_note names the rank and why; IN_PLACE fails instead (CASK_ERR_IO on
 * every rank). The verdict is the same on every rank; a job of one process is in
 * place. Errors: CASK_ERR_IO, CASK_ERR_INVALID (NULL argument, bad mode),
 * CASK_ERR_NOMEM, those of cask_dist_allreduce; the message in cask_dist_error. */
cask_status cask_dist_file_open(cask_dist *dist, const char *path, cask_dist_write_mode mode,
                                cask_dist_file **out);

/* 1 when every rank writes its own parts (in place), 0 when the root writes them all. */
int cask_dist_file_in_place(const cask_dist_file *f);
/* The rank that made the file and, gathered, writes it all: rank 0, or once ranks were
 * lost the lowest rank left. */
int cask_dist_file_root(const cask_dist_file *f);
/* The descriptor to write through (O_RDWR), -1 on a rank that does not write. The
 * descriptor is f's (closed by cask_dist_file_commit and _close). */
int cask_dist_file_fd(const cask_dist_file *f);
/* The temporary file's name (the root's, and every rank's when in place; "" elsewhere):
 * for a signal handler that removes it. */
const char *cask_dist_file_temp_path(const cask_dist_file *f);
/* Why an AUTO file is gathered ("rank 2 cannot open /x/out.npy.tmp...: No such file or
 * directory"), "" when in place or asked to gather. The same on every rank. */
const char *cask_dist_file_note(const cask_dist_file *f);

/* Writes len bytes of buf at byte offset off (all of them: short writes and EINTR
 * retried). Thread safe (several tasks may write at once). CASK_ERR_IO (message in
 * err, errlen bytes, may be NULL) naming the file and the cause, CASK_ERR_INVALID on a
 * rank that does not write. */
cask_status cask_dist_file_pwrite(cask_dist_file *f, const void *buf, size_t len,
                                  uint64_t off, char *err, size_t errlen);

/* Reports that unit (0 <= unit) was written whole by this rank: call it after its
 * bytes are written. Thread safe. CASK_ERR_INVALID (negative unit), CASK_ERR_NOMEM. */
cask_status cask_dist_file_mark(cask_dist_file *f, int64_t unit);

/* Receipts, for units written by tasks of a distributed graph g: d (8 bytes, declared
 * to f's job) is written by the task that writes unit `unit`, once its bytes are
 * written, with the value unit + 1. d is gathered in g to a witness (rank 0; rank 1 for
 * data rank 0 owns); after each compute of g, cask_dist_file_receipts marks there the
 * units whose receipts came. A rank lost once its writes were done then leaves no
 * unit unaccounted for; and d, an output of g, is what a recovery makes again for a
 * rank lost before, so that it writes the unit again. Call as cask_dist_graph_gather
 * (every rank alike, before g is planned); f must stay open while g computes. Errors: as cask_dist_graph_gather,
 * CASK_ERR_INVALID (not in place, one rank), CASK_ERR_NOMEM. */
cask_status cask_dist_file_gather_receipt(cask_dist_file *f, cask_dist_graph *g, cask_data *d,
                                          int64_t unit);
/* After a compute of the graphs given receipts: marks the units whose receipts came to
 * this rank. */
cask_status cask_dist_file_receipts(cask_dist_file *f);

/* In place, collective: the ranks exchange the units they marked (cask_dist_file_mark)
 * and whether each is ok (0: this rank vetoes). Afterwards every rank knows the same
 * missing units (cask_dist_file_missing): a caller that can still write them (compute
 * them again) may do so and exchange again before the commit. CASK_OK when the exchange
 * itself worked, whatever it found; its errors otherwise (then f is still usable only
 * for cask_dist_file_close). Gathered, or one rank: no exchange, this rank's marks. */
cask_status cask_dist_file_exchange(cask_dist_file *f, int ok, int64_t nunits);
/* The first unit at or after from that the last exchange found no rank had written,
 * or -1. */
int64_t cask_dist_file_missing(const cask_dist_file *f, int64_t from);

/* Ends the writing. In place, collective: each rank syncs its bytes to the disk
 * (fdatasync) and closes its descriptor first (a file system that reports write errors
 * late, NFS, reports them there: a failure is a veto; gathered, the root syncs), then an
 * exchange as above; if no rank vetoed, every unit in [0, nunits) was
 * marked by some rank and (size >= 0) the file holds size bytes, one rank (the lowest
 * that answered: rank 0 unless it was lost) renames the temporary file to its name and
 * tells the others (and syncs the folder); otherwise it removes it. Gathered: the root alone (the others need
 * not call it, and it may have left the job by then), with the units it marked.
 * Returns CASK_OK when the file was renamed, the same on every rank; else CASK_ERR_IO
 * with the message (cask_dist_file_error) naming the missing units and the ranks that
 * gave no report, the ranks that vetoed, or the failed rename; or the exchange's error.
 * Close f afterwards in any case. */
cask_status cask_dist_file_commit(cask_dist_file *f, int ok, int64_t nunits, int64_t size);

/* Message of the last failure of f ("" if none). */
const char *cask_dist_file_error(const cask_dist_file *f);

/* Closes the descriptor and frees f; an uncommitted temporary file is removed (by rank
 * 0, and in place by every rank: rank 0 may be lost). f may be NULL. */
void cask_dist_file_close(cask_dist_file *f);

#ifdef __cplusplus
}
#endif
#endif
