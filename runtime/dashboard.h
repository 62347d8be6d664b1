/* dashboard.h (internal): the live dashboard, an HTTP server inside the runtime on a
 * thread of its own (libmicrohttpd), started by cask_init when CASK_DASHBOARD or
 * cask_config.dashboard asks for it. Read-only: GET only.
 *
 *   /              the page (HTML + JS shipped inside the library; no network needed)
 *   /api/status    JSON: workers, lanes, kernels, graphs, memory (dash_render.c)
 *   /api/stream    JSON: task slices that ended after ?since=NS (ns since start)
 *   /metrics       Prometheus text format
 *
 * Bounded: at most DASH_MAX_CONN connections, each with a small memory limit and an
 * idle timeout, so a client that sends garbage or never reads costs a slot for a few
 * seconds, never a worker's time. */
#ifndef CASK_RUNTIME_DASHBOARD_H
#define CASK_RUNTIME_DASHBOARD_H

#include <stdint.h>
#include <stdio.h>
#include "runtime/runtime.h"

#define DASH_MAX_CONN 16
#define DASH_MAX_PEERS 64

/* What the layer above (a distributed job) adds to the documents. */
typedef struct dash_job {
    int rank, size;                 /* 0 and 1 for a single process */
    int npeers;                     /* URLs of every rank's dashboard (index = rank) */
    char peer_url[DASH_MAX_PEERS][96];
    void (*extra)(void *arg, FILE *f);          /* appends ,"key":value to /api/status */
    void (*extra_metrics)(void *arg, FILE *f);  /* appends families to /metrics */
    void *extra_arg;
} dash_job;

typedef struct dashboard dashboard;

/* Starts the server on addr ("HOST:PORT", "PORT"; HOST an IPv4 address, default
 * 127.0.0.1; PORT 0 picks a free one; a taken port is followed by the next free one
 * up to PORT+63, as Dask's dashboard does). err gets the reason of a failure. */
cask_status dashboard_start(cask_runtime *rt, const char *addr, dashboard **out, char *err,
                            size_t errlen);
void dashboard_stop(dashboard *d);
/* "http://HOST:PORT/" of the running server. */
const char *dashboard_url(const dashboard *d);
/* Sets the job's view (rank, peers' URLs, extra documents). Thread safe; waits for a
 * document being written, so the previous job's callbacks are unused once it returns. */
void dashboard_set_job(dashboard *d, const dash_job *job);

/* dash_render.c: malloc'ed documents (NULL when out of memory). */
char *dash_render_status(cask_runtime *rt, const dash_job *job);
char *dash_render_stream(cask_runtime *rt, uint64_t since_ns);
char *dash_render_metrics(cask_runtime *rt, const dash_job *job);

/* dashboard_page.c (generated from runtime/dashboard.html at build time). */
extern const char dashboard_page_html[];
extern const unsigned long dashboard_page_len;

#endif
