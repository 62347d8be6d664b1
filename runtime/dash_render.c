/* dash_render.c: the dashboard's documents, built from the live counters: /api/status
 * (JSON), /api/stream (recent task slices, JSON) and /metrics (Prometheus text format,
 * version 0.0.4). Names and labels are listed in docs/observability.md. Each function
 * writes into a memory stream and returns a malloc'ed, NUL-terminated text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/dashboard.h"
#include "runtime/dash_live.h"
#include "runtime/data.h"
#include "runtime/graph.h"
#include "runtime/host_cache.h"
#include "runtime/memory.h"
#include "runtime/trace.h"
#include "runtime/sched.h"

/* A JSON string (or a Prometheus label value: the same escapes suffice for both, as
 * neither may hold raw control characters, quotes or backslashes). */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else if (*p >= 0x80)
            fputc('?', f);      /* kernel and data names are ASCII in practice; stay valid */
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static const char *worker_kind(const cask_worker_stats *w)
{
    return w->kind ? "gpu" : "cpu";
}

/* Snapshot of what every document needs. */
typedef struct snap {
    int n;
    cask_worker_stats *ws;
    int64_t *queued;
    uint64_t *kruns, *kfails;    /* [DASH_MAX_KERNELS], summed over workers */
} snap;

static int take_snap(cask_runtime *rt, snap *s)
{
    dash_live *l = rt->live;
    memset(s, 0, sizeof *s);
    s->n = l->nworkers;
    s->ws = calloc((size_t)s->n, sizeof *s->ws);
    s->queued = calloc((size_t)s->n, sizeof *s->queued);
    s->kruns = calloc(DASH_MAX_KERNELS, sizeof *s->kruns);
    s->kfails = calloc(DASH_MAX_KERNELS, sizeof *s->kfails);
    if (!s->ws || !s->queued || !s->kruns || !s->kfails)
        return -1;
    cask_runtime_stats(rt, s->ws, s->n);
    for (int w = 0; w < s->n; w++) {
        worker *wk = &rt->sched->w[w];
        int64_t q = atomic_load_explicit(&wk->queued, memory_order_relaxed);
        for (int lv = 0; lv < SCHED_PRIO_LEVELS; lv++)
            q += deque_size(&wk->dq[lv]);
        s->queued[w] = q > 0 ? q : 0;
        for (int k = 0; k < DASH_MAX_KERNELS; k++) {
            size_t i = (size_t)w * DASH_MAX_KERNELS + (size_t)k;
            s->kruns[k] += atomic_load_explicit(&l->runs[i], memory_order_relaxed);
            s->kfails[k] += atomic_load_explicit(&l->fails[i], memory_order_relaxed);
        }
    }
    return 0;
}

static void free_snap(snap *s)
{
    free(s->ws);
    free(s->queued);
    free(s->kruns);
    free(s->kfails);
}

/* A document being written: a memory stream (text, malloc'ed once closed). */
typedef struct doc {
    char *text;
    size_t len;
} doc;

/* Opens d's stream and takes the snapshot s; NULL (nothing left to free) when out of
 * memory. */
static FILE *open_doc(cask_runtime *rt, doc *d, snap *s)
{
    d->text = NULL;
    d->len = 0;
    FILE *f = open_memstream(&d->text, &d->len);
    if (f && take_snap(rt, s) == 0)
        return f;
    if (f) {
        free_snap(s);
        fclose(f);
    }
    free(d->text);
    return NULL;
}

/* Host bytes held by data handles (registered memory and runtime-allocated replicas). */
static uint64_t host_bytes(cask_runtime *rt, uint64_t *ndata)
{
    uint64_t b = 0, n = 0;
    pthread_mutex_lock(&rt->lock);
    for (cask_data *d = rt->data_list; d; d = d->next, n++)
        if (d->rep[0].ptr)
            b += d->bytes;
    pthread_mutex_unlock(&rt->lock);
    *ndata = n;
    return b;
}

/* "host_cache": the pool of host chunk memory (cask_host_cache_stats), bytes kept for
 * reuse and in use, apart for pageable and pinned blocks. */
static void put_host_cache(FILE *f, cask_runtime *rt)
{
    cask_host_cache_stats h;
    hcache_stats(&rt->hcache, &h);
    fprintf(f, "\"host_cache\":{\"limit\":%zu,\"hits\":%llu,\"misses\":%llu,"
               "\"pageable\":{\"cached\":%zu,\"live\":%zu,\"peak\":%zu},"
               "\"pinned\":{\"cached\":%zu,\"live\":%zu,\"peak\":%zu}}",
            h.limit, (unsigned long long)h.hits, (unsigned long long)h.misses,
            h.pageable_cached, h.pageable_live, h.pageable_peak,
            h.pinned_cached, h.pinned_live, h.pinned_peak);
}

