/* memory.c: see memory.h. One mutex per GPU guards its pool and LRU list; eviction
 * only try-locks the victim's data, so it cannot deadlock with a thread that holds a
 * data lock and allocates. */
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include "runtime/memory.h"
#include "runtime/coherence.h"
#include "runtime/device.h"
#include "runtime/log.h"

typedef struct free_block {
    void *ptr;
    size_t size;
} free_block;

typedef struct mem_node {
    pthread_mutex_t lock;
    size_t limit, used;
    free_block *cache;
    size_t ncache, cache_cap;
    replica *lru_head, *lru_tail;    /* head = least recently used */
    uint64_t clock;
} mem_node;

struct mem_manager {
    int ngpu;
    mem_node node[CASK_MAX_GPUS];
};

/* Rounds up to a size class: 256-byte granules, then 4 classes per power of two. */
static size_t size_class(size_t n)
{
    if (n <= 4096)
        return (n + 255) & ~(size_t)255;
    int b = 63 - __builtin_clzll((unsigned long long)n);
    size_t step = (size_t)1 << (b - 2);
    return (n + step - 1) & ~(step - 1);
}

cask_status mem_create(cask_runtime *rt)
{
    struct mem_manager *m = calloc(1, sizeof *m);
    if (!m)
        return CASK_ERR_NOMEM;
    m->ngpu = rt->ngpu;
    for (int g = 0; g < rt->ngpu; g++) {
        mem_node *n = &m->node[g];
        pthread_mutex_init(&n->lock, NULL);
        size_t fr = 0, tot = 0;
        cask_status st = device_mem_info(rt->dev, g, &fr, &tot);
        if (st) {
            free(m);
            return st;
        }
        n->limit = rt->cfg.gpu_mem_limit ? rt->cfg.gpu_mem_limit : fr / 10 * 9;
        if (rt->cfg.gpu_mem_limit && !rt->sim && rt->cfg.gpu_mem_limit > fr)
            n->limit = fr / 10 * 9;
    }
    rt->mem = m;
    return CASK_OK;
}

void mem_destroy(cask_runtime *rt)
{
    struct mem_manager *m = rt->mem;
    if (!m)
        return;
    for (int g = 0; g < m->ngpu; g++) {
        mem_node *n = &m->node[g];
        for (size_t i = 0; i < n->ncache; i++)
            device_free(rt->dev, g, n->cache[i].ptr);
        free(n->cache);
        pthread_mutex_destroy(&n->lock);
    }
    free(m);
    rt->mem = NULL;
}

static void lru_unlink(mem_node *n, replica *r)
{
    if (r->lru_prev) r->lru_prev->lru_next = r->lru_next;
    else if (n->lru_head == r) n->lru_head = r->lru_next;
    if (r->lru_next) r->lru_next->lru_prev = r->lru_prev;
    else if (n->lru_tail == r) n->lru_tail = r->lru_prev;
    r->lru_prev = r->lru_next = NULL;
}

static int in_lru(mem_node *n, replica *r)
{
    return r->lru_prev || r->lru_next || n->lru_head == r;
}

void mem_touch(cask_runtime *rt, replica *r)
{
    mem_node *n = &rt->mem->node[r->node - 1];
    pthread_mutex_lock(&n->lock);
    if (in_lru(n, r))
        lru_unlink(n, r);
    r->lru_prev = n->lru_tail;
    if (n->lru_tail) n->lru_tail->lru_next = r;
    else n->lru_head = r;
    n->lru_tail = r;
    r->last_use = ++n->clock;
    pthread_mutex_unlock(&n->lock);
}

void mem_forget(cask_runtime *rt, replica *r)
{
    mem_node *n = &rt->mem->node[r->node - 1];
    pthread_mutex_lock(&n->lock);
    if (in_lru(n, r))
        lru_unlink(n, r);
    pthread_mutex_unlock(&n->lock);
}

static void cache_put(mem_node *n, void *ptr, size_t size)
{
    if (n->ncache == n->cache_cap) {
        size_t cap = n->cache_cap ? n->cache_cap * 2 : 64;
        free_block *c = realloc(n->cache, cap * sizeof *c);
        if (!c)
            return;   /* caller frees for real */
        n->cache = c;
        n->cache_cap = cap;
    }
    n->cache[n->ncache].ptr = ptr;
    n->cache[n->ncache].size = size;
    n->ncache++;
}

