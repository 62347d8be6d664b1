/* tests/dist/test_nccl.c: GPU chunks between processes through the NCCL transport
 * (one GPU per rank, chosen by the launcher's local rank).
 *
 *   test_nccl ring [MB]   each rank sends MB MiB (default 64) of its GPU memory to the
 *                         next rank and receives the previous one's, in one group, four
 *                         times over, plus a group of 16 small chunks; contents checked
 *   test_nccl kill        rank 1 dies in the middle of a stream of transfers; the
 *                         survivors learn it from UCX, abort the communicator and leave
 *                         their waits with an error instead of hanging
 * Run under tests/dist/run.sh --need-gpus NP (kill with --survivors NP-1). */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "cask/status.h"
#include "transport/bootstrap.h"
#include "transport/nccl.h"
#ifdef CASK_HAVE_UCX
#include "transport/ucx.h"
#endif
#include "dist_test.h"

#define CUDA_OK(call)                                                                 \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));            \
    } while (0)

static xport_boot *boot;
static xport_nccl *comm;

static void setup(void)
{
    char err[512];
    CHECK_OK(xport_boot_init(NULL, &boot, err, sizeof err), "boot: %s", err);
    dt_rank_ = xport_boot_rank(boot);
    int ndev = 0;
    CUDA_OK(cudaGetDeviceCount(&ndev));
    int dev = xport_boot_local_rank(boot) % ndev;
    CHECK_OK(xport_nccl_create(boot, dev, 60000, &comm, err, sizeof err), "nccl: %s", err);
}

static void fill(unsigned char *dev, size_t len, int r, uint64_t k)
{
    unsigned char *h = malloc(len);
    for (size_t i = 0; i < len; i++)
        h[i] = dt_pattern(r, k, i);
    CUDA_OK(cudaMemcpy(dev, h, len, cudaMemcpyHostToDevice));
    free(h);
}