static void put_lanes(FILE *f, dash_live *l)
{
    fputs("\"lanes\":[", f);
    for (int w = 0; w < l->ncpu; w++)
        fprintf(f, "%s{\"name\":\"cpu %d\",\"kind\":\"cpu\"}", w ? "," : "", w);
    static const char *copy[] = {"h2d", "d2h", "peer"};
    for (int g = 0; g < l->ngpu; g++) {
        for (int s = 0; s < l->nstreams; s++)
            fprintf(f, ",{\"name\":\"gpu %d stream %d\",\"kind\":\"gpu\",\"device\":%d}", g, s, g);
        for (int c = 0; c < 3; c++)
            fprintf(f, ",{\"name\":\"gpu %d %s\",\"kind\":\"copy\",\"device\":%d,\"link\":\"%s\"}",
                    g, copy[c], g, copy[c]);
    }
    fputs("]", f);
}

char *dash_render_status(cask_runtime *rt, const dash_job *job)
{
    dash_live *l = rt->live;
    snap s;
    doc d;
    FILE *f = open_doc(rt, &d, &s);
    if (!f)
        return NULL;
    uint64_t now = trace_now_ns();
    fprintf(f, "{\"now_ns\":%llu,\"uptime_s\":%.3f,\"rank\":%d,\"size\":%d,\"peers\":[",
            (unsigned long long)(now - l->t_origin), (double)(now - l->t_origin) * 1e-9,
            job->rank, job->size);
    for (int r = 0; r < job->npeers; r++) {
        fputs(r ? "," : "", f);
        put_str(f, job->peer_url[r]);
    }
    fprintf(f, "],\"ncpu\":%d,\"ngpu\":%d,\"simulated_gpus\":%d,", rt->ncpu, rt->ngpu, rt->sim);
    put_lanes(f, l);
    fputs(",\"workers\":[", f);
    for (int w = 0; w < s.n; w++)
        fprintf(f, "%s{\"id\":%d,\"kind\":\"%s\",\"device\":%d,\"tasks_run\":%llu,\"steals\":%llu,"
                "\"busy_ns\":%llu,\"idle_ns\":%llu,\"queued\":%lld,\"bytes_h2d\":%llu,"
                "\"bytes_d2h\":%llu,\"bytes_peer\":%llu,\"evictions\":%llu,\"spills\":%llu,"
                "\"running\":%d}",
                w ? "," : "", w, worker_kind(&s.ws[w]), s.ws[w].device,
                (unsigned long long)s.ws[w].tasks_run, (unsigned long long)s.ws[w].steals,
                (unsigned long long)s.ws[w].busy_ns, (unsigned long long)s.ws[w].idle_ns,
                (long long)s.queued[w], (unsigned long long)s.ws[w].bytes_h2d,
                (unsigned long long)s.ws[w].bytes_d2h, (unsigned long long)s.ws[w].bytes_peer,
                (unsigned long long)s.ws[w].evictions, (unsigned long long)s.ws[w].spills,
                (int)atomic_load_explicit(&l->running[(size_t)w * DASH_RUNNING_STRIDE], memory_order_relaxed));
    fputs("],\"kernels\":[", f);
    pthread_mutex_lock(&rt->lock);
    int first = 1;
    for (cask_kernel *k = rt->kernels; k; k = k->next) {
        uint32_t i = k->id < DASH_MAX_KERNELS ? k->id : DASH_MAX_KERNELS - 1;
        fprintf(f, "%s{\"id\":%u,\"name\":", first ? "" : ",", k->id);
        put_str(f, k->name);
        fprintf(f, ",\"run\":%llu,\"failed\":%llu}", (unsigned long long)s.kruns[i],
                (unsigned long long)s.kfails[i]);
        first = 0;
    }
    pthread_mutex_unlock(&rt->lock);
    fputs("],\"graphs\":[", f);
    pthread_mutex_lock(&l->mu);
    first = 1;
    for (int i = 0; i < DASH_MAX_GRAPHS; i++) {
        dash_graph *e = &l->graphs[i];
        if (!e->g)
            continue;
        fprintf(f, "%s{\"id\":%u,\"tasks\":%llu,\"edges\":%llu,\"done\":%llu,\"elapsed_s\":%.3f,"
                "\"kernels\":[", first ? "" : ",", e->id, (unsigned long long)e->ntasks,
                (unsigned long long)e->nedges,
                (unsigned long long)atomic_load_explicit(&e->g->ntasks_run, memory_order_relaxed),
                (double)(now - e->t_submit) * 1e-9);
        for (uint32_t k = 0; k < e->nkernels; k++)
            fprintf(f, "%s{\"id\":%u,\"tasks\":%llu}", k ? "," : "", e->kernel_id[k],
                    (unsigned long long)e->kernel_tasks[k]);
        fputs("]}", f);
        first = 0;
    }
    fprintf(f, "],\"graphs_done\":%llu,", (unsigned long long)l->graphs_done);
    pthread_mutex_unlock(&l->mu);
    uint64_t ndata, hb = host_bytes(rt, &ndata);
    fprintf(f, "\"memory\":[{\"node\":\"host\",\"bytes\":%llu,\"data\":%llu,\"spilled_bytes\":0}",
            (unsigned long long)hb, (unsigned long long)ndata);
    for (int g = 0; g < rt->ngpu; g++) {
        size_t used, limit;
        mem_node_usage(rt, g, &used, &limit);
        fprintf(f, ",{\"node\":\"gpu%d\",\"bytes\":%zu,\"limit\":%zu}", g, used, limit);
    }
    fputs("],", f);
    put_host_cache(f, rt);
    if (job->extra)
        job->extra(job->extra_arg, f);
    fputs("}\n", f);
    free_snap(&s);
    fclose(f);
    return d.text;
}

