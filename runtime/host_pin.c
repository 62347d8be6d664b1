/* host_pin.c: see host_pin.h. The registry maps each mapped block to its length, for
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
    host_pin_ops ops;
    pthread_mutex_t lock;
    int map;              /* 1: large blocks mapped and registered; 0: ops.alloc only */
    pin_block *blocks;
    size_t n, cap;
};

#ifdef CASK_HAVE_CUDA
static int cuda_lock(void *p, size_t len)
{
    if (cudaHostRegister(p, len, cudaHostRegisterPortable) == cudaSuccess)
        return 0;
    cudaGetLastError();
    return -1;
}

static void cuda_unlock(void *p)
{
    cudaHostUnregister(p);
}

static int cuda_alloc(void **p, size_t bytes, char *msg, size_t msglen)
{
    cudaError_t e = cudaHostAlloc(p, bytes, cudaHostAllocPortable);
    if (e == cudaSuccess)
        return 0;
    cudaGetLastError();
    snprintf(msg, msglen, "cudaHostAlloc(%zu): %s", bytes, cudaGetErrorString(e));
    return -1;
}

static void cuda_free(void *p)
{
    cudaFreeHost(p);
}
#endif

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

host_pin *host_pin_create(int huge, const host_pin_ops *ops)
{
#ifdef CASK_HAVE_CUDA
    static const host_pin_ops cuda_ops = {cuda_lock, cuda_unlock, cuda_alloc, cuda_free};
#endif
    if (!ops) {
#ifdef CASK_HAVE_CUDA
        ops = &cuda_ops;
#else
        return NULL;
#endif
    }
    host_pin *hp = calloc(1, sizeof *hp);
    if (!hp)
        return NULL;
    hp->ops = *ops;
    pthread_mutex_init(&hp->lock, NULL);
    hp->map = huge && thp_available();
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

int host_pin_maps(const host_pin *hp)
{
    return hp && hp->map;
}

/* Faults in (the kernel zeroes) every page of [p, p + len). */
static void fill(char *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t o = 0; o < len; o += 4096)   /* kernels before 5.14: fault them in */
        ((volatile char *)p)[o] = 0;
}

typedef struct fill_part {
    char *p;
    size_t len;
} fill_part;

static void *fill_thread(void *arg)
{
    fill_part *f = arg;
    fill(f->p, f->len);
    return NULL;
}

/* Blocks of FILL_SPLIT_MIN bytes and more are faulted in by FILL_THREADS threads: one
 * thread faults pages in at about 4 GB/s (the kernel zeroes each), so that 256 MiB took
 * 55-72 ms of the 62-80 a pinned block cost on the H200 host, and 14 ms on 4 threads
 * (31-37 on 8, which contend: bench/RESULTS.md section 41). */
#define FILL_THREADS 4
#define FILL_SPLIT_MIN ((size_t)32 << 20)

static void fill_parallel(char *p, size_t len)
{
    pthread_t th[FILL_THREADS - 1];
    fill_part part[FILL_THREADS - 1];
    int started[FILL_THREADS - 1] = {0};
    size_t share = len < FILL_SPLIT_MIN ? len
                   : ((len / FILL_THREADS + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    size_t o = share;   /* the caller fills [0, share) */
    for (int i = 0; i < FILL_THREADS - 1 && o < len; i++, o += share) {
        part[i] = (fill_part){p + o, len - o < share ? len - o : share};
        started[i] = pthread_create(&th[i], NULL, fill_thread, &part[i]) == 0;
        if (!started[i])
            fill(part[i].p, part[i].len);
    }
    fill(p, share < len ? share : len);
    for (int i = 0; i < FILL_THREADS - 1; i++)
        if (started[i])
            pthread_join(th[i], NULL);
}

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
    fill_parallel(p, len);
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

/* The length of mapped block p, taken out of the registry; 0 if p is not one. */
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

cask_status host_pin_alloc(host_pin *hp, size_t bytes, void **out, char *msg, size_t msglen)
{
    *out = NULL;
    if (hp->map && bytes >= HOST_PIN_MIN) {
        size_t len = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = map_filled(len);
        if (p && hp->ops.lock(p, len) == 0) {
            if (remember(hp, p, len) == 0) {
                *out = p;
                return CASK_OK;
            }
            hp->ops.unlock(p);
        }
        if (p)   /* not locked: the plain way below */
            munmap(p, len);
    }
    if (hp->ops.alloc(out, bytes, msg, msglen)) {
        *out = NULL;
        return CASK_ERR_NOMEM;
    }
    return CASK_OK;
}

void host_pin_free(host_pin *hp, void *p)
{
    if (!p)
        return;
    size_t len = forget(hp, p);
    if (len) {
        hp->ops.unlock(p);
        munmap(p, len);
    } else {
        hp->ops.free(p);
    }
}
