/* worker_gpu.c: the loop of a GPU worker thread. It keeps several tasks in flight on
 * its GPU's compute streams: for each, it enqueues the input copies (coherence), makes
 * the compute stream wait for them, launches the kernel's CUDA implementation and
 * records an event; it polls those events (never a device-wide synchronize), then
 * releases successors and starts write-backs. A simulated GPU runs the CPU
 * implementation on its own replica memory, synchronously. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/sched.h"
#include "runtime/worker_gpu.h"
#include "runtime/placement.h"
#include "runtime/gpu_commit.h"
#include "runtime/graph.h"
#include "runtime/graph_replay.h"
#include "runtime/task_ctx.h"
#include "runtime/coherence.h"
#include "runtime/device.h"
#include "runtime/log.h"
#include "runtime/trace_task.h"
#include "runtime/dash_live.h"

static void fail_task(worker *w, cask_task *t, cask_status st, const char *msg)
{
    char d[512];
    graph_describe_task(t, d, sizeof d);
    graph_fail(t->graph, st, "%s failed on GPU %d: %s", d, w->device, msg);
    if (w->live)
        dash_task(w->live, w->id, t->kernel->id, dash_lane_gpu(w->live, w->device, 0), 0, 0, 1);
}

static void add_writebacks(worker *w, cask_task *t, cask_data **wbd, int n)
{
    gpu_worker *gw = w->gpu;
    for (int i = 0; i < n; i++) {
        if (gw->nwb == gw->wb_cap) {
            int cap = gw->wb_cap ? gw->wb_cap * 2 : 64;
            writeback *nw = realloc(gw->wb, (size_t)cap * sizeof *nw);
            if (!nw) {   /* cannot watch it: wait for it now */
                while (!coh_writeback_done(w->sched->rt, wbd[i]))
                    sched_yield();
                continue;
            }
            gw->wb = nw;
            gw->wb_cap = cap;
        }
        atomic_fetch_add_explicit(&t->graph->remaining, 1, memory_order_relaxed);
        gw->wb[gw->nwb].d = wbd[i];
        gw->wb[gw->nwb].g = t->graph;
        gw->nwb++;
    }
}

static void *timed_event(worker *w)
{
    gpu_worker *gw = w->gpu;
    if (gw->npool)
        return gw->ev_pool[--gw->npool];
    void *e = NULL;
    if (device_event_create_timed(w->sched->rt->dev, w->device, &e))
        return NULL;
    return e;
}

static void give_event(worker *w, void *e)
{
    gpu_worker *gw = w->gpu;
    if (gw->npool == gw->pool_cap) {
        int cap = gw->pool_cap ? gw->pool_cap * 2 : 64;
        void **p = realloc(gw->ev_pool, (size_t)cap * sizeof *p);
        if (!p) {
            device_event_destroy(w->sched->rt->dev, e);
            return;
        }
        gw->ev_pool = p;
        gw->pool_cap = cap;
    }
    gw->ev_pool[gw->npool++] = e;
}

static void tracer_copy(coh_tracer *base, int phase, void *stream, int which, uint32_t data_id,
                        size_t bytes, int src_node, int dst_node)
{
    gpu_tracer *tr = (gpu_tracer *)base;
    worker *w = tr->w;
    gpu_worker *gw = w->gpu;
    device_set *ds = w->sched->rt->dev;
    if (phase == 0) {
        tr->pending_e0 = timed_event(w);
        if (tr->pending_e0)
            device_event_record(ds, tr->pending_e0, stream);
        return;
    }
    void *e1 = timed_event(w);
    if (!tr->pending_e0 || !e1)
        return;
    device_event_record(ds, e1, stream);
    if (gw->ncopies == gw->copies_cap) {
        int cap = gw->copies_cap ? gw->copies_cap * 2 : 64;
        copy_rec *c = realloc(gw->copies, (size_t)cap * sizeof *c);
        if (!c)
            return;
        gw->copies = c;
        gw->copies_cap = cap;
    }
    gw->copies[gw->ncopies++] = (copy_rec){ tr->pending_e0, e1, which, data_id, bytes };
    tr->pending_e0 = NULL;
}

static uint64_t gpu_time(worker *w, void *ev);

