/* host_pin.c: see host_pin.h. The registry maps each registered block to its length, for
 * host_pin_free; it holds the blocks of HOST_PIN_MIN bytes and more, which are few (window
 * buffers, chunk replicas, matrices), and is searched only when one is freed. */
#include "runtime/host_pin.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20)

typedef struct pin_block {
    void *p;
    size_t len;
} pin_block;

struct host_pin {
    pthread_mutex_t lock;
    int map;              /* 1: large blocks mapped and registered; 0: cudaHostAlloc only */
    pin_block *blocks;
    size_t n, cap;
};

/* Whether the kernel gives transparent huge pages to a mapping that asks for them. */
static int thp_available(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    char line[128] = "";
    int ok = fgets(line, sizeof line, f) && !strstr(line, "[never]");
    fclose(f);
    return ok;
}

host_pin *host_pin_create(void)
{
    host_pin *hp = calloc(1, sizeof *hp);
    if (!hp)
        return NULL;
    pthread_mutex_init(&hp->lock, NULL);
    const char *e = getenv("CASK_HOST_PIN");
    hp->map = !(e && !strcmp(e, "alloc")) && thp_available();
    return hp;
}

void host_pin_destroy(host_pin *hp)
{
    if (!hp)
        return;
    pthread_mutex_destroy(&hp->lock);
    free(hp->blocks);
    free(hp);
}

#ifdef CASK_HAVE_CUDA
/* A mapping of len bytes (a multiple of HUGE_PAGE) aligned to HUGE_PAGE, huge pages
 * advised and every page faulted in here; NULL if none. */
static void *map_filled(size_t len)
{
    size_t span = len + HUGE_PAGE;
    char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > base)
        munmap(base, (size_t)(p - base));
    if (base + span > p + len)
        munmap(p + len, (size_t)(base + span - (p + len)));
    (void)madvise(p, len, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return p;
#endif
    for (size_t o = 0; o < len; o += 4096)   /* kernels before 5.14: fault them in */
        ((volatile char *)p)[o] = 0;
    return p;
}

static int remember(host_pin *hp, void *p, size_t len)
{
    pthread_mutex_lock(&hp->lock);
    if (hp->n == hp->cap) {
        size_t cap = hp->cap ? 2 * hp->cap : 16;
        pin_block *b = realloc(hp->blocks, cap * sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&hp->lock);
            return -1;
        }
        hp->blocks = b;
        hp->cap = cap;
    }
    hp->blocks[hp->n++] = (pin_block){p, len};
    pthread_mutex_unlock(&hp->lock);
    return 0;
}

/* The length of registered block p, taken out of the registry; 0 if p is not one. */
static size_t forget(host_pin *hp, void *p)
{
    size_t len = 0;
    pthread_mutex_lock(&hp->lock);
    for (size_t i = 0; i < hp->n; i++)
        if (hp->blocks[i].p == p) {
            len = hp->blocks[i].len;
            hp->blocks[i] = hp->blocks[--hp->n];
            break;
        }
    pthread_mutex_unlock(&hp->lock);
    return len;
}
#endif

cask_status host_pin_alloc(host_pin *hp, size_t bytes, void **out, char *msg, size_t msglen)
{
    *out = NULL;
#ifdef CASK_HAVE_CUDA
    if (hp && hp->map && bytes >= HOST_PIN_MIN) {
        size_t len = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = map_filled(len);
        if (p && cudaHostRegister(p, len, cudaHostRegisterPortable) == cudaSuccess) {
            if (remember(hp, p, len) == 0) {
                *out = p;
                return CASK_OK;
            }
            cudaHostUnregister(p);
        }
        cudaGetLastError();   /* not registered: cudaHostAlloc's way below */
        if (p)
            munmap(p, len);
    }
    cudaError_t e = cudaHostAlloc(out, bytes, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *out = NULL;
        snprintf(msg, msglen, "cudaHostAlloc(%zu): %s", bytes, cudaGetErrorString(e));
        return CASK_ERR_NOMEM;
    }
    return CASK_OK;
#else
    (void)hp;
    snprintf(msg, msglen, "pinned memory (%zu bytes) without CUDA", bytes);
    return CASK_ERR_UNSUPPORTED;
#endif
}

void host_pin_free(host_pin *hp, void *p)
{
    if (!p)
        return;
#ifdef CASK_HAVE_CUDA
    size_t len = hp ? forget(hp, p) : 0;
    if (len) {
        cudaHostUnregister(p);
        munmap(p, len);
    } else {
        cudaFreeHost(p);
    }
#else
    (void)hp;
#endif
}