char *dash_render_stream(cask_runtime *rt, uint64_t since_rel)
{
    dash_live *l = rt->live;
    uint64_t now = dash_now_ns();
    atomic_store_explicit(&l->view_until, now + DASH_VIEW_NS, memory_order_relaxed);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    dash_slice *sl = malloc(sizeof *sl * DASH_RING);
    if (!sl) {
        fclose(f);
        free(out);
        return NULL;
    }
    fprintf(f, "{\"now_ns\":%llu,\"slices\":[", (unsigned long long)(now - l->t_origin));
    int first = 1;
    for (int w = 0; w < l->nworkers; w++) {
        size_t n = dash_read_slices(l, w, l->t_origin + since_rel, sl, DASH_RING);
        for (size_t i = 0; i < n; i++) {
            if (sl[i].t1 > now)   /* ended while this was written: the next poll has it */
                continue;
            fprintf(f, "%s[%u,%u,%llu,%llu,%d]", first ? "" : ",", sl[i].lane, sl[i].kernel,
                    (unsigned long long)(sl[i].t0 > l->t_origin ? sl[i].t0 - l->t_origin : 0),
                    (unsigned long long)(sl[i].t1 - l->t_origin), sl[i].failed);
            first = 0;
        }
    }
    fputs("]}\n", f);
    free(sl);
    fclose(f);
    return out;
}

/* One metric family: HELP and TYPE lines. */
static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

char *dash_render_metrics(cask_runtime *rt, const dash_job *job)
{
    dash_live *l = rt->live;
    snap s;
    doc d;
    FILE *f = open_doc(rt, &d, &s);
    if (!f)
        return NULL;
    family(f, "cask_tasks_run_total", "counter", "Tasks run, by kernel.");
    pthread_mutex_lock(&rt->lock);
    for (cask_kernel *k = rt->kernels; k; k = k->next) {
        fputs("cask_tasks_run_total{kernel=", f);
        put_str(f, k->name);
        fprintf(f, "} %llu\n", (unsigned long long)s.kruns[k->id < DASH_MAX_KERNELS ? k->id : DASH_MAX_KERNELS - 1]);
    }
    family(f, "cask_tasks_failed_total", "counter", "Tasks that failed, by kernel.");
    for (cask_kernel *k = rt->kernels; k; k = k->next) {
        fputs("cask_tasks_failed_total{kernel=", f);
        put_str(f, k->name);
        fprintf(f, "} %llu\n", (unsigned long long)s.kfails[k->id < DASH_MAX_KERNELS ? k->id : DASH_MAX_KERNELS - 1]);
    }
    pthread_mutex_unlock(&rt->lock);
    struct { const char *name, *help; size_t off; } per_worker[] = {
        { "cask_worker_tasks_total", "Tasks run, by worker.", offsetof(cask_worker_stats, tasks_run) },
        { "cask_steals_total", "Tasks a worker took from another's queue.", offsetof(cask_worker_stats, steals) },
        { "cask_worker_busy_seconds_total", "Time a worker ran tasks (GPU: had work in flight).", offsetof(cask_worker_stats, busy_ns) },
        { "cask_worker_idle_seconds_total", "Time a worker slept or searched for work.", offsetof(cask_worker_stats, idle_ns) },
        { "cask_evictions_total", "Replicas a worker's allocations dropped from a GPU.", offsetof(cask_worker_stats, evictions) },
        { "cask_spills_total", "Dirty replicas written back to host to make room.", offsetof(cask_worker_stats, spills) },
    };
    for (size_t m = 0; m < sizeof per_worker / sizeof *per_worker; m++) {
        int secs = strstr(per_worker[m].name, "seconds") != NULL;
        family(f, per_worker[m].name, "counter", per_worker[m].help);
        for (int w = 0; w < s.n; w++) {
            uint64_t v = *(const uint64_t *)((const char *)&s.ws[w] + per_worker[m].off);
            fprintf(f, "%s{worker=\"%d\",kind=\"%s\"} ", per_worker[m].name, w, worker_kind(&s.ws[w]));
            if (secs)
                fprintf(f, "%.9f\n", (double)v * 1e-9);
            else
                fprintf(f, "%llu\n", (unsigned long long)v);
        }
    }
    family(f, "cask_worker_running", "gauge", "1 while a worker runs a task (GPU: has work in flight).");
    for (int w = 0; w < s.n; w++)
        fprintf(f, "cask_worker_running{worker=\"%d\",kind=\"%s\"} %d\n", w, worker_kind(&s.ws[w]),
                atomic_load_explicit(&l->running[(size_t)w * DASH_RUNNING_STRIDE], memory_order_relaxed) >= 0);
    family(f, "cask_queue_depth", "gauge", "Ready tasks queued at a worker.");
    for (int w = 0; w < s.n; w++)
        fprintf(f, "cask_queue_depth{worker=\"%d\",kind=\"%s\"} %lld\n", w, worker_kind(&s.ws[w]),
                (long long)s.queued[w]);
    family(f, "cask_bytes_moved_total", "counter",
           "Bytes copied by the runtime, by link (h2d, d2h, peer) and GPU.");
    for (int w = 0; w < s.n; w++) {
        if (!s.ws[w].kind)
            continue;
        fprintf(f, "cask_bytes_moved_total{link=\"h2d\",device=\"%d\"} %llu\n"
                   "cask_bytes_moved_total{link=\"d2h\",device=\"%d\"} %llu\n"
                   "cask_bytes_moved_total{link=\"peer\",device=\"%d\"} %llu\n",
                s.ws[w].device, (unsigned long long)s.ws[w].bytes_h2d,
                s.ws[w].device, (unsigned long long)s.ws[w].bytes_d2h,
                s.ws[w].device, (unsigned long long)s.ws[w].bytes_peer);
    }
    uint64_t ndata, hb = host_bytes(rt, &ndata);
    family(f, "cask_memory_bytes", "gauge", "Bytes held per memory node (host: data handles; "
           "gpuN: the GPU's pool, cached blocks included).");
    fprintf(f, "cask_memory_bytes{node=\"host\"} %llu\n", (unsigned long long)hb);
    for (int g = 0; g < rt->ngpu; g++) {
        size_t used, limit;
        mem_node_usage(rt, g, &used, &limit);
        fprintf(f, "cask_memory_bytes{node=\"gpu%d\"} %zu\n", g, used);
    }
    cask_host_cache_stats h;
    hcache_stats(&rt->hcache, &h);
    family(f, "cask_host_cache_bytes", "gauge", "Host chunk memory of the runtime's pool: "
           "kept for reuse (cached) or handed out to chunks (live), pageable or pinned.");
    fprintf(f, "cask_host_cache_bytes{state=\"cached\",memory=\"pageable\"} %zu\n"
               "cask_host_cache_bytes{state=\"cached\",memory=\"pinned\"} %zu\n"
               "cask_host_cache_bytes{state=\"live\",memory=\"pageable\"} %zu\n"
               "cask_host_cache_bytes{state=\"live\",memory=\"pinned\"} %zu\n",
            h.pageable_cached, h.pinned_cached, h.pageable_live, h.pinned_live);
    family(f, "cask_host_cache_limit_bytes", "gauge", "Bytes the host chunk pool keeps for reuse at most.");
    fprintf(f, "cask_host_cache_limit_bytes %zu\n", h.limit);
    family(f, "cask_host_cache_requests_total", "counter", "Host chunk requests met from "
           "kept blocks (hit) or from the system (miss).");
    fprintf(f, "cask_host_cache_requests_total{result=\"hit\"} %llu\n"
               "cask_host_cache_requests_total{result=\"miss\"} %llu\n",
            (unsigned long long)h.hits, (unsigned long long)h.misses);
    family(f, "cask_graphs_running", "gauge", "Graphs computing now.");
    pthread_mutex_lock(&l->mu);
    int running = 0;
    for (int i = 0; i < DASH_MAX_GRAPHS; i++)
        running += l->graphs[i].g != NULL;
    uint64_t done = l->graphs_done;
    pthread_mutex_unlock(&l->mu);
    fprintf(f, "cask_graphs_running %d\n", running);
    family(f, "cask_graphs_done_total", "counter", "Graph computations finished.");
    fprintf(f, "cask_graphs_done_total %llu\n", (unsigned long long)done);
    if (job->extra_metrics)
        job->extra_metrics(job->extra_arg, f);
    free_snap(&s);
    fclose(f);
    return d.text;
}
