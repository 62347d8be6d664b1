/* graph.c: building task graphs (sequential task flow from access modes, explicit
 * edges), checking them (cycles, where tasks can run, busy data), running and waiting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/graph.h"
#include "runtime/dash_live.h"
#include "runtime/data.h"
#include "runtime/log.h"
#include "scheduler/sched.h"

static _Atomic uint32_t next_graph_id = 1;  /* ids only: never reused, so a stale id in a
                                              data handle cannot match a new graph */

cask_status cask_graph_create(cask_runtime *rt, cask_graph **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    cask_graph *g = calloc(1, sizeof *g);
    if (!g)
        return log_error(rt, CASK_ERR_NOMEM, "cask_graph_create");
    g->rt = rt;
    arena_init(&g->ar);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->id = atomic_fetch_add(&next_graph_id, 1);
    g->done = 1;
    *out = g;
    return CASK_OK;
}

static int add_edge(cask_graph *g, cask_task *before, cask_task *after)
{
    if (before == after || (before->succ && before->succ->task == after))
        return 0;
    task_edge *e = arena_alloc(&g->ar, sizeof *e);
    if (!e)
        return -1;
    e->task = after;
    e->next = before->succ;
    before->succ = e;
    before->nsucc++;
    after->indegree++;
    g->nedges++;
    g->roots_valid = 0;
    return 0;
}

static int note_data(cask_graph *g, cask_data *d)
{
    if (d->stf_graph != g->id) {
        d->stf_graph = g->id;
        d->last_writer = NULL;
        d->readers = NULL;
    }
    if (d->listed_in == g->id)
        return 0;
    if (g->ndatas == g->datas_cap) {
        size_t cap = g->datas_cap ? g->datas_cap * 2 : 16;
        cask_data **n = realloc(g->datas, cap * sizeof *n);
        if (!n)
            return -1;
        g->datas = n;
        g->datas_cap = cap;
    }
    g->datas[g->ndatas++] = d;
    d->listed_in = g->id;
    return 0;
}

