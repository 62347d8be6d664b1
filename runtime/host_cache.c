/* host_cache.c: the runtime's caching allocator of host chunk memory (see host_cache.h).
 *
 * Why: an array compute makes every temporary and result chunk afresh, and a fresh
 * buffer of 16 MiB costs 4096 page faults (zeroing included) the first time it is
 * written, more than the arithmetic of a light chain on it. Like PyTorch's
 * CachingHostAllocator and RMM's pool resources, freed blocks are kept by size class and
 * handed out again, so a second compute of the same shapes touches no new page.
 *
 * Blocks of 2 MiB and more are mapped 2 MiB-aligned and advised MADV_HUGEPAGE (the
 * kernel's transparent huge pages in "madvise" mode, NumPy's choice for its large
 * arrays): one fault and one TLB entry per 2 MiB instead of 512. Pinned blocks
 * (cudaHostAlloc) are cached apart: they are far dearer to make. Small blocks (under
 * 64 KiB) go straight to the C library.
 *
 * A free block's first word links it in its class's list, so the cache needs no memory
 * of its own. One mutex guards it; it is taken once per chunk allocation, not per task
 * of a fused chain. Under the same lock it counts, apart for pageable and pinned
 * blocks, the bytes kept and the bytes handed out (and their peak), and the requests
 * met from kept blocks (hits) or from the system (misses): what the statistics table,
 * /metrics and the dashboard show of it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "runtime/host_cache.h"
#include "runtime/device.h"
#include "runtime/log.h"

#define HC_SMALL ((size_t)64 << 10)   /* below: not cached */
#define HC_HUGE ((size_t)2 << 20)     /* from here: 2 MiB multiples, huge pages */

/* The class of a request: powers of two below 2 MiB, 2 MiB multiples above. */
static size_t hc_round(size_t bytes)
{
    if (bytes >= HC_HUGE) return (bytes + HC_HUGE - 1) & ~(HC_HUGE - 1);
    size_t c = HC_SMALL;
    while (c < bytes) c <<= 1;
    return c;
}

cask_status hcache_init(host_cache *c, cask_runtime *rt, size_t limit)
{
    memset(c, 0, sizeof *c);
    c->rt = rt;
    c->limit = limit;
    if (pthread_mutex_init(&c->lock, NULL)) return CASK_ERR_NOMEM;
    c->ready = 1;
    return CASK_OK;
}

/* New memory of class size from the system. */
static cask_status sys_alloc(host_cache *c, size_t size, int pinned, void **out)
{
    if (pinned) return device_host_alloc(c->rt->dev, size, out);
    if (size < HC_HUGE) {
        if (posix_memalign(out, 4096, size)) return CASK_ERR_NOMEM;
        return CASK_OK;
    }
    /* 2 MiB-aligned: map 2 MiB more and give back the ends */
    size_t span = size + HC_HUGE;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return CASK_ERR_NOMEM;
    uintptr_t a = ((uintptr_t)p + HC_HUGE - 1) & ~(uintptr_t)(HC_HUGE - 1);
    size_t head = a - (uintptr_t)p, tail = span - head - size;
    if (head) munmap(p, head);
    if (tail) munmap((char *)a + size, tail);
#ifdef MADV_HUGEPAGE
    if (c->huge) madvise((void *)a, size, MADV_HUGEPAGE);   /* advice: failure is harmless */
#endif
    *out = (void *)a;
    return CASK_OK;
}

static void sys_free(host_cache *c, void *p, size_t size, int pinned)
{
    if (pinned) device_host_free(c->rt->dev, p);
    else if (size < HC_HUGE) free(p);
    else munmap(p, size);
}

static hc_bin *find_bin(host_cache *c, size_t size, int pinned, int make)
{
    for (int i = 0; i < c->nbins; i++)
        if (c->bins[i].size == size && c->bins[i].pinned == pinned) return &c->bins[i];
    if (!make || c->nbins == HC_BINS) return NULL;
    hc_bin *b = &c->bins[c->nbins++];
    b->size = size;
    b->pinned = (uint8_t)pinned;
    b->head = NULL;
    b->count = 0;
    return b;
}

