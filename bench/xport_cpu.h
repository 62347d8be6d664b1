/* bench/xport_cpu.h: bench-xport --cpu (bench/xport_cpu.c). */
#ifndef CASK_BENCH_XPORT_CPU_H
#define CASK_BENCH_XPORT_CPU_H

#include <stddef.h>
#include "transport/bootstrap.h"
#include "xport_emit.h"

/* Collective on the two ranks of boot: what a message of host data costs through cask's
 * UCX transport, rank 0 to rank 1, 8 KiB to 1 MiB: the CPU time of both processes
 * (user + system, every thread) per message over a one-way stream, and its wall time.
 * Neither side spins while it waits (naps of 100 us), so on a machine shared with other
 * work the CPU figure still says what the transport spends. Prints a table on rank 0. */
void xport_cpu_bench(xport_boot *boot, int quick, xport_emit_fn emit);

#endif
