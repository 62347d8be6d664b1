/* transport/ucx_seg.c: this rank's shared-memory segment (an anonymous memfd), its
 * layout (head, lanes, blocks), the allocator of its blocks, and the mapping of a peer's
 * segment. The protocol around it is in ucx_seg.h; the sends and receives that use the
 * blocks in ucx_send.c and ucx_progress.c, the rings in ucx_segring.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "transport/ucx_seg.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SEG_UNIT ((size_t)64 << 10)   /* block granularity */
#define SEG_PAGE ((uint64_t)4096)

static uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

struct ucx_seg {
    int fd;
    unsigned char *base;
    size_t bytes;
    ucx_seg_geom geom;
    size_t units;         /* blocks, from geom.blocks_off */
    pthread_mutex_t mu;
    /* per unit; a block's fields are kept at its first unit */
    unsigned char *used;
    uint32_t *run;        /* units of the block starting here, 0 elsewhere */
    int32_t *owner;       /* peer it is lent to */
    uint32_t *tag;
    uint32_t next_tag;
};

/* The layout of a segment (ucx_seg.h): head and counters, lanes, blocks. */
static void layout(ucx_seg_geom *g, int nranks, size_t lane_bytes, unsigned nslots,
                   size_t units)
{
    g->nranks = (uint32_t)nranks;
    g->nslots = lane_bytes ? nslots : 0;
    g->lane_bytes = round_up(lane_bytes, SEG_PAGE);
    g->lane_stride = lane_bytes ? round_up(sizeof(ucx_ring_lane) +
                                           (uint64_t)nslots * sizeof(ucx_ring_slot), SEG_PAGE) +
                                  g->lane_bytes
                                : 0;
    g->lanes_off = round_up(sizeof(ucx_seg_head) + (uint64_t)nranks * sizeof(ucx_seg_counter),
                            SEG_PAGE);
    g->blocks_off = round_up(g->lanes_off + (uint64_t)nranks * g->lane_stride, SEG_UNIT);
    g->bytes = g->blocks_off + units * SEG_UNIT;
}

ucx_seg *ucx_seg_create(int rank, size_t block_bytes, int nranks, size_t lane_bytes,
                        unsigned nslots, char *err, size_t errlen)
{
    size_t units = (block_bytes + SEG_UNIT - 1) / SEG_UNIT;
    if (units < 1)
        units = 1;
    if (nranks < 1 || (lane_bytes && (nslots < 2 || (nslots & (nslots - 1))))) {
        snprintf(err, errlen, "bad segment layout (%d ranks, %u slots)", nranks, nslots);
        return NULL;
    }
    ucx_seg *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->fd = -1;
    s->units = units;
    layout(&s->geom, nranks, lane_bytes, nslots, units);
    s->bytes = (size_t)s->geom.bytes;
    s->used = calloc(units, 1);
    s->run = calloc(units, sizeof *s->run);
    s->owner = calloc(units, sizeof *s->owner);
    s->tag = calloc(units, sizeof *s->tag);
    if (!s->used || !s->run || !s->owner || !s->tag) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    char name[64];
    snprintf(name, sizeof name, "cask-seg.%d.%d", rank, (int)getpid());
    s->fd = (int)syscall(SYS_memfd_create, name, (unsigned)MFD_CLOEXEC);
    if (s->fd < 0) {
        snprintf(err, errlen, "memfd_create: %s", strerror(errno));
        goto fail_mu;
    }
    if (ftruncate(s->fd, (off_t)s->bytes)) {
        snprintf(err, errlen, "ftruncate of the segment to %zu bytes: %s", s->bytes,
                 strerror(errno));
        goto fail_mu;
    }
    void *m = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "mmap of the segment (%zu bytes): %s", s->bytes,
                 strerror(errno));
        goto fail_mu;
    }
    s->base = m;
    s->next_tag = 1;
    ucx_seg_head *h = (ucx_seg_head *)s->base;
    h->nranks = s->geom.nranks;
    h->nslots = s->geom.nslots;
    h->lane_bytes = s->geom.lane_bytes;
    h->lane_stride = s->geom.lane_stride;
    h->lanes_off = s->geom.lanes_off;
    h->blocks_off = s->geom.blocks_off;
    atomic_store_explicit(&h->epoch, 0, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint64_t *)&h->magic, UCX_SEG_MAGIC, memory_order_release);
    return s;
fail_mu:
    pthread_mutex_destroy(&s->mu);
fail:
    if (s->fd >= 0)
        close(s->fd);
    free(s->used);
    free(s->run);
    free(s->owner);
    free(s->tag);
    free(s);
    return NULL;
}

void ucx_seg_destroy(ucx_seg *s)
{
    if (!s)
        return;
    munmap(s->base, s->bytes);
    close(s->fd);
    pthread_mutex_destroy(&s->mu);
    free(s->used);
    free(s->run);
    free(s->owner);
    free(s->tag);
    free(s);
}

int ucx_seg_fd(const ucx_seg *s) { return s->fd; }
size_t ucx_seg_bytes(const ucx_seg *s) { return s->bytes; }
unsigned char *ucx_seg_base(const ucx_seg *s) { return s->base; }

size_t ucx_seg_max_msg(const ucx_seg *s)
{
    return s->units * SEG_UNIT / 4;   /* room for several in flight */
}

const ucx_seg_geom *ucx_seg_geometry(const ucx_seg *s) { return &s->geom; }

void ucx_seg_lane_drop(ucx_seg *s, int peer)
{
    if (!s->geom.lane_stride || peer < 0 || (uint32_t)peer >= s->geom.nranks)
        return;
    /* Only the pages: the file keeps its size, a peer still mapping it reads zeros. */
    (void)fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)(s->geom.lanes_off + (uint64_t)peer * s->geom.lane_stride),
                    (off_t)s->geom.lane_stride);
}

