/* distributed/dist_plan.c: planning a distributed graph: which rank runs
 * each task, in which phase, which chunk versions travel between which ranks at which
 * exchange step, and which local handles hold them. Every rank runs the same planning
 * over the same graph and so reaches the same plan without a message; each keeps the
 * part that concerns it (its local graph, its sends, its landing slots).
 *
 * Phases. The plan orders a rank's work as exchange step 0, phase 0, exchange 1,
 * phase 1, ..., and a final exchange. A version produced in phase p is sent at
 * exchange p+1 (an initial version at exchange 0), so a task reading a remote version
 * is in a phase >= that. A task writing a local handle comes no earlier than the
 * handle's previous users and than the exchange that sends its old content. That
 * order is only a valid sequential order, not a schedule: it becomes one local cask
 * graph (transfers are tasks, dist_xfer.c), whose sequential task flow derives the
 * dependencies, so no phase waits for another. See docs/design/distributed-internals.md. */
#include "distributed/dist_impl.h"
#include "distributed/dist_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/runtime.h"   /* struct cask_kernel: its name */


static int add_handle(planner *P, pdatum *d, int rank)
{
    if (d->nh == d->caph) {
        int cap = d->caph ? d->caph * 2 : 4;
        phandle *n = realloc(d->h, (size_t)cap * sizeof *n);
        if (!n) {
            P->st = CASK_ERR_NOMEM;
            return -1;
        }
        d->h = n;
        d->caph = cap;
    }
    d->h[d->nh] = (phandle){ .rank = rank, .last_use = 0, .last_send = -1 };
    return d->nh++;
}

static void set_locs(planner *P, pdatum *d, int h, int avail)
{
    if (d->capl < 1) {
        d->locs = malloc(4 * sizeof *d->locs);
        if (!d->locs) {
            P->st = CASK_ERR_NOMEM;
            return;
        }
        d->capl = 4;
    }
    d->locs[0] = (ploc){ h, avail };
    d->nlocs = 1;
}

static void add_loc(planner *P, pdatum *d, int h, int avail)
{
    if (d->nlocs == d->capl) {
        int cap = d->capl * 2;
        ploc *n = realloc(d->locs, (size_t)cap * sizeof *n);
        if (!n) {
            P->st = CASK_ERR_NOMEM;
            return;
        }
        d->locs = n;
        d->capl = cap;
    }
    d->locs[d->nlocs++] = (ploc){ h, avail };
}

/* The location of the latest version of d on rank r, or -1. */
int plan_loc_on(const pdatum *d, int r)
{
    for (int i = 0; i < d->nlocs; i++)
        if (d->h[d->locs[i].h].rank == r)
            return i;
    return -1;
}

dist_slot *plan_new_slot(planner *P)
{
    cask_dist_graph *g = P->g;
    dist_slot *s = calloc(1, sizeof *s);
    if (!s || (g->nslots == g->slots_cap && !(g->slots_cap = g->slots_cap ? 2 * g->slots_cap : 64,
               g->slots = realloc(g->slots, g->slots_cap * sizeof *g->slots)))) {
        free(s);
        P->st = CASK_ERR_NOMEM;
        return NULL;
    }
    g->slots[g->nslots++] = s;
    return s;
}

static void slot_index(cask_dist_graph *g, dist_slot *s)
{
    size_t j = ((size_t)s->gid * 0x9E3779B1u ^ (size_t)s->version * 0x85EBCA77u) &
               (g->slot_hash_cap - 1);
    s->hnext = g->slot_hash[j];
    g->slot_hash[j] = s;
}

dist_slot *dist_slot_find(const cask_dist_graph *g, uint32_t gid, uint32_t version)
{
    if (!g->slot_hash_cap)
        return NULL;
    size_t j = ((size_t)gid * 0x9E3779B1u ^ (size_t)version * 0x85EBCA77u) &
               (g->slot_hash_cap - 1);
    for (dist_slot *s = g->slot_hash[j]; s; s = s->hnext)
        if (s->gid == gid && s->version == version)
            return s;
    return NULL;
}

