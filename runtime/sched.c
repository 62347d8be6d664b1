/* sched.c: creating and stopping workers, inboxes, placing ready tasks, releasing
 * successors, and counting completions in batches (a shared counter touched once per
 * task would be the bottleneck at millions of tasks per second). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "runtime/sched.h"
#include "runtime/placement.h"
#include "runtime/perfmodel.h"
#include "runtime/graph.h"
#include "runtime/subflow.h"
#include "runtime/log.h"
#include "runtime/trace_task.h"

#define BATCH_FLUSH 64

uint64_t sched_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void inbox_push(worker *w, sched_node *n)
{
    sched_node *old = atomic_load_explicit(&w->inbox, memory_order_relaxed);
    do {
        n->next = old;
    } while (!atomic_compare_exchange_weak_explicit(&w->inbox, &old, n,
                 memory_order_release, memory_order_relaxed));
}

static void push_pinned(worker *w, cask_task *t)
{
    t->node.next = NULL;
    if (w->pinned_tail)
        w->pinned_tail->next = &t->node;
    else
        w->pinned_head = &t->node;
    w->pinned_tail = &t->node;
}

/* Returns the deque size after the push. Nothing of t is read once it is visible to
 * thieves: it may run, and its graph finish and be freed, at once. */
int64_t sched_push_local(worker *w, cask_task *t)
{
    int level = t->level;
    if (w->kind == WORKER_GPU && t->device >= 0) {
        push_pinned(w, t);
        return 1;
    }
    if (deque_push(&w->dq[level], t) != 0) {
        inbox_push(w, &t->node);    /* growing failed: the inbox needs no memory */
        return 1;
    }
    unsigned bit = 1u << level;
    if (!(w->level_mask & bit)) {
        w->level_mask |= bit;
        atomic_store_explicit(&w->steal_mask, w->level_mask, memory_order_release);
    }
    return deque_size(&w->dq[level]);
}

static cask_task *pop_local(worker *w)
{
    if (w->pinned_head) {
        sched_node *n = w->pinned_head;
        w->pinned_head = n->next;
        if (!w->pinned_head)
            w->pinned_tail = NULL;
        return (cask_task *)n;
    }
    while (w->level_mask) {
        int lvl = 31 - __builtin_clz(w->level_mask);
        cask_task *t = deque_take(&w->dq[lvl]);
        if (t)
            return t;
        w->level_mask &= ~(1u << lvl);
        atomic_store_explicit(&w->steal_mask, w->level_mask, memory_order_relaxed);
    }
    return NULL;
}

void sched_release(sched *s, worker *self, cask_task *succ)
{
    if (atomic_fetch_sub_explicit(&succ->pending, 1, memory_order_acq_rel) == 1) {
        if (self && WORKER_TRACE(self))
            trace_release(self->trace, self->last_track, succ, self->last_end_ns);
        sched_ready(s, self, succ);
    }
}

/* Decrements held back for a big fan-in successor are applied here. */
static void flush_dec(sched *s, worker *self)
{
    cask_task *succ = self->dec_task;
    int32_t n = self->dec_count;
    self->dec_task = NULL;
    self->dec_count = 0;
    if (succ && atomic_fetch_sub_explicit(&succ->pending, n, memory_order_acq_rel) == n) {
        if (WORKER_TRACE(self))
            trace_release(self->trace, self->last_track, succ, self->last_end_ns);
        sched_ready(s, self, succ);
    }
}

static void release_range(sched *s, worker *self, cask_task *t, size_t begin, size_t end)
{
    cask_task **sv = task_succ(t);
    for (size_t i = begin; i < end; i++) {
        cask_task *succ = sv[i];
        if (self && succ->indegree >= SCHED_BIG_FANIN) {
            if (self->dec_task != succ) {
                if (self->dec_task)
                    flush_dec(s, self);
                self->dec_task = succ;
            }
            self->dec_count++;
            continue;
        }
        sched_release(s, self, succ);
    }
}

/* 1 if t goes to one GPU worker's FIFO of pinned tasks (sched_push_local). */
static int root_is_pinned(sched *s, const cask_task *t)
{
    return placement_kind(s, t) == WORKER_GPU && t->device >= 0;
}