static void check(const unsigned char *dev, size_t len, int r, uint64_t k)
{
    unsigned char *h = malloc(len);
    CUDA_OK(cudaMemcpy(h, dev, len, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < len; i++)
        CHECK(h[i] == dt_pattern(r, k, i), "chunk %llu from rank %d: byte %zu",
              (unsigned long long)k, r, i);
    free(h);
}

static void test_ring(int mb)
{
    setup();
    int rank = xport_boot_rank(boot), size = xport_boot_size(boot);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t len = (size_t)mb << 20;
    unsigned char *sbuf, *rbuf;
    CUDA_OK(cudaMalloc((void **)&sbuf, len));
    CUDA_OK(cudaMalloc((void **)&rbuf, len));
    fill(sbuf, len, rank, 1);
    double best = 1e9;
    for (int round = 0; round < 4; round++) {
        CUDA_OK(cudaMemset(rbuf, 0, len));
        CUDA_OK(cudaDeviceSynchronize());
        xport_nccl_op ops[2] = { { next, 0, sbuf, len }, { prev, 1, rbuf, len } };
        xport_nccl_xfer *t;
        double t0 = dt_now();
        CHECK_OK(xport_nccl_start(comm, ops, 2, NULL, &t), "start");
        cask_status st = xport_nccl_wait(t, 60000);
        double dt = dt_now() - t0;
        char err[512];
        xport_nccl_error(comm, err, sizeof err);
        CHECK_OK(st, "wait: %s", err);
        xport_nccl_xfer_free(t);
        if (dt < best) best = dt;
        check(rbuf, len, prev, 1);
    }
    printf("[rank %d] %d MiB to rank %d: best %.3f ms, %.1f GB/s\n", rank, mb, next,
           best * 1e3, (double)len / best / 1e9);
    /* 16 small chunks of different sizes, to both neighbours (one if they are the
     * same rank), in one group */
    enum { K = 16 };
    xport_nccl_op ops[4 * K];
    unsigned char *bufs[4 * K];
    int nops = 0, ndir = next == prev ? 1 : 2;
    int peers[2] = { next, prev };
    for (int k = 0; k < K; k++) {
        size_t n = 1000u * (size_t)(k + 1) + 3;
        for (int d = 0; d < ndir; d++) {
            CUDA_OK(cudaMalloc((void **)&bufs[nops], n));
            fill(bufs[nops], n, rank, 100 + (uint64_t)(k * 2 + d));
            ops[nops] = (xport_nccl_op){ peers[d], 0, bufs[nops], n };
            nops++;
            CUDA_OK(cudaMalloc((void **)&bufs[nops], n));
            ops[nops] = (xport_nccl_op){ peers[d], 1, bufs[nops], n };
            nops++;
        }
    }
    xport_nccl_xfer *t;
    CHECK_OK(xport_nccl_start(comm, ops, nops, NULL, &t), "start");
    CHECK_OK(xport_nccl_wait(t, 60000), "wait");
    xport_nccl_xfer_free(t);
    for (int k = 0, i = 0; k < K; k++) {
        size_t n = 1000u * (size_t)(k + 1) + 3;
        for (int d = 0; d < ndir; d++, i += 2) {
            /* the chunk from peers[d] is the one it sent towards us: its direction
             * 1-d in a ring of 3 or more, the same d between two ranks */
            int their_d = ndir == 2 ? 1 - d : d;
            check(bufs[i + 1], n, peers[d], 100 + (uint64_t)(k * 2 + their_d));
        }
    }
    for (int i = 0; i < nops; i++)
        cudaFree(bufs[i]);
    cudaFree(sbuf);
    cudaFree(rbuf);
    CHECK_OK(xport_nccl_destroy(comm), "destroy");
    CHECK_OK(xport_boot_barrier(boot), "barrier");
    xport_boot_finalize(boot);
}

#ifdef CASK_HAVE_UCX
static _Atomic int lost = -1;

static void on_lost(void *arg, int peer, cask_status st, const char *why)
{
    (void)arg; (void)st;
    atomic_store(&lost, peer);
    xport_nccl_abort(comm, why);   /* what a dead peer means for NCCL: stop waiting */
}

static void test_kill(void)
{
    char err[512];
    CHECK_OK(xport_boot_init(NULL, &boot, err, sizeof err), "boot: %s", err);
    dt_rank_ = xport_boot_rank(boot);
    int rank = xport_boot_rank(boot), size = xport_boot_size(boot);
    xport_ucx *x;
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_HEARTBEAT_MS | XPORT_UCX_TIMEOUT_MS |
                                           XPORT_UCX_ON_PEER,
                             .heartbeat_ms = 200, .peer_timeout_ms = 5000,
                             .on_peer_failure = on_lost };
    CHECK_OK(xport_ucx_create(boot, &cfg, &x, err, sizeof err), "ucx: %s", err);
    CHECK_OK(xport_ucx_connect(x), "connect");
    int ndev = 0;
    CUDA_OK(cudaGetDeviceCount(&ndev));
    CHECK_OK(xport_nccl_create(boot, xport_boot_local_rank(boot) % ndev, 60000, &comm, err,
                               sizeof err), "nccl: %s", err);
    size_t len = 8u << 20;
    unsigned char *sbuf, *rbuf;
    CUDA_OK(cudaMalloc((void **)&sbuf, len));
    CUDA_OK(cudaMalloc((void **)&rbuf, len));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double t0 = dt_now();
    cask_status st = CASK_OK;
    for (int round = 0; st == CASK_OK; round++) {
        CHECK(dt_now() - t0 < 60, "still running after 60 s");
        if (rank == 1 && round == 20)
            raise(SIGKILL);
        xport_nccl_op ops[2] = { { next, 0, sbuf, len }, { prev, 1, rbuf, len } };
        xport_nccl_xfer *t;
        st = xport_nccl_start(comm, ops, 2, NULL, &t);
        if (st == CASK_OK) {
            st = xport_nccl_wait(t, 20000);
            xport_nccl_xfer_free(t);
        }
    }
    xport_nccl_error(comm, err, sizeof err);
    printf("[rank %d] transfers stopped after %.2f s: %s: %s\n", rank, dt_now() - t0,
           cask_status_string(st), err);
    CHECK(st == CASK_ERR_PEER || st == CASK_ERR_STATE || st == CASK_ERR_NCCL,
          "status %s", cask_status_string(st));
    double t1 = dt_now();
    while (atomic_load(&lost) < 0) {
        CHECK(dt_now() - t1 < 20, "UCX never reported the lost rank");
        dt_sleep_ms(10);
    }
    CHECK(atomic_load(&lost) == 1, "lost rank %d", atomic_load(&lost));
    xport_nccl_destroy(comm);
    xport_ucx_destroy(x, NULL, 0);
    dt_report_survivor(rank);
    printf("[rank %d] survived\n", rank);
    fflush(stdout);
    _exit(0);
}
#endif

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "ring";
    if (!strcmp(what, "ring"))
        test_ring(argc > 2 ? atoi(argv[2]) : 64);
#ifdef CASK_HAVE_UCX
    else if (!strcmp(what, "kill"))
        test_kill();
#endif
    else {
        fprintf(stderr, "usage: test_nccl ring [MB] | kill\n");
        return 2;
    }
    if (dt_rank_ == 0)
        printf("test_nccl %s: ok\n", what);
    return 0;
}
