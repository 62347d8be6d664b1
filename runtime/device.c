/* device.c: see device.h. Streams are created non-blocking so that nothing synchronises
 * with the legacy default stream; peer access is enabled between every pair that allows
 * it, so device-to-device copies go over NVLink directly. */
#include <stdlib.h>
#include <string.h>
#include "runtime/device.h"
#include "runtime/host_pin.h"
#include "runtime/log.h"
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define MAX_STREAMS 32

typedef struct gpu_dev {
    void *streams[3 + MAX_STREAMS + DEV_EXTRA_STREAMS];   /* copies, compute, side, urgent,
                                                             side to host (device.h) */
} gpu_dev;

struct device_set {
    cask_runtime *rt;
    int ngpu;
    int sim;
    int nstreams;
    host_pin *pin;        /* page-locked host blocks (not with simulated GPUs) */
    gpu_dev gpu[CASK_MAX_GPUS];
};

#ifdef CASK_HAVE_CUDA
#define CUDA_TRY(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) \
        return log_error(ds->rt, CASK_ERR_CUDA, "%s: %s", #call, cudaGetErrorString(e_)); } while (0)
#endif

cask_status device_count(int *n)
{
    *n = 0;
#ifdef CASK_HAVE_CUDA
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) {
        cudaGetLastError();
        return CASK_OK;
    }
    *n = c;
#endif
    return CASK_OK;
}

int device_is_sim(const device_set *ds)
{
    return ds->sim;
}

int device_streams(const device_set *ds)
{
    return ds->nstreams;
}

cask_status device_open(cask_runtime *rt, int ngpu, int sim, device_set **out)
{
    device_set *ds = calloc(1, sizeof *ds);
    if (!ds)
        return CASK_ERR_NOMEM;
    ds->rt = rt;
    ds->ngpu = ngpu;
    ds->sim = sim;
    ds->nstreams = rt->cfg.gpu_streams > MAX_STREAMS ? MAX_STREAMS : rt->cfg.gpu_streams;
    *out = ds;
    if (sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    /* huge-page pinned blocks unless huge pages are off or CASK_PINNED_HUGE=0 */
    const char *ph = getenv("CASK_PINNED_HUGE");
    if (!(ds->pin = host_pin_create(rt->cfg.huge_pages && !(ph && !strcmp(ph, "0")), NULL)))
        return log_error(rt, CASK_ERR_NOMEM, "device_open: the pinned-memory registry");
    for (int g = 0; g < ngpu; g++) {
        CUDA_TRY(cudaSetDevice(g));
        for (int s = 0; s < 3 + ds->nstreams + DEV_EXTRA_STREAMS; s++) {
            cudaStream_t st;
            /* copies get the highest priority: they feed the compute streams; so do the
               side streams, after them (their tasks hand data on: device.h); the urgent
               stream the next one down (numerically greater), above the compute streams */
            int lo, hi;
            CUDA_TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
            int urgent = hi < lo ? hi + 1 : hi;
            CUDA_TRY(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking,
                                                  s < 3 || s == 3 + ds->nstreams ||
                                                  s == 3 + ds->nstreams + 2 ? hi
                                                  : s == 3 + ds->nstreams + 1 ? urgent : lo));
            ds->gpu[g].streams[s] = st;
        }
        for (int p = 0; p < ngpu; p++) {
            if (p == g)
                continue;
            int can = 0;
            CUDA_TRY(cudaDeviceCanAccessPeer(&can, g, p));
            if (can) {
                cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
                if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
                    return log_error(rt, CASK_ERR_CUDA, "cudaDeviceEnablePeerAccess(%d -> %d): %s",
                                     g, p, cudaGetErrorString(e));
                cudaGetLastError();
            }
        }
    }
    return CASK_OK;
#else
    return log_error(rt, CASK_ERR_UNSUPPORTED, "built without CUDA");
#endif
}

void device_close(device_set *ds)
{
    if (!ds)
        return;
#ifdef CASK_HAVE_CUDA
    if (!ds->sim)
        for (int g = 0; g < ds->ngpu; g++) {
            cudaSetDevice(g);
            for (int s = 0; s < 3 + ds->nstreams + DEV_EXTRA_STREAMS; s++)
                if (ds->gpu[g].streams[s])
                    cudaStreamDestroy(ds->gpu[g].streams[s]);
        }
#endif
    host_pin_destroy(ds->pin);
    free(ds);
}

cask_status device_use(device_set *ds, int gpu)
{
    if (ds->sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaSetDevice(gpu));
#endif
    return CASK_OK;
}

cask_status device_mem_info(device_set *ds, int gpu, size_t *free_b, size_t *total_b)
{
    if (ds->sim) {
        *free_b = *total_b = (size_t)1 << 32;
        return CASK_OK;
    }
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaSetDevice(gpu));
    CUDA_TRY(cudaMemGetInfo(free_b, total_b));
