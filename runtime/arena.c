/* arena.c: see arena.h. */
#include <stdlib.h>
#include <string.h>
#include "runtime/arena.h"

struct arena_block {
    arena_block *next;
    size_t size;
    _Alignas(16) char data[];
};

#define ARENA_BLOCK (64u * 1024u)

void arena_init(arena *a)
{
    memset(a, 0, sizeof *a);
}

static arena_block *new_block(arena *a, size_t bs)
{
    arena_block *b = malloc(sizeof *b + bs);
    if (!b)
        return NULL;
    b->size = bs;
    b->next = a->head;
    a->head = b;
    a->bytes += bs;
    return b;
}

void *arena_alloc(arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size > ARENA_BLOCK / 4) {
        /* a large object gets a block of its own; the current block stays for small ones */
        arena_block *b = new_block(a, size);
        return b ? b->data : NULL;
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

void arena_free_all(arena *a)
{
    arena_block *b = a->head;
    while (b) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
    arena_init(a);
}
