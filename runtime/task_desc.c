/* task_desc.c: what make_task (graph.c) keeps out of its hot path: the messages of a bad
 * task description, placement (CASK_TASK_WHERE, CASK_TASK_DEVICE), arguments and names,
 * and the checks of CASK_TASK_DEPS. */
#include <string.h>
#include "runtime/graph.h"
#include "runtime/data.h"
#include "runtime/log.h"

cask_status graph_bad_task(cask_graph *g, const cask_task_desc *desc, const char *call)
{
    cask_runtime *rt = g->rt;
    cask_kernel *k = desc->kernel;
    if (!k)
        return log_error(rt, CASK_ERR_INVALID, "%s: no kernel", call);
    if (desc->naccess < 0 || desc->naccess > CASK_MAX_BUFFERS || (desc->naccess && !desc->access))
        return log_error(rt, CASK_ERR_INVALID, "%s(%s): %d buffers (at most %d)",
                         call, k->name, desc->naccess, CASK_MAX_BUFFERS);
    for (int i = 0; i < desc->naccess; i++) {
        const cask_access *a = &desc->access[i];
        if (!a->data || a->mode < CASK_READ || a->mode > CASK_RW)
            return log_error(rt, CASK_ERR_INVALID, "%s(%s): buffer %d has %s", call, k->name, i,
                             a->data ? "an invalid access mode" : "no data");
        if (a->data->rt != rt)
            return log_error(rt, CASK_ERR_INVALID, "%s(%s): data %s belongs to another runtime",
                             call, k->name, a->data->name);
    }
    uint64_t mask = desc->field_mask;
    if ((mask & CASK_TASK_ARGS) && desc->args_size && !desc->args)
        return log_error(rt, CASK_ERR_INVALID, "%s(%s): args_size without args", call, k->name);
    if ((mask & CASK_TASK_ARGS) && desc->args_size > UINT32_MAX)
        return log_error(rt, CASK_ERR_INVALID, "%s(%s): args_size %zu (at most %u bytes)",
                         call, k->name, desc->args_size, UINT32_MAX);
    return log_error(rt, CASK_ERR_INVALID, "%s(%s): invalid task description", call, k->name);
}

cask_status graph_task_placement(cask_graph *g, const cask_task_desc *desc, const char *call,
                                 uint32_t *where, int *device)
{
    cask_runtime *rt = g->rt;
    cask_kernel *k = desc->kernel;
    uint64_t mask = desc->field_mask;
    uint32_t want = (mask & CASK_TASK_WHERE) ? desc->where : CASK_WHERE_ANY;
    if (want & ~(uint32_t)(CASK_WHERE_CPU | CASK_WHERE_GPU))
        return log_error(rt, CASK_ERR_INVALID, "%s(%s): bad where %u", call, k->name, want);
    if (want == CASK_WHERE_ANY)
        want = CASK_WHERE_CPU | CASK_WHERE_GPU;
    uint32_t impl = (k->cpu ? CASK_WHERE_CPU : 0) | (k->cuda ? CASK_WHERE_GPU : 0);
    /* a simulated GPU runs CPU code: only where the caller sent the task there */
    if (rt->sim && k->cpu && (mask & CASK_TASK_WHERE) && (desc->where & CASK_WHERE_GPU))
        impl |= CASK_WHERE_GPU;
    if (rt->sim && !k->cpu)
        impl &= ~(uint32_t)CASK_WHERE_GPU;
    if (!(want & impl))
        return log_error(rt, CASK_ERR_INVALID, "%s(%s): kernel has no implementation for where=%u",
                         call, k->name, want);
    *device = -1;
    if (mask & CASK_TASK_DEVICE) {
        if (desc->device < -1 || desc->device >= rt->ngpu)
            return log_error(rt, CASK_ERR_INVALID, "%s(%s): device %d (have %d GPUs)", call,
                             k->name, desc->device, rt->ngpu);
        *device = desc->device;
    }
    *where = want & impl;
    return CASK_OK;
}

task_cold *task_cold_get(arena *a, cask_task *t)
{
    task_cold *c = atomic_load_explicit(&t->cold, memory_order_relaxed);
    if (c)
        return c;
    c = arena_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    atomic_store_explicit(&t->cold, c, memory_order_release);
    return c;
}

int graph_task_extras(arena *ar, cask_task *t, const cask_task_desc *desc)
{
    uint64_t mask = desc->field_mask;
    if ((mask & CASK_TASK_ARGS) && desc->args_size) {
        /* the size in the 16 bytes before the copy (task_args_size) */
        uint64_t *b = arena_alloc(ar, 16 + desc->args_size);
        if (!b)
            return -1;
        b[0] = desc->args_size;
        memcpy(b + 2, desc->args, desc->args_size);
        t->args = b + 2;
    }
    int named = (mask & CASK_TASK_NAME) && desc->name;
    int prio = (mask & CASK_TASK_PRIORITY) ? desc->priority : 0;
    if (named || prio) {
        task_cold *c = task_cold_get(ar, t);
        if (!c || (named && !(c->name = arena_strdup(ar, desc->name))))
            return -1;
        c->priority = prio;
        t->level = (int8_t)sched_prio_level(prio);
    }
    return 0;
}

cask_status graph_check_deps(cask_graph *g, const struct subflow *sf, const cask_task_desc *desc,
                             const char *call)
{
    const char *name = desc->kernel ? desc->kernel->name : "?";
    if (desc->ndeps < 0 || (desc->ndeps && !desc->deps))
        return log_error(g->rt, CASK_ERR_INVALID, "%s(%s): %d deps%s", call, name, desc->ndeps,
                         desc->ndeps > 0 ? " and no array" : "");
    for (int i = 0; i < desc->ndeps; i++) {
        const cask_task *d = desc->deps[i];
        if (!graph_dep_ok(g, sf, d))
            return log_error(g->rt, CASK_ERR_INVALID, "%s(%s): deps[%d] is %s", call, name, i,
                             !d ? "NULL" : d->graph != g ? "a task of another graph"
                             : sf ? "not a child of the same subflow"
                                  : "a subflow's child");
    }
    return CASK_OK;
}

