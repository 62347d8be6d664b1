/* dashboard.c: the live dashboard's HTTP server (dashboard.h), on libmicrohttpd: one
 * internal polling thread, GET only, bounded connections and memory. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/dashboard.h"
#include "runtime/log.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

struct dashboard {
    cask_runtime *rt;
    struct MHD_Daemon *mhd;
    char url[96];
    pthread_mutex_t mu;     /* job */
    dash_job job;
};

static MHD_RESULT reply(struct MHD_Connection *c, unsigned code, const char *type, char *body,
                        size_t len, int must_free)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    MHD_RESULT ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static MHD_RESULT text(struct MHD_Connection *c, unsigned code, const char *msg)
{
    return reply(c, code, "text/plain; charset=utf-8", (char *)msg, strlen(msg), 0);
}

static MHD_RESULT doc(struct MHD_Connection *c, const char *type, char *body)
{
    if (!body)
        return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
    return reply(c, MHD_HTTP_OK, type, body, strlen(body), 1);
}

static MHD_RESULT on_request(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    dashboard *d = cls;
    (void)version;
    (void)upload;
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
        if (*upload_size) {        /* read and drop a body; answer once it has come */
            *upload_size = 0;
            return MHD_YES;
        }
        return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET only\n");
    }
    if (!*con_cls) {               /* the first call only sees the headers */
        *con_cls = d;
        return MHD_YES;
    }
    if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)dashboard_page_html,
                     dashboard_page_len, 0);
    /* documents are written under d->mu: the job's callbacks (a distributed job's
     * counters) cannot go away while one runs (dashboard_set_job waits) */
    const char *type = "application/json";
    char *body;
    pthread_mutex_lock(&d->mu);
    if (!strcmp(url, "/api/status")) {
        body = dash_render_status(d->rt, &d->job);
    } else if (!strcmp(url, "/api/stream")) {
        const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
        body = dash_render_stream(d->rt, since ? strtoull(since, NULL, 10) : 0);
    } else if (!strcmp(url, "/metrics")) {
        type = "text/plain; version=0.0.4; charset=utf-8";
        body = dash_render_metrics(d->rt, &d->job);
    } else {
        pthread_mutex_unlock(&d->mu);
        return text(c, MHD_HTTP_NOT_FOUND, "not found: try /, /api/status, /api/stream, /metrics\n");
    }
    pthread_mutex_unlock(&d->mu);
    return doc(c, type, body);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    dashboard *d = cls;
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = 0;
    log_msg(d->rt, CASK_LOG_DEBUG, "dashboard: %s", msg);
}

static int parse_addr(const char *addr, struct sockaddr_in *sa, char *err, size_t errlen)
{
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(addr, ':');
    const char *port = addr;
    if (colon) {
        size_t hl = (size_t)(colon - addr);
        if (hl >= sizeof host) {
            snprintf(err, errlen, "CASK_DASHBOARD=%s: host too long", addr);
            return -1;
        }
        if (hl) {
            memcpy(host, addr, hl);
            host[hl] = 0;
        }
        port = colon + 1;
    }
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    char *end;
    long p = strtol(port, &end, 10);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (!*port || *end || p < 0 || p > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
        snprintf(err, errlen, "CASK_DASHBOARD=%s: expected HOST:PORT or PORT (HOST an IPv4 "
                 "address or localhost)", addr);
        return -1;
    }
    sa->sin_port = htons((uint16_t)p);
    return 0;
}

cask_status dashboard_start(cask_runtime *rt, const char *addr, dashboard **out, char *err,
                            size_t errlen)
{
    struct sockaddr_in sa;
    if (parse_addr(addr, &sa, err, errlen))
        return CASK_ERR_INVALID;
    dashboard *d = calloc(1, sizeof *d);
    if (!d)
        return CASK_ERR_NOMEM;
    d->rt = rt;
    d->job.size = 1;
    pthread_mutex_init(&d->mu, NULL);
    unsigned base = ntohs(sa.sin_port);
    int tries = base ? 64 : 1;
    for (int i = 0; i < tries && !d->mhd; i++) {
        sa.sin_port = htons((uint16_t)(base + (unsigned)i));
        d->mhd = MHD_start_daemon(
            MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, d,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned)DASH_MAX_CONN,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)DASH_MAX_CONN,
            MHD_OPTION_CONNECTION_TIMEOUT, 5u,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, d,
            MHD_OPTION_END);
    }
    if (!d->mhd) {
        snprintf(err, errlen, "dashboard: cannot listen on %s (ports %u..%u): %s", addr, base,
                 base + (unsigned)tries - 1, strerror(errno ? errno : EADDRINUSE));
        pthread_mutex_destroy(&d->mu);
        free(d);
        return CASK_ERR_IO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    snprintf(d->url, sizeof d->url, "http://%s:%u/", host,
             info ? (unsigned)info->port : ntohs(sa.sin_port));
    *out = d;
    return CASK_OK;
}

void dashboard_stop(dashboard *d)
{
    if (!d)
        return;
    MHD_stop_daemon(d->mhd);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

const char *dashboard_url(const dashboard *d)
{
    return d->url;
}

void dashboard_set_job(dashboard *d, const dash_job *job)
{
    pthread_mutex_lock(&d->mu);
    d->job = *job;
    pthread_mutex_unlock(&d->mu);
}
