/* bench/array_fusion.c: what fusing an elementwise chain buys. An 8-operation chain
 * (x*1.5, sin, +0.25, square, *0.5, sqrt, +1, exp) over a float32 array of 1 GiB held
 * on one GPU, computed with fusion (one task per chunk, one read and one write of the
 * data) and without (one task per operation and chunk: 8 reads and 8 writes). Times are
 * the wall time of cask_array_persist (graph building included), median of --reps runs
 * after a warm-up; both results must be identical. Prints a table and one JSON line per
 * mode ({"bench":"array_fusion",...}).
 *
 *   bench-array-fusion [--bytes B] [--chunk-mb M] [--reps R] [--mode fused|unfused|both]
 *                      [--cpu] [--gpus G] [--chain math|light] [--no-jit]
 * (--chain light replaces sin and exp by neg and abs: no library math, memory-bound).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"
#include "common/timing.h"

#define TRY(call)                                                                      \
    do {                                                                               \
        cask_status st_ = (call);                                                      \
        if (st_) {                                                                     \
            fprintf(stderr, "bench-array-fusion: %s: %s (%s)\n", #call,                \
                    cask_status_string(st_), cask_array_ctx_error(ctx));               \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static cask_array_ctx *ctx;

static int light;   /* --chain light: no library math functions */
static int nojit;   /* --no-jit: interpret the fused program on the GPU */

static cask_array *chain8(cask_array *x)
{
    cask_array *y = cask_array_retain(x), *t;
    const cask_binary_op bops[4] = {CASK_MUL, CASK_ADD, CASK_MUL, CASK_ADD};
    const double k[4] = {1.5, 0.25, 0.5, 1.0};
    cask_unary_op uops[4] = {CASK_SIN, CASK_SQUARE, CASK_SQRT, CASK_EXP};
    if (light) {
        uops[0] = CASK_NEG;
        uops[3] = CASK_ABS;
    }
    for (int i = 0; i < 4; i++) {
        TRY(cask_array_binary_scalar(bops[i], y, k[i], 0, &t));
        cask_array_release(y);
        TRY(cask_array_unary(uops[i], t, &y));
        cask_array_release(t);
    }
    return y;
}

int main(int argc, char **argv)
{
    int64_t bytes = (int64_t)1 << 30, chunk_mb = 64;
    int reps = 5, cpu = 0, gpus = 1;
    const char *mode = "both";
    static const struct option lo[] = {
        {"bytes", 1, 0, 'b'}, {"chunk-mb", 1, 0, 'c'}, {"reps", 1, 0, 'r'}, {"mode", 1, 0, 'm'},
        {"cpu", 0, 0, 'C'}, {"gpus", 1, 0, 'g'}, {"chain", 1, 0, 'L'}, {"no-jit", 0, 0, 'J'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 'b': bytes = atoll(optarg); break;
        case 'c': chunk_mb = atoll(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'm': mode = optarg; break;
        case 'C': cpu = 1; break;
        case 'g': gpus = atoi(optarg); break;
        case 'L': light = !strcmp(optarg, "light"); break;
        case 'J': nojit = 1; break;
        default:
            fprintf(stderr, "usage: %s [--bytes B] [--chunk-mb M] [--reps R] "
                            "[--mode fused|unfused|both] [--cpu] [--gpus G] [--chain math|light] "
                            "[--no-jit]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NGPU;
    cfg.ngpu = cpu ? 0 : gpus;
    cask_runtime *rt;
    if (cask_init(&cfg, &rt)) {
        fprintf(stderr, "bench-array-fusion: no runtime (need %d GPU(s), or --cpu)\n", gpus);
        return 1;
    }
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    cask_array_ctx_create(rt, &ctx);
    TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, cpu ? CASK_WHERE_CPU : CASK_WHERE_GPU));
    TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_JIT, !nojit));
    int64_t n = bytes / 4, chunk = chunk_mb * (1 << 20) / 4;
    cask_array *x;
    TRY(cask_array_random_uniform(ctx, CASK_FLOAT32, 1, &n, &chunk, 1, 0.0, 1.0, &x));
    TRY(cask_array_persist(ctx, 1, &x));   /* the input lives where the chain runs */

    const char *modes[2] = {"fused", "unfused"};
    double med[2] = {0, 0}, sums[2] = {0, 0};
    size_t tasks[2] = {0, 0};
    int ran[2] = {!strcmp(mode, "both") || !strcmp(mode, "fused"),
                  !strcmp(mode, "both") || !strcmp(mode, "unfused")};
    const char *where = cpu ? "cpu" : info.simulated_gpus ? "simgpu" : "gpu";
    printf("array_fusion: 8-op float32 %s chain over %.2f GiB, %lld chunks of %lld MiB, on %s%s\n",
           light ? "light" : "math", (double)bytes / (1 << 30), (long long)((n + chunk - 1) / chunk), (long long)chunk_mb,
           cpu ? "CPU workers" : "1 GPU", cpu ? "" : nojit ? " (interpreted)" : " (compiled programs)");
    printf("%-8s %10s %10s %10s %12s %8s\n", "mode", "median_s", "min_s", "max_s", "GB/s(2x)", "tasks");
    for (int m = 0; m < 2; m++) {
        if (!ran[m]) continue;
        TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_FUSE, m == 0));
        double *t = calloc((size_t)reps, sizeof *t);
        for (int r = -1; r < reps; r++) {
            cask_array *y = chain8(x);
            double t0 = bench_now_s();
            TRY(cask_array_persist(ctx, 1, &y));
            double el = bench_now_s() - t0;
            cask_array_stats st;
            cask_array_last_stats(ctx, &st);
            tasks[m] = st.ntasks;
            if (r >= 0) t[r] = el;
            if (r == reps - 1) {   /* checksum: the sum (bitwise reproducible) */
                cask_array *s;
                TRY(cask_array_reduce(CASK_REDUCE_SUM, y, CASK_AXIS_ALL, &s));
                float sf;
                TRY(cask_array_compute(s, &sf, sizeof sf));
                sums[m] = sf;
                cask_array_release(s);
            }
            cask_array_release(y);
        }
        med[m] = bench_median(t, reps);   /* sorts t */
        double gbs = 2.0 * (double)bytes / med[m] / 1e9;
        printf("%-8s %10.4f %10.4f %10.4f %12.1f %8zu\n", modes[m], med[m], t[0], t[reps - 1], gbs,
               tasks[m]);
        printf("{\"bench\":\"array_fusion\",\"mode\":\"%s\",\"chain\":\"%s\",\"jit\":%d,\"where\":\"%s\",\"bytes\":%lld,"
               "\"chunk_bytes\":%lld,\"ops\":8,\"reps\":%d,\"median_s\":%.6f,\"min_s\":%.6f,"
               "\"max_s\":%.6f,\"gbps_2x\":%.2f,\"tasks\":%zu,\"checksum\":%.9g}\n",
               modes[m], light ? "light" : "math", !nojit && !cpu, where, (long long)bytes, (long long)chunk * 4, reps, med[m], t[0],
               t[reps - 1], gbs, tasks[m], sums[m]);
        free(t);
    }
    int rc = 0;
    if (ran[0] && ran[1]) {
        printf("speedup fused/unfused: %.2fx; checksums %s\n", med[1] / med[0],
               sums[0] == sums[1] ? "identical" : "DIFFER");
        rc = sums[0] != sums[1];
    }
    cask_array_release(x);
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    return rc;
}
