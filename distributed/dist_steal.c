/* distributed/dist_steal.c: balancing while a distributed graph runs: the messages,
 * idleness (telling the peers when this rank has nothing to run), and the victim's
 * side: each CPU task of the local graph runs through a wrapper kernel of the same
 * name, which runs the body here (timing it: the learnt time that decides whether a
 * task is worth moving) or, when a peer is idle and the task's bytes are small against
 * its time, ships its inputs there and ends when the outputs land (an asynchronous
 * task). Which tasks get a wrapper: dist_steal_plan.c. The thief's side is
 * dist_steal_exec.c. The protocol is in
 * docs/design/distributed-internals.md. */
#include "distributed/dist_steal_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/graph.h"
#include "runtime/log.h"
#include "runtime/runtime.h"
#include "runtime/task_ctx.h"
#include "runtime/sched.h"    /* sleeping workers: idleness */

/* ---- messages ---- */

#ifdef CASK_HAVE_UCX
_Static_assert(sizeof(steal_hdr) <= XPORT_UCX_MAX_HEADER, "steal_hdr fits a UCX header");
#endif

void steal_tell_idle(struct dist_steal *S, int idle, uint64_t run)
{
#ifdef CASK_HAVE_UCX
    cask_dist *dist = S->dist;
    steal_hdr h = { .type = ST_IDLE, .idle = (uint32_t)idle, .ticket = ++S->told_seq,
                    .graph = (uint32_t)(run >> 32), .run = (uint32_t)run };
    /* how fast this rank runs its kernels: a victim sends nothing to a much slower rank */
    int n = 0, nk = atomic_load(&S->nkern);
    for (int i = 0; idle && i < nk && n < STEAL_ADV; i++) {
        uint64_t ns = atomic_load_explicit(&S->kern[i].ns, memory_order_relaxed);
        if (ns) {
            h.khash[n] = S->kern[i].hash;
            h.kus[n++] = ns / 1000 < UINT32_MAX ? (uint32_t)(ns / 1000) + 1 : UINT32_MAX;
        }
    }
    for (int r = 0; r < dist->size; r++)
        if (r != dist->rank && xport_ucx_peer_status(dist->ucx, r) == CASK_OK)
            xport_ucx_am_send(dist->ucx, r, DIST_AM_STEAL, &h, sizeof h, NULL, 0, NULL, NULL);
#else
    (void)S; (void)idle; (void)run;
#endif
}

static void slot_maybe_free(struct dist_steal *S, vslot *v)
{
    if (v->used && v->result_seen && v->send_done) {
        v->used = 0;
        v->gen++;
        pthread_cond_broadcast(&S->cv);
    }
}

/* The result (or the failure) of a task of ours that ran on v->peer: ends it. */
static void vslot_end(struct dist_steal *S, vslot *v, cask_status st, const char *why)
{
    char msg[CASK_ERRMSG_LEN];
    if (st)
        snprintf(msg, sizeof msg, "ran on rank %d (moved from rank %d by balancing): %s",
                 v->peer, S->dist->rank, why && *why ? why : cask_status_string(st));
    cask_task_async_end(v->tok, st, st ? msg : NULL);
}

#ifdef CASK_HAVE_UCX
static void result_landed(void *arg, cask_status st, const char *why)
{
    vslot *v = arg;
    struct dist_steal *S = v->g->dist->stl;
    if (!st) {
        size_t off = 0;
        for (int o = 0; o < v->nout; o++) {
            memcpy(v->out[o], v->res + off, v->outsz[o]);
            off += steal_align(v->outsz[o]);
        }
    }
    vslot_end(S, v, st, why);
    pthread_mutex_lock(&S->mu);
    S->inflight[v->peer]--;
    v->result_seen = 1;
    slot_maybe_free(S, v);
    pthread_mutex_unlock(&S->mu);
}

