/* bench/knn_kernel_check.c: times the bare CUDA haversine 1-NN search kernel (each
 * variant in kernels/knn_cuda.cu) at full size with CUDA events (median after warm-up)
 * and checks it: sampled observations against a float64 brute force on the CPU, a slice
 * bitwise against the CPU kernel, and partial search + merge + finish over reference
 * chunks bitwise against one final search; then runs the hand-threaded baseline
 * (bench/knn_baseline.c) end to end, host to host, and compares its results bitwise.
 * What one iterates on with a GPU.
 *
 *   knn-kernel-check [-n N] [-m M] [-r REPS] [-s SAMPLES] [-v VARIANT] [-S SEED]
 *
 * Prints a table last; exit status 0 only if every check passed. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "bench/knn_baseline.h"
#include "kernels/knn_impl.h"

#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                    cudaGetErrorString(e_));                                              \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

static uint64_t rng_state;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_unit(void) { return (rng_next() >> 11) * (1.0 / 9007199254740992.0); }

/* Uniform on the sphere, degrees, as float. */
static void random_points(float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        p[2 * i] = (float)(asin(2 * rng_unit() - 1) * (180.0 / M_PI));
        p[2 * i + 1] = (float)(rng_unit() * 360.0 - 180.0);
    }
}

/* Reference float64 haversine distance (radians) with libm, independent of knn_impl.h. */
static double haversine(double lat1, double lon1, double lat2, double lon2)
{
    const double d2r = M_PI / 180.0;
    double sl = sin((lat2 - lat1) * d2r / 2), so = sin((lon2 - lon1) * d2r / 2);
    double h = sl * sl + cos(lat1 * d2r) * cos(lat2 * d2r) * so * so;
    return 2 * asin(sqrt(h < 1 ? h : 1));
}

typedef struct brute_job {
    const float *obs, *ref;
    const int64_t *sample;
    int64_t nsample, m, begin, end;
    const void *prep;   /* host copy of the prepared references */
    int64_t *best_idx;  /* argmin of (knn_chord2, index): what the kernel must return */
    double *best_hav;   /* min haversine */
} brute_job;

static void *brute_thread(void *arg)
{
    brute_job *J = arg;
    int64_t mpad = knn_mpad(J->m);
    const double *x = knn_prep_f64((void *)J->prep, mpad, 0),
                 *y = knn_prep_f64((void *)J->prep, mpad, 1),
                 *z = knn_prep_f64((void *)J->prep, mpad, 2);
    cask_knn_points f = {0, 1};
    for (int64_t s = J->begin; s < J->end; s++) {
        int64_t i = J->sample[s];
        double p[3], bc2 = INFINITY, bh = INFINITY;
        int64_t bi = -1;
        knn_load_point(J->obs, i, f, p);
        for (int64_t j = 0; j < J->m; j++) {
            double c2 = knn_chord2(p, x[j], y[j], z[j]);
            if (c2 < bc2) {
                bc2 = c2;
                bi = j;
            }
            double h = haversine(J->obs[2 * i], J->obs[2 * i + 1], J->ref[2 * j], J->ref[2 * j + 1]);
            if (h < bh)
                bh = h;
        }
        J->best_idx[s] = bi;
        J->best_hav[s] = bh;
    }
    return NULL;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int64_t n = 1 << 24, m = 1 << 14, nsample = 4096;
    int reps = 9, only = -1;
    uint64_t seed = 42;
    int c;
    while ((c = getopt(argc, argv, "n:m:r:s:v:S:")) != -1) {
        switch (c) {
        case 'n': n = atoll(optarg); break;
        case 'm': m = atoll(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 's': nsample = atoll(optarg); break;
        case 'v': only = atoi(optarg); break;
        case 'S': seed = strtoull(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: %s [-n N] [-m M] [-r REPS] [-s SAMPLES] [-v VARIANT] [-S SEED]\n",
                    argv[0]);
            return 2;
        }
    }
    if (n < 1 || m < 2 || reps < 1)
        return 2;
    rng_state = seed;
    struct cudaDeviceProp prop;
    int clock_khz = 0;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    printf("device: %s, %d SMs, %d MHz (max), n = %lld, m = %lld\n", prop.name,
           prop.multiProcessorCount, clock_khz / 1000, (long long)n, (long long)m);

    /* Inputs: random, plus exact duplicates of references among the references (ties
     * that must go to the lower index) and among the observations (distance 0). */
    float *obs, *ref;
    CK(cudaMallocHost((void **)&obs, (size_t)n * 2 * sizeof(float)));
    CK(cudaMallocHost((void **)&ref, (size_t)m * 2 * sizeof(float)));
    random_points(obs, n);
    random_points(ref, m);
    int64_t ndup = m / 64;
    for (int64_t d = 0; d < ndup; d++) {
        int64_t lo = rng_next() % (m / 2), hi = m / 2 + rng_next() % (m / 2);
        ref[2 * hi] = ref[2 * lo];
        ref[2 * hi + 1] = ref[2 * lo + 1];
    }
    for (int64_t i = 0; i < n; i += 97) {
        int64_t j = rng_next() % m;
        obs[2 * i] = ref[2 * j];
        obs[2 * i + 1] = ref[2 * j + 1];
    }

    cask_knn_points fmt = {0, 1};
    size_t pbytes = knn_prep_bytes(m);
    void *d_obs, *d_ref, *d_prep, *d_prep2[2], *d_best[2];
    int32_t *d_idx, *d_idx2;
    float *d_dist, *d_dist2;
    knn_cuda_stats *d_stats;
    int64_t mh = m / 2; /* reference chunks [0, mh) and [mh, m) for the partial check */
    CK(cudaMalloc(&d_obs, (size_t)n * 2 * sizeof(float)));
    CK(cudaMalloc(&d_ref, (size_t)m * 2 * sizeof(float)));
    CK(cudaMalloc(&d_prep, pbytes));
    CK(cudaMalloc(&d_prep2[0], knn_prep_bytes(mh)));
    CK(cudaMalloc(&d_prep2[1], knn_prep_bytes(m - mh)));
    CK(cudaMalloc(&d_best[0], (size_t)n * sizeof(cask_knn_best)));
    CK(cudaMalloc(&d_best[1], (size_t)n * sizeof(cask_knn_best)));
    CK(cudaMalloc((void **)&d_idx, (size_t)n * 4));
    CK(cudaMalloc((void **)&d_dist, (size_t)n * 4));
    CK(cudaMalloc((void **)&d_idx2, (size_t)n * 4));
    CK(cudaMalloc((void **)&d_dist2, (size_t)n * 4));
    CK(cudaMalloc((void **)&d_stats, sizeof(knn_cuda_stats)));
    CK(cudaMemcpy(d_obs, obs, (size_t)n * 2 * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_ref, ref, (size_t)m * 2 * sizeof(float), cudaMemcpyHostToDevice));
    CK(knn_cuda_prep(d_ref, m, fmt, d_prep, 0));
    CK(knn_cuda_prep(d_ref, mh, fmt, d_prep2[0], 0));
    CK(knn_cuda_prep((const float *)d_ref + 2 * mh, m - mh, fmt, d_prep2[1], 0));
    CK(cudaDeviceSynchronize());

    /* The prepared references must be bitwise those of the CPU prep. */
    void *prep_gpu = malloc(pbytes), *prep_cpu = malloc(pbytes);
    CK(cudaMemcpy(prep_gpu, d_prep, pbytes, cudaMemcpyDeviceToHost));
    knn_cpu_prep_run(ref, m, fmt, prep_cpu);
    int prep_same = memcmp(prep_gpu, prep_cpu, pbytes) == 0;
    printf("prep: GPU and CPU prepared references %s\n", prep_same ? "bitwise equal" : "DIFFER");
    int failures = !prep_same;

    /* Float64 brute force for the samples (the first few are duplicates of references). */
    int64_t *sample = malloc(nsample * sizeof *sample), *want = malloc(nsample * sizeof *want);
    double *hav = malloc(nsample * sizeof *hav);
    for (int64_t s = 0; s < nsample; s++)
        sample[s] = s < 64 ? (s * 97) % n : (int64_t)(rng_next() % n);
    {
        int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
        nt = nt < 1 ? 1 : nt > 64 ? 64 : nt;
        pthread_t th[64];
        brute_job J[64];
        for (int t = 0; t < nt; t++) {
            J[t] = (brute_job){obs, ref, sample, nsample, m, nsample * t / nt,
                               nsample * (t + 1) / nt, prep_cpu, want, hav};
            pthread_create(&th[t], NULL, brute_thread, &J[t]);
        }
        for (int t = 0; t < nt; t++)
            pthread_join(th[t], NULL);
    }

    /* A slice run by the CPU kernel, for a bitwise comparison. */
    int64_t ncpu = n < 32768 ? n : 32768;
    int32_t *cpu_idx = malloc(ncpu * 4);
    float *cpu_dist = malloc(ncpu * 4);
    {
        knn_search_job j = {{ncpu, m, 0, fmt, CASK_KNN_FINAL, CASK_EARTH_RADIUS_KM},
                            obs, prep_cpu, cpu_idx, cpu_dist};
        knn_cpu_search_run(&j);
    }

    int32_t *idx = malloc((size_t)n * 4), *idx2 = malloc((size_t)n * 4);
    float *dist = malloc((size_t)n * 4), *dist2 = malloc((size_t)n * 4);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float *times = malloc(reps * sizeof(float));
    double t_pass1 = 0;
    struct { const char *name; double ms, gpairs; int ok; } row[32];
    int nrow = 0;
    const double pairs = (double)n * m;

    for (int v = 0; v < knn_cuda_search_variants(); v++) {
        if (only >= 0 && v != only)
            continue;
        const char *name = knn_cuda_search_variant_name(v);
        int exact = strstr(name, "not exact") == NULL;
        knn_cuda_stats *st = strstr(name, "counters") ? d_stats : NULL;
        if (st)
            CK(cudaMemset(d_stats, 0, sizeof *d_stats));
        for (int w = 0; w < 2; w++)
            CK(knn_cuda_search_variant(v, d_obs, n, fmt, d_prep, m, 0, CASK_EARTH_RADIUS_KM,
                                       CASK_KNN_FINAL, d_idx, d_dist, st, 0));
        CK(cudaDeviceSynchronize());
        for (int r = 0; r < reps; r++) {
            CK(cudaEventRecord(e0, 0));
            CK(knn_cuda_search_variant(v, d_obs, n, fmt, d_prep, m, 0, CASK_EARTH_RADIUS_KM,
                                       CASK_KNN_FINAL, d_idx, d_dist, st, 0));
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&times[r], e0, e1));
        }
        qsort(times, reps, sizeof(float), cmp_float);
        double med = times[reps / 2];
        if (!exact && t_pass1 == 0) /* the first pass-1-only variant: variant 0's pass 1 */
            t_pass1 = med;
        int ok = 1;
        if (exact) {
            /* Poisoned outputs, one more run, then the checks. */
            CK(cudaMemset(d_idx, 0xa5, (size_t)n * 4));
            CK(cudaMemset(d_dist, 0xa5, (size_t)n * 4));
            if (st)
                CK(cudaMemset(d_stats, 0, sizeof *d_stats));
            CK(knn_cuda_search_variant(v, d_obs, n, fmt, d_prep, m, 0, CASK_EARTH_RADIUS_KM,
                                       CASK_KNN_FINAL, d_idx, d_dist, st, 0));
            CK(cudaMemcpy(idx, d_idx, (size_t)n * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(dist, d_dist, (size_t)n * 4, cudaMemcpyDeviceToHost));
            int64_t bad_idx = 0, bad_hav = 0, bad_dist = 0, bad_cpu = 0, bad_range = 0;
            double worst_rel = 0;
            for (int64_t i = 0; i < n; i++)
                if (idx[i] < 0 || idx[i] >= m || !(dist[i] >= 0))
                    bad_range++;
            for (int64_t s = 0; s < nsample; s++) {
                int64_t i = sample[s];
                if (idx[i] < 0 || idx[i] >= m) {
                    bad_idx++;
                    continue;
                }
                if (idx[i] != want[s])
                    bad_idx++;
                double h = haversine(obs[2 * i], obs[2 * i + 1], ref[2 * idx[i]], ref[2 * idx[i] + 1]);
                if (h > hav[s] * (1 + 1e-6) + 1e-12)
                    bad_hav++;
                double rd = hav[s] * CASK_EARTH_RADIUS_KM;
                double rel = fabs(dist[i] - rd) / (rd > 1e-9 ? rd : 1e-9);
                if (fabs(dist[i] - rd) > 1e-5 * rd + 1e-12 * CASK_EARTH_RADIUS_KM)
                    bad_dist++;
                if (rel > worst_rel && rd > 1e-6)
                    worst_rel = rel;
            }
            for (int64_t i = 0; i < ncpu; i++)
                if (idx[i] != cpu_idx[i] || memcmp(&dist[i], &cpu_dist[i], 4) != 0)
                    bad_cpu++;
            knn_cuda_stats hs = {0};
            if (st)
                CK(cudaMemcpy(&hs, d_stats, sizeof hs, cudaMemcpyDeviceToHost));
            /* Two reference chunks: partial + merge + finish must equal one final search. */
            CK(knn_cuda_search_variant(v, d_obs, n, fmt, d_prep2[1], m - mh, mh, 1.0,
                                       CASK_KNN_PARTIAL, d_best[1], NULL, st, 0));
            CK(knn_cuda_search_variant(v, d_obs, n, fmt, d_prep2[0], mh, 0, 1.0,
                                       CASK_KNN_PARTIAL, d_best[0], NULL, st, 0));
            CK(knn_cuda_merge(d_best[0], d_best[1], n, 0));
            CK(knn_cuda_finish(d_best[0], n, CASK_EARTH_RADIUS_KM, d_idx2, d_dist2, 0));
            CK(cudaMemcpy(idx2, d_idx2, (size_t)n * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(dist2, d_dist2, (size_t)n * 4, cudaMemcpyDeviceToHost));
            int64_t bad_chunks = 0;
            for (int64_t i = 0; i < n; i++)
                bad_chunks += idx[i] != idx2[i] || memcmp(&dist[i], &dist2[i], 4) != 0;
            ok = !(bad_idx || bad_hav || bad_dist || bad_cpu || bad_range || bad_chunks);
            printf("%-28s idx!=argmin %lld, hav>min %lld, dist off %lld (worst rel %.2e), "
                   "!=cpu %lld/%lld, unwritten %lld, 2 chunks != 1 chunk %lld: %s\n",
                   name, (long long)bad_idx, (long long)bad_hav, (long long)bad_dist, worst_rel,
                   (long long)bad_cpu, (long long)ncpu, (long long)bad_range,
                   (long long)bad_chunks, ok ? "ok" : "FAIL");
            if (st) {
                printf("  counters: near %llu (%.3f%%), overflow %llu (%.4f%%), rescans %llu "
                       "(%.3f per obs), float64 rescans %llu (%.3f%%)\n",
                       hs.obs_near, 100.0 * hs.obs_near / n, hs.obs_overflow,
                       100.0 * hs.obs_overflow / n, hs.rescans, (double)hs.rescans / n,
                       hs.slow_rescans, 100.0 * hs.slow_rescans / (hs.rescans ? hs.rescans : 1));
            }
            failures += !ok;
        }
        row[nrow].name = name;
        row[nrow].ms = med;
        row[nrow].gpairs = pairs / (med * 1e-3) / 1e9;
        row[nrow].ok = exact ? ok : -1;
        nrow++;
        printf("%-28s median %.3f ms (min %.3f, max %.3f) over %d\n", name, med, times[0],
               times[reps - 1], reps);
        fflush(stdout);
    }

    /* The baseline, host to host: pinned and pageable results; 3 runs each, median. */
    if (only < 0 || only == 0) {
        CK(knn_cuda_search_final(d_obs, n, fmt, d_prep, m, 0, CASK_EARTH_RADIUS_KM, d_idx, d_dist, 0));
        CK(cudaMemcpy(idx, d_idx, (size_t)n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(dist, d_dist, (size_t)n * 4, cudaMemcpyDeviceToHost));
        int32_t *pidx;
        float *pdist;
        CK(cudaMallocHost((void **)&pidx, (size_t)n * 4));
        CK(cudaMallocHost((void **)&pdist, (size_t)n * 4));
        struct { int pinned, streams; int64_t chunk; } cfgs[] = {
            {1, 3, 1 << 21}, {1, 2, 1 << 22}, {1, 4, 1 << 20}, {0, 3, 1 << 21}};
        for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
            knn_baseline_cfg bc = {0};
            bc.n = n;
            bc.m = m;
            bc.obs_in = fmt;
            bc.ref_in = fmt;
            bc.scale = CASK_EARTH_RADIUS_KM;
            bc.ngpus = 1;
            bc.streams = cfgs[k].streams;
            bc.chunk = cfgs[k].chunk;
            bc.host_pinned = cfgs[k].pinned;
            int32_t *bi = cfgs[k].pinned ? pidx : idx2;
            float *bd = cfgs[k].pinned ? pdist : dist2;
            float bt[3];
            for (int r = 0; r < 3; r++) {
                memset(bi, 0xa5, (size_t)n * 4);
                knn_baseline_result br;
                if (knn_baseline_run(&bc, obs, ref, bi, bd, &br) != 0) {
                    printf("baseline: FAILED to run\n");
                    failures++;
                    break;
                }
                bt[r] = (float)(br.seconds * 1e3);
            }
            qsort(bt, 3, sizeof(float), cmp_float);
            int64_t diff = 0;
            for (int64_t i = 0; i < n; i++)
                diff += idx[i] != bi[i] || memcmp(&dist[i], &bd[i], 4) != 0;
            printf("baseline 1 GPU, %s host memory, %d streams, chunks of %lld: median %.2f ms "
                   "(min %.2f) host to host; %lld results differ from the kernel's: %s\n",
                   cfgs[k].pinned ? "pinned" : "pageable", cfgs[k].streams,
                   (long long)cfgs[k].chunk, bt[1], bt[0], (long long)diff, diff ? "FAIL" : "ok");
            failures += diff != 0;
        }
    }

    double floor_ms = pairs * 4 / (prop.multiProcessorCount * 128.0 * clock_khz * 1e3) * 1e3;
    printf("\nfloor at 4 instr/pair and %d MHz: %.2f ms\n", clock_khz / 1000, floor_ms);
    printf("%-30s %10s %12s %8s\n", "variant", "median ms", "Gpairs/s", "exact");
    for (int r = 0; r < nrow; r++)
        printf("%-30s %10.3f %12.1f %8s\n", row[r].name, row[r].ms, row[r].gpairs,
               row[r].ok < 0 ? "-" : row[r].ok ? "ok" : "FAIL");
    if (t_pass1 > 0 && nrow > 0 && row[0].ok >= 0)
        printf("pass 2 + bookkeeping overhead of variant 0: %.1f%%\n",
               100.0 * (row[0].ms - t_pass1) / t_pass1);
    printf("%s\n", failures ? "CHECK FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
