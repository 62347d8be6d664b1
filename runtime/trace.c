/* runtime/trace.c: the event recorder behind trace.h (the JSON writer is trace_write.c).
 *
 * Each track is a separately allocated, cache-line aligned struct touched only by its
 * owner thread while recording, so tracks never share a line and need no lock. A track
 * owns: a list of record blocks holding variable-length records (32 bytes plus 8 per
 * argument present, so that flows stay small and slices carry their arguments inline), and
 * a string arena with an open-addressing hash table that interns every name once per track.
 * The first block is mapped and prefaulted by trace_create; later blocks grow x4 up to one
 * 2 MiB huge page, so the hot path maps memory once per tens of thousands of events. */
#include "runtime/trace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- interning */

/* A 64-bit hash of the len bytes at s, 8 at a time (names are mostly short). */
static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, s, len);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 32;
    return h * 0x9e3779b97f4a7c15ull;
}

static char *arena_copy(trace_track *tr, const char *s, size_t len)
{
    trace_arena_block *b = tr->arena;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > ARENA_BLOCK ? len + 1 : ARENA_BLOCK;
        trace_arena_block *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        tr->arena = b = nb;
    }
    char *d = b->data + b->used;
    memcpy(d, s, len);
    d[len] = '\0';
    b->used += len + 1;
    return d;
}

static int intern_grow(trace_track *tr)
{
    size_t cap = tr->tab_cap * 2;
    trace_intern_entry *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return -1;
    for (size_t i = 0; i < tr->tab_cap; i++) {
        trace_intern_entry *e = &tr->tab[i];
        if (!e->s)
            continue;
        size_t j = e->hash & (cap - 1);
        while (tab[j].s)
            j = (j + 1) & (cap - 1);
        tab[j] = *e;
    }
    free(tr->tab);
    tr->tab = tab;
    tr->tab_cap = cap;
    return 0;
}

/* The track's own copy of s, or NULL when out of memory. */
static const char *intern_slow(trace_track *tr, const char *s)
{
    size_t len = strlen(s);
    uint64_t h = hash_bytes(s, len);
    size_t mask = tr->tab_cap - 1, i = h & mask;
    for (;;) {
        trace_intern_entry *e = &tr->tab[i];
        if (!e->s)
            break;
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
            return e->s;
        i = (i + 1) & mask;
    }
    if ((tr->tab_used + 1) * 2 > tr->tab_cap) {
        if (intern_grow(tr))
            return NULL;
        mask = tr->tab_cap - 1;
        i = h & mask;
        while (tr->tab[i].s)
            i = (i + 1) & mask;
    }
    const char *copy = arena_copy(tr, s, len);
    if (!copy)
        return NULL;
    tr->tab[i] = (trace_intern_entry){ .hash = h, .s = copy, .len = len };
    tr->tab_used++;
    return copy;
}

/* intern_slow behind the pointer-keyed cache. The strcmp keeps a hit correct even when the
 * caller has since reused the memory at s for another string. */
