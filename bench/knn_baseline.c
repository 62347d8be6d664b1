/* bench/knn_baseline.c: the hand-threaded pthreads + CUDA streams baseline of the
 * haversine 1-NN search (see knn_baseline.h). Per GPU thread: copy the references and
 * prepare them on stream 0; the other streams wait for that event; then chunk c of the
 * thread's observations goes to stream c % S as H2D, search kernel, D2H. With pageable
 * user memory each stream has pinned staging buffers; the host copies a chunk in, and
 * copies the chunk S steps earlier out once its event has fired. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "bench/knn_baseline.h"
#include "kernels/knn_impl.h"

#define MAX_STREAMS 8

typedef struct gpu_job {
    int dev;
    const knn_baseline_cfg *cfg;
    const void *obs, *ref;
    int32_t *idx;
    float *dist;
    int64_t lo, hi;   /* this GPU's observations */
    int streams;
    int64_t chunk;
    pthread_barrier_t *ready, *go;
    double t_end;     /* monotonic seconds when done */
    int failed;
    /* device and staging resources */
    cudaStream_t s[MAX_STREAMS];
    cudaEvent_t prepped, done[MAX_STREAMS];
    void *d_ref, *d_prep, *d_obs[MAX_STREAMS];
    int32_t *d_idx[MAX_STREAMS], *h_idx[MAX_STREAMS];
    float *d_dist[MAX_STREAMS], *h_dist[MAX_STREAMS];
    void *h_obs[MAX_STREAMS];
} gpu_job;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t point_bytes(cask_knn_points f) { return 2 * (f.f64 ? sizeof(double) : sizeof(float)); }

#define CK(job, call)                                                                     \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "knn baseline, GPU %d: %s: %s\n", (job)->dev, #call,          \
                    cudaGetErrorString(e_));                                              \
            (job)->failed = 1;                                                            \
            goto fail;                                                                    \
        }                                                                                 \
    } while (0)

static int setup(gpu_job *J)
{
    const knn_baseline_cfg *C = J->cfg;
    const size_t ob = point_bytes(C->obs_in);
    CK(J, cudaSetDevice(J->dev));
    CK(J, cudaMalloc(&J->d_ref, (size_t)(C->m > 0 ? C->m : 1) * point_bytes(C->ref_in)));
    CK(J, cudaMalloc(&J->d_prep, knn_prep_bytes(C->m)));
    CK(J, cudaEventCreateWithFlags(&J->prepped, cudaEventDisableTiming));
    for (int s = 0; s < J->streams; s++) {
        CK(J, cudaStreamCreateWithFlags(&J->s[s], cudaStreamNonBlocking));
        CK(J, cudaEventCreateWithFlags(&J->done[s], cudaEventDisableTiming));
        CK(J, cudaMalloc(&J->d_obs[s], (size_t)J->chunk * ob));
        CK(J, cudaMalloc((void **)&J->d_idx[s], (size_t)J->chunk * sizeof(int32_t)));
        CK(J, cudaMalloc((void **)&J->d_dist[s], (size_t)J->chunk * sizeof(float)));
        if (!C->host_pinned) {
            CK(J, cudaMallocHost(&J->h_obs[s], (size_t)J->chunk * ob));
            CK(J, cudaMallocHost((void **)&J->h_idx[s], (size_t)J->chunk * sizeof(int32_t)));
            CK(J, cudaMallocHost((void **)&J->h_dist[s], (size_t)J->chunk * sizeof(float)));
        }
    }
    return 0;
fail:
    return -1;
}

static void teardown(gpu_job *J)
{
    cudaSetDevice(J->dev);
    for (int s = 0; s < J->streams; s++) {
        if (J->s[s])
            cudaStreamSynchronize(J->s[s]);
        cudaFree(J->d_obs[s]);
        cudaFree(J->d_idx[s]);
        cudaFree(J->d_dist[s]);
        cudaFreeHost(J->h_obs[s]);
        cudaFreeHost(J->h_idx[s]);
        cudaFreeHost(J->h_dist[s]);
        if (J->done[s])
            cudaEventDestroy(J->done[s]);
        if (J->s[s])
            cudaStreamDestroy(J->s[s]);
    }
    if (J->prepped)
        cudaEventDestroy(J->prepped);
    cudaFree(J->d_ref);
    cudaFree(J->d_prep);
}

