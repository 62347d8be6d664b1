/* distributed/dist_lineage.c: what a recovery must recompute, and from what.
 *
 * Every rank holds the whole graph, so lineage needs no bookkeeping at run time: the
 * version a task reads is the one its predecessors in the sequential task flow wrote.
 * A recovery replays the graph's computes so far (a graph run again starts from what
 * its previous run left) and runs only the tasks some wanted output depends on: it
 * walks the replayed tasks backwards from the outputs still wanted (the final version
 * of each written datum, home to its owner, unless it got there already in the failed
 * run; each gather not yet delivered to a live root), marking the writer of every
 * version a marked task reads. What the walk reaches at its start are sources, the
 * content the data had when the graph was first computed:
 *
 *   - data no task writes, on a live owner: the owner's own handle;
 *   - data the graph overwrites, on a live owner: a snapshot the owner took at the
 *     first compute (only of data the graph reads before writing and that has no
 *     loader: cask_dist_data_set_loader), else the loader;
 *   - data of a lost owner: its loader, run by the survivor that adopts the datum.
 *
 * A needed source with none of these fails the recovery, naming the chunks. The plan
 * never writes into a user's handle but by the final copy home: it starts from fresh
 * handles. The decisions are the same on every survivor (they agreed on the view and
 * on what was delivered), so the recovery plan, like the first, needs no message. */
#include "distributed/dist_recover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/data.h"      /* a handle's name, for messages */
#include "runtime/log.h"

/* ---- the loader API ---- */

cask_status cask_dist_data_set_loader(cask_dist *dist, cask_data *d, cask_kernel *kernel,
                                      const void *args, size_t args_size)
{
    if (!dist || !d || (args_size && (!args || !kernel)))
        return CASK_ERR_INVALID;
    uint32_t gid;
    if (dist_gid(dist, d, &gid))
        return log_error(dist->rt, CASK_ERR_NOT_FOUND, "cask_dist_data_set_loader: data not "
                         "declared with cask_dist_set_owner");
    dist_datum *dd = &dist->data[gid];
    void *copy = NULL;
    if (args_size && !(copy = malloc(args_size)))
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_data_set_loader");
    if (args_size)
        memcpy(copy, args, args_size);
    free(dd->loader_args);
    dd->loader = kernel;
    dd->loader_args = copy;
    dd->loader_args_size = args_size;
    return CASK_OK;
}

/* ---- what the graph does to each datum ---- */

cask_status dist_lineage_prepare(cask_dist_graph *g)
{
    dist_recovery *rec = g->rec;
    size_t n = g->dist->ndata ? g->dist->ndata : 1;
    uint8_t *seen = calloc(n, 1);
    rec->touched = calloc(n, 1);
    rec->first_reads = calloc(n, 1);
    rec->snap = calloc(n, sizeof *rec->snap);
    rec->nd = n;
    if (!seen || !rec->touched || !rec->first_reads || !rec->snap) {
        free(seen);
        return CASK_ERR_NOMEM;
    }
    for (size_t i = 0; i < g->ntasks; i++) {
        const dist_task *t = &g->tasks[i];
        for (int a = 0; a < t->naccess; a++) {
            uint32_t gid = t->access[a].gid;
            int m = t->access[a].mode;
            for (int b = 0; b < t->naccess; b++)   /* the union of its modes in the task */
                if (t->access[b].gid == gid)
                    m |= t->access[b].mode;
            if (!seen[gid]) {
                seen[gid] = 1;
                rec->first_reads[gid] = (m & CASK_READ) != 0;
            }
            if (m & CASK_WRITE)
                rec->touched[gid] = 1;
        }
    }
    free(seen);
    return CASK_OK;
}

/* Whether the owner of gid snapshots it at the first compute (the same on every rank). */
static int has_snapshot(const cask_dist_graph *g, uint32_t gid)
{
    const dist_datum *dd = &g->dist->data[gid];
    return g->rec->touched[gid] && g->rec->first_reads[gid] && !dd->loader &&
           dd->owner == dd->orig_owner;
}

cask_status dist_lineage_snapshot(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    for (uint32_t gid = 0; gid < dist->ndata; gid++) {
        dist_datum *dd = &dist->data[gid];
        if (dd->owner != dist->rank || !has_snapshot(g, gid) || g->rec->snap[gid])
            continue;
        void *p, *copy = malloc(dd->bytes);
        if (!copy)
            return CASK_ERR_NOMEM;
        cask_status st = cask_data_acquire(dd->home, CASK_READ, &p);
        if (st) {
            free(copy);
            return st;
        }
        memcpy(copy, p, dd->bytes);
        cask_data_release(dd->home);
        g->rec->snap[gid] = copy;
    }
    return CASK_OK;
}

