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

#endif
