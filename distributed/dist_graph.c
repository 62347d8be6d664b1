/* distributed/dist_graph.c: building a distributed graph (cask_dist_graph_create,
 * _add_task, _gather) and the hash by which the ranks check that they built the same
 * one. Planning is in dist_plan.c, running in dist_run.c. */
#include "distributed/dist_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/log.h"
#include "runtime/runtime.h"   /* struct cask_kernel: its name */

/* ---- building ---- */

void dist_graph_error(cask_dist_graph *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->error, sizeof g->error, fmt, ap);
    va_end(ap);
}

cask_status cask_dist_graph_create(cask_dist *dist, cask_dist_graph **out)
{
    if (!dist || !out)
        return CASK_ERR_INVALID;
    cask_dist_graph *g = calloc(1, sizeof *g);
    if (!g)
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_graph_create");
    g->dist = dist;
    size_t n = (size_t)dist->size;
    g->done_from = calloc(n, sizeof *g->done_from);
    g->plan_seen = calloc(n, sizeof *g->plan_seen);
    g->plan_hash = calloc(n, sizeof *g->plan_hash);
    g->plan_st = calloc(n, sizeof *g->plan_st);
    g->plan_ep = calloc(n, sizeof *g->plan_ep);
    if (!g->done_from || !g->plan_seen || !g->plan_hash || !g->plan_st || !g->plan_ep) {
        free(g->done_from);
        free(g->plan_seen);
        free(g->plan_hash);
        free(g->plan_st);
        free(g->plan_ep);
        free(g);
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_graph_create");
    }
    pthread_mutex_lock(&dist->mu);
    g->id = ++dist->next_graph;      /* the same on every rank: graphs made in order */
    g->next = dist->graphs;
    dist->graphs = g;
    /* control messages other ranks sent before this rank made the graph */
    for (dist_early **pe = &dist->early; *pe;) {
        dist_early *e = *pe;
        if (e->h.graph == g->id) {
            dist_apply_ctrl(g, e->from, &e->h, e->msg);
            *pe = e->next;
            free(e);
        } else {
            pe = &e->next;
        }
    }
    pthread_mutex_unlock(&dist->mu);
    *out = g;
    return CASK_OK;
}

cask_status cask_dist_graph_add_task(cask_dist_graph *g, const cask_task_desc *desc,
                                     size_t *index)
{
    if (!g || !desc || !desc->kernel)
        return CASK_ERR_INVALID;
    cask_dist *dist = g->dist;
    cask_runtime *rt = dist->rt;
    if (g->planned)
        return log_error(rt, CASK_ERR_STATE, "cask_dist_graph_add_task: the graph was planned "
                         "already: build a new one");
    if (desc->naccess < 0 || desc->naccess > CASK_MAX_BUFFERS || (desc->naccess && !desc->access))
        return log_error(rt, CASK_ERR_INVALID, "cask_dist_graph_add_task: %d buffers",
                         desc->naccess);
    if (g->ntasks == g->tasks_cap) {
        size_t cap = g->tasks_cap ? g->tasks_cap * 2 : 64;
        dist_task *n = realloc(g->tasks, cap * sizeof *n);
        if (!n)
            return log_error(rt, CASK_ERR_NOMEM, "cask_dist_graph_add_task");
        g->tasks = n;
        g->tasks_cap = cap;
    }
    dist_task *t = &g->tasks[g->ntasks];
    memset(t, 0, sizeof *t);
    t->kernel = desc->kernel;
    t->naccess = desc->naccess;
    t->field_mask = desc->field_mask;
    t->access = calloc((size_t)(desc->naccess ? desc->naccess : 1), sizeof *t->access);
    t->local = calloc((size_t)(desc->naccess ? desc->naccess : 1), sizeof *t->local);
    if (!t->access || !t->local)
        goto nomem;
    for (int i = 0; i < desc->naccess; i++) {
        const cask_access *a = &desc->access[i];
        if (!a->data || a->mode < CASK_READ || a->mode > CASK_RW) {
            free(t->access);
            free(t->local);
            return log_error(rt, CASK_ERR_INVALID, "cask_dist_graph_add_task: buffer %d has %s",
                             i, a->data ? "an invalid access mode" : "no data");
        }
        if (dist_gid(dist, a->data, &t->access[i].gid)) {
            free(t->access);
            free(t->local);
            return log_error(rt, CASK_ERR_NOT_FOUND, "cask_dist_graph_add_task: buffer %d was "
                             "not declared with cask_dist_set_owner", i);
        }
        t->access[i].mode = a->mode;
    }
    if ((desc->field_mask & CASK_TASK_ARGS) && desc->args_size) {
        if (!desc->args)
            goto invalid_args;
        t->args = malloc(desc->args_size);
        if (!t->args)
            goto nomem;
        memcpy(t->args, desc->args, desc->args_size);
        t->args_size = desc->args_size;
    }
    if ((desc->field_mask & CASK_TASK_NAME) && desc->name && !(t->name = strdup(desc->name)))
        goto nomem;
    t->priority = desc->priority;
    t->where = desc->where;
    t->device = desc->device;
    t->pin = -1;
    t->rank = -1;
    if (index)
        *index = g->ntasks;
    g->ntasks++;
    return CASK_OK;
invalid_args:
    free(t->access);
    free(t->local);
    return log_error(rt, CASK_ERR_INVALID, "cask_dist_graph_add_task: args_size without args");
nomem:
    free(t->access);
    free(t->local);
    free(t->args);
    return log_error(rt, CASK_ERR_NOMEM, "cask_dist_graph_add_task");
}