#endif
    return CASK_OK;
}

cask_status device_malloc(device_set *ds, int gpu, size_t bytes, void **out)
{
    if (ds->sim) {
        void *p = NULL;
        if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
            return log_error(ds->rt, CASK_ERR_NOMEM, "simulated GPU %d: %zu bytes", gpu, bytes);
        *out = p;
        return CASK_OK;
    }
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaSetDevice(gpu));
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return log_error(ds->rt, CASK_ERR_NOMEM, "cudaMalloc(%zu) on GPU %d: %s", bytes, gpu,
                         cudaGetErrorString(e));
    }
#endif
    return CASK_OK;
}

void device_free(device_set *ds, int gpu, void *p)
{
    if (ds->sim) {
        free(p);
        return;
    }
#ifdef CASK_HAVE_CUDA
    cudaSetDevice(gpu);
    cudaFree(p);
#endif
}

cask_status device_host_alloc(device_set *ds, size_t bytes, void **out)
{
    if (ds->sim) {
        if (posix_memalign(out, 64, bytes) != 0)
            return log_error(ds->rt, CASK_ERR_NOMEM, "host alloc %zu bytes", bytes);
        return CASK_OK;
    }
    char msg[160];
    cask_status st = host_pin_alloc(ds->pin, bytes, out, msg, sizeof msg);
    return st ? log_error(ds->rt, st, "%s", msg) : CASK_OK;
}

void device_host_free(device_set *ds, void *p)
{
    if (ds->sim) {
        free(p);
        return;
    }
    host_pin_free(ds->pin, p);
}

void *device_stream(device_set *ds, int gpu, int which)
{
    if (ds->sim)
        return NULL;
    return ds->gpu[gpu].streams[which];
}

static cask_status event_create(device_set *ds, int gpu, int timed, void **ev)
{
    if (ds->sim) {
        *ev = (void *)(uintptr_t)1;   /* a simulated event is always complete */
        return CASK_OK;
    }
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaSetDevice(gpu));
    cudaEvent_t e;
    CUDA_TRY(cudaEventCreateWithFlags(&e, timed ? cudaEventDefault : cudaEventDisableTiming));
    *ev = e;
#endif
    return CASK_OK;
}

cask_status device_event_create(device_set *ds, int gpu, void **ev)
{
    return event_create(ds, gpu, 0, ev);
}

cask_status device_event_create_timed(device_set *ds, int gpu, void **ev)
{
    return event_create(ds, gpu, 1, ev);
}

cask_status device_event_elapsed_ns(device_set *ds, void *a, void *b, int64_t *ns)
{
    *ns = 0;
    if (ds->sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b));
    *ns = (int64_t)((double)ms * 1e6);
#endif
    return CASK_OK;
}

void device_event_destroy(device_set *ds, void *ev)
{
#ifdef CASK_HAVE_CUDA
    if (!ds->sim && ev)
        cudaEventDestroy((cudaEvent_t)ev);
#endif
}

cask_status device_event_record(device_set *ds, void *ev, void *stream)
{
    if (ds->sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream));
#endif
    return CASK_OK;
}

int device_event_done(device_set *ds, void *ev)
{
    if (ds->sim)
        return 1;
#ifdef CASK_HAVE_CUDA
    cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
    if (e == cudaSuccess)
        return 1;
    if (e == cudaErrorNotReady)
        return 0;
    log_error(ds->rt, CASK_ERR_CUDA, "cudaEventQuery: %s", cudaGetErrorString(e));
    return -(int)CASK_ERR_CUDA;
#else
    return 1;
#endif
}

cask_status device_event_sync(device_set *ds, void *ev)
{
    if (ds->sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaEventSynchronize((cudaEvent_t)ev));
#endif
    return CASK_OK;
}

cask_status device_stream_wait(device_set *ds, void *stream, void *ev)
{
    if (ds->sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)ev, 0));
#endif
    return CASK_OK;
}

cask_status device_stream_sync(device_set *ds, void *stream)
{
    if (ds->sim)
        return CASK_OK;
#ifdef CASK_HAVE_CUDA
    CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream));
#endif
    return CASK_OK;
}

cask_status device_copy(device_set *ds, void *dst, int dst_node, const void *src, int src_node,
                        size_t bytes, void *stream)
{
    if (ds->sim) {
        memcpy(dst, src, bytes);
        return CASK_OK;
    }
#ifdef CASK_HAVE_CUDA
    if (dst_node > 0 && src_node > 0 && dst_node != src_node) {
        if (stream)
            CUDA_TRY(cudaMemcpyPeerAsync(dst, dst_node - 1, src, src_node - 1, bytes, (cudaStream_t)stream));
        else
            CUDA_TRY(cudaMemcpyPeer(dst, dst_node - 1, src, src_node - 1, bytes));
        return CASK_OK;
    }
    if (stream)
        CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream));
    else
        CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
#endif
    return CASK_OK;
}
