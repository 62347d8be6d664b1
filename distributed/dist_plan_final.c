/* distributed/dist_plan_final.c: the plan's final exchange (dist_plan.c plans the tasks and
 * their transfers): each datum's last version goes home to its owner's handle and to the
 * ranks that gather it, by copies on this rank, sends and landing slots. */
#include "distributed/dist_plan.h"

#include <stdlib.h>
#include <string.h>

/* The gather destinations on this rank: where one copy of a final version goes (the
 * first, and the others of gathers of the same datum to this rank). */
typedef struct dests {
    void *first;
    void **also;              /* malloc'ed; owned by the slot or copy that gets them */
    int nalso;
} dests;

/* A copy between this rank's handles at the end (from -> the owner's handle `to`
 * and/or the gather destinations ds; neither: only a mark that gid's final version is
 * home, which a recovery reads). */
static void push_copy(planner *P, uint32_t gid, cask_data *from, cask_data *to, dests *ds)
{
    cask_dist_graph *g = P->g;
    if (g->ncopies == g->copies_cap) {
        size_t cap = g->copies_cap ? 2 * g->copies_cap : 16;
        dist_local_copy *n = realloc(g->copies, cap * sizeof *n);
        if (!n) {
            P->st = CASK_ERR_NOMEM;
            return;
        }
        g->copies = n;
        g->copies_cap = cap;
    }
    g->copies[g->ncopies++] = (dist_local_copy){
        .from = from, .to = to, .dest = ds ? ds->first : NULL, .also = ds ? ds->also : NULL,
        .nalso = ds ? ds->nalso : 0, .graph = g, .gid = gid, .gpu_made = P->pd[gid].gpu_made };
    if (ds)
        *ds = (dests){ 0 };
}

/* Whether the latest version of d, gathered to rank `to` (not its home), goes there from
 * GPU memory into GPU memory by UCX, and then into the destinations by a copy off that
 * GPU: made on a GPU, and the route of a GPU chunk between the two ranks is UCX-CUDA
 * (dist_route.c: both have a GPU and a UCX that moves CUDA memory, and the model prefers
 * it: within a host, cuda_ipc). The host route would read the chunk from the sender's
 * host memory on the receiver's one UCX progress thread (CMA within a host: about 5-9
 * GB/s, bench/RESULTS.md 15.6), where this one moves it over NVLink and copies it off
 * the receiver's GPU by its copy engine. The same on every rank (CASK_DIST_GPU_XPORT=host,
 * rank 0's, keeps it on the host route). */
static int gather_by_gpu(planner *P, uint32_t gid, int from, int to)
{
    return P->pd[gid].gpu_made &&
           dist_route_choose(P->dist, from, to, P->dist->data[gid].bytes, 1) ==
               DIST_ROUTE_UCX_CUDA;
}

/* Sends the latest version of gid to rank `to` at the final exchange, where it goes
 * into the owner's handle (home) and/or gather destinations (ds, on `to`); gather: for
 * gathers alone (home is not on `to`), which may go by GPU (gather_by_gpu). */
static void final_transfer(planner *P, uint32_t gid, int to, cask_data *home, dests *ds,
                           int final_exchange, int gather)
{
    cask_dist *dist = P->dist;
    cask_dist_graph *g = P->g;
    pdatum *d = &P->pd[gid];
    phandle *src = &d->h[d->holder];
    uint32_t seq = 0;
    int nccl = plan_by_nccl(P, d, NULL, &seq);
    int gpu_ucx = !nccl && gather && gather_by_gpu(P, gid, src->rank, to);
    if (src->rank == P->me) {
        plan_push_send(P, final_exchange, to, gid, d->version, src->local, nccl, seq);
        if (P->st == CASK_OK)
            g->sends[g->nsends - 1].gpu_ucx = gpu_ucx;
        g->transfers_out++;
        g->bytes_out += dist->data[gid].bytes;
        g->transfers_gpu_ucx += (size_t)gpu_ucx;
    }
    if (to != P->me)
        return;
    dist_slot *s = plan_new_slot(P);
    if (!s)
        return;
    s->gid = gid;
    s->version = d->version;
    s->exchange = final_exchange;
    s->from = src->rank;
    s->home = home;
    s->dest = ds->first;
    s->also = ds->also;
    s->nalso = ds->nalso;
    *ds = (dests){ 0 };
    s->graph = g;
    s->nccl = nccl;
    s->seq = seq;
    s->gpu_ucx = gpu_ucx;
    if (nccl || gpu_ucx) {   /* lands on the GPU (UCX: a pinned replica, dist_gpux.c), then
                                delivered from there */
        if (!(s->h = plan_make_local_copy(P, gid, d->version, 0, NULL)))
            return;
        g->transfers_gpu_ucx += (size_t)gpu_ucx;
    } else if (cask_host_alloc(dist->rt, dist->data[gid].bytes, &s->buf)) {
        P->st = CASK_ERR_NOMEM;
        return;
    }
    g->transfers_in++;
    g->bytes_in += dist->data[gid].bytes;
}

