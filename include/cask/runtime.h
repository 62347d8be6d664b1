/* cask/runtime.h: starting and stopping the runtime, its configuration, and logging. */
#ifndef CASK_RUNTIME_H
#define CASK_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include "cask/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime: worker threads, devices, memory pools. Opaque. One per process is usual;
 * several may coexist (each with its own threads). */
typedef struct cask_runtime cask_runtime;

/* How a ready GPU task picks its GPU (CPU tasks always go to the releasing worker's
 * deque; every policy lets idle workers steal). */
typedef enum cask_sched_policy {
    CASK_SCHED_WS = 0,       /* round-robin over the GPUs; stealing does the balancing */
    CASK_SCHED_LOCALITY,     /* the GPU holding most of its input bytes, unless its queue
                                is far longer than the shortest (default) */
    CASK_SCHED_EAGER         /* the GPU with the fewest queued tasks, ignoring data */
} cask_sched_policy;

typedef enum cask_log_level {
    CASK_LOG_ERROR = 0, CASK_LOG_WARN, CASK_LOG_INFO, CASK_LOG_DEBUG, CASK_LOG_TRACE
} cask_log_level;

/* Bits of cask_config.field_mask: a field is read only if its bit is set, so that the
 * struct can grow without breaking callers (as UCX's parameter structs do). */
enum cask_config_field {
    CASK_CONFIG_NCPU          = 1u << 0,
    CASK_CONFIG_NGPU          = 1u << 1,
    CASK_CONFIG_SCHED         = 1u << 2,
    CASK_CONFIG_GPU_MEM_LIMIT = 1u << 3,
    CASK_CONFIG_LOG_LEVEL     = 1u << 4,
    CASK_CONFIG_BIND          = 1u << 5,
    CASK_CONFIG_SIM_GPUS      = 1u << 6,
    CASK_CONFIG_GPU_STREAMS   = 1u << 7,
    CASK_CONFIG_TRACE_PATH    = 1u << 8,
    CASK_CONFIG_STATS         = 1u << 9,
    CASK_CONFIG_PROGRESS      = 1u << 10,
    CASK_CONFIG_DASHBOARD     = 1u << 11,
    CASK_CONFIG_HOST_MEM_LIMIT = 1u << 12,
    CASK_CONFIG_SPILL_DIR     = 1u << 13,
    CASK_CONFIG_HOST_CACHE    = 1u << 14,
    CASK_CONFIG_GRAPH_REPLAY  = 1u << 15
};

/* Runtime configuration. For each field: the value given here if its bit is set in
 * field_mask; otherwise the environment variable named; otherwise the default. */
typedef struct cask_config {
    uint64_t field_mask;
    int ncpu;                 /* CPU worker threads. CASK_NCPU. Default: all cores
                                 (minus one per GPU worker when GPUs are used, min 1). */
    int ngpu;                 /* GPUs to use; -1 = all. CASK_NGPU. Default: all. 0 also
                                 turns simulated GPUs off. */
    cask_sched_policy sched;  /* CASK_SCHED=ws|locality|eager. Default: locality. */
    size_t gpu_mem_limit;     /* bytes per GPU cask may allocate; 0 = 90% of free.
                                 CASK_GPU_MEM_LIMIT (suffixes K, M, G). */
    cask_log_level log_level; /* CASK_LOG=error|warn|info|debug|trace. Default: warn. */
    int bind;                 /* pin workers to cores through hwloc. CASK_BIND. Default 1. */
    int sim_gpus;             /* simulated GPUs backed by host memory, running the CPU
                                 implementation: exercises the GPU paths without a GPU
                                 (tests). CASK_SIM_GPUS. Default 0. Ignored if real GPUs
                                 are used. */
    int gpu_streams;          /* compute streams per GPU. CASK_GPU_STREAMS. Default 4. */
    const char *trace_path;   /* write a Chrome/Perfetto JSON trace here at shutdown.
                                 CASK_TRACE. Default: none. Copied. */
    int stats;                /* print per-worker statistics at shutdown. CASK_STATS. */
    int progress;             /* progress bar on stderr while cask_graph_wait waits more
                                 than a second: 1 on, 0 off, -1 when stderr is a
                                 terminal. CASK_PROGRESS=1|0|auto. Default -1. */
    const char *dashboard;    /* serve the live dashboard (docs/observability.md) on
                                 "HOST:PORT" or "PORT" (HOST: an IPv4 address,
                                 127.0.0.1 unless told; PORT 0: any free port; a
                                 taken port: the next free one). CASK_DASHBOARD.
                                 Default: none. Copied. Ignored, with a warning, by a
                                 build without libmicrohttpd. */
    size_t host_mem_limit;    /* bytes of host memory the runtime's own chunk buffers
                                 (handles from cask_data_create) may hold; past it, the
                                 least recently used ones that no running task or acquire
                                 holds are written to files in spill_dir by I/O threads
                                 and read back when needed. Registered user memory is
                                 never spilled and not counted. 0 = no limit, no
                                 spilling. CASK_HOST_MEM_LIMIT (suffixes K, M, G, T). */
    const char *spill_dir;    /* where spill files go: a per-run folder
                                 cask-spill-PID-XXXXXX is made in it, removed at shutdown
                                 (leftovers of dead runs are removed at start). Copied.
                                 CASK_SPILL_DIR. Default: $TMPDIR, else /tmp. */
    size_t host_cache_limit;  /* bytes of freed host chunk memory the runtime keeps to
                                 reuse for later chunks (no page faults, no zeroing).
                                 CASK_HOST_CACHE_LIMIT (suffixes K, M, G, T). Default: a
                                 quarter of physical memory; 0 keeps nothing. */
    int huge_pages;           /* advise transparent huge pages on host chunks of 2 MiB and
                                 more, and make pinned host blocks of 8 MiB and more of
                                 huge pages registered with CUDA rather than by
                                 cudaHostAlloc (CASK_PINNED_HUGE=0 keeps cudaHostAlloc:
                                 runtime/host_pin.h). CASK_HUGE_PAGES. Default 1. */
    int graph_replay;         /* replay the GPU work of a graph computed again as one CUDA
                                 graph (docs/guide.md, "Replaying GPU graphs"): 1 on, 0
                                 off (every run takes the usual path). A graph is replayed
                                 from its second run on (the first says where its tasks
                                 run; the second records), if every task can only run on
                                 a GPU and all ran on one GPU; it is recorded again when
                                 it changes or its data moved. CASK_GRAPH_REPLAY=1|0.
                                 Default: on with real GPUs; off on simulated GPUs,
                                 where 1 makes a replay run the tasks' CPU
                                 implementations in order on the GPU's worker (tests
                                 of the replay path without a GPU). */
} cask_config;