void plan_push_send(planner *P, int exchange, int to, uint32_t gid, uint32_t version,
                    cask_data *h, int nccl, uint32_t seq)
{
    cask_dist_graph *g = P->g;
    if (g->nsends == g->sends_cap) {
        size_t cap = g->sends_cap ? 2 * g->sends_cap : 64;
        dist_send *n = realloc(g->sends, cap * sizeof *n);
        if (!n) {
            P->st = CASK_ERR_NOMEM;
            return;
        }
        g->sends = n;
        g->sends_cap = cap;
    }
    g->sends[g->nsends++] = (dist_send){ .exchange = exchange, .to = to, .gid = gid,
                                         .version = version, .h = h, .graph = g, .nccl = nccl,
                                         .seq = seq };
}

static void note_made(planner *P, cask_data *d)
{
    cask_dist_graph *g = P->g;
    if (g->nmade == g->made_cap) {
        size_t cap = g->made_cap ? 2 * g->made_cap : 64;
        cask_data **n = realloc(g->made, cap * sizeof *n);
        if (!n) {
            P->st = CASK_ERR_NOMEM;
            return;
        }
        g->made = n;
        g->made_cap = cap;
    }
    g->made[g->nmade++] = d;
}

/* On this rank: a copy handle for datum gid, filled by a transfer (landing buffer
 * registered as a handle) or by a task (runtime-allocated). */
cask_data *plan_make_local_copy(planner *P, uint32_t gid, uint32_t version, int incoming,
                                void **buf_out)
{
    cask_runtime *rt = P->dist->rt;
    size_t bytes = P->dist->data[gid].bytes;
    cask_data *h = NULL;
    cask_status st;
    if (incoming) {
        void *buf = NULL;
        st = cask_host_alloc(rt, bytes, &buf);
        if (!st) {
            st = cask_data_register(rt, buf, bytes, &h);
            if (st)
                cask_host_free(rt, buf);
        }
        *buf_out = buf;
    } else {
        st = cask_data_create(rt, bytes, &h);
    }
    if (st) {
        P->st = st;
        return NULL;
    }
    char name[64];
    snprintf(name, sizeof name, "#%u.v%u@%d", gid, version, P->dist->rank);
    cask_data_set_name(h, name);
    note_made(P, h);
    return h;
}

/* Whether the latest version of d goes by NCCL (GPU to GPU): made on a GPU and read
 * by a task that runs on one (reader NULL: a final copy into host memory, which goes
 * by UCX: through NCCL it would cross the host link twice). If so, its number in the
 * plan's global order of NCCL transfers. */
int plan_by_nccl(planner *P, const pdatum *d, const dist_task *reader, uint32_t *seq)
{
    if (P->rp || !P->dist->nccl_all || !d->gpu_made || !reader || !reader->kernel->cuda ||
        reader->where == CASK_WHERE_CPU)
        return 0;
    *seq = P->nccl_seq++;
    return 1;
}

/* Whether t runs on a GPU (a real one with its CUDA implementation, or a simulated one
 * given the GPU route for tests: dist_gpux.c). */
static int on_gpu(const cask_dist *dist, const dist_task *t)
{
    return t && (t->kernel->cuda || dist->gpu_sim) && t->where != CASK_WHERE_CPU;
}

/* How the latest version of d goes from rank `from` to rank `to` for reader
 * (dist_route.c decides; the same on every rank), and its NCCL sequence number. */
static int route_of(planner *P, const pdatum *d, const dist_task *reader, int from, int to,
                    size_t bytes, uint32_t *seq)
{
    int gpu_ends = d->gpu_made && on_gpu(P->dist, reader);
    int r = dist_route_choose(P->dist, from, to, bytes, gpu_ends);
    if (r == DIST_ROUTE_NCCL)
        *seq = P->nccl_seq++;
    return r;
}

/* Makes version `version` of d (latest) readable on rank r from phase `avail`: a
 * transfer from its holder at exchange `avail`. Returns the handle index on r. */
