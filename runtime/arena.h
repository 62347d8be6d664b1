/* arena.h: bump allocator for a graph's tasks, edges and argument copies: one block per
 * 256 KiB instead of one malloc per task, all given back at once with the graph. Blocks
 * come from and go back to the runtime's pool, so that a program building a graph, running
 * it and destroying it again and again neither calls malloc nor faults pages in per task. */
#ifndef CASK_RUNTIME_ARENA_H
#define CASK_RUNTIME_ARENA_H

#include <pthread.h>
#include <stddef.h>

typedef struct arena_block arena_block;

/* Blocks given back by destroyed graphs, for the next ones (one per runtime). */
typedef struct arena_pool {
    pthread_mutex_t lock;
    arena_block *free;
    size_t cached;      /* bytes in free */
    size_t limit;       /* at most this many bytes are kept */
} arena_pool;

typedef struct arena {
    arena_block *head;
    char *cur, *end;
    size_t bytes;       /* total held */
    arena_pool *pool;   /* may be NULL: blocks from malloc, freed to the system */
} arena;

void arena_pool_init(arena_pool *p, size_t limit);
void arena_pool_destroy(arena_pool *p);

void arena_init(arena *a, arena_pool *pool);
/* Aligned (16 bytes), uninitialised; NULL if out of memory. */
void *arena_alloc(arena *a, size_t size);
void *arena_calloc(arena *a, size_t size);
char *arena_strdup(arena *a, const char *s);
/* Moves every block of from into into (from is empty afterwards); the caller serialises
 * the two arenas. */
void arena_adopt(arena *into, arena *from);
void arena_free_all(arena *a);

#endif
