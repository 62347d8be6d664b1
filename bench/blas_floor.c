/* bench/blas_floor.c: the floor of cask_array_matmul on CPUs: one cblas_sgemm of
 * n x n by n x n float32 from the BLAS cask links (OpenBLAS), called directly from the
 * main thread with its default thread count, median of --reps after a warm-up. The
 * core OpenBLAS runs shows as OPENBLAS_VERBOSE=2 prints it; OPENBLAS_CORETYPE picks one.
 *   bench-blas-floor [--n 2048,8192] [--reps 5]
 * One table row and one JSON line per size. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/timing.h"

char *openblas_get_corename(void);
int openblas_get_num_threads(void);

int main(int argc, char **argv)
{
    const char *sizes = "2048,8192";
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) sizes = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--n 2048,8192] [--reps 5]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 100) reps = 5;
    printf("%-8s %-12s %8s %10s %12s\n", "n", "core", "threads", "median_s", "GFLOP/s");
    for (const char *p = sizes; *p;) {
        int n = atoi(p);
        if (n < 1) break;
        size_t nn = (size_t)n * (size_t)n;
        float *a = malloc(nn * 4), *b = malloc(nn * 4), *c = malloc(nn * 4);
        if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
        for (size_t i = 0; i < nn; i++) {
            a[i] = (float)(i % 7) * 0.25f;
            b[i] = (float)(i % 5) * 0.5f;
            c[i] = 0;
        }
        double t[100];
        for (int r = -1; r < reps; r++) {
            double t0 = bench_now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n,
                        0.0f, c, n);
            if (r >= 0) t[r] = bench_now_s() - t0;
        }
        double med = bench_median(t, reps), gf = 2.0 * n * (double)n * n / med / 1e9;
        printf("%-8d %-12s %8d %10.4f %12.1f\n", n, openblas_get_corename(),
               openblas_get_num_threads(), med, gf);
        printf("{\"bench\":\"blas_floor\",\"n\":%d,\"core\":\"%s\",\"threads\":%d,\"reps\":%d,"
               "\"median_s\":%.6f,\"gflops\":%.1f}\n", n, openblas_get_corename(),
               openblas_get_num_threads(), reps, med, gf);
        free(a);
        free(b);
        free(c);
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    return 0;
}