/* Records traced copies whose end event has completed. */
static void poll_copies(worker *w)
{
    gpu_worker *gw = w->gpu;
    static const char *names[] = {"h2d copy", "d2h copy", "peer copy"};
    for (int i = 0; i < gw->ncopies;) {
        copy_rec *c = &gw->copies[i];
        if (device_event_done(w->sched->rt->dev, c->e1) == 0) {
            i++;
            continue;
        }
        trace_copy(w->trace, trace_track_copy(w->trace, w->device, c->which), names[c->which],
                   c->data_id, c->bytes, w->device, gpu_time(w, c->e0), gpu_time(w, c->e1));
        give_event(w, c->e0);
        give_event(w, c->e1);
        gw->copies[i] = gw->copies[--gw->ncopies];
    }
}

static uint64_t gpu_time(worker *w, void *ev)
{
    int64_t ns = 0;
    device_event_elapsed_ns(w->sched->rt->dev, w->gpu->ref_ev, ev, &ns);
    return w->gpu->ref_ns + (uint64_t)(ns > 0 ? ns : 0);
}

void gpu_finish_one(worker *w, cask_task *t, inflight *f)
{
    cask_runtime *rt = w->sched->rt;
    cask_data *wbd[CASK_MAX_BUFFERS];
    int nwb = 0;
    coh_finish_gpu(rt, t, w->device, &w->ctr, WORKER_TRACE(w) ? &w->gpu->tracer.base : NULL, wbd, &nwb);
    add_writebacks(w, t, wbd, nwb);
    if (__builtin_expect(t->flags & TASK_REPLAY, 0)) {   /* a replayed graph's tasks */
        cask_data **rwb;
        graph_replay_complete(w, t, &rwb, &nwb);
        add_writebacks(w, t, rwb, nwb);
    }
    if (WORKER_TRACE(w) && f && f->ev_start) {
        w->last_track = trace_track_gpu(w->trace, w->device, f->stream);
        uint64_t t0 = gpu_time(w, f->ev_start);
        w->last_end_ns = trace_task(w->trace, w->last_track, t, t0, gpu_time(w, f->ev_end));
    } else if (WORKER_TRACE(w) && f && rt->sim) {   /* a slowed simulated GPU's virtual run */
        w->last_track = trace_track_gpu(w->trace, w->device, f->stream);
        w->last_end_ns = trace_task(w->trace, w->last_track, t, f->sim_start, f->sim_end);
    }
    if (w->live && f) {   /* host-side times: issue of its group, completion seen */
        int v = dash_viewed(w->live);
        dash_task(w->live, w->id, t->kernel->id, dash_lane_gpu(w->live, w->device, f->stream),
                  f->t_issue, v ? dash_now_ns() : 0, 0);
    }
    w->run_count++;
    sched_complete(w->sched, w, t, 1);
}

/* Updates the kernel's service-time estimate on this GPU from a finished group: the time
 * since the group was issued or the device last finished a group, whichever is later
 * (what the device took for it, overlapped work not counted twice), summed over as many
 * tasks as were in flight together (gpu_est_add). Then republishes when the device is
 * expected to be done with the rest. */
static void learn_cost(worker *w, inflight *f)
{
    gpu_worker *gw = w->gpu;
    if (f->stream == gw->nstreams || f->stream == gw->nstreams + 2)
        return;   /* a side stream's: not counted (start_task) */
    uint64_t now = sched_now_ns();
    uint64_t from = f->t_issue > gw->dev_done_ns ? f->t_issue : gw->dev_done_ns;
    int depth = gw->tasks_inflight;   /* in flight until now, f's tasks included */
    gw->dev_done_ns = now;
    gw->tasks_inflight -= f->ntasks;
    if (w->live && gw->tasks_inflight == 0)
        dash_running(w->live, w->id, -1);
    gw->est_inflight_ns -= f->est_ns < gw->est_inflight_ns ? f->est_ns : gw->est_inflight_ns;
    uint64_t bu = atomic_load_explicit(&w->busy_until_ns, memory_order_relaxed);
    if (gw->tasks_inflight == 0)
        bu = now;
    else if (!w->sched->rt->sim && (bu <= now || bu > now + gw->est_inflight_ns))
        bu = now + gw->est_inflight_ns;   /* (a simulated GPU's is exact already) */
    atomic_store_explicit(&w->busy_until_ns, bu, memory_order_relaxed);
    if (f->ntasks)
        gpu_est_note_first(&gw->est_sum, f->t[0]);
    if (f->ntasks && gpu_est_add(&gw->est_sum, f->t[0]->kernel, w->device, depth, f->ntasks,
                                 now > from ? now - from : 0))
        gpu_note_speeds(w->sched, f->t[0]->kernel);
}

