/* distributed/dist_route.c: which way a chunk goes between two ranks. A chunk made on a GPU
 * and read by a GPU task on another rank may go
 *
 *   host      by UCX from and into host memory (the runtime copies it off the GPU and
 *             back on: two PCIe crossings and cask's host staging);
 *   ucx-cuda  by UCX from GPU memory into GPU memory (dist_gpux.c; a UCX with CUDA
 *             transports: cuda_ipc within a node, NVLink between GPUs);
 *   nccl      by NCCL send/recv (dist_nccl.c; one GPU per rank: NCCL refuses two ranks
 *             on one GPU, so it is off where two ranks share one).
 *
 * Any other chunk goes by host. Among the routes both ranks can take, the cheapest by a
 * linear model, t(bytes) = latency + bytes / bandwidth per route, with numbers measured
 * by bench-xport (defaults below; CASK_DIST_XPORT_MODEL overrides them), unless
 * CASK_DIST_GPU_XPORT forces one. Every rank must plan alike: the abilities of every
 * rank and rank 0's settings are shared at init, and the choice uses only those. */
#include "distributed/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/log.h"
#ifdef CASK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { FORCE_AUTO = 0, FORCE_HOST = 1, FORCE_UCX = 2, FORCE_NCCL = 3 };

/* One route's cost: latency_us + bytes / (gbps * 1e3) microseconds. */
typedef struct route_cost {
    double lat_us, gbps;
} route_cost;

typedef struct route_model {
    int32_t force;
    int32_t pad;
    route_cost host, ucx, ucx_remote, nccl;
} route_model;

/* Defaults. host: cask's UCX path through host memory, 7.3-8.6 GB/s measured on an
 * H100 (bench/RESULTS.md 6.5), latency a UCX message plus the runtime's two PCIe copies
 * (estimated); nccl: ~0.5 ms to issue a transfer measured on 2 H200s
 * (RESULTS 6.5; before transfers were grouped: re-measure with bench-xport); ucx (cuda_ipc in
 * a node) and nccl bandwidths: NVLink-class, to be replaced by bench-xport's fitted
 * line (it prints a CASK_DIST_XPORT_MODEL value). ucx_remote: CUDA memory between
 * nodes, which the wheel's UCX (no verbs) stages itself over TCP: no better than host. */
static const route_model default_model = {
    FORCE_AUTO, 0, { 40.0, 8.0 }, { 30.0, 150.0 }, { 40.0, 1.0 }, { 500.0, 150.0 } };

typedef struct rank_caps {
    int32_t gpu;              /* its GPU (runtime index), -1 none */
    int32_t ucx_cuda;         /* its UCX moves CUDA memory */
    char host[40];            /* boot id: same host */
    char bus[32];             /* its GPU's PCI bus id, "" none */
} rank_caps;

struct dist_route {
    route_model m;
    rank_caps *caps;          /* per rank */
    int nccl_ok;              /* NCCL usable (every rank has its own GPU) */
};

/* "host=LAT:GBPS,ucx=LAT:GBPS,ucx_remote=LAT:GBPS,nccl=LAT:GBPS" (any subset). */
static int parse_model(const char *v, route_model *m)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char name[16];
        double lat, bw;
        if (sscanf(tok, "%15[a-z_]=%lf:%lf", name, &lat, &bw) != 3 || lat < 0 || bw <= 0)
            return -1;
        route_cost c = { lat, bw };
        if (!strcmp(name, "host")) m->host = c;
        else if (!strcmp(name, "ucx")) m->ucx = c;
        else if (!strcmp(name, "ucx_remote")) m->ucx_remote = c;
        else if (!strcmp(name, "nccl")) m->nccl = c;
        else return -1;
    }
    return 0;
}

/* The model from the settings (force: CASK_DIST_GPU_XPORT, legacy: CASK_DIST_NCCL,
 * model: CASK_DIST_XPORT_MODEL; each may be NULL). */
