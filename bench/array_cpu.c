/* bench/array_cpu.c: cask's lazy arrays on CPU workers, the cask side of
 * bench/array_cpu.py (which runs NumPy, dask.array and numexpr on the same figures in the
 * same run and prints the comparison). Figures:
 *
 *   chain    the 8-op float32 chain (x*1.5, sin, +0.25, square, *0.5, sqrt, +1, exp),
 *            fused and unfused; "light" replaces sin and exp by neg and abs
 *   sum, mean, std   of 2^N float32 normal numbers (to a scalar)
 *   matmul   float32 n x n by n x n, square tiles
 *   stencil  one 2-D 5-point step out = 0.25 (N + S + W + E) on the interior of an
 *            n x n float32 grid (edges copied), row blocks as tasks that read their
 *            neighbours' blocks (the task API: arrays have no halo operation)
 *
 * Inputs are persisted before timing (they live in host memory as chunks); a time is the
 * wall time of the persist (elementwise, matmul, stencil: the result stays as chunks) or
 * compute (reductions: a scalar), graph building included; median of --reps after one
 * warm-up. Each figure prints one JSON line {"bench":"array_cpu","impl":"cask",...} and
 * a table row. Results are checked (fused == unfused bits; matmul entries against a
 * double dot product; stencil points; sum against a double sum): a wrong result exits 1.
 *
 *   bench-array-cpu [--only chain,light,sum,mean,std,matmul,stencil] [--chain-mb 256]
 *                   [--chunk-mb 16] [--red-log2 28] [--mm 2048,4096] [--mm-chunk 512]
 *                   [--stencil 8192] [--reps 5] [--blas-threads T] [--with-gpus] [--smoke]
 * (--blas-threads: force the BLAS threads of each tile product; default: cask decides.
 * --with-gpus: open the GPUs too (arrays still run on CPU workers): what host memory
 * costs when a GPU is present.)
 * (--smoke: small sizes and 2 reps, a CI check that runs in a few seconds). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"
#include "common/timing.h"

#define TRY(call)                                                                      \
    do {                                                                               \
        cask_status st_ = (call);                                                      \
        if (st_) {                                                                     \
            fprintf(stderr, "bench-array-cpu: %s: %s (%s)\n", #call,                  \
                    cask_status_string(st_), ctx ? cask_array_ctx_error(ctx) : "");     \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static cask_runtime *rt;
static cask_array_ctx *ctx;
static int reps = 5, failed;
static const char *mm_variant = "sgemm";   /* "blasN" with --blas-threads N */