/* ---- adoption of a lost owner's data ---- */

static cask_status run_loader(cask_dist *dist, dist_datum *dd)
{
    cask_graph *lg = NULL;
    cask_status st = cask_graph_create(dist->rt, &lg);
    cask_access acc = { dd->home, CASK_WRITE };
    cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = dd->loader,
                         .access = &acc, .naccess = 1, .args = dd->loader_args,
                         .args_size = dd->loader_args_size, .where = CASK_WHERE_CPU };
    if (!st)
        st = cask_graph_add_task(lg, &d, NULL);
    if (!st)
        st = cask_graph_compute(lg);
    cask_graph_destroy(lg);
    return st;
}

cask_status dist_lineage_adopt(cask_dist *dist, char *err, size_t errlen)
{
    for (uint32_t gid = 0; gid < dist->ndata; gid++) {
        dist_datum *dd = &dist->data[gid];
        if (!dist->excluded[dd->owner])
            continue;
        int to = dd->owner;
        do
            to = (to + 1) % dist->size;
        while (dist->excluded[to]);
        dd->owner = to;
        dd->lost = !dd->loader;   /* the same on every rank */
        if (to != dist->rank)
            continue;
        cask_status st = CASK_OK;
        if (dd->made_here && dd->reserved && dd->home == dd->d) {
            /* the placeholder's address range becomes memory: the handle holds it now */
            if (mprotect(dd->reserved, dd->bytes, PROT_READ | PROT_WRITE))
                st = CASK_ERR_NOMEM;
        } else {
            cask_data *h = NULL;
            st = cask_data_create(dist->rt, dd->bytes, &h);
            if (!st) {
                dd->home = h;
                dd->home_made = 1;
            }
        }
        if (!st && dd->loader)
            st = run_loader(dist, dd);
        dd->lost = !dd->loader;
        if (st) {
            snprintf(err, errlen, "rank %d adopting chunk #%u of lost rank %d: %s", dist->rank,
                     gid, dd->orig_owner, cask_status_string(st));
            return st;
        }
    }
    return CASK_OK;
}

/* Whether the graph gathers gid (a gather reads the datum's final version: the content
 * the owner holds, if no task of the graph writes it). */
static int gathered(const cask_dist_graph *g, uint32_t gid)
{
    for (size_t k = 0; k < g->ngathers; k++)
        if (g->gathers[k].gid == gid)
            return 1;
    return 0;
}

cask_status dist_lineage_check_lost(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    char bad[640] = "";
    size_t nbad = 0, off = 0;
    for (uint32_t gid = 0; gid < dist->ndata; gid++) {
        dist_datum *dd = &dist->data[gid];
        /* read before written, or gathered and never written: the lost content is read
         * (the adopter's handle holds none) */
        if (!dd->lost ||
            !(g->rec->first_reads[gid] || (!g->rec->touched[gid] && gathered(g, gid))))
            continue;
        if (nbad++ < 8 && off < sizeof bad - 80)
            off += (size_t)snprintf(bad + off, sizeof bad - off, "%s#%u%s%s%s (rank %d)",
                                    off ? ", " : "", gid, dd->d->name[0] ? " '" : "",
                                    dd->d->name, dd->d->name[0] ? "'" : "", dd->orig_owner);
    }
    if (!nbad)
        return CASK_OK;
    dist_graph_error(g, "the graph reads or gathers %zu chunk%s of lost ranks that ha%s no "
                     "reproducible source: %s%s (declare a loader with cask_dist_data_set_loader)", nbad,
                     nbad > 1 ? "s" : "", nbad > 1 ? "ve" : "s", bad, nbad > 8 ? ", ..." : "");
    return CASK_ERR_PEER;
}

/* ---- the recovery plan ---- */

