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
    size_t limit;             /* bytes kept at most; 0: keep nothing */
    size_t cached;            /* bytes kept now */
    size_t live;              /* bytes handed out (cached classes only) */
    uint64_t hits, misses;
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
void hcache_destroy(host_cache *c);

#endif
