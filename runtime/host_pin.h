/* host_pin.h (internal): page-locked host memory for the GPUs' copies (device.c's
 * device_host_alloc). Blocks of HOST_PIN_MIN bytes and more are anonymous mappings of
 * transparent huge pages, filled on the allocating thread and then registered with CUDA
 * (cudaHostRegister); smaller ones come from cudaHostAlloc. On the H200 host, 384 MiB took
 * 0.14-0.20 s by cudaHostAlloc, all of it inside the driver (CUDA calls of other threads,
 * a GPU search's included, wait meanwhile), and 0.08-0.10 s this way, of which the
 * registration is 8-11 ms and the rest the kernel's zeroing of the pages; freeing 7-9 ms
 * against 36-48 (bench/RESULTS.md, section 38). Where the kernel gives no huge pages
 * (transparent_hugepage "never") or CASK_HOST_PIN=alloc, every block comes from
 * cudaHostAlloc. Thread safe. */
#ifndef CASK_RUNTIME_HOST_PIN_H
#define CASK_RUNTIME_HOST_PIN_H

#include <stddef.h>
#include "cask/cask.h"

#define HOST_PIN_MIN ((size_t)8 << 20)

typedef struct host_pin host_pin;

/* NULL if out of memory (the caller then uses cudaHostAlloc alone). */
host_pin *host_pin_create(void);
/* Forgets the registry; blocks still allocated stay valid until the process ends. */
void host_pin_destroy(host_pin *hp);
/* A page-locked block of at least bytes, 64-byte aligned (2 MiB from HOST_PIN_MIN on), as
 * cudaHostAllocPortable gives: CASK_ERR_NOMEM (message in msg) if none can be had. */
cask_status host_pin_alloc(host_pin *hp, size_t bytes, void **out, char *msg, size_t msglen);
/* Frees a block of host_pin_alloc (NULL: nothing). */
void host_pin_free(host_pin *hp, void *p);

#endif