cask_status cask_dist_graph_set_rank(cask_dist_graph *g, size_t index, int rank)
{
    if (!g)
        return CASK_ERR_INVALID;
    if (index >= g->ntasks || rank < -1 || rank >= g->dist->size)
        return log_error(g->dist->rt, CASK_ERR_INVALID, "cask_dist_graph_set_rank: task %zu "
                         "of %zu, rank %d of %d", index, g->ntasks, rank, g->dist->size);
    if (g->planned)
        return log_error(g->dist->rt, CASK_ERR_STATE, "cask_dist_graph_set_rank: graph planned");
    g->tasks[index].pin = rank;
    return CASK_OK;
}

cask_status cask_dist_graph_gather(cask_dist_graph *g, cask_data *d, int root, void *dest)
{
    if (!g || !d || root < 0 || root >= g->dist->size)
        return CASK_ERR_INVALID;
    if (root == g->dist->rank && !dest)
        return log_error(g->dist->rt, CASK_ERR_INVALID, "cask_dist_graph_gather: no "
                         "destination on the root");
    if (g->planned)
        return log_error(g->dist->rt, CASK_ERR_STATE, "cask_dist_graph_gather: graph planned");
    uint32_t gid;
    if (dist_gid(g->dist, d, &gid))
        return log_error(g->dist->rt, CASK_ERR_NOT_FOUND, "cask_dist_graph_gather: data not "
                         "declared with cask_dist_set_owner");
    /* several gathers of one datum (other roots, or the same root again) are planned
     * together: each root gets one copy (dist_plan.c, plan_final) */
    dist_gather *n = realloc(g->gathers, (g->ngathers + 1) * sizeof *n);
    if (!n)
        return log_error(g->dist->rt, CASK_ERR_NOMEM, "cask_dist_graph_gather");
    g->gathers = n;
    g->gathers[g->ngathers++] = (dist_gather){ gid, root, root == g->dist->rank ? dest : NULL };
    return CASK_OK;
}

/* FNV-1a over everything that must agree between ranks. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t dist_graph_hash(const cask_dist_graph *g)
{
    const cask_dist *dist = g->dist;
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, &g->ntasks, sizeof g->ntasks);
    for (size_t i = 0; i < g->ntasks; i++) {
        const dist_task *t = &g->tasks[i];
        const char *kn = t->kernel->name ? t->kernel->name : "";
        h = fnv(h, kn, strlen(kn) + 1);
        h = fnv(h, &t->naccess, sizeof t->naccess);
        for (int a = 0; a < t->naccess; a++) {
            const dist_datum *dd = &dist->data[t->access[a].gid];
            h = fnv(h, &t->access[a], sizeof t->access[a]);
            h = fnv(h, &dd->owner, sizeof dd->owner);
            h = fnv(h, &dd->bytes, sizeof dd->bytes);
        }
        /* The argument bytes are not compared: a struct's padding may differ between
         * processes although every field is the same. */
        h = fnv(h, &t->args_size, sizeof t->args_size);
        h = fnv(h, &t->pin, sizeof t->pin);
    }
    for (size_t i = 0; i < g->ngathers; i++) {
        h = fnv(h, &g->gathers[i].gid, sizeof g->gathers[i].gid);
        h = fnv(h, &g->gathers[i].root, sizeof g->gathers[i].root);
    }
    return h;
}

