/* tests/dist/test_ucx.c: the UCX transport between the ranks of a job.
 *
 *   test_ucx pingpong   every rank exchanges 200 small round trips with every rank
 *                       (itself included): content and count are right
 *   test_ucx rndv [MB]  messages from 0 bytes to MB MiB (default 64) around the ring,
 *                       eager and rendezvous, received into the receiver's buffers
 *                       with their content checked
 *   test_ucx flood      every rank floods rank 0 from two threads through a window of
 *                       4 credits while rank 0 handles slowly: all arrive exactly
 *                       once and no sender ever got ahead of its window
 *   test_ucx kill       rank 1 dies by SIGKILL in the middle of a stream; the others
 *                       see it as a lost peer (callback, failed sends), keep talking
 *                       among themselves and shut down without hanging
 *   test_ucx freeze     rank 1 stops (SIGSTOP) without closing anything; the others
 *                       declare it dead after the peer timeout
 *   test_ucx latehello  the last rank waits 5 s between the address exchange and its
 *                       hello (CASK_UCX_TEST_LATE_HELLO; a rank slow to join on a loaded
 *                       host) under a peer timeout of 1.5 s: every rank joins (the
 *                       join's deadline, not the peer timeout, holds until a hello)
 *   test_ucx callbacks  a thread sends right after posting (xport_ucx_am_post_mem),
 *                       holding a lock as the balancer does: the posted sends' done
 *                       callbacks never run on that thread (they would deadlock on
 *                       its lock), all arrive
 * Run under tests/dist/run.sh (kill and freeze with --survivors NP-1). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "ucx_test.h"

/* acks, dones and probes: UCXT_AM_ACK, UCXT_AM_DONE and UCXT_AM_PROBE */
enum { AM_PING = 1, AM_PONG = 2, AM_BLOB = 3, AM_FLOOD = 5, AM_STREAM = 6, AM_CB = 8 };

/* Waits until *v >= target; fails the test after timeout_s. Looks every 20 us, not
 * every ms: pingpong times its round trips through it. */
static void wait_for(_Atomic long *v, long target, double timeout_s, const char *what)
{
    ucxt_wait_for_us(v, target, timeout_s, 20, what);
}

static void done_free(void *arg, cask_status st, const char *why)
{
    CHECK_OK(st, "send failed: %s", why ? why : "");
    free(arg);
}

/* ---- pingpong ---- */

typedef struct pp_hdr { int32_t src; int32_t seq; } pp_hdr;
static _Atomic long pongs;

static void on_ping(void *arg, xport_ucx_msg *m)
{
    ucxt_env *e = arg;
    CHECK(m->header_len == sizeof(pp_hdr) && m->data, "ping: header %zu data %p",
          m->header_len, m->data);
    void *copy = malloc(m->len ? m->len : 1);
    memcpy(copy, m->data, m->len);
    CHECK_OK(xport_ucx_am_send(e->x, m->peer, AM_PONG, m->header, m->header_len, copy,
                               m->len, done_free, copy), "pong to %d", m->peer);
}

static void on_pong(void *arg, xport_ucx_msg *m)
{
    ucxt_env *e = arg;
    pp_hdr h;
    memcpy(&h, m->header, sizeof h);
    CHECK(h.src == e->rank, "pong for rank %d", h.src);
    CHECK(m->len == 8u + (size_t)(h.seq % 57), "pong %d has %zu bytes", h.seq, m->len);
    for (size_t i = 0; i < m->len; i++)
        CHECK(((const unsigned char *)m->data)[i] == dt_pattern(e->rank, (uint64_t)h.seq, i),
              "pong %d byte %zu", h.seq, i);
    atomic_fetch_add(&pongs, 1);
}