static inline const char *intern(trace_track *tr, const char *s)
{
    _Static_assert(NAME_CACHE == 64, "the slot is the top 6 bits of the hash");
    uint64_t slot = ((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ull) >> 58;
    trace_name_hit *c = &tr->cache[slot];
    if (c->key == s && strcmp(s, c->copy) == 0)
        return c->copy;
    const char *copy = intern_slow(tr, s);
    if (copy) {
        c->key = s;
        c->copy = copy;
    }
    return copy;
}

/* ---------------------------------------------------------------- record blocks */

/* A block with cap bytes of records. Blocks of TRACE_BLOCK_MAX are aligned to it and asked
 * to be one huge page; all are prefaulted here, in one call, rather than a fault per 4 KiB
 * page on the hot path. */
static trace_block *block_new(size_t cap)
{
    size_t size = sizeof(trace_block) + cap;
    size_t align = size > TRACE_BLOCK_MAX / 2 ? TRACE_BLOCK_MAX : 4096;
    size = (size + align - 1) / align * align;
    size_t len = size + (align > 4096 ? align : 0);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *base = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (base > p)
        munmap(p, (size_t)(base - p));
    if (p + len > base + size)
        munmap(base + size, (size_t)(p + len - (base + size)));
#ifdef MADV_HUGEPAGE
    if (align > 4096)
        madvise(base, size, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    madvise(base, size, MADV_POPULATE_WRITE);   /* best effort: faults later if refused */
#endif
    trace_block *b = (trace_block *)base;
    b->next = NULL;
    b->cap = size - sizeof(trace_block);
    b->used = 0;
    b->map_len = size;
    return b;
}

static void block_free(trace_block *b)
{
    munmap(b, b->map_len);
}

/* Room for need bytes of records at the tail: a new block, x4 the last, if full. Rare. */
static __attribute__((noinline)) trace_block *block_grow(trace_track *tr, size_t need)
{
    size_t cap = tr->tail->cap * 4;
    if (cap > TRACE_BLOCK_MAX - sizeof(trace_block))
        cap = TRACE_BLOCK_MAX - sizeof(trace_block);
    if (cap < need)
        cap = need;
    trace_block *b = block_new(cap);
    if (!b)
        return NULL;
    tr->tail->next = b;
    tr->tail = b;
    return b;
}

/* ---------------------------------------------------------------- tracks */

static void track_free(trace_track *tr)
{
    if (!tr)
        return;
    for (trace_block *b = tr->head, *n; b; b = n) {
        n = b->next;
        block_free(b);
    }
    for (trace_arena_block *b = tr->arena, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(tr->tab);
    free(tr);
}

static trace_track *track_new(int index)
{
    size_t size = (sizeof(trace_track) + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
    trace_track *tr = aligned_alloc(CACHE_LINE, size);
    if (!tr)
        return NULL;
    memset(tr, 0, sizeof *tr);
    tr->tab_cap = INTERN_INIT_CAP;
    tr->tab = calloc(tr->tab_cap, sizeof *tr->tab);
    tr->head = tr->tail = block_new(TRACE_BLOCK_FIRST - sizeof(trace_block));
    if (!tr->tab || !tr->head)
        goto fail;
    char name[32];
    snprintf(name, sizeof name, "track %d", index);
    if (!(tr->name = intern(tr, name)))
        goto fail;
    return tr;
fail:
    track_free(tr);
    return NULL;
}

/* ---------------------------------------------------------------- public: setup */

cask_status trace_create(const char *path, int ntracks, trace **out)
{
    if (out)
        *out = NULL;
    if (!path || !*path || ntracks < 1 || !out)
        return CASK_ERR_INVALID;
    cask_status st = CASK_ERR_NOMEM;
    trace *t = calloc(1, sizeof *t);
    if (!t)
        return CASK_ERR_NOMEM;
    t->ntracks = ntracks;
    if (!(t->path = strdup(path)) || !(t->tracks = calloc((size_t)ntracks, sizeof *t->tracks)))
        goto fail;
    for (int i = 0; i < ntracks; i++)
        if (!(t->tracks[i] = track_new(i)))
            goto fail;
    if (!(t->f = fopen(path, "w"))) {
        fprintf(stderr, "cask: trace: cannot open %s: %s\n", path, strerror(errno));
        st = CASK_ERR_IO;
        goto fail;
    }
    t->origin_ns = trace_now_ns();
    *out = t;
    return CASK_OK;
fail:
    trace_destroy(t);
    return st;
}

cask_status trace_track_name(trace *t, int track_idx, const char *name, int group)
{
    if (!t || track_idx < 0 || track_idx >= t->ntracks || !name || group < 0)
        return CASK_ERR_INVALID;
    trace_track *tr = t->tracks[track_idx];
    const char *s = intern(tr, name);
    if (!s)
        return CASK_ERR_NOMEM;
    tr->name = s;
    tr->group = group;
    return CASK_OK;
}

cask_status trace_group_name(trace *t, int group, const char *name)
{
    if (!t || group < 0 || !name)
        return CASK_ERR_INVALID;
    char *copy = strdup(name);
    if (!copy)
        return CASK_ERR_NOMEM;
    for (int i = 0; i < t->ngroups; i++)
        if (t->groups[i].group == group) {
            free(t->groups[i].name);
            t->groups[i].name = copy;
            return CASK_OK;
        }
    trace_group_label *g = realloc(t->groups, (size_t)(t->ngroups + 1) * sizeof *g);
    if (!g) {
        free(copy);
        return CASK_ERR_NOMEM;
    }
    t->groups = g;
    t->groups[t->ngroups++] = (trace_group_label){ .group = group, .name = copy };
    return CASK_OK;
}

cask_status trace_set_info(trace *t, const char *key, const char *value)
{
    if (!t || !key || !value)
        return CASK_ERR_INVALID;
    trace_info_kv kv = { strdup(key), strdup(value) };
    trace_info_kv *a = kv.key && kv.value
               ? realloc(t->info, (size_t)(t->ninfo + 1) * sizeof *a) : NULL;
    if (!a) {
        free(kv.key);
        free(kv.value);
        return CASK_ERR_NOMEM;
    }
    t->info = a;
    t->info[t->ninfo++] = kv;
    return CASK_OK;
}

/* ---------------------------------------------------------------- public: recording */

static inline trace_track *owned_track(trace *t, int track_idx)
{
    if (__builtin_expect(!t || track_idx < 0 || track_idx >= t->ntracks, 0))
        return NULL;
    return t->tracks[track_idx];
}

/* Appends one event; the common tail of every recording call. */
static cask_status record(trace_track *tr, char ph, const char *name, uint64_t ts, uint64_t val,
                          const trace_args *args)
{
    uint32_t fields = args ? args->fields & (TRACE_ARG_TASK | TRACE_ARG_KERNEL |
                                             TRACE_ARG_CHUNKS | TRACE_ARG_BYTES |
                                             TRACE_ARG_DEVICE) : 0;
    const char *kernel = NULL;
    int nchunks = 0;
    if (fields & TRACE_ARG_KERNEL) {
        if (!args->kernel)
            fields &= ~(uint32_t)TRACE_ARG_KERNEL;
        else if (!(kernel = intern(tr, args->kernel)))
            goto nomem;
    }
    if (fields & TRACE_ARG_CHUNKS) {
        nchunks = args->nchunks < 0 ? 0 : args->nchunks;
        nchunks = nchunks > TRACE_MAX_CHUNK_ARGS ? TRACE_MAX_CHUNK_ARGS : nchunks;
    }
    const char *iname = intern(tr, name);
    if (!iname)
        goto nomem;
    size_t need = sizeof(trace_rec) + 8 * trace_rec_words(fields, nchunks);
    trace_block *b = tr->tail;
    if (__builtin_expect(b->cap - b->used < need, 0) && !(b = block_grow(tr, need)))
        goto nomem;
    trace_rec *r = (trace_rec *)((char *)b->data + b->used);
    r->ts = ts;
    r->val = val;
    r->name = iname;
    r->seq = (uint32_t)tr->nevents;
    r->ph = (uint8_t)ph;
    r->nchunks = (uint8_t)nchunks;
    r->fields = (uint16_t)fields;
    uint64_t *x = r->extra;
    if (fields & TRACE_ARG_TASK)
        *x++ = args->task_id;
    if (fields & TRACE_ARG_KERNEL)
        *x++ = (uint64_t)(uintptr_t)kernel;
    for (int i = 0; i < nchunks; i++)
        *x++ = args->chunks[i];
    if (fields & TRACE_ARG_BYTES)
        *x++ = args->bytes;
    if (fields & TRACE_ARG_DEVICE)
        *x++ = (uint64_t)(int64_t)args->device;
    b->used += need;
    tr->nevents++;
    return CASK_OK;
nomem:
    tr->dropped++;
    return CASK_ERR_NOMEM;
}

cask_status trace_complete(trace *t, int track_idx, const char *name, uint64_t t0_ns,
                           uint64_t t1_ns, const trace_args *args)
{
    trace_track *tr = owned_track(t, track_idx);
    if (!tr || !name)
        return CASK_ERR_INVALID;
    return record(tr, 'X', name, t0_ns, t1_ns > t0_ns ? t1_ns - t0_ns : 0, args);
}

cask_status trace_flow(trace *t, int track_idx, uint64_t flow_id, uint64_t ts_ns, int phase)
{
    trace_track *tr = owned_track(t, track_idx);
    if (!tr || (phase != TRACE_FLOW_START && phase != TRACE_FLOW_FINISH))
        return CASK_ERR_INVALID;
    return record(tr, (char)phase, "dep", ts_ns, flow_id, NULL);
}

cask_status trace_counter(trace *t, int track_idx, const char *name, uint64_t ts_ns,
                          double value)
{
    trace_track *tr = owned_track(t, track_idx);
    if (!tr || !name)
        return CASK_ERR_INVALID;
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return record(tr, 'C', name, ts_ns, bits, NULL);
}

cask_status trace_instant(trace *t, int track_idx, const char *name, uint64_t ts_ns)
{
    trace_track *tr = owned_track(t, track_idx);
    if (!tr || !name)
        return CASK_ERR_INVALID;
    return record(tr, 'i', name, ts_ns, 0, NULL);
}

uint64_t trace_event_count(const trace *t)
{
    uint64_t n = 0;
    for (int i = 0; t && i < t->ntracks; i++)
        n += t->tracks[i]->nevents;
    return n;
}

uint64_t trace_dropped_count(const trace *t)
{
    uint64_t n = 0;
    for (int i = 0; t && i < t->ntracks; i++)
        n += t->tracks[i]->dropped;
    return n;
}

void trace_destroy(trace *t)
{
    if (!t)
        return;
    if (t->f)
        fclose(t->f);
    for (int i = 0; t->tracks && i < t->ntracks; i++)
        track_free(t->tracks[i]);
    for (int i = 0; i < t->ninfo; i++) {
        free(t->info[i].key);
        free(t->info[i].value);
    }
    for (int i = 0; i < t->ngroups; i++)
        free(t->groups[i].name);
    free(t->info);
    free(t->groups);
    free(t->tracks);
    free(t->path);
    free(t);
}