static void task_sent(void *arg, cask_status st, const char *why)
{
    vslot *v = arg;
    struct dist_steal *S = v->g->dist->stl;
    int end = 0;
    pthread_mutex_lock(&S->mu);
    if (st && !v->result_seen) {   /* no result will come */
        v->result_seen = 1;
        S->inflight[v->peer]--;
        end = 1;
    }
    pthread_mutex_unlock(&S->mu);
    if (end)
        vslot_end(S, v, st, why);
    pthread_mutex_lock(&S->mu);
    v->send_done = 1;
    slot_maybe_free(S, v);
    pthread_mutex_unlock(&S->mu);
}

static void on_result(struct dist_steal *S, xport_ucx_msg *m, const steal_hdr *h)
{
    int i = (int)(h->ticket & 0xffff);
    uint32_t gen = h->ticket >> 16;
    pthread_mutex_lock(&S->mu);
    vslot *v = i < S->nvs ? &S->vs[i] : NULL;
    if (!v || !v->used || (v->gen & 0xffff) != gen || v->peer != m->peer || v->result_seen ||
        v->result_seen == 2) {
        pthread_mutex_unlock(&S->mu);
        return;   /* a late answer for a task already ended (its thief was declared lost) */
    }
    v->result_seen = 2;   /* taken by this handler; 1 once ended */
    if (!h->status) {
        double svc = (double)h->exec_ns + v->move_ns, *e = &S->svc_ns[v->peer];
        *e = *e > 0 ? 0.75 * *e + 0.25 * svc : svc;
    }
    pthread_mutex_unlock(&S->mu);
    cask_status st = (cask_status)h->status;
    char why[CASK_ERRMSG_LEN] = "";
    if (st) {
        size_t n = m->data && m->len ? (m->len < sizeof why - 1 ? m->len : sizeof why - 1) : 0;
        if (n)
            memcpy(why, m->data, n);
        why[n] = 0;
    } else if (m->len != v->outlen) {
        st = CASK_ERR_PEER;
        snprintf(why, sizeof why, "%zu bytes of results came, %zu expected", m->len, v->outlen);
    } else if (steal_grow(&v->res, &v->res_cap, v->outlen ? v->outlen : 1)) {
        st = CASK_ERR_NOMEM;
        snprintf(why, sizeof why, "no memory for %zu bytes of results", v->outlen);
    } else if (v->outlen) {
        cask_status rst = xport_ucx_recv_into(m, v->res, result_landed, v);
        if (!rst)
            return;   /* result_landed ends it */
        st = rst;
        snprintf(why, sizeof why, "receiving its results failed");
    }
    if (st) {
        vslot_end(S, v, st, why);
    } else {
        vslot_end(S, v, CASK_OK, NULL);
    }
    pthread_mutex_lock(&S->mu);
    S->inflight[v->peer]--;
    v->result_seen = 1;
    slot_maybe_free(S, v);
    pthread_mutex_unlock(&S->mu);
}

static void result_sent(void *arg, cask_status st, const char *why)
{
    tslot *ts = arg;
    struct dist_steal *S = ts->S;
    (void)st; (void)why;   /* a victim that is gone is the victim's peers' problem */
    pthread_mutex_lock(&S->mu);
    ts->next = S->tfree;
    S->tfree = ts;
    pthread_mutex_unlock(&S->mu);
}
#endif

/* The thief's answer: the outputs of ts (ts->out, ts->outlen) or the failure; gives
 * ts back once sent. */
void steal_send_result(struct dist_steal *S, tslot *ts, cask_status st, const char *msg)
{
#ifdef CASK_HAVE_UCX
    steal_hdr h = { .type = ST_RESULT, .graph = ts->graph, .run = ts->run,
                    .ticket = ts->ticket, .status = st, .exec_ns = ts->exec_ns };
    const void *data = st ? msg : ts->out;
    size_t len = st ? (msg ? strlen(msg) : 0) : ts->outlen;
    if (st && len) {   /* the message must outlive the call: keep it in ts */
        if (steal_grow(&ts->out, &ts->out_cap, len)) {
            len = 0;
        } else {
            memcpy(ts->out, msg, len);
            data = ts->out;
        }
    }
    if (xport_ucx_am_send(S->dist->ucx, ts->victim, DIST_AM_STEAL, &h, sizeof h, data, len,
                          result_sent, ts) == CASK_OK)
        return;
#else
    (void)st; (void)msg;
#endif
    pthread_mutex_lock(&S->mu);
    ts->next = S->tfree;
    S->tfree = ts;
    pthread_mutex_unlock(&S->mu);
}