void dist_lineage_free_plan(dist_recovery *rec)
{
    for (size_t i = 0; i < rec->nxt; i++)
        free(rec->xt[i].local);
    free(rec->xt);
    rec->xt = NULL;
    rec->nxt = 0;
    for (size_t i = 0; i < rec->nmade; i++)
        cask_data_destroy(rec->made[i]);
    free(rec->made);
    rec->made = NULL;
    rec->nmade = 0;
    free(rec->loads);
    rec->loads = NULL;
    rec->nloads = 0;
    free(rec->skip);
    free(rec->out_home);
    free(rec->out_gather);
    free(rec->fresh);
    free(rec->start);
    rec->skip = rec->out_home = rec->out_gather = rec->fresh = NULL;
    rec->start = NULL;
}

/* The union of the modes of gid's accesses in t (0 if the first access is not a). */
static int merged_mode(const dist_task *t, int a)
{
    uint32_t gid = t->access[a].gid;
    for (int b = 0; b < a; b++)
        if (t->access[b].gid == gid)
            return 0;
    int m = 0;
    for (int b = a; b < t->naccess; b++)
        if (t->access[b].gid == gid)
            m |= t->access[b].mode;
    return m;
}

/* Marks the replayed tasks to run: backwards from the wanted outputs. pending[gid]:
 * the version current at this point of the walk is needed. At the end, pending says
 * which sources are needed; used which data the plan touches. */
static void walk_back(dist_recovery *rec, size_t ntasks, uint8_t *pending, uint8_t *used)
{
    for (size_t x = rec->nxt; x-- > 0;) {
        const dist_task *t = &rec->xt[x];
        int need = 0;
        for (int a = 0; a < t->naccess && !need; a++)
            if ((merged_mode(t, a) & CASK_WRITE) && pending[t->access[a].gid])
                need = 1;
        rec->skip[x] = !need;
        if (!need)
            continue;
        for (int a = 0; a < t->naccess; a++) {
            int m = merged_mode(t, a);
            if (!m)
                continue;
            uint32_t gid = t->access[a].gid;
            used[gid] = 1;
            pending[gid] = (m & CASK_READ) != 0;
        }
    }
    (void)ntasks;
}

