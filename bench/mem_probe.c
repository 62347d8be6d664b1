/* bench/mem_probe.c: bench-mem-probe [ITERS]: the host's memory, as a graph build meets
 * it: load latency (a pointer chase over 256 MB in random order, one load per 64-byte
 * line) and the cost of writing a line of a reused 128 MB buffer (one store per line, as
 * a build writes recycled arena blocks). One line per iteration. Run beside bench-sched
 * --mode bcd on the same core, it tells whether a slow build met a slow host: the GPU
 * machine's builds fall near one of two speeds, with these figures (RESULTS 10.7). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timing.h"

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 1;
    if (iters < 1) {
        fprintf(stderr, "usage: bench-mem-probe [ITERS >= 1]\n");
        return 2;
    }
    size_t n = ((size_t)256 << 20) / 64;
    uint64_t *a = aligned_alloc(64, n * 64);
    uint32_t *perm = malloc(n * sizeof *perm);
    size_t wn = (size_t)128 << 20;
    char *w = aligned_alloc(64, wn);
    if (!a || !perm || !w) {
        fprintf(stderr, "bench-mem-probe: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    uint64_t s = 88172645463325252ull;   /* xorshift: one cycle through all lines */
    for (size_t i = n - 1; i > 0; i--) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        size_t j = s % (i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        a[(size_t)perm[i] * 8] = (uint64_t)perm[(i + 1) % n] * 8;
    free(perm);
    memset(w, 1, wn);
    for (int it = 0; it < iters; it++) {
        uint64_t p = 0;
        long steps = 2000000;
        double t0 = bench_now_s();
        for (long k = 0; k < steps; k++)
            p = a[p];
        double lat = (bench_now_s() - t0) / (double)steps * 1e9;
        double t1 = bench_now_s();
        for (int r = 0; r < 2; r++)
            for (size_t i = 0; i < wn; i += 64)
                ((volatile uint64_t *)(w + i))[0] = i + (size_t)r;
        double line = (bench_now_s() - t1) / (2.0 * (double)(wn / 64)) * 1e9;
        printf("load_ns %.1f line_write_ns %.2f (%u)\n", lat, line, (unsigned)(p & 1));
        printf("{\"bench\":\"mem_probe\",\"load_ns\":%.2f,\"line_write_ns\":%.3f}\n",
               lat, line);
        fflush(stdout);
    }
    free(a);
    free(w);
    return 0;
}
