/* transport/bootstrap_impl.h (internal to the bootstrap): the state of a job's
 * bootstrap and the two ways of running its collectives, PMIx (bootstrap_pmix.c) and
 * files in a shared folder (bootstrap_file.c); bootstrap.c chooses and dispatches. */
#ifndef CASK_TRANSPORT_BOOTSTRAP_IMPL_H
#define CASK_TRANSPORT_BOOTSTRAP_IMPL_H

#include "transport/bootstrap.h"

#include <stddef.h>

#ifdef CASK_HAVE_PMIX
#include <pmix.h>
#endif

#define BOOT_DEFAULT_TIMEOUT_S 120
/* Every blob travels with this leading byte, so that an empty blob is still a value
 * PMIx can store and a stale value of another layout is recognised. */
#define BOOT_BLOB_TAG 0xCA

struct xport_boot {
    int kind;
    int rank, size;
    int local_rank, local_size;
    int timeout_s;
    unsigned long seq;         /* collectives so far: makes every PMIx key unique */
    char job[256];
    char err[512];
    char dir[1024];            /* XPORT_BOOT_FILE: the shared folder */
    int notify_fd;             /* XPORT_BOOT_FILE: inotify on dir (a rank's file renamed
                                  into it wakes the waits), -1 if none */
    xport_boot_watch_fn watch; /* waits: a loss seen elsewhere ends them */
    void *watch_arg;
#ifdef CASK_HAVE_PMIX
    pmix_proc_t me;
    pmix_proc_t all;           /* {namespace, PMIX_RANK_WILDCARD} */
#endif
};

/* Records the failure's message in b->err; returns st. */
cask_status boot_fail(xport_boot *b, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An integer from the environment, dflt if unset or not one in 0..1000000. */
int boot_env_int(const char *name, int dflt);

/* bootstrap_file.c: CASK_BOOT_DIR, CASK_RANK, CASK_SIZE; each rank writes <name>.<rank>
 * (aside, then renamed) and waits for the others' (r = -1: every rank's). */
cask_status boot_file_start(xport_boot *b, const char *dir);
cask_status boot_file_put(xport_boot *b, const char *name, const void *mine, size_t len);
cask_status boot_file_wait(xport_boot *b, const char *name, int r);
cask_status boot_file_get(xport_boot *b, const char *name, int r, void **out, size_t *len);

#ifdef CASK_HAVE_PMIX
/* bootstrap_pmix.c: PMIx_Init and the job's size and places; Put + Commit; a fence
 * (collect: with the data) polled with the watch; one rank's blob; the collective's key. */
cask_status boot_pmix_start(xport_boot *b);
cask_status boot_pmix_fence(xport_boot *b, int collect, const char *what);
cask_status boot_pmix_put(xport_boot *b, const char *pkey, const void *mine, size_t len);
cask_status boot_pmix_get_blob(xport_boot *b, const char *pkey, int r, void **out,
                               size_t *len);
void boot_pmix_key(char *out, size_t n, unsigned long seq, const char *key);
#endif

#endif