/* 1 if root t of a range this worker took runs here. */
static int root_is_mine(sched *s, const worker *w, const cask_task *t)
{
    if (perf_wants(s, t) && placement_kind(s, t) == WORKER_GPU)
        return 0;   /* the cost model decides (sched_ready) */
    return placement_kind(s, t) == w->kind &&
           (w->kind == WORKER_CPU || t->device < 0 || t->device == w->device);
}

/* Moves everything in the inbox into the deques, oldest first (where thieves see it). */
int sched_drain_inbox(worker *w)
{
    if (!atomic_load_explicit(&w->inbox, memory_order_relaxed))
        return 0;
    sched_node *n = atomic_exchange_explicit(&w->inbox, NULL, memory_order_acquire);
    if (!n)
        return 0;
    sched_node *rev = NULL;
    while (n) {
        sched_node *next = n->next;
        n->next = rev;
        rev = n;
        n = next;
    }
    sched *s = w->sched;
    for (n = rev; n;) {
        sched_node *next = n->next;
        if (n->kind == SCHED_NODE_TASK) {
            sched_push_local(w, (cask_task *)n);
        } else if (n->kind == SCHED_NODE_RELEASE) {
            sched_range *r = (sched_range *)n;
            cask_task *parent = r->parent;
            size_t begin = r->begin, end = r->end;
            release_range(s, w, parent, begin, end);
        } else {
            /* the range lives in its graph: copy it out, since handing the last root
             * to another worker may let the graph finish and be freed */
            sched_range *r = (sched_range *)n;
            cask_task **roots = r->graph->roots;
            size_t begin = r->begin, end = r->end, nrest = 0;
            /* Tasks pinned to a GPU (CASK_TASK_DEVICE) first, in order: its worker keeps
             * them in a FIFO (and drains its inbox oldest first). Then the rest in
             * reverse, so that LIFO pops (of this worker's deques, or of another's, fed
             * from its inbox oldest first) run them in order. A root not yet pushed
             * keeps the graph alive: the second pass stops at the last one. */
            for (size_t i = begin; i < end; i++) {
                cask_task *t = roots[i];
                if (!root_is_pinned(s, t))
                    nrest++;
                else if (root_is_mine(s, w, t))
                    sched_push_local(w, t);
                else
                    sched_ready(s, w, t);
            }
            for (size_t i = end; nrest > 0 && i-- > begin;) {
                cask_task *t = roots[i];
                if (root_is_pinned(s, t))
                    continue;
                nrest--;
                if (root_is_mine(s, w, t))
                    sched_push_local(w, t);
                else
                    sched_ready(s, w, t);
            }
            if (end - begin > 1)   /* surplus work: let a sleeping thief know */
                sched_wake_kind(s, w->kind);
        }
        n = next;
    }
    return 1;
}

static cask_task *steal(worker *w)
{
    sched *s = w->sched;
    for (int round = 0; round < 2; round++) {
        for (int v = 0; v < w->nvictims; v++) {
            worker *vic = &s->w[w->victims[v]];
            unsigned mask = atomic_load_explicit(&vic->steal_mask, memory_order_acquire);
            while (mask) {
                int lvl = 31 - __builtin_clz(mask);
                mask &= ~(1u << lvl);
                if (deque_size(&vic->dq[lvl]) == 0)
                    continue;
                atomic_fetch_add_explicit(&w->ctr.steal_attempts, 1, memory_order_relaxed);
                void *x;
                do {
                    x = deque_steal(&vic->dq[lvl]);
                } while (x == DEQUE_ABORT);
                if (x) {
                    atomic_fetch_add_explicit(&w->ctr.steals, 1, memory_order_relaxed);
                    cask_task *t = x;
                    if (w->kind == WORKER_GPU)
                        placement_moved(s, vic, w, t);
                    else if (deque_size(&vic->dq[lvl]) > 0 &&
                             atomic_load_explicit(&s->nsleep[WORKER_CPU],
                                                  memory_order_relaxed) > 0)
                        /* more where this came from: wake the next thief, so that a
                           burst pushed to one worker (a graph's roots, a wide fan-out)
                           reaches every sleeping worker, one wake per steal, instead
                           of only the one woken when it was pushed. An extra wake,
                           not one the protocol needs: a glance at the sleeper count
                           first, so that busy workers pay no fence for it */
                        sched_wake_kind(s, WORKER_CPU);
                    return t;
                }
            }
        }
    }
    return NULL;
}

