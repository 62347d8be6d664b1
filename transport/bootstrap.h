/* transport/bootstrap.h: how the processes of one cask job find each other.
 *
 * A multi-process run is started by a launcher that serves PMIx (Open MPI's `mpirun`,
 * Slurm's `srun --mpi=pmix`, PRRTE's `prterun`). The bootstrap learns this process's
 * rank and the job's size from it, and exchanges small blobs (UCX worker addresses, an
 * NCCL unique id) through its key-value store: Put + Commit + Fence(collect) + Get.
 *
 * Where no PMIx launcher exists, a script may set CASK_BOOT_DIR (a folder all ranks
 * see), CASK_RANK and CASK_SIZE instead: the blobs then go through files there.
 *
 * Without a launcher (no PMIX_RANK / PMIX_NAMESPACE in the environment) the bootstrap
 * is a job of one process, rank 0, and needs no network: every collective returns at
 * once with this process's own contribution. If another launcher's variables show a
 * job of several processes but PMIx is unusable (not compiled in, or PMIx_Init fails),
 * xport_boot_init fails instead of silently running N copies that each think they are
 * alone.
 *
 * Commands (see docs/distributed.md):
 *   mpirun -n 4 --oversubscribe ./prog           (Open MPI >= 4 with PMIx; as root add
 *                                                 --allow-run-as-root)
 *   srun --mpi=pmix -n 4 ./prog                   (Slurm built with PMIx)
 *
 * Every collective (allgather, bcast, barrier) must be called by all ranks in the same
 * order with the same key. Collectives are not thread safe with each other: call them
 * from one thread. Queries (rank, size, ...) are thread safe.
 */
#ifndef CASK_TRANSPORT_BOOTSTRAP_H
#define CASK_TRANSPORT_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>
#include "cask/status.h"

typedef struct xport_boot xport_boot;

/* What the bootstrap uses to talk to the launcher (xport_boot_kind). */
enum xport_boot_kind {
    XPORT_BOOT_SINGLE = 0,   /* no launcher: rank 0 of 1 */
    XPORT_BOOT_PMIX = 1,     /* PMIx client of mpirun / srun / prterun */
    XPORT_BOOT_FILE = 2      /* files in a shared folder: CASK_BOOT_DIR, CASK_RANK,
                                CASK_SIZE (and CASK_LOCAL_RANK, CASK_LOCAL_SIZE) set by
                                tests/dist/launch-local.sh or any script, for hosts
                                without a PMIx launcher */
};

/* Bits of xport_boot_config.field_mask. */
enum xport_boot_field {
    XPORT_BOOT_TIMEOUT = 1u << 0,
    XPORT_BOOT_FORCE_SINGLE = 1u << 1
};

typedef struct xport_boot_config {
    uint64_t field_mask;
    int timeout_s;      /* XPORT_BOOT_TIMEOUT: limit of each fence/get, seconds; env
                           CASK_BOOT_TIMEOUT; default 120. A rank that died before a
                           fence makes the others fail after this instead of hanging. */
    int force_single;   /* XPORT_BOOT_FORCE_SINGLE: ignore any launcher (tests) */
} xport_boot_config;

/* Connects to the launcher, or becomes a job of one. cfg may be NULL. On failure
 * *out is NULL and err (may be NULL, errlen bytes) holds a message naming the call.
 * Errors: CASK_ERR_PEER (PMIx call failed, or launcher without PMIx), CASK_ERR_NOMEM,
 * CASK_ERR_INVALID. */
cask_status xport_boot_init(const xport_boot_config *cfg, xport_boot **out,
                            char *err, size_t errlen);

/* Leaves the job (PMIx_Finalize). b may be NULL. Does not wait for the other ranks:
 * call xport_boot_barrier first if they must all get here. */
void xport_boot_finalize(xport_boot *b);

int xport_boot_rank(const xport_boot *b);
int xport_boot_size(const xport_boot *b);
/* Rank among the processes of this job on this node, and how many there are (choose a
 * GPU with it). 0 and 1 without a launcher. */
int xport_boot_local_rank(const xport_boot *b);
int xport_boot_local_size(const xport_boot *b);
/* The xport_boot_kind in use. */
int xport_boot_kind(const xport_boot *b);
/* The launcher's job name (PMIx namespace), "single" without one. */
const char *xport_boot_job(const xport_boot *b);

/* Gathers one blob of any size from every rank. key names this exchange (unique within
 * the job: each call must use a new key, e.g. "ucx.addr"). On success *blobs is an
 * array of size pointers and *lens of size lengths, both owned by the caller and freed
 * with xport_boot_free_blobs. Errors: CASK_ERR_PEER (fence failed or timed out, a rank
 * gave nothing), CASK_ERR_NOMEM, CASK_ERR_INVALID. */
cask_status xport_boot_allgather(xport_boot *b, const char *key, const void *mine,
                                 size_t len, void ***blobs, size_t **lens);
void xport_boot_free_blobs(const xport_boot *b, void **blobs, size_t *lens);

/* Copies rank root's len bytes of buf into buf on every rank (an NCCL unique id). All
 * ranks pass the same len; on non-root ranks buf is only written. Errors as allgather,
 * plus CASK_ERR_FORMAT if root's blob has another length. */
cask_status xport_boot_bcast(xport_boot *b, const char *key, int root, void *buf,
                             size_t len);

/* Returns when every rank has called it, or CASK_ERR_PEER after the timeout or when
 * the launcher reports a rank lost. */
cask_status xport_boot_barrier(xport_boot *b);

/* This host's boot id (/proc/sys/kernel/random/boot_id; "" where unreadable) into out,
 * n bytes: processes that share it run on one host (same kernel). */
void xport_boot_host_id(char *out, size_t n);

/* A check that a collective's wait makes while the other ranks are not all there: 1
 * when a rank is known lost (by another channel, as UCX's endpoints once up), with why
 * (len bytes, a message naming the rank); else 0. Called on the waiting thread. */
typedef int (*xport_boot_watch_fn)(void *arg, char *why, size_t len);

/* Sets (fn NULL: clears) b's watch: a collective's wait (for the other ranks' files, or
 * for a PMIx fence or get, begun non-blocking) then fails with CASK_ERR_PEER and the
 * watch's why, within about 10 ms of it seeing a loss, rather than after the timeout: the
 * launcher's server does not fail a fence that began after a rank's death, nor always a
 * get for a key that a lost rank never put. Call it between collectives. */
void xport_boot_set_watch(xport_boot *b, xport_boot_watch_fn fn, void *arg);

/* Message of the last failure of b ("" if none); valid until the next call on b. */
const char *xport_boot_error(const xport_boot *b);

#endif