static int run(gpu_job *J)
{
    const knn_baseline_cfg *C = J->cfg;
    const size_t ob = point_bytes(C->obs_in);
    const int S = J->streams;
    int64_t pending[MAX_STREAMS], pending_n[MAX_STREAMS]; /* staged chunk to copy out */
    for (int s = 0; s < S; s++)
        pending[s] = -1;

    CK(J, cudaMemcpyAsync(J->d_ref, J->ref, (size_t)C->m * point_bytes(C->ref_in),
                          cudaMemcpyHostToDevice, J->s[0]));
    CK(J, knn_cuda_prep(J->d_ref, C->m, C->ref_in, J->d_prep, J->s[0]));
    CK(J, cudaEventRecord(J->prepped, J->s[0]));
    for (int s = 1; s < S; s++)
        CK(J, cudaStreamWaitEvent(J->s[s], J->prepped, 0));

    int64_t c = 0;
    for (int64_t lo = J->lo; lo < J->hi; lo += J->chunk, c++) {
        const int s = (int)(c % S);
        const int64_t nc = J->hi - lo < J->chunk ? J->hi - lo : J->chunk;
        const void *src = (const char *)J->obs + lo * ob;
        int32_t *out_idx = J->idx + lo;
        float *out_dist = J->dist + lo;
        if (!C->host_pinned) {
            /* The stream's staging buffers are free once its previous chunk is done. */
            if (pending[s] >= 0) {
                CK(J, cudaEventSynchronize(J->done[s]));
                memcpy(J->idx + pending[s], J->h_idx[s], pending_n[s] * sizeof(int32_t));
                memcpy(J->dist + pending[s], J->h_dist[s], pending_n[s] * sizeof(float));
            }
            memcpy(J->h_obs[s], src, nc * ob);
            src = J->h_obs[s];
            out_idx = J->h_idx[s];
            out_dist = J->h_dist[s];
            pending[s] = lo;
            pending_n[s] = nc;
        }
        CK(J, cudaMemcpyAsync(J->d_obs[s], src, nc * ob, cudaMemcpyHostToDevice, J->s[s]));
        CK(J, knn_cuda_search_final(J->d_obs[s], nc, C->obs_in, J->d_prep, C->m, 0, C->scale,
                                    J->d_idx[s], J->d_dist[s], J->s[s]));
        CK(J, cudaMemcpyAsync(out_idx, J->d_idx[s], nc * sizeof(int32_t),
                              cudaMemcpyDeviceToHost, J->s[s]));
        CK(J, cudaMemcpyAsync(out_dist, J->d_dist[s], nc * sizeof(float),
                              cudaMemcpyDeviceToHost, J->s[s]));
        CK(J, cudaEventRecord(J->done[s], J->s[s]));
    }
    for (int s = 0; s < S; s++) {
        CK(J, cudaStreamSynchronize(J->s[s]));
        if (!C->host_pinned && pending[s] >= 0) {
            memcpy(J->idx + pending[s], J->h_idx[s], pending_n[s] * sizeof(int32_t));
            memcpy(J->dist + pending[s], J->h_dist[s], pending_n[s] * sizeof(float));
        }
    }
    return 0;
fail:
    return -1;
}

static void *gpu_thread(void *arg)
{
    gpu_job *J = arg;
    setup(J);
    pthread_barrier_wait(J->ready); /* set up (or failed): the main thread starts the clock */
    pthread_barrier_wait(J->go);
    if (!J->failed)
        run(J);
    /* Make sure this GPU's results have landed (run synchronised already on success). */
    J->t_end = now();
    teardown(J);
    return NULL;
}

