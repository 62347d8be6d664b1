/* arena.c: see arena.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/arena.h"

struct arena_block {
    arena_block *next;
    arena_block *prev;   /* large objects only */
    size_t size;         /* bytes of data: the room of a large object */
    _Alignas(16) char data[];
};

#define ARENA_BLOCK (256u * 1024u)
#define ARENA_LARGE (ARENA_BLOCK / 4)   /* bigger objects get a block of their own */
_Static_assert(ARENA_LARGE == 64u * 1024u, "arena_alloc's fast path");

void arena_pool_init(arena_pool *p, size_t limit)
{
    pthread_mutex_init(&p->lock, NULL);
    p->free = NULL;
    p->spares = NULL;
    p->nspares = 0;
    p->cached = 0;
    p->limit = limit;
}

static void free_list(arena_block *b)
{
    while (b) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
}

void arena_pool_destroy(arena_pool *p)
{
    free_list(p->free);
    free_list(p->spares);
    p->free = p->spares = NULL;
    p->nspares = 0;
    p->cached = 0;
    pthread_mutex_destroy(&p->lock);
}

void arena_init(arena *a, arena_pool *pool)
{
    memset(a, 0, sizeof *a);
    a->pool = pool;
}

static arena_block *new_block(arena *a, size_t bs)
{
    arena_block *b = NULL;
    if (bs == ARENA_BLOCK && a->pool) {
        arena_pool *p = a->pool;
        pthread_mutex_lock(&p->lock);
        b = p->free;
        if (b) {
            p->free = b->next;
            p->cached -= ARENA_BLOCK;
        }
        pthread_mutex_unlock(&p->lock);
    }
    if (!b) {
        b = malloc(sizeof *b + bs);
        if (!b)
            return NULL;
        b->size = bs;
    }
    b->next = a->head;
    a->head = b;
    a->bytes += bs;
    return b;
}

