/* arena.c: see arena.h. */
#include <stdlib.h>
#include <string.h>
#include "runtime/arena.h"

struct arena_block {
    arena_block *next;
    size_t size;
    _Alignas(16) char data[];
};

#define ARENA_BLOCK (256u * 1024u)

void arena_pool_init(arena_pool *p, size_t limit)
{
    pthread_mutex_init(&p->lock, NULL);
    p->free = NULL;
    p->cached = 0;
    p->limit = limit;
}

void arena_pool_destroy(arena_pool *p)
{
    for (arena_block *b = p->free; b;) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
    p->free = NULL;
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

void *arena_alloc(arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size > ARENA_BLOCK / 4) {
        /* a large object gets a block of its own; the current block stays for small
         * ones. It goes behind the current block, which stays the head. */
        arena_block *b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->size = size;
        if (a->head) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = NULL;
            a->head = b;
            a->cur = a->end = NULL;
        }
        a->bytes += size;
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

void arena_adopt(arena *into, arena *from)
{
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
    into->bytes += from->bytes;
    from->head = NULL;
    from->cur = from->end = NULL;
    from->bytes = 0;
}

void arena_free_all(arena *a)
{
    arena_pool *p = a->pool;
    arena_block *keep = NULL, *keep_tail = NULL;
    size_t kept = 0;
    size_t room = 0;
    if (p) {
        pthread_mutex_lock(&p->lock);
        room = p->cached < p->limit ? p->limit - p->cached : 0;
        pthread_mutex_unlock(&p->lock);
    }
    arena_block *b = a->head;
    while (b) {
        arena_block *n = b->next;
        if (b->size == ARENA_BLOCK && kept + ARENA_BLOCK <= room) {
            b->next = keep;
            keep = b;
            if (!keep_tail)
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
