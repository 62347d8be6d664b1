/* distributed/dist.c: a process's membership of a distributed cask job: joining it
 * (bootstrap + UCX), control messages, barriers, and noticing lost peers; the data
 * declarations are in dist_data.c. See include/cask/distributed.h. */
#include "distributed/dist_impl.h"
#include "distributed/dist_steal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "runtime/log.h"
#include "runtime/phases.h"
#include "runtime/runtime.h"

void dist_fail(cask_dist *dist, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dist->err, sizeof dist->err, fmt, ap);
    va_end(ap);
}

/* ---- messages ---- */

struct cask_dist_graph *dist_find_graph(cask_dist *dist, uint32_t id)
{
    for (struct cask_dist_graph *g = dist->graphs; g; g = g->next)
        if (g->id == id)
            return g;
    return NULL;
}

#ifdef CASK_HAVE_UCX
/* silent: only silence (the peer timeout), which a message from it takes back
 * (dist_member_on_back); else a failure */
static void peer_lost(cask_dist *dist, int peer, const char *why, int silent)
{
    /* receives that may never come end now (several graphs may be computing) */
    enum { MAXG = 16 };
    cask_task_async **tok[MAXG];
    struct cask_dist_graph *gs[MAXG];
    size_t ntok[MAXG];
    int ng = 0;
    char msg[sizeof dist->err];
    pthread_mutex_lock(&dist->mu);
    if (peer < 64 && !silent)
        dist->silent &= ~(1ull << peer);   /* failed for good */
    else if (peer < 64 && !dist->lost[peer])
        dist->silent |= 1ull << peer;
    if (peer < 64)
        dist->heard_back &= ~(1ull << peer);   /* lost again since */
    if (!dist->lost[peer] && dist->excluded[peer]) {
        dist->lost[peer] = 1;   /* fenced out already: the survivors went on without it */
        dist->nlost++;
    } else if (!dist->lost[peer]) {
        dist->lost[peer] = 1;
        dist->nlost++;
        if (!dist->err[0])
            dist_fail(dist, "rank %d lost: %s", peer, why);
        for (struct cask_dist_graph *g = dist->graphs; g && ng < MAXG; g = g->next)
            if (g->running) {
                tok[ng] = dist_xfer_take_waiting(g, &ntok[ng]);
                g->handlers_in++;
                gs[ng++] = g;
            }
    }
    snprintf(msg, sizeof msg, "%s", dist->err);
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    dist_steal_on_lost(dist, peer);
    for (int i = 0; i < ng; i++)
        dist_xfer_end_run(gs[i], tok[i], ntok[i], CASK_ERR_PEER, msg);
    pthread_mutex_lock(&dist->mu);
    for (int i = 0; i < ng; i++)
        gs[i]->handlers_in--;
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
    dist_nccl_abort(dist, msg);
    dist_testkill_on_lost(dist);
}

static void on_peer_lost(void *arg, int peer, cask_status st, const char *why)
{
    (void)st;
    peer_lost(arg, peer, why, 0);
}

/* The transport's suspicion (st != CASK_OK: silent for the peer timeout) and its end
 * (CASK_OK: heard again), on its progress thread. A rank the others can go on without
 * (a majority remains) is lost at once, as any: its sends in flight end, so that the
 * survivors do not wait for it. Only one without which no majority would remain, after
 * another rank's loss, stays a suspect that a message takes back
 * (dist_member_on_back): leaving it out could only fence this rank too. */
static void on_peer_silent(void *arg, int peer, cask_status st, const char *why)
{
    cask_dist *dist = arg;
    if (!st) {
        dist_member_on_back(dist, peer);
        return;
    }
    int hard = !dist_member_keep_suspect(dist, peer);
    peer_lost(dist, peer, why, !hard);
    if (hard)
        xport_ucx_fence(dist->ucx, peer);   /* silent already: failed at the next tick */
}

static void on_ctrl_msg(void *arg, xport_ucx_msg *m)
{
    cask_dist *dist = arg;
    dist_ctrl_hdr h;
    if (m->header_len != sizeof h)
        return;
    memcpy(&h, m->header, sizeof h);
    char msg[sizeof ((cask_dist_graph *)0)->abort_msg] = "";   /* an ABORT's cause */
    if (m->data && m->len) {
        size_t n = m->len < sizeof msg - 1 ? m->len : sizeof msg - 1;
        memcpy(msg, m->data, n);
        msg[n] = 0;
    }
    dist_on_ctrl(dist, m->peer, &h, msg);
}

