/* dash_live.c: the live dashboard's recorder (dash_live.h): rings of recent slices,
 * per-kernel counts, and the registry of graphs computing now. */
#include <stdlib.h>
#include <string.h>
#include "runtime/dash_live.h"
#include "runtime/graph.h"
#include "runtime/trace.h"

cask_status dash_live_create(cask_runtime *rt, dash_live **out)
{
    dash_live *l = calloc(1, sizeof *l);
    if (!l)
        return CASK_ERR_NOMEM;
    l->ncpu = rt->ncpu;
    l->ngpu = rt->ngpu;
    l->nworkers = rt->ncpu + rt->ngpu;
    l->nstreams = rt->ngpu ? rt->cfg.gpu_streams : 0;
    l->t_origin = trace_now_ns();
    l->ring = aligned_alloc(64, sizeof *l->ring * (size_t)l->nworkers);
    size_t rows = (size_t)l->nworkers * DASH_MAX_KERNELS * sizeof *l->runs;   /* a row: 2 KiB */
    l->runs = aligned_alloc(64, rows);
    l->fails = aligned_alloc(64, rows);
    l->running = aligned_alloc(64, (size_t)l->nworkers * DASH_RUNNING_STRIDE * sizeof *l->running);
    if (!l->ring || !l->runs || !l->fails || !l->running) {
        dash_live_destroy(l);
        return CASK_ERR_NOMEM;
    }
    memset(l->ring, 0, sizeof *l->ring * (size_t)l->nworkers);
    memset(l->runs, 0, rows);
    memset(l->fails, 0, rows);
    for (int w = 0; w < l->nworkers; w++)
        atomic_init(&l->running[(size_t)w * DASH_RUNNING_STRIDE], -1);
    pthread_mutex_init(&l->mu, NULL);
    *out = l;
    return CASK_OK;
}

void dash_live_destroy(dash_live *l)
{
    if (!l)
        return;
    free(l->ring);
    free(l->runs);
    free(l->fails);
    free(l->running);
    free(l);
}

size_t dash_read_slices(dash_live *l, int w, uint64_t since, dash_slice *out, size_t max)
{
    dash_ring *r = &l->ring[w];
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t from = head > DASH_RING ? head - DASH_RING : 0;
    size_t n = 0;
    for (uint64_t i = from; i < head && n < max; i++) {
        dash_slot *s = &r->slot[i % DASH_RING];
        if (atomic_load_explicit(&s->seq, memory_order_acquire) != i + 1)
            continue;                       /* being rewritten */
        dash_slice c = {
            .t0 = atomic_load_explicit(&s->t0, memory_order_relaxed),
            .t1 = atomic_load_explicit(&s->t1, memory_order_relaxed),
            .kernel = atomic_load_explicit(&s->kernel, memory_order_relaxed),
        };
        uint32_t lane = atomic_load_explicit(&s->lane, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) != i + 1)
            continue;                       /* overwritten while copied */
        if (c.t1 <= since)
            continue;
        c.lane = lane & ~(1u << 31);
        c.failed = (lane >> 31) != 0;
        out[n++] = c;
    }
    return n;
}

void dash_graph_start(cask_runtime *rt, cask_graph *g)
{
    dash_live *l = rt->live;
    if (!l)
        return;
    dash_graph e = { .g = g, .id = g->id, .ntasks = g->ntasks, .nedges = g->nedges,
                     .t_submit = trace_now_ns() };
    /* tasks per kernel (first 8 kernels): a walk over the tasks, so only while someone
     * looks, and once per graph and size */
    pthread_mutex_lock(&l->mu);
    dash_graph last = l->last_shape;
    pthread_mutex_unlock(&l->mu);
    if (last.id == e.id && last.ntasks == e.ntasks && last.nedges == e.nedges) {
        e.nkernels = last.nkernels;
        memcpy(e.kernel_id, last.kernel_id, sizeof e.kernel_id);
        memcpy(e.kernel_tasks, last.kernel_tasks, sizeof e.kernel_tasks);
    }
    int walk = !e.nkernels && dash_viewed(l);
    for (size_t i = 0; walk && i < g->ntasks; i++) {
        uint32_t k = graph_task(g, i)->kernel->id, j = 0;
        while (j < e.nkernels && e.kernel_id[j] != k)
            j++;
        if (j == e.nkernels) {
            if (j == 8)
                continue;
            e.kernel_id[e.nkernels++] = k;
        }
        e.kernel_tasks[j]++;
    }
    pthread_mutex_lock(&l->mu);
    if (e.nkernels)
        l->last_shape = e;
    for (int i = 0; i < DASH_MAX_GRAPHS; i++)
        if (!l->graphs[i].g) {
            l->graphs[i] = e;
            break;
        }
    pthread_mutex_unlock(&l->mu);
}

void dash_graph_end(cask_runtime *rt, cask_graph *g)
{
    dash_live *l = rt->live;
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < DASH_MAX_GRAPHS; i++)
        if (l->graphs[i].g == g) {
            l->graphs[i].g = NULL;
            l->graphs_done++;
            l->tasks_done_in_finished += atomic_load(&g->ntasks_run);
        }
    pthread_mutex_unlock(&l->mu);
}
