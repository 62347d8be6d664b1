/* distributed/dist_steal_plan.c: which tasks of a planned graph may run elsewhere while
 * it runs: each CPU task gets a wrapper kernel of its kernel's name (dist_steal.c runs
 * it), with what its inputs and outputs weigh; the counters of what moved; and freeing
 * that state with the graph's plan. */
#include "distributed/dist_steal_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/graph.h"
#include "runtime/log.h"
#include "runtime/runtime.h"

static steal_kernel *wrapper_of(struct dist_steal *S, cask_kernel *k)
{
    int n = atomic_load(&S->nkern);
    for (int i = 0; i < n; i++)
        if (S->kern[i].orig == k)
            return &S->kern[i];
    if (n == STEAL_MAX_KERNELS)
        return NULL;
    cask_kernel_desc kd = { .name = k->name, .cpu = steal_wrap_cpu };
    steal_kernel *e = &S->kern[n];
    if (cask_kernel_register(S->dist->rt, &kd, &e->wrap))
        return NULL;
    e->orig = k;
    e->hash = 2166136261u;   /* FNV-1a */
    for (const char *c = k->name; *c; c++)
        e->hash = (e->hash ^ (uint8_t)*c) * 16777619u;
    atomic_store(&e->ns, 0);
    atomic_store(&S->nkern, n + 1);
    return e;
}

cask_status dist_steal_plan(cask_dist_graph *g)
{
    cask_dist *dist = g->dist;
    struct dist_steal *S = dist->stl;
    dist_steal_graph_free(g);   /* a new plan (after a recovery) replaces the old */
    /* Balancing while running stays off once ranks were lost: a recovery plan, and the
     * survivors' plans after it, run where they were placed (a thief that dies holding
     * tasks would otherwise be a loss inside the recovery). */
    if (!S || g->replan || dist->nexcluded)
        return CASK_OK;
    struct dist_steal_graph *sg = calloc(1, sizeof *sg);
    uint32_t *ver = calloc(dist->ndata ? dist->ndata : 1, sizeof *ver);
    uint32_t *readers = calloc(dist->ndata ? dist->ndata : 1, sizeof *readers);
    if (sg)
        sg->tasks = calloc(g->ntasks ? g->ntasks : 1, sizeof *sg->tasks);
    if (sg)
        sg->keep_idx = malloc((dist->ndata ? dist->ndata : 1) * sizeof *sg->keep_idx);
    cask_status st = sg && ver && readers && sg->tasks && sg->keep_idx ? CASK_OK : CASK_ERR_NOMEM;
    size_t nkeep = 0;
    for (size_t i = 0; !st && i < g->ntasks; i++) {
        const dist_task *t = &g->tasks[i];
        steal_task *s = &sg->tasks[i];
        s->S = S;
        s->g = g;
        s->index = i;
        for (int a = 0; a < t->naccess; a++) {
            uint32_t gid = t->access[a].gid;
            s->version[a] = ver[gid];
            if (t->rank == dist->rank && (t->access[a].mode & CASK_READ))
                readers[gid]++;
        }
        for (int a = 0; a < t->naccess; a++)
            if (t->access[a].mode & CASK_WRITE)
                ver[t->access[a].gid]++;
    }
    for (size_t d = 0; !st && d < dist->ndata; d++)
        sg->keep_idx[d] = readers[d] > 1 ? (uint32_t)nkeep++ : UINT32_MAX;
    if (!st && nkeep && dist->size > 1 &&
        !(sg->sent = calloc(nkeep * (size_t)dist->size, sizeof *sg->sent)))
        st = CASK_ERR_NOMEM;
    for (size_t i = 0; !st && i < g->ntasks; i++) {
        const dist_task *t = &g->tasks[i];
        steal_task *s = &sg->tasks[i];
        if (t->rank != dist->rank || !t->kernel->cpu || t->pin >= 0)
            continue;
        /* only a task that would run on a CPU here anyway: the same implementation */
        if (t->kernel->cuda && dist->rt->ngpu > 0 &&
            !((t->field_mask & CASK_TASK_WHERE) && t->where == CASK_WHERE_CPU))
            continue;
        if (!(s->k = wrapper_of(S, t->kernel)))
            continue;
        s->stealable = S->balance && dist->size > 1 && t->naccess <= 16;
        for (int a = 0; a < t->naccess; a++)
            if ((t->access[a].mode & CASK_READ) && sg->keep_idx[t->access[a].gid] != UINT32_MAX &&
                sg->sent)
                s->keep |= 1u << a;
    }
    free(ver);
    free(readers);
    if (st) {
        if (sg) {
            free(sg->tasks);
            free(sg->keep_idx);
            free(sg->sent);
            free(sg);
        }
        dist_graph_error(g, "rank %d: planning run-time balancing: out of memory", dist->rank);
        return st;
    }
    g->stl = sg;
    return CASK_OK;
}

void dist_steal_wrap(cask_dist_graph *g, size_t i, cask_task_desc *desc, dist_xfer_arg *arg)
{
    if (!g->stl || !g->stl->tasks[i].k)
        return;
    arg->p = &g->stl->tasks[i];
    desc->args = arg;
    desc->args_size = sizeof *arg;
    desc->kernel = g->stl->tasks[i].k->wrap;
    desc->field_mask |= CASK_TASK_ARGS | CASK_TASK_WHERE | CASK_TASK_NAME;
    desc->where = CASK_WHERE_CPU;
    if (!desc->name)
        desc->name = g->tasks[i].kernel->name;
}

void dist_steal_counts(const cask_dist_graph *g, size_t *out, size_t *in)
{
    *out = g->stl ? atomic_load(&g->stl->out) : 0;
    *in = g->stl ? atomic_load(&g->stl->in) : 0;
}

void dist_steal_graph_free(cask_dist_graph *g)
{
    struct dist_steal *S = g->dist->stl;
    if (!S || !g->stl)
        return;
    /* The runs that shipped tasks of g waited for their results; only the completions
     * of their sends may be due (the transport completes or cancels every send). */
    double t0 = dist_now_s();
    pthread_mutex_lock(&S->mu);
    for (int i = 0; i < S->nvs; i++)
        while (S->vs[i].used && S->vs[i].g == g && dist_now_s() - t0 < 30) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_sec += 1;
            pthread_cond_timedwait(&S->cv, &S->mu, &dl);
        }
    pthread_mutex_unlock(&S->mu);
    steal_cache_drop_graph(S, g->id);
    free(g->stl->tasks);
    free(g->stl->keep_idx);
    free(g->stl->sent);
    free(g->stl);
    g->stl = NULL;
}
