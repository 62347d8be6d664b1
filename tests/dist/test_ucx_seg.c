/* tests/dist/test_ucx_seg.c: bulk host data between the ranks of one host through cask's
 * shared-memory segments (transport/ucx_seg.h), messages on UCX.
 *
 *   test_ucx_seg flow       every rank sends blobs (16 KiB to 3 MiB, and one larger than
 *                           a segment takes) to the next, three rounds so that blocks are
 *                           reused, then a burst of 40 x 1 MiB that overfills the
 *                           segment: every byte arrives right, the eligible sizes went
 *                           through the segment, the burst partly by UCX (a full segment
 *                           never waits), and every block is given back in the end
 *   test_ucx_seg killsend   rank 1 sends 1 MiB blobs to rank 0, one after the other, and
 *                           is SIGKILLed half way through copying its 5th into its
 *                           segment: rank 0 got exactly the 4 whole blobs, finds rank 1
 *                           lost, unmaps its segment, and shuts down without hanging
 *   test_ucx_seg killrecv   rank 0 sends 1 MiB blobs to rank 1, which is SIGKILLed half
 *                           way through copying its 5th out of rank 0's segment: rank 0
 *                           finds it lost and gets back the block it held (the segment
 *                           serves the other ranks afterwards)
 * Each kill test also checks that no cask file is left in /dev/shm. The segment is
 * 16 MiB here (CASK_UCX_SEG=16 unless set), messages up to 4 MiB go through it
 * (CASK_UCX_SEG_MAX, so that CMA, where UCX has it, takes none of them), those up to
 * 64 KiB through its rings (CASK_UCX_RING=256: transport/ucx_segring.h, their own tests
 * in test_ucx_ring.c), the larger through blocks. Run under tests/dist/run.sh (the kill
 * tests with --survivors NP-1). */
#include <stdatomic.h>
#include <stdlib.h>

#include "ucx_test.h"

enum { AM_BLOB = 1 };   /* acknowledged with UCXT_AM_ACK */

typedef struct blob_hdr { int32_t src; int32_t k; uint64_t len; } blob_hdr;

static _Atomic long got, bad;

static void setup(ucxt_env *e, int failures)
{
    if (!getenv("CASK_UCX_SEG"))
        setenv("CASK_UCX_SEG", "16", 1);
    setenv("CASK_UCX_SEG_MAX", "4194304", 1);   /* whether CMA is there or not */
    /* rings of 256 KiB a lane: messages up to 64 KiB go through them (tests/dist/
     * test_ucx_ring.c), the blobs from 100000 bytes through blocks */
    if (!getenv("CASK_UCX_RING"))
        setenv("CASK_UCX_RING", "256", 1);
    xport_ucx_config cfg = ucxt_failure_config(e, ucxt_on_lost);
    ucxt_setup(e, failures ? &cfg : NULL);
}

static void fill(unsigned char *p, int r, int k, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        p[i] = dt_pattern(r, (uint64_t)k, i);
}

typedef struct blob_rx { ucxt_env *e; blob_hdr h; unsigned char *buf; } blob_rx;

static void blob_received(void *arg, cask_status st, const char *why)
{
    blob_rx *rx = arg;
    CHECK_OK(st, "receiving blob %d: %s", rx->h.k, why ? why : "");
    unsigned char *want = malloc(rx->h.len ? rx->h.len : 1);
    fill(want, rx->h.src, rx->h.k, rx->h.len);
    if (memcmp(want, rx->buf, rx->h.len)) {
        fprintf(stderr, "[rank %d] blob %d (%llu bytes) from rank %d differs\n", rx->e->rank,
                rx->h.k, (unsigned long long)rx->h.len, rx->h.src);
        atomic_fetch_add(&bad, 1);
    }
    free(want);
    (void)xport_ucx_am_send(rx->e->x, rx->h.src, UCXT_AM_ACK, &rx->h, sizeof rx->h, NULL, 0,
                            NULL, NULL);
    atomic_fetch_add(&got, 1);
    free(rx->buf);
    free(rx);
}

static int stall_at = -1;   /* the blob whose handler holds up the receiver */