/* The smallest pooled spare with room for size bytes, or NULL. */
static arena_block *take_spare(arena_pool *p, size_t size)
{
    if (!p)
        return NULL;
    pthread_mutex_lock(&p->lock);
    arena_block **best = NULL;
    for (arena_block **b = &p->spares; *b; b = &(*b)->next)
        if ((*b)->size >= size && (!best || (*b)->size < (*best)->size))
            best = b;
    arena_block *r = NULL;
    if (best) {
        r = *best;
        *best = r->next;
        p->nspares--;
        p->cached -= r->size;
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

/* Keeps large object b for later arenas if the pool has room (in place of a smaller
 * spare when it holds ARENA_POOL_SPARES already), else frees it. */
static void give_spare(arena_pool *p, arena_block *b)
{
    arena_block *drop = b;
    if (p) {
        pthread_mutex_lock(&p->lock);
        arena_block **victim = NULL;
        if (p->nspares == ARENA_POOL_SPARES) {
            for (arena_block **s = &p->spares; *s; s = &(*s)->next)
                if (!victim || (*s)->size < (*victim)->size)
                    victim = s;
            if ((*victim)->size < b->size) {
                drop = *victim;
                *victim = drop->next;
                p->nspares--;
                p->cached -= drop->size;
            }
        }
        if (p->nspares < ARENA_POOL_SPARES && p->cached + b->size <= p->limit) {
            b->next = p->spares;
            p->spares = b;
            p->nspares++;
            p->cached += b->size;
            if (drop == b)
                drop = NULL;
        }
        pthread_mutex_unlock(&p->lock);
    }
    free(drop);
}

static void large_link(arena *a, arena_block *b)
{
    b->prev = NULL;
    b->next = a->large;
    if (a->large)
        a->large->prev = b;
    a->large = b;
    a->bytes += b->size;
}

static void large_unlink(arena *a, arena_block *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        a->large = b->next;
    if (b->next)
        b->next->prev = b->prev;
    a->bytes -= b->size;
}

static arena_block *block_of(void *p)
{
    return (arena_block *)((char *)p - offsetof(arena_block, data));
}

void *arena_alloc_slow(arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size > ARENA_LARGE) {
        arena_block *b = take_spare(a->pool, size);
        if (!b) {
            b = malloc(sizeof *b + size);
            if (!b)
                return NULL;
            b->size = size;
        }
        large_link(a, b);
        return b->data;
    }
    if ((size_t)(a->end - a->cur) < size) {
        arena_block *b = new_block(a, ARENA_BLOCK);
        if (!b)
            return NULL;
        a->cur = b->data;
        a->end = b->data + ARENA_BLOCK;
    }
    void *p = a->cur;
    a->cur += size;
    return p;
}

int arena_reserve_slow(arena *a, size_t size)
{
    char *p = arena_alloc_slow(a, size);   /* from a new block: the last allocation */
    if (!p)
        return -1;
    a->cur = p;   /* given back, so the room stays free */
    return 0;
}

void *arena_calloc(arena *a, size_t size)
{
    void *p = arena_alloc(a, size);
    if (p)
        memset(p, 0, size);
    return p;
}

char *arena_strdup(arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void *arena_grow(arena *a, void *p, size_t old_size, size_t new_size)
{
    old_size = (old_size + 15) & ~(size_t)15;
    new_size = (new_size + 15) & ~(size_t)15;
    if (!p || old_size <= ARENA_LARGE || new_size <= ARENA_LARGE) {
        void *q = arena_alloc(a, new_size);
        if (q && p)
            memcpy(q, p, old_size < new_size ? old_size : new_size);
        return q;
    }
    arena_block *b = block_of(p);
    if (new_size <= b->size)
        return p;
    arena_block *n = take_spare(a->pool, new_size);
    if (n) {
        memcpy(n->data, p, old_size);
        large_unlink(a, b);
        give_spare(a->pool, b);
    } else {
        large_unlink(a, b);
        n = realloc(b, sizeof *n + new_size);
        if (!n) {
            large_link(a, b);
            return NULL;
        }
        n->size = new_size;
    }
    large_link(a, n);
    return n->data;
}

void arena_adopt(arena *into, arena *from)
{
    while (from->large) {
        arena_block *b = from->large;
        large_unlink(from, b);
        large_link(into, b);
    }
    into->bytes += from->bytes;
    from->bytes = 0;
    arena_block *b = from->head;
    if (!b)
        return;
    arena_block *last = b;
    while (last->next)
        last = last->next;
    /* behind into's current block, which keeps serving small allocations */
    if (into->head) {
        last->next = into->head->next;
        into->head->next = b;
    } else {
        last->next = NULL;
        into->head = b;
        into->cur = into->end = NULL;
    }
    from->head = NULL;
    from->cur = from->end = NULL;
}

void arena_free_all(arena *a)
{
    arena_pool *p = a->pool;
    for (arena_block *b = a->large; b;) {
        arena_block *n = b->next;
        give_spare(p, b);
        b = n;
    }
    arena_block *keep = NULL, *keep_tail = NULL;
    size_t kept = 0;
    size_t room = 0;
    if (p) {
        pthread_mutex_lock(&p->lock);
        room = p->cached < p->limit ? p->limit - p->cached : 0;
        pthread_mutex_unlock(&p->lock);
    }
    /* the newest block first, as the arena holds them: the next arena takes first the
     * blocks touched last, those most likely still in cache */
    arena_block *b = a->head;
    while (b) {
        arena_block *n = b->next;
        if (b->size == ARENA_BLOCK && kept + ARENA_BLOCK <= room) {
            b->next = NULL;
            if (keep_tail)
                keep_tail->next = b;
            else
                keep = b;
            keep_tail = b;
            kept += ARENA_BLOCK;
        } else {
            free(b);
        }
        b = n;
    }
    if (keep) {
        pthread_mutex_lock(&p->lock);
        keep_tail->next = p->free;
        p->free = keep;
        p->cached += kept;
        pthread_mutex_unlock(&p->lock);
    }
    arena_init(a, p);
}