static cask_status model_from(const char *f, const char *legacy, const char *v, route_model *m,
                              char *err, size_t errlen)
{
    *m = default_model;
    if (f && *f) {
        if (!strcmp(f, "host")) m->force = FORCE_HOST;
        else if (!strcmp(f, "ucx")) m->force = FORCE_UCX;
        else if (!strcmp(f, "nccl")) m->force = FORCE_NCCL;
        else if (strcmp(f, "auto")) {
            snprintf(err, errlen, "CASK_DIST_GPU_XPORT='%s': expected auto, host, ucx or nccl",
                     f);
            return CASK_ERR_INVALID;
        }
    } else if (legacy && !strcmp(legacy, "1")) {
        m->force = FORCE_NCCL;   /* the former opt-in */
    }
    if (v && *v && parse_model(v, m)) {
        snprintf(err, errlen, "CASK_DIST_XPORT_MODEL='%s': expected route=LATENCY_US:GBPS[,...] "
                 "with route host, ucx, ucx_remote or nccl", v);
        *m = default_model;
        return CASK_ERR_INVALID;
    }
    return CASK_OK;
}

static cask_status read_model(cask_dist *dist, route_model *m)
{
    char err[256];
    cask_status st = model_from(getenv("CASK_DIST_GPU_XPORT"), getenv("CASK_DIST_NCCL"),
                                getenv("CASK_DIST_XPORT_MODEL"), m, err, sizeof err);
    if (st)
        log_error(dist->rt, st, "cask_dist_init: %s", err);
    return st;
}

/* NCCL refuses two ranks on one GPU: off if any two share one. */
static int nccl_usable(const rank_caps *caps, int n, int nccl_all)
{
    for (int a = 0; a < n && nccl_all; a++)
        for (int b = a + 1; b < n; b++)
            if (!strcmp(caps[a].host, caps[b].host) && caps[a].bus[0] &&
                !strcmp(caps[a].bus, caps[b].bus))
                return 0;
    return nccl_all;
}

struct dist_route *dist_route_new_for_test(int n, const int *gpu, const int *ucx_cuda,
                                           const char *const *host, const char *const *bus,
                                           int nccl_all, const char *force, const char *model,
                                           char *err, size_t errlen)
{
    struct dist_route *R = calloc(1, sizeof *R);
    if (!R || !(R->caps = calloc((size_t)n, sizeof *R->caps)) ||
        model_from(force, NULL, model, &R->m, err, errlen)) {
        if (R)
            free(R->caps);
        free(R);
        return NULL;
    }
    for (int r = 0; r < n; r++) {
        R->caps[r].gpu = gpu[r];
        R->caps[r].ucx_cuda = ucx_cuda[r];
        snprintf(R->caps[r].host, sizeof R->caps[r].host, "%s", host[r]);
        snprintf(R->caps[r].bus, sizeof R->caps[r].bus, "%s", bus[r]);
    }
    R->nccl_ok = nccl_usable(R->caps, n, nccl_all);
    return R;
}

void dist_route_delete(struct dist_route *R)
{
    if (R)
        free(R->caps);
    free(R);
}

