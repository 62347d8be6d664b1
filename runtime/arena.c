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

void *arena_alloc(arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if ((size_t)(a->end - a->cur) < size) {
        size_t bs = size > ARENA_BLOCK / 4 ? size : ARENA_BLOCK;
        arena_block *b = malloc(sizeof *b + bs);
        if (!b)
            return NULL;
        b->size = bs;
        b->next = a->head;
        a->head = b;
        a->bytes += bs;
        if (bs != ARENA_BLOCK) {
            /* a large object gets its own block; keep the current block for small ones */
            if (a->cur && b->next) {
                return b->data;
            }
            a->cur = b->data + size;
            a->end = b->data + bs;
            return b->data;
        }
        a->cur = b->data;
        a->end = b->data + bs;
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