static void on_blob(void *arg, xport_ucx_msg *m)
{
    blob_rx *rx = malloc(sizeof *rx);
    rx->e = arg;
    memcpy(&rx->h, m->header, sizeof rx->h);
    if (rx->h.k == stall_at)
        dt_sleep_ms(1000);   /* no block comes back meanwhile: the segment fills */
    CHECK(m->len == rx->h.len, "blob %d: %zu bytes, header says %llu", rx->h.k, m->len,
          (unsigned long long)rx->h.len);
    rx->buf = malloc(m->len ? m->len : 1);
    CHECK_OK(xport_ucx_recv_into(m, rx->buf, blob_received, rx), "recv_into");
}

static void handlers(ucxt_env *e)
{
    CHECK_OK(xport_ucx_set_handler(e->x, AM_BLOB, on_blob, e), "set_handler");
    ucxt_set_handlers(e);
}

/* Sends blob k of len bytes to peer; the buffer is freed once sent. */
static void sent_free(void *arg, cask_status st, const char *why)
{
    (void)st; (void)why;
    free(arg);
}

static void send_blob(ucxt_env *e, int to, int k, uint64_t len)
{
    unsigned char *buf = malloc(len ? len : 1);
    fill(buf, e->rank, k, len);
    blob_hdr h = { e->rank, k, len };
    CHECK_OK(xport_ucx_am_send(e->x, to, AM_BLOB, &h, sizeof h, buf, len, sent_free, buf),
             "blob %d", k);
}

static void test_flow(void)
{
    ucxt_env e;
    setup(&e, 0);
    handlers(&e);
    ucxt_connect(&e);
    ucxt_barrier(&e);
    int to = (e.rank + 1) % e.size;
    const uint64_t sizes[] = { 16384, 65536, 100000, 1 << 20, 3 * (1 << 20) + 13,
                               9u << 20 /* above a 16 MiB segment's largest message */ };
    const int ns = (int)(sizeof sizes / sizeof sizes[0]), rounds = 3, burst = 40;
    int k = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < ns; i++)
            send_blob(&e, to, k++, sizes[i]);
        ucxt_wait_for(&e.acks, k, 120, "blobs acknowledged");
        double t0 = dt_now();   /* the give-backs travel after the acks */
        while (ucxt_stats(&e, to).seg_held) {
            CHECK(dt_now() - t0 < 30, "rank %d still holds %llu bytes of the segment", to,
                  (unsigned long long)ucxt_stats(&e, to).seg_held);
            dt_sleep_ms(2);
        }
    }
    xport_ucx_stats s = ucxt_stats(&e, to);
    CHECK(s.seg_msgs_sent == (uint64_t)(rounds * (ns - 1)),
          "%llu messages through the segment, %d expected (is CASK_UCX_SEG on?)",
          (unsigned long long)s.seg_msgs_sent, rounds * (ns - 1));
    stall_at = k;   /* every rank's burst starts at the same k */
    unsigned char *bb[40];
    blob_hdr bh[40];
    for (int i = 0; i < burst; i++) {   /* filled first: sent back to back */
        bb[i] = malloc(1 << 20);
        fill(bb[i], e.rank, k + i, 1 << 20);
        bh[i] = (blob_hdr){ e.rank, k + i, 1 << 20 };
    }
    for (int i = 0; i < burst; i++)
        CHECK_OK(xport_ucx_am_send(e.x, to, AM_BLOB, &bh[i], sizeof bh[i], bb[i], 1 << 20,
                                   sent_free, bb[i]), "burst blob %d", i);
    k += burst;
    ucxt_wait_for(&e.acks, k, 120, "burst acknowledged");
    ucxt_wait_for(&got, k, 120, "blobs received");
    CHECK(atomic_load(&bad) == 0, "%ld blobs differ", atomic_load(&bad));
    xport_ucx_stats s2 = ucxt_stats(&e, to);
    uint64_t burst_seg = s2.seg_msgs_sent - s.seg_msgs_sent;
    printf("[rank %d] burst of %d x 1 MiB: %llu through the segment, the rest by UCX\n",
           e.rank, burst, (unsigned long long)burst_seg);
    CHECK(burst_seg > 0 && burst_seg < (uint64_t)burst,
          "a burst larger than the segment: %llu of %d through it", 
          (unsigned long long)burst_seg, burst);
    double t0 = dt_now();   /* the give-backs travel after the acks */
    while (ucxt_stats(&e, to).seg_held) {
        CHECK(dt_now() - t0 < 30, "rank %d still holds %llu bytes of the segment", to,
              (unsigned long long)ucxt_stats(&e, to).seg_held);
        dt_sleep_ms(2);
    }
    CHECK(ucxt_stats(&e, (e.rank + e.size - 1) % e.size).seg_msgs_recv > 0 || e.size == 1,
          "nothing read from the previous rank's segment");
    ucxt_teardown(&e);
}