void mem_release(cask_runtime *rt, int node, void *ptr, size_t bytes)
{
    if (!ptr)
        return;
    mem_node *n = &rt->mem->node[node - 1];
    size_t sz = size_class(bytes);
    pthread_mutex_lock(&n->lock);
    size_t before = n->ncache;
    cache_put(n, ptr, sz);
    if (n->ncache == before) {
        device_free(rt->dev, node - 1, ptr);
        n->used -= sz;
    }
    pthread_mutex_unlock(&n->lock);
}

/* Drops one evictable replica of node n (lock held). Returns 1 if memory was freed.
 * *saw_busy: some replica is in use by a running task; *saw_locked: some could not be
 * examined because its data lock was taken (both transient). */
static int evict_one(cask_runtime *rt, mem_node *n, int node, worker_counters *ctr, int *saw_busy,
                     int *saw_locked)
{
    for (replica *r = n->lru_head; r; r = r->lru_next) {
        if (r->busy) {
            *saw_busy = 1;
            continue;
        }
        cask_data *d = r->data;
        if (pthread_mutex_trylock(&d->lock) != 0) {
            *saw_locked = 1;
            continue;
        }
        if (r->busy || !r->ptr) {
            *saw_busy |= r->busy != 0;
            pthread_mutex_unlock(&d->lock);
            continue;
        }
        int spilled = 0;
        if (coh_evict_locked(rt, d, node, &spilled) != CASK_OK) {
            pthread_mutex_unlock(&d->lock);
            continue;
        }
        lru_unlink(n, r);
        void *p = r->ptr;
        size_t sz = size_class(d->bytes);
        r->ptr = NULL;
        __atomic_store_n(&r->valid, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&d->lock);
        device_free(rt->dev, node - 1, p);
        n->used -= sz;
        if (ctr) {
            atomic_fetch_add_explicit(&ctr->evictions, 1, memory_order_relaxed);
            if (spilled) {
                atomic_fetch_add_explicit(&ctr->spills, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&ctr->bytes_d2h, d->bytes, memory_order_relaxed);
            }
        }
        return 1;
    }
    return 0;
}

cask_status mem_alloc(cask_runtime *rt, int node, size_t bytes, worker_counters *ctr, void **out)
{
    mem_node *n = &rt->mem->node[node - 1];
    size_t sz = size_class(bytes);
    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; i < n->ncache; i++)
        if (n->cache[i].size == sz) {
            *out = n->cache[i].ptr;
            n->cache[i] = n->cache[--n->ncache];
            pthread_mutex_unlock(&n->lock);
            return CASK_OK;
        }
    if (sz > n->limit) {
        pthread_mutex_unlock(&n->lock);
        return log_error(rt, CASK_ERR_NOMEM, "a chunk of %zu bytes is larger than GPU %d's limit (%zu)",
                         bytes, node - 1, n->limit);
    }
    int saw_busy = 0, saw_locked = 0, tries = 0;
    for (;;) {
        if (n->used + sz <= n->limit) {
            cask_status st = device_malloc(rt->dev, node - 1, sz, out);
            if (st == CASK_OK) {
                n->used += sz;
                pthread_mutex_unlock(&n->lock);
                return CASK_OK;
            }
            /* the device itself is fuller than the limit says: shrink and evict */
            n->limit = n->used;
        }
        if (n->ncache) {
            free_block b = n->cache[--n->ncache];
            device_free(rt->dev, node - 1, b.ptr);
            n->used -= b.size;
            continue;
        }
        if (evict_one(rt, n, node, ctr, &saw_busy, &saw_locked))
            continue;
        if (saw_locked && tries++ < 1000) {
            /* another thread holds a victim's lock for a moment: look again */
            saw_locked = 0;
            pthread_mutex_unlock(&n->lock);
            sched_yield();
            pthread_mutex_lock(&n->lock);
            continue;
        }
        break;
    }
    size_t used = n->used, limit = n->limit;
    pthread_mutex_unlock(&n->lock);
    if (saw_busy)   /* room is held by tasks still running: worth trying again later */
        return CASK_ERR_BUSY;
    return log_error(rt, CASK_ERR_NOMEM,
                     "GPU %d: no room for %zu bytes (%zu of %zu in use, nothing evictable)",
                     node - 1, bytes, used, limit);
}

void mem_node_usage(cask_runtime *rt, int gpu, size_t *used, size_t *limit)
{
    struct mem_manager *m = rt->mem;
    *used = *limit = 0;
    if (!m || gpu < 0 || gpu >= m->ngpu)
        return;
    mem_node *n = &m->node[gpu];
    pthread_mutex_lock(&n->lock);
    *used = n->used;
    *limit = n->limit;
    pthread_mutex_unlock(&n->lock);
}