#ifdef CASK_HAVE_UCX
void steal_on_msg(void *arg, xport_ucx_msg *m)
{
    struct dist_steal *S = arg;
    steal_hdr h;
    if (m->header_len != sizeof h || m->peer < 0 || m->peer >= S->dist->size)
        return;
    memcpy(&h, m->header, sizeof h);
    if (h.type == ST_IDLE) {
        if ((int32_t)(h.ticket - S->idle_seq[m->peer]) <= 0)
            return;   /* overtaken by a later one: a stale IDLE would draw tasks to a busy rank */
        S->idle_seq[m->peer] = h.ticket;
        atomic_store(&S->idle_run[m->peer], (uint64_t)h.graph << 32 | h.run);
        if (h.idle)
            for (int i = 0; i < STEAL_ADV; i++) {
                atomic_store(&S->adv_hash[m->peer * STEAL_ADV + i], h.khash[i]);
                atomic_store(&S->adv_us[m->peer * STEAL_ADV + i], h.kus[i]);
            }
        int v = h.idle ? 1 : 0;
        int old = atomic_exchange(&S->idle[m->peer], v);
        atomic_fetch_add(&S->nidle, v - old);
    } else if (h.type == ST_TASK) {
        steal_on_task(S, m, &h);
    } else if (h.type == ST_RESULT) {
        on_result(S, m, &h);
    }
}
#endif

/* Ends every task of ours that peer holds and has not answered: it will not. */
static void end_tasks_at(struct dist_steal *S, int peer, const char *why)
{
    int old = atomic_exchange(&S->idle[peer], 0);
    atomic_fetch_sub(&S->nidle, old);
    for (;;) {
        vslot *v = NULL;
        pthread_mutex_lock(&S->mu);
        for (int i = 0; i < S->nvs && !v; i++)
            if (S->vs[i].used && S->vs[i].peer == peer && !S->vs[i].result_seen)
                v = &S->vs[i];
        if (v) {
            v->result_seen = 1;
            S->inflight[peer]--;
        }
        pthread_mutex_unlock(&S->mu);
        if (!v)
            break;
        vslot_end(S, v, CASK_ERR_PEER, why);
        pthread_mutex_lock(&S->mu);
        slot_maybe_free(S, v);
        pthread_mutex_unlock(&S->mu);
    }
}

void dist_steal_on_lost(cask_dist *dist, int peer)
{
    if (dist->stl)
        end_tasks_at(dist->stl, peer, "that rank was lost with the task");
}

void dist_steal_on_leave(cask_dist *dist, int peer)
{
    /* It answered what it had queued before it said so, but an answer may come after
     * this (no order between messages: then it is dropped, the run ends failed anyway)
     * or never (a task whose inputs were still on their way when it closed). */
    if (dist->stl)
        end_tasks_at(dist->stl, peer, "that rank left the job before answering");
}

/* ---- the victim's side ---- */

/* Ships task t (about to start on this worker) to an idle peer: 0 if it went (the task
 * is then asynchronous), -1 to run it here. */
