/* tests/dist/ucx_test.h: the harness the UCX transport test programs share (test_ucx.c,
 * test_ucx_seg.c, test_ucx_ring.c): a rank's bootstrap and transport, connecting and
 * tearing them down, probes answered by acks and a done message counted per rank, the
 * failure detection of the kill tests, and how a survivor of a lost rank ends.
 *
 * Header only, like dist_test.h, whose CHECK names the rank through a per-program
 * dt_rank_. The handler ids UCXT_AM_PROBE, UCXT_AM_ACK and UCXT_AM_DONE are the
 * harness's (ucxt_set_handlers); a test's own messages take ids below UCXT_AM_FIRST. */
#ifndef CASK_TESTS_DIST_UCX_TEST_H
#define CASK_TESTS_DIST_UCX_TEST_H

#include <dirent.h>
#include <stdatomic.h>

#include "cask/status.h"
#include "transport/bootstrap.h"
#include "transport/ucx.h"
#include "dist_test.h"

enum {
    UCXT_AM_FIRST = XPORT_UCX_MAX_AM - 3,
    UCXT_AM_PROBE = UCXT_AM_FIRST,   /* answered with UCXT_AM_ACK */
    UCXT_AM_ACK,                     /* counted in acks */
    UCXT_AM_DONE                     /* counted in dones */
};

/* One rank of a test: its bootstrap and transport, and what the harness's handlers and
 * ucxt_on_lost have seen. Outlives the transport (its handlers point to it). */
typedef struct ucxt_env {
    xport_boot *b;
    xport_ucx *x;
    int rank, size;
    _Atomic long acks, dones;   /* UCXT_AM_ACK, UCXT_AM_DONE received */
    _Atomic long lost;          /* the last peer reported lost, -1 until one is */
    char lost_why[512];         /* its message (written before lost) */
    double lost_at;             /* when (dt_now) */
} ucxt_env;

/* Joins the job's bootstrap (xport_boot_init): e's rank and size, CHECK's rank. */
static inline void ucxt_boot(ucxt_env *e)
{
    memset(e, 0, sizeof *e);
    atomic_init(&e->acks, 0);
    atomic_init(&e->dones, 0);
    atomic_init(&e->lost, -1);
    char err[512];
    CHECK_OK(xport_boot_init(NULL, &e->b, err, sizeof err), "xport_boot_init: %s", err);
    e->rank = dt_rank_ = xport_boot_rank(e->b);
    e->size = xport_boot_size(e->b);
}

/* Creates the transport with cfg (NULL: the defaults and the environment's). */
static inline void ucxt_create(ucxt_env *e, const xport_ucx_config *cfg)
{
    char err[512];
    CHECK_OK(xport_ucx_create(e->b, cfg, &e->x, err, sizeof err), "xport_ucx_create: %s",
             err);
}

static inline void ucxt_setup(ucxt_env *e, const xport_ucx_config *cfg)
{
    ucxt_boot(e);
    ucxt_create(e, cfg);
}

/* xport_ucx_connect, or the test fails with the transport's message. */
static inline void ucxt_connect(ucxt_env *e)
{
    cask_status st = xport_ucx_connect(e->x);
    char err[512];
    xport_ucx_error(e->x, err, sizeof err);
    CHECK_OK(st, "xport_ucx_connect: %s", err);
}

static inline void ucxt_barrier(ucxt_env *e)
{
    CHECK_OK(xport_boot_barrier(e->b), "%s", xport_boot_error(e->b));
}

/* xport_ucx_destroy, which must succeed. */
static inline void ucxt_destroy(ucxt_env *e)
{
    char err[512];
    cask_status st = xport_ucx_destroy(e->x, err, sizeof err);
    CHECK_OK(st, "xport_ucx_destroy: %s: %s", cask_status_string(st), err);
}

/* The end of a test where no rank was lost: every rank there, then both torn down. */
static inline void ucxt_teardown(ucxt_env *e)
{
    ucxt_barrier(e);
    ucxt_destroy(e);
    xport_boot_finalize(e->b);
}

/* Waits until *v >= target, looking every poll_us; fails the test after timeout_s. */
static inline void ucxt_wait_for_us(_Atomic long *v, long target, double timeout_s,
                                    long poll_us, const char *what)
{
    double t0 = dt_now();
    while (atomic_load(v) < target) {
        CHECK(dt_now() - t0 < timeout_s, "%s: %ld of %ld after %.0f s", what,
              atomic_load(v), target, timeout_s);
        struct timespec ts = { poll_us / 1000000, (poll_us % 1000000) * 1000 };
        nanosleep(&ts, NULL);
    }
}

static inline void ucxt_wait_for(_Atomic long *v, long target, double timeout_s,
                                 const char *what)
{
    ucxt_wait_for_us(v, target, timeout_s, 1000, what);
}

static inline xport_ucx_stats ucxt_stats(ucxt_env *e, int peer)
{
    xport_ucx_stats s;
    CHECK_OK(xport_ucx_peer_stats(e->x, peer, &s), "peer_stats");
    return s;
}

/* ---- the harness's messages ---- */

static inline void ucxt_on_probe(void *arg, xport_ucx_msg *m)
{
    ucxt_env *e = arg;
    CHECK_OK(xport_ucx_am_send(e->x, m->peer, UCXT_AM_ACK, NULL, 0, NULL, 0, NULL, NULL),
             "ack");
}

static inline void ucxt_on_ack(void *arg, xport_ucx_msg *m)
{
    (void)m;
    atomic_fetch_add(&((ucxt_env *)arg)->acks, 1);
}