cask_task *sched_find_work(worker *w)
{
    cask_task *t = pop_local(w);
    if (t)
        return t;
    if (sched_drain_inbox(w) && (t = pop_local(w)))
        return t;
    sched_mark_idle(w);
    if (w->dec_task) {
        flush_dec(w->sched, w);
        if ((t = pop_local(w)))
            return t;
    }
    sched_flush_batch(w);
    return steal(w);
}

void sched_wake_worker(worker *w)
{
    notifier_notify(&w->note, 0);
}

void sched_wake_kind(sched *s, int kind)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->nsleep[kind], memory_order_relaxed) == 0)
        return;
    int lo = kind == WORKER_CPU ? 0 : s->ncpu;
    int n = kind == WORKER_CPU ? s->ncpu : s->ngpu;
    if (n <= 0)
        return;
    uint32_t start = atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        worker *w = &s->w[lo + (int)((start + (uint32_t)i) % (uint32_t)n)];
        if (atomic_load_explicit(&w->note.sleepers, memory_order_relaxed) > 0) {
            notifier_notify(&w->note, 0);
            return;
        }
    }
}

void sched_ready(sched *s, worker *self, cask_task *t)
{
    int kind = placement_kind(s, t);
    if (kind == WORKER_GPU && perf_wants(s, t))
        kind = perf_choose(s, t);
    if (kind == WORKER_GPU) {
        int target = placement_pick_gpu(s, t);
        worker *w = &s->w[target];
        placement_queued(w, t, 1);
        if (self == w) {
            sched_push_local(w, t);
        } else {
            inbox_push(w, &t->node);
            sched_wake_worker(w);
        }
        return;
    }
    if (self && self->kind == WORKER_CPU) {
        /* surplus work: let a sleeping thief know */
        if (sched_push_local(self, t) > 1)
            sched_wake_kind(s, WORKER_CPU);
        return;
    }
    uint32_t r = atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed);
    worker *w = &s->w[r % (uint32_t)s->ncpu];
    inbox_push(w, &t->node);
    sched_wake_worker(w);
}

void sched_mark_active(worker *w)
{
    if (!w->active) {
        uint64_t now = sched_now_ns();
        atomic_fetch_add_explicit(&w->ctr.idle_ns, now - w->mark_ns, memory_order_relaxed);
        w->mark_ns = now;
        w->active = 1;
    }
}

void sched_mark_idle(worker *w)
{
    if (w->active) {
        uint64_t now = sched_now_ns();
        atomic_fetch_add_explicit(&w->ctr.busy_ns, now - w->mark_ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->ctr.tasks_run, w->run_count, memory_order_relaxed);
        w->run_count = 0;
        w->mark_ns = now;
        w->active = 0;
    }
}

void sched_flush_batch(worker *self)
{
    if (self->run_count) {   /* counters are exact once a graph has finished */
        atomic_fetch_add_explicit(&self->ctr.tasks_run, self->run_count, memory_order_relaxed);
        self->run_count = 0;
    }
    if (self->batch_count) {
        cask_graph *g = self->batch_graph;
        int64_t n = self->batch_count;
        self->batch_count = 0;
        self->batch_graph = NULL;
        if (self->batch_run)
            atomic_fetch_add_explicit(&g->ntasks_run, (uint64_t)self->batch_run, memory_order_relaxed);
        self->batch_run = 0;
        if (atomic_fetch_sub_explicit(&g->remaining, n, memory_order_acq_rel) == n)
            graph_finish(g);
    }
}

void sched_count_done(worker *self, cask_graph *g, int64_t n, int64_t ran)
{
    if (!self) {
        atomic_fetch_add_explicit(&g->ntasks_run, (uint64_t)ran, memory_order_relaxed);
        if (atomic_fetch_sub_explicit(&g->remaining, n, memory_order_acq_rel) == n)
            graph_finish(g);
        return;
    }
    if (self->batch_graph != g) {
        sched_flush_batch(self);
        self->batch_graph = g;
    }
    self->batch_count += n;
    self->batch_run += ran;
    if (self->batch_count >= BATCH_FLUSH)
        sched_flush_batch(self);
}

