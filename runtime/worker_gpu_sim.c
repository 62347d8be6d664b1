/* worker_gpu_sim.c: a task on a simulated GPU. Its CPU implementation runs on the worker
 * thread, on the GPU's own replicas; the time it took is its work at full speed. On a
 * GPU that CASK_SIM_GPU_SLOW does not slow (or outside its window) the task then
 * finishes at once, as it always did. On a slowed one the device runs one task at a
 * time on a virtual clock (runtime/sim_slow.h): the task becomes a group in flight that
 * ends when that clock says so, so depth, estimates, late binding and stealing work
 * against it as against a real GPU with a competing load. */
#include <time.h>
#include "runtime/worker_gpu.h"
#include "runtime/gpu_commit.h"
#include "runtime/perfmodel.h"
#include "runtime/runtime.h"
#include "runtime/graph.h"
#include "runtime/task_ctx.h"
#include "runtime/trace_task.h"
#include "runtime/dash_live.h"

void gpu_sim_init(worker *w)
{
    cask_runtime *rt = w->sched->rt;
    gpu_worker *gw = w->gpu;
    gw->slow = NULL;
    for (int i = 0; i < rt->cfg.nsim_slow; i++)
        if (rt->cfg.sim_slow[i].gpu == w->device)
            gw->slow = &rt->cfg.sim_slow[i];
}

int gpu_sim_done(const inflight *f, uint64_t now)
{
    return now >= f->sim_end;
}

void gpu_wait_a_little(worker *w)
{
    gpu_worker *gw = w->gpu;
    uint64_t now = sched_now_ns(), wait = w->sched->rt->sim ? 100000 : 20000;
    for (int i = 0; w->sched->rt->sim && i < gw->ninflight; i++) {
        uint64_t e = gw->slot[i].sim_end;
        uint64_t d = e > now ? e - now : 0;
        if (d < wait)
            wait = d;
    }
    if (!wait)
        return;
    struct timespec ts = { 0, (long)wait };
    nanosleep(&ts, NULL);
}

void gpu_sim_run(worker *w, cask_task *t, cask_task_ctx *ctx, int si)
{
    gpu_worker *gw = w->gpu;
    /* what was placed here meanwhile becomes stealable while this worker runs t */
    if (w->sched->ngpu > 1)
        sched_drain_inbox(w);
    uint64_t est = gpu_est(t->kernel, w->device);
    uint64_t t0 = sched_now_ns();
    if (!atomic_load_explicit(&w->sched->sim_origin_ns, memory_order_relaxed)) {
        uint64_t zero = 0;   /* the first task on a simulated GPU: windows count from here */
        atomic_compare_exchange_strong(&w->sched->sim_origin_ns, &zero, t0);
    }
    uint64_t dev_free = atomic_load_explicit(&w->busy_until_ns, memory_order_relaxed);
    if (!gw->ninflight)   /* running it here and now: published for the other GPUs */
        atomic_store_explicit(&w->busy_until_ns, t0 + est, memory_order_relaxed);
    ctx->stream = NULL;
    if (w->live)
        dash_running(w->live, w->id, (int32_t)t->kernel->id);
    cask_status st = t->kernel->cpu(ctx);
    if (w->live)
        dash_running(w->live, w->id, -1);
    if (st)
        task_ctx_report(ctx, st);
    uint64_t t1 = sched_now_ns();
    /* the device starts it when it is free; slowed, the work takes longer */
    uint64_t start = gw->ninflight && dev_free > t0 ? dev_free : t0;
    uint64_t end = t1;
    if (gw->slow) {
        uint64_t origin = atomic_load_explicit(&w->sched->sim_origin_ns, memory_order_relaxed);
        end = sim_slow_finish(gw->slow, origin, start, t1 - t0);
    }
    int inflight_ok = !st && !ctx->async && end > t1 && gw->ninflight < gw->nslots;
    if (inflight_ok) {   /* a group in flight until the virtual clock reaches end */
        inflight *f = &gw->slot[gw->ninflight++];
        f->ntasks = 1;
        f->t[0] = t;
        f->open = 0;
        f->stream = si;
        f->t_issue = t0;
        f->est_ns = est ? est : INFLIGHT_BUDGET_NS / 2;
        f->sim_start = start;
        f->sim_end = end;
        gw->est_inflight_ns += f->est_ns;
        gw->tasks_inflight++;
        atomic_store_explicit(&w->busy_until_ns, end, memory_order_relaxed);
        return;
    }
    if (end > t1 && !st && !ctx->async) {   /* no slot left: wait for the device here */
        struct timespec ts = { (time_t)((end - t1) / 1000000000ull), (long)((end - t1) % 1000000000ull) };
        nanosleep(&ts, NULL);
        t1 = sched_now_ns();
    }
    if (!st && !gw->ninflight) {
        gpu_est_learn(t->kernel, w->device, t1 - start);
        if (t->kernel->flags & CASK_KERNEL_COST_MODEL) {
            uint64_t bytes, fp = perf_footprint(t, &bytes);
            perf_learn(t->kernel, fp, bytes, PERF_GPU, t1 - start);
        }
    }
    if (!gw->ninflight)
        atomic_store_explicit(&w->busy_until_ns, t1, memory_order_relaxed);
    if (WORKER_TRACE(w)) {
        w->last_track = trace_track_gpu(w->trace, w->device, si);
        w->last_end_ns = trace_task(w->trace, w->last_track, t, start, t1);
    }
    if (w->live)
        dash_task(w->live, w->id, t->kernel->id, dash_lane_gpu(w->live, w->device, si), t0,
                  dash_viewed(w->live) ? dash_now_ns() : 0, st != CASK_OK);
    if (!st && ctx->async) {
        w->async_pending++;   /* finished when it ends (finish_async) */
        t->flags |= TASK_WENT_ASYNC;   /* never replayed (graph_replay.c) */
    } else
        gpu_finish_one(w, t, NULL);
}