static int bring(planner *P, pdatum *d, uint32_t gid, int r, const dist_task *reader)
{
    cask_dist *dist = P->dist;
    int from_h = d->holder;
    phandle *src = &d->h[from_h];
    int exchange = d->prod_phase + 1;
    int h = add_handle(P, d, r);
    if (h < 0)
        return -1;
    src = &d->h[from_h];     /* add_handle may have moved the array */
    if (exchange > src->last_send)
        src->last_send = exchange;
    add_loc(P, d, h, exchange);
    cask_dist_graph *g = P->g;
    size_t bytes = dist->data[gid].bytes;
    uint32_t seq = 0;
    int route = route_of(P, d, reader, src->rank, r, bytes, &seq);
    int nccl = route == DIST_ROUTE_NCCL, gpu_ucx = route == DIST_ROUTE_UCX_CUDA;
    int staged = route == DIST_ROUTE_HOST && d->gpu_made && on_gpu(dist, reader);
    if (src->rank == P->me) {
        plan_push_send(P, exchange, r, gid, d->version, src->local, nccl, seq);
        if (P->st == CASK_OK) {
            g->sends[g->nsends - 1].gpu_ucx = gpu_ucx;
            g->sends[g->nsends - 1].staged = staged;
        }
        g->transfers_out++;
        g->bytes_out += bytes;
        g->transfers_gpu_ucx += (size_t)gpu_ucx;
        g->transfers_nccl += (size_t)nccl;
    }
    if (r == P->me) {
        dist_slot *s = plan_new_slot(P);
        if (!s)
            return -1;
        s->gid = gid;
        s->version = d->version;
        s->exchange = exchange;
        s->from = src->rank;
        s->graph = g;
        s->nccl = nccl;
        s->seq = seq;
        s->gpu_ucx = gpu_ucx;
        s->staged = staged;
        /* NCCL, UCX-CUDA: on the GPU (UCX-CUDA: a pinned replica, dist_gpux.c) */
        s->h = plan_make_local_copy(P, gid, d->version, !nccl && !gpu_ucx, &s->buf);
        d->h[h].local = s->h;
        g->transfers_in++;
        g->bytes_in += bytes;
        g->transfers_gpu_ucx += (size_t)gpu_ucx;
        g->transfers_nccl += (size_t)nccl;
    }
    return h;
}

/* Chooses the rank of task t: the rank it is pinned to (unless fenced out), else most
 * input bytes present, then balance. */
static int choose_rank(planner *P, const dist_task *t, int *moved)
{
    cask_dist *dist = P->dist;
    int n = dist->size;
    *moved = 0;
    if (t->pin >= 0 && !dist->excluded[t->pin]) {
        double w = 1;
        for (int a = 0; a < t->naccess; a++)
            w += (double)dist->data[t->access[a].gid].bytes;
        P->load[t->pin] += w;
        P->total += w;
        return t->pin;
    }
    double credit[64], *cr = n <= 64 ? credit : calloc((size_t)n, sizeof *cr);
    if (!cr) {
        P->st = CASK_ERR_NOMEM;
        return 0;
    }
    memset(cr, 0, (size_t)n * sizeof *cr);
    int wanted = -1;      /* holder of the first datum it writes */
    double weight = 1;
    for (int a = 0; a < t->naccess; a++) {
        uint32_t gid = t->access[a].gid;
        pdatum *d = &P->pd[gid];
        double bytes = (double)dist->data[gid].bytes;
        weight += bytes;
        if (t->access[a].mode & CASK_READ)
            for (int i = 0; i < d->nlocs; i++)
                cr[d->h[d->locs[i].h].rank] += bytes;
        if ((t->access[a].mode & CASK_WRITE) && wanted < 0)
            wanted = dist->data[gid].owner;   /* its output then lands at home */
    }
    const uint8_t *out = dist->excluded;   /* ranks fenced out get nothing */
    int best = 0;
    while (best < n - 1 && out[best])
        best++;
    for (int r = best + 1; r < n; r++)
        if (!out[r] && (cr[r] > cr[best] || (cr[r] == cr[best] && r == wanted && best != wanted)))
            best = r;
    if (cr[best] == 0 && wanted >= 0)
        best = wanted;
    *moved = 0;
    if (P->balance && P->load[best] + weight > P->quota) {
        /* Balance: a rank past its share of the work gives this task to the least
         * loaded rank (its inputs travel). Work is counted in bytes touched. */
        int least = best;
        for (int r = 0; r < n; r++)
            if (!out[r] && P->load[r] < P->load[least])
                least = r;
        if (least != best && P->load[least] + weight <= P->quota) {
            best = least;
            *moved = 1;
        }
    }
    P->load[best] += weight;
    P->total += weight;
    if (cr != credit)
        free(cr);
    return best;
}

