/* knn_chunks.h: what the one-process graph (knn_graph.c) and the multi-process graph
 * (knn_dist.c) of cask-knn share: chunk sizes, names, and the task descriptor. */
#ifndef KNN_CHUNKS_H
#define KNN_CHUNKS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include "cask/cask.h"
#include "points.h"

/* Rows of chunk c when total rows are cut in chunks of `chunk`. */
static inline int64_t knn_rows_of(int64_t total, int64_t chunk, int64_t c)
{
    int64_t left = total - c * chunk;
    return left < chunk ? left : chunk;
}

/* Cuts `total` rows into chunks of at most `want` rows (total > 0, want > 0): the chunk
 * size actually used and the number of chunks. */
static inline void knn_cut(int64_t total, int64_t want, int64_t *chunk, int64_t *count)
{
    *chunk = want < total ? want : total;
    *count = (total + *chunk - 1) / *chunk;
}

/* Bytes of one coordinate of p. */
static inline size_t knn_elem_bytes(const knn_points *p)
{
    return p->f64 ? sizeof(double) : sizeof(float);
}

/* Formats a handle or task name into buf (64 bytes) and returns buf. */
__attribute__((format(printf, 2, 3)))
static inline const char *knn_name(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, 64, fmt, ap);
    va_end(ap);
    return buf;
}

/* The descriptor of a knn task (device < 0: no preferred GPU). */
static inline cask_task_desc knn_task_desc(cask_kernel *kern, const cask_access *acc, int nacc,
                                           const void *args, size_t args_size, int priority,
                                           uint32_t where, int device, const char *name)
{
    cask_task_desc d = {0};
    d.field_mask = CASK_TASK_ARGS | CASK_TASK_PRIORITY | CASK_TASK_NAME | CASK_TASK_WHERE;
    if (device >= 0)
        d.field_mask |= CASK_TASK_DEVICE;
    d.kernel = kern;
    d.access = acc;
    d.naccess = nacc;
    d.args = args;
    d.args_size = args_size;
    d.priority = priority;
    d.name = name;
    d.where = where;
    d.device = device;
    return d;
}

/* Observation rows per task when --chunk is not given: about 8 tasks per CPU worker, or
 * 16 per GPU (4 streams x 2, so copies overlap compute), at least 1024 rows, a multiple
 * of 256, and small enough that a chunk's buffers stay under 256 MiB. */
static inline int64_t knn_default_chunk(int64_t n, int64_t ref_chunks, int obs_f64,
                             const cask_runtime_info *info)
{
    int64_t tasks = info->ngpus > 0 ? 16 * (int64_t)info->ngpus
                                    : 8 * (int64_t)(info->ncpu_workers > 0
                                                        ? info->ncpu_workers : 1);
    int64_t c = (n + tasks - 1) / tasks;
    int64_t row_bytes = 2 * (obs_f64 ? 8 : 4) + 8 +
                        (ref_chunks > 1 ? ref_chunks * (int64_t)sizeof(cask_knn_best) : 0);
    int64_t cap = ((int64_t)256 << 20) / row_bytes;
    if (c < 1024)
        c = 1024;
    if (c > cap)
        c = cap;
    c = (c + 255) / 256 * 256;
    return c < n ? c : n;
}

/* Default reference chunk of the K-nearest kernels (k > 1 or a pruned search): 2048
 * tiles of 64 (KNN_SORT_MAX_TILES), what a GPU orders at most per chunk. */
#define KNN_PRUNE_REF_CHUNK ((int64_t)1 << 17)

/* The chunk sizes of a search of n observations (one process's share, or a window of a
 * streamed run) against m references, as cask-knn chooses them when --chunk and
 * --ref-chunk (chunk_opt, ref_chunk_opt; 0: not given) leave it to it. maybe_k: the
 * K-nearest kernels may be used (k > 1, pruned, or auto). *chunk: for the brute force;
 * *pchunk: for a pruned search (a GPU prefers 8 chunks per GPU to 16: denser observation
 * tiles and fewer ordering passes). */
static inline void knn_plan_sizes(int64_t n, int64_t m, int obs_f64, int k, int maybe_k,
                                  int brute_only, int64_t chunk_opt, int64_t ref_chunk_opt,
                                  const cask_runtime_info *info, int64_t *ref_chunk,
                                  int64_t *chunk, int64_t *pchunk)
{
    *ref_chunk = ref_chunk_opt ? ref_chunk_opt
                 : maybe_k && m > KNN_PRUNE_REF_CHUNK ? KNN_PRUNE_REF_CHUNK : m;
    int64_t nrefc = (m + *ref_chunk - 1) / *ref_chunk;
    *chunk = chunk_opt ? chunk_opt : knn_default_chunk(n, nrefc, obs_f64, info);
    /* K results per row: keep a chunk's buffers under 256 MiB */
    int64_t kcap = ((int64_t)256 << 20) / ((int64_t)k * (8 + (nrefc > 1 ? 16 : 0)) + 20 + 16);
    if (!chunk_opt && k > 1 && *chunk > kcap)
        *chunk = kcap / 256 * 256 > 1024 ? kcap / 256 * 256 : 1024;
    *pchunk = *chunk;
    if (!chunk_opt && info->ngpus > 0 && !brute_only) {
        *pchunk = *chunk * 2 > n ? n : *chunk * 2;
        if (k > 1 && *pchunk > kcap)
            *pchunk = *chunk;
    }
}

#endif
