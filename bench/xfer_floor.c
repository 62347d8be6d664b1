/* bench/xfer_floor.c: the transfer floor of a GPU search, host to host: the time to move
 * its inputs to the GPU and its results back over PCIe, with nothing else, from pinned
 * host memory. Measured three ways, median of --reps after a warm-up: inputs alone (H2D),
 * results alone (D2H), and both at once on two streams (each direction its own copy
 * engine), in pieces of --pieces as a pipelined search would move them. A search that
 * moves the same bytes cannot be faster than the overlapped figure; cask-knn's "compute"
 * is measured the same way (host input to host output).
 *   bench-xfer-floor [--in BYTES] [--out BYTES] [--reps R] [--pieces P]
 * Defaults: cask-knn 2^24 x 2^14 float32 (in: 2^24 x 8 B of observations and 2^14 x 8 B
 * of references; out: 2^24 x (4 + 4) B of index and distance). Prints a table and one JSON
 * line per figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "common/timing.h"

#define CU(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)

typedef struct bufs {
    char *hin, *hout, *din, *dout;
    size_t in, out;
    int pieces;
    cudaStream_t s[2];
} bufs;

/* what: 1 inputs, 2 results, 3 both; returns seconds */
static double once(const bufs *b, int what)
{
    double t0 = bench_now_s();
    for (int p = 0; p < b->pieces; p++) {
        size_t i0 = b->in * p / b->pieces, i1 = b->in * (p + 1) / b->pieces;
        size_t o0 = b->out * p / b->pieces, o1 = b->out * (p + 1) / b->pieces;
        if (what & 1)
            CU(cudaMemcpyAsync(b->din + i0, b->hin + i0, i1 - i0, cudaMemcpyHostToDevice,
                               b->s[0]));
        if (what & 2)
            CU(cudaMemcpyAsync(b->hout + o0, b->dout + o0, o1 - o0, cudaMemcpyDeviceToHost,
                               b->s[1]));
    }
    CU(cudaStreamSynchronize(b->s[0]));
    CU(cudaStreamSynchronize(b->s[1]));
    return bench_now_s() - t0;
}

int main(int argc, char **argv)
{
    bufs b = {0};
    b.in = ((size_t)1 << 24) * 8 + ((size_t)1 << 14) * 8;
    b.out = ((size_t)1 << 24) * 8;
    b.pieces = 8;
    int reps = 9;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--in") && i + 1 < argc) b.in = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) b.out = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pieces") && i + 1 < argc) b.pieces = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--in BYTES] [--out BYTES] [--reps R] [--pieces P]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1 || b.pieces < 1 || !b.in || !b.out) {
        fprintf(stderr, "%s: --reps, --pieces, --in and --out must be positive\n", argv[0]);
        return 2;
    }
    int ngpu = 0;
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
        printf("no GPU: the transfer floor was not measured\n");
        return 77;
    }
    CU(cudaHostAlloc((void **)&b.hin, b.in, cudaHostAllocDefault));
    CU(cudaHostAlloc((void **)&b.hout, b.out, cudaHostAllocDefault));
    CU(cudaMalloc((void **)&b.din, b.in));
    CU(cudaMalloc((void **)&b.dout, b.out));
    memset(b.hin, 1, b.in);
    CU(cudaMemset(b.dout, 2, b.out));
    CU(cudaStreamCreateWithFlags(&b.s[0], cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&b.s[1], cudaStreamNonBlocking));
    const char *names[4] = {"", "inputs H2D", "results D2H", "both, overlapped"};
    double *t = malloc((size_t)reps * sizeof *t);
    printf("transfer floor, pinned host memory, %zu B in, %zu B out, %d pieces, median of %d\n",
           b.in, b.out, b.pieces, reps);
    printf("%-18s %10s %10s\n", "what", "ms", "GB/s");
    for (int what = 1; what <= 3; what++) {
        once(&b, what);   /* warm-up */
        for (int r = 0; r < reps; r++)
            t[r] = once(&b, what);
        double med = bench_median(t, reps);
        size_t bytes = (what & 1 ? b.in : 0) + (what & 2 ? b.out : 0);
        printf("%-18s %10.3f %10.1f\n", names[what], med * 1e3, (double)bytes / med * 1e-9);
        printf("{\"bench\":\"xfer_floor\",\"what\":\"%s\",\"in_bytes\":%zu,\"out_bytes\":%zu,"
               "\"pieces\":%d,\"ms\":%.4f}\n", names[what], b.in, b.out, b.pieces, med * 1e3);
    }
    free(t);
    cudaFreeHost(b.hin);
    cudaFreeHost(b.hout);
    cudaFree(b.din);
    cudaFree(b.dout);
    return 0;
}