static void test_pingpong(void)
{
    ucxt_env e;
    ucxt_setup(&e, NULL);
    CHECK_OK(xport_ucx_set_handler(e.x, AM_PING, on_ping, &e), "set_handler");
    CHECK_OK(xport_ucx_set_handler(e.x, AM_PONG, on_pong, &e), "set_handler");
    ucxt_connect(&e);
    unsigned char buf[64];
    long n = 0;
    for (int k = 0; k < e.size; k++) {
        int peer = (e.rank + k) % e.size;
        double t0 = dt_now();
        for (int seq = 0; seq < 200; seq++) {
            pp_hdr h = { e.rank, seq };
            size_t len = 8u + (size_t)(seq % 57);
            for (size_t i = 0; i < len; i++)
                buf[i] = dt_pattern(e.rank, (uint64_t)seq, i);
            CHECK_OK(xport_ucx_am_send(e.x, peer, AM_PING, &h, sizeof h, buf, len, NULL,
                                       NULL), "ping %d to %d", seq, peer);
            wait_for(&pongs, ++n, 30, "pongs");   /* buf is free again once ponged */
        }
        printf("[rank %d] %d <-> %d: 200 round trips, %.1f us each\n", e.rank, e.rank,
               peer, (dt_now() - t0) / 200 * 1e6);
    }
    ucxt_teardown(&e);
}

/* ---- rendezvous and eager blobs around the ring ---- */

typedef struct blob_hdr { int32_t src; int32_t k; uint64_t len; } blob_hdr;
typedef struct blob_rx { ucxt_env *e; blob_hdr h; unsigned char *buf; } blob_rx;
static _Atomic long blobs_ok;

static void blob_received(void *arg, cask_status st, const char *why)
{
    blob_rx *rx = arg;
    CHECK_OK(st, "receiving blob %d: %s", rx->h.k, why ? why : "");
    for (uint64_t i = 0; i < rx->h.len; i += (i < 4096 ? 1 : 509))
        CHECK(rx->buf[i] == dt_pattern(rx->h.src, (uint64_t)rx->h.k, i),
              "blob %d (%llu bytes) from rank %d: byte %llu", rx->h.k,
              (unsigned long long)rx->h.len, rx->h.src, (unsigned long long)i);
    if (rx->h.len)
        CHECK(rx->buf[rx->h.len - 1] == dt_pattern(rx->h.src, (uint64_t)rx->h.k, rx->h.len - 1),
              "last byte of blob %d", rx->h.k);
    CHECK_OK(xport_ucx_am_send(rx->e->x, rx->h.src, UCXT_AM_ACK, &rx->h, sizeof rx->h, NULL,
                               0, NULL, NULL), "ack");
    atomic_fetch_add(&blobs_ok, 1);
    free(rx->buf);
    free(rx);
}

static void on_blob(void *arg, xport_ucx_msg *m)
{
    blob_rx *rx = malloc(sizeof *rx);
    rx->e = arg;
    memcpy(&rx->h, m->header, sizeof rx->h);
    CHECK(m->len == rx->h.len, "blob %d: %zu bytes, header says %llu", rx->h.k, m->len,
          (unsigned long long)rx->h.len);
    rx->buf = malloc(m->len ? m->len : 1);
    CHECK(rx->buf, "no memory for %zu bytes", m->len);
    unsigned char scratch[1];
    /* an eager message is complete (and rx freed by blob_received) when this returns */
    CHECK_OK(xport_ucx_recv_into(m, rx->buf, blob_received, rx), "recv_into");
    CHECK(xport_ucx_recv_into(m, scratch, blob_received, NULL) == CASK_ERR_STATE,
          "a second recv_into of one message must be refused");
}