static int wants(const char *only, const char *fig)
{
    if (!only) return 1;
    size_t n = strlen(fig);
    for (const char *p = only; (p = strstr(p, fig)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

static void report(const char *fig, const char *variant, const char *size, double *t,
                   double work, const char *unit, const cask_array_stats *st)
{
    double med = bench_median(t, reps), rate = work / med / 1e9;
    printf("%-8s %-8s %-14s %10.4f %10.4f %10.4f %10.2f %-7s %6zu %10zu %8.1f\n", fig,
           variant, size, med, t[0], t[reps - 1], rate, unit, st->ntasks, st->minor_faults,
           (double)st->host_cached_bytes / (1 << 20));
    printf("{\"bench\":\"array_cpu\",\"impl\":\"cask\",\"fig\":\"%s\",\"variant\":\"%s\","
           "\"size\":\"%s\",\"reps\":%d,\"median_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,"
           "\"rate\":%.3f,\"unit\":\"%s\",\"tasks\":%zu,\"minor_faults\":%zu,"
           "\"host_cached_bytes\":%zu}\n",
           fig, variant, size, reps, med, t[0], t[reps - 1], rate, unit, st->ntasks,
           st->minor_faults, st->host_cached_bytes);
    fflush(stdout);
}

/* ---- chain ---- */

static cask_array *chain8(cask_array *x, int light)
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

static void bench_chain(int64_t mb, int64_t chunk_mb, int light)
{
    int64_t n = mb << 18, chunk = chunk_mb << 18;
    cask_array *x;
    TRY(cask_array_random_uniform(ctx, CASK_FLOAT32, 1, &n, &chunk, 1, 0.0, 1.0, &x));
    TRY(cask_array_persist(ctx, 1, &x));
    double sums[2];
    char size[32];
    snprintf(size, sizeof size, "%lldMiB/%lld", (long long)mb, (long long)chunk_mb);
    for (int fuse = 1; fuse >= 0; fuse--) {
        TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_FUSE, fuse));
        double *t = calloc((size_t)reps, sizeof *t);
        cask_array_stats st;
        for (int r = -1; r < reps; r++) {
            cask_array *y = chain8(x, light);
            double t0 = bench_now_s();
            TRY(cask_array_persist(ctx, 1, &y));
            if (r >= 0) t[r] = bench_now_s() - t0;
            cask_array_last_stats(ctx, &st);
            if (r == reps - 1) {
                cask_array *s;
                TRY(cask_array_reduce(CASK_REDUCE_SUM, y, CASK_AXIS_ALL, &s));
                float sf;
                TRY(cask_array_compute(s, &sf, sizeof sf));
                sums[fuse] = sf;
                cask_array_release(s);
            }
            cask_array_release(y);
        }
        report(light ? "light" : "chain", fuse ? "fused" : "unfused", size, t,
               2.0 * (double)(mb << 20), "GB/s", &st);
        free(t);
    }
    TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_FUSE, 1));
    if (sums[0] != sums[1]) {
        fprintf(stderr, "bench-array-cpu: %s chain: fused sum %.9g != unfused %.9g\n",
                light ? "light" : "math", sums[1], sums[0]);
        failed = 1;
    }
    cask_array_release(x);
}

/* ---- reductions ---- */

static void bench_reduce(int lg, int64_t chunk_mb, const char *only)
{
    int64_t n = (int64_t)1 << lg, chunk = chunk_mb << 18;
    if (chunk > n) chunk = n;
    cask_array *x;
    TRY(cask_array_random_normal(ctx, CASK_FLOAT32, 1, &n, &chunk, 7, 3.0, 2.0, &x));
    TRY(cask_array_persist(ctx, 1, &x));
    static const char *names[3] = {"sum", "mean", "std"};
    char size[32];
    snprintf(size, sizeof size, "2^%d/%lldMiB", lg, (long long)chunk_mb);
    float vals[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) {
        if (!wants(only, names[f])) continue;
        double *t = calloc((size_t)reps, sizeof *t);
        cask_array_stats st;
        for (int r = -1; r < reps; r++) {
            cask_array *y;
            if (f == 0) TRY(cask_array_reduce(CASK_REDUCE_SUM, x, CASK_AXIS_ALL, &y));
            else if (f == 1) TRY(cask_array_reduce(CASK_REDUCE_MEAN, x, CASK_AXIS_ALL, &y));
            else TRY(cask_array_std(x, CASK_AXIS_ALL, 0, &y));
            double t0 = bench_now_s();
            TRY(cask_array_compute(y, &vals[f], sizeof vals[f]));
            if (r >= 0) t[r] = bench_now_s() - t0;
            cask_array_last_stats(ctx, &st);
            cask_array_release(y);
        }
        report(names[f], "-", size, t, 4.0 * (double)n, "GB/s", &st);
        free(t);
    }
    /* the values of N(3, 2): loose, only to catch a broken kernel */
    if ((wants(only, "mean") && fabsf(vals[1] - 3.0f) > 0.05f) ||
        (wants(only, "std") && fabsf(vals[2] - 2.0f) > 0.05f) ||
        (wants(only, "sum") && fabs(vals[0] / (double)n - 3.0) > 0.05)) {
        fprintf(stderr, "bench-array-cpu: reductions gave sum %g mean %g std %g\n", vals[0],
                vals[1], vals[2]);
        failed = 1;
    }
    cask_array_release(x);
}