static int ship(steal_task *t, cask_task_ctx *ctx)
{
#ifdef CASK_HAVE_UCX
    struct dist_steal *S = t->S;
    cask_dist *dist = S->dist;
    cask_dist_graph *g = t->g;
    const dist_task *dt = &g->tasks[t->index];
    uint64_t ns = atomic_load_explicit(&t->k->ns, memory_order_relaxed);
    if (!ns || !dist->ucx)
        return -1;   /* not timed here yet */
    uint32_t run = g->run;
    uint64_t this_run = (uint64_t)g->id << 32 | run;
    size_t all_bytes = 0;
    for (int a = 0; a < dt->naccess; a++)
        all_bytes += cask_task_buffer_size(ctx, a) * ((dt->access[a].mode & CASK_READ ? 1 : 0) +
                                                      (dt->access[a].mode & CASK_WRITE ? 1 : 0));
    double wire_ns = (double)all_bytes / S->bw * 1e9 + 50e3;
    pthread_mutex_lock(&S->mu);
    /* An idle peer gets as many of our tasks queued as it serves in 1.5 times the time
     * one takes here (two while its speed is unknown): a slow rank hands out more, a
     * rank gives none to a peer much slower than itself. */
    int p = -1;
    for (int k = 1; k <= dist->size && p < 0; k++) {
        int q = (S->rr + k) % dist->size;
        /* its time for one: what it said it takes for this kernel, else what it took
         * for ours, else unknown */
        double svc = 0;
        for (int i = 0; i < STEAL_ADV && svc == 0; i++)
            if (atomic_load(&S->adv_hash[q * STEAL_ADV + i]) == t->k->hash &&
                atomic_load(&S->adv_us[q * STEAL_ADV + i]))
                svc = 1e3 * (double)atomic_load(&S->adv_us[q * STEAL_ADV + i]) + wire_ns;
        if (svc == 0)
            svc = S->svc_ns[q];
        int credit = svc > 0 ? (int)(1.5 * (double)ns / svc) : STEAL_CREDIT;
        if (credit > STEAL_CREDIT_MAX)
            credit = STEAL_CREDIT_MAX;
        /* idle in this very run: an IDLE of the run before (every rank is idle at its
         * end) must not draw this run's first tasks to ranks busy with their own */
        if (q != dist->rank && atomic_load(&S->idle[q]) && S->inflight[q] < credit &&
            atomic_load(&S->idle_run[q]) == this_run)
            p = q;
    }
    vslot *v = NULL;
    for (int i = 0; p >= 0 && i < S->nvs && !v; i++)
        if (!S->vs[i].used)
            v = &S->vs[i];
    if (!v) {
        pthread_mutex_unlock(&S->mu);
        return -1;
    }
    /* what must travel: inputs the peer does not keep already, and the outputs */
    uint32_t inmask = 0, sentmask = 0;
    size_t inlen = 0, outlen = 0, bytes = 0;
    for (int a = 0; a < dt->naccess; a++) {
        size_t sz = cask_task_buffer_size(ctx, a);
        cask_access_mode md = dt->access[a].mode;
        if (md & CASK_WRITE) {
            outlen += steal_align(sz);
            bytes += sz;
        }
        if (!(md & CASK_READ))
            continue;
        if (t->keep & (1u << a)) {
            uint64_t *s = &g->stl->sent[(size_t)g->stl->keep_idx[dt->access[a].gid] *
                                        (size_t)dist->size + (size_t)p];
            uint64_t want = (uint64_t)run << 32 | ((uint64_t)t->version[a] + 1);
            if (*s == want)
                continue;   /* it has it */
            sentmask |= 1u << a;
        }
        inmask |= 1u << a;
        inlen += steal_align(sz);
        bytes += sz;
    }
    double move_ns = (double)bytes / S->bw * 1e9 + 50e3;
    if ((double)ns < STEAL_WORTH * move_ns || steal_grow(&v->in, &v->in_cap, inlen ? inlen : 1)) {
        pthread_mutex_unlock(&S->mu);
        return -1;   /* cheaper here */
    }
    for (int a = 0; a < dt->naccess; a++)
        if (sentmask & (1u << a))
            g->stl->sent[(size_t)g->stl->keep_idx[dt->access[a].gid] * (size_t)dist->size +
                         (size_t)p] = (uint64_t)run << 32 | ((uint64_t)t->version[a] + 1);
    S->inflight[p]++;
    S->rr = p;
    v->move_ns = move_ns;
    v->used = 1;
    v->peer = p;
    v->result_seen = 0;
    v->send_done = 0;
    v->g = g;
    v->graph = g->id;
    v->run = run;
    v->tok = cask_task_async_begin(ctx);   /* set before anybody can end it */
    uint32_t ticket = (v->gen & 0xffff) << 16 | (uint32_t)(v - S->vs);
    pthread_mutex_unlock(&S->mu);

    size_t off = 0;
    v->nout = 0;
    v->outlen = outlen;
    for (int a = 0; a < dt->naccess; a++) {
        size_t sz = cask_task_buffer_size(ctx, a);
        if (inmask & (1u << a)) {
            memcpy(v->in + off, cask_task_buffer(ctx, a), sz);
            off += steal_align(sz);
        }
        if (dt->access[a].mode & CASK_WRITE) {
            v->out[v->nout] = cask_task_buffer(ctx, a);
            v->outsz[v->nout++] = sz;
        }
    }
    snprintf(v->name, sizeof v->name, "%s", cask_task_name(ctx));
    steal_hdr h = { .type = ST_TASK, .graph = g->id, .run = run, .index = (uint32_t)t->index,
                    .ticket = ticket, .inmask = inmask, .keepmask = t->keep };
    memcpy(h.version, t->version, sizeof h.version);
    LOG_DEBUG(dist->rt, "dist rank %d: task %s goes to idle rank %d (%zu bytes)", dist->rank,
              cask_task_name(ctx), p, bytes);
    atomic_fetch_add(&g->stl->out, 1);   /* before its result can end the run */
    if (xport_ucx_am_send(dist->ucx, p, DIST_AM_STEAL, &h, sizeof h, v->in, inlen, task_sent,
                          v) != CASK_OK) {
        pthread_mutex_lock(&S->mu);
        if (v->result_seen) {   /* the peer was lost meanwhile and the task ended failed */
            v->send_done = 1;
            slot_maybe_free(S, v);
            pthread_mutex_unlock(&S->mu);
            return 0;
        }
        atomic_fetch_sub(&g->stl->out, 1);
        ctx->async = 0;   /* run it here after all */
        for (int a = 0; a < dt->naccess; a++)
            if (sentmask & (1u << a))
                g->stl->sent[(size_t)g->stl->keep_idx[dt->access[a].gid] *
                             (size_t)dist->size + (size_t)p] = 0;
        S->inflight[p]--;
        v->result_seen = v->send_done = 1;
        slot_maybe_free(S, v);
        pthread_mutex_unlock(&S->mu);
        return -1;
    }
    return 0;
#else
    (void)t; (void)ctx;
    return -1;
#endif
}