cask_status hcache_alloc(host_cache *c, size_t bytes, int pinned, void **out)
{
    pinned = pinned && c->rt->dev;
    if (bytes < HC_SMALL || !c->ready) {
        if (pinned) return device_host_alloc(c->rt->dev, bytes, out);
        if (posix_memalign(out, 64, bytes ? bytes : 1)) return CASK_ERR_NOMEM;
        return CASK_OK;
    }
    size_t size = hc_round(bytes);
    pthread_mutex_lock(&c->lock);
    hc_bin *b = find_bin(c, size, pinned, 0);
    void *p = b ? b->head : NULL;
    if (p) {
        b->head = *(void **)p;
        b->count--;
        c->cached[pinned] -= size;
        c->hits++;
    } else {
        c->misses++;
    }
    c->live[pinned] += size;
    if (c->live[pinned] > c->peak[pinned])
        c->peak[pinned] = c->live[pinned];
    pthread_mutex_unlock(&c->lock);
    if (p) {
        *out = p;
        return CASK_OK;
    }
    cask_status st = sys_alloc(c, size, pinned, out);
    if (st) {
        pthread_mutex_lock(&c->lock);
        c->live[pinned] -= size;
        pthread_mutex_unlock(&c->lock);
        if (pinned) return st;   /* device_host_alloc logged it */
        return log_error(c->rt, CASK_ERR_NOMEM, "host chunk of %zu bytes", bytes);
    }
    return CASK_OK;
}

void hcache_free(host_cache *c, void *p, size_t bytes, int pinned)
{
    if (!p) return;
    pinned = pinned && c->rt->dev;
    if (bytes < HC_SMALL || !c->ready) {
        if (pinned) device_host_free(c->rt->dev, p);
        else free(p);
        return;
    }
    size_t size = hc_round(bytes);
    pthread_mutex_lock(&c->lock);
    c->live[pinned] -= size;
    hc_bin *b = c->cached[0] + c->cached[1] + size <= c->limit ? find_bin(c, size, pinned, 1) : NULL;
    if (b) {
        *(void **)p = b->head;
        b->head = p;
        b->count++;
        c->cached[pinned] += size;
    }
    pthread_mutex_unlock(&c->lock);
    if (!b) sys_free(c, p, size, pinned);
}

void hcache_trim(host_cache *c)
{
    if (!c->ready) return;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nbins; i++) {
        hc_bin *b = &c->bins[i];
        while (b->head) {
            void *p = b->head;
            b->head = *(void **)p;
            sys_free(c, p, b->size, b->pinned);
        }
        b->count = 0;
    }
    c->cached[0] = c->cached[1] = 0;
    pthread_mutex_unlock(&c->lock);
}

void hcache_stats(host_cache *c, cask_host_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    out->limit = c->limit;
    if (!c->ready)
        return;
    pthread_mutex_lock(&c->lock);
    out->pageable_cached = c->cached[0];
    out->pageable_live = c->live[0];
    out->pageable_peak = c->peak[0];
    out->pinned_cached = c->cached[1];
    out->pinned_live = c->live[1];
    out->pinned_peak = c->peak[1];
    out->hits = c->hits;
    out->misses = c->misses;
    pthread_mutex_unlock(&c->lock);
}

void hcache_destroy(host_cache *c)
{
    if (!c->ready) return;
    hcache_trim(c);
    pthread_mutex_destroy(&c->lock);
    c->ready = 0;
}

cask_status cask_runtime_host_cache(cask_runtime *rt, size_t *cached, size_t *limit)
{
    if (!rt) return CASK_ERR_INVALID;
    cask_host_cache_stats s;
    hcache_stats(&rt->hcache, &s);
    if (cached) *cached = s.pageable_cached + s.pinned_cached;
    if (limit) *limit = s.limit;
    return CASK_OK;
}

cask_status cask_runtime_host_cache_stats(cask_runtime *rt, cask_host_cache_stats *out)
{
    if (!rt || !out) return CASK_ERR_INVALID;
    hcache_stats(&rt->hcache, out);
    return CASK_OK;
}

cask_status cask_runtime_host_cache_trim(cask_runtime *rt)
{
    if (!rt) return CASK_ERR_INVALID;
    hcache_trim(&rt->hcache);
    return CASK_OK;
}