cask_status dist_lineage_plan(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = g->rec;
    size_t nd = dist->ndata ? dist->ndata : 1, ng = g->ngathers ? g->ngathers : 1;
    size_t rounds = rec->computes ? rec->computes : 1;
    size_t nt = rec->saved_ntasks;
    rec->nxt = rounds * nt;
    rec->xt = calloc(rec->nxt ? rec->nxt : 1, sizeof *rec->xt);
    rec->skip = calloc(rec->nxt ? rec->nxt : 1, 1);
    rec->out_home = calloc(nd, 1);
    rec->out_gather = calloc(ng, 1);
    rec->fresh = calloc(nd, 1);
    rec->start = calloc(nd, sizeof *rec->start);
    rec->made = calloc(nd, sizeof *rec->made);
    rec->loads = calloc(nd, sizeof *rec->loads);
    uint8_t *pending = calloc(nd, 1), *used = calloc(nd, 1);
    cask_status st = rec->xt && rec->skip && rec->out_home && rec->out_gather && rec->fresh &&
                     rec->start && rec->made && rec->loads && pending && used
                     ? CASK_OK : CASK_ERR_NOMEM;
    for (size_t x = 0; !st && x < rec->nxt; x++) {
        rec->xt[x] = rec->saved_tasks[x % nt];
        rec->xt[x].local = calloc((size_t)(rec->xt[x].naccess ? rec->xt[x].naccess : 1),
                                  sizeof *rec->xt[x].local);
        if (!rec->xt[x].local) {
            /* the rest keep NULL: freed alike */
            for (size_t y = x + 1; y < rec->nxt; y++)
                rec->xt[y].local = NULL;
            st = CASK_ERR_NOMEM;
        }
    }
    if (st)
        goto out;
    /* the outputs still wanted */
    for (uint32_t gid = 0; gid < dist->ndata; gid++) {
        if (!rec->touched[gid] || rec->done[g->ngathers + gid])
            continue;
        int delivered = 0;   /* to every live root of its gathers (there is one) */
        for (size_t k = 0; k < g->ngathers && delivered >= 0; k++)
            if (g->gathers[k].gid == gid && !dist->excluded[g->gathers[k].root])
                delivered = rec->done[k] ? 1 : -1;
        delivered = delivered > 0;
        if (rec->orphan[gid] && delivered && !rec->first_reads[gid]) {
            /* its owner is gone and its result was delivered: not made again (the graph
             * does not read it before writing it); later graphs that read it first fail
             * (no content) */
            dist->data[gid].lost = 1;
            continue;
        }
        rec->out_home[gid] = pending[gid] = used[gid] = 1;
    }
    for (size_t k = 0; k < g->ngathers; k++)
        if (!dist->excluded[g->gathers[k].root] && !rec->done[k]) {
            rec->out_gather[k] = 1;
            pending[g->gathers[k].gid] = used[g->gathers[k].gid] = 1;
        }
    walk_back(rec, nt, pending, used);
    rec->nrun = 0;
    for (size_t x = 0; x < rec->nxt; x++)
        rec->nrun += !rec->skip[x];
    /* the sources */
    char bad[640] = "";
    size_t nbad = 0, off = 0;
    for (uint32_t gid = 0; gid < dist->ndata; gid++) {
        if (!used[gid])
            continue;
        dist_datum *dd = &dist->data[gid];
        int mine = dd->owner == dist->rank;
        const void *snap = NULL;
        int load = 0, ok = 1;
        if (rec->touched[gid]) {
            rec->fresh[gid] = 1;   /* never written but by the final copy home */
            if (pending[gid]) {
                if (has_snapshot(g, gid))
                    snap = mine ? rec->snap[gid] : NULL, load = 1;
                else if (dd->loader)
                    load = 1;
                else
                    ok = 0;
            }
        } else if (pending[gid] && dd->lost) {
            ok = 0;   /* read as it was on its lost owner, and nothing makes it again */
        }
        if (!ok) {
            if (nbad++ < 8 && off < sizeof bad - 80)
                off += (size_t)snprintf(bad + off, sizeof bad - off, "%s#%u%s%s%s (rank %d)",
                                        off ? ", " : "", gid, dd->d->name[0] ? " '" : "",
                                        dd->d->name, dd->d->name[0] ? "'" : "", dd->orig_owner);
            continue;
        }
        if (!mine)
            continue;
        if (rec->fresh[gid]) {
            char name[64];
            if ((st = cask_data_create(dist->rt, dd->bytes, &rec->start[gid])))
                goto out;
            rec->made[rec->nmade++] = rec->start[gid];
            snprintf(name, sizeof name, "#%u.src@%d", gid, dist->rank);
            cask_data_set_name(rec->start[gid], name);
        } else {
            rec->start[gid] = dd->home;
        }
        if (load && !snap && !dd->loader) {
            dist_graph_error(g, "rank %d: no snapshot of chunk #%u", dist->rank, gid);
            st = CASK_ERR_INTERNAL;
            goto out;
        }
        if (load)
            rec->loads[rec->nloads++] = (dist_load){ gid, rec->start[gid], snap };
    }
    if (nbad) {
        dist_graph_error(g, "cannot recover from the loss of a rank: %zu lost chunk%s needed "
                         "again ha%s no reproducible source: %s%s (declare a loader with "
                         "cask_dist_data_set_loader)", nbad, nbad > 1 ? "s" : "",
                         nbad > 1 ? "ve" : "s", bad, nbad > 8 ? ", ..." : "");
        st = CASK_ERR_PEER;
        goto out;
    }
    rec->rp = (dist_replan){ .skip = rec->skip, .out_home = rec->out_home,
                             .out_gather = rec->out_gather, .start = rec->start,
                             .fresh = rec->fresh };
out:
    free(pending);
    free(used);
    return st;
}

cask_status dist_recover_add_loads(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    dist_recovery *rec = g->rec;
    for (size_t i = 0; rec && i < rec->nloads; i++) {
        dist_load *l = &rec->loads[i];
        dist_datum *dd = &dist->data[l->gid];
        cask_access acc = { l->h, CASK_WRITE };
        char name[64];
        snprintf(name, sizeof name, "%s #%u", l->snap ? "restore" : "load", l->gid);
        dist_xfer_arg a = { (void *)l->snap };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE | CASK_TASK_NAME,
                             .kernel = l->snap ? dist->k_restore : dd->loader,
                             .access = &acc, .naccess = 1,
                             .args = l->snap ? (void *)&a : dd->loader_args,
                             .args_size = l->snap ? sizeof a : dd->loader_args_size,
                             .name = name, .where = CASK_WHERE_CPU };
        cask_status st = cask_graph_add_task(g->local, &d, NULL);
        if (st) {
            dist_graph_error(g, "rank %d: adding the task %s: %s", dist->rank, name,
                             cask_status_string(st));
            return st;
        }
    }
    return CASK_OK;
}
