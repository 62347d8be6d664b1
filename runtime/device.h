/* device.h (internal): the GPUs as the runtime uses them: memory, streams, events and
 * copies, over CUDA or over a simulation in host memory (for tests without a GPU).
 * Every CUDA error becomes a cask_status with a message naming the call. */
#ifndef CASK_RUNTIME_DEVICE_H
#define CASK_RUNTIME_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include "runtime/runtime.h"

typedef struct device_set device_set;

enum { DEV_STREAM_H2D = 0, DEV_STREAM_D2H = 1, DEV_STREAM_PEER = 2, DEV_STREAM_COMPUTE = 3 };

/* Number of CUDA devices (0 without CUDA or driver). */
cask_status device_count(int *n);
cask_status device_open(cask_runtime *rt, int ngpu, int sim, device_set **out);
void device_close(device_set *ds);
int device_is_sim(const device_set *ds);
int device_streams(const device_set *ds);    /* compute streams per GPU */

/* Makes gpu current for the calling thread. */
cask_status device_use(device_set *ds, int gpu);
/* Free and total memory of a GPU. */
cask_status device_mem_info(device_set *ds, int gpu, size_t *free_b, size_t *total_b);

cask_status device_malloc(device_set *ds, int gpu, size_t bytes, void **out);
void device_free(device_set *ds, int gpu, void *p);
cask_status device_host_alloc(device_set *ds, size_t bytes, void **out);
void device_host_free(device_set *ds, void *p);

/* A stream of gpu: DEV_STREAM_H2D/D2H/PEER, or DEV_STREAM_COMPUTE + i, i < device_streams;
 * i == device_streams is the side stream, for the tasks of kernels flagged
 * CASK_KERNEL_SIDE_STREAM (they must not wait behind kernels queued on a compute stream),
 * i == device_streams + 1 the urgent stream, for the top-priority tasks of kernels
 * flagged CASK_KERNEL_URGENT_STREAM (a CUDA stream priority above the compute streams',
 * below the copies'), i == device_streams + 2 the side stream to the host, for the side
 * tasks of kernels flagged CASK_KERNEL_SIDE_TO_HOST too (beside the first side stream's
 * copies to the GPU). */
enum { DEV_EXTRA_STREAMS = 3 };   /* per GPU past the compute streams: side, urgent, to host */
void *device_stream(device_set *ds, int gpu, int which);

/* Events. An event belongs to the GPU it was created on and may be recorded only on
 * that GPU's streams; any stream may wait on it. */
cask_status device_event_create(device_set *ds, int gpu, void **ev);
void device_event_destroy(device_set *ds, void *ev);
/* A timing event (for traces): device_event_elapsed_ns gives ns from a to b. */
cask_status device_event_create_timed(device_set *ds, int gpu, void **ev);
cask_status device_event_elapsed_ns(device_set *ds, void *a, void *b, int64_t *ns);
cask_status device_event_record(device_set *ds, void *ev, void *stream);
/* 1 complete, 0 pending; CASK_ERR_CUDA as a negative value on error. */
int device_event_done(device_set *ds, void *ev);
cask_status device_event_sync(device_set *ds, void *ev);
cask_status device_stream_wait(device_set *ds, void *stream, void *ev);
cask_status device_stream_sync(device_set *ds, void *stream);

/* Copies between memory nodes (0 host, 1+g GPU g). With a stream, asynchronous on it
 * (which must belong to the GPU issuing the copy); without, synchronous. */
cask_status device_copy(device_set *ds, void *dst, int dst_node, const void *src, int src_node,
                        size_t bytes, void *stream);


#endif