static void test_kill(int recv_side)
{
    ucxt_env e;
    int victim = 1, sender = recv_side ? 0 : 1, receiver = recv_side ? 1 : 0;
    if (dt_launcher_rank() == victim)
        setenv("CASK_UCX_TEST_SEG_KILL", recv_side ? "recv:5" : "send:5", 1);
    setup(&e, 1);
    CHECK(e.size >= 2, "needs 2 ranks or more");
    handlers(&e);
    ucxt_connect(&e);
    ucxt_barrier(&e);
    CHECK(ucxt_stats(&e, e.rank == 0 ? 1 : 0).seg_mapped,
          "the peer's segment is not mapped");
    double t0 = dt_now();
    if (e.rank == sender) {
        for (int k = 0; atomic_load(&e.lost) < 0; k++) {
            CHECK(k < 10, "rank 1 still alive after %d blobs", k);
            send_blob(&e, receiver, k, 1 << 20);
            while (atomic_load(&e.acks) <= k && atomic_load(&e.lost) < 0) {
                CHECK(dt_now() - t0 < 30, "blob %d not acknowledged", k);
                dt_sleep_ms(1);
            }
            if (e.rank == victim)
                CHECK(k < 4, "rank 1 should have died copying its 5th blob");
        }
    } else if (e.rank == victim) {
        for (;;)
            dt_sleep_ms(1000);   /* receives until it dies in its 5th copy */
    }
    ucxt_wait_lost(&e, victim, t0, "rank 1 not found lost");
    if (e.rank == 0 && !recv_side) {
        CHECK(atomic_load(&got) == 4, "%ld whole blobs from rank 1, 4 expected",
              atomic_load(&got));
        CHECK(atomic_load(&bad) == 0, "a blob from rank 1 differs");
    }
    if (e.rank == 0 && recv_side)
        CHECK(ucxt_stats(&e, 1).seg_msgs_sent >= 5,
              "only %llu blobs went through the segment",
              (unsigned long long)ucxt_stats(&e, 1).seg_msgs_sent);
    /* the lost rank's blocks come back to the sender, its segment is unmapped */
    while (ucxt_stats(&e, 1).seg_held || ucxt_stats(&e, 1).seg_mapped) {
        CHECK(dt_now() - t0 < 30, "rank 1 lost, but %llu bytes still lent to it, its "
              "segment %s", (unsigned long long)ucxt_stats(&e, 1).seg_held,
              ucxt_stats(&e, 1).seg_mapped ? "mapped" : "unmapped");
        dt_sleep_ms(5);
    }
    /* the survivors still talk, also through the segments */
    long acked = ucxt_probe_survivors(&e, victim, 1);
    if (e.size > 2 && e.rank == 0) {
        send_blob(&e, 2, 100, 1 << 20);
        ucxt_wait_for(&e.acks, acked + 1, 30, "a blob to rank 2 after the loss");
    }
    ucxt_meet_survivors(&e, victim, 1);
    CHECK(atomic_load(&bad) == 0, "a blob differs");
    ucxt_survive(&e, 1, e.lost_why);
}

int main(int argc, char **argv)
{
    static const dt_case cases[] = {
        { "flow", .run = test_flow },
        { "killsend", .run_arg = test_kill, .arg = 0 },
        { "killrecv", .run_arg = test_kill, .arg = 1 },
    };
    return dt_main(argc, argv, "test_ucx_seg", cases, (int)(sizeof cases / sizeof *cases));
}