/* The destinations on this rank of the gathers of one datum to `root` (chain: the
 * gathers of that datum, by next[]). Empty unless root is this rank. */
static void dests_of(planner *P, const int *next, int first, int root, dests *ds)
{
    const cask_dist_graph *g = P->g;
    *ds = (dests){ 0 };
    if (root != P->me)
        return;
    for (int k = first; k >= 0; k = next[k]) {
        void *dest = g->gathers[k].dest;
        if (g->gathers[k].root != root || !dest || (P->rp && !P->rp->out_gather[k]))
            continue;
        if (!ds->first) {
            ds->first = dest;
            continue;
        }
        void **n = realloc(ds->also, (size_t)(ds->nalso + 1) * sizeof *n);
        if (!n) {
            P->st = CASK_ERR_NOMEM;
            return;
        }
        ds->also = n;
        ds->also[ds->nalso++] = dest;
    }
}

/* After the last phase: each written datum's latest version goes home to its owner's
 * handle, and each gathered one to the destination of every gather of it. A datum may
 * be gathered to several roots, and to one root several times: each root gets one
 * copy (a local copy where the version is already there, the owner's with its home
 * copy, else one transfer), which fills all its destinations. Every rank walks the
 * gathers in the order they were declared, so all plan the same transfers. */
void plan_final(planner *P, int final_exchange)
{
    cask_dist *dist = P->dist;
    cask_dist_graph *g = P->g;
    size_t ng = g->ngathers;
    int *first = malloc((dist->ndata ? dist->ndata : 1) * sizeof *first);
    int *next = malloc((ng ? ng : 1) * sizeof *next);
    if (!first || !next) {
        P->st = CASK_ERR_NOMEM;
        goto out;
    }
    for (uint32_t gid = 0; gid < dist->ndata; gid++)
        first[gid] = -1;
    for (size_t k = ng; k-- > 0;) {   /* chains in declaration order */
        next[k] = first[g->gathers[k].gid];
        first[g->gathers[k].gid] = (int)k;
    }
    for (uint32_t gid = 0; gid < dist->ndata && !P->st; gid++) {
        pdatum *d = &P->pd[gid];
        int owner = dist->data[gid].owner;
        int li_owner = plan_loc_on(d, owner);
        cask_data *home_h = dist->data[gid].home;
        /* h 0 is the owner's home handle, except in a recovery plan that starts from
         * another handle (its result is then copied home) */
        int h0_home = !P->rp || !P->rp->fresh[gid];
        int need_home = d->touched && !(li_owner >= 0 && d->locs[li_owner].h == 0 && h0_home);
        if (P->rp && !P->rp->out_home[gid])
            need_home = 0;   /* home already: a recovery does not deliver it again */
        if (!need_home && d->touched && owner == P->me && li_owner >= 0 &&
            (!P->rp || P->rp->out_home[gid]))
            /* written in place at home: a mark that it got there (a recovery skips it) */
            push_copy(P, gid, d->h[0].local, NULL, NULL);
        dests ds;
        if (need_home) {   /* with the owner's gathers, if any */
            dests_of(P, next, first[gid], owner, &ds);
            if (li_owner >= 0) {
                if (owner == P->me)
                    push_copy(P, gid, d->h[d->locs[li_owner].h].local, home_h, &ds);
            } else {
                final_transfer(P, gid, owner, owner == P->me ? home_h : NULL, &ds,
                               final_exchange, 0);
            }
            free(ds.also);
        }
        for (int k = first[gid]; k >= 0 && !P->st; k = next[k]) {
            if (P->rp && !P->rp->out_gather[k])
                continue;   /* delivered before the loss: not again */
            int root = g->gathers[k].root, seen = need_home && root == owner;
            if (dist->excluded[root])
                continue;   /* a root out of the view: nothing goes to it */
            for (int j = first[gid]; j != k && !seen; j = next[j])
                seen = g->gathers[j].root == root && !(P->rp && !P->rp->out_gather[j]);
            if (seen)
                continue;   /* this root is served already */
            dests_of(P, next, k, root, &ds);
            int li = plan_loc_on(d, root);
            if (li >= 0) {
                if (root == P->me)
                    push_copy(P, gid, d->h[d->locs[li].h].local, NULL, &ds);
            } else {
                final_transfer(P, gid, root, NULL, &ds, final_exchange, 1);
            }
            free(ds.also);
        }
    }
out:
    free(first);
    free(next);
}

