/* tests/sim_load.h: a GPU workload on simulated GPUs (CASK_SIM_GPUS), for what dynamic
 * placement buys when one GPU is slowed (CASK_SIM_GPU_SLOW): used by tests/test_sim_slow.c
 * and the TSan run's tests/tsan/sim_gpus.c (bench-sim-gpus, retired, measured it:
 * bench/RESULTS.md, section 14).
 *
 * The graph has `waves` waves of `per_wave` tasks; each task reads a 64 KiB chunk of its
 * own from host memory and takes task_us of device time at full speed (it sleeps, so
 * that timings hold on a loaded machine), and each
 * wave after the first waits for a join task of the previous one (an iterative solver's
 * shape; one wave is a bag of chunks, as bench-knn's search). With split == NULL cask
 * places the tasks; with split, task i of a wave is bound to its GPU by a static split
 * of per_wave in the given shares (the hand-partitioned baseline). */
#ifndef CASK_TESTS_SIM_LOAD_H
#define CASK_TESTS_SIM_LOAD_H

#include <stddef.h>
#include <stdint.h>

#define SIM_LOAD_MAX_GPUS 16

typedef struct sim_load_cfg {
    int ngpu;              /* simulated GPUs, 2..16 */
    int waves;             /* >= 1 */
    int per_wave;          /* tasks per wave, >= 1 */
    int task_us;           /* device time of one task at full speed */
    const double *split;   /* NULL: cask places tasks; else ngpu shares (static split) */
    const char *slow;      /* CASK_SIM_GPU_SLOW for the run, NULL: none */
} sim_load_cfg;

typedef struct sim_load_result {
    double seconds;                          /* submit to wait */
    int64_t tasks[SIM_LOAD_MAX_GPUS];        /* tasks each GPU ran */
    uint64_t steals[SIM_LOAD_MAX_GPUS];      /* of which taken from another GPU's queue */
} sim_load_result;

/* Runs the workload once, on a runtime of its own (started and shut down here, so that
 * a slow window counts from this run's start). Sets and restores CASK_SIM_GPU_SLOW:
 * not thread safe. Returns 0, or -1 with a message in err. */
int sim_load_run(const sim_load_cfg *c, sim_load_result *res, char *err, size_t errlen);

/* Median of x[0..n-1] (reorders x). */
double sim_load_median(double *x, int n);

#endif
