/* memory.h (internal): per-GPU memory pools with a byte limit. Freed blocks are kept
 * for reuse by size (no cudaMalloc per task); when a GPU is at its limit, cached blocks
 * are released first, then replicas least recently used are dropped (clean) or written
 * back to host and dropped (dirty): never lost. */
#ifndef CASK_RUNTIME_MEMORY_H
#define CASK_RUNTIME_MEMORY_H

#include "runtime/runtime.h"
#include "runtime/data.h"
#include "runtime/sched.h"

cask_status mem_create(cask_runtime *rt);
void mem_destroy(cask_runtime *rt);

/* Memory for a replica of `bytes` on node (1+gpu). May evict other replicas of this
 * node (counted in ctr, may be NULL). The caller holds the lock of the data it
 * allocates for. CASK_ERR_BUSY: no room now, but replicas in use by running tasks
 * hold some (try again when one finishes); CASK_ERR_NOMEM: no room at all. */
cask_status mem_alloc(cask_runtime *rt, int node, size_t bytes, worker_counters *ctr, void **out);
/* Gives a block back to the node's cache. */
void mem_release(cask_runtime *rt, int node, void *ptr, size_t bytes);

/* LRU bookkeeping of allocated replicas (caller holds the data's lock). */
void mem_touch(cask_runtime *rt, replica *r);
void mem_forget(cask_runtime *rt, replica *r);

/* Bytes GPU gpu's pool has allocated (cached blocks included) and its limit; 0 and 0
 * without pools. Thread safe (the dashboard reads it). */
void mem_node_usage(cask_runtime *rt, int gpu, size_t *used, size_t *limit);


#endif
