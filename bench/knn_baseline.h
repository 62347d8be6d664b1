/* bench/knn_baseline.h: the hand-threaded baseline of the exact haversine 1-NN search,
 * written as a careful engineer would without cask: one pthread per GPU, a static split
 * of the observations, each thread with its own CUDA streams, pinned host memory, and
 * chunked H2D copy / search kernel / D2H copy pipelining across the streams. It launches
 * the same kernels as cask (kernels/knn_cuda.cu, through knn_impl.h), so a comparison
 * measures the runtimes, not the kernels. CUDA builds only. */
#ifndef CASK_BENCH_KNN_BASELINE_H
#define CASK_BENCH_KNN_BASELINE_H

#include <stdint.h>
#include "cask/knn.h"

#define KNN_BASELINE_MAX_GPUS 16

typedef struct knn_baseline_cfg {
    int64_t n;                      /* observations */
    int64_t m;                      /* references */
    cask_knn_points obs_in, ref_in; /* formats of obs (n x 2) and ref (m x 2) */
    double scale;                   /* distance = scale * angle in radians */
    int ngpus;                      /* GPUs 0..ngpus-1; 0 = every visible GPU */
    int streams;                    /* streams per GPU, 1..8; 0 = 3 */
    int64_t chunk;                  /* observations per pipelined chunk; 0 = 1 << 21 */
    /* NULL: equal split; else ngpus non-negative shares of the observations (normalised),
     * e.g. {0.7, 0.3} to show what a static split costs when it is off. */
    const double *fraction;
    /* 1: obs, idx and dist are page-locked (cudaHostAlloc, cask_host_alloc with GPUs):
     * copied directly. 0: staged through pinned buffers by each GPU thread. */
    int host_pinned;
} knn_baseline_cfg;

typedef struct knn_baseline_result {
    double seconds;                            /* wall time: first copy to last result */
    int ngpus;
    int64_t gpu_n[KNN_BASELINE_MAX_GPUS];      /* observations each GPU got */
    double gpu_seconds[KNN_BASELINE_MAX_GPUS]; /* when each GPU's thread finished */
} knn_baseline_result;

/* Computes idx[i] (int32 reference index) and dist[i] (scale * great-circle angle) for
 * the n observations against the m references, exactly as cask-knn does. Device memory,
 * streams and pinned staging are set up before the clock starts and freed after it
 * stops; the timed part is the references' copy and prep on every GPU, then the
 * pipelined chunks, until every result is in idx and dist. The caller owns all buffers.
 * Returns 0, or -1 with a message on stderr (a CUDA call failed, bad configuration).
 * Not thread safe with itself (it drives the GPUs). */
int knn_baseline_run(const knn_baseline_cfg *cfg, const void *obs, const void *ref,
                     int32_t *idx, float *dist, knn_baseline_result *res);

#endif