/* ---- matmul ---- */

static void bench_matmul(int64_t n, int64_t tile)
{
    int64_t shape[2] = {n, n}, ch[2] = {tile < n ? tile : n, tile < n ? tile : n};
    cask_array *a, *b;
    TRY(cask_array_random_uniform(ctx, CASK_FLOAT32, 2, shape, ch, 11, -1.0, 1.0, &a));
    TRY(cask_array_random_uniform(ctx, CASK_FLOAT32, 2, shape, ch, 12, -1.0, 1.0, &b));
    TRY(cask_array_persist(ctx, 1, &a));
    TRY(cask_array_persist(ctx, 1, &b));
    double *t = calloc((size_t)reps, sizeof *t);
    cask_array_stats st;
    cask_array *c = NULL;
    for (int r = -1; r < reps; r++) {
        if (c) cask_array_release(c);
        TRY(cask_array_matmul(a, b, &c));
        double t0 = bench_now_s();
        TRY(cask_array_persist(ctx, 1, &c));
        if (r >= 0) t[r] = bench_now_s() - t0;
        cask_array_last_stats(ctx, &st);
    }
    char size[32];
    snprintf(size, sizeof size, "%lld/%lld", (long long)n, (long long)ch[0]);
    double last = t[reps - 1];
    report("matmul", mm_variant, size, t, 2.0 * (double)n * (double)n * (double)n, "GFLOP/s", &st);
    printf("matmul   detail   %-14s last run: lowering %.4f s, graph run %.4f s, persist %.4f s\n",
           size, st.build_s, st.elapsed_s, last);
    free(t);
    /* check 32 entries against double dot products */
    size_t bytes = (size_t)(n * n) * 4;
    float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
    if (!ha || !hb || !hc) {
        fprintf(stderr, "bench-array-cpu: no memory for the matmul check\n");
        exit(1);
    }
    TRY(cask_array_compute(a, ha, bytes));
    TRY(cask_array_compute(b, hb, bytes));
    TRY(cask_array_compute(c, hc, bytes));
    for (int s = 0; s < 32; s++) {
        int64_t i = (s * 7919) % n, j = (s * 104729 + 13) % n;
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < n; k++) {
            ref += (double)ha[i * n + k] * hb[k * n + j];
            mag += fabs((double)ha[i * n + k] * hb[k * n + j]);
        }
        if (fabs(hc[i * n + j] - ref) > 1e-5 * mag + 1e-6) {
            fprintf(stderr, "bench-array-cpu: matmul C[%lld,%lld] = %.9g, expected %.9g\n",
                    (long long)i, (long long)j, hc[i * n + j], ref);
            failed = 1;
            break;
        }
    }
    free(ha);
    free(hb);
    free(hc);
    cask_array_release(a);
    cask_array_release(b);
    cask_array_release(c);
}

/* ---- stencil: row blocks, each task reads its block and its neighbours' ---- */

typedef struct stencil_args {
    int64_t n, rows, r0;   /* grid width, rows of this block, its first row */
    int has_up, has_dn;
} stencil_args;

static cask_status stencil_cpu(cask_task_ctx *tc)
{
    const stencil_args *a = cask_task_args(tc, NULL);
    int b = 0;
    const float *up = a->has_up ? cask_task_buffer(tc, b++) : NULL;
    const float *u = cask_task_buffer(tc, b++);
    const float *dn = a->has_dn ? cask_task_buffer(tc, b++) : NULL;
    float *o = cask_task_buffer(tc, b);
    int64_t n = a->n, rows = a->rows;
    for (int64_t i = 0; i < rows; i++) {
        const float *c = u + i * n;
        float *w = o + i * n;
        const float *above = i ? c - n : up ? up + (a->rows - 1) * n : NULL;
        const float *below = i + 1 < rows ? c + n : dn;
        if (!above || !below) {   /* first or last row of the grid: copied */
            memcpy(w, c, (size_t)n * 4);
            continue;
        }
        w[0] = c[0];
        w[n - 1] = c[n - 1];
        for (int64_t j = 1; j < n - 1; j++)
            w[j] = 0.25f * ((above[j] + below[j]) + (c[j - 1] + c[j + 1]));
    }
    return CASK_OK;
}

