/* arena.h: bump allocator for a graph's tasks, edges and argument copies: one malloc
 * per 64 KiB block instead of one per task, all freed at once with the graph. */
#ifndef CASK_RUNTIME_ARENA_H
#define CASK_RUNTIME_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;
typedef struct arena {
    arena_block *head;
    char *cur, *end;
    size_t bytes;       /* total allocated from the system */
} arena;

void arena_init(arena *a);
/* Aligned (16 bytes), uninitialised; NULL if out of memory. */
void *arena_alloc(arena *a, size_t size);
void *arena_calloc(arena *a, size_t size);
char *arena_strdup(arena *a, const char *s);
void arena_free_all(arena *a);

#endif