void sched_complete(sched *s, worker *self, cask_task *t, int ran)
{
    /* a task with joined children finishes when the last of them has (subflow.c) */
    task_cold *c = task_cold_of(t);
    if (__builtin_expect(c != NULL, 0) && atomic_load_explicit(&c->join, memory_order_relaxed) &&
        atomic_fetch_sub_explicit(&c->join, 1, memory_order_acq_rel) != 1)
        return;
    cask_graph *g = t->graph;
    /* skipped: the graph failed before it could run (graph_task_status) */
    if (__builtin_expect(!ran || (t->flags & TASK_SKIPPED), 0))
        t->flags = ran ? t->flags & ~TASK_SKIPPED : t->flags | TASK_SKIPPED;
    /* only this task's predecessors touch its count, and they are done: reset it for
     * the next run of the graph */
    atomic_store_explicit(&t->pending, t->indegree, memory_order_relaxed);
    size_t n = (size_t)t->nsucc;
    if (n >= SCHED_SPLIT_RELEASE && c && c->release && self && s->ncpu > 1) {
        /* a big fan-out: other CPU workers release shares of the successors */
        int parts = s->ncpu;
        size_t per = (n + (size_t)parts - 1) / (size_t)parts;
        size_t begin = per;          /* the first share is ours */
        for (int i = 0; i < parts && begin < n; i++) {
            int wi = (self->kind == WORKER_CPU ? self->id + 1 + i : i) % s->ncpu;
            if (wi == self->id)
                continue;
            sched_range *r = &c->release[wi];
            r->node.kind = SCHED_NODE_RELEASE;
            r->graph = g;
            r->parent = t;
            r->begin = begin;
            r->end = begin + per < n ? begin + per : n;
            begin = r->end;
            inbox_push(&s->w[wi], &r->node);
            sched_wake_worker(&s->w[wi]);
        }
        n = per < n ? per : n;
    }
    release_range(s, self, t, 0, n);
    graph_task_done(self, t);
    cask_task *parent = c ? c->parent : NULL;
    sched_count_done(self, g, 1, ran != 0);
    if (parent)   /* still counted, so g is alive */
        subflow_child_done(s, self, t, parent);
}

void sched_submit(sched *s, cask_graph *g)
{
    /* roots go out as ranges, one per worker of the kind most roots need: one inbox
     * push per worker instead of one per root */
    int lo = s->ncpu > 0 ? 0 : s->ncpu;
    int n = s->ncpu > 0 ? s->ncpu : s->ngpu;
    size_t nroots = g->nroots;
    size_t per = (nroots + (size_t)n - 1) / (size_t)n;
    if (per < 16)
        per = 16;
    size_t begin = 0;
    uint32_t start = atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed);
    for (int i = 0; i < n && begin < nroots; i++) {
        int wi = lo + (int)((start + (uint32_t)i) % (uint32_t)n);
        sched_range *r = &g->ranges[wi];
        r->node.kind = SCHED_NODE_RANGE;
        r->graph = g;
        r->begin = begin;
        r->end = begin + per < nroots ? begin + per : nroots;
        begin = r->end;
        inbox_push(&s->w[wi], &r->node);
        sched_wake_worker(&s->w[wi]);
    }
}

static int cmp_near(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[1] != y[1])
        return y[1] - x[1];
    return x[0] - y[0];
}