static void bench_stencil(int64_t n, int64_t rows)
{
    if (rows > n) rows = n;
    int64_t nb = (n + rows - 1) / rows;
    cask_kernel *k;
    cask_kernel_desc kd;
    memset(&kd, 0, sizeof kd);
    kd.name = "bench.stencil5";
    kd.cpu = stencil_cpu;
    TRY(cask_kernel_register(rt, &kd, &k));
    /* the grid as row-block arrays of one chunk each, so blocks keep equal row counts */
    float *grid = malloc((size_t)(n * n) * 4);
    if (!grid) exit(1);
    for (int64_t i = 0; i < n * n; i++) grid[i] = (float)((i * 2654435761u) % 1000) * 1e-3f;
    cask_data **in = calloc((size_t)nb, sizeof *in), **out = calloc((size_t)nb, sizeof *out);
    for (int64_t b = 0; b < nb; b++) {
        int64_t r = b * rows + rows <= n ? rows : n - b * rows;
        TRY(cask_data_register(rt, grid + b * rows * n, (size_t)(r * n) * 4, &in[b]));
        TRY(cask_data_create(rt, (size_t)(r * n) * 4, &out[b]));
    }
    double *t = calloc((size_t)reps, sizeof *t);
    for (int r = -1; r < reps; r++) {
        double t0 = bench_now_s();
        cask_graph *g;
        TRY(cask_graph_create(rt, &g));
        for (int64_t b = 0; b < nb; b++) {
            stencil_args a = {n, b * rows + rows <= n ? rows : n - b * rows, b * rows, b > 0,
                              b + 1 < nb};
            cask_access acc[4];
            int na = 0;
            if (a.has_up) acc[na++] = (cask_access){in[b - 1], CASK_READ};
            acc[na++] = (cask_access){in[b], CASK_READ};
            if (a.has_dn) acc[na++] = (cask_access){in[b + 1], CASK_READ};
            acc[na++] = (cask_access){out[b], CASK_WRITE};
            cask_task_desc d;
            memset(&d, 0, sizeof d);
            d.kernel = k;
            d.access = acc;
            d.naccess = na;
            d.field_mask = CASK_TASK_ARGS;
            d.args = &a;
            d.args_size = sizeof a;
            TRY(cask_graph_add_task(g, &d, NULL));
        }
        TRY(cask_graph_submit(g));
        TRY(cask_graph_wait(g));
        if (r >= 0) t[r] = bench_now_s() - t0;
        cask_graph_destroy(g);
    }
    cask_array_stats st;
    memset(&st, 0, sizeof st);
    st.ntasks = (size_t)nb;
    char size[32];
    snprintf(size, sizeof size, "%lld/%lldrows", (long long)n, (long long)rows);
    report("stencil", "task-api", size, t, 2.0 * (double)(n * n) * 4, "GB/s", &st);
    free(t);
    /* check a few interior points */
    for (int s = 0; s < 16; s++) {
        int64_t i = 1 + (s * 7919) % (n - 2), j = 1 + (s * 104729) % (n - 2);
        int64_t b = i / rows;
        float *o;
        TRY(cask_data_acquire(out[b], CASK_READ, (void **)&o));
        float want = 0.25f * ((grid[(i - 1) * n + j] + grid[(i + 1) * n + j]) +
                              (grid[i * n + j - 1] + grid[i * n + j + 1]));
        float got = o[(i - b * rows) * n + j];
        TRY(cask_data_release(out[b]));
        if (got != want) {
            fprintf(stderr, "bench-array-cpu: stencil (%lld,%lld) %g != %g\n", (long long)i,
                    (long long)j, got, want);
            failed = 1;
            break;
        }
    }
    for (int64_t b = 0; b < nb; b++) {
        cask_data_destroy(in[b]);
        cask_data_destroy(out[b]);
    }
    free(in);
    free(out);
    free(grid);
}