static void on_state_msg(void *arg, xport_ucx_msg *m)
{
    dist_on_state(arg, m->peer, m->header, m->header_len, m);
}

static void on_data_msg(void *arg, xport_ucx_msg *m)
{
    cask_dist *dist = arg;
    dist_data_hdr h;
    if (m->header_len != sizeof h)
        return;
    memcpy(&h, m->header, sizeof h);
    dist_on_data(dist, m->peer, &h, m);
}

static void ctrl_sent(void *arg, cask_status st, const char *why)
{
    free(arg);   /* the message text */
    (void)st; (void)why;   /* a lost peer is reported by on_peer_lost */
}
#endif

void dist_ctrl_all(cask_dist *dist, uint32_t graph, uint32_t run, uint32_t type,
                   uint32_t status, uint64_t value, const char *msg)
{
#ifdef CASK_HAVE_UCX
    if (!dist->ucx)
        return;
    pthread_mutex_lock(&dist->mu);
    dist_ctrl_hdr h = { graph, run, type, status, dist->epoch, 0, value };
    pthread_mutex_unlock(&dist->mu);
    for (int r = 0; r < dist->size; r++) {
        if (r == dist->rank || dist->lost[r] || dist->excluded[r])
            continue;
        char *copy = NULL;
        size_t len = 0;
        if (msg && *msg) {
            len = strlen(msg);
            copy = malloc(len);
            if (copy)
                memcpy(copy, msg, len);
            else
                len = 0;
        }
        if (xport_ucx_am_send(dist->ucx, r, DIST_AM_CTRL, &h, sizeof h, copy, len,
                              ctrl_sent, copy) != CASK_OK)
            free(copy);
    }
#else
    (void)dist; (void)graph; (void)run; (void)type; (void)status; (void)value; (void)msg;
#endif
}

/* ---- joining and leaving ---- */

#ifdef CASK_HAVE_UCX
/* The bootstrap's watch while joining (xport_boot_set_watch): a rank the transport
 * found failed, not one only silent (it may yet come), ends the wait, named. */
static int join_watch(void *arg, char *why, size_t len)
{
    cask_dist *dist = arg;
    int lost = 0;
    pthread_mutex_lock(&dist->mu);
    for (int r = 0; r < dist->size && !lost; r++)
        lost = dist->lost[r] && !(r < 64 && (dist->silent >> r & 1));
    if (lost)
        snprintf(why, len, "%s", dist->err);
    pthread_mutex_unlock(&dist->mu);
    return lost;
}

/* A step of the join failed: its message says why, naming the lost rank where the
 * bootstrap (a rank that did not arrive) or the transport (a rank it saw fail) knows. */
enum { JOIN_NAME_WAIT_S = 5 };
static cask_status join_fail(cask_dist *dist, cask_status st, const char *step)
{
    char lost[sizeof dist->err];
    pthread_mutex_lock(&dist->mu);
    if (st == CASK_ERR_PEER && xport_boot_kind(dist->boot) == XPORT_BOOT_PMIX) {
        /* a PMIx fence that a rank's death failed names no rank; the transport, whose
         * endpoint to a dead process fails within moments, usually can: wait a little */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += JOIN_NAME_WAIT_S;
        while (!dist->nlost && pthread_cond_timedwait(&dist->cv, &dist->mu, &until) == 0)
            ;
    }
    snprintf(lost, sizeof lost, "%s", dist->err);
    pthread_mutex_unlock(&dist->mu);
    const char *boot = xport_boot_error(dist->boot);
    int both = boot[0] && lost[0] && !strstr(boot, lost);
    return log_error(dist->rt, st, "cask_dist_init on rank %d: %s: %s%s%s", dist->rank, step,
                     boot[0] ? boot : lost[0] ? lost : cask_status_string(st),
                     both ? "; " : "", both ? lost : "");
}
#endif

/* The bootstrap, then the record's own memory, last (a failed init, finalize): what the
 * parts made is gone by then. */
static void dist_free(cask_dist *dist)
{
    xport_boot_finalize(dist->boot);
    free(dist->data);
    free(dist->index_keys);
    free(dist->index_vals);
    free(dist->lost);
    free(dist->left);
    free(dist->excluded);
    free(dist->mem_epoch);
    free(dist->mem_mask);
    free(dist->barrier_seen);
    free(dist->gone_ok_run);
    free(dist->testkill);
    pthread_mutex_destroy(&dist->mu);
    pthread_cond_destroy(&dist->cv);
    free(dist);
}