static void finish_group(worker *w, inflight *f)
{
    learn_cost(w, f);
    for (int i = 0; i < f->ntasks; i++)
        gpu_finish_one(w, f->t[i], f);
    f->ntasks = 0;
}

/* Records the completion event of stream si's open group. */
static void close_group(worker *w, int si)
{
    gpu_worker *gw = w->gpu;
    int k = gw->open_slot[si];
    if (k < 0)
        return;
    gw->open_slot[si] = -1;
    inflight *f = &gw->slot[k];
    f->open = 0;
    cask_runtime *rt = w->sched->rt;
    void *stream = device_stream(rt->dev, w->device, DEV_STREAM_COMPUTE + si);
    if (WORKER_TRACE(w) && f->ev_end)
        device_event_record(rt->dev, f->ev_end, stream);
    cask_status st = device_event_record(rt->dev, f->ev, stream);
    if (st) {
        for (int i = 0; i < f->ntasks; i++)
            fail_task(w, f->t[i], st, "cudaEventRecord after the kernel");
        device_stream_sync(rt->dev, stream);
        /* finished now; poll() sees the event as done (or errored) and releases them */
    }
}

static void close_all_groups(worker *w)
{
    for (int si = 0; si < w->gpu->nstreams + DEV_EXTRA_STREAMS; si++)   /* (side, urgent last) */
        close_group(w, si);
}

