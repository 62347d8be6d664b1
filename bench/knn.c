/* bench/knn.c: the exact haversine 1-NN at full scale, in one run on the same data:
 *   cask      cask-knn's own graph (apps/knn/knn_graph.c) through the scheduler;
 *   baseline  bench/knn_baseline.c: pthreads, one thread per GPU, static equal split,
 *             the same kernels, streams and pinned memory;
 * and, with two GPUs or more, what dynamic scheduling buys:
 *   uneven    the baseline with a static split that is off (--uneven 0.75,0.25) vs cask;
 *   hog       a competing load on the last GPU (a spinning kernel on a side stream)
 *             during both cask and the baseline.
 * Each time is host input to host output, median of --reps runs after a warm-up; the
 * inputs are moved to the GPUs again in every run. Results of cask and the baseline are
 * compared exactly, and a float64 brute force checks --check K sampled observations.
 * --case even|uneven|hog runs one case alone (hog: then the results under the load are
 * compared too). Prints a table and one JSON line per measurement. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include "cask/cask.h"
#include "common/timing.h"
#include "knn_baseline.h"
#include "knn_graph.h"
#include "generate.h"
#include "check.h"
#include "common/gpu_kernels.h"

#define CS(call) do { cask_status s_ = (call); if (s_ != CASK_OK) { \
    fprintf(stderr, "%s: %s %s\n", #call, cask_status_string(s_), err); exit(1); } } while (0)

/* A competing load: a side thread keeps a spinning kernel running on one GPU. */
typedef struct hog {
    int gpu;
    atomic_int stop;
    pthread_t thread;
} hog;

static void *hog_main(void *arg)
{
    hog *h = arg;
    cudaSetDevice(h->gpu);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, h->gpu);
    while (!atomic_load(&h->stop)) {
        test_gpu_spin(2000000, 2 * sms, s);   /* ~1 ms of every SM, over and over */
        cudaStreamSynchronize(s);
    }
    cudaStreamDestroy(s);
    return NULL;
}

static void hog_start(hog *h, int gpu)
{
    h->gpu = gpu;
    atomic_store(&h->stop, 0);
    pthread_create(&h->thread, NULL, hog_main, h);
}

static void hog_stop(hog *h)
{
    atomic_store(&h->stop, 1);
    pthread_join(h->thread, NULL);
}

typedef struct ctx {
    int64_t n, m;
    int gpus, reps;
    knn_points obs, ref;
    int32_t *idx_cask, *idx_base;
    float *dist_cask, *dist_base;
    cask_runtime *rt;
    cask_knn_kernels kk;
    knn_job *job;
    double cask_base_s;
    double base_gpu_s[KNN_BASELINE_MAX_GPUS];   /* per GPU, the median of when its thread
                                                   finished, in the last time_base call */
} ctx;

static double time_cask(ctx *c)
{
    char err[512] = "";
    double *t = malloc(sizeof(double) * (size_t)c->reps);
    CS(knn_job_make_cold(c->job, err, sizeof err));
    CS(knn_job_run(c->job, 0, err, sizeof err));                 /* warm-up */
    for (int r = 0; r < c->reps; r++) {
        CS(knn_job_make_cold(c->job, err, sizeof err));
        double t0 = bench_now_s();
        CS(knn_job_run(c->job, 0, err, sizeof err));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t, c->reps);
    free(t);
    return m;
}

static double time_base(ctx *c, const double *fraction)
{
    knn_baseline_cfg cfg = { .n = c->n, .m = c->m, .obs_in = {0, 0}, .ref_in = {0, 0}, .scale = CASK_EARTH_RADIUS_KM,
                             .ngpus = c->gpus, .fraction = fraction, .host_pinned = 1 };
    knn_baseline_result res;
    double *t = malloc(sizeof(double) * (size_t)c->reps);
    double *tg = malloc(sizeof(double) * (size_t)c->reps * (size_t)c->gpus);
    if (knn_baseline_run(&cfg, c->obs.data, c->ref.data, c->idx_base, c->dist_base, &res)) {
        fprintf(stderr, "baseline failed\n");
        exit(1);
    }
    for (int r = 0; r < c->reps; r++) {
        if (knn_baseline_run(&cfg, c->obs.data, c->ref.data, c->idx_base, c->dist_base, &res)) {
            fprintf(stderr, "baseline failed\n");
            exit(1);
        }
        t[r] = res.seconds;
        for (int g = 0; g < c->gpus; g++)
            tg[(size_t)g * (size_t)c->reps + (size_t)r] = res.gpu_seconds[g];
    }
    double m = bench_median(t, c->reps);
    for (int g = 0; g < c->gpus; g++)
        c->base_gpu_s[g] = bench_median(tg + (size_t)g * (size_t)c->reps, c->reps);
    free(tg);
    free(t);
    return m;
}