cask_status cask_graph_add_task(cask_graph *g, const cask_task_desc *desc, cask_task **out)
{
    if (!g || !desc)
        return CASK_ERR_INVALID;
    cask_runtime *rt = g->rt;
    if (g->state == GRAPH_RUNNING)
        return log_error(rt, CASK_ERR_STATE, "cask_graph_add_task: graph is running");
    cask_kernel *k = desc->kernel;
    if (!k)
        return log_error(rt, CASK_ERR_INVALID, "cask_graph_add_task: no kernel");
    if (desc->naccess < 0 || desc->naccess > CASK_MAX_BUFFERS || (desc->naccess && !desc->access))
        return log_error(rt, CASK_ERR_INVALID, "cask_graph_add_task(%s): %d buffers (at most %d)",
                         k->name, desc->naccess, CASK_MAX_BUFFERS);
    for (int i = 0; i < desc->naccess; i++) {
        const cask_access *a = &desc->access[i];
        if (!a->data || a->mode < CASK_READ || a->mode > CASK_RW)
            return log_error(rt, CASK_ERR_INVALID,
                             "cask_graph_add_task(%s): buffer %d has %s", k->name, i,
                             a->data ? "an invalid access mode" : "no data");
        if (a->data->rt != rt)
            return log_error(rt, CASK_ERR_INVALID,
                             "cask_graph_add_task(%s): data %s belongs to another runtime",
                             k->name, a->data->name);
    }
    uint64_t mask = desc->field_mask;
    if ((mask & CASK_TASK_ARGS) && desc->args_size && !desc->args)
        return log_error(rt, CASK_ERR_INVALID, "cask_graph_add_task(%s): args_size without args", k->name);
    uint32_t want = (mask & CASK_TASK_WHERE) ? desc->where : CASK_WHERE_ANY;
    if (want & ~(uint32_t)(CASK_WHERE_CPU | CASK_WHERE_GPU))
        return log_error(rt, CASK_ERR_INVALID, "cask_graph_add_task(%s): bad where %u", k->name, want);
    if (want == CASK_WHERE_ANY)
        want = CASK_WHERE_CPU | CASK_WHERE_GPU;
    uint32_t impl = (k->cpu ? CASK_WHERE_CPU : 0) | (k->cuda ? CASK_WHERE_GPU : 0);
    /* a simulated GPU runs CPU code: only where the caller sent the task there */
    if (rt->sim && k->cpu && (mask & CASK_TASK_WHERE) && (desc->where & CASK_WHERE_GPU))
        impl |= CASK_WHERE_GPU;
    if (rt->sim && !k->cpu)
        impl &= ~(uint32_t)CASK_WHERE_GPU;
    if (!(want & impl))
        return log_error(rt, CASK_ERR_INVALID,
                         "cask_graph_add_task(%s): kernel has no implementation for where=%u",
                         k->name, want);

    cask_task *t = arena_calloc(&g->ar, sizeof *t);
    cask_access *acc = desc->naccess ? arena_alloc(&g->ar, desc->naccess * sizeof *acc) : NULL;
    if (!t || (desc->naccess && !acc))
        return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
    if (desc->naccess)
        memcpy(acc, desc->access, desc->naccess * sizeof *acc);
    t->node.kind = SCHED_NODE_TASK;
    t->graph = g;
    t->kernel = k;
    t->access = acc;
    t->naccess = desc->naccess;
    t->where = (uint8_t)(want & impl);
    int prio = (mask & CASK_TASK_PRIORITY) ? desc->priority : 0;
    t->priority = prio;
    t->level = (int8_t)sched_prio_level(prio);
    t->device = -1;
    if (mask & CASK_TASK_DEVICE) {
        if (desc->device < -1 || desc->device >= rt->ngpu)
            return log_error(rt, CASK_ERR_INVALID, "cask_graph_add_task(%s): device %d (have %d GPUs)",
                             k->name, desc->device, rt->ngpu);
        t->device = (int16_t)desc->device;
    }
    if ((mask & CASK_TASK_ARGS) && desc->args_size) {
        t->args = arena_alloc(&g->ar, desc->args_size);
        if (!t->args)
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
        memcpy(t->args, desc->args, desc->args_size);
        t->args_size = desc->args_size;
    }
    t->name = k->name;
    if ((mask & CASK_TASK_NAME) && desc->name) {
        t->name = arena_strdup(&g->ar, desc->name);
        if (!t->name)
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
    }
    if (g->ntasks == g->tasks_cap) {
        size_t cap = g->tasks_cap ? g->tasks_cap * 2 : 256;
        cask_task **n = realloc(g->tasks, cap * sizeof *n);
        if (!n)
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
        g->tasks = n;
        g->tasks_cap = cap;
    }
    t->id = (uint32_t)g->ntasks;
    g->tasks[g->ntasks++] = t;
    g->roots_valid = 0;

    /* sequential task flow: RAW, WAR and WAW edges in submission order */
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = acc[i].data;
        if (note_data(g, d))
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
        if (d->last_writer && add_edge(g, d->last_writer, t))
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
        if (acc[i].mode & CASK_WRITE) {
            for (reader_list *r = d->readers; r; r = r->next)
                if (add_edge(g, r->task, t))
                    return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
            d->readers = NULL;
        } else {
            reader_list *r = arena_alloc(&g->ar, sizeof *r);
            if (!r)
                return log_error(rt, CASK_ERR_NOMEM, "cask_graph_add_task(%s)", k->name);
            r->task = t;
            r->next = d->readers;
            d->readers = r;
        }
    }
    for (int i = 0; i < t->naccess; i++)
        if (acc[i].mode & CASK_WRITE) {
            acc[i].data->last_writer = t;
            acc[i].data->readers = NULL;
        }
    if (out)
        *out = t;
    return CASK_OK;
}

cask_status cask_task_depend(cask_task *after, cask_task *before)
{
    if (!after || !before || after == before || after->graph != before->graph)
        return CASK_ERR_INVALID;
    cask_graph *g = after->graph;
    if (g->state == GRAPH_RUNNING)
        return log_error(g->rt, CASK_ERR_STATE, "cask_task_depend: graph is running");
    if (add_edge(g, before, after))
        return log_error(g->rt, CASK_ERR_NOMEM, "cask_task_depend");
    return CASK_OK;
}