int ucx_seg_geom_read(const unsigned char *map, size_t bytes, int nranks, ucx_seg_geom *g)
{
    if (!map || bytes < sizeof(ucx_seg_head))
        return -1;
    const ucx_seg_head *h = (const ucx_seg_head *)map;
    /* The peer wrote its head before it sent the fd; copied once, checked here, and
     * never read again (it is the peer's memory). */
    if (h->magic != UCX_SEG_MAGIC || h->nranks != (uint32_t)nranks || !h->lane_bytes)
        return -1;
    ucx_seg_geom w;
    layout(&w, nranks, (size_t)h->lane_bytes, h->nslots, 0);
    if (h->nslots < 2 || (h->nslots & (h->nslots - 1)) || h->nslots > (1u << 20) ||
        h->lane_bytes > ((uint64_t)1 << 32) || h->lane_stride != w.lane_stride ||
        h->lanes_off != w.lanes_off || h->blocks_off != w.blocks_off || h->blocks_off > bytes)
        return -1;
    *g = w;
    g->bytes = bytes;
    return 0;
}

int ucx_seg_alloc(ucx_seg *s, size_t len, int peer, ucx_seg_desc *d)
{
    size_t need = (len + SEG_UNIT - 1) / SEG_UNIT;
    if (!need)
        need = 1;
    if (need > s->units)
        return -1;
    pthread_mutex_lock(&s->mu);
    /* first fit: the lowest blocks are reused, so the pages in use stay few */
    size_t u = 0, found = s->units;
    while (u + need <= s->units) {
        if (s->used[u]) {          /* a block starts here: skip it */
            u += s->run[u];
            continue;
        }
        size_t k = 1;
        while (k < need && !s->used[u + k])
            k++;
        if (k == need) {
            found = u;
            break;
        }
        u += k;                    /* u + k is a block's start */
    }
    if (found == s->units) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    memset(s->used + found, 1, need);
    s->run[found] = (uint32_t)need;
    s->owner[found] = peer;
    uint32_t tag = s->next_tag++;
    if (!s->next_tag)
        s->next_tag = 1;
    s->tag[found] = tag;
    pthread_mutex_unlock(&s->mu);
    d->off = s->geom.blocks_off + (uint64_t)found * SEG_UNIT;
    d->len = len;
    d->tag = tag;
    d->pad_ = 0;
    return 0;
}

/* Under mu: frees the block starting at unit u; returns its bytes. */
static size_t free_at(ucx_seg *s, size_t u)
{
    size_t n = s->run[u];
    memset(s->used + u, 0, n);
    s->run[u] = 0;
    s->tag[u] = 0;
    s->owner[u] = -1;
    return n * SEG_UNIT;
}

size_t ucx_seg_free(ucx_seg *s, uint64_t off, uint32_t tag)
{
    if (off < s->geom.blocks_off)
        return 0;
    off -= s->geom.blocks_off;
    if (off % SEG_UNIT || off / SEG_UNIT >= s->units || !tag)
        return 0;
    size_t u = (size_t)(off / SEG_UNIT), n = 0;
    pthread_mutex_lock(&s->mu);
    if (s->run[u] && s->tag[u] == tag)
        n = free_at(s, u);
    pthread_mutex_unlock(&s->mu);
    return n;
}

size_t ucx_seg_reclaim(ucx_seg *s, int peer)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t u = 0; u < s->units; u++)
        if (s->run[u] && s->owner[u] == peer)
            n += free_at(s, u);
    pthread_mutex_unlock(&s->mu);
    return n;
}

size_t ucx_seg_held(ucx_seg *s, int peer)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t u = 0; u < s->units; u++)
        if (s->run[u] && s->owner[u] == peer)
            n += s->run[u] * SEG_UNIT;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* A descriptor of the peer's fd in this process: pidfd_getfd, else /proc/PID/fd/N. */
static int take_fd(pid_t pid, int fd, char *err, size_t errlen)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd >= 0) {
        int got = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
        close(pfd);
        if (got >= 0) {
            (void)fcntl(got, F_SETFD, FD_CLOEXEC);
            return got;
        }
    }
#endif
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    int got = open(path, O_RDONLY | O_CLOEXEC);
    if (got < 0)
        snprintf(err, errlen, "pidfd_getfd and open(%s) failed: %s", path, strerror(errno));
    return got;
}

const unsigned char *ucx_seg_map_peer(pid_t pid, int fd, size_t bytes, int rank,
                                      char *err, size_t errlen)
{
    int got = take_fd(pid, fd, err, errlen);
    if (got < 0)
        return NULL;
    /* The fd must be that rank's segment: a pid reused since would hand us another
     * process's file. */
    char link[64], want[96], name[128];
    snprintf(link, sizeof link, "/proc/self/fd/%d", got);
    ssize_t n = readlink(link, name, sizeof name - 1);
    name[n > 0 ? n : 0] = 0;
    snprintf(want, sizeof want, "/memfd:cask-seg.%d.%d ", rank, (int)pid);
    struct stat st;
    if (strncmp(name, want, strlen(want)) || fstat(got, &st) || (size_t)st.st_size != bytes) {
        snprintf(err, errlen, "fd %d of process %d is not rank %d's segment (%s)", fd,
                 (int)pid, rank, name);
        close(got);
        return NULL;
    }
    void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, got, 0);
    close(got);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "mmap of rank %d's segment: %s", rank, strerror(errno));
        return NULL;
    }
    return m;
}

void ucx_seg_unmap_peer(const unsigned char *map, size_t bytes)
{
    if (map)
        munmap((void *)map, bytes);
}