static void plan_task(planner *P, size_t ti)
{
    cask_dist *dist = P->dist;
    cask_dist_graph *g = P->g;
    dist_task *t = &g->tasks[ti];
    int r = choose_rank(P, t, &t->moved);
    t->rank = r;
    if (t->moved && r == P->me)
        g->moved++;
    int mode_of[CASK_MAX_BUFFERS];
    int hidx[CASK_MAX_BUFFERS];
    /* one entry per distinct datum: the union of its access modes */
    for (int a = 0; a < t->naccess; a++) {
        mode_of[a] = t->access[a].mode;
        for (int b = 0; b < a; b++)
            if (t->access[b].gid == t->access[a].gid) {
                mode_of[b] |= mode_of[a];
                mode_of[a] = 0;
                break;
            }
    }
    int phase = 0;
    /* the handle of each datum on r, and the phase its reads need */
    for (int a = 0; a < t->naccess; a++) {
        hidx[a] = -1;
        if (!mode_of[a])
            continue;
        uint32_t gid = t->access[a].gid;
        pdatum *d = &P->pd[gid];
        if (mode_of[a] & CASK_READ) {
            int li = plan_loc_on(d, r);
            if (li >= 0) {
                hidx[a] = d->locs[li].h;
                if (d->locs[li].avail > phase)
                    phase = d->locs[li].avail;
            } else {
                hidx[a] = bring(P, d, gid, r, t);
                if (hidx[a] < 0)
                    return;
                if (d->prod_phase + 1 > phase)
                    phase = d->prod_phase + 1;
            }
        } else {
            /* written whole: the user's handle on the owner, else a fresh copy */
            if (r == dist->data[gid].owner) {
                hidx[a] = 0;
            } else {
                hidx[a] = add_handle(P, d, r);
                if (hidx[a] < 0)
                    return;
                if (r == P->me)
                    d->h[hidx[a]].local = plan_make_local_copy(P, gid, d->version + 1, 0, NULL);
            }
        }
        if (mode_of[a] & CASK_WRITE) {
            phandle *h = &d->h[hidx[a]];
            if (h->last_use > phase)
                phase = h->last_use;
            if (h->last_send > phase)
                phase = h->last_send;
        }
    }
    t->phase = phase;
    if (phase > P->maxphase)
        P->maxphase = phase;
    /* record uses, and the new versions */
    for (int a = 0; a < t->naccess; a++) {
        int m = mode_of[a];
        if (!m)
            continue;
        uint32_t gid = t->access[a].gid;
        pdatum *d = &P->pd[gid];
        phandle *h = &d->h[hidx[a]];
        if (h->last_use < phase)
            h->last_use = phase;
        if (m & CASK_WRITE) {
            d->version++;
            d->prod_phase = phase;
            d->holder = hidx[a];
            d->touched = 1;
            d->gpu_made = on_gpu(dist, t);
            set_locs(P, d, hidx[a], phase);
        }
    }
    if (r == P->me) {
        for (int a = 0; a < t->naccess; a++) {
            int b = a;
            if (!mode_of[a])   /* a repeated datum: same handle as its first access */
                for (b = 0; b < a && t->access[b].gid != t->access[a].gid; b++)
                    ;
            t->local[a] = P->pd[t->access[a].gid].h[hidx[b]].local;
        }
        g->ntasks_here++;
    }
}

static void planner_free(planner *P)
{
    if (P->pd)
        for (uint32_t gid = 0; gid < P->dist->ndata; gid++) {
            free(P->pd[gid].h);
            free(P->pd[gid].locs);
        }
    free(P->pd);
    free(P->load);
}

static cask_status planner_init(planner *P)
{
    cask_dist *dist = P->dist;
    P->pd = calloc(dist->ndata ? dist->ndata : 1, sizeof *P->pd);
    P->load = calloc((size_t)dist->size, sizeof *P->load);
    if (!P->pd || !P->load)
        return CASK_ERR_NOMEM;
    for (uint32_t gid = 0; gid < dist->ndata; gid++) {
        pdatum *d = &P->pd[gid];
        d->prod_phase = -1;
        int h = add_handle(P, d, dist->data[gid].owner);
        if (h < 0)
            return P->st;
        if (dist->data[gid].owner == P->me)
            d->h[h].local = P->rp ? P->rp->start[gid] : dist->data[gid].home;
        d->holder = h;
        set_locs(P, d, h, 0);
    }
    return P->st;
}

/* The dry pass: where every task would go if each followed its data. If some rank
 * would get much more than its share, the real pass balances with a quota. */
