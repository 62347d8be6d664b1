/* cask/data.h: data handles, the chunks of memory that tasks read and write. */
#ifndef CASK_DATA_H
#define CASK_DATA_H

#include <stddef.h>
#include "cask/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A chunk of bytes known to the runtime. It may have a valid copy (replica) in host
 * memory and on any GPU at once; the runtime moves it where tasks need it. Opaque. */
typedef struct cask_data cask_data;

typedef enum cask_access_mode {
    CASK_READ = 1,
    CASK_WRITE = 2,        /* the task overwrites all of it: old content is not moved */
    CASK_RW = 3
} cask_access_mode;

/* Registers existing host memory (bytes long, not copied) as a data handle. The caller
 * keeps ownership of host_ptr and must keep it valid until cask_data_destroy, which
 * leaves the latest content there. Between graphs, read or change it only inside
 * cask_data_acquire/release. Errors: CASK_ERR_INVALID (NULL, 0 bytes), CASK_ERR_NOMEM.
 * Thread safe. */
cask_status cask_data_register(cask_runtime *rt, void *host_ptr, size_t bytes,
                               cask_data **out);

/* Registers existing memory of GPU gpu (the runtime's GPU index, which is the CUDA
 * device ordinal; for a simulated GPU, host memory) as a data handle whose only valid
 * replica is that memory: tasks on that GPU use it in place, others get copies. Not
 * copied, never freed or evicted by cask: the caller keeps ownership of dev_ptr and
 * must keep it valid until cask_data_destroy, which writes nothing back to it (the
 * handle is for memory tasks only read: a task writing it leaves the latest content
 * where it ran, not necessarily in dev_ptr). Errors: CASK_ERR_INVALID (NULL, 0 bytes,
 * no GPU gpu in the runtime), CASK_ERR_NOMEM. Thread safe. */
cask_status cask_data_register_device(cask_runtime *rt, void *dev_ptr, size_t bytes, int gpu,
                                      cask_data **out);

/* Creates a handle whose memory the runtime allocates where it is first written (host
 * or GPU), so a chunk produced and consumed on a GPU never touches the host. Content is
 * undefined until written. Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. Thread safe. */
cask_status cask_data_create(cask_runtime *rt, size_t bytes, cask_data **out);

/* Names the handle for error messages, traces and graph pictures (copied, 63 chars). */
cask_status cask_data_set_name(cask_data *d, const char *name);

/* Write-back: when on, each time a task on a GPU writes d, the runtime copies the new
 * content to host memory as soon as the task finishes (overlapping other work), and the
 * graph finishes only when that copy has. For results the host needs right after the
 * graph. Default off. Not while a graph using d runs (CASK_ERR_BUSY). */
cask_status cask_data_set_writeback(cask_data *d, int on);

/* Size in bytes. */
cask_status cask_data_size(const cask_data *d, size_t *bytes);

/* Makes the latest content valid in host memory and returns a pointer to it. mode
 * CASK_READ leaves GPU replicas valid; CASK_WRITE/CASK_RW invalidates them. Fails with
 * CASK_ERR_BUSY if a submitted graph that uses d has not finished (wait for it first),
 * CASK_ERR_STATE if already acquired. Must be paired with cask_data_release. */
cask_status cask_data_acquire(cask_data *d, cask_access_mode mode, void **host_ptr);

/* Ends an acquire; the pointer is no longer valid for a runtime-allocated handle. */
cask_status cask_data_release(cask_data *d);

/* Flushes the latest content to the registered host memory (if any) and frees all
 * replicas. CASK_ERR_BUSY if a running graph uses it. d may be NULL. */
cask_status cask_data_destroy(cask_data *d);

#ifdef __cplusplus
}
#endif
#endif