double steal_slow_down(struct dist_steal *S, double el)
{
    if (S->slow_rank != S->dist->rank || !(S->slow_factor > 1))
        return 0;
    double extra = (S->slow_factor - 1) * el;
    if (S->slow_spin) {   /* the core stays busy, as a slower one would be */
        double end = dist_now_s() + extra;
        while (dist_now_s() < end) {
        }
    } else {
        struct timespec ts = { (time_t)extra, (long)((extra - (double)(time_t)extra) * 1e9) };
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    return extra;
}

/* Runs the body here, with its own arguments; times it (and slows it, test hook). */
static cask_status run_here(steal_task *t, cask_task_ctx *ctx)
{
    struct dist_steal *S = t->S;
    const dist_task *dt = &t->g->tasks[t->index];
    const void *wa = ctx->args;
    size_t ws = ctx->args_size;
    ctx->args = dt->args;
    ctx->args_size = dt->args_size;
    atomic_fetch_add_explicit(&S->bodies, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&S->started, 1, memory_order_relaxed);
    double t0 = dist_now_s();
    cask_status st = dt->kernel->cpu(ctx);
    double el = dist_now_s() - t0;
    ctx->args = wa;
    ctx->args_size = ws;
    if (!st)
        el += steal_slow_down(S, el);
    atomic_fetch_sub_explicit(&S->bodies, 1, memory_order_relaxed);
    uint64_t ns = (uint64_t)(el * 1e9) + 1, old = atomic_load_explicit(&t->k->ns,
                                                                     memory_order_relaxed);
    atomic_store_explicit(&t->k->ns, old ? (3 * old + ns) / 4 : ns, memory_order_relaxed);
    return st;
}

cask_status steal_wrap_cpu(cask_task_ctx *ctx)
{
    steal_task *t = dist_xfer_arg_of(ctx);
    if (t->stealable && atomic_load_explicit(&t->S->nidle, memory_order_relaxed) > 0 &&
        ship(t, ctx) == 0)
        return CASK_OK;
    return run_here(t, ctx);
}