void graph_describe_task(const cask_task *t, char *buf, size_t len)
{
    int n = snprintf(buf, len, "task %s (kernel %s", t->name, t->kernel->name);
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

static int cmp_edge_prio(const void *a, const void *b)
{
    const task_edge *x = *(task_edge *const *)a, *y = *(task_edge *const *)b;
    if (x->task->priority != y->task->priority)
        return x->task->priority < y->task->priority ? -1 : 1;
    return x->task->id > y->task->id ? -1 : (x->task->id < y->task->id);
}

static int cmp_root_prio(const void *a, const void *b)
{
    const cask_task *x = *(cask_task *const *)a, *y = *(cask_task *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Successor lists become arrays (released in order, pushed on a LIFO deque): sorted by
 * ascending priority, tasks released together run highest priority first; roots sorted
 * by descending priority come out of their ranges in that order. Tasks with a big
 * fan-out get range nodes so that their release can be shared among workers. Done once
 * per graph, so it costs nothing per run. */
static int compact_successors(cask_graph *g)
{
    size_t maxdeg = 0;
    int any = 0;
    int nw = g->rt->sched->nworkers;
    for (size_t i = 0; i < g->ntasks; i++) {
        if ((size_t)g->tasks[i]->nsucc > maxdeg)
            maxdeg = (size_t)g->tasks[i]->nsucc;
        any |= g->tasks[i]->priority != 0;
    }
    task_edge **tmp = malloc((maxdeg ? maxdeg : 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    for (size_t i = 0; i < g->ntasks; i++) {
        cask_task *t = g->tasks[i];
        t->succv = NULL;
        t->release = NULL;
        if (t->nsucc == 0)
            continue;
        size_t k = 0;
        for (task_edge *e = t->succ; e; e = e->next)
            tmp[k++] = e;
        if (any && k > 1)
            qsort(tmp, k, sizeof *tmp, cmp_edge_prio);
        else   /* list is newest first: release in the order tasks were added */
            for (size_t a = 0, b = k - 1; a < b; a++, b--) {
                task_edge *x = tmp[a]; tmp[a] = tmp[b]; tmp[b] = x;
            }
        t->succv = arena_alloc(&g->ar, k * sizeof *t->succv);
        if (!t->succv) {
            free(tmp);
            return -1;
        }
        for (size_t j = 0; j < k; j++)
            t->succv[j] = tmp[j]->task;
        if ((size_t)t->nsucc >= SCHED_SPLIT_RELEASE && nw > 1) {
            t->release = arena_calloc(&g->ar, (size_t)nw * sizeof *t->release);
            if (!t->release) {
                free(tmp);
                return -1;
            }
        }
    }
    free(tmp);
    if (any)
        qsort(g->roots, g->nroots, sizeof *g->roots, cmp_root_prio);
    return 0;
}

/* Computes roots, checks for cycles (Kahn) and that every task can run somewhere. */
static cask_status graph_check(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    free(g->roots);
    g->roots = NULL;
    g->nroots = 0;
    size_t n = g->ntasks;
    int32_t *deg = malloc((n ? n : 1) * sizeof *deg);
    cask_task **queue = malloc((n ? n : 1) * sizeof *queue);
    if (!deg || !queue) {
        free(deg);
        free(queue);
        return log_error(rt, CASK_ERR_NOMEM, "graph check");
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++) {
        cask_task *t = g->tasks[i];
        deg[i] = t->indegree;
        int ok = (task_can_cpu(t) && rt->ncpu > 0) || (task_can_gpu(t) && rt->ngpu > 0);
        if (!ok) {
            char d[256];
            graph_describe_task(t, d, sizeof d);
            free(deg);
            free(queue);
            graph_fail(g, CASK_ERR_UNSUPPORTED, "%s: no worker can run it (%d CPU workers, %d GPUs)",
                       d, rt->ncpu, rt->ngpu);
            return log_error(rt, CASK_ERR_UNSUPPORTED, "%s: no worker can run it", d);
        }
        if (t->indegree == 0)
            queue[tail++] = t;
    }
    size_t nroots = tail;
    while (head < tail) {
        cask_task *t = queue[head++];
        for (task_edge *e = t->succ; e; e = e->next)
            if (--deg[e->task->id] == 0)
                queue[tail++] = e->task;
    }
    if (tail < n) {
        const cask_task *c = NULL;
        for (size_t i = 0; i < n && !c; i++)
            if (deg[i] > 0)
                c = g->tasks[i];
        free(deg);
        free(queue);
        graph_fail(g, CASK_ERR_CYCLE, "dependency cycle through task %s (%zu tasks in cycles)",
                   c->name, n - tail);
        return log_error(rt, CASK_ERR_CYCLE, "dependency cycle through task %s", c->name);
    }
    free(deg);
    g->roots = realloc(queue, (nroots ? nroots : 1) * sizeof *queue);
    if (!g->roots)
        g->roots = queue;
    g->nroots = nroots;
    if (compact_successors(g)) {
        return log_error(rt, CASK_ERR_NOMEM, "graph check");
    }
    g->roots_valid = 1;
    g->dirty = 1;
    return CASK_OK;
}

static int called_from_worker(cask_runtime *rt)
{
    sched *s = rt->sched;
    pthread_t self = pthread_self();
    for (int i = 0; i < s->nworkers; i++)
        if (s->w[i].started && pthread_equal(s->w[i].thread, self))
            return 1;
    return 0;
}

cask_status cask_graph_submit(cask_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    cask_runtime *rt = g->rt;
    pthread_mutex_lock(&g->lock);
    int running = g->state == GRAPH_RUNNING;
    pthread_mutex_unlock(&g->lock);
    if (running)
        return log_error(rt, CASK_ERR_STATE, "cask_graph_submit: graph already running");
    g->status = CASK_OK;
    g->error[0] = 0;
    atomic_store(&g->failed, 0);
    if (!g->roots_valid) {
        cask_status st = graph_check(g);
        if (st)
            return st;
    }
    /* data used by another running graph, or held by the user, cannot be used */
    pthread_mutex_lock(&rt->lock);
    for (size_t i = 0; i < g->ndatas; i++) {
        cask_data *d = g->datas[i];
        if (d->acquired || atomic_load(&d->running) > 0) {
            pthread_mutex_unlock(&rt->lock);
            return log_error(rt, CASK_ERR_BUSY, "cask_graph_submit: data %s is %s", d->name,
                             d->acquired ? "acquired by the user" : "used by a running graph");
        }
    }
    for (size_t i = 0; i < g->ndatas; i++)
        atomic_fetch_add(&g->datas[i]->running, 1);
    rt->ngraphs_running++;
    pthread_mutex_unlock(&rt->lock);

    if (g->dirty) {
        for (size_t i = 0; i < g->ntasks; i++)
            atomic_store_explicit(&g->tasks[i]->pending, g->tasks[i]->indegree, memory_order_relaxed);
        g->dirty = 0;   /* each task resets its own count when it finishes */
    }
    if (!g->ranges) {
        g->ranges = calloc((size_t)rt->sched->nworkers, sizeof *g->ranges);
        if (!g->ranges) {
            graph_finish(g);
            return log_error(rt, CASK_ERR_NOMEM, "cask_graph_submit");
        }
    }
    atomic_store(&g->ntasks_run, 0);
    atomic_store(&g->remaining, (int64_t)g->ntasks);
    pthread_mutex_lock(&g->lock);
    g->state = GRAPH_RUNNING;
    g->done = 0;
    pthread_mutex_unlock(&g->lock);
    g->t_submit = sched_now_ns();
    g->run++;
    if (rt->live)
        dash_graph_start(rt, g);
    if (g->ntasks == 0) {
        graph_finish(g);
        return CASK_OK;
    }
    sched_submit(rt->sched, g);
    return CASK_OK;
}

void graph_finish(cask_graph *g)
{
    cask_runtime *rt = g->rt;
    g->t_done = sched_now_ns();
    if (rt->live)
        dash_graph_end(rt, g);   /* before the waiter may free g */
    pthread_mutex_lock(&rt->lock);
    for (size_t i = 0; i < g->ndatas; i++)
        atomic_fetch_sub(&g->datas[i]->running, 1);
    rt->ngraphs_running--;
    pthread_cond_broadcast(&rt->graphs_cond);
    pthread_mutex_unlock(&rt->lock);
    pthread_mutex_lock(&g->lock);
    g->done = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);   /* last touch of g: the waiter may free it now */
}

/* Waits for g (locked) while drawing a progress bar on stderr: after the first second,
 * every 0.2 s, "tasks done/total, rate, ETA"; erased at the end. */
static void wait_with_progress(cask_graph *g)
{
    const uint64_t first = 1000000000ull, every = 200000000ull;
    int drawn = 0;
    while (!g->done) {
        uint64_t now = sched_now_ns();
        uint64_t next = now + (now - g->t_submit < first ? first - (now - g->t_submit) : every);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (next - now);
        ts.tv_sec = (time_t)(abs_ns / 1000000000ull);
        ts.tv_nsec = (long)(abs_ns % 1000000000ull);
        pthread_cond_timedwait(&g->cond, &g->lock, &ts);
        if (g->done)
            break;
        double el = (double)(sched_now_ns() - g->t_submit) * 1e-9;
        if (el < 1.0)
            continue;
        uint64_t run = atomic_load(&g->ntasks_run);
        double rate = run / el;
        double eta = rate > 0 ? (double)(g->ntasks - (run < g->ntasks ? run : g->ntasks)) / rate : 0;
        int width = 30, fill = g->ntasks ? (int)((double)run * width / (double)g->ntasks) : 0;
        if (fill > width) fill = width;
        fprintf(stderr, "\r[cask] [%.*s%*s] %llu/%zu tasks %.3g/s ETA %.1fs ", fill,
                "##############################", width - fill, "", (unsigned long long)run, g->ntasks,
                rate, eta);
        fflush(stderr);
        drawn = 1;
    }
    if (drawn) {
        fprintf(stderr, "\r%*s\r", 90, "");
        fflush(stderr);
    }
}

cask_status cask_graph_wait(cask_graph *g)
{
    if (!g)
        return CASK_ERR_INVALID;
    if (called_from_worker(g->rt))
        return log_error(g->rt, CASK_ERR_STATE, "cask_graph_wait called from a task");
    int progress = g->rt->cfg.progress;
    if (progress < 0)
        progress = isatty(fileno(stderr));
    pthread_mutex_lock(&g->lock);
    if (progress)
        wait_with_progress(g);
    while (!g->done)
        pthread_cond_wait(&g->cond, &g->lock);
    g->state = GRAPH_IDLE;
    cask_status st = g->status;
    pthread_mutex_unlock(&g->lock);
    if (st)
        log_error(g->rt, st, "%s", g->error);
    return st;
}

cask_status cask_graph_compute(cask_graph *g)
{
    cask_status st = cask_graph_submit(g);
    if (st)
        return st;
    return cask_graph_wait(g);
}

const char *cask_graph_error(const cask_graph *g)
{
    return g ? g->error : "";
}

cask_status cask_graph_query(const cask_graph *g, cask_graph_info *info)
{
    if (!g || !info)
        return CASK_ERR_INVALID;
    info->ntasks = g->ntasks;
    info->nedges = g->nedges;
    info->ntasks_run = atomic_load(&((cask_graph *)g)->ntasks_run);
    info->elapsed_s = g->t_done > g->t_submit ? (double)(g->t_done - g->t_submit) * 1e-9 : 0.0;
    return CASK_OK;
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
    arena_free_all(&g->ar);
    free(g->tasks);
    free(g->roots);
    free(g->datas);
    free(g->ranges);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
    free(g);
    return CASK_OK;
}
