/* tests/dist/test_ucx_ring.c: messages between the ranks of one host through the rings
 * of their shared-memory segments (transport/ucx_segring.h), no TCP.
 *
 *   test_ucx_ring flow      every rank sends the next 2000 messages (0 bytes to 200 KB,
 *                           headers of 12 to 192 bytes) from two threads, a tenth of
 *                           them posted (xport_ucx_am_post_mem), while the receiver's
 *                           handler stalls once so that the ring fills: each arrives once,
 *                           byte for byte, each thread's in the order it sent them, every
 *                           one through the ring, some after waiting for room there
 *   test_ucx_ring bye       every rank sends the next 1000 messages and leaves at once
 *                           (xport_ucx_destroy) while the receiver's handler is slow (a
 *                           backlog in the ring): each rank got all 1000 before its own
 *                           destroy returned (a goodbye is counted after what the ring
 *                           carried before it)
 *   test_ucx_ring killsend  rank 1 sends rank 0 a burst of 300 messages of 4 KiB and is
 *                           SIGKILLed half way through copying the 100th into its ring:
 *                           rank 0 got the first of the 99 before it (those committed),
 *                           whole and in order, never the 100th, finds rank 1 lost, unmaps
 *                           its segment; the survivors go on talking through their rings
 *                           and shut down without hanging
 *   test_ucx_ring killrecv  rank 0 sends rank 1 a burst of 300 messages of 4 KiB without
 *                           waiting (most wait for room in the ring), and rank 1 is
 *                           SIGKILLed half way through copying the 50th out of rank 0's
 *                           ring: every send ends exactly once, those still waiting with
 *                           a failure, none is left queued, and the survivors go on
 * The kill tests also check that no cask file is left in /dev/shm. Progress threads
 * sleep between messages here (CASK_UCX_SPIN_US=0): the bells wake them. Run under
 * tests/dist/run.sh (the kill tests with --survivors NP-1). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ucx_test.h"

enum { AM_MSG = 1 };
enum { FLOW_MSGS = 2000, BYE_MSGS = 1000, BURST = 300, BURST_BYTES = 4096 };

/* Leads every message's header; the rest of the header is a pattern. */
typedef struct msg_hdr { int32_t src, thread; int64_t k; uint64_t len; } msg_hdr;

static _Atomic long got, bad, sent_ok, sent_failed;
static long last_k[64][2];         /* per sender and thread: the last k handled */
static int stall_k = -1;           /* the message whose handler holds the receiver up */
static int take_every = 3;         /* every third message is copied out (recv_into) */
static int slow_us;                /* each handler takes this long */

static void setup(ucxt_env *e, int failures)
{
    setenv("CASK_UCX_SPIN_US", "0", 1);
    if (!getenv("CASK_UCX_SEG"))
        setenv("CASK_UCX_SEG", "16", 1);
    ucxt_boot(e);
    CHECK(e->size <= 64, "at most 64 ranks");
    for (int r = 0; r < 64; r++)
        last_k[r][0] = last_k[r][1] = -1;
    xport_ucx_config cfg = ucxt_failure_config(e, ucxt_on_lost);
    ucxt_create(e, failures ? &cfg : NULL);
}

/* Message k's size and header length. */
static uint64_t flow_len(long k)
{
    static const uint64_t sizes[] = { 0, 1, 63, 64, 65, 1000, 4096, 8192, 65536, 100000,
                                      200000 };
    return sizes[k % (long)(sizeof sizes / sizeof sizes[0])];
}

static size_t flow_hlen(long k) { return sizeof(msg_hdr) + (size_t)(k % 7) * 28; }

/* A message's header: msg_hdr, then a pattern up to hlen bytes. */
static void make_hdr(unsigned char *h, size_t hlen, int src, int thread, long k, uint64_t len)
{
    msg_hdr m = { src, thread, k, len };
    memcpy(h, &m, sizeof m);
    for (size_t i = sizeof m; i < hlen; i++)
        h[i] = dt_pattern(src, (uint64_t)k + 7777, i);
}

static int check_bytes(const unsigned char *p, int src, long k, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (p[i] != dt_pattern(src, (uint64_t)k, i))
            return 0;
    return 1;
}

