/* runtime/trace_internal.h: the data structures shared by the trace recorder (trace.c)
 * and its JSON writer (trace_write.c). Nothing outside those two files includes this. */
#ifndef CASK_RUNTIME_TRACE_INTERNAL_H
#define CASK_RUNTIME_TRACE_INTERNAL_H

#include <stdio.h>
#include "runtime/trace.h"

#define TRACE_BLOCK_FIRST (64u << 10)   /* first record block of a track, prefaulted */
#define TRACE_BLOCK_MAX (2u << 20)      /* blocks grow x4 up to this: one huge page */
#define ARENA_BLOCK 16384
#define INTERN_INIT_CAP 256   /* power of two */
#define CACHE_LINE 64
#define NAME_CACHE 64         /* trace.c indexes it with the top 6 bits of a hash */

/* One recorded event, followed in its block by the arguments present, 8 bytes each, in
 * trace_arg_field bit order: task id, kernel (an interned const char *), chunk ids
 * [nchunks], bytes, device (as int64). A slice with a task id, a kernel and two chunks
 * takes 64 bytes. val is the slice duration (X), the flow id (s/f) or the bits of a
 * counter value (C). */
typedef struct trace_rec {
    uint64_t ts;
    uint64_t val;
    const char *name;
    uint32_t seq;             /* recording order, to keep the sort stable */
    uint8_t ph;
    uint8_t nchunks;
    uint16_t fields;          /* trace_arg_field bits */
    uint64_t extra[];
} trace_rec;

static inline size_t trace_rec_words(uint32_t fields, int nchunks)
{
    return (size_t)(!!(fields & TRACE_ARG_TASK) + !!(fields & TRACE_ARG_KERNEL) +
                    !!(fields & TRACE_ARG_BYTES) + !!(fields & TRACE_ARG_DEVICE)) +
           (fields & TRACE_ARG_CHUNKS ? (size_t)nchunks : 0);
}

static inline size_t trace_rec_size(const trace_rec *r)
{
    return sizeof *r + 8 * trace_rec_words(r->fields, r->nchunks);
}

/* A block of records: mmap'd, so that big ones can be backed by a huge page (one page
 * fault per 2 MiB instead of 512: faults, not copies, are what records cost). */
typedef struct trace_block {
    struct trace_block *next;
    size_t cap, used;         /* bytes of data[] */
    size_t map_len;
    uint64_t data[];
} trace_block;

typedef struct trace_arena_block {
    struct trace_arena_block *next;
    size_t used, cap;
    char data[];
} trace_arena_block;

typedef struct trace_intern_entry {
    uint64_t hash;
    const char *s;            /* NULL: empty slot */
    size_t len;
} trace_intern_entry;

/* A recently interned name, keyed by the caller's pointer: runtimes pass the same few
 * name pointers again and again, and a strcmp against the copy is cheaper than hashing. */
typedef struct trace_name_hit {
    const char *key;
    const char *copy;
} trace_name_hit;

typedef struct trace_track {
    /* hot: owner thread only */
    trace_block *tail;
    trace_name_hit cache[NAME_CACHE];
    trace_intern_entry *tab;
    size_t tab_cap, tab_used;
    trace_arena_block *arena;
    uint64_t nevents, dropped;
    /* cold */
    trace_block *head;
    const char *name;         /* interned */
    int group;
} trace_track;

typedef struct trace_info_kv {
    char *key, *value;
} trace_info_kv;

typedef struct trace_group_label {
    int group;
    char *name;
} trace_group_label;

struct trace {
    char *path;
    FILE *f;
    uint64_t origin_ns;
    int ntracks;
    trace_track **tracks;
    trace_info_kv *info;
    int ninfo;
    trace_group_label *groups;
    int ngroups;
    int written;
};

#endif