/* Describes a started runtime. */
typedef struct cask_runtime_info {
    int ncpu_workers;   /* CPU worker threads running */
    int ngpus;          /* GPU workers (real or simulated) */
    int simulated_gpus; /* 1 if the GPUs are simulated */
    int ncores;         /* cores hwloc found (where it sees none, e.g. /sys hidden: the
                           CPUs this process may use) */
    int ncores_used;    /* the cores its workers are pinned to: those the process is bound
                           to (all, unless a launcher placed it), or, when the processes of
                           one job share a host unbound, its equal share of them (local rank
                           r of L takes the r-th of L contiguous shares: CASK_LOCAL_RANK/
                           _SIZE, Open MPI's or Slurm's local rank); the default number of
                           CPU workers is this, less one per GPU */
    cask_sched_policy sched;
} cask_runtime_info;

/* Starts a runtime: discovers the topology, starts and pins worker threads, opens GPUs.
 * cfg may be NULL (all defaults/environment). On success *out owns the runtime until
 * cask_shutdown. Errors: CASK_ERR_INVALID (bad config or environment value, message on
 * stderr), CASK_ERR_HWLOC, CASK_ERR_CUDA, CASK_ERR_NOMEM. Thread safe. */
cask_status cask_init(const cask_config *cfg, cask_runtime **out);

/* Waits for running graphs (it does not free them: destroy them after), stops the workers, writes the trace and statistics if asked,
 * and frees everything the runtime owns (kernels, device memory; data handles still
 * registered are flushed back to their host memory and freed). rt may be NULL. Must not
 * be called from a task. */
cask_status cask_shutdown(cask_runtime *rt);

/* Copies the URL of the runtime's live dashboard ("http://127.0.0.1:8787/") into buf
 * (NUL-terminated, truncated to len). Errors: CASK_ERR_NOT_FOUND (no dashboard: none
 * asked for, or cask built without it), CASK_ERR_INVALID (NULL argument). Thread safe. */
cask_status cask_dashboard_url(const cask_runtime *rt, char *buf, size_t len);

/* Fills *info. Thread safe. */
cask_status cask_runtime_query(const cask_runtime *rt, cask_runtime_info *info);

/* Counters of one worker since cask_init (or the last cask_runtime_stats_reset). */
typedef struct cask_worker_stats {
    int kind;                  /* 0 CPU worker, 1 GPU worker */
    int device;                /* GPU index for a GPU worker, -1 otherwise */
    uint64_t tasks_run;
    uint64_t steals;           /* tasks this worker took from another's queue */
    uint64_t steal_attempts;
    uint64_t busy_ns;          /* time spent running (CPU) or with work in flight (GPU) */
    uint64_t idle_ns;          /* time asleep or searching */
    uint64_t bytes_h2d, bytes_d2h, bytes_peer;  /* copies this worker issued */
    uint64_t evictions, spills;                 /* replicas dropped / written back */
} cask_worker_stats;