static cask_status balance_quota(cask_dist_graph *g, int *balance, double *quota)
{
    cask_dist *dist = g->dist;
    *balance = 0;
    if (!dist->steal || dist->size - dist->nexcluded < 2)
        return CASK_OK;
    planner D = { .g = g, .dist = dist, .me = -1, .rp = g->replan };
    cask_status st = planner_init(&D);
    for (size_t i = 0; i < g->ntasks && !st && !D.st; i++)
        if (!D.rp || !D.rp->skip[i])
            plan_task(&D, i);
    if (!st)
        st = D.st;
    if (!st) {
        double avg = D.total / (dist->size - dist->nexcluded), max = 0;
        for (int r = 0; r < dist->size; r++)
            if (D.load[r] > max)
                max = D.load[r];
        if (max > 1.25 * avg) {
            *balance = 1;
            *quota = 1.05 * avg;
        }
    }
    planner_free(&D);
    return st;
}

cask_status dist_plan(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    planner P = { .g = g, .dist = dist, .me = dist->rank, .rp = g->replan };
    pthread_mutex_lock(&dist->mu);
    g->plan_epoch = dist->epoch;
    pthread_mutex_unlock(&dist->mu);
    cask_status st = balance_quota(g, &P.balance, &P.quota);
    if (st)
        goto out;
    if ((st = planner_init(&P)))
        goto out;
    for (size_t i = 0; i < g->ntasks && !P.st; i++) {
        g->tasks[i].rank = -1;
        if (!P.rp || !P.rp->skip[i])
            plan_task(&P, i);
    }
    g->nphases = g->ntasks ? P.maxphase + 1 : 0;
    if (!P.st) {
        g->slot_hash_cap = 64;
        while (g->slot_hash_cap < 2 * (g->nslots + 1))
            g->slot_hash_cap *= 2;
    }
    if (!P.st)
        plan_final(&P, g->nphases);
    g->nccl_transfers = P.nccl_seq;
    if (!P.st) {
        g->slot_hash_cap = 64;
        while (g->slot_hash_cap < 2 * (g->nslots + 1))
            g->slot_hash_cap *= 2;
        g->slot_hash = calloc(g->slot_hash_cap, sizeof *g->slot_hash);
        if (!g->slot_hash)
            P.st = CASK_ERR_NOMEM;
        for (size_t i = 0; !P.st && i < g->nslots; i++)
            slot_index(g, g->slots[i]);
    }
    st = P.st;
    if (!st)
        st = dist_local_build(g);
out:
    planner_free(&P);
    if (st && !g->error[0])
        dist_graph_error(g, "planning the graph on rank %d: %s", dist->rank, cask_status_string(st));
    return st;
}

void dist_plan_free_slots(cask_runtime *rt, dist_slot **slots, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (slots[i]->buf)
            cask_host_free(rt, slots[i]->buf);
        free(slots[i]->also);
        free(slots[i]);
    }
    free(slots);
}

void dist_plan_free(cask_dist_graph *g)
{
    cask_runtime *rt = g->dist->rt;
    cask_graph_destroy(g->local);
    g->local = NULL;
    dist_nccl_graph_free(g);
    /* the plan's copies: scratch, their bytes dead (a landing buffer's handle would
       otherwise write back a chunk that came into its GPU replica) */
    for (size_t i = 0; i < g->nmade; i++)
        data_destroy_discard(g->made[i]);
    free(g->made);
    g->made = NULL;
    g->nmade = g->made_cap = 0;
    dist_plan_free_slots(rt, g->slots, g->nslots);
    g->slots = NULL;
    g->nslots = g->slots_cap = 0;
    free(g->slot_hash);
    g->slot_hash = NULL;
    g->slot_hash_cap = 0;
    free(g->sends);
    g->sends = NULL;
    g->nsends = g->sends_cap = 0;
    for (size_t i = 0; i < g->ncopies; i++)
        free(g->copies[i].also);
    free(g->copies);
    g->copies = NULL;
    g->ncopies = g->copies_cap = 0;
    g->ntasks_here = g->moved = 0;
    g->bytes_out = g->bytes_in = 0;
    g->transfers_out = g->transfers_in = 0;
    g->transfers_gpu_ucx = g->transfers_nccl = 0;
    g->nccl_transfers = 0;
}