/* Returns 1 if the task was deferred (no GPU memory until tasks in flight finish). */
static int start_task(worker *w, cask_task *t, int retry)
{
    sched *s = w->sched;
    cask_runtime *rt = s->rt;
    gpu_worker *gw = w->gpu;
    if (!retry)
        placement_queued(w, t, -1);
    t->last_worker = w->id;
    if (atomic_load_explicit(&t->graph->failed, memory_order_relaxed) &&
        !(t->flags & TASK_REPLAY)) {   /* (a replay is launched already: wait for it) */
        sched_complete(s, w, t, 0);   /* skipped: the graph already failed */
        return 0;
    }
    /* a side task (CASK_KERNEL_SIDE_STREAM) on the side stream, stream index nstreams
     * (device.h): not behind the kernels queued on the compute streams; a copy to the host
     * (CASK_KERNEL_SIDE_TO_HOST) on the second one, nstreams + 2: beside the copies in */
    uint32_t kf = t->kernel->flags;
    int side = (kf & CASK_KERNEL_SIDE_STREAM) && !rt->sim && !(t->flags & TASK_REPLAY);
    /* a top-priority task of a CASK_KERNEL_URGENT_STREAM kernel on the urgent stream,
     * index nstreams + 1: the critical path ahead of the bulk */
    int urgent = !side && (kf & CASK_KERNEL_URGENT_STREAM) && !rt->sim &&
                 !(t->flags & TASK_REPLAY) && t->level == SCHED_PRIO_LEVELS - 1;
    int si = side ? gw->nstreams + ((kf & CASK_KERNEL_SIDE_TO_HOST) ? 2 : 0)
             : urgent ? gw->nstreams + 1 : gw->next_stream;
    if (!side && !urgent)
        gw->next_stream = (gw->next_stream + 1) % gw->nstreams;
    void *stream = device_stream(rt->dev, w->device, DEV_STREAM_COMPUTE + si);
    cask_task_ctx ctx;
    task_ctx_init(&ctx, t, w->device, w->id, stream);
    /* (a replay's stand-in has no buffers: its handles were pinned at submit) */
    cask_status st = (t->flags & TASK_REPLAY) ? CASK_OK :
                     coh_prepare_gpu(rt, t, w->device, stream, &w->ctr,
                                     WORKER_TRACE(w) ? &gw->tracer.base : NULL, ctx.buf, ctx.size,
                                     ctx.msg, sizeof ctx.msg);
    if (st == CASK_ERR_BUSY && (gw->ninflight > 0 || gw->nwb > 0 || w->async_pending > 0)) {
        /* the room is held by our own tasks in flight: retry when one finishes (the
         * task's stream is picked again then) */
        if (!side && !urgent)
            gw->next_stream = si;
        if (retry) {            /* back to the front, keeping the order */
            t->node.next = gw->deferred;
            gw->deferred = &t->node;
            if (!gw->deferred_tail)
                gw->deferred_tail = &t->node;
        } else {
            t->node.next = NULL;
            if (gw->deferred_tail)
                gw->deferred_tail->next = &t->node;
            else
                gw->deferred = &t->node;
            gw->deferred_tail = &t->node;
        }
        return 1;
    }
    if (st) {
        if (st == CASK_ERR_BUSY)
            st = CASK_ERR_NOMEM;
        fail_task(w, t, st, ctx.msg);
        sched_complete(s, w, t, 1);
        return 0;
    }
    if (rt->sim) {
        gpu_sim_run(w, t, &ctx, si);
        return 0;
    }
    int k = gw->open_slot[si];
    inflight *f = k >= 0 ? &gw->slot[k] : NULL;
    if (!f) {
        k = gw->ninflight++;
        f = &gw->slot[k];
        f->ntasks = 0;
        f->open = 1;
        f->stream = si;
        f->t_issue = sched_now_ns();
        if (w->live)
            dash_running(w->live, w->id, (int32_t)t->kernel->id);
        f->est_ns = 0;
        gw->open_slot[si] = k;
        if (WORKER_TRACE(w) && f->ev_start)
            device_event_record(rt->dev, f->ev_start, stream);
    }
    st = t->kernel->cuda(&ctx);
    if (st || ctx.async) {
        if (st) {
            task_ctx_report(&ctx, st);
            /* whatever it enqueued still has to finish before its buffers are reused */
            device_stream_sync(rt->dev, stream);
            gpu_finish_one(w, t, NULL);
        } else {
            w->async_pending++;   /* finished when it ends (finish_async) */
            t->flags |= TASK_WENT_ASYNC;   /* (only this worker writes flags until then) */
        }
        if (f->ntasks == 0) {   /* drop the empty group */
            gw->open_slot[si] = -1;
            gw->ninflight--;
            if (k != gw->ninflight) {
                inflight tmp = gw->slot[k];
                gw->slot[k] = gw->slot[gw->ninflight];
                gw->slot[gw->ninflight] = tmp;
                int sj = gw->slot[k].stream;
                if (gw->slot[k].open)
                    gw->open_slot[sj] = k;
            }
        }
        return 0;
    }
    f->t[f->ntasks++] = t;
    if (side) {
        /* copies beside the kernels: outside the compute streams' budget (a tiled
         * factorization keeps loads of tiles and stores of final ones going beside its
         * kernels, and those must not hold the kernels back), their time not learnt, and
         * each its own group: a task waiting on one copy does not wait for others */
        close_group(w, si);
        return 0;
    }
    uint64_t est = gpu_est(t->kernel, w->device);
    if (!est)   /* not learnt yet: assume a long task until one finishes */
        est = INFLIGHT_BUDGET_NS / 2;
    f->est_ns += est;
    gw->est_inflight_ns += est;
    gw->tasks_inflight++;
    uint64_t now = sched_now_ns(), bu = atomic_load_explicit(&w->busy_until_ns, memory_order_relaxed);
    atomic_store_explicit(&w->busy_until_ns, (bu > now ? bu : now) + est, memory_order_relaxed);
    if (f->ntasks >= gw->group_max)
        close_group(w, si);
    return 0;
}

/* Tries the deferred tasks again, oldest first; stops at the first that must wait. */
static int retry_deferred(worker *w)
{
    gpu_worker *gw = w->gpu;
    int started = 0;
    while (gw->deferred) {
        sched_node *n = gw->deferred;
        gw->deferred = n->next;
        if (!gw->deferred)
            gw->deferred_tail = NULL;
        if (start_task(w, (cask_task *)n, 1))
            break;      /* it went back to the front of the queue */
        started++;
    }
    return started;
}

/* Polls in-flight tasks (kept in issue order) and write-backs; returns how many
 * finished. Work on one stream completes in order, so once a task of a stream is seen
 * pending, the later ones of that stream are not queried. */
