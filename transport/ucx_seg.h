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
 * Thread safety: the allocator takes the segment's mutex (a sending thread allocates,
 * the progress thread frees); the rest runs on the progress thread or at set-up. */
#ifndef CASK_TRANSPORT_UCX_SEG_H
#define CASK_TRANSPORT_UCX_SEG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ucx_seg ucx_seg;

/* What names a block in a message (the payload of a segment message). */
typedef struct ucx_seg_desc {
    uint64_t off;       /* bytes from the segment's start */
    uint64_t len;       /* bytes of data */
    uint32_t tag;       /* the block's allocation, for its give-back */
    uint32_t pad_;
} ucx_seg_desc;

/* Makes this rank's segment of `bytes` (rounded up to the block unit). NULL, with a
 * message in err, where memfd_create, ftruncate or mmap fail. */
ucx_seg *ucx_seg_create(int rank, size_t bytes, char *err, size_t errlen);
/* Unmaps and closes; blocks still lent stay readable where peers mapped them. */
void ucx_seg_destroy(ucx_seg *s);
int ucx_seg_fd(const ucx_seg *s);
size_t ucx_seg_bytes(const ucx_seg *s);
/* Largest single message the segment takes. */
size_t ucx_seg_max_msg(const ucx_seg *s);

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
