/* tests/dist/test_ucx_reuse.c: buffers freed and reused between transfers, across
 * processes, with the UCX set-up cask loads (transport/ucx_load.c: memory events off,
 * no registration cache in ucp, unless CASK_UCX_MEM_EVENTS=1).
 *
 *   test_ucx_reuse host [ROUNDS]  each round every rank maps a fresh buffer at the very
 *                       address the previous round's unmapped one had (MAP_FIXED_NOREPLACE:
 *                       new pages, same address: what a registration keyed by address
 *                       would take for the old buffer), fills it with the round's bytes,
 *                       sends it to the next rank by rendezvous (1 MiB, 4 MiB and 64 KiB
 *                       in turn: CMA reads or TCP), and receives the previous rank's into
 *                       a landing buffer remapped the same way; every byte is checked,
 *                       then both buffers are unmapped
 *   test_ucx_reuse gpu [ROUNDS]   the same with GPU memory (cudaMalloc / cudaFree every
 *                       round, which hands back the freed address; UCX's cuda_ipc within
 *                       a host): SKIP (exit 77) without CUDA, a GPU, or a UCX that moves
 *                       CUDA memory, and says which
 *   test_ucx_reuse nocache        what makes the set-up safe is UCX itself: with memory
 *                       events off it cannot build its registration cache, so asking for
 *                       one (UCX_RCACHE_ENABLE=y) must fail the transport's creation,
 *                       naming ucp_init; if a UCX ever kept a cache without the events,
 *                       this fails and the reasoning in ucx_load.c must be redone
 * Each rank also says whether the memory events were off (UCX_MEM_EVENTS) and how many
 * rounds really reused the address. Run under tests/dist/run.sh (any NP >= 2). */
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ucx_test.h"

#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { AM_BUF = 1 };

typedef struct buf_hdr {
    int32_t src, round;
    uint64_t len;
} buf_hdr;

/* The receiving side of a round: the landing buffer the main thread put there, and the
 * round's arrival. */
static struct {
    void *_Atomic landing;
    int mem;                  /* xport_ucx_mem of landing */
    _Atomic long arrived;     /* rounds received into landing */
    _Atomic long sent;        /* this rank's sends completed */
    buf_hdr last;
} rx;

static void on_sent(void *arg, cask_status st, const char *why)
{
    (void)arg;
    CHECK_OK(st, "send failed: %s", why ? why : "");
    atomic_fetch_add(&rx.sent, 1);
}

static void on_landed(void *arg, cask_status st, const char *why)
{
    (void)arg;
    CHECK_OK(st, "receive failed: %s", why ? why : "");
    atomic_fetch_add(&rx.arrived, 1);
}

static void on_buf(void *arg, xport_ucx_msg *m)
{
    (void)arg;
    CHECK(m->header_len == sizeof rx.last, "header of %zu bytes", m->header_len);
    memcpy(&rx.last, m->header, sizeof rx.last);
    void *dst = atomic_load(&rx.landing);
    CHECK(dst, "round %d arrived before its landing buffer", rx.last.round);
    CHECK(m->len == rx.last.len, "round %d: %zu bytes, header says %llu", rx.last.round,
          m->len, (unsigned long long)rx.last.len);
    CHECK_OK(xport_ucx_recv_into_mem(m, dst, (xport_ucx_mem)rx.mem, on_landed, NULL),
             "recv_into_mem");
}

static size_t round_len(int round)
{
    static const size_t lens[] = { (size_t)1 << 20, (size_t)4 << 20, (size_t)64 << 10 };
    return lens[round % 3];
}

static unsigned char round_byte(int src, int round, size_t i)
{
    return dt_pattern(src, (uint64_t)round * 7919u, i);
}

/* ---- memory of either kind ---- */

#define MAX_LEN ((size_t)4 << 20)

/* A buffer of MAX_LEN host bytes: new pages at *hint (the previous buffer's address)
 * when it is free, else anywhere. Counts a reuse in *reused. */
static void *host_map(void *hint, long *reused)
{
    void *p = MAP_FAILED;
    if (hint)
        p = mmap(hint, MAX_LEN, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        p = mmap(NULL, MAX_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED, "mmap of %zu bytes", MAX_LEN);
    if (hint && p == hint)
        (*reused)++;
    return p;
}

static void *mem_alloc(int gpu, void *hint, long *reused)
{
    if (!gpu)
        return host_map(hint, reused);
#ifdef CASK_HAVE_CUDA
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, MAX_LEN);
    CHECK(e == cudaSuccess, "cudaMalloc: %s", cudaGetErrorString(e));
    if (hint && p == hint)
        (*reused)++;
    return p;
#else
    CHECK(0, "GPU memory in a build without CUDA");
    return NULL;
#endif
}

