/* dist_dashboard.c: a job's view in each rank's live dashboard (docs/observability.md):
 * every rank that serves a dashboard tells the others its URL (one message each, after
 * the transport connected; ranks without one just keep what they hear, so ranks need
 * not agree on whether they serve one), and adds the bytes it exchanged with each peer
 * to /api/status and /metrics. Without a dashboard in the build, nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "distributed/dist_impl.h"
#include "runtime/log.h"
#ifdef CASK_HAVE_DASHBOARD
#include "runtime/dashboard.h"

struct dist_dash {
    dash_job job;             /* under dist->mu while handlers fill peer_url */
};

#ifdef CASK_HAVE_UCX
static void put_peers(void *arg, FILE *f)
{
    cask_dist *dist = arg;
    fputs(",\"dist\":{\"peers\":[", f);
    for (int r = 0, first = 1; r < dist->size; r++) {
        if (r == dist->rank)
            continue;
        xport_ucx_stats s = {0};
        xport_ucx_peer_stats(dist->ucx, r, &s);
        fprintf(f, "%s{\"rank\":%d,\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"msgs_sent\":%llu,"
                "\"msgs_recv\":%llu,\"lost\":%d}", first ? "" : ",", r,
                (unsigned long long)s.bytes_sent, (unsigned long long)s.bytes_recv,
                (unsigned long long)s.msgs_sent, (unsigned long long)s.msgs_recv,
                xport_ucx_peer_status(dist->ucx, r) != CASK_OK);
        first = 0;
    }
    fputs("]}", f);
}

static void put_metrics(void *arg, FILE *f)
{
    cask_dist *dist = arg;
    fputs("# HELP cask_dist_bytes_total Bytes exchanged with another rank.\n"
          "# TYPE cask_dist_bytes_total counter\n", f);
    for (int r = 0; r < dist->size; r++) {
        if (r == dist->rank)
            continue;
        xport_ucx_stats s = {0};
        xport_ucx_peer_stats(dist->ucx, r, &s);
        fprintf(f, "cask_dist_bytes_total{peer=\"%d\",direction=\"sent\"} %llu\n"
                   "cask_dist_bytes_total{peer=\"%d\",direction=\"received\"} %llu\n",
                r, (unsigned long long)s.bytes_sent, r, (unsigned long long)s.bytes_recv);
    }
    fputs("# HELP cask_dist_peer_up 1 while that rank is reachable.\n"
          "# TYPE cask_dist_peer_up gauge\n", f);
    for (int r = 0; r < dist->size; r++)
        if (r != dist->rank)
            fprintf(f, "cask_dist_peer_up{peer=\"%d\"} %d\n", r,
                    xport_ucx_peer_status(dist->ucx, r) == CASK_OK);
}

/* A peer's URL (progress thread). */
static void on_url(void *arg, xport_ucx_msg *msg)
{
    cask_dist *dist = arg;
    if (!dist->dash || msg->peer < 0 || msg->peer >= DASH_MAX_PEERS)
        return;
    pthread_mutex_lock(&dist->mu);
    char *u = dist->dash->job.peer_url[msg->peer];
    size_t n = msg->header_len < sizeof dist->dash->job.peer_url[0] - 1 ? msg->header_len
                                                                        : sizeof dist->dash->job.peer_url[0] - 1;
    memcpy(u, msg->header, n);
    u[n] = 0;
    if (dist->rt->dash)
        dashboard_set_job(dist->rt->dash, &dist->dash->job);
    pthread_mutex_unlock(&dist->mu);
}
#endif

cask_status dist_dashboard_register(cask_dist *dist)
{
    dist->dash = calloc(1, sizeof *dist->dash);
    if (!dist->dash)
        return CASK_ERR_NOMEM;
    dash_job *j = &dist->dash->job;
    j->rank = dist->rank;
    j->size = dist->size;
    j->npeers = dist->size <= DASH_MAX_PEERS ? dist->size : DASH_MAX_PEERS;
#ifdef CASK_HAVE_UCX
    if (dist->ucx) {
        xport_ucx_set_handler(dist->ucx, DIST_AM_DASH, on_url, dist);
        j->extra = put_peers;
        j->extra_metrics = put_metrics;
        j->extra_arg = dist;
    }
#endif
    return CASK_OK;
}

/* A dashboard served on every interface (0.0.0.0) is announced under this host's name:
 * in another rank's page, or a browser at the end of an SSH tunnel, 0.0.0.0 would be
 * the reader's own machine. */
static void announced_url(const char *url, char *out, size_t len)
{
    const char *any = "http://0.0.0.0:";
    char host[65];   /* HOST_NAME_MAX + 1 */
    if (!strncmp(url, any, strlen(any)) && gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = '\0';
        snprintf(out, len, "http://%.64s:%.16s", host, url + strlen(any));
    } else {
        snprintf(out, len, "%s", url);
    }
}

void dist_dashboard_announce(cask_dist *dist)
{
    if (!dist->rt->dash || !dist->dash)
        return;
    char url[sizeof dist->dash->job.peer_url[0]];
    announced_url(dashboard_url(dist->rt->dash), url, sizeof url);
    pthread_mutex_lock(&dist->mu);
    if (dist->rank < DASH_MAX_PEERS)
        snprintf(dist->dash->job.peer_url[dist->rank], sizeof dist->dash->job.peer_url[0], "%s", url);
    dashboard_set_job(dist->rt->dash, &dist->dash->job);
    pthread_mutex_unlock(&dist->mu);
#ifdef CASK_HAVE_UCX
    for (int r = 0; dist->ucx && r < dist->size; r++)
        if (r != dist->rank)
            xport_ucx_am_send(dist->ucx, r, DIST_AM_DASH, url, strlen(url), NULL, 0, NULL, NULL);
#endif
}

void dist_dashboard_leave(cask_dist *dist)
{
    if (dist->rt->dash && dist->dash) {   /* waits for a document being written */
        dash_job single = { .rank = 0, .size = 1 };
        dashboard_set_job(dist->rt->dash, &single);
    }
    free(dist->dash);
    dist->dash = NULL;
}

#else   /* no dashboard in this build */

cask_status dist_dashboard_register(cask_dist *dist)
{
    (void)dist;
    return CASK_OK;
}

void dist_dashboard_announce(cask_dist *dist)
{
    (void)dist;
}

void dist_dashboard_leave(cask_dist *dist)
{
    (void)dist;
}
#endif