static void test_rndv(int mb)
{
    ucxt_env e;
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_RNDV_THRESH, .rndv_thresh = 16384 };
    ucxt_setup(&e, &cfg);
    CHECK_OK(xport_ucx_set_handler(e.x, AM_BLOB, on_blob, &e), "set_handler");
    ucxt_set_handlers(&e);
    ucxt_connect(&e);
    const uint64_t sizes[] = { 0, 1, 100, 16383, 16384, 16385, 1 << 20,
                               (uint64_t)mb << 20, 3 * ((uint64_t)mb << 20) / 7 + 13 };
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    unsigned char **bufs = calloc((size_t)nsizes, sizeof *bufs);
    int to = (e.rank + 1) % e.size;
    double t0 = dt_now();
    uint64_t total = 0;
    for (int k = 0; k < nsizes; k++) {
        bufs[k] = malloc(sizes[k] ? sizes[k] : 1);
        for (uint64_t i = 0; i < sizes[k]; i++)
            bufs[k][i] = dt_pattern(e.rank, (uint64_t)k, i);
        blob_hdr h = { e.rank, k, sizes[k] };
        CHECK_OK(xport_ucx_am_send(e.x, to, AM_BLOB, &h, sizeof h, bufs[k], sizes[k], NULL,
                                   NULL), "blob %d: %s", k, cask_status_string(xport_ucx_am_send(e.x, to, AM_BLOB, &h, sizeof h, bufs[k], 0, NULL, NULL)));
        total += sizes[k];
    }
    wait_for(&blobs_ok, nsizes, 120, "blobs received");
    wait_for(&e.acks, nsizes, 120, "blobs acknowledged");
    double dt = dt_now() - t0;
    printf("[rank %d] %d blobs, %.1f MiB to rank %d in %.3f s (%.0f MiB/s)\n", e.rank,
           nsizes, (double)total / 1048576.0, to, dt, (double)total / 1048576.0 / dt);
    for (int k = 0; k < nsizes; k++)
        free(bufs[k]);
    free(bufs);
    ucxt_teardown(&e);
}

/* ---- flow control under a flood ---- */

enum { FLOOD_MSGS = 20000, FLOOD_BYTES = 200, FLOOD_CREDITS = 4 };
typedef struct flood_hdr { int32_t src; int32_t seq; } flood_hdr;
static _Atomic long flood_got;
static unsigned char *flood_seen;   /* rank 0: [src * FLOOD_MSGS + seq] */

static void on_flood(void *arg, xport_ucx_msg *m)
{
    (void)arg;
    flood_hdr h;
    memcpy(&h, m->header, sizeof h);
    CHECK(h.seq >= 0 && h.seq < FLOOD_MSGS && m->len == FLOOD_BYTES, "flood message %d", h.seq);
    CHECK(!flood_seen[(size_t)h.src * FLOOD_MSGS + (size_t)h.seq],
          "message %d of rank %d arrived twice", h.seq, h.src);
    flood_seen[(size_t)h.src * FLOOD_MSGS + (size_t)h.seq] = 1;
    CHECK(((const unsigned char *)m->data)[h.seq % FLOOD_BYTES] ==
          dt_pattern(h.src, 0, (uint64_t)(h.seq % FLOOD_BYTES)), "content of message %d", h.seq);
    if (h.seq % 16 == 0)
        dt_sleep_ms(0), usleep(50);   /* a slow consumer */
    atomic_fetch_add(&flood_got, 1);
}

typedef struct flood_thr {
    ucxt_env *e;
    int first, step;
    unsigned char *payload;
} flood_thr;
static _Atomic long flood_sent;

static void flood_done(void *arg, cask_status st, const char *why)
{
    (void)arg;
    CHECK_OK(st, "flood send: %s", why ? why : "");
    atomic_fetch_add(&flood_sent, 1);
}

static void *flood_main(void *arg)
{
    flood_thr *t = arg;
    for (int seq = t->first; seq < FLOOD_MSGS; seq += t->step) {
        flood_hdr h = { t->e->rank, seq };
        CHECK_OK(xport_ucx_am_send(t->e->x, 0, AM_FLOOD, &h, sizeof h, t->payload,
                                   FLOOD_BYTES, flood_done, NULL), "flood %d", seq);
    }
    return NULL;
}