/* The static split's GPUs each did 1/gpus of the work in c->base_gpu_s[g]: a split in
 * proportion to those rates, perfectly divisible, would take 1 / sum(rate) -- the floor of
 * any balancing at the speeds the load leaves the baseline (as a fraction of its time). */
static void balance_floor(ctx *c, const char *cas, double base)
{
    double rate = 0;
    printf("# %s: baseline GPU times", cas);
    for (int g = 0; g < c->gpus; g++) {
        printf(" %.2f", c->base_gpu_s[g] * 1e3);
        rate += 1.0 / ((double)c->gpus * c->base_gpu_s[g]);
    }
    double ratio = 1.0 / rate / base;
    printf(" ms; a split by those rates, perfectly divisible: %.3f of the static split's time\n",
           ratio);
    printf("{\"bench\":\"knn\",\"case\":\"%s\",\"impl\":\"floor\",\"ratio_to_baseline\":%.4f}\n", cas,
           ratio);
}

static void row(ctx *c, const char *cas, const char *impl, double s, double base)
{
    double pairs = (double)c->n * (double)c->m;
    printf("%-9s %-9s %10lld %7lld %4d %10.2f %12.4g %10s\n", cas, impl, (long long)c->n,
           (long long)c->m, c->gpus, s * 1e3, pairs / s, "");
    if (base > 0)
        printf("%-9s %-9s ratio cask/baseline time = %.3f\n", cas, "", s / base);
    printf("{\"bench\":\"knn\",\"case\":\"%s\",\"impl\":\"%s\",\"n\":%lld,\"m\":%lld,\"gpus\":%d,"
           "\"seconds\":%.6f,\"pairs_per_s\":%.6g%s%.4f}\n",
           cas, impl, (long long)c->n, (long long)c->m, c->gpus, s, pairs / s,
           base > 0 ? ",\"ratio_to_baseline\":" : ",\"ratio_to_baseline\":", base > 0 ? s / base : 1.0);
}

static int64_t compare(ctx *c)
{
    int64_t diff = 0;
    for (int64_t i = 0; i < c->n; i++)
        if (c->idx_cask[i] != c->idx_base[i] || c->dist_cask[i] != c->dist_base[i])
            diff++;
    return diff;
}

