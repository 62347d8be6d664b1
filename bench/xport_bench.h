/* bench/xport_bench.h: what bench-xport's parts share (bench/xport.c drives them). */
#ifndef CASK_BENCH_XPORT_BENCH_H
#define CASK_BENCH_XPORT_BENCH_H

#include <stddef.h>
#include "transport/bootstrap.h"

/* How a part hands a figure to the table and JSON lines of bench/xport.c: metric (e.g.
 * "MiB/s"), the path measured, the message size, the value. */
typedef void (*xport_emit_fn)(const char *metric, const char *path, size_t bytes, double value);

/* --cpu (bench/xport_cpu.c). Collective on the two ranks of boot: what a message of host
 * data costs through cask's UCX transport, rank 0 to rank 1, 8 KiB to 1 MiB: the CPU time
 * of both processes (user + system, every thread) per message over a one-way stream, and
 * its wall time. Neither side spins while it waits (naps of 100 us), so on a machine
 * shared with other work the CPU figure still says what the transport spends. Prints a
 * table on rank 0. */
void xport_cpu_bench(xport_boot *boot, int quick, xport_emit_fn emit);

/* --gpu (bench/xport_gpu.c). Collective on the two ranks of boot: GPU to GPU through
 * cask's UCX transport, the host-staged path and an in-process cudaMemcpy D2D (and
 * cudaMemcpyPeer to the next GPU where rank 0 sees two), 8 KiB to 256 MiB (64 MiB quick). */
void xport_gpu_bench(xport_boot *boot, int quick, xport_emit_fn emit);

#endif
