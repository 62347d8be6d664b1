/* bench/xport_gpu.h: bench-xport --gpu (bench/xport_gpu.c). */
#ifndef CASK_BENCH_XPORT_GPU_H
#define CASK_BENCH_XPORT_GPU_H

#include <stddef.h>
#include "transport/bootstrap.h"
#include "xport_emit.h"

/* Collective on the two ranks of boot: GPU to GPU through cask's UCX transport, the
 * host-staged path and an in-process cudaMemcpy D2D (and cudaMemcpyPeer to the next GPU
 * where rank 0 sees two), 8 KiB to 256 MiB (64 MiB quick). */
void xport_gpu_bench(xport_boot *boot, int quick, xport_emit_fn emit);

#endif
