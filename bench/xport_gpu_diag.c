/* bench/xport_gpu_diag.c: what the fixed cost of a GPU transfer between two processes
 * sharing a GPU is made of (bench-xport --gpu, CASK_BENCH_GPU_TIMELINE=1). See
 * xport_gpu_diag.h. Rank 0 prints; medians over the iterations. */
#include "bench/xport_gpu_diag.h"

#if defined(CASK_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double dnow(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median of v[0..n) in microseconds (v is sorted in place) */
static double med_us(double *v, int n)
{
    if (n <= 0)
        return -1;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2] * 1e6;
}

void xgd_timeline_report(xport_boot *boot, int rank, size_t len, int iters,
                         double ts[TL_N][TL_MAX])
{
    static unsigned round;
    char key[32];
    snprintf(key, sizeof key, "gdiag.ts.%u", round++);
    void **blobs;
    size_t *lens;
    if (xport_boot_allgather(boot, key, ts, sizeof(double) * TL_N * TL_MAX, &blobs, &lens))
        return;
    if (rank == 0) {
        double (*a)[TL_MAX] = ts, (*p)[TL_MAX] = (double (*)[TL_MAX])blobs[1];
        static const char *step[] = { "ping RTS arrives (r0 send -> r1 handler)",
                                      "r1 posts the receive", "r1 GET done (posted -> landed)",
                                      "r0 send completes (r1 landed -> r0 done)",
                                      "r1 sends the pong (landed -> send)",
                                      "pong RTS arrives (r1 send -> r0 handler)",
                                      "r0 GET done (handler -> landed)", "round trip" };
        double *v[8];
        for (int j = 0; j < 8; j++)
            v[j] = malloc(sizeof(double) * (size_t)iters);
        int n = 0;
        for (int k = 1; k < iters; k++, n++) {   /* the first one warms up */
            v[0][n] = p[TL_PING_RTS][k] - a[TL_PING_SEND][k];
            v[1][n] = p[TL_PING_POSTED][k] - p[TL_PING_RTS][k];
            v[2][n] = p[TL_PING_LAND][k] - p[TL_PING_POSTED][k];
            v[3][n] = a[TL_PING_DONE][k] - p[TL_PING_LAND][k];
            v[4][n] = p[TL_PONG_SEND][k] - p[TL_PING_LAND][k];
            v[5][n] = a[TL_PONG_RTS][k] - p[TL_PONG_SEND][k];
            v[6][n] = a[TL_PONG_LAND][k] - a[TL_PONG_RTS][k];
            v[7][n] = a[TL_PONG_LAND][k] - a[TL_PING_SEND][k];
        }
        printf("  timeline of the ucx-cuda ping-pong, %zu bytes, median of %d (us):", len, n);
        for (int j = 0; j < 8; j++) {
            printf("%s %s %.1f", j ? ";" : "", step[j], med_us(v[j], n));
            free(v[j]);
        }
        printf("\n");
    }
    xport_boot_free_blobs(boot, blobs, lens);
}

void xgd_bw_report(xport_boot *boot, int rank, size_t len, long nmsg, double dt,
                   double ts[TL_N][TL_MAX])
{
    static unsigned round;
    char key[32];
    snprintf(key, sizeof key, "gdiag.bw.%u", round++);
    void **blobs;
    size_t *lens;
    if (xport_boot_allgather(boot, key, ts, sizeof(double) * TL_N * TL_MAX, &blobs, &lens))
        return;
    if (rank == 0 && nmsg >= 2 && nmsg <= TL_MAX) {
        double (*p)[TL_MAX] = (double (*)[TL_MAX])blobs[1];
        double t0 = ts[TL_BW_START][0];
        double first = p[TL_BW_LAND][0], last = p[TL_BW_LAND][nmsg - 1];
        printf("  bandwidth loop, %ld x %zu bytes, %.1f us in all: first RTS at %.1f us, "
               "last RTS at %.1f, first landed at %.1f, last at %.1f (%.1f us a message "
               "between them: %.1f GB/s); after the last landed %.1f us\n", nmsg, len,
               dt * 1e6, (p[TL_BW_RTS][0] - t0) * 1e6, (p[TL_BW_RTS][nmsg - 1] - t0) * 1e6,
               (first - t0) * 1e6, (last - t0) * 1e6, (last - first) / (nmsg - 1) * 1e6,
               (double)len * (nmsg - 1) / (last - first) / 1e9, (t0 + dt - last) * 1e6);
    }
    xport_boot_free_blobs(boot, blobs, lens);
}

/* ---- two processes' GPU work taking turns ---- */

