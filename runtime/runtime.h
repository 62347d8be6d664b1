/* runtime.h (internal): the runtime object that owns every part of a cask instance. */
#ifndef CASK_RUNTIME_RUNTIME_H
#define CASK_RUNTIME_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "cask/cask.h"
#include "runtime/config.h"
#include "runtime/topology.h"
#include "runtime/lib_call.h"
#include "runtime/arena.h"
#include "runtime/host_cache.h"
#include "runtime/phases.h"

#define CASK_ERRMSG_LEN 1024
#include "runtime/perf_data.h"
#define CASK_MAX_GPUS 16
#define CASK_MAX_NODES (CASK_MAX_GPUS + 1)   /* memory node 0 = host, 1+g = GPU g */

struct sched;
struct device_set;
struct mem_manager;
struct trace_state;
struct dash_live;
struct dashboard;
struct spill_state;

struct cask_kernel {
    struct cask_kernel *next;   /* runtime's list, freed at shutdown */
    char *name;
    cask_kernel_fn cpu;
    cask_kernel_fn cuda;
    uint32_t flags;
    uint32_t id;
    uint32_t where_any;         /* CASK_WHERE_* a task given no placement may use (the
                                   rules of graph.c's task_placement); 0: none */
    /* estimated service time of one task on each GPU (gpu_commit.c), 0 unknown,
       and the last sample it learnt from (written by that GPU's worker only) */
    _Atomic uint64_t gpu_ns[CASK_MAX_GPUS];
    _Atomic uint64_t gpu_last_ns[CASK_MAX_GPUS];
    /* measured times per footprint and worker kind (perfmodel.c), for kernels
       with CASK_KERNEL_COST_MODEL */
    perf_table perf;
};

struct cask_runtime {
    config_resolved cfg;
    cask_log_level log_level;
    struct timespec start_time;
    topology topo;
    int ncpu;                       /* CPU workers */
    int ngpu;                       /* GPU workers (real or simulated) */
    int sim;                        /* GPUs are simulated */
    struct device_set *dev;         /* NULL without GPUs */
    struct sched *sched;
    struct trace_state *trace;      /* NULL unless tracing */
    struct mem_manager *mem;        /* GPU memory pools; NULL without GPUs */
    struct dash_live *live;         /* the dashboard's counters; NULL without one */
    struct dashboard *dash;         /* its server (runtime/dashboard.c) */
    struct spill_state *spill;      /* host memory limit and spill files; NULL: no limit */
    host_cache hcache;              /* freed host chunk memory kept for reuse */
    lib_caller libcall;             /* calls into threaded libraries (lib_call.h) */
    int libcall_inited;

    pthread_mutex_t lock;           /* kernels, data list, graph list */
    cask_kernel *kernels;
    uint32_t nkernels;
    struct cask_data *data_list;    /* registered handles, for shutdown */
    int ngraphs_running;
    pthread_cond_t graphs_cond;

    arena_pool graph_pool;          /* arena blocks of destroyed graphs, for new ones */
    struct cask_graph *graphs;      /* every graph not destroyed (rt->lock) */
    struct cask_graph *open_graphs; /* submitted, not yet waited (rt->lock): shutdown
                                       ends their submission */
    int strong_fence;               /* no membarrier: completions fence (graph_dynamic.c) */
    cask_kernel *replay_kernel;     /* the stand-in of replayed graphs (graph_replay.c),
                                       registered on first use (rt->lock) */

    runtime_phases phases;          /* start-up and shutdown times (CASK_STATS=1) */
    char *perf_path;                /* CASK_PERFMODEL: the cost model's file (perf_file.h) */
    struct perf_saved *perf_saved;  /* what it held, for kernels not yet registered */
    int nperf_saved;

    pthread_mutex_t error_lock;
    char error[CASK_ERRMSG_LEN];
};

static inline cask_log_level runtime_log_level(const cask_runtime *rt)
{
    return rt->log_level;
}

#endif
