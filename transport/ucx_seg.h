/* transport/ucx_seg.h: bulk host data between the ranks of one host through shared-memory
 * segments that cask owns, while the messages themselves stay on UCX (TCP on loopback).
 *
 * Each rank makes one segment at xport_ucx_create: an anonymous memfd (no name in
 * /dev/shm, so nothing is left behind by a crash: the kernel frees it with its last
 * mapping). Its fd number travels with the worker address; a peer of the same host takes
 * it with pidfd_getfd (or opens /proc/PID/fd/N) at connect and maps it read-only, then
 * says so in its HELLO. A send of host data of seg_thresh bytes or more to such a peer
 * takes a block of the sender's segment (never waiting: a full segment sends by UCX as
 * before), copies the data in on the sending thread, and only then sends a small message
 * naming the block (offset, bytes, tag). The receiver's handler sees the data in the
 * mapping as if it had come eagerly; once the handler returned, a control message gives
 * the block back. So:
 * - nothing waits on a half-written block: a sender killed while it copies has sent no
 *   message naming it; a message that arrived names bytes already written, and the
 *   receiver's mapping keeps them readable after the sender's death;
 * - a receiver killed (or lost) holding blocks: the sender reclaims every block it
 *   gave that peer when it marks the peer dead (a late give-back of a block since
 *   reused is ignored: blocks carry a tag); a receiver unmaps a lost sender's segment on
 *   its next tick;
 * - a peer can only read this rank's segment, never write it (mapped read-only there).
 * A peer fenced out and resumed may read a block reused since: its results are not
 * taken, as with CMA reads.
 *
 * The segment also carries the rings of ucx_segring.h (messages themselves between the
 * ranks of one host, without TCP). Its layout, which a peer reads through its mapping:
 *   [head: ucx_seg_head, then one ucx_seg_counter per rank (what this rank consumed of
 *    that rank's ring toward it)]
 *   [lanes: one per rank, this rank's ring toward it: ucx_ring_lane, nslots
 *    ucx_ring_slot, then lane_bytes of message records]
 *   [blocks: the allocator's, block_bytes]
 * Every part is written by the segment's owner only; peers map it read-only. Pages are
 * taken as they are first written (a memfd is sparse): lanes toward ranks of other
 * hosts, never written, cost nothing.
 * Thread safety: the allocator takes the segment's mutex (a sending thread allocates,
 * the progress thread frees); the rest runs on the progress thread or at set-up. */
#ifndef CASK_TRANSPORT_UCX_SEG_H
#define CASK_TRANSPORT_UCX_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ucx_seg ucx_seg;

#define UCX_SEG_MAGIC 0x63736b7365673031ull   /* "csksegr1" */

/* The segment's first bytes. */
typedef struct ucx_seg_head {
    uint64_t magic;
    uint32_t nranks, nslots;    /* lanes (one per rank of the job), slots per lane */
    uint64_t lane_bytes;        /* record bytes per lane (0: no rings) */
    uint64_t lane_stride;       /* bytes from one lane to the next */
    uint64_t lanes_off;         /* offset of rank 0's lane */
    uint64_t blocks_off;        /* offset of the blocks */
    uint64_t pad_[2];
    _Alignas(64) _Atomic uint64_t epoch;   /* odd while the owner's progress thread sleeps
                                              (or is about to): ucx_segring.c */
    unsigned char pad2_[56];
} ucx_seg_head;

/* One per rank after the head, a cache line each: entries of that rank's ring toward
 * the owner that the owner has consumed. */
typedef struct ucx_seg_counter {
    _Alignas(64) _Atomic uint64_t n;
    unsigned char pad_[56];
} ucx_seg_counter;

/* A lane's first cache line. */
typedef struct ucx_ring_lane {
    _Alignas(64) _Atomic uint64_t want;   /* nonzero: the owner waits for room, and wants
                                             its bell rung once its peer consumed this
                                             many entries */
    unsigned char pad_[56];
} ucx_ring_lane;