cask_status cask_dist_init(cask_runtime *rt, const cask_dist_config *cfg, cask_dist **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    *out = NULL;
    /* this join's phases (runtime/phases.h): the last join's are printed */
    uint64_t *ph = rt->phases.ns, t0 = phases_now_ns(), t;
    for (int i = PHASE_JOIN; i <= PHASE_BOOT_BARRIER; i++)
        ph[i] = 0;
    cask_dist *dist = calloc(1, sizeof *dist);
    if (!dist)
        return log_error(rt, CASK_ERR_NOMEM, "cask_dist_init");
    dist->rt = rt;
    dist->gpu_device = dist->nccl_device = -1;
    pthread_mutex_init(&dist->mu, NULL);
    pthread_cond_init(&dist->cv, NULL);
    const char *s = getenv("CASK_DIST_STEAL");
    dist->steal = s && *s ? atoi(s) != 0 : 1;
    if (cfg && (cfg->field_mask & CASK_DIST_STEAL))
        dist->steal = cfg->steal != 0;
    char err[512];
    t = phases_now_ns();
    cask_status st = xport_boot_init(NULL, &dist->boot, err, sizeof err);
    ph[PHASE_BOOT] = phases_now_ns() - t;
    if (st) {
        st = log_error(rt, st, "cask_dist_init: %s", err);
        goto fail;
    }
    dist->rank = xport_boot_rank(dist->boot);
    dist->size = xport_boot_size(dist->boot);
    dist->local_rank = xport_boot_local_rank(dist->boot);
    dist->local_size = xport_boot_local_size(dist->boot);
    dist->lost = calloc((size_t)dist->size, sizeof *dist->lost);
    dist->left = calloc((size_t)dist->size, sizeof *dist->left);
    dist->excluded = calloc((size_t)dist->size, sizeof *dist->excluded);
    dist->mem_epoch = calloc((size_t)dist->size, sizeof *dist->mem_epoch);
    dist->mem_mask = calloc((size_t)dist->size, sizeof *dist->mem_mask);
    dist->barrier_seen = calloc((size_t)dist->size, sizeof *dist->barrier_seen);
    if (!dist->lost || !dist->left || !dist->excluded || !dist->mem_epoch || !dist->mem_mask ||
        !dist->barrier_seen) {
        st = log_error(rt, CASK_ERR_NOMEM, "cask_dist_init");
        goto fail;
    }
    if ((st = dist_recover_init(dist))) {
        st = log_error(rt, st, "cask_dist_init: %s", dist->err);
        goto fail;
    }
    if ((st = dist_xfer_register(dist))) {
        st = log_error(rt, st, "cask_dist_init: registering the transfer tasks");
        goto fail;
    }
    if (xport_boot_error(dist->boot)[0])
        log_msg(rt, CASK_LOG_WARN, "cask_dist_init: %s", xport_boot_error(dist->boot));
    if ((st = dist_steal_init(dist, cfg)))
        goto fail;
    if (dist->size > 1) {
#ifdef CASK_HAVE_UCX
        xport_ucx_config uc = { .field_mask = XPORT_UCX_ON_PEER | XPORT_UCX_ON_SILENT |
                                              XPORT_UCX_PHASES,
                                .on_peer_failure = on_peer_lost,
                                .on_peer_silent = on_peer_silent, .on_peer_arg = dist,
                                .phase_ns = ph };
        if (cfg && (cfg->field_mask & CASK_DIST_PEER_TIMEOUT_MS)) {
            uc.field_mask |= XPORT_UCX_TIMEOUT_MS;
            uc.peer_timeout_ms = cfg->peer_timeout_ms;
        }
        if (cfg && (cfg->field_mask & CASK_DIST_HEARTBEAT_MS)) {
            uc.field_mask |= XPORT_UCX_HEARTBEAT_MS;
            uc.heartbeat_ms = cfg->heartbeat_ms;
        }
        cask_runtime_info info;
        if (cask_runtime_query(rt, &info) == CASK_OK &&
            (info.ngpus == 0 || info.simulated_gpus)) {
            uc.field_mask |= XPORT_UCX_NO_CUDA;   /* UCX without its CUDA parts */
            uc.no_cuda = 1;
        }
        dist_xlog_open(dist);
        dist_gpux_thread_setup(dist, &uc);
        st = xport_ucx_create(dist->boot, &uc, &dist->ucx, err, sizeof err);
        if (st) {
            st = log_error(rt, st, "cask_dist_init on rank %d: %s", dist->rank, err);
            goto fail;
        }
        xport_ucx_set_handler(dist->ucx, DIST_AM_DATA, on_data_msg, dist);
        xport_ucx_set_handler(dist->ucx, DIST_AM_CTRL, on_ctrl_msg, dist);
        if ((st = dist_dashboard_register(dist))) {
            st = log_error(rt, st, "cask_dist_init");
            goto fail;
        }
        dist_steal_register(dist);
        xport_ucx_set_handler(dist->ucx, DIST_AM_STATE, on_state_msg, dist);
        st = xport_ucx_connect(dist->ucx);
        if (st) {
            xport_ucx_error(dist->ucx, err, sizeof err);
            st = log_error(rt, st, "cask_dist_init on rank %d: %s", dist->rank, err);
            goto fail;
        }
        /* from here on a rank lost while joining ends the bootstrap's waits */
        xport_boot_set_watch(dist->boot, join_watch, dist);
        dist_testkill_join(dist, "nccl");
        t = phases_now_ns();
        if ((st = dist_nccl_init(dist))) {
            st = join_fail(dist, st, "agreeing on NCCL");
            goto fail;
        }
        ph[PHASE_NCCL] = phases_now_ns() - t;
        dist_testkill_join(dist, "route");
        t = phases_now_ns();
        if ((st = dist_gpux_register(dist)) || (st = dist_route_init(dist))) {
            st = join_fail(dist, st, "routes of GPU chunks");
            goto fail;
        }
        ph[PHASE_ROUTES] = phases_now_ns() - t;
#else
        st = log_error(rt, CASK_ERR_UNSUPPORTED, "cask_dist_init: a job of %d processes, but "
                       "cask was built without UCX (install libucx-dev and rebuild)",
                       dist->size);
        goto fail;
#endif
    }
    if (!dist->dash && (st = dist_dashboard_register(dist))) {   /* a job of one */
        st = log_error(rt, st, "cask_dist_init");
        goto fail;
    }
    dist_dashboard_announce(dist);
    if ((st = dist_steal_start(dist)))
        goto fail;
    log_msg(rt, CASK_LOG_INFO, "cask_dist_init: rank %d of %d (job %s)", dist->rank,
            dist->size, xport_boot_job(dist->boot));
    rt->phases.rank = dist->rank;
    rt->phases.size = dist->size;
    rt->phases.joined = 1;
    ph[PHASE_JOIN] = phases_now_ns() - t0;
    *out = dist;
    return CASK_OK;
fail:
    dist_dashboard_leave(dist);
    dist_route_free(dist);
    dist_steal_stop(dist);
#ifdef CASK_HAVE_UCX
    xport_ucx_destroy(dist->ucx, NULL, 0);
#endif
    dist_xlog_close(dist);
    dist_steal_finalize(dist);
    dist_free(dist);
    return st;
}