static void mem_free(int gpu, void *p)
{
    if (!gpu) {
        CHECK(munmap(p, MAX_LEN) == 0, "munmap");
        return;
    }
#ifdef CASK_HAVE_CUDA
    cudaError_t e = cudaFree(p);
    CHECK(e == cudaSuccess, "cudaFree: %s", cudaGetErrorString(e));
#endif
}

/* len bytes of pattern into p (host bytes staged through tmp for the GPU). */
static void mem_fill(int gpu, void *p, unsigned char *tmp, size_t len, int src, int round)
{
    unsigned char *h = gpu ? tmp : p;
    for (size_t i = 0; i < len; i++)
        h[i] = round_byte(src, round, i);
#ifdef CASK_HAVE_CUDA
    if (gpu) {
        cudaError_t e = cudaMemcpy(p, tmp, len, cudaMemcpyHostToDevice);
        CHECK(e == cudaSuccess, "cudaMemcpy to the GPU: %s", cudaGetErrorString(e));
    }
#endif
}

static void mem_check(int gpu, const void *p, unsigned char *tmp, size_t len, int src,
                      int round, int me)
{
    const unsigned char *h = p;
#ifdef CASK_HAVE_CUDA
    if (gpu) {
        cudaError_t e = cudaMemcpy(tmp, p, len, cudaMemcpyDeviceToHost);
        CHECK(e == cudaSuccess, "cudaMemcpy from the GPU: %s", cudaGetErrorString(e));
        h = tmp;
    }
#endif
    for (size_t i = 0; i < len; i++)
        CHECK(h[i] == round_byte(src, round, i), "round %d: byte %zu from rank %d is %u, "
              "not %u (rank %d's landing buffer; a stale registration or mapping of a freed "
              "buffer?)", round, i, src, h[i], round_byte(src, round, i), me);
}

/* Whether this process can run the GPU rounds; if not, why into why. */
static int gpu_usable(ucxt_env *e, char *why, size_t len)
{
#ifdef CASK_HAVE_CUDA
    if (!xport_ucx_cuda_memory(e->x)) {
        snprintf(why, len, "this UCX does not move CUDA memory (Debian's 1.13, or no "
                 "driver: the libucx-cu13 wheel moves it)");
        return 0;
    }
    return 1;
#else
    (void)e;
    snprintf(why, len, "built without CUDA");
    return 0;
#endif
}

#ifdef CASK_HAVE_CUDA
static void progress_thread_device(void *arg)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0)
        cudaSetDevice(*(int *)arg % n);
}
#endif

static void test_reuse(int gpu, int rounds)
{
#ifdef CASK_HAVE_CUDA
    int ndev = 0;
    if (gpu && (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)) {
        printf("no CUDA GPU: skipped\n");
        exit(77);
    }
#else
    if (gpu) {
        printf("built without CUDA: skipped\n");
        exit(77);
    }
#endif
    ucxt_env e;
    ucxt_boot(&e);
#ifdef CASK_HAVE_CUDA
    if (gpu)
        CHECK(cudaSetDevice(e.rank % ndev) == cudaSuccess, "cudaSetDevice");
#endif
    /* the set-up of a rank with GPUs (UCX's CUDA modules loaded) for host memory too */
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_RNDV_THRESH, .rndv_thresh = 16384 };
#ifdef CASK_HAVE_CUDA
    int rank = e.rank;
    if (gpu) {
        cfg.field_mask |= XPORT_UCX_THREAD_INIT;
        cfg.thread_init = progress_thread_device;
        cfg.thread_init_arg = &rank;
    }