/* One message of a ring: its record (wire header, then the data at the next multiple
 * of 64 bytes) at off in the lane's records. Written, then seq stored (release). */
typedef struct ucx_ring_slot {
    _Atomic uint64_t seq;       /* entry number + 1 once committed */
    uint64_t off;               /* record offset in the lane's record bytes */
    uint64_t len;               /* data bytes */
    uint32_t hdr_len;           /* wire header + user header bytes */
    uint32_t pad_;
} ucx_ring_slot;

/* Where the parts of a segment are (checked against the mapping's size). */
typedef struct ucx_seg_geom {
    uint32_t nranks, nslots;
    uint64_t lane_bytes, lane_stride, lanes_off, blocks_off, bytes;
} ucx_seg_geom;

/* What names a block in a message (the payload of a segment message). */
typedef struct ucx_seg_desc {
    uint64_t off;       /* bytes from the segment's start */
    uint64_t len;       /* bytes of data */
    uint32_t tag;       /* the block's allocation, for its give-back */
    uint32_t pad_;
} ucx_seg_desc;

/* Makes this rank's segment: block_bytes of blocks (rounded up to the block unit), after
 * a lane of lane_bytes record bytes and nslots slots (a power of 2) toward each of the
 * nranks ranks (lane_bytes 0: no rings). NULL, with a message in err, where
 * memfd_create, ftruncate or mmap fail. */
ucx_seg *ucx_seg_create(int rank, size_t block_bytes, int nranks, size_t lane_bytes,
                        unsigned nslots, char *err, size_t errlen);
/* Unmaps and closes; blocks still lent stay readable where peers mapped them. */
void ucx_seg_destroy(ucx_seg *s);
int ucx_seg_fd(const ucx_seg *s);
/* The whole segment's bytes (head, lanes and blocks). */
size_t ucx_seg_bytes(const ucx_seg *s);
/* Largest single message the blocks take. */
size_t ucx_seg_max_msg(const ucx_seg *s);
const ucx_seg_geom *ucx_seg_geometry(const ucx_seg *s);
/* Gives the pages of this rank's lane toward peer back to the kernel (it reads zeros). */
void ucx_seg_lane_drop(ucx_seg *s, int peer);
/* Reads and checks the geometry of a peer's segment from its mapping (bytes long), made
 * for a job of nranks; 0 and *g filled, or -1 (not such a segment, or no rings). */
int ucx_seg_geom_read(const unsigned char *map, size_t bytes, int nranks, ucx_seg_geom *g);

/* Takes a block of len bytes for peer; 0 and *d filled, or -1 when no block is free
 * (never waits). Copying the data in is the caller's (ucx_seg_base). */
int ucx_seg_alloc(ucx_seg *s, size_t len, int peer, ucx_seg_desc *d);
unsigned char *ucx_seg_base(const ucx_seg *s);
/* Gives back the block d names if it is still the one lent (off and tag match);
 * returns its bytes, 0 if it was not (already given back or reclaimed). */
size_t ucx_seg_free(ucx_seg *s, uint64_t off, uint32_t tag);
/* Gives back every block lent to peer; returns the bytes reclaimed. */
size_t ucx_seg_reclaim(ucx_seg *s, int peer);
/* Bytes lent to peer now. */
size_t ucx_seg_held(ucx_seg *s, int peer);

/* Maps read-only the segment of a process of this host: fd number fd in process pid,
 * of `bytes` bytes, made by rank `rank` (its name is checked, so a pid reused by another
 * process is refused). Returns the mapping, or NULL with the reason in err. */
const unsigned char *ucx_seg_map_peer(pid_t pid, int fd, size_t bytes, int rank,
                                      char *err, size_t errlen);
void ucx_seg_unmap_peer(const unsigned char *map, size_t bytes);

#endif