static void test_flood(void)
{
    ucxt_env e;
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_CREDITS, .credits = FLOOD_CREDITS };
    ucxt_setup(&e, &cfg);
    CHECK_OK(xport_ucx_set_handler(e.x, AM_FLOOD, on_flood, &e), "set_handler");
    if (e.rank == 0)
        flood_seen = calloc((size_t)e.size * FLOOD_MSGS, 1);
    ucxt_connect(&e);
    unsigned char payload[FLOOD_BYTES];
    for (int i = 0; i < FLOOD_BYTES; i++)
        payload[i] = dt_pattern(e.rank, 0, (uint64_t)i);
    if (e.rank != 0) {
        pthread_t th[2];
        flood_thr t[2] = { { &e, 0, 2, payload }, { &e, 1, 2, payload } };
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, flood_main, &t[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        wait_for(&flood_sent, FLOOD_MSGS, 120, "flood sends completed");
        xport_ucx_stats s = ucxt_stats(&e, 0);
        printf("[rank %d] sent %d messages to rank 0: %llu waited for credits, longest "
               "queue %llu\n", e.rank, FLOOD_MSGS, (unsigned long long)s.credit_stalls,
               (unsigned long long)s.max_queued);
        CHECK(s.credit_stalls > 0, "a flood through %d credits never waited for one",
              FLOOD_CREDITS);
    } else {
        wait_for(&flood_got, (long)(e.size - 1) * FLOOD_MSGS, 120, "flood messages");
        for (int r = 1; r < e.size; r++) {
            xport_ucx_stats s = ucxt_stats(&e, r);
            CHECK(s.msgs_recv == FLOOD_MSGS, "%llu messages from rank %d",
                  (unsigned long long)s.msgs_recv, r);
            CHECK(s.max_window <= FLOOD_CREDITS, "rank %d had %llu messages beyond its "
                  "credits at once (window %d)", r, (unsigned long long)s.max_window,
                  FLOOD_CREDITS);
            printf("[rank 0] from rank %d: %llu messages, at most %llu outstanding "
                   "(window %d)\n", r, (unsigned long long)s.msgs_recv,
                   (unsigned long long)s.max_window, FLOOD_CREDITS);
        }
        free(flood_seen);
    }
    ucxt_teardown(&e);
}

/* ---- whose thread runs a send's done callback ---- */

enum { CB_ROUNDS = 3000 };
static pthread_t cb_sender;
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long cb_posted_done, cb_foreign, cb_got;

/* The posted send's done: must run on the progress thread. On the sending thread it
 * would wait for cb_lock, which that thread holds (the balancer's deadlock): count it
 * instead of hanging. */
static void cb_posted(void *arg, cask_status st, const char *why)
{
    (void)arg;
    CHECK_OK(st, "posted send: %s", why ? why : "");
    if (pthread_equal(pthread_self(), cb_sender))
        atomic_fetch_add(&cb_foreign, 1);
    atomic_fetch_add(&cb_posted_done, 1);
}

static void on_cb(void *arg, xport_ucx_msg *m)
{
    (void)arg; (void)m;
    atomic_fetch_add(&cb_got, 1);
}

