/* bench/xport_gpu_diag.h: what the fixed cost of a GPU transfer between two processes
 * is made of (bench-xport --gpu with CASK_BENCH_GPU_TIMELINE=1; bench/xport_gpu_diag.c). */
#ifndef CASK_BENCH_XPORT_GPU_DIAG_H
#define CASK_BENCH_XPORT_GPU_DIAG_H

#include <stddef.h>
#include "transport/bootstrap.h"
#include "transport/ucx.h"

/* Stamps of the latency loop by ping k (rank 0: PING_SEND, PING_DONE, PONG_RTS,
 * PONG_LAND; rank 1: PING_RTS, PING_POSTED, PING_LAND, PONG_SEND) and of the bandwidth
 * loop (rank 0: BW_START; rank 1: BW_RTS and BW_LAND by message). */
enum { TL_PING_SEND, TL_PING_RTS, TL_PING_POSTED, TL_PING_LAND, TL_PING_DONE, TL_PONG_SEND,
       TL_PONG_RTS, TL_PONG_LAND, TL_BW_START, TL_BW_RTS, TL_BW_LAND, TL_N };
enum { TL_MAX = 300 };

/* Collective: rank 0 prints the median of each step of the ping-pong of len bytes. */
void xgd_timeline_report(xport_boot *boot, int rank, size_t len, int iters,
                         double ts[TL_N][TL_MAX]);
/* Collective: rank 0 prints when the bandwidth loop's messages arrived and landed. */
void xgd_bw_report(xport_boot *boot, int rank, size_t len, long nmsg, double dt,
                   double ts[TL_N][TL_MAX]);
/* Collective, once: GPU operations in two processes on one GPU taking turns (a 4-byte
 * cudaMemsetAsync and a stream synchronize, then a host message to the other) against
 * host messages alone and against the same turns between two streams of one process;
 * the latency of cudaLaunchHostFunc and the cost of cudaEventQuery. x connected, with
 * the handler ids id0 and id0 + 1 free. */
void xgd_context_turns(xport_boot *boot, xport_ucx *x, int rank, unsigned id0);

#endif