int knn_baseline_run(const knn_baseline_cfg *cfg, const void *obs, const void *ref,
                     int32_t *idx, float *dist, knn_baseline_result *res)
{
    if (!cfg || !obs || !ref || !idx || !dist || !res || cfg->n < 0 || cfg->m < 0 ||
        cfg->m > INT32_MAX || cfg->streams < 0 || cfg->streams > MAX_STREAMS ||
        cfg->ngpus < 0 || cfg->ngpus > KNN_BASELINE_MAX_GPUS || cfg->chunk < 0) {
        fprintf(stderr, "knn baseline: invalid configuration\n");
        return -1;
    }
    int visible = 0;
    cudaError_t e = cudaGetDeviceCount(&visible);
    if (e != cudaSuccess || visible == 0) {
        fprintf(stderr, "knn baseline: no GPU (%s)\n", cudaGetErrorString(e));
        return -1;
    }
    int G = cfg->ngpus ? cfg->ngpus : visible;
    if (G > visible || G > KNN_BASELINE_MAX_GPUS) {
        fprintf(stderr, "knn baseline: %d GPUs asked, %d visible\n", G, visible);
        return -1;
    }
    /* Static split: equal, or by the given fractions. */
    int64_t bounds[KNN_BASELINE_MAX_GPUS + 1];
    double total = 0, acc = 0;
    for (int g = 0; g < G; g++) {
        double f = cfg->fraction ? cfg->fraction[g] : 1.0;
        if (!(f >= 0)) {
            fprintf(stderr, "knn baseline: fraction[%d] = %g\n", g, f);
            return -1;
        }
        total += f;
    }
    if (!(total > 0)) {
        fprintf(stderr, "knn baseline: fractions sum to 0\n");
        return -1;
    }
    bounds[0] = 0;
    for (int g = 0; g < G; g++) {
        acc += cfg->fraction ? cfg->fraction[g] : 1.0;
        bounds[g + 1] = g == G - 1 ? cfg->n : (int64_t)(cfg->n * (acc / total) + 0.5);
    }

    pthread_barrier_t ready, go;
    pthread_barrier_init(&ready, NULL, (unsigned)G + 1);
    pthread_barrier_init(&go, NULL, (unsigned)G + 1);
    gpu_job *jobs = calloc(G, sizeof *jobs);
    pthread_t th[KNN_BASELINE_MAX_GPUS];
    if (!jobs)
        return -1;
    for (int g = 0; g < G; g++) {
        gpu_job *J = &jobs[g];
        J->dev = g;
        J->cfg = cfg;
        J->obs = obs;
        J->ref = ref;
        J->idx = idx;
        J->dist = dist;
        J->lo = bounds[g];
        J->hi = bounds[g + 1];
        J->streams = cfg->streams ? cfg->streams : 3;
        J->chunk = cfg->chunk ? cfg->chunk : (int64_t)1 << 21;
        J->ready = &ready;
        J->go = &go;
        int rc = pthread_create(&th[g], NULL, gpu_thread, J);
        if (rc) {
            /* Threads already started wait at the barrier forever: give up loudly. */
            fprintf(stderr, "knn baseline: pthread_create: %s\n", strerror(rc));
            abort();
        }
    }
    pthread_barrier_wait(&ready);
    double t0 = now();
    pthread_barrier_wait(&go);
    int failed = 0;
    for (int g = 0; g < G; g++) {
        pthread_join(th[g], NULL);
        failed |= jobs[g].failed;
    }
    double t1 = 0;
    memset(res, 0, sizeof *res);
    res->ngpus = G;
    for (int g = 0; g < G; g++) {
        res->gpu_n[g] = jobs[g].hi - jobs[g].lo;
        res->gpu_seconds[g] = jobs[g].t_end - t0;
        t1 = jobs[g].t_end > t1 ? jobs[g].t_end : t1;
    }
    res->seconds = t1 - t0;
    pthread_barrier_destroy(&ready);
    pthread_barrier_destroy(&go);
    free(jobs);
    return failed ? -1 : 0;
}
