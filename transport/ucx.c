/* transport/ucx.c: set-up of the UCX transport (context, worker, the exchange of
 * addresses and the connection), and the calls that any thread may make (status,
 * counters). Teardown is in ucx_close.c, what the progress thread does in
 * ucx_progress.c. See ucx.h for the model. */
#include "transport/ucx_impl.h"
#include "runtime/deadline.h"
#include "runtime/phases.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define UCX_IDENT_MAGIC 0x63756378u     /* "cucx" */

/* What each rank tells the others besides its worker address: enough to tell whether
 * a peer runs on this host (then its pid says whether it still lives). */
typedef struct ucx_ident {
    uint32_t magic;
    int32_t pid;
    uint64_t pidns;
    char boot_id[40];
    int32_t seg_fd;         /* its shared-memory segment's fd (ucx_seg.h), -1: none */
    int32_t bell_fd;        /* the pipe its rings' peers ring (ucx_segring.h), -1: none */
    uint64_t seg_bytes;
    uint32_t addr_len;
} ucx_ident;

uint64_t ucx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

cask_status ucx_status(ucs_status_t s)
{
    switch (s) {
    case UCS_OK: return CASK_OK;
    case UCS_ERR_NO_MEMORY: return CASK_ERR_NOMEM;
    case UCS_ERR_CANCELED: return CASK_ERR_CANCELLED;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_IO_ERROR:
        return CASK_ERR_PEER;
    default: return CASK_ERR_UCX;
    }
}

void ucx_record_error(xport_ucx *x, const char *fmt, ...)
{
    pthread_mutex_lock(&x->mu);
    if (!x->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err, sizeof x->err, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&x->mu);
}

void ucx_phase_end(xport_ucx *x, int ph, uint64_t *t)
{
    uint64_t now = ucx_now_ns();
    if (x->phase_ns)
        x->phase_ns[ph] += now - *t;
    *t = now;
}

