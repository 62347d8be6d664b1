/* gpu_commit.c: see gpu_commit.h. */
#include "runtime/gpu_commit.h"
#include "runtime/graph.h"
#include "runtime/log.h"
#include "runtime/perfmodel.h"

uint64_t gpu_est(const cask_kernel *k, int gpu)
{
    return atomic_load_explicit(&k->gpu_ns[gpu], memory_order_relaxed);
}

/* 1 if a is off from ref by 1.5x or more, upwards (dir 1) or downwards (dir -1). */
static int off(uint64_t a, uint64_t ref, int dir)
{
    return dir > 0 ? 2 * a >= 3 * ref : 3 * a <= 2 * ref;
}

void gpu_est_learn(cask_kernel *k, int gpu, uint64_t sample_ns)
{
    if (!sample_ns)
        return;
    uint64_t old = atomic_load_explicit(&k->gpu_ns[gpu], memory_order_relaxed);
    uint64_t last = atomic_load_explicit(&k->gpu_last_ns[gpu], memory_order_relaxed);
    uint64_t v;
    if (!old)
        v = sample_ns;
    else if (last && ((off(sample_ns, old, 1) && off(last, old, 1)) ||
                      (off(sample_ns, old, -1) && off(last, old, -1))))
        v = (sample_ns + last) / 2;   /* two in a row off the same way: the device changed */
    else
        v = (old * 3 + sample_ns) / 4;
    atomic_store_explicit(&k->gpu_last_ns[gpu], sample_ns, memory_order_relaxed);
    atomic_store_explicit(&k->gpu_ns[gpu], v, memory_order_relaxed);
}

void gpu_est_note_first(gpu_est_sum *s, const cask_task *first)
{
    cask_kernel *k = first->kernel;
    if ((k->flags & CASK_KERNEL_COST_MODEL) && (s->kernel != k || !s->tasks))
        s->fp = perf_footprint(first, &s->bytes);
}

int gpu_est_add(gpu_est_sum *s, cask_kernel *k, int gpu, int depth, int ntasks, uint64_t ns)
{
    if (ntasks <= 0)
        return 0;
    if (s->kernel != k || !s->tasks) {   /* a new sum */
        s->kernel = k;
        s->ns = 0;
        s->tasks = 0;
        s->need = depth > ntasks ? depth : ntasks;
    }
    s->ns += ns;
    s->tasks += ntasks;
    if (s->tasks < s->need)
        return 0;
    gpu_est_learn(k, gpu, s->ns / (uint64_t)s->tasks);
    if ((k->flags & CASK_KERNEL_COST_MODEL) && s->fp)
        perf_learn(k, s->fp, s->bytes, PERF_GPU, s->ns / (uint64_t)s->tasks);
    s->tasks = 0;
    return 1;
}

void gpu_note_speeds(sched *s, const cask_kernel *k)
{
    if (s->ngpu < 2)
        return;
    uint64_t e[CASK_MAX_GPUS], min = UINT64_MAX;
    for (int g = 0; g < s->ngpu; g++) {
        e[g] = gpu_est(k, g);
        if (!e[g])
            return;
        if (e[g] < min)
            min = e[g];
    }
    for (int g = 0; g < s->ngpu; g++) {
        double r = (double)e[g] / (double)min * 1e6;
        atomic_store_explicit(&s->gpu_slow_ppm[g], r < 4e9 ? (uint32_t)r : 4000000000u,
                              memory_order_relaxed);
    }
}

static uint64_t left(const worker *o, uint64_t now)
{
    uint64_t b = atomic_load_explicit(&o->busy_until_ns, memory_order_relaxed);
    return b > now ? b - now : 0;
}

int gpu_commit_ok(worker *w, const cask_task *t, uint64_t now, uint64_t *others_ns)
{
    sched *s = w->sched;
    if (others_ns)
        *others_ns = 0;
    if (s->ngpu < 2 || t->device >= 0)
        return 1;
    const cask_kernel *k = t->kernel;
    /* leaving a task is the move that needs confidence: this GPU counts its faster
     * figure (estimate or last sample, e.g. just recovered), the others their slower */
    uint64_t mine = gpu_est(k, w->device);
    uint64_t last = atomic_load_explicit(&k->gpu_last_ns[w->device], memory_order_relaxed);
    if (last && last < mine)
        mine = last;
    if (!mine)
        return 1;
    double my_end = (double)left(w, now) + (double)mine;
    /* the other GPUs drain their own work in flight and every queued GPU task (this one
     * included, as it is still counted as queued) at their combined rate */
    double rate = 0, backlog = 0;
    int64_t queued = 0;
    for (int g = 0; g < s->ngpu; g++) {
        worker *o = &s->w[s->ncpu + g];
        int64_t q = atomic_load_explicit(&o->queued, memory_order_relaxed);
        queued += q > 0 ? q : 0;
        if (o == w)
            continue;
        uint64_t e = gpu_est(k, g);
        if (!e)
            return 1;    /* not timed there yet: no basis to leave it */
        uint64_t el = atomic_load_explicit(&k->gpu_last_ns[g], memory_order_relaxed);
        if (el > e)
            e = el;
        rate += 1.0 / (double)e;
        backlog += (double)left(o, now) / (double)e;
    }
    if (queued < 1)
        queued = 1;
    double others = ((double)queued + backlog) / rate;
    if (others_ns)
        *others_ns = (uint64_t)others;
    /* a margin so that two equal GPUs do not hand tasks back and forth on noise */
    int ok = my_end <= others * 1.25 + 500000.0;
    if (!ok)
        LOG_DEBUG(s->rt, "GPU %d leaves %s: it would end in %.2f ms (%.2f ms per task here), the "
                  "other GPUs finish the %lld queued in %.2f ms", w->device, k->name, my_end / 1e6,
                  (double)mine / 1e6, (long long)queued, others / 1e6);
    return ok;
}