cask_status cask_dist_finalize(cask_dist *dist)
{
    if (!dist)
        return CASK_OK;
    cask_status st = CASK_OK;
    uint64_t *ph = dist->rt->phases.ns, t0 = phases_now_ns(), t = t0;
    dist_dashboard_leave(dist);
    while (dist->graphs)
        cask_dist_graph_destroy(dist->graphs);
    dist_nccl_finalize(dist);
    dist_route_free(dist);
    dist_steal_stop(dist);
    ph[PHASE_GRAPHS] = phases_now_ns() - t;
#ifdef CASK_HAVE_UCX
    if (dist->ucx) {
        char why[512];
        t = phases_now_ns();
        dist_leave_announce(dist);   /* a rank still computing must not wait for this one */
        ph[PHASE_GOODBYE] += phases_now_ns() - t;
        st = xport_ucx_destroy(dist->ucx, why, sizeof why);   /* goodbyes with every rank */
        if (st && dist->nexcluded && !dist->fenced && dist_all_losses_agreed(dist))
            st = CASK_OK;   /* the ranks lost were fenced out and the run recovered */
        if (st && !dist->err[0])
            dist_fail(dist, "%s", why);
        if (st)
            log_msg(dist->rt, CASK_LOG_WARN, "cask_dist_finalize on rank %d: %s", dist->rank,
                    why);
        dist->ucx = NULL;
    }
#endif
    dist_xlog_close(dist);
    dist_steal_finalize(dist);
    for (size_t i = 0; i < dist->ndata; i++) {
        dist_datum *dd = &dist->data[i];
        free(dd->loader_args);
        if (dd->home_made)
            cask_data_destroy(dd->home);
        if (!dd->made_here)
            continue;
        cask_data_destroy(dd->d);
        if (dd->reserved)
            munmap(dd->reserved, dd->bytes);
    }
    while (dist->early) {
        dist_early *e = dist->early;
        dist->early = e->next;
        free(e);
    }
    if (dist->nlost || dist->nexcluded || dist->fenced) {
        /* a fenced rank too: the others, who went on without it, skip the barrier */
        if (!dist_all_losses_agreed(dist) || dist->fenced)
            st = CASK_ERR_PEER;
    } else {
        t = phases_now_ns();
        xport_boot_barrier(dist->boot);   /* everybody leaves together */
        ph[PHASE_BOOT_BARRIER] = phases_now_ns() - t;
    }
    cask_runtime *rt = dist->rt;
    dist_free(dist);
    rt->phases.ns[PHASE_LEAVE] = phases_now_ns() - t0;
    return st;
}