cask_status dist_route_init(cask_dist *dist)
{
    if (dist->route)
        return CASK_OK;
    struct dist_route *R = calloc(1, sizeof *R);
    if (!R)
        return CASK_ERR_NOMEM;
    dist->route = R;
    if (read_model(dist, &R->m) != CASK_OK) {   /* said why; nobody is left waiting */
        R->m = default_model;
        log_msg(dist->rt, CASK_LOG_WARN, "rank %d: the default route model instead",
                dist->rank);
    }
    if (dist->size < 2)
        return CASK_OK;
    /* rank 0's settings for everybody */
    cask_status st = xport_boot_bcast(dist->boot, "route.model", 0, &R->m, sizeof R->m);
    if (st)
        return st;
    rank_caps me;
    memset(&me, 0, sizeof me);
    me.gpu = dist->gpu_device;
#ifdef CASK_HAVE_UCX
    me.ucx_cuda = dist->gpu_device >= 0 && dist->ucx &&
                  (dist->gpu_sim || xport_ucx_cuda_memory(dist->ucx));
#endif
    xport_boot_host_id(me.host, sizeof me.host);
#ifdef CASK_HAVE_CUDA
    if (me.gpu >= 0 && !dist->gpu_sim &&
        cudaDeviceGetPCIBusId(me.bus, (int)sizeof me.bus, me.gpu) != cudaSuccess)
        me.bus[0] = 0;
#endif
    void **blobs = NULL;
    size_t *lens = NULL;
    if ((st = xport_boot_allgather(dist->boot, "route.caps", &me, sizeof me, &blobs, &lens)))
        return st;
    R->caps = calloc((size_t)dist->size, sizeof *R->caps);
    if (!R->caps) {
        xport_boot_free_blobs(dist->boot, blobs, lens);
        return CASK_ERR_NOMEM;
    }
    for (int r = 0; r < dist->size; r++) {
        if (lens[r] == sizeof me)
            memcpy(&R->caps[r], blobs[r], sizeof me);
        else
            R->caps[r].gpu = -1;
        R->caps[r].host[sizeof me.host - 1] = R->caps[r].bus[sizeof me.bus - 1] = 0;
    }
    xport_boot_free_blobs(dist->boot, blobs, lens);
    R->nccl_ok = nccl_usable(R->caps, dist->size, dist->nccl_all);
    if (dist->nccl_all && !R->nccl_ok) {
        dist->nccl_all = 0;
        log_msg(dist->rt, CASK_LOG_INFO, "rank %d: NCCL off: two ranks share a GPU (NCCL "
                "allows one rank per GPU)", dist->rank);
    }
    int ucx_all = 1;
    for (int r = 0; r < dist->size; r++)
        ucx_all &= R->caps[r].ucx_cuda && R->caps[r].gpu >= 0;
    log_msg(dist->rt, CASK_LOG_INFO, "rank %d: GPU chunks between ranks: UCX GPU memory %s, "
            "NCCL %s, route %s", dist->rank, ucx_all ? "on every rank" : "not everywhere",
            R->nccl_ok ? "on" : "off",
            R->m.force == FORCE_HOST ? "host (forced)" : R->m.force == FORCE_UCX ? "ucx (forced)"
            : R->m.force == FORCE_NCCL ? "nccl (forced)" : "by cost model");
    return CASK_OK;
}

static double cost(route_cost c, size_t bytes)
{
    return c.lat_us + (double)bytes / (c.gbps * 1e3);
}

int dist_route_choose(const cask_dist *dist, int from, int to, size_t bytes, int gpu_ends)
{
    return dist_route_decide(dist->route, from, to, bytes, gpu_ends);
}

int dist_route_decide(const struct dist_route *R, int from, int to, size_t bytes, int gpu_ends)
{
    if (!gpu_ends || !R || !R->caps || from == to)
        return DIST_ROUTE_HOST;
    const rank_caps *a = &R->caps[from], *b = &R->caps[to];
    int ucx = a->ucx_cuda && b->ucx_cuda && a->gpu >= 0 && b->gpu >= 0;
    int nccl = R->nccl_ok;
    switch (R->m.force) {
    case FORCE_HOST: return DIST_ROUTE_HOST;
    case FORCE_UCX: return ucx ? DIST_ROUTE_UCX_CUDA : DIST_ROUTE_HOST;
    case FORCE_NCCL: return nccl ? DIST_ROUTE_NCCL : DIST_ROUTE_HOST;
    default: break;
    }
    int best = DIST_ROUTE_HOST;
    double t = cost(R->m.host, bytes);
    if (ucx) {
        double u = cost(strcmp(a->host, b->host) ? R->m.ucx_remote : R->m.ucx, bytes);
        if (u < t) {
            t = u;
            best = DIST_ROUTE_UCX_CUDA;
        }
    }
    if (nccl && cost(R->m.nccl, bytes) < t)
        best = DIST_ROUTE_NCCL;
    return best;
}

void dist_route_free(cask_dist *dist)
{
    if (!dist->route)
        return;
    free(dist->route->caps);
    free(dist->route);
    dist->route = NULL;
}

void cask_dist_transport_describe(char *buf, size_t len)
{
    if (!buf || !len)
        return;
#ifdef CASK_HAVE_UCX
    xport_ucx_describe(buf, len);
#else
    snprintf(buf, len, "no UCX (a build for one process)");
#endif
}