typedef struct took { msg_hdr h; unsigned char *buf; } took;

static void taken(void *arg, cask_status st, const char *why)
{
    took *t = arg;
    CHECK_OK(st, "receiving message %ld: %s", (long)t->h.k, why ? why : "");
    if (!check_bytes(t->buf, t->h.src, t->h.k, t->h.len)) {
        fprintf(stderr, "[rank %d] message %ld from rank %d differs (copied out)\n",
                dt_rank_, (long)t->h.k, t->h.src);
        atomic_fetch_add(&bad, 1);
    }
    free(t->buf);
    free(t);
    atomic_fetch_add(&got, 1);
}

static void on_msg(void *arg, xport_ucx_msg *m)
{
    (void)arg;
    msg_hdr h;
    CHECK(m->header_len >= sizeof h, "a header of %zu bytes", m->header_len);
    memcpy(&h, m->header, sizeof h);
    CHECK(h.src >= 0 && h.src < 64 && (h.thread == 0 || h.thread == 1), "a bad header");
    CHECK(m->len == h.len, "message %ld: %zu bytes, its header says %llu", (long)h.k, m->len,
          (unsigned long long)h.len);
    CHECK(m->data || !m->len, "message %ld came without its data", (long)h.k);
    /* each sending thread's messages in the order it sent them (a ring is FIFO) */
    CHECK(h.k > last_k[h.src][h.thread], "message %ld of rank %d thread %d after %ld",
          (long)h.k, h.src, h.thread, last_k[h.src][h.thread]);
    last_k[h.src][h.thread] = (long)h.k;
    const unsigned char *uh = m->header;
    for (size_t i = sizeof h; i < m->header_len; i++)
        if (uh[i] != dt_pattern(h.src, (uint64_t)h.k + 7777, i)) {
            atomic_fetch_add(&bad, 1);
            break;
        }
    if (h.k == stall_k)
        dt_sleep_ms(300);   /* nothing is consumed meanwhile: the sender's ring fills */
    if (slow_us)
        usleep((useconds_t)slow_us);   /* a backlog in the ring when the goodbye comes */
    if (take_every && h.k % take_every == 0) {
        took *t = malloc(sizeof *t);
        t->h = h;
        t->buf = malloc(h.len ? h.len : 1);
        CHECK_OK(xport_ucx_recv_into(m, t->buf, taken, t), "recv_into");
        return;
    }
    if (!check_bytes(m->data, h.src, h.k, h.len)) {
        fprintf(stderr, "[rank %d] message %ld from rank %d differs\n", dt_rank_, (long)h.k,
                h.src);
        atomic_fetch_add(&bad, 1);
    }
    atomic_fetch_add(&got, 1);
}

static void handlers(ucxt_env *e)
{
    CHECK_OK(xport_ucx_set_handler(e->x, AM_MSG, on_msg, e), "set_handler");
    ucxt_set_handlers(e);
}

/* The end of a send: counted, its buffer freed. */
static void sent(void *arg, cask_status st, const char *why)
{
    (void)why;
    atomic_fetch_add(st == CASK_OK ? &sent_ok : &sent_failed, 1);
    free(arg);
}

/* Sends message k (len bytes, hlen of header) to peer; posted if asked. Returns the
 * status of the call (the send's own end is counted by sent()). */
static cask_status send_msg(ucxt_env *e, int to, int thread, long k, uint64_t len,
                            size_t hlen, int posted)
{
    unsigned char h[XPORT_UCX_MAX_HEADER];
    make_hdr(h, hlen, e->rank, thread, k, len);
    unsigned char *buf = malloc(len ? len : 1);
    for (uint64_t i = 0; i < len; i++)
        buf[i] = dt_pattern(e->rank, (uint64_t)k, i);
    cask_status st = posted
        ? xport_ucx_am_post_mem(e->x, to, AM_MSG, h, hlen, buf, len, XPORT_UCX_MEM_HOST, sent, buf)
        : xport_ucx_am_send(e->x, to, AM_MSG, h, hlen, buf, len, sent, buf);
    if (st != CASK_OK)
        free(buf);
    return st;
}

typedef struct flow_thr { ucxt_env *e; int to, thread; } flow_thr;