static void test_callbacks(void)
{
    ucxt_env e;
    ucxt_setup(&e, NULL);
    CHECK_OK(xport_ucx_set_handler(e.x, AM_CB, on_cb, &e), "set_handler");
    ucxt_connect(&e);
    cb_sender = pthread_self();
    static const char payload[8] = "payload";
    long sent = 0;
    for (int i = 0; i < CB_ROUNDS; i++) {
        int peer = (e.rank + 1 + i % (e.size - 1)) % e.size;
        int32_t h = i;
        /* queued for the progress thread, which is woken ... */
        CHECK_OK(xport_ucx_am_post_mem(e.x, peer, AM_CB, &h, sizeof h, payload,
                                       sizeof payload, XPORT_UCX_MEM_HOST, cb_posted, NULL),
                 "post %d to %d", i, peer);
        /* ... while this thread, holding its lock, sends directly if it can */
        pthread_mutex_lock(&cb_lock);
        cask_status st = xport_ucx_am_send(e.x, peer, AM_CB, &h, sizeof h, payload,
                                           sizeof payload, NULL, NULL);
        pthread_mutex_unlock(&cb_lock);
        CHECK_OK(st, "send %d to %d", i, peer);
        sent += 2;
        if (i % 64 == 63)   /* spaced out a little: the progress thread also sleeps */
            dt_sleep_ms(1);
    }
    wait_for(&cb_posted_done, CB_ROUNDS, 120, "posted sends completed");
    printf("[rank %d] %d posted sends: %ld completed on the sending thread\n", e.rank,
           CB_ROUNDS, atomic_load(&cb_foreign));
    CHECK(atomic_load(&cb_foreign) == 0, "%ld of %d posted sends called their done on the "
          "thread of a later xport_ucx_am_send (ucx.h: on the progress thread)",
          atomic_load(&cb_foreign), CB_ROUNDS);
    wait_for(&cb_got, sent, 120, "messages arrived");   /* every rank sends as many */
    ucxt_teardown(&e);
}

/* ---- a rank dies (kill) or hangs (freeze) in the middle of a stream ---- */

static _Atomic long stream_got, stream_failed;

/* ucxt_on_lost, checking that one rank is lost, once, with CASK_ERR_PEER. */
static void on_lost(void *arg, int peer, cask_status st, const char *why)
{
    CHECK(st == CASK_ERR_PEER, "lost rank %d with status %s", peer, cask_status_string(st));
    long before = ucxt_record_lost(arg, peer, why);
    CHECK(before < 0, "rank %d reported lost after rank %ld", peer, before);
}

static void on_stream(void *arg, xport_ucx_msg *m)
{
    (void)arg; (void)m;
    long n = atomic_fetch_add(&stream_got, 1) + 1;
    if (n == 100 && getenv("CASK_TEST_VICTIM"))
        raise(atoi(getenv("CASK_TEST_VICTIM")));
}

static void stream_done(void *arg, cask_status st, const char *why)
{
    (void)arg; (void)why;
    if (st != CASK_OK) {
        CHECK(st == CASK_ERR_PEER || st == CASK_ERR_CANCELLED, "stream send: %s: %s",
              cask_status_string(st), why ? why : "");
        atomic_fetch_add(&stream_failed, 1);
    }
}

static void test_failure(int sig)
{
    ucxt_env e;
    xport_ucx_config cfg = ucxt_failure_config(&e, on_lost);
    ucxt_setup(&e, &cfg);
    CHECK(e.size >= 2, "needs 2 ranks or more");
    CHECK_OK(xport_ucx_set_handler(e.x, AM_STREAM, on_stream, &e), "set_handler");
    ucxt_set_handlers(&e);
    pid_t me = getpid();
    void **pids;
    size_t *lens;
    CHECK_OK(xport_boot_allgather(e.b, "pids", &me, sizeof me, &pids, &lens), "pids");
    pid_t victim_pid;
    memcpy(&victim_pid, pids[1], sizeof victim_pid);
    xport_boot_free_blobs(e.b, pids, lens);
    if (e.rank == 1) {
        char s[16];
        snprintf(s, sizeof s, "%d", sig);
        setenv("CASK_TEST_VICTIM", s, 1);
    }
    ucxt_connect(&e);
    /* Every rank connected before the victim can die: a rank still connecting would
     * fail its xport_ucx_connect naming rank 1 (right, but not what is tested here;
     * seen at 4 ranks over TCP on loopback with other load on 2 cores). */
    ucxt_barrier(&e);
    if (e.rank == 1) {
        /* Receives the stream and dies (or freezes) at its 100th message. */
        for (;;)
            dt_sleep_ms(1000);
    }
    static unsigned char payload[4096];
    double t0 = dt_now();
    int sent = 0;
    while (atomic_load(&e.lost) < 0) {
        CHECK(dt_now() - t0 < 30, "rank 1 not detected as lost after 30 s");
        cask_status st = xport_ucx_am_send(e.x, 1, AM_STREAM, NULL, 0, payload,
                                           sizeof payload, stream_done, NULL);
        if (st == CASK_ERR_PEER)
            break;
        CHECK_OK(st, "stream send %d", sent);
        sent++;
        if (sent % 64 == 0)
            dt_sleep_ms(5);
    }
    ucxt_wait_lost(&e, 1, t0, "send refused but no loss reported");
    CHECK(strstr(e.lost_why, "rank 1"), "the message does not name rank 1: %s", e.lost_why);
    printf("[rank %d] rank 1 lost after %d stream messages, %.2f s from the start: %s\n",
           e.rank, sent, e.lost_at - t0, e.lost_why);
    CHECK(xport_ucx_peer_status(e.x, 1) == CASK_ERR_PEER, "rank 1 still reachable");
    CHECK(xport_ucx_am_send(e.x, 1, AM_STREAM, NULL, 0, payload, 8, stream_done, NULL) ==
          CASK_ERR_PEER, "a send to the lost rank must fail at once");
    if (sig == SIGSTOP)
        CHECK(strstr(e.lost_why, "timeout"), "a frozen rank is found by the timeout: %s",
              e.lost_why);
    ucxt_probe_survivors(&e, 1, 1);
    ucxt_meet_survivors(&e, 1, 1);
    /* Every survivor found the frozen rank by its timeout: it may die now (earlier, a
     * survivor not there yet would see its endpoint reset instead). */
    if (sig == SIGSTOP && e.rank == 0)
        kill(victim_pid, SIGKILL);    /* let mpirun finish */
    ucxt_survive(&e, 0, "detected and shut down cleanly");
}

/* ---- a rank slow to join ---- */

static void test_late_hello(void)
{
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_HEARTBEAT_MS | XPORT_UCX_TIMEOUT_MS,
                             .heartbeat_ms = 100, .peer_timeout_ms = 1500 };
    ucxt_env e;
    ucxt_boot(&e);
    char late[32];
    snprintf(late, sizeof late, "%d:5000", e.size - 1);
    setenv("CASK_UCX_TEST_LATE_HELLO", late, 1);
    ucxt_create(&e, &cfg);
    double t0 = dt_now();
    ucxt_connect(&e);
    double took = dt_now() - t0;
    /* not vacuous: the others did wait for the late rank, over three peer timeouts. The
     * timeout is no shorter than that because it holds after the hello too, through the
     * teardown: on a loaded 2-core host a progress thread can miss 300 ms of
     * heartbeats (a CI run at load ~40 did) */
    if (e.rank != e.size - 1)
        CHECK(took > 4.9, "connect took %.2f s: the late hello did not happen", took);
    for (int r = 0; r < e.size; r++)
        CHECK_OK(xport_ucx_peer_status(e.x, r), "rank %d lost after a late hello", r);
    printf("[rank %d] joined in %.2f s, every peer alive\n", e.rank, took);
    ucxt_teardown(&e);
}

int main(int argc, char **argv)
{
    static const dt_case cases[] = {
        { "pingpong", .run = test_pingpong },
        { "rndv", .run_arg = test_rndv, .arg = 64, .opt = "[MB]" },
        { "flood", .run = test_flood },
        { "kill", .run_arg = test_failure, .arg = SIGKILL },
        { "freeze", .run_arg = test_failure, .arg = SIGSTOP },
        { "callbacks", .run = test_callbacks },
        { "latehello", .run = test_late_hello },
    };
    return dt_main(argc, argv, "test_ucx", cases, (int)(sizeof cases / sizeof *cases));
}
