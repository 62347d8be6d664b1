/* stream_io.h: the reads and writes of a streamed run (stream.c), on threads of their
 * own, so that they overlap the search instead of taking turns with it:
 *
 *   reader  reads window w into slot w % nslots as soon as that slot's previous window
 *           (w - nslots) was written, so up to nslots - 1 windows ahead of the search
 *           (--read-ahead + 1), each window in `threads` parallel preads (page-cache
 *           copies and the values' checks take a core each), and tells the kernel to
 *           fetch the window after it (POSIX_FADV_WILLNEED) for a file not yet cached;
 *   writer  writes window w's results as soon as its search is done, .npy rows at their
 *           offsets in `threads` parallel pwrites, CSV in order; then starts the
 *           writeback of those bytes to the disk at once (sync_file_range WRITE) and
 *           waits for the writeback of the window two before. So the disk writes from
 *           the first window on, as dd does, instead of when the kernel's dirty limits
 *           force it, the final fdatasync finds little left, and dirty pages stay
 *           bounded by a few windows.
 *
 * The search, on the caller's thread, only waits for window w to be read
 * (stream_io_wait_read) and hands its results over (stream_io_computed). Memory is the
 * nslots slots, which the reader allocates as it first fills them (slot_alloc: pinned
 * memory takes time to get, better spent beside the search than before it): nothing
 * here grows with the rows. */
#ifndef KNN_STREAM_IO_H
#define KNN_STREAM_IO_H

#include <stdint.h>
#include "knn_graph.h"
#include "stream.h"

/* A window's buffers and the search graph built on them. */
typedef struct stream_slot {
    knn_points obs;      /* room for `window` rows */
    int32_t *index;      /* window x k */
    float *dist;
    knn_job *job;
    int64_t job_rows;    /* rows the job was built for (0: none) */
} stream_slot;

typedef struct stream_io_cfg {
    cask_runtime *rt;          /* CSV results (k = 1) are formatted by its tasks */
    const knn_stream_cfg *c;
    stream_slot *slots;        /* nslots >= 2 */
    int nslots;
    int64_t rows, window;      /* rows of the run, rows a window */
    int64_t base;              /* file row of the run's row 0 */
    int64_t npy_off;           /* .npy output: where row 0 goes; -1: CSV, in order */
    int threads;               /* parallel reads / .npy writes of one window (>= 1) */
    int (*slot_alloc)(void *ctx, stream_slot *sl);   /* a slot's buffers, by the reader
                                * before it first fills one without (obs.data NULL);
                                * nonzero: out of memory */
    void *slot_ctx;
} stream_io_cfg;

typedef struct stream_io stream_io;

/* Starts the reader and writer threads. CASK_ERR_NOMEM (message in err) if they cannot
 * be had. cfg is copied; what it points to must outlive stream_io_finish. */
cask_status stream_io_start(const stream_io_cfg *cfg, stream_io **out, char *err,
                            size_t errlen);

/* Blocks until window w is in its slot. A failed read or write (of any window) is
 * returned instead, its message in err; the run must then finish. Adds the time waited
 * to *waited. Caller's thread only. */
cask_status stream_io_wait_read(stream_io *io, int64_t w, double *waited, char *err,
                                size_t errlen);

/* Window w's results are in its slot (and its observations no longer needed by the
 * search): the writer may write them and then give the slot to the reader. Windows are
 * handed over in order. */
void stream_io_computed(stream_io *io, int64_t w);

/* Ends the run. ok: waits until every window handed over was written (the time waited
 * added to *waited); else stops the reader and the writer after their current window.
 * Returns the first failure of a read or write (message in err), else CASK_OK. Frees io. */
cask_status stream_io_finish(stream_io *io, int ok, double *waited, char *err, size_t errlen);

#endif