static int poll(worker *w)
{
    gpu_worker *gw = w->gpu;
    cask_runtime *rt = w->sched->rt;
    int done = 0;
    uint64_t pending_streams = 0;
    int keep = 0;
    for (int i = 0; i < gw->ninflight; i++) {
        inflight *f = &gw->slot[i];
        uint64_t bit = 1ull << f->stream;
        int r = (f->open || (pending_streams & bit)) ? 0
                : rt->sim ? gpu_sim_done(f, sched_now_ns()) : device_event_done(rt->dev, f->ev);
        if (r == 0) {
            pending_streams |= bit;
            if (keep != i) {   /* compact, preserving order; swap so events are not lost */
                inflight tmp = gw->slot[keep];
                gw->slot[keep] = *f;
                *f = tmp;
                if (gw->slot[keep].open)
                    gw->open_slot[gw->slot[keep].stream] = keep;
            }
            keep++;
            continue;
        }
        if (r < 0)
            for (int j = 0; j < f->ntasks; j++)
                fail_task(w, f->t[j], CASK_ERR_CUDA, "the kernel or its copies failed (cudaEventQuery)");
        finish_group(w, f);
        done++;
    }
    gw->ninflight = keep;
    if (gw->ncopies)
        poll_copies(w);
    for (int i = 0; i < gw->nwb;) {
        if (!coh_writeback_done(rt, gw->wb[i].d)) {
            i++;
            continue;
        }
        cask_graph *g = gw->wb[i].g;
        gw->wb[i] = gw->wb[--gw->nwb];
        sched_count_done(w, g, 1, 0);
        done++;
    }
    return done;
}

/* Finishes the asynchronous tasks that ended. */
static int finish_async(worker *w)
{
    int n = 0;
    for (cask_task *t = sched_async_take(w); t;) {
        cask_task *next = (cask_task *)t->node.next;
        w->async_pending--;
        gpu_finish_one(w, t, NULL);
        t = next;
        n++;
    }
    return n;
}

static int gpu_worker_init(worker *w)
{
    cask_runtime *rt = w->sched->rt;
    gpu_worker *gw = calloc(1, sizeof *gw);
    if (!gw)
        return -1;
    w->gpu = gw;
    gw->gpu = w->device;
    gw->nstreams = device_streams(rt->dev);
    gw->nslots = 4 * (gw->nstreams + DEV_EXTRA_STREAMS);
    gw->group_max = rt->trace ? 1 : GROUP_MAX;
    for (int i = 0; i < (int)(sizeof gw->open_slot / sizeof gw->open_slot[0]); i++)
        gw->open_slot[i] = -1;
    gw->slot = calloc((size_t)gw->nslots, sizeof *gw->slot);
    if (!gw->slot)
        return -1;
    if (device_use(rt->dev, w->device))
        return -1;
    if (rt->sim)
        gpu_sim_init(w);
    for (int i = 0; i < gw->nslots; i++) {
        if (device_event_create(rt->dev, w->device, &gw->slot[i].ev))
            return -1;
        if (rt->trace && !rt->sim &&
            (device_event_create_timed(rt->dev, w->device, &gw->slot[i].ev_start) ||
             device_event_create_timed(rt->dev, w->device, &gw->slot[i].ev_end)))
            return -1;
    }
    if (rt->trace && !rt->sim) {
        void *s = device_stream(rt->dev, w->device, DEV_STREAM_COMPUTE);
        if (device_event_create_timed(rt->dev, w->device, &gw->ref_ev) ||
            device_event_record(rt->dev, gw->ref_ev, s) || device_event_sync(rt->dev, gw->ref_ev))
            return -1;
        gw->ref_ns = sched_now_ns();
        gw->tracer.base.copy = tracer_copy;
        gw->tracer.w = w;
    }
    return 0;
}

static void gpu_worker_free(worker *w)
{
    gpu_worker *gw = w->gpu;
    if (!gw)
        return;
    cask_runtime *rt = w->sched->rt;
    for (int i = 0; gw->slot && i < gw->nslots; i++) {
        device_event_destroy(rt->dev, gw->slot[i].ev);
        device_event_destroy(rt->dev, gw->slot[i].ev_start);
        device_event_destroy(rt->dev, gw->slot[i].ev_end);
    }
    device_event_destroy(rt->dev, gw->ref_ev);
    for (int i = 0; i < gw->ncopies; i++) {
        device_event_destroy(rt->dev, gw->copies[i].e0);
        device_event_destroy(rt->dev, gw->copies[i].e1);
    }
    for (int i = 0; i < gw->npool; i++)
        device_event_destroy(rt->dev, gw->ev_pool[i]);
    free(gw->copies);
    free(gw->ev_pool);
    free(gw->slot);
    free(gw->wb);
    free(gw);
    w->gpu = NULL;
}

