/* runtime/phases.h (internal): how long each step of a process's start-up and shutdown
 * took (loading, the runtime, joining a job: bootstrap, UCX, the handshakes; leaving it;
 * stopping the runtime). The runtime keeps one record; cask_init, cask_dist_init,
 * cask_dist_finalize and the UCX transport fill it from the thread that calls them, and
 * cask_shutdown prints it as one line on stderr with CASK_STATS=1 (phases_print). */
#ifndef CASK_RUNTIME_PHASES_H
#define CASK_RUNTIME_PHASES_H

#include <stdint.h>
#include <stdio.h>

typedef enum runtime_phase {
    PHASE_LOAD,          /* exec to cask_init: the program and its libraries loaded, the
                            libraries' constructors, the program's own code before it */
    PHASE_INIT,          /* cask_init as a whole, and its parts: */
    PHASE_TOPOLOGY,      /*   hwloc */
    PHASE_DEVICES,       /*   GPUs counted and opened (CUDA) */
    PHASE_WORKERS,       /*   worker threads made and started */
    PHASE_JOIN,          /* cask_dist_init as a whole, and its parts: */
    PHASE_BOOT,          /*   the launcher's or the files' bootstrap */
    PHASE_UCX_CONTEXT,   /*   UCX loaded (the first time), ucp_init (its transports and
                              memory domains) */
    PHASE_UCX_WORKER,    /*   ucp_worker_create and its address */
    PHASE_ADDRESSES,     /*   the addresses exchanged through the bootstrap (waits for
                              the slowest rank to get this far) */
    PHASE_WIREUP,        /*   one endpoint to every rank (ucp_ep_create) */
    PHASE_HELLO,         /*   the progress thread started, every rank's HELLO heard: the
                              peers' liveness set up */
    PHASE_NCCL,          /*   agreeing on NCCL (and making its communicator) */
    PHASE_ROUTES,        /*   the routes of GPU chunks agreed */
    PHASE_BARRIER,       /* the first cask_dist_barrier */
    PHASE_LEAVE,         /* cask_dist_finalize as a whole, and its parts: */
    PHASE_GRAPHS,        /*   graphs destroyed, NCCL and the balancer stopped */
    PHASE_GOODBYE,       /*   LEAVE announced, every rank's goodbye heard, the progress
                              thread stopped */
    PHASE_ENDPOINTS,     /*   requests cancelled, endpoints closed */
    PHASE_UCX_TEARDOWN,  /*   ucp_worker_destroy, ucp_cleanup, segments unmapped */
    PHASE_BOOT_BARRIER,  /*   the bootstrap's last barrier (every rank leaves together) */
    PHASE_SHUTDOWN,      /* cask_shutdown up to the printing: workers joined, memory and
                            devices released */
    PHASE_COUNT
} runtime_phase;

typedef struct runtime_phases {
    uint64_t ns[PHASE_COUNT];
    int rank, size;      /* of the job joined last (0 of 1: none) */
    int joined;          /* cask_dist_init ran (else the join's phases are not printed) */
} runtime_phases;

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t phases_now_ns(void);

/* Nanoseconds since this process was exec'd (the kernel's start time, kept in clock
 * ticks: a 10 ms resolution where HZ is 100); 0 if unknown. */
uint64_t phases_since_exec_ns(void);

/* One line: "cask: rank R/P start-up and shutdown (ms): load .. | init .. (topology ..
 * devices .. workers ..) | join .. (boot .. ...) | barrier .. | leave .. (...) |
 * shutdown ..". */
void phases_print(FILE *f, const runtime_phases *p);

#endif