static void *flow_main(void *arg)
{
    flow_thr *t = arg;
    for (long k = t->thread; k < FLOW_MSGS; k += 2)
        CHECK_OK(send_msg(t->e, t->to, t->thread, k, flow_len(k), flow_hlen(k), k % 10 == 9),
                 "message %ld", k);
    return NULL;
}

static void test_flow(void)
{
    ucxt_env e;
    setup(&e, 0);
    handlers(&e);
    stall_k = 500;
    ucxt_connect(&e);
    ucxt_barrier(&e);
    int to = (e.rank + 1) % e.size;
    pthread_t th[2];
    flow_thr t[2] = { { &e, to, 0 }, { &e, to, 1 } };
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, flow_main, &t[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ucxt_wait_for(&got, FLOW_MSGS, 120, "messages received");
    ucxt_wait_for(&sent_ok, FLOW_MSGS, 120, "sends completed");
    CHECK(atomic_load(&bad) == 0, "%ld messages differ", atomic_load(&bad));
    CHECK(atomic_load(&sent_failed) == 0, "%ld sends failed", atomic_load(&sent_failed));
    xport_ucx_stats s = ucxt_stats(&e, to);
    printf("[rank %d] to rank %d: %llu messages, %llu through the ring, %llu waited for room "
           "(longest queue %llu)\n", e.rank, to, (unsigned long long)s.msgs_sent,
           (unsigned long long)s.ring_msgs_sent, (unsigned long long)s.credit_stalls,
           (unsigned long long)s.max_queued);
    CHECK(s.ring_msgs_sent == FLOW_MSGS && s.msgs_sent == FLOW_MSGS,
          "%llu of %d messages through the ring, %llu sent in all (is CASK_UCX_RING on?)",
          (unsigned long long)s.ring_msgs_sent, FLOW_MSGS, (unsigned long long)s.msgs_sent);
    CHECK(s.credit_stalls > 0, "the ring never filled while the receiver stalled");
    CHECK(s.ring_queued == 0, "%llu sends still queued", (unsigned long long)s.ring_queued);
    xport_ucx_stats r = ucxt_stats(&e, (e.rank + e.size - 1) % e.size);
    CHECK(r.ring_msgs_recv == FLOW_MSGS, "%llu messages read from the previous rank's ring",
          (unsigned long long)r.ring_msgs_recv);
    CHECK(r.max_window <= 64, "%llu entries outstanding at once (window 64)",
          (unsigned long long)r.max_window);
    ucxt_teardown(&e);
}

static void test_bye(void)
{
    ucxt_env e;
    setup(&e, 0);
    handlers(&e);
    take_every = 0;
    slow_us = 200;
    ucxt_connect(&e);
    ucxt_barrier(&e);
    int to = (e.rank + 1) % e.size;
    for (long k = 0; k < BYE_MSGS; k++)
        CHECK_OK(send_msg(&e, to, 0, k, 1024, sizeof(msg_hdr), 0), "message %ld", k);
    ucxt_destroy(&e);
    CHECK(atomic_load(&got) == BYE_MSGS, "%ld of %d messages before the goodbye",
          atomic_load(&got), BYE_MSGS);
    CHECK(atomic_load(&sent_ok) == BYE_MSGS, "%ld of %d sends completed",
          atomic_load(&sent_ok), BYE_MSGS);
    CHECK(atomic_load(&bad) == 0, "%ld messages differ", atomic_load(&bad));
    xport_boot_finalize(e.b);
}

static void test_kill(int recv_side)
{
    ucxt_env e;
    int victim = 1, sender = recv_side ? 0 : 1;
    if (dt_launcher_rank() == victim)
        setenv("CASK_UCX_TEST_SEG_KILL", recv_side ? "recv:50" : "send:100", 1);
    setup(&e, 1);
    CHECK(e.size >= 2, "needs 2 ranks or more");
    handlers(&e);
    take_every = recv_side ? 1 : 0;   /* the receive side dies copying out */
    ucxt_connect(&e);
    ucxt_barrier(&e);
    double t0 = dt_now();
    long refused = 0;
    if (e.rank == sender) {
        for (long k = 0; k < BURST; k++)   /* no waiting: most wait for room */
            if (send_msg(&e, recv_side ? 1 : 0, 0, k, BURST_BYTES, sizeof(msg_hdr), 0))
                refused++;   /* the peer was known lost already */
        /* the 100th copy may be the progress thread's (a send that waited for room) */
        for (int i = 0; e.rank == victim && i < 30000; i++)
            dt_sleep_ms(1);
        CHECK(e.rank != victim, "rank 1 should have died in its 100th copy");
    } else if (e.rank == victim) {
        for (;;)
            dt_sleep_ms(1000);   /* receives until it dies in its 50th copy */
    }
    ucxt_wait_lost(&e, victim, t0, "rank 1 not found lost");
    if (e.rank == 0 && !recv_side) {
        /* the messages committed before the kill, whole and in order: 99 at most (the
         * last ones written may have waited for its progress thread to leave a callback,
         * transport/ucx_segring.h "Held back"), never the 100th */
        long n = atomic_load(&got);
        printf("[rank 0] %ld of the 99 messages rank 1 copied whole came\n", n);
        CHECK(n >= 1 && n <= 99 && last_k[1][0] == n - 1, "%ld messages from rank 1, the last "
              "%ld: not the first ones of its 99 whole", n, last_k[1][0]);
        uint64_t nread = ucxt_stats(&e, 1).ring_msgs_recv;
        CHECK(nread == (uint64_t)n, "%llu messages read from rank 1's ring, %ld handled",
              (unsigned long long)nread, n);
    }
    if (e.rank == 0 && recv_side) {
        /* every send ends once: through the ring, or failed while it waited for room */
        while (atomic_load(&sent_ok) + atomic_load(&sent_failed) + refused < BURST) {
            CHECK(dt_now() - t0 < 30, "%ld sends ended, %ld refused, of %d",
                  atomic_load(&sent_ok) + atomic_load(&sent_failed), refused, BURST);
            dt_sleep_ms(1);
        }
        xport_ucx_stats s = ucxt_stats(&e, 1);
        printf("[rank 0] to the lost rank 1: %ld sends through, %ld failed waiting, %ld "
               "refused; %llu through the ring\n", atomic_load(&sent_ok),
               atomic_load(&sent_failed), refused, (unsigned long long)s.ring_msgs_sent);
        CHECK(atomic_load(&sent_ok) >= 49 && s.ring_msgs_sent == (uint64_t)atomic_load(&sent_ok),
              "%ld sends through, %llu counted through the ring", atomic_load(&sent_ok),
              (unsigned long long)s.ring_msgs_sent);
        CHECK(atomic_load(&sent_failed) + refused > 0, "no send was still waiting");
        CHECK(s.ring_queued == 0, "%llu sends left queued", (unsigned long long)s.ring_queued);
    }
    /* the lost rank's segment is unmapped */
    while (ucxt_stats(&e, 1).seg_mapped) {
        CHECK(dt_now() - t0 < 30, "rank 1 lost, its segment still mapped");
        dt_sleep_ms(5);
    }
    CHECK(xport_ucx_am_send(e.x, 1, UCXT_AM_PROBE, NULL, 0, NULL, 0, NULL, NULL) ==
          CASK_ERR_PEER, "a send to the lost rank was taken");
    /* the survivors still talk, through their rings */
    ucxt_probe_survivors(&e, victim, 0);
    for (int r = 0; r < e.size; r++)
        if (r != 1 && r != e.rank)
            CHECK(ucxt_stats(&e, r).ring_msgs_sent > 0,
                  "nothing through the ring to rank %d", r);
    ucxt_meet_survivors(&e, victim, 0);
    CHECK(atomic_load(&bad) == 0, "a message differs");
    ucxt_survive(&e, 1, e.lost_why);
}

int main(int argc, char **argv)
{
    static const dt_case cases[] = {
        { "flow", .run = test_flow },
        { "bye", .run = test_bye },
        { "killsend", .run_arg = test_kill, .arg = 0 },
        { "killrecv", .run_arg = test_kill, .arg = 1 },
    };
    return dt_main(argc, argv, "test_ucx_ring", cases, (int)(sizeof cases / sizeof *cases));
}