/* Late binding: if another GPU is expected to finish t clearly sooner (gpu_commit.h),
 * puts t back in this worker's deque, where that GPU steals it, wakes the GPUs and
 * returns 1. Gives up leaving it (returns 0) once the others have had twice the time
 * they were expected to need, so a task never waits on a wrong estimate for long. */
static int leave_for_another_gpu(worker *w, cask_task *t)
{
    gpu_worker *gw = w->gpu;
    uint64_t now = sched_now_ns(), others = 0;
    if (gpu_commit_ok(w, t, now, &others)) {
        gw->decline_deadline = 0;
        return 0;
    }
    if (!gw->decline_deadline)
        gw->decline_deadline = now + 2 * others + 1000000;
    else if (now > gw->decline_deadline) {
        gw->decline_deadline = 0;
        return 0;
    }
    sched_push_local(w, t);
    sched_wake_kind(w->sched, WORKER_GPU);
    gw->declined = 1;
    return 1;
}

void *worker_gpu_main(void *arg)
{
    worker *w = arg;
    sched *s = w->sched;
    cask_runtime *rt = s->rt;
    sched_worker_enter(w, "GPU worker");
    if (gpu_worker_init(w) != 0) {
        log_msg(rt, CASK_LOG_ERROR, "GPU worker %d could not start; its GPU %d takes no tasks",
                w->id, w->device);
        /* keep serving: tasks sent here fail with a clear message rather than hang */
    }
    for (;;) {
        gpu_worker *gw = w->gpu;
        /* tasks placed here become stealable even while we are busy (with one GPU there
         * is no thief, and draining in small bites would only contend with the pushers) */
        if (s->ngpu > 1)
            sched_drain_inbox(w);
        int progressed = gw ? poll(w) : 0;
        if (w->async_pending)
            progressed += finish_async(w);
        if (gw && gw->deferred && (progressed || (!gw->ninflight && !gw->nwb)))
            progressed += retry_deferred(w);
        if (gw)
            gw->declined = 0;
        while (gw && !gw->deferred && gw->ninflight < gw->nslots &&
               (gw->tasks_inflight < MIN_INFLIGHT || gw->est_inflight_ns < INFLIGHT_BUDGET_NS)) {
            cask_task *t = sched_find_work(w);
            if (!t) {
                gw->decline_deadline = 0;
                break;
            }
            if (leave_for_another_gpu(w, t))
                break;
            sched_mark_active(w);
            start_task(w, t, 0);
            progressed = 1;
        }
        if (gw)
            close_all_groups(w);
        if (!gw) {
            cask_task *t = sched_find_work(w);
            if (t) {
                placement_queued(w, t, -1);
                fail_task(w, t, CASK_ERR_CUDA, "the GPU worker could not initialise its device");
                sched_complete(s, w, t, 1);
                continue;
            }
        }
        if (gw && (gw->ninflight || gw->nwb || gw->ncopies || gw->deferred || gw->declined)) {
            if (!progressed) {
                if (rt->sim || gw->declined)
                    gpu_wait_a_little(w);   /* a virtual clock, or a task left to another GPU */
                else
                    sched_yield();
            }
            continue;
        }
        if (progressed)
            continue;
        /* nothing in flight, nothing queued: sleep */
        sched_mark_idle(w);
        sched_flush_batch(w);
        cask_task *t = sched_sleep(w);
        if (t && w->gpu && leave_for_another_gpu(w, t))
            continue;
        if (t) {
            sched_mark_active(w);
            if (w->gpu)
                start_task(w, t, 0);
            else {
                placement_queued(w, t, -1);
                fail_task(w, t, CASK_ERR_CUDA, "the GPU worker could not initialise its device");
                sched_complete(s, w, t, 1);
            }
            continue;
        }
        if (atomic_load(&s->stop))
            break;
    }
    gpu_worker_free(w);
    return NULL;
}