int cask_dist_rank(const cask_dist *dist) { return dist ? dist->rank : 0; }
int cask_dist_size(const cask_dist *dist) { return dist ? dist->size : 1; }
int cask_dist_local_rank(const cask_dist *dist) { return dist ? dist->local_rank : 0; }
int cask_dist_local_size(const cask_dist *dist) { return dist ? dist->local_size : 1; }
const char *cask_dist_error(const cask_dist *dist) { return dist ? dist->err : ""; }

int cask_dist_rank_lost(cask_dist *dist, int rank)
{
    if (!dist || rank < 0 || rank >= dist->size)
        return 0;
    pthread_mutex_lock(&dist->mu);
    int out = dist->lost[rank] || dist->excluded[rank];
    pthread_mutex_unlock(&dist->mu);
    return out;
}

cask_status cask_dist_barrier(cask_dist *dist)
{
    if (!dist)
        return CASK_ERR_INVALID;
    if (dist->size == 1)
        return CASK_OK;
    uint64_t seq = ++dist->barrier_seq, t0 = phases_now_ns();
    dist_ctrl_all(dist, 0, 0, CTRL_BARRIER, 0, seq, NULL);
    cask_status st = CASK_OK;
    char why[sizeof dist->err] = "";
    pthread_mutex_lock(&dist->mu);
    /* Each rank of the view must reach seq. A BARRIER of an older view counts (a rank
     * that completed its graph before the others recovered it never agreed on the new
     * view: it fails here, after sending its BARRIER, and the others go on). A rank of
     * the view that left the job (LEAVE) without reaching seq never will. */
    for (;;) {
        int missing = 0, left = -1;
        for (int r = 0; r < dist->size; r++)
            if (r != dist->rank && !dist->excluded[r] && dist->barrier_seen[r] < seq) {
                missing++;
                if (dist->left[r] && left < 0)
                    left = r;
            }
        if (!missing)
            break;
        if (dist_unagreed(dist)) {
            st = CASK_ERR_PEER;
            snprintf(why, sizeof why, "%s", dist->fenced ? dist->fenced_msg : dist->err[0] ?
                     dist->err : "the membership of the job changed");
            break;
        }
        if (left >= 0) {
            st = CASK_ERR_PEER;
            snprintf(why, sizeof why, "rank %d left the job before the barrier%s%.400s", left,
                     dist->left_why[0] ? ": " : "", dist->left_why);
            if (!dist->err[0])
                snprintf(dist->err, sizeof dist->err, "%s", why);
            break;
        }
        pthread_cond_wait(&dist->cv, &dist->mu);
    }
    pthread_mutex_unlock(&dist->mu);
    if (seq == 1)
        dist->rt->phases.ns[PHASE_BARRIER] = phases_now_ns() - t0;
    if (st)
        log_error(dist->rt, st, "cask_dist_barrier: %s", why);
    return st;
}

void dist_on_barrier(cask_dist *dist, int from, uint64_t seq)
{
    pthread_mutex_lock(&dist->mu);
    if (seq > dist->barrier_seen[from])
        dist->barrier_seen[from] = seq;
    pthread_cond_broadcast(&dist->cv);
    pthread_mutex_unlock(&dist->mu);
}