int main(int argc, char **argv)
{
    ctx c = { .n = 1 << 24, .m = 1 << 14, .gpus = 0, .reps = 7 };
    int64_t chunk = 0, check = 2000;
    double uneven[KNN_BASELINE_MAX_GPUS] = {0};
    int nuneven = 0, do_hog = 1, only = 0;   /* only: 1 even, 2 uneven, 3 hog; 0 all */
    uint64_t seed = 42;
    int64_t clusters = 0; /* --clusters C: a mixture of C blobs instead of uniform points */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) c.n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--m") && i + 1 < argc) c.m = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--gpus") && i + 1 < argc) c.gpus = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) c.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) chunk = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--check") && i + 1 < argc) check = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--clusters") && i + 1 < argc) clusters = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--no-hog")) do_hog = 0;
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            const char *k = argv[++i];
            only = !strcmp(k, "even") ? 1 : !strcmp(k, "uneven") ? 2 : !strcmp(k, "hog") ? 3 : -1;
            if (only < 0) {
                fprintf(stderr, "%s: --case %s: even, uneven or hog\n", argv[0], k);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--uneven") && i + 1 < argc) {
            char *s = argv[++i];
            while (*s && nuneven < KNN_BASELINE_MAX_GPUS) {
                uneven[nuneven++] = strtod(s, &s);
                if (*s == ',') s++;
            }
        } else {
            fprintf(stderr, "usage: %s [--n N] [--m M] [--gpus G] [--reps R] [--chunk C] [--check K]"
                            " [--uneven f0,f1,...] [--no-hog] [--case even|uneven|hog] [--seed S]"
                            " [--clusters C]\n", argv[0]);
            return 2;
        }
    }
    int have = 0;
    if (cudaGetDeviceCount(&have) != cudaSuccess || have == 0) {
        printf("SKIP: no GPU present\n");
        return 77;
    }
    if (c.gpus <= 0 || c.gpus > have)
        c.gpus = have;
    char err[512] = "";
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU, .ngpu = c.gpus };
    CS(cask_init(&cfg, &c.rt));
    CS(cask_knn_kernels_register(c.rt, &c.kk));
    c.obs = (knn_points){ .n = c.n, .f64 = 0, .degrees = 0 };
    c.ref = (knn_points){ .n = c.m, .f64 = 0, .degrees = 0 };
    CS(cask_host_alloc(c.rt, (size_t)c.n * 2 * sizeof(float), &c.obs.data));
    CS(cask_host_alloc(c.rt, (size_t)c.m * 2 * sizeof(float), &c.ref.data));
    CS(cask_host_alloc(c.rt, (size_t)c.n * sizeof(int32_t), (void **)&c.idx_cask));
    CS(cask_host_alloc(c.rt, (size_t)c.n * sizeof(float), (void **)&c.dist_cask));
    CS(cask_host_alloc(c.rt, (size_t)c.n * sizeof(int32_t), (void **)&c.idx_base));
    CS(cask_host_alloc(c.rt, (size_t)c.n * sizeof(float), (void **)&c.dist_base));
    CS(knn_generate_tasks(c.rt, seed, &c.obs, &c.ref, 1 << 20, clusters, err, sizeof err));
    if (!chunk) {   /* several chunks per GPU so that copies overlap compute */
        chunk = c.n / (8 * c.gpus);
        if (chunk < 4096) chunk = 4096;
    }
    knn_plan plan = { .chunk = chunk, .ref_chunk = c.m, .scale = CASK_EARTH_RADIUS_KM,
                      .where = CASK_WHERE_ANY };
    CS(knn_job_create(c.rt, &c.kk, &c.obs, &c.ref, c.idx_cask, c.dist_cask, &plan, &c.job, err,
                      sizeof err));
    printf("# bench-knn: %lld x %lld = %.4g pairs, %d GPU(s), chunk %lld rows, median of %d\n",
           (long long)c.n, (long long)c.m, (double)c.n * c.m, c.gpus, (long long)chunk, c.reps);
    printf("%-9s %-9s %10s %7s %4s %10s %12s\n", "case", "impl", "N", "M", "gpus", "ms", "pairs/s");
    int64_t ndiff = 0;   /* observations where cask and the baseline differ */
    if (only == 0 || only == 1) {
        double tb = time_base(&c, NULL);
        if (c.gpus > 1)
            balance_floor(&c, "even", tb);
        double tc = time_cask(&c);
        c.cask_base_s = tc;
        row(&c, "even", "baseline", tb, 0);
        row(&c, "even", "cask", tc, tb);
        int64_t diff = compare(&c);
        ndiff += diff;
        printf("# cask vs baseline results: %lld of %lld observations differ\n", (long long)diff, (long long)c.n);
        printf("{\"bench\":\"knn\",\"case\":\"agreement\",\"differing\":%lld,\"n\":%lld}\n", (long long)diff,
               (long long)c.n);
        if (check > 0) {
            knn_check_report rep;
            CS(knn_check(&c.obs, &c.ref, c.idx_cask, c.dist_cask, CASK_EARTH_RADIUS_KM, check, &rep));
            knn_check_print(stdout, "# bench-knn", &rep);
            printf("{\"bench\":\"knn\",\"case\":\"exactness\",\"checked\":%lld,\"max_err_chosen\":%.3g,"
                   "\"max_err_reported\":%.3g,\"ok\":%s}\n", (long long)rep.checked, rep.max_err_chosen,
                   rep.max_err_reported,
                   rep.max_err_chosen <= KNN_CHECK_TOL_CHOSEN && rep.max_err_reported <= KNN_CHECK_TOL_REPORTED &&
                   !rep.bad_index ? "true" : "false");
        }
    }
    if (c.gpus > 1) {
        if (!nuneven) {     /* one GPU gets 3x its share: a split that is off */
            for (int g = 0; g < c.gpus; g++)
                uneven[g] = g == 0 ? 3.0 : 1.0;
            nuneven = c.gpus;
        }
        if (only == 0 || only == 2) {
            double tu = time_base(&c, uneven);
            double tc = only ? time_cask(&c) : c.cask_base_s;   /* cask's own split is the even one */
            row(&c, "uneven", "baseline", tu, 0);
            row(&c, "uneven", "cask", tc, tu);
        }
        if (do_hog && (only == 0 || only == 3)) {
            hog h;
            hog_start(&h, c.gpus - 1);
            double bh = time_base(&c, NULL);
            balance_floor(&c, "hog", bh);
            double ch = time_cask(&c);
            hog_stop(&h);
            row(&c, "hog", "baseline", bh, 0);
            row(&c, "hog", "cask", ch, bh);
            if (only == 3) {   /* the same results under the load */
                time_base(&c, NULL);
                int64_t diff = compare(&c);
                ndiff += diff;
                printf("# hog: cask vs baseline results: %lld of %lld observations differ\n",
                       (long long)diff, (long long)c.n);
            }
        }
    }
    knn_job_destroy(c.job);
    cask_host_free(c.rt, c.obs.data);
    cask_host_free(c.rt, c.ref.data);
    cask_host_free(c.rt, c.idx_cask);
    cask_host_free(c.rt, c.dist_cask);
    cask_host_free(c.rt, c.idx_base);
    cask_host_free(c.rt, c.dist_base);
    cask_shutdown(c.rt);
    return ndiff ? 1 : 0;
}
