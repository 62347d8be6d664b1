/* host_cache.h (internal): the caching allocator of the runtime's host chunk memory
 * (host replicas it owns). Pageable blocks for chunks CPU tasks make; pinned ones
 * (cudaHostAlloc) only for host copies of chunks a GPU wrote, which GPUs read back. Freed
 * blocks are kept by size class up to a byte limit (config host_cache_limit,
 * CASK_HOST_CACHE_LIMIT) and reused; large blocks are 2 MiB-aligned with transparent huge
 * pages advised. Thread safe. */
#ifndef CASK_RUNTIME_HOST_CACHE_H
#define CASK_RUNTIME_HOST_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "cask/cask.h"

#define HC_BINS 64   /* distinct (size class, pinned) pairs kept; more are not cached */

typedef struct hc_bin {
    size_t size;
    void *head;      /* free blocks, linked through their first word */
    uint32_t count;
    uint8_t pinned;
} hc_bin;

typedef struct host_cache {
    cask_runtime *rt;
    pthread_mutex_t lock;
    int ready;
    int huge;                 /* advise MADV_HUGEPAGE on blocks of 2 MiB and more */
    size_t limit;             /* bytes kept at most (both kinds); 0: keep nothing */
    /* [0] pageable, [1] pinned; cached classes only (blocks of 64 KiB and more) */
    size_t cached[2];         /* bytes kept now */
    size_t live[2];           /* bytes handed out and not given back */
    size_t peak[2];           /* the most live at any time */
    uint64_t hits, misses;    /* requests met from kept blocks / from the system */
    int nbins;
    hc_bin bins[HC_BINS];
} host_cache;

cask_status hcache_init(host_cache *c, cask_runtime *rt, size_t limit);
/* A block of at least bytes (64-byte aligned; 4 KiB from 64 KiB on). pinned: page-locked
 * (only with GPUs; without, plain memory). Errors: CASK_ERR_NOMEM (logged). */
cask_status hcache_alloc(host_cache *c, size_t bytes, int pinned, void **out);
/* Gives back a block of hcache_alloc with the same bytes and pinned. */
void hcache_free(host_cache *c, void *p, size_t bytes, int pinned);
/* Returns every kept block to the system. */
void hcache_trim(host_cache *c);
/* A consistent copy of the counters (cask_runtime_host_cache_stats). */
void hcache_stats(host_cache *c, cask_host_cache_stats *out);
void hcache_destroy(host_cache *c);

#endif
