/* graph_life.c: a graph's life around its building: creation, the runtime's list of
 * graphs (orphaned at shutdown), the first failure of a run and its hook, how a task is
 * named in messages, and destroy. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/graph.h"
#include "runtime/graph_replay.h"
#include "runtime/data.h"
#include "runtime/log.h"

static _Atomic uint32_t next_graph_id = 1;  /* ids only: never reused, so a stale id in a
                                              data handle cannot match a new graph */

cask_status cask_graph_create(cask_runtime *rt, cask_graph **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    /* aligned: its hot fields share one line with nothing else (graph.h) */
    cask_graph *g = aligned_alloc(64, (sizeof *g + 63) & ~(size_t)63);
    if (!g)
        return log_error(rt, CASK_ERR_NOMEM, "cask_graph_create");
    memset(g, 0, sizeof *g);
    g->rt = rt;
    g->can = (rt->ncpu > 0 ? CASK_WHERE_CPU : 0) | (rt->ngpu > 0 ? CASK_WHERE_GPU : 0);
    arena_init(&g->ar, &rt->graph_pool);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->id = atomic_fetch_add(&next_graph_id, 1);
    g->done = 1;
    g->pend = GRAPH_NO_PEND;
    pthread_mutex_lock(&rt->lock);
    g->all_next = rt->graphs;
    if (rt->graphs)
        rt->graphs->all_prev = g;
    rt->graphs = g;
    pthread_mutex_unlock(&rt->lock);
    *out = g;
    return CASK_OK;
}

void graph_orphan_all(cask_runtime *rt)
{
    pthread_mutex_lock(&rt->lock);
    for (cask_graph *g = rt->graphs; g; g = g->all_next) {
        graph_replay_free(g);   /* its CUDA objects go while the devices are open */
        g->orphan = 1;
        g->ar.pool = NULL;
    }
    rt->graphs = NULL;
    pthread_mutex_unlock(&rt->lock);
}

void graph_describe_task(const cask_task *t, char *buf, size_t len)
{
    int n = snprintf(buf, len, "task %s (kernel %s", task_name(t), t->kernel->name);
    static const char *mode[] = {"?", "R", "W", "RW"};
    for (int i = 0; i < t->naccess && n > 0 && (size_t)n < len; i++)
        n += snprintf(buf + n, len - n, "%s%s [%s]", i ? ", " : "; data ",
                      t->access[i].data->name, mode[t->access[i].mode & 3]);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - n, ")");
}

void graph_fail(cask_graph *g, cask_status st, const char *fmt, ...)
{
    int first = 0;
    pthread_mutex_lock(&g->lock);
    if (g->status == CASK_OK) {
        g->status = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error, sizeof g->error, fmt, ap);
        va_end(ap);
        atomic_store(&g->failed, 1);
        first = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (first && g->fail_hook)
        g->fail_hook(g->fail_hook_arg);
}

void graph_set_fail_hook(cask_graph *g, void (*fn)(void *arg), void *arg)
{
    g->fail_hook = fn;
    g->fail_hook_arg = arg;
}

cask_status cask_graph_destroy(cask_graph *g)
{
    if (!g)
        return CASK_OK;
    pthread_mutex_lock(&g->lock);
    int busy = !g->done;
    pthread_mutex_unlock(&g->lock);
    if (busy)
        return log_error(g->rt, CASK_ERR_BUSY, "cask_graph_destroy: graph is running");
    if (!g->orphan) {
        cask_runtime *rt = g->rt;
        pthread_mutex_lock(&rt->lock);
        if (g->all_prev)
            g->all_prev->all_next = g->all_next;
        else
            rt->graphs = g->all_next;
        if (g->all_next)
            g->all_next->all_prev = g->all_prev;
        pthread_mutex_unlock(&rt->lock);
    }
    graph_replay_free(g);
    arena_free_all(&g->ar);   /* tasks, roots and all that they point to */
    free(g->datas);
    free(g->ranges);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
    free(g);
    return CASK_OK;
}
