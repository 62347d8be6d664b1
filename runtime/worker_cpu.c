/* worker_cpu.c: the loop of a CPU worker thread: find work (own deques, inbox, steal),
 * run it, release successors; spin briefly, then sleep on its notifier. */
#include <sched.h>
#include "runtime/sched.h"
#include "runtime/graph.h"
#include "runtime/task_ctx.h"
#include "runtime/subflow.h"
#include "runtime/coherence.h"
#include "runtime/log.h"
#include "runtime/trace_task.h"
#include "runtime/dash_live.h"
#include "runtime/spill.h"
#include "runtime/perfmodel.h"

#define SPIN_ROUNDS 64

static void run_task(worker *w, cask_task *t)
{
    cask_graph *g = t->graph;
    cask_runtime *rt = g->rt;
    if (rt->spill && spill_defer(rt, t))
        return;   /* an input is on disk: read back off this worker, t comes back ready */
    t->last_worker = w->id;
    int ran = 0;
    if (!atomic_load_explicit(&g->failed, memory_order_relaxed)) {
        ran = 1;
        cask_task_ctx ctx;
        task_ctx_init(&ctx, t, -1, w->id, NULL);
        uint64_t t0 = WORKER_TRACE(w) ? sched_now_ns() : 0;
        uint64_t d0 = w->live && dash_viewed(w->live) ? dash_now_ns() : 0;
        cask_status st = coh_prepare_host(g->rt, t, &w->ctr, ctx.buf, ctx.size, ctx.msg,
                                          sizeof ctx.msg);
        if (rt->spill)
            spill_undefer(rt, t);
        if (st) {
            ctx.has_msg = 1;
        } else {
            if (w->live)
                dash_running(w->live, w->id, (int32_t)t->kernel->id);
            int timed = (t->kernel->flags & CASK_KERNEL_COST_MODEL) != 0;
            uint64_t k0 = timed ? sched_now_ns() : 0;
            st = t->kernel->cpu(&ctx);
            if (timed && !st && !ctx.async) {   /* the cost model's CPU time */
                uint64_t bytes, fp = perf_footprint(t, &bytes);
                perf_learn(t->kernel, fp, bytes, PERF_CPU, sched_now_ns() - k0);
            }
            if (w->live)
                dash_running(w->live, w->id, -1);
            if (ctx.sub)   /* children it spawned: launched, or dropped if it failed */
                subflow_end(w, &ctx, st);
            if (st || !ctx.async)
                coh_finish_host(g->rt, t);
        }
        if (st)
            task_ctx_report(&ctx, st);
        if (WORKER_TRACE(w)) {   /* an asynchronous task: the part on this worker */
            w->last_track = trace_track_cpu(w->trace, w->id);
            w->last_end_ns = trace_task(w->trace, w->last_track, t, t0, sched_now_ns());
        }
        if (w->live)
            dash_task(w->live, w->id, t->kernel->id, (uint32_t)w->id, d0,
                      d0 ? dash_now_ns() : 0, st != CASK_OK);
        if (!st && ctx.async) {  /* ends later: finish_async does the rest */
            w->async_pending++;
            return;
        }
    }
    if (!ran && rt->spill)
        spill_undefer(rt, t);
    perf_cpu_done(w->sched, t);
    w->run_count++;
    sched_complete(w->sched, w, t, ran);
}

/* Finishes the asynchronous tasks that ended (their buffers were held until now). */
static int finish_async(worker *w)
{
    int n = 0;
    for (cask_task *t = sched_async_take(w); t;) {
        cask_task *next = (cask_task *)t->node.next;
        coh_finish_host(t->graph->rt, t);
        perf_cpu_done(w->sched, t);
        w->async_pending--;
        w->run_count++;
        sched_complete(w->sched, w, t, 1);
        t = next;
        n++;
    }
    return n;
}

void *worker_cpu_main(void *arg)
{
    worker *w = arg;
    sched *s = w->sched;
    sched_worker_enter(w, "worker");
    for (;;) {
        if (w->async_pending)
            finish_async(w);
        cask_task *t = sched_find_work(w);
        for (int i = 0; !t && i < SPIN_ROUNDS; i++) {
            sched_yield();
            t = sched_find_work(w);
        }
        if (!t) {
            t = sched_sleep(w);
            if (!t) {
                if (atomic_load(&s->stop))
                    break;
                continue;
            }
        }
        sched_mark_active(w);
        run_task(w, t);
    }
    sched_mark_idle(w);
    return NULL;
}