int main(int argc, char **argv)
{
    int64_t chain_mb = 256, chunk_mb = 16, mm_chunk = 512, sten = 8192, sten_rows = 512;
    int red_log2 = 28, smoke = 0, blas_threads = 0, with_gpus = 0;
    const char *only = NULL, *mm = "2048";
    static const struct option lo[] = {
        {"only", 1, 0, 'o'}, {"chain-mb", 1, 0, 'c'}, {"chunk-mb", 1, 0, 'k'},
        {"red-log2", 1, 0, 'r'}, {"mm", 1, 0, 'm'}, {"mm-chunk", 1, 0, 't'},
        {"stencil", 1, 0, 's'}, {"stencil-rows", 1, 0, 'w'}, {"reps", 1, 0, 'R'},
        {"smoke", 0, 0, 'S'}, {"blas-threads", 1, 0, 'B'},
        {"with-gpus", 0, 0, 'G'}, {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case 'o': only = optarg; break;
        case 'c': chain_mb = atoll(optarg); break;
        case 'k': chunk_mb = atoll(optarg); break;
        case 'r': red_log2 = atoi(optarg); break;
        case 'm': mm = optarg; break;
        case 't': mm_chunk = atoll(optarg); break;
        case 's': sten = atoll(optarg); break;
        case 'w': sten_rows = atoll(optarg); break;
        case 'R': reps = atoi(optarg); break;
        case 'S': smoke = 1; break;
        case 'B': blas_threads = atoi(optarg); break;
        case 'G': with_gpus = 1; break;
        default:
            fprintf(stderr, "usage: %s [--only chain,light,sum,mean,std,matmul,stencil] "
                            "[--chain-mb M] [--chunk-mb M] [--red-log2 N] [--mm N,N..] "
                            "[--mm-chunk T] [--stencil N] [--stencil-rows R] [--reps R] "
                            "[--smoke] [--blas-threads T] [--with-gpus]\n", argv[0]);
            return 2;
        }
    }
    if (smoke) {
        chain_mb = 8, chunk_mb = 1, red_log2 = 20, mm = "256", mm_chunk = 128, sten = 512;
        sten_rows = 64, reps = 2;
    }
    if (reps < 1) reps = 1;
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NGPU;
    cfg.ngpu = with_gpus ? -1 : 0;   /* --with-gpus: GPUs open, arrays still on CPUs */
    ctx = NULL;
    TRY(cask_init(&cfg, &rt));
    cask_runtime_info info;
    TRY(cask_runtime_query(rt, &info));
    TRY(cask_array_ctx_create(rt, &ctx));
    TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_CPU));
    TRY(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_BLAS_THREADS, blas_threads));
    mm_variant = blas_threads ? "blas-t" : "sgemm";
    if (blas_threads) {
        static char v[16];
        snprintf(v, sizeof v, "blas%d", blas_threads);
        mm_variant = v;
    }
    printf("array_cpu: cask on %d CPU workers (%d cores, %d GPUs open), medians of %d\n",
           info.ncpu_workers, info.ncores, info.ngpus, reps);
    printf("%-8s %-8s %-14s %10s %10s %10s %10s %-7s %6s %10s %8s\n", "figure", "variant",
           "size", "median_s", "min_s", "max_s", "rate", "unit", "tasks", "minflt",
           "cacheMiB");
    if (wants(only, "chain")) bench_chain(chain_mb, chunk_mb, 0);
    if (wants(only, "light")) bench_chain(chain_mb, chunk_mb, 1);
    if (wants(only, "sum") || wants(only, "mean") || wants(only, "std"))
        bench_reduce(red_log2, chunk_mb, only);
    if (wants(only, "matmul"))
        for (const char *p = mm; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
            bench_matmul(atoll(p), mm_chunk);
    if (wants(only, "stencil")) bench_stencil(sten, sten_rows);
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    return failed;
}
