/* arena.h: bump allocator for a graph's tasks, edges and argument copies: one block per
 * 256 KiB instead of one malloc per task, all given back at once with the graph. Blocks
 * come from and go back to the runtime's pool, so that a program building a graph, running
 * it and destroying it again and again neither calls malloc nor faults pages in per task. */
#ifndef CASK_RUNTIME_ARENA_H
#define CASK_RUNTIME_ARENA_H

#include <pthread.h>
#include <stddef.h>

typedef struct arena_block arena_block;

/* Blocks given back by destroyed graphs, for the next ones (one per runtime): the
 * fixed-size blocks, and a few large objects (a big graph's task list, a big fan-out's
 * successors), so that the next graph of that size neither faults their pages in again
 * nor copies them as they grow. */
#define ARENA_POOL_SPARES 8
typedef struct arena_pool {
    pthread_mutex_t lock;
    arena_block *free;
    arena_block *spares;  /* large objects, at most ARENA_POOL_SPARES */
    int nspares;
    size_t cached;      /* bytes in free and spares */
    size_t limit;       /* at most this many bytes are kept */
} arena_pool;

typedef struct arena {
    arena_block *head;  /* pool-sized blocks, the current one first */
    arena_block *large; /* objects bigger than a quarter block, one malloc each */
    char *cur, *end;
    size_t bytes;       /* total held */
    arena_pool *pool;   /* may be NULL: blocks from malloc, freed to the system */
} arena;

void arena_pool_init(arena_pool *p, size_t limit);
void arena_pool_destroy(arena_pool *p);

void arena_init(arena *a, arena_pool *pool);
/* Aligned (16 bytes), uninitialised; NULL if out of memory. */
void *arena_alloc_slow(arena *a, size_t size);
static inline void *arena_alloc(arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (__builtin_expect((size_t)(a->end - a->cur) >= size && size <= 64u * 1024u, 1)) {
        void *p = a->cur;   /* the common case: room in the current block */
        a->cur += size;
        return p;
    }
    return arena_alloc_slow(a, size);
}
/* Makes room for size bytes (at most 64 KiB) in a's current block without taking them:
 * afterwards a->end - a->cur >= size (a new block if the current one has less). 0, or -1
 * out of memory. */
int arena_reserve_slow(arena *a, size_t size);
static inline int arena_reserve(arena *a, size_t size)
{
    if (__builtin_expect((size_t)(a->end - a->cur) >= size, 1))
        return 0;
    return arena_reserve_slow(a, size);
}
void *arena_calloc(arena *a, size_t size);
char *arena_strdup(arena *a, const char *s);
/* Grows an array of old_size bytes at p (from this arena, or NULL) to new_size bytes,
 * keeping its contents. A large object grows within its block's room, else into a
 * pooled spare or by realloc (no copy of its pages); a small one moves to a new
 * allocation (the old bytes stay in the arena until it is freed). NULL if out of memory
 * (p is untouched). */
void *arena_grow(arena *a, void *p, size_t old_size, size_t new_size);
/* Moves every block of from into into (from is empty afterwards); the caller serialises
 * the two arenas. */
void arena_adopt(arena *into, arena *from);
void arena_free_all(arena *a);

#endif
