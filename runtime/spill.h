/* spill.h (internal): the host memory limit and spilling to disk.
 *
 * With a limit (config host_mem_limit), every host replica the runtime allocates for a
 * handle (cask_data_create; never registered user memory, which cask cannot free) is
 * counted and kept in an LRU list. When the count passes the limit, I/O threads owned
 * by the runtime take the least recently used replicas that no task and no acquire
 * holds (busy == 0), write the only valid copy to a file in the run's spill folder
 * (clean ones, whose content is already in a GPU replica or in the file, are simply
 * dropped), and free them. A task that needs a spilled handle reads it back
 * (coherence.c). A failed write (disk full) leaves the data in memory, never lost, and
 * makes every later task fail with a message naming the folder and the chunk.
 *
 * Lock order: a data handle's lock, then the spill lock. The I/O threads hold the spill
 * lock only to pick a victim, and only try-lock its data. */
#ifndef CASK_RUNTIME_SPILL_H
#define CASK_RUNTIME_SPILL_H

#include "runtime/runtime.h"
#include "runtime/data.h"

/* Starts spilling if rt->cfg.host_mem_limit is set: makes the run's folder
 * SPILL_DIR/cask-spill-PID-XXXXXX (removing dead runs' folders first) and starts the
 * I/O threads. Error message in err. */
cask_status spill_create(cask_runtime *rt, char *err, size_t errlen);
/* Stops the I/O threads, removes every file and the folder. After data_destroy_all. */
void spill_destroy(cask_runtime *rt);
/* Stops the I/O threads only (before handles are freed at shutdown). */
void spill_stop(cask_runtime *rt);

/* Host memory for d's replica 0 (d locked): allocated, counted, put in the LRU. With
 * may_wait, waits a bounded time for the I/O threads while over the limit (not from an
 * I/O thread). */
cask_status spill_host_alloc(cask_runtime *rt, cask_data *d, int may_wait);
/* Frees d's host replica (d locked): out of the LRU and the count. */
void spill_host_free(cask_runtime *rt, cask_data *d);
/* d's host replica was used: most recently used now (d locked). */
void spill_touch(cask_runtime *rt, cask_data *d);
/* Reads d's spill file into its host replica (d locked, host memory allocated). */
cask_status spill_read(cask_runtime *rt, cask_data *d);
/* Removes d's spill file, if any (d locked or being freed). */
void spill_forget(cask_runtime *rt, cask_data *d);
/* If a spill write failed: copies its message to msg and returns CASK_ERR_IO. */
cask_status spill_failed(cask_runtime *rt, char *msg, size_t msglen);

/* A CPU worker about to run t: if an input of t is only on disk, t is handed to the
 * I/O threads, which read its inputs back, pin them and make t ready again (the
 * worker runs other tasks meanwhile). Returns 1 if t was taken (the caller must not
 * touch it), 0 to run it now. */
int spill_defer(cask_runtime *rt, struct cask_task *t);
/* After t's inputs were prepared (or t was skipped): unpins what was read for it. */
void spill_undefer(cask_runtime *rt, struct cask_task *t);
/* Reads d back into host memory if its only copy is on disk, and pins the host replica
 * (busy). For the I/O threads. In coherence.c. */
cask_status coh_load_host(cask_runtime *rt, cask_data *d);

/* Counters for tests and statistics. */
typedef struct spill_stats {
    size_t used, limit, peak;        /* counted host bytes now, the limit, the most seen */
    uint64_t writes, reads, drops;   /* files written, read back; clean replicas dropped */
    uint64_t deferred;               /* tasks that waited for read-backs off their worker */
    char dir[600];                   /* the run's folder */
} spill_stats;
void spill_get_stats(cask_runtime *rt, spill_stats *out);

/* Called by the I/O threads with d locked and its host replica out of the LRU: write it
 * if it is the only copy, then free it. Returns 1 if freed, 0 if it must stay (in use),
 * or an error status (negated) if the write failed. In coherence.c. */
int coh_spill_host_locked(cask_runtime *rt, cask_data *d, int *wrote);
/* Writes d's host replica to its spill file (d locked). */
cask_status spill_write(cask_runtime *rt, cask_data *d);

#endif
