/* bench/xport_cpu.c: bench-xport --cpu: CPU time per message of a one-way stream of
 * host data between two processes through cask's UCX transport (ring, block, CMA or TCP,
 * as the settings choose), with both progress threads sleeping between messages (spin
 * 0). Rank 0 sends n messages of s bytes (at most 256 not yet done), rank 1 receives each
 * into its buffer (xport_ucx_recv_into) and acknowledges the stream's end; each measures
 * getrusage(RUSAGE_SELF) over the stream and its waits are naps, not spins. The figure
 * is the sum of both ranks' CPU time over n, the median of the repetitions. */
#include "bench/xport_bench.h"
#include "bench/common/timing.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cask/status.h"
#include "transport/ucx.h"

enum { AM_STREAM = 11, AM_END = 12, REPS = 5 };

static _Atomic long received, ended, sent;
static unsigned char *rbuf;

static void nap(void)
{
    struct timespec ts = { 0, 100000L };
    nanosleep(&ts, NULL);
}

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "bench-xport --cpu: %s: %s\n", what, why ? why : "");
    exit(1);
}

static void landed(void *arg, cask_status st, const char *why)
{
    (void)arg;
    if (st)
        fail("receive", why);
    atomic_fetch_add(&received, 1);
}

static void on_stream(void *arg, xport_ucx_msg *m)
{
    (void)arg;
    if (xport_ucx_recv_into(m, rbuf, landed, NULL))
        fail("recv_into", "refused");
}

static void on_end(void *arg, xport_ucx_msg *m)
{
    (void)arg; (void)m;
    atomic_fetch_add(&ended, 1);
}

static void done(void *arg, cask_status st, const char *why)
{
    (void)arg;
    if (st)
        fail("send", why);
    atomic_fetch_add(&sent, 1);
}

void xport_cpu_bench(xport_boot *boot, int quick, xport_emit_fn emit)
{
    static const size_t sizes[] = { 8192, 65536, 256 << 10, 1 << 20 };
    enum { NS = 4 };
    int rank = xport_boot_rank(boot), reps = quick ? 3 : REPS;
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_SPIN_US, .spin_us = 0 };
    xport_ucx *x;
    char err[512];
    if (xport_ucx_create(boot, &cfg, &x, err, sizeof err))
        fail("xport_ucx_create", err);
    xport_ucx_set_handler(x, AM_STREAM, on_stream, NULL);
    xport_ucx_set_handler(x, AM_END, on_end, NULL);
    if (xport_ucx_connect(x))
        fail("xport_ucx_connect", "");
    unsigned char *sbuf = malloc(1 << 20);
    rbuf = malloc(1 << 20);
    if (!sbuf || !rbuf)
        fail("malloc", "out of memory");
    memset(sbuf, 7, 1 << 20);
    if (rank == 0)
        printf("\nUCX host stream, rank 0 -> rank 1, progress threads asleep between "
               "messages: CPU microseconds a message (both ranks, every thread), wall\n"
               "%10s %14s %14s %14s %12s\n", "bytes", "cpu us/msg", "rank 0 us", "rank 1 us",
               "wall us/msg");
    long want = 0;
    for (int i = 0; i < NS; i++) {
        size_t s = sizes[i];
        long n = s >= (1u << 20) ? 300 : s >= (256u << 10) ? 1000 : 3000;
        double cpu[REPS], c0v[REPS], c1v[REPS], wall[REPS];
        for (int r = 0; r < reps; r++) {
            xport_boot_barrier(boot);
            double c0 = bench_cpu_s(), t0 = bench_now_s();
            if (rank == 0) {
                long e0 = atomic_load(&ended);
                atomic_store(&sent, 0);
                for (long k = 0; k < n; k++) {
                    if (xport_ucx_am_send(x, 1, AM_STREAM, &k, sizeof k, sbuf, s, done, NULL))
                        fail("xport_ucx_am_send", "refused");
                    while (k - atomic_load(&sent) > 256)
                        nap();
                }
                while (atomic_load(&ended) <= e0)
                    nap();
            } else if (rank == 1) {
                want += n;
                while (atomic_load(&received) < want)
                    nap();
                xport_ucx_am_send(x, 0, AM_END, NULL, 0, NULL, 0, NULL, NULL);
            }
            double mine[2] = { bench_cpu_s() - c0, bench_now_s() - t0 };
            void **blobs;
            size_t *lens;
            if (xport_boot_allgather(boot, "bench.cpu", mine, sizeof mine, &blobs, &lens))
                fail("allgather", xport_boot_error(boot));
            double other[2];
            memcpy(other, blobs[1], sizeof other);
            xport_boot_free_blobs(boot, blobs, lens);
            c0v[r] = mine[0] / (double)n * 1e6;
            c1v[r] = other[0] / (double)n * 1e6;
            cpu[r] = c0v[r] + c1v[r];
            wall[r] = mine[1] / (double)n * 1e6;
        }
        if (rank == 0) {
            double c = bench_median(cpu, reps), w = bench_median(wall, reps);
            printf("%10zu %14.2f %14.2f %14.2f %12.2f\n", s, c, bench_median(c0v, reps),
                   bench_median(c1v, reps), w);
            emit("cpu_us_per_msg", "cask", s, c);
            emit("wall_us_per_msg", "cask", s, w);
        }
    }
    xport_boot_barrier(boot);
    if (xport_ucx_destroy(x, err, sizeof err))
        fail("xport_ucx_destroy", err);
    free(sbuf);
    free(rbuf);
}