/* Number of workers (CPU then GPU), for cask_runtime_stats. */
cask_status cask_runtime_nworkers(const cask_runtime *rt, int *n);
/* Copies the counters of workers 0..n-1 into stats[0..n-1] (n from
 * cask_runtime_nworkers). Counters are read without stopping workers: exact once no
 * graph runs. Thread safe. */
cask_status cask_runtime_stats(const cask_runtime *rt, cask_worker_stats *stats, int n);
/* Zeroes all counters. Call only while no graph runs. */
cask_status cask_runtime_stats_reset(cask_runtime *rt);

/* Host memory of the runtime's own chunk buffers and spilling (config host_mem_limit). */
typedef struct cask_host_mem_stats {
    size_t limit;              /* 0: no limit (the rest is then 0) */
    size_t used, peak;         /* counted bytes now, the most at any time */
    uint64_t spill_writes;     /* chunks written to spill files */
    uint64_t spill_reads;      /* chunks read back */
    uint64_t spill_drops;      /* chunks dropped without a write (a copy was elsewhere) */
    uint64_t tasks_deferred;   /* CPU tasks that waited for read-backs off their worker */
} cask_host_mem_stats;

/* Fills *out. Exact once no graph runs. Thread safe. */
cask_status cask_runtime_host_mem(cask_runtime *rt, cask_host_mem_stats *out);

/* Host chunk memory the runtime keeps for reuse: *cached bytes now (pageable and pinned
 * together), *limit the most it keeps (either may be NULL; cask_runtime_host_cache_stats
 * has the rest). Errors: CASK_ERR_INVALID (rt NULL). Thread safe. */
cask_status cask_runtime_host_cache(cask_runtime *rt, size_t *cached, size_t *limit);
/* Returns every kept block to the system (e.g. between phases of a program). Errors:
 * CASK_ERR_INVALID (rt NULL). Thread safe. */
cask_status cask_runtime_host_cache_trim(cask_runtime *rt);

/* The runtime's pool of host chunk memory (config host_cache_limit): the buffers of
 * chunks the runtime allocates itself (cask_data_create, array chunks, host copies of
 * chunks GPUs wrote). Pageable memory serves chunks made on the host; pinned
 * (page-locked) memory only host copies of chunks a GPU wrote, which GPUs read back.
 * Counted: blocks of 64 KiB and more (smaller ones go straight to the C library or the
 * CUDA driver and are not counted); with host_mem_limit set, chunk buffers come from
 * the spilling layer instead (cask_runtime_host_mem) and are not counted here. */
typedef struct cask_host_cache_stats {
    size_t limit;              /* freed bytes kept at most, both kinds together */
    size_t pageable_cached;    /* freed pageable bytes kept for reuse now */
    size_t pageable_live;      /* pageable bytes handed out to chunks now (in use) */
    size_t pageable_peak;      /* the most pageable bytes in use at any time */
    size_t pinned_cached;      /* freed pinned bytes kept for reuse now */
    size_t pinned_live;        /* pinned bytes handed out to chunks now (in use) */
    size_t pinned_peak;        /* the most pinned bytes in use at any time */
    uint64_t hits;             /* requests met from a kept block (no system call) */
    uint64_t misses;           /* requests that took new memory from the system */
} cask_host_cache_stats;       /* bytes are rounded up to the pool's size classes */

/* Fills *out (owned by the caller) with one consistent reading of the host chunk pool,
 * counted since cask_init (cask_runtime_stats_reset leaves it alone; a trim lowers the
 * cached figures only). Thread safe: may be called while graphs run, from any thread,
 * tasks included. Errors: CASK_ERR_INVALID (rt or out NULL; *out is then untouched). */
cask_status cask_runtime_host_cache_stats(cask_runtime *rt, cask_host_cache_stats *out);

/* Allocates host memory suited for fast, asynchronous copies to and from GPUs (pinned
 * when GPUs are in use, plain aligned memory otherwise). Free with cask_host_free.
 * Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. Thread safe. */
cask_status cask_host_alloc(cask_runtime *rt, size_t bytes, void **out);
/* Frees memory from cask_host_alloc. ptr may be NULL. */
cask_status cask_host_free(cask_runtime *rt, void *ptr);

/* Copies the message of the most recent failure seen by this runtime (any thread) into
 * buf (always NUL-terminated, truncated to len). Empty if none. Thread safe. */
cask_status cask_runtime_error(cask_runtime *rt, char *buf, size_t len);

/* Logs through the runtime's logger (stderr, with level and time), if level is enabled. */
void cask_log(cask_runtime *rt, cask_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif
