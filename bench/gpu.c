/* bench/gpu.c: GPU task throughput and copy bandwidth through cask, each against the
 * same operation done with the CUDA runtime directly, in the same run.
 *   tasks:  T independent empty-kernel tasks through cask on 1 GPU (the usual per-task
 *           path, replay off; and replayed as a CUDA graph) and on all GPUs, vs a raw
 *           cudaLaunchKernel loop on one stream and round-robin on N streams, and vs the
 *           raw CUDA-graph ceiling: 1,000 independent empty kernels captured once,
 *           instantiated, launched T / 1,000 times.
 *   chain:  the same T tasks, each depending on the one before, with and without
 *           replay, vs a captured chain of 1,000 launched T / 1,000 times.
 *   h2d:    a pinned host chunk read by a GPU task (cask's copy) vs cudaMemcpyAsync.
 *   peer:   a chunk valid on GPU 0 read by a task on GPU 1 (cask's peer copy over
 *           NVLink) vs cudaMemcpyPeerAsync.
 * Prints a table and one JSON line per measurement. Median of --reps runs. The ratio
 * column: to raw_1_stream; a cask_replay row and the chain rows to the raw graph of their
 * case (the acceptance: chain cask_replay >= 0.5 of it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include "cask/cask.h"
#include "common/timing.h"
#include "common/gpu_kernels.h"

#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CS(call) do { cask_status s_ = (call); if (s_ != CASK_OK) { \
    fprintf(stderr, "%s: %s\n", #call, cask_status_string(s_)); exit(1); } } while (0)

static cask_status empty_cuda(cask_task_ctx *ctx)
{
    int e = test_gpu_empty(cask_task_cuda_stream(ctx));
    return e ? cask_task_fail(ctx, "empty kernel: %s", test_gpu_error_string(e)) : CASK_OK;
}

static void report(const char *cas, const char *impl, int gpus, double seconds, double count,
                   const char *unit, double base)
{
    double rate = count / seconds;
    printf("%-10s %-18s %4d %12.6f %14.1f %-8s %8.3f\n", cas, impl, gpus, seconds, rate, unit,
           base > 0 ? rate / base : 1.0);
    printf("{\"bench\":\"gpu\",\"case\":\"%s\",\"impl\":\"%s\",\"gpus\":%d,\"seconds\":%.9f,"
           "\"rate\":%.3f,\"unit\":\"%s\",\"ratio_to_baseline\":%.4f}\n",
           cas, impl, gpus, seconds, rate, unit, base > 0 ? rate / base : 1.0);
}

static double raw_launches(int tasks, int nstreams, int reps)
{
    cudaStream_t s[32];
    for (int i = 0; i < nstreams; i++)
        CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_s();
        for (int i = 0; i < tasks; i++)
            if (test_gpu_empty(s[i % nstreams])) { fprintf(stderr, "launch failed\n"); exit(1); }
        for (int i = 0; i < nstreams; i++)
            CK(cudaStreamSynchronize(s[i]));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t, reps);
    for (int i = 0; i < nstreams; i++)
        cudaStreamDestroy(s[i]);
    free(t);
    return m;
}

/* The raw CUDA-graph ceiling: a graph of 1,000 empty kernels (a chain, or independent),
 * instantiated once, launched until `tasks` kernels ran. */
static double raw_graph(int tasks, int independent, int reps)
{
    enum { NODES = 1000 };
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *exec = NULL;
    CK((cudaError_t)test_gpu_graph_make(NODES, independent, s, &exec));
    int launches = (tasks + NODES - 1) / NODES;
    CK((cudaError_t)test_gpu_graph_launch(exec, s));   /* warm-up (uploads the graph) */
    CK(cudaStreamSynchronize(s));
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_s();
        for (int i = 0; i < launches; i++)
            CK((cudaError_t)test_gpu_graph_launch(exec, s));
        CK(cudaStreamSynchronize(s));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t, reps) * tasks / ((double)launches * NODES);
    CK((cudaError_t)test_gpu_graph_destroy(exec));
    cudaStreamDestroy(s);
    free(t);
    return m;
}

/* T empty-kernel tasks through cask, independent or each depending on the one before;
 * replay on or off. Two untimed runs first: the usual run, and (replay on) the one that
 * records. */
static double cask_tasks(int ngpu, int tasks, int reps, int chained, int replay, int *gpus_used)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU | CASK_CONFIG_GRAPH_REPLAY,
                        .ngpu = ngpu, .ncpu = 1, .graph_replay = replay };
    cask_runtime *rt;
    CS(cask_init(&cfg, &rt));
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    *gpus_used = info.ngpus;
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "empty", .cuda = empty_cuda };
    CS(cask_kernel_register(rt, &kd, &k));
    cask_graph *g;
    CS(cask_graph_create(rt, &g));
    cask_task_desc td = { .kernel = k };
    cask_task *prev = NULL;
    for (int i = 0; i < tasks; i++) {
        cask_task_desc tc = td;
        if (chained && prev) {
            tc.field_mask |= CASK_TASK_DEPS;
            tc.deps = &prev;
            tc.ndeps = 1;
        }
        cask_task *cur;   /* (not into prev: deps points at it during the call) */
        CS(cask_graph_add_task(g, &tc, &cur));
        prev = cur;
    }
    CS(cask_graph_compute(g));   /* warm-up: the usual run */
    CS(cask_graph_compute(g));   /* warm-up: recorded, with replay on */
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_s();
        CS(cask_graph_compute(g));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t, reps);
    cask_graph_destroy(g);
    cask_shutdown(rt);
    free(t);
    return m;
}

/* cask: time of a graph whose one task on GPU `dst` reads a chunk valid only at `src`
 * (node 0 host, 1+g GPU g). */
static double cask_copy(int src_gpu, int dst_gpu, size_t bytes, int reps)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU, .ngpu = -1, .ncpu = 1 };
    cask_runtime *rt;
    CS(cask_init(&cfg, &rt));
    void *host;
    CS(cask_host_alloc(rt, bytes, &host));
    memset(host, 1, bytes);
    cask_data *d;
    CS(cask_data_register(rt, host, bytes, &d));
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "touch", .cuda = empty_cuda };
    CS(cask_kernel_register(rt, &kd, &k));
    cask_graph *setup, *g;
    CS(cask_graph_create(rt, &setup));
    CS(cask_graph_create(rt, &g));
    cask_access w = { d, CASK_RW }, rd = { d, CASK_READ };
    if (src_gpu >= 0) {
        cask_task_desc ts = { .field_mask = CASK_TASK_DEVICE, .kernel = k, .access = &w, .naccess = 1,
                              .device = src_gpu };
        CS(cask_graph_add_task(setup, &ts, NULL));
    }
    cask_task_desc tr = { .field_mask = CASK_TASK_DEVICE, .kernel = k, .access = &rd, .naccess = 1,
                          .device = dst_gpu };
    CS(cask_graph_add_task(g, &tr, NULL));
    double *t = malloc(sizeof(double) * (size_t)(reps + 1));
    for (int r = 0; r <= reps; r++) {
        if (src_gpu >= 0) {
            CS(cask_graph_compute(setup));      /* valid only on src_gpu again */
        } else {
            void *p;                            /* host write: drops the GPU replicas */
            CS(cask_data_acquire(d, CASK_RW, &p));
            CS(cask_data_release(d));
        }
        double t0 = bench_now_s();
        CS(cask_graph_compute(g));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t + 1, reps);
    cask_graph_destroy(setup);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_host_free(rt, host);
    cask_shutdown(rt);
    free(t);
    return m;
}

static double raw_copy(int src_gpu, int dst_gpu, size_t bytes, int reps)
{
    void *src, *dst;
    if (src_gpu < 0) {
        CK(cudaHostAlloc(&src, bytes, cudaHostAllocPortable));
        memset(src, 1, bytes);
    } else {
        CK(cudaSetDevice(src_gpu));
        CK(cudaMalloc(&src, bytes));
    }
    CK(cudaSetDevice(dst_gpu));
    CK(cudaMalloc(&dst, bytes));
    if (src_gpu >= 0 && src_gpu != dst_gpu) {
        cudaError_t e = cudaDeviceEnablePeerAccess(src_gpu, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
            CK(e);
        cudaGetLastError();
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    double *t = malloc(sizeof(double) * (size_t)(reps + 1));
    for (int r = 0; r <= reps; r++) {
        double t0 = bench_now_s();
        if (src_gpu < 0)
            CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
        else
            CK(cudaMemcpyPeerAsync(dst, dst_gpu, src, src_gpu, bytes, s));
        CK(cudaStreamSynchronize(s));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t + 1, reps);
    cudaStreamDestroy(s);
    cudaFree(dst);
    if (src_gpu < 0)
        cudaFreeHost(src);
    else {
        cudaSetDevice(src_gpu);
        cudaFree(src);
    }
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    int tasks = 100000, reps = 5;
    size_t bytes = (size_t)1 << 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tasks") && i + 1 < argc) tasks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--tasks N] [--reps R] [--bytes B]\n", argv[0]);
            return 2;
        }
    }
    int ngpu = 0;
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
        printf("SKIP: no GPU present\n");
        return 77;
    }
    int nstreams = 4;
    printf("%-10s %-18s %4s %12s %14s %-8s %8s\n", "case", "impl", "gpus", "median_s", "rate", "unit", "ratio");
    CK(cudaSetDevice(0));
    double raw1 = raw_launches(tasks, 1, reps);
    report("tasks", "raw_1_stream", 1, raw1, tasks, "tasks/s", 0);
    double rawn = raw_launches(tasks, nstreams, reps);
    report("tasks", "raw_4_streams", 1, rawn, tasks, "tasks/s", tasks / raw1);
    int used = 0;
    double c1 = cask_tasks(1, tasks, reps, 0, 0, &used);
    report("tasks", "cask", used, c1, tasks, "tasks/s", tasks / raw1);
    /* replayed: against the raw graph ceiling of this run */
    double gi = raw_graph(tasks, 1, reps);
    report("tasks", "raw_graph_1000", 1, gi, tasks, "tasks/s", tasks / raw1);
    double ci = cask_tasks(1, tasks, reps, 0, 1, &used);
    report("tasks", "cask_replay", used, ci, tasks, "tasks/s", tasks / gi);
    double gc = raw_graph(tasks, 0, reps);
    report("chain", "raw_graph_1000", 1, gc, tasks, "tasks/s", tasks / raw1);
    double cc0 = cask_tasks(1, tasks, reps, 1, 0, &used);
    report("chain", "cask", used, cc0, tasks, "tasks/s", tasks / gc);
    double cc1 = cask_tasks(1, tasks, reps, 1, 1, &used);
    report("chain", "cask_replay", used, cc1, tasks, "tasks/s", tasks / gc);
    if (ngpu > 1) {
        double cn = cask_tasks(-1, tasks * ngpu, reps, 0, 0, &used);
        report("tasks", "cask_all_gpus", used, cn, (double)tasks * ngpu, "tasks/s", tasks / raw1 * used);
    }
    double rh = raw_copy(-1, 0, bytes, reps);
    report("h2d", "cudaMemcpyAsync", 1, rh, (double)bytes / 1e9, "GB/s", 0);
    double ch = cask_copy(-1, 0, bytes, reps);
    report("h2d", "cask", 1, ch, (double)bytes / 1e9, "GB/s", bytes / 1e9 / rh);
    if (ngpu > 1) {
        double rp = raw_copy(0, 1, bytes, reps);
        report("peer", "cudaMemcpyPeerAsync", 2, rp, (double)bytes / 1e9, "GB/s", 0);
        double cp = cask_copy(0, 1, bytes, reps);
        report("peer", "cask", 2, cp, (double)bytes / 1e9, "GB/s", bytes / 1e9 / rp);
    }
    return 0;
}