typedef struct turns {
    _Atomic long got;
} turns;

static void on_turn(void *arg, xport_ucx_msg *m)
{
    (void)m;
    atomic_fetch_add(&((turns *)arg)->got, 1);
}

static void wait_turn(turns *t, long k)
{
    double t0 = dnow();
    while (atomic_load(&t->got) < k) {
        if (dnow() - t0 > 30) {
            fprintf(stderr, "bench-xport --gpu: turns: stuck\n");
            exit(1);
        }
        sched_yield();
    }
}

static void gpu_op(void *d, cudaStream_t s, long k)
{
    cudaMemsetAsync(d, (int)(k & 0xff), 4, s);
    cudaStreamSynchronize(s);
}

/* mode 0: host messages only; 1: a GPU op before each message. Returns us a turn. */
static double run_turns(xport_boot *boot, xport_ucx *x, int rank, unsigned id, turns *t,
                        int mode, void *d, cudaStream_t s, int n)
{
    atomic_store(&t->got, 0);
    xport_boot_barrier(boot);
    double t0 = dnow();
    for (long k = 0; k < n; k++) {
        if (rank == (int)(k & 1)) {
            wait_turn(t, rank == 0 ? k / 2 : (k + 1) / 2);
            if (mode)
                gpu_op(d, s, k);
            if (xport_ucx_am_send(x, 1 - rank, id, NULL, 0, NULL, 0, NULL, NULL))
                exit(1);
        }
    }
    wait_turn(t, n / 2);   /* n even: each rank hears n / 2 turns */
    double dt = dnow() - t0;
    xport_boot_barrier(boot);
    return dt / n * 1e6;
}

static void CUDART_CB hostfn(void *arg)
{
    *(double *)arg = dnow();
}

void xgd_context_turns(xport_boot *boot, xport_ucx *x, int rank, unsigned id0)
{
    turns t = { 0 };
    xport_ucx_set_handler(x, id0, on_turn, &t);
    void *d = NULL;
    cudaStream_t s, s2;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    if (cudaMalloc(&d, 64) != cudaSuccess)
        exit(1);
    enum { N = 400 };
    run_turns(boot, x, rank, id0, &t, 1, d, s, 20);   /* warm up */
    double host = run_turns(boot, x, rank, id0, &t, 0, d, s, N);
    double gpu = run_turns(boot, x, rank, id0, &t, 1, d, s, N);
    double one = -1, hf = -1, evq = -1;
    if (rank == 0) {   /* the same GPU ops in one process, rank 1 idle */
        double t0 = dnow();
        for (long k = 0; k < N; k++)
            gpu_op(d, (k & 1) ? s2 : s, k);
        one = (dnow() - t0) / N * 1e6;
        double v[100];
        for (int k = 0; k < 100; k++) {
            volatile double fired = 0;
            double a = dnow();
            cudaLaunchHostFunc(s, hostfn, (void *)&fired);
            while (fired == 0)
                sched_yield();
            v[k] = fired - a;
        }
        hf = med_us(v, 100);
        cudaEvent_t e;
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        cudaEventRecord(e, s);
        cudaStreamSynchronize(s);
        t0 = dnow();
        for (int k = 0; k < 1000; k++)
            (void)cudaEventQuery(e);
        evq = (dnow() - t0) / 1000 * 1e6;
        cudaEventDestroy(e);
    }
    xport_boot_barrier(boot);
    if (rank == 0)
        printf("\nturns between the two processes (each: [a 4-byte cudaMemsetAsync + stream "
               "sync,] then a host message to the other), us a turn: host messages only "
               "%.1f; GPU op + message %.1f (so a GPU op after the other process's: %.1f); "
               "the same GPU op in one process alternating two streams: %.1f; "
               "cudaLaunchHostFunc on an idle stream fires after %.1f us; cudaEventQuery "
               "%.2f us a call\n", host, gpu, gpu - host, one, hf, evq);
    cudaFree(d);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
}

#else
void xgd_timeline_report(xport_boot *boot, int rank, size_t len, int iters,
                         double ts[TL_N][TL_MAX])
{
    (void)boot; (void)rank; (void)len; (void)iters; (void)ts;
}
void xgd_bw_report(xport_boot *boot, int rank, size_t len, long nmsg, double dt,
                   double ts[TL_N][TL_MAX])
{
    (void)boot; (void)rank; (void)len; (void)nmsg; (void)dt; (void)ts;
}
void xgd_context_turns(xport_boot *boot, xport_ucx *x, int rank, unsigned id0)
{
    (void)boot; (void)x; (void)rank; (void)id0;
}
#endif