static cask_status setup_fail(char *err, size_t errlen, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cask_status setup_fail(char *err, size_t errlen, cask_status st, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

cask_status xport_ucx_create(xport_boot *boot, const xport_ucx_config *cfg,
                             xport_ucx **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!boot || !out)
        return setup_fail(err, errlen, CASK_ERR_INVALID, "xport_ucx_create: NULL argument");
    *out = NULL;
    uint64_t t = ucx_now_ns();
    xport_ucx *x = calloc(1, sizeof *x);
    if (!x)
        return setup_fail(err, errlen, CASK_ERR_NOMEM, "xport_ucx_create: out of memory");
    x->boot = boot;
    x->rank = xport_boot_rank(boot);
    x->size = xport_boot_size(boot);
    x->epfd = x->wakefd = x->worker_fd = -1;
    x->bell[0] = x->bell[1] = -1;
    pthread_mutex_init(&x->mu, NULL);
    pthread_mutex_init(&x->hmu, NULL);
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->cv, NULL);
    ucx_read_config(x, cfg);
    cask_status st = CASK_OK;
    ucx_seg_setup(x);

    x->peers = calloc((size_t)x->size, sizeof *x->peers);
    if (!x->peers) {
        st = setup_fail(err, errlen, CASK_ERR_NOMEM, "xport_ucx_create: out of memory");
        goto fail;
    }

    ucp_config_t *conf = NULL;
    ucs_status_t s = ucp_config_read(NULL, NULL, &conf);
    if (s != UCS_OK) {
        st = setup_fail(err, errlen, ucx_status(s), "ucp_config_read on rank %d: %s",
                        x->rank, ucs_status_string(s));
        goto fail;
    }
    ucx_choose_transports(x, conf);
    ucp_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                   UCP_PARAM_FIELD_NAME;
    p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    p.mt_workers_shared = 0;
    p.name = "cask";
    s = ucp_init(&p, conf, &x->ctx);
    ucp_config_release(conf);
    if (s != UCS_OK) {
        x->ctx = NULL;
        st = setup_fail(err, errlen, ucx_status(s), "ucp_init on rank %d: %s", x->rank,
                        ucs_status_string(s));
        goto fail;
    }

    x->cuda_mem = ucx_context_cuda(x->ctx);
    ucx_phase_end(x, PHASE_UCX_CONTEXT, &t);

    /* SERIALIZED: never two threads in UCX at once (the progress thread while
     * connected, this thread before and after), so UCX needs no lock of its own. */
    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof wp);
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    s = ucp_worker_create(x->ctx, &wp, &x->worker);
    if (s != UCS_OK) {
        x->worker = NULL;
        st = setup_fail(err, errlen, ucx_status(s), "ucp_worker_create on rank %d: %s",
                        x->rank, ucs_status_string(s));
        goto fail;
    }
    ucp_worker_attr_t wa;
    memset(&wa, 0, sizeof wa);
    wa.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    s = ucp_worker_query(x->worker, &wa);
    if (s != UCS_OK) {
        st = setup_fail(err, errlen, ucx_status(s), "ucp_worker_query on rank %d: %s",
                        x->rank, ucs_status_string(s));
        goto fail;
    }
    if (wa.max_am_header < sizeof(((ucx_op *)0)->hdr)) {
        st = setup_fail(err, errlen, CASK_ERR_UCX,
                        "ucp_worker_query on rank %d: active-message headers are limited to "
                        "%zu bytes, cask needs %zu", x->rank, wa.max_am_header,
                        sizeof(((ucx_op *)0)->hdr));
        goto fail;
    }
    s = ucp_worker_get_address(x->worker, &x->addr, &x->addr_len);
    if (s != UCS_OK) {
        x->addr = NULL;
        st = setup_fail(err, errlen, ucx_status(s), "ucp_worker_get_address on rank %d: %s",
                        x->rank, ucs_status_string(s));
        goto fail;
    }
    s = ucp_worker_get_efd(x->worker, &x->worker_fd);
    if (s != UCS_OK) {
        st = setup_fail(err, errlen, ucx_status(s), "ucp_worker_get_efd on rank %d: %s",
                        x->rank, ucs_status_string(s));
        goto fail;
    }
    static const struct { unsigned id; ucp_am_recv_callback_t cb; } ams[] = {
        { UCX_AM_DATA, ucx_am_data_cb }, { UCX_AM_CTRL, ucx_am_ctrl_cb } };
    for (size_t i = 0; i < sizeof ams / sizeof ams[0]; i++) {
        ucp_am_handler_param_t hp;
        memset(&hp, 0, sizeof hp);
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        hp.id = ams[i].id;
        hp.cb = ams[i].cb;
        hp.arg = x;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;
        s = ucp_worker_set_am_recv_handler(x->worker, &hp);
        if (s != UCS_OK) {
            st = setup_fail(err, errlen, ucx_status(s),
                            "ucp_worker_set_am_recv_handler on rank %d: %s", x->rank,
                            ucs_status_string(s));
            goto fail;
        }
    }

    x->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    x->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (x->wakefd < 0 || x->epfd < 0) {
        st = setup_fail(err, errlen, CASK_ERR_NOMEM, "eventfd/epoll_create1: %s",
                        strerror(errno));
        goto fail;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = x->worker_fd };
    if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->worker_fd, &ev) ||
        (ev.data.fd = x->wakefd, epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->wakefd, &ev))) {
        st = setup_fail(err, errlen, CASK_ERR_INTERNAL, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    ucx_ring_setup(x, x->epfd);
    ucx_phase_end(x, PHASE_UCX_WORKER, &t);
    *out = x;
    return CASK_OK;
fail:
    xport_ucx_destroy(x, NULL, 0);
    return st;
}

cask_status xport_ucx_set_handler(xport_ucx *x, unsigned id, xport_ucx_am_fn fn, void *arg)
{
    if (!x || id >= XPORT_UCX_MAX_AM)
        return CASK_ERR_INVALID;
    ucx_handler *h = NULL;
    if (fn) {
        h = calloc(1, sizeof *h);
        if (!h)
            return CASK_ERR_NOMEM;
        h->fn = fn;
        h->arg = arg;
    }
    /* The progress thread may be reading the old slot right now: keep it until
     * destroy instead of freeing it. */
    pthread_mutex_lock(&x->hmu);
    ucx_handler *old = atomic_exchange(&x->handlers[id], h);
    if (old) {
        old->retired = x->retired;
        x->retired = old;
    }
    pthread_mutex_unlock(&x->hmu);
    return CASK_OK;
}

static uint64_t pid_namespace(void)
{
    struct stat sb;
    return stat("/proc/self/ns/pid", &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

static cask_status exchange_and_connect(xport_ucx *x)
{
    size_t blen = sizeof(ucx_ident) + x->addr_len;
    unsigned char *blob = calloc(1, blen);
    if (!blob)
        return CASK_ERR_NOMEM;
    ucx_ident me = { .magic = UCX_IDENT_MAGIC, .pid = (int32_t)getpid(),
                     .pidns = pid_namespace(), .addr_len = (uint32_t)x->addr_len,
                     .seg_fd = x->seg ? ucx_seg_fd(x->seg) : -1, .bell_fd = x->bell[0],
                     .seg_bytes = x->seg ? ucx_seg_bytes(x->seg) : 0 };
    xport_boot_host_id(me.boot_id, sizeof me.boot_id);
    memcpy(blob, &me, sizeof me);
    memcpy(blob + sizeof me, x->addr, x->addr_len);
    void **blobs = NULL;
    size_t *lens = NULL;
    cask_status st = xport_boot_allgather(x->boot, "ucx.addr", blob, blen, &blobs, &lens);
    free(blob);
    if (st) {
        ucx_record_error(x, "exchanging UCX addresses: %s", xport_boot_error(x->boot));
        return st;
    }
    uint64_t now = x->connect_ns[1] = ucx_now_ns();
    for (int r = 0; r < x->size && !st; r++) {
        ucx_peer *p = &x->peers[r];
        ucx_ident id;
        if (lens[r] < sizeof id) {
            ucx_record_error(x, "rank %d sent a UCX address of %zu bytes", r, lens[r]);
            st = CASK_ERR_FORMAT;
            break;
        }
        memcpy(&id, blobs[r], sizeof id);
        if (id.magic != UCX_IDENT_MAGIC || sizeof id + id.addr_len != lens[r]) {
            ucx_record_error(x, "rank %d sent a malformed UCX address", r);
            st = CASK_ERR_FORMAT;
            break;
        }
        p->x = x;
        p->rank = r;
        p->credits = x->credits;
        p->last_recv_ns = p->last_send_ns = now;
        p->pid = id.pid;
        p->local = r != x->rank && id.pidns == me.pidns && me.boot_id[0] &&
                   strncmp(id.boot_id, me.boot_id, sizeof id.boot_id) == 0;
        if (p->local && id.seg_fd >= 0)
            ucx_seg_map(x, p, id.seg_fd, id.seg_bytes, id.bell_fd);
        ucp_ep_params_t ep;
        memset(&ep, 0, sizeof ep);
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = (const ucp_address_t *)((unsigned char *)blobs[r] + sizeof id);
        /* This process cannot fail without us: the self transport (no peer-failure
         * support) may carry its messages. */
        ep.err_mode = r == x->rank ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb = ucx_ep_error_cb;
        ep.err_handler.arg = p;
        ucs_status_t s = ucp_ep_create(x->worker, &ep, &p->ep);
        if (s != UCS_OK) {
            p->ep = NULL;
            ucx_record_error(x, "ucp_ep_create from rank %d to rank %d: %s", x->rank, r,
                             ucs_status_string(s));
            st = ucx_status(s);
        }
    }
    xport_boot_free_blobs(x->boot, blobs, lens);
    x->connect_ns[2] = ucx_now_ns();
    return st;
}

int ucx_handshake_ms(const xport_ucx *x)
{
    return x->timeout_ms > 0 ? (x->timeout_ms > 10000 ? x->timeout_ms : 10000) : 120000;
}

cask_status xport_ucx_connect(xport_ucx *x)
{
    if (!x)
        return CASK_ERR_INVALID;
    if (x->thread_started)
        return CASK_ERR_STATE;
    x->connect_ns[0] = ucx_now_ns();
    cask_status st = exchange_and_connect(x);
    if (st)
        return st;
    ucx_heartbeat_scale(x);
    if (x->late_hello_rank == x->rank && x->late_hello_ms > 0) {
        struct timespec ts = { x->late_hello_ms / 1000, (x->late_hello_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    x->next_tick_ns = ucx_now_ns();
    /* Peers may send as soon as they are connected, before our handshake ends: from
     * now on sends are taken (handlers may answer at once). */
    atomic_store(&x->connected, 1);
    if (pthread_create(&x->thread, NULL, ucx_progress_main, x)) {
        atomic_store(&x->connected, 0);
        ucx_record_error(x, "rank %d: cannot start the UCX progress thread", x->rank);
        return CASK_ERR_NOMEM;
    }
    x->thread_started = 1;
    atomic_store(&x->cmd_hello, 1);
    ucx_wake(x);

    struct timespec dl;
    deadline_in(&dl, ucx_join_ms(x));
    int rc = 0;
    pthread_mutex_lock(&x->mu);
    while (x->hellos < x->size && !x->dead && rc == 0)
        rc = pthread_cond_timedwait(&x->cv, &x->mu, &dl);
    int ok = x->hellos == x->size && !x->dead;
    pthread_mutex_unlock(&x->mu);
    if (!ok) {
        char missing[128] = "";
        size_t n = 0;
        for (int r = 0; r < x->size && n + 12 < sizeof missing; r++)
            if (!x->peers[r].hello)
                n += (size_t)snprintf(missing + n, sizeof missing - n, " %d", r);
        ucx_record_error(x, "rank %d: no answer from rank(s)%s within %d ms of connecting",
                         x->rank, missing, ucx_join_ms(x));
        return CASK_ERR_PEER;
    }
    x->connect_ns[3] = ucx_now_ns();
    if (x->phase_ns) {
        x->phase_ns[PHASE_ADDRESSES] += x->connect_ns[1] - x->connect_ns[0];
        x->phase_ns[PHASE_WIREUP] += x->connect_ns[2] - x->connect_ns[1];
        x->phase_ns[PHASE_HELLO] += x->connect_ns[3] - x->connect_ns[2];
    }
    if (x->seg && x->cma)
        ucx_note_cma_lanes(x);   /* which peers' large messages go by CMA instead */
    const char *info = getenv("CASK_UCX_EP_INFO");
    if (info && *info && strcmp(info, "0"))
        ucx_print_ep_info(x, stderr, !strcmp(info, "2"));
    return CASK_OK;
}

int xport_ucx_rank(const xport_ucx *x) { return x->rank; }
int xport_ucx_size(const xport_ucx *x) { return x->size; }

cask_status xport_ucx_peer_status(const xport_ucx *x, int peer)
{
    if (!x || peer < 0 || peer >= x->size)
        return CASK_ERR_INVALID;
    return atomic_load(&x->peers[peer].state) == PEER_DEAD ? CASK_ERR_PEER : CASK_OK;
}

cask_status xport_ucx_fence(xport_ucx *x, int peer)
{
    if (!x || peer < 0 || peer >= x->size || peer == x->rank)
        return CASK_ERR_INVALID;
    atomic_store(&x->peers[peer].fence, 1);
    return CASK_OK;
}

cask_status xport_ucx_peer_stats(const xport_ucx *x, int peer, xport_ucx_stats *o)
{
    if (!x || !o || peer < 0 || peer >= x->size)
        return CASK_ERR_INVALID;
    const ucx_peer *p = &x->peers[peer];
    o->msgs_sent = atomic_load_explicit(&p->msgs_sent, memory_order_relaxed);
    o->bytes_sent = atomic_load_explicit(&p->bytes_sent, memory_order_relaxed);
    o->msgs_recv = atomic_load_explicit(&p->msgs_recv, memory_order_relaxed);
    o->bytes_recv = atomic_load_explicit(&p->bytes_recv, memory_order_relaxed);
    o->credit_stalls = atomic_load_explicit(&p->credit_stalls, memory_order_relaxed);
    o->max_queued = atomic_load_explicit(&p->max_queued, memory_order_relaxed);
    o->max_in_flight = atomic_load_explicit(&p->max_in_flight, memory_order_relaxed);
    o->max_window = atomic_load_explicit(&p->max_window, memory_order_relaxed);
    o->seg_msgs_sent = atomic_load_explicit(&p->seg_msgs_sent, memory_order_relaxed);
    o->seg_bytes_sent = atomic_load_explicit(&p->seg_bytes_sent, memory_order_relaxed);
    o->seg_msgs_recv = atomic_load_explicit(&p->seg_msgs_recv, memory_order_relaxed);
    o->ring_msgs_sent = atomic_load_explicit(&p->ring_msgs_sent, memory_order_relaxed);
    o->ring_msgs_recv = atomic_load_explicit(&p->ring_msgs_recv, memory_order_relaxed);
    o->ring_queued = 0;
    if (p->rtx.init) {
        pthread_mutex_lock((pthread_mutex_t *)&p->rtx.mu);
        o->ring_queued = p->rtx.q_len;
        pthread_mutex_unlock((pthread_mutex_t *)&p->rtx.mu);
    }
    o->seg_held = x->seg ? ucx_seg_held(x->seg, peer) : 0;
    o->seg_mapped = atomic_load(&p->seg_mapped);
    return CASK_OK;
}

void xport_ucx_error(const xport_ucx *x, char *buf, size_t len)
{
    if (!buf || !len)
        return;
    if (!x) {
        buf[0] = 0;
        return;
    }
    pthread_mutex_lock((pthread_mutex_t *)&x->mu);
    snprintf(buf, len, "%s", x->err);
    pthread_mutex_unlock((pthread_mutex_t *)&x->mu);
}