#endif
    ucxt_create(&e, &cfg);
    char why[256];
    if (gpu && !gpu_usable(&e, why, sizeof why)) {
        /* every rank has the same build, driver and UCX: all of them skip, unconnected */
        printf("[rank %d] %s: skipped\n", e.rank, why);
        ucxt_destroy(&e);
        exit(77);
    }
    ucxt_set_handlers(&e);
    CHECK_OK(xport_ucx_set_handler(e.x, AM_BUF, on_buf, &e), "set_handler");
    ucxt_connect(&e);
    rx.mem = gpu ? XPORT_UCX_MEM_CUDA : XPORT_UCX_MEM_HOST;
    const int to = (e.rank + 1) % e.size, from = (e.rank + e.size - 1) % e.size;
    unsigned char *tmp = malloc(MAX_LEN);
    CHECK(tmp, "malloc");
    void *send_at = NULL, *land_at = NULL;
    long reused_send = 0, reused_land = 0;
    double t0 = dt_now();
    for (int round = 0; round < rounds; round++) {
        size_t len = round_len(round);
        void *sbuf = mem_alloc(gpu, send_at, &reused_send);
        void *lbuf = mem_alloc(gpu, land_at, &reused_land);
        send_at = sbuf;
        land_at = lbuf;
        mem_fill(gpu, sbuf, tmp, len, e.rank, round);
        atomic_store(&rx.landing, lbuf);
        ucxt_barrier(&e);   /* every landing buffer is in place before any send */
        buf_hdr h = { e.rank, round, len };
        CHECK_OK(xport_ucx_am_send_mem(e.x, to, AM_BUF, &h, sizeof h, sbuf, len,
                                       (xport_ucx_mem)rx.mem, on_sent, NULL), "send round %d",
                 round);
        ucxt_wait_for(&rx.sent, round + 1, 60, "sends completed");
        ucxt_wait_for(&rx.arrived, round + 1, 60, "rounds received");
        CHECK(rx.last.src == from && rx.last.round == round, "round %d: got rank %d's round "
              "%d", round, rx.last.src, rx.last.round);
        mem_check(gpu, lbuf, tmp, len, from, round, e.rank);
        atomic_store(&rx.landing, NULL);
        ucxt_barrier(&e);   /* nobody reads a buffer any more: free both */
        mem_free(gpu, sbuf);
        mem_free(gpu, lbuf);
    }
    const char *events = getenv("UCX_MEM_EVENTS"), *rcache = getenv("UCX_RCACHE_ENABLE");
    printf("[rank %d] %s: %d rounds to rank %d checked in %.2f s; the address reused by %ld "
           "sends and %ld landings; UCX_MEM_EVENTS=%s UCX_RCACHE_ENABLE=%s\n", e.rank,
           gpu ? "gpu" : "host", rounds, to, dt_now() - t0, reused_send, reused_land,
           events ? events : "(unset)", rcache ? rcache : "(unset)");
    /* not vacuous: the buffers did come back at their old addresses (host: always, by
     * MAP_FIXED_NOREPLACE; the GPU's allocator hands back a freed block) */
    if (!gpu)
        CHECK(reused_send == rounds - 1 && reused_land == rounds - 1,
              "host addresses reused %ld and %ld times of %d", reused_send, reused_land,
              rounds - 1);
    else
        CHECK(reused_send + reused_land > 0, "cudaMalloc never returned a freed address: "
              "nothing was reused");
    free(tmp);
    ucxt_teardown(&e);
}

static void test_host(int rounds) { test_reuse(0, rounds); }
static void test_gpu(int rounds) { test_reuse(1, rounds); }

/* Memory events off and a registration cache asked for: UCX must refuse, naming ucp_init.
 * Each rank alone (the transport is only created). */
static void test_nocache(void)
{
    setenv("UCX_MEM_EVENTS", "no", 1);
    setenv("UCX_RCACHE_ENABLE", "y", 1);
    setenv("UCX_LOG_LEVEL", "fatal", 1);   /* UCX's own error line is expected */
    ucxt_env e;
    ucxt_boot(&e);
    xport_ucx_config cfg = { .field_mask = XPORT_UCX_NO_CUDA, .no_cuda = 1 };
    char err[512] = "";
    cask_status st = xport_ucx_create(e.b, &cfg, &e.x, err, sizeof err);
    CHECK(st != CASK_OK, "UCX built a registration cache with memory events off: a freed "
          "buffer's registration could be reused (transport/ucx_load.c)");
    CHECK(strstr(err, "ucp_init"), "the failure does not name ucp_init: %s", err);
    printf("[rank %d] a registration cache without memory events was refused: %s\n", e.rank,
           err);
    CHECK_OK(xport_boot_barrier(e.b), "%s", xport_boot_error(e.b));
    xport_boot_finalize(e.b);
}

int main(int argc, char **argv)
{
    static const dt_case cases[] = {
        { "host", .run_arg = test_host, .arg = 12, .opt = "[ROUNDS]" },
        { "gpu", .run_arg = test_gpu, .arg = 12, .opt = "[ROUNDS]" },
        { "nocache", .run = test_nocache },
    };
    return dt_main(argc, argv, "test_ucx_reuse", cases, (int)(sizeof cases / sizeof *cases));
}
