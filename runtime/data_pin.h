/* runtime/data_pin.h (internal): a handle's replica on one GPU, allocated now and
 * pinned there (never evicted, its address stable until unpinned), so that a transport
 * can write into it at any time: the distributed layer's GPU landing buffers
 * (distributed/dist_gpux.c), which UCX fills by cuda_ipc, so that its IPC mapping cache keeps
 * hitting run after run. */
#ifndef CASK_RUNTIME_DATA_PIN_H
#define CASK_RUNTIME_DATA_PIN_H

#include "cask/cask.h"

/* Allocates d's replica on GPU gpu (runtime memory; not made valid) unless it has one,
 * pins it, and returns its device address in *ptr (host memory for a simulated GPU).
 * Pins nest.
 * Errors: CASK_ERR_INVALID (no such GPU), CASK_ERR_NOMEM/BUSY (no room), CASK_ERR_CUDA. */
cask_status data_pin_gpu(cask_data *d, int gpu, void **ptr);
/* Undoes one data_pin_gpu (the replica is evictable again; it stays allocated). */
void data_unpin_gpu(cask_data *d, int gpu);

#endif
