/* coherence.h (internal): keeping replicas of a data handle coherent (MSI-like, as
 * StarPU): a read makes a valid replica where the task runs, copied from the nearest
 * valid one (same GPU < peer GPU < host); a write leaves only the writer's replica
 * valid. Copies for GPU tasks are asynchronous on the GPU's copy streams, ordered by
 * events; copies for CPU tasks and users are synchronous. */
#ifndef CASK_RUNTIME_COHERENCE_H
#define CASK_RUNTIME_COHERENCE_H

#include "runtime/graph.h"
#include "runtime/data.h"
#include "runtime/sched.h"   /* worker_counters */

/* Observes asynchronous copies (tracing): called with phase 0 just before a copy is
 * enqueued on stream and phase 1 just after; which is DEV_STREAM_H2D/D2H/PEER. */
typedef struct coh_tracer {
    void (*copy)(struct coh_tracer *tr, int phase, void *stream, int which, uint32_t data_id,
                 size_t bytes, int src_node, int dst_node);
} coh_tracer;

/* CPU task: host pointers and sizes of its buffers, valid for the access modes. The
 * copies off a GPU this takes are counted in ctr (the CPU worker's; may be NULL). */
cask_status coh_prepare_host(cask_runtime *rt, cask_task *t, worker_counters *ctr, void **bufs,
                             size_t *sizes, char *msg, size_t msglen);
void coh_finish_host(cask_runtime *rt, cask_task *t);

/* GPU task on gpu: device pointers; copies are enqueued and the compute stream made to
 * wait for them. */
cask_status coh_prepare_gpu(cask_runtime *rt, cask_task *t, int gpu, void *compute_stream,
                            worker_counters *ctr, coh_tracer *tr, void **bufs, size_t *sizes,
                            char *msg, size_t msglen);
/* After the task's completion event: unpins its replicas. For each written handle with
 * write-back on, starts the copy to host and returns its data in wb[] (count in *nwb),
 * for the caller to watch. */
void coh_finish_gpu(cask_runtime *rt, cask_task *t, int gpu, worker_counters *ctr,
                    coh_tracer *tr, cask_data **wb, int *nwb);
/* Replays (graph_replay.c): pins d's replica on gpu for a whole replayed graph, made
 * usable for mode as a task's buffer is (copies enqueued, stream made to wait for them;
 * a write invalidates the other replicas), and gives its address in *ptr. */
cask_status coh_replay_pin(cask_runtime *rt, cask_data *d, int gpu, cask_access_mode mode,
                           void *stream, worker_counters *ctr, void **ptr);
/* After the replay ended: unpins d's replica on gpu and, if the graph wrote d and d has
 * write-back on, starts its copy to host: returns 1 if it did (watch it with
 * coh_writeback_done), 0 if not; *st: a failed write-back's status. */
int coh_replay_unpin(cask_runtime *rt, cask_data *d, int gpu, int written, worker_counters *ctr,
                     cask_status *st);
/* 1 when the write-back copy of d to host has completed. */
int coh_writeback_done(cask_runtime *rt, cask_data *d);

/* User access (acquire) and flush at destroy: synchronous. */
cask_status coh_acquire_host(cask_data *d, cask_access_mode mode, void **ptr);
cask_status coh_flush_user(cask_data *d);
/* Ends a user acquire (unpins the host replica from spilling). */
void coh_release_host(cask_data *d);
/* Frees every replica the runtime allocated. */
void coh_free_all(cask_data *d);

/* Called by the memory manager with d locked: make it safe to free d's replica on node
 * (write it back to host first if it is the only valid copy). */
cask_status coh_evict_locked(cask_runtime *rt, cask_data *d, int node, int *spilled);

#endif
