/* perf_data.h (internal): what the cost model (perfmodel.c) keeps per kernel:
 * the measured time of one task on each kind of worker, per footprint (the sizes of the
 * task's buffers, as StarPU's history models key theirs). A kernel holds a few such
 * slots; the scheduler fills and reads them, the runtime stores them in the kernel and
 * keeps them between runs (perf_file.c). Plain data, relaxed atomics. */
#ifndef CASK_RUNTIME_PERF_DATA_H
#define CASK_RUNTIME_PERF_DATA_H

#include <stdatomic.h>
#include <stdint.h>

#define PERF_SLOTS 8
enum { PERF_CPU = 0, PERF_GPU = 1, PERF_KINDS = 2 };

typedef struct perf_slot {
    _Atomic uint64_t fp;              /* footprint; 0: free */
    _Atomic uint64_t bytes;           /* the buffers' total size (regression across sizes) */
    _Atomic uint64_t ns[PERF_KINDS];  /* mean time of one task, 0: none yet */
    _Atomic uint32_t n[PERF_KINDS];   /* samples learnt */
    _Atomic uint32_t trial[PERF_KINDS]; /* calibration tasks sent there, not yet timed */
    _Atomic uint64_t used;            /* last use (replacement of the oldest slot) */
} perf_slot;

typedef struct perf_table {
    perf_slot slot[PERF_SLOTS];
} perf_table;

#endif
