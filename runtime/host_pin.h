/* host_pin.h (internal): page-locked host memory for the GPUs' copies (device.c's
 * device_host_alloc). Blocks of HOST_PIN_MIN bytes and more are anonymous mappings of
 * transparent huge pages, filled on the allocating thread and then registered with CUDA
 * (cudaHostRegister); smaller ones come from cudaHostAlloc. On the H200 host, 384 MiB took
 * 0.14-0.20 s by cudaHostAlloc, all of it inside the driver (CUDA calls of other threads,
 * a GPU search's included, wait meanwhile), and 0.08-0.10 s this way, of which the
 * registration is 8-11 ms and the rest the kernel's zeroing of the pages; freeing 7-9 ms
 * against 36-48 (bench/RESULTS.md, sections 38 and 39). Where the kernel gives no huge
 * pages (transparent_hugepage "never"), huge pages are off (cask_config.huge_pages,
 * CASK_HUGE_PAGES=0) or CASK_PINNED_HUGE=0 (device.c), every block comes from
 * cudaHostAlloc.
 * Thread safe. */
#ifndef CASK_RUNTIME_HOST_PIN_H
#define CASK_RUNTIME_HOST_PIN_H

#include <stddef.h>
#include "cask/cask.h"

#define HOST_PIN_MIN ((size_t)8 << 20)

/* How blocks are locked and unlocked: CUDA's (host_pin_create's ops NULL), or a test's. */
typedef struct host_pin_ops {
    int (*lock)(void *p, size_t len);          /* cudaHostRegister; 0: done */
    void (*unlock)(void *p);                   /* cudaHostUnregister */
    int (*alloc)(void **p, size_t bytes, char *msg, size_t msglen);   /* cudaHostAlloc */
    void (*free)(void *p);                     /* cudaFreeHost */
} host_pin_ops;

typedef struct host_pin host_pin;

/* huge: map large blocks (if the kernel gives huge pages); ops NULL: CUDA's. NULL if out
 * of memory or, with ops NULL, built without CUDA. */
host_pin *host_pin_create(int huge, const host_pin_ops *ops);
/* Forgets the registry; blocks still allocated stay valid until the process ends. */
void host_pin_destroy(host_pin *hp);
/* Whether blocks of HOST_PIN_MIN bytes and more are mapped and registered. */
int host_pin_maps(const host_pin *hp);
/* A page-locked block of at least bytes, 64-byte aligned (2 MiB from HOST_PIN_MIN on when
 * mapped): CASK_ERR_NOMEM (message in msg) if none can be had. */
cask_status host_pin_alloc(host_pin *hp, size_t bytes, void **out, char *msg, size_t msglen);
/* Frees a block of host_pin_alloc (NULL: nothing). */
void host_pin_free(host_pin *hp, void *p);

#endif
