/* config.h: resolving a cask_config against the environment and defaults. */
#ifndef CASK_RUNTIME_CONFIG_H
#define CASK_RUNTIME_CONFIG_H

#include "cask/runtime.h"
#include "runtime/sim_slow.h"

/* The configuration in force: every field decided. */
typedef struct config_resolved {
    int ncpu;              /* -1: decide from cores and GPUs */
    int ngpu;              /* -1: all */
    cask_sched_policy sched;
    size_t gpu_mem_limit;  /* 0: 90% of free */
    cask_log_level log_level;
    int bind;
    int sim_gpus;
    sim_slow sim_slow[SIM_SLOW_MAX];   /* CASK_SIM_GPU_SLOW */
    int nsim_slow;
    int gpu_streams;
    char trace_path[512];
    char dashboard[128];   /* "" none, else HOST:PORT or PORT */
    int stats;
    int progress;          /* 1, 0, or -1: when stderr is a terminal */
    size_t host_mem_limit; /* 0: none (no spilling) */
    char spill_dir[512];   /* base folder of spill files */
    size_t host_cache_limit; /* (size_t)-1: a quarter of physical memory */
    int huge_pages;
    int graph_replay;      /* replay recomputed GPU graphs (graph_replay.h): 1, 0, or -1
                              (not asked: on real GPUs, off on simulated ones) */
} config_resolved;

/* Fills *out from cfg (may be NULL), then CASK_* environment variables, then defaults.
 * On a bad environment value writes a message to err and returns CASK_ERR_INVALID. */
cask_status config_resolve(const cask_config *cfg, config_resolved *out, char *err, size_t errlen);

/* Parses "123", "64K", "2M", "1G" (binary units). Returns 0 on success. */
int config_parse_size(const char *s, size_t *out);

#endif
