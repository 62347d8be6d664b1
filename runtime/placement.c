/* placement.c: see placement.h. Replica flags are read without the data lock: this is a
 * guess about where bytes are, corrected by the coherence layer when the task runs. */
#include "runtime/placement.h"
#include "runtime/graph.h"
#include "runtime/data.h"
#include "runtime/gpu_commit.h"

int placement_kind(const sched *s, const cask_task *t)
{
    /* a GPU is preferred for a task that can use one; CPU workers take the rest */
    if (task_can_gpu(t) && s->ngpu > 0)
        return WORKER_GPU;
    return WORKER_CPU;
}

int placement_pick_gpu(sched *s, const cask_task *t)
{
    int base = s->ncpu;
    if (t->device >= 0 && t->device < s->ngpu)
        return base + t->device;
    if (s->rt->cfg.sched == CASK_SCHED_WS)
        return base + (int)(atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed) % (uint32_t)s->ngpu);
    int64_t minq = INT64_MAX;
    int shortest = 0;
    uint32_t start = atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed);
    uint64_t now = sched_now_ns();
    double best_end = 1e300;
    int timed = 1;   /* t's kernel has a service time on every GPU */
    for (int g = 0; g < s->ngpu && timed; g++)
        timed = gpu_est(t->kernel, g) != 0;
    for (int i = 0; i < s->ngpu; i++) {
        int g = (int)((start + (uint32_t)i) % (uint32_t)s->ngpu);
        worker *w = &s->w[base + g];
        int64_t q = atomic_load_explicit(&w->queued, memory_order_relaxed);
        uint64_t bu = atomic_load_explicit(&w->busy_until_ns, memory_order_relaxed);
        /* the shortest queue, counting work committed to the device as one more task;
         * with service times, the GPU expected to finish t first (a slow one gets less) */
        q += bu > now;
        double end;
        if (timed) {
            end = (double)(bu > now ? bu - now : 0) +
                  (double)(q + 1) * (double)gpu_est(t->kernel, g);
        } else {
            /* not timed everywhere: the shortest queue, weighed by how much slower this
               GPU was on the last kernel timed on all (a GPU under another load, say) */
            uint32_t slow = atomic_load_explicit(&s->gpu_slow_ppm[g], memory_order_relaxed);
            end = (double)(q + 1) * (slow ? (double)slow : 1e6);
        }
        if (end < best_end) {
            best_end = end;
            shortest = g;
        }
        if (q < minq)
            minq = q;
    }
    if (s->rt->cfg.sched != CASK_SCHED_LOCALITY || s->ngpu == 1)
        return base + shortest;
    size_t bytes[CASK_MAX_GPUS] = {0};
    size_t best = 0, total = 0;
    int best_gpu = -1;
    for (int a = 0; a < t->naccess; a++) {
        if (!(t->access[a].mode & CASK_READ))
            continue;
        cask_data *d = t->access[a].data;
        total += d->bytes;
        for (int g = 0; g < s->ngpu; g++)
            if (__atomic_load_n(&d->rep[1 + g].valid, __ATOMIC_RELAXED))
                bytes[g] += d->bytes;
    }
    for (int g = 0; g < s->ngpu; g++)
        if (bytes[g] > best) {
            best = bytes[g];
            best_gpu = g;
        }
    /* locality only pays when most of the input is already there */
    if (best_gpu < 0 || 2 * best < total)
        return base + shortest;
    int64_t q = atomic_load_explicit(&s->w[base + best_gpu].queued, memory_order_relaxed) +
                (atomic_load_explicit(&s->w[base + best_gpu].busy_until_ns, memory_order_relaxed) > now);
    /* "far busier": more than twice the shortest queue plus a few tasks */
    if (q > 2 * minq + 4)
        return base + shortest;
    return base + best_gpu;
}

void placement_queued(worker *w, const cask_task *t, int d)
{
    atomic_fetch_add_explicit(&w->queued, d, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->queued_lvl[t->level], d, memory_order_relaxed);
}

void placement_moved(sched *s, worker *from, worker *to, const cask_task *t)
{
    (void)s;
    placement_queued(from, t, -1);
    placement_queued(to, t, 1);
}