cask_status sched_create(cask_runtime *rt, sched **out)
{
    sched *s = calloc(1, sizeof *s);
    if (!s)
        return CASK_ERR_NOMEM;
    s->rt = rt;
    s->ncpu = rt->ncpu;
    s->ngpu = rt->ngpu;
    s->nworkers = s->ncpu + s->ngpu;
    s->w = aligned_alloc(64, ((sizeof(worker) * (size_t)s->nworkers + 63) / 64) * 64);
    if (!s->w) {
        free(s);
        return CASK_ERR_NOMEM;
    }
    memset(s->w, 0, sizeof(worker) * (size_t)s->nworkers);
    for (int i = 0; i < s->nworkers; i++) {
        worker *w = &s->w[i];
        w->id = i;
        w->sched = s;
        w->kind = i < s->ncpu ? WORKER_CPU : WORKER_GPU;
        w->device = w->kind == WORKER_GPU ? i - s->ncpu : -1;
        w->core = i % rt->topo.nmine;
        w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        for (int l = 0; l < SCHED_PRIO_LEVELS; l++)
            if (deque_init(&w->dq[l], 256))
                goto fail;
        if (notifier_init(&w->note))
            goto fail;
        w->inited = 1;
        atomic_init(&w->inbox, NULL);
    }
    /* victims: same kind, nearest core first (deepest common hwloc ancestor) */
    for (int i = 0; i < s->nworkers; i++) {
        worker *w = &s->w[i];
        int lo = w->kind == WORKER_CPU ? 0 : s->ncpu;
        int n = w->kind == WORKER_CPU ? s->ncpu : s->ngpu;
        w->victims = malloc(sizeof(int) * (size_t)(n > 1 ? n - 1 : 1));
        int (*tmp)[2] = malloc(sizeof(int[2]) * (size_t)(n > 0 ? n : 1));
        if (!w->victims || !tmp) {
            free(tmp);
            goto fail;
        }
        int k = 0;
        for (int j = lo; j < lo + n; j++) {
            if (j == i)
                continue;
            tmp[k][0] = j;
            tmp[k][1] = topology_nearness(&rt->topo, w->core, s->w[j].core);
            k++;
        }
        qsort(tmp, (size_t)k, sizeof tmp[0], cmp_near);
        for (int j = 0; j < k; j++)
            w->victims[j] = tmp[j][0];
        w->nvictims = k;
        free(tmp);
    }
    *out = s;
    return CASK_OK;
fail:
    sched_destroy(s);
    return CASK_ERR_NOMEM;
}

cask_status sched_start(sched *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        worker *w = &s->w[i];
        void *(*fn)(void *) = w->kind == WORKER_CPU ? worker_cpu_main : worker_gpu_main;
        if (pthread_create(&w->thread, NULL, fn, w) != 0)
            return log_error(s->rt, CASK_ERR_NOMEM, "pthread_create for worker %d", i);
        w->started = 1;
    }
    return CASK_OK;
}

void sched_destroy(sched *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    while (atomic_load(&s->ending))   /* asynchronous ends still waking a worker */
        sched_yield();
    for (int i = 0; i < s->nworkers; i++)
        notifier_notify(&s->w[i].note, 1);
    for (int i = 0; i < s->nworkers; i++)
        if (s->w[i].started)
            pthread_join(s->w[i].thread, NULL);
    for (int i = 0; i < s->nworkers; i++) {
        worker *w = &s->w[i];
        for (int l = 0; l < SCHED_PRIO_LEVELS; l++)
            deque_destroy(&w->dq[l]);
        if (w->inited)
            notifier_destroy(&w->note);
        free(w->victims);
    }
    free(s->w);
    free(s);
}

void sched_worker_enter(worker *w, const char *what)
{
    cask_runtime *rt = w->sched->rt;
    if (rt->cfg.bind && topology_bind_self(&rt->topo, w->core) != 0)
        log_msg(rt, CASK_LOG_DEBUG, "%s %d: could not pin to core %d", what, w->id, w->core);
    w->trace = rt->trace;
    w->live = rt->live;
    w->mark_ns = sched_now_ns();
}

cask_task *sched_sleep(worker *w)
{
    sched *s = w->sched;
    uint64_t e = notifier_prepare(&w->note);
    atomic_fetch_add(&s->nsleep[w->kind], 1);
    /* look once more: work pushed before we counted as a sleeper would not wake us */
    cask_task *t = sched_find_work(w);
    if (t || atomic_load(&s->stop) ||
        atomic_load_explicit(&w->async_done, memory_order_acquire))   /* asynchronous ends */
        notifier_cancel(&w->note);
    else
        notifier_commit(&w->note, e, 0);
    atomic_fetch_sub(&s->nsleep[w->kind], 1);
    return t;
}