static inline void ucxt_on_done(void *arg, xport_ucx_msg *m)
{
    (void)m;
    atomic_fetch_add(&((ucxt_env *)arg)->dones, 1);
}

/* Registers the handlers of UCXT_AM_PROBE, UCXT_AM_ACK and UCXT_AM_DONE (before
 * xport_ucx_connect). */
static inline void ucxt_set_handlers(ucxt_env *e)
{
    CHECK_OK(xport_ucx_set_handler(e->x, UCXT_AM_PROBE, ucxt_on_probe, e), "set_handler");
    CHECK_OK(xport_ucx_set_handler(e->x, UCXT_AM_ACK, ucxt_on_ack, e), "set_handler");
    CHECK_OK(xport_ucx_set_handler(e->x, UCXT_AM_DONE, ucxt_on_done, e), "set_handler");
}

/* ---- a lost rank ---- */

/* Records peer as lost in e with its message; returns the peer recorded before, or -1. */
static inline long ucxt_record_lost(ucxt_env *e, int peer, const char *why)
{
    snprintf(e->lost_why, sizeof e->lost_why, "%s", why);
    e->lost_at = dt_now();
    return atomic_exchange(&e->lost, peer);
}

/* An on_peer_failure (its arg: the ucxt_env) that records the loss. */
static inline void ucxt_on_lost(void *arg, int peer, cask_status st, const char *why)
{
    (void)st;
    ucxt_record_lost(arg, peer, why);
}

/* The kill tests' failure detection: a heartbeat every 200 ms, a peer silent for 3 s is
 * dead, on_lost(e, ...) is called for it. */
static inline xport_ucx_config ucxt_failure_config(ucxt_env *e, xport_ucx_peer_fn on_lost)
{
    return (xport_ucx_config){ .field_mask = XPORT_UCX_HEARTBEAT_MS | XPORT_UCX_TIMEOUT_MS |
                                             XPORT_UCX_ON_PEER,
                               .heartbeat_ms = 200, .peer_timeout_ms = 3000,
                               .on_peer_failure = on_lost, .on_peer_arg = e };
}

/* Waits until a peer was reported lost (30 s from t0, else fails naming what), and
 * checks that it was victim. */
static inline void ucxt_wait_lost(ucxt_env *e, int victim, double t0, const char *what)
{
    while (atomic_load(&e->lost) < 0) {
        CHECK(dt_now() - t0 < 30, "%s", what);
        dt_sleep_ms(1);
    }
    CHECK(atomic_load(&e->lost) == victim, "lost rank %ld: %s", atomic_load(&e->lost),
          e->lost_why);
}

/* Sends id to every rank but victim, and but this one unless with_self; returns how
 * many were sent. */
static inline long ucxt_send_survivors(ucxt_env *e, int victim, int with_self, unsigned id,
                                       const char *what)
{
    long n = 0;
    for (int r = 0; r < e->size; r++) {
        if (r == victim || (r == e->rank && !with_self))
            continue;
        cask_status st = xport_ucx_am_send(e->x, r, id, NULL, 0, NULL, 0, NULL, NULL);
        char err[512];
        xport_ucx_error(e->x, err, sizeof err);
        CHECK_OK(st, "%s to rank %d: %s (first error: %s)", what, r, cask_status_string(st),
                 err);
        n++;
    }
    return n;
}

/* The survivors still talk: probes every survivor and waits for all their acks.
 * Returns the count of acks waited for. */
static inline long ucxt_probe_survivors(ucxt_env *e, int victim, int with_self)
{
    long acks0 = atomic_load(&e->acks);
    long n = ucxt_send_survivors(e, victim, with_self, UCXT_AM_PROBE, "probe");
    ucxt_wait_for(&e->acks, acks0 + n, 30, "acks from the survivors");
    return acks0 + n;
}

/* A barrier among the survivors (the launcher's would wait for the lost rank): tells
 * every survivor this one is done and waits until all of them are. */
static inline void ucxt_meet_survivors(ucxt_env *e, int victim, int with_self)
{
    long n = ucxt_send_survivors(e, victim, with_self, UCXT_AM_DONE, "done");
    ucxt_wait_for(&e->dones, n, 30, "the other survivors");
}

/* How many files of cask's are in /dev/shm. */
static inline int ucxt_dev_shm_cask_files(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, "cask"))
            n++;
    closedir(d);
    return n;
}

/* The end of a survivor: xport_ucx_destroy reports the lost peer (CASK_ERR_PEER) within
 * 20 s; with check_shm no cask file is left in /dev/shm; run.sh is told this rank
 * survived (dt_report_survivor) and the process exits at once. No bootstrap barrier and
 * no finalize: the launcher's fence, and PMIx_Finalize, could wait for the lost rank. */
_Noreturn static inline void ucxt_survive(ucxt_env *e, int check_shm, const char *msg)
{
    double t1 = dt_now();
    cask_status st = xport_ucx_destroy(e->x, NULL, 0);
    CHECK(st == CASK_ERR_PEER, "destroy after a lost peer gave %s", cask_status_string(st));
    CHECK(dt_now() - t1 < 20, "destroy took %.1f s", dt_now() - t1);
    if (check_shm)
        CHECK(ucxt_dev_shm_cask_files() == 0, "cask files left in /dev/shm");
    dt_report_survivor(e->rank);
    printf("[rank %d] survived: %s\n", e->rank, msg);
    fflush(stdout);
    _exit(0);
}

#endif
