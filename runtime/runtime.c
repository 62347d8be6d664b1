/* runtime.c: cask_init / cask_shutdown, kernels, host memory and counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/runtime.h"
#include "runtime/perf_file.h"
#include "runtime/core_share.h"
#include "runtime/graph.h"
#include "runtime/data.h"
#include "runtime/device.h"
#include "runtime/log.h"
#include "runtime/memory.h"
#include "runtime/spill.h"
#include "runtime/trace_task.h"
#include "runtime/stats_print.h"
#include "runtime/sched.h"
#ifdef CASK_HAVE_DASHBOARD
#include "runtime/dash_live.h"
#include "runtime/dashboard.h"
#endif

static cask_status open_devices(cask_runtime *rt, char *err, size_t errlen)
{
    rt->ngpu = 0;
    if (rt->cfg.ngpu == 0)
        return CASK_OK;
    int real = 0;
    cask_status st = device_count(&real);
    if (st == CASK_OK && real > 0) {
        int want = rt->cfg.ngpu < 0 ? real : rt->cfg.ngpu;
        if (want > real) {
            snprintf(err, errlen, "%d GPUs asked for, %d present", want, real);
            return CASK_ERR_NOT_FOUND;
        }
        if (want > CASK_MAX_GPUS)
            want = CASK_MAX_GPUS;
        st = device_open(rt, want, 0, &rt->dev);
        if (st) {
            snprintf(err, errlen, "opening %d GPUs failed", want);
            return st;
        }
        rt->ngpu = want;
        return CASK_OK;
    }
    if (rt->cfg.sim_gpus > 0) {
        int want = rt->cfg.sim_gpus;
        st = device_open(rt, want, 1, &rt->dev);
        if (st) {
            snprintf(err, errlen, "opening %d simulated GPUs failed", want);
            return st;
        }
        rt->ngpu = want;
        rt->sim = 1;
        for (int i = 0; i < rt->cfg.nsim_slow; i++)
            if (rt->cfg.sim_slow[i].gpu >= want) {
                snprintf(err, errlen, "CASK_SIM_GPU_SLOW slows GPU %d, but there are %d simulated GPUs",
                         rt->cfg.sim_slow[i].gpu, want);
                return CASK_ERR_INVALID;
            }
        return CASK_OK;
    }
    if (rt->cfg.ngpu > 0) {
        snprintf(err, errlen, "%d GPUs asked for, none present", rt->cfg.ngpu);
        return CASK_ERR_NOT_FOUND;
    }
    return CASK_OK;
}

cask_status cask_init(const cask_config *cfg, cask_runtime **out)
{
    if (!out)
        return CASK_ERR_INVALID;
    *out = NULL;
    char err[CASK_ERRMSG_LEN] = "";
    uint64_t t0 = phases_now_ns(), t;
    cask_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return CASK_ERR_NOMEM;
    rt->phases.ns[PHASE_LOAD] = phases_since_exec_ns();
    cask_status st = config_resolve(cfg, &rt->cfg, err, sizeof err);
    if (st) {
        fprintf(stderr, "cask_init: %s\n", err);
        free(rt);
        return st;
    }
    rt->log_level = rt->cfg.log_level;
    clock_gettime(CLOCK_MONOTONIC, &rt->start_time);
    pthread_mutex_init(&rt->lock, NULL);
    pthread_mutex_init(&rt->error_lock, NULL);
    pthread_cond_init(&rt->graphs_cond, NULL);
    arena_pool_init(&rt->graph_pool, GRAPH_POOL_LIMIT);
    rt->strong_fence = graph_dynamic_init() != 0;
    t = phases_now_ns();
    st = topology_load(&rt->topo, err, sizeof err);
    rt->phases.ns[PHASE_TOPOLOGY] = phases_now_ns() - t;
    if (st)
        goto fail;
    if (err[0])
        log_msg(rt, CASK_LOG_WARN, "topology: %s", err);
    int lr, ls;
    if (rt->cfg.bind && core_share_env(&lr, &ls) == 0) {
        core_share_apply(&rt->topo, lr, ls, err, sizeof err);
        if (err[0])
            log_msg(rt, CASK_LOG_INFO, "topology: %s", err);
    }
    t = phases_now_ns();
    st = open_devices(rt, err, sizeof err);
    rt->phases.ns[PHASE_DEVICES] = phases_now_ns() - t;
    if (st)
        goto fail;
    if (rt->cfg.nsim_slow && !rt->sim)
        log_msg(rt, CASK_LOG_WARN, "CASK_SIM_GPU_SLOW ignored: the GPUs are not simulated");
    if (rt->cfg.ncpu >= 0) {
        rt->ncpu = rt->cfg.ncpu;
    } else {
        rt->ncpu = rt->topo.nmine - rt->ngpu;
        if (rt->ncpu < 1)
            rt->ncpu = 1;
    }
    size_t hc_limit = rt->cfg.host_cache_limit;
    if (hc_limit == (size_t)-1) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        hc_limit = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 4 : (size_t)1 << 30;
    }
    lib_caller_init(&rt->libcall);
    rt->libcall_inited = 1;
    if ((st = hcache_init(&rt->hcache, rt, hc_limit))) {
        snprintf(err, sizeof err, "host chunk cache");
        goto fail;
    }
    rt->hcache.huge = rt->cfg.huge_pages;
    if (rt->ngpu > 0 && (st = mem_create(rt))) {
        snprintf(err, sizeof err, "GPU memory pools");
        goto fail;
    }
    if ((st = spill_create(rt, err, sizeof err)))
        goto fail;
    if (rt->ncpu + rt->ngpu == 0) {
        snprintf(err, sizeof err, "no workers: ncpu=0 and no GPU");
        st = CASK_ERR_INVALID;
        goto fail;
    }
    if (rt->cfg.trace_path[0]) {
        st = trace_task_open(rt);
        if (st) {
            snprintf(err, sizeof err, "cannot trace to %s", rt->cfg.trace_path);
            goto fail;
        }
    }
#ifdef CASK_HAVE_DASHBOARD
    if (rt->cfg.dashboard[0] && (st = dash_live_create(rt, &rt->live))) {
        snprintf(err, sizeof err, "dashboard counters");
        goto fail;
    }
#else
    if (rt->cfg.dashboard[0])
        log_msg(rt, CASK_LOG_WARN, "dashboard %s not served: cask was built without "
                "libmicrohttpd", rt->cfg.dashboard);
#endif
    perf_file_load(rt);
    t = phases_now_ns();
    st = sched_create(rt, &rt->sched);
    if (st) {
        snprintf(err, sizeof err, "creating workers");
        goto fail;
    }
    st = sched_start(rt->sched);
    if (st) {
        snprintf(err, sizeof err, "starting workers");
        goto fail;
    }
    rt->phases.ns[PHASE_WORKERS] = phases_now_ns() - t;
#ifdef CASK_HAVE_DASHBOARD
    if (rt->live) {
        st = dashboard_start(rt, rt->cfg.dashboard, &rt->dash, err, sizeof err);
        if (st)
            goto fail;
        log_msg(rt, CASK_LOG_INFO, "dashboard at %s", dashboard_url(rt->dash));
    }
#endif
    log_msg(rt, CASK_LOG_INFO, "started: %d CPU workers, %d %sGPUs, %d cores, policy %d",
            rt->ncpu, rt->ngpu, rt->sim ? "simulated " : "", rt->topo.ncores, (int)rt->cfg.sched);
    rt->phases.ns[PHASE_INIT] = phases_now_ns() - t0;
    *out = rt;
    return CASK_OK;
fail:
    fprintf(stderr, "cask_init: %s: %s\n", cask_status_string(st), err);
    sched_destroy(rt->sched);
    rt->sched = NULL;
    spill_destroy(rt);
#ifdef CASK_HAVE_DASHBOARD
    dash_live_destroy(rt->live);
#endif
    hcache_destroy(&rt->hcache);
    if (rt->libcall_inited)
        lib_caller_destroy(&rt->libcall);
    mem_destroy(rt);
    if (rt->dev)
        device_close(rt->dev);
    trace_task_close(rt, 0);
    topology_destroy(&rt->topo);
    free(rt->perf_path);
    free(rt->perf_saved);
    free(rt);
    return st;
}

void data_destroy_all(cask_runtime *rt);

cask_status cask_shutdown(cask_runtime *rt)
{
    if (!rt)
        return CASK_OK;
    uint64_t t0 = phases_now_ns();
    graph_close_open(rt);   /* submitted graphs never waited for: end their submission */
    pthread_mutex_lock(&rt->lock);
    while (rt->ngraphs_running > 0)
        pthread_cond_wait(&rt->graphs_cond, &rt->lock);
    pthread_mutex_unlock(&rt->lock);
#ifdef CASK_HAVE_DASHBOARD
    dashboard_stop(rt->dash);   /* it reads the workers and graphs: first */
    rt->dash = NULL;
#endif
    graph_orphan_all(rt);   /* graphs destroyed after this free to the system */

    int nw = rt->sched->nworkers;
    cask_worker_stats *stats = rt->cfg.stats ? calloc((size_t)nw, sizeof *stats) : NULL;
    cask_host_cache_stats hstats = { 0 };
    if (stats) {
        cask_runtime_stats(rt, stats, nw);
        hcache_stats(&rt->hcache, &hstats);   /* in use: what handles left alive hold */
    }
    sched_destroy(rt->sched);
    rt->sched = NULL;
    lib_caller_destroy(&rt->libcall);   /* no task runs any more */
    rt->libcall_inited = 0;
    spill_stop(rt);          /* no I/O thread touches a handle from here on */
#ifdef CASK_HAVE_DASHBOARD
    dash_live_destroy(rt->live);
    rt->live = NULL;
#endif
    data_destroy_all(rt);
    spill_destroy(rt);       /* the files and the run's folder */
    cask_status st = trace_task_close(rt, 1);
    if (stats) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double wall = (double)(now.tv_sec - rt->start_time.tv_sec) +
                      (now.tv_nsec - rt->start_time.tv_nsec) * 1e-9;
        stats_print(stderr, stats, nw, wall);
        stats_print_host_pool(stderr, &hstats);
        free(stats);
    }
    hcache_destroy(&rt->hcache);
    mem_destroy(rt);
    if (rt->dev)
        device_close(rt->dev);
    perf_file_save(rt);
    for (cask_kernel *k = rt->kernels; k;) {
        cask_kernel *n = k->next;
        free(k->name);
        free(k);
        k = n;
    }
    topology_destroy(&rt->topo);
    pthread_mutex_destroy(&rt->lock);
    pthread_mutex_destroy(&rt->error_lock);
    pthread_cond_destroy(&rt->graphs_cond);
    arena_pool_destroy(&rt->graph_pool);
    if (rt->cfg.stats) {
        rt->phases.ns[PHASE_SHUTDOWN] = phases_now_ns() - t0;
        phases_print(stderr, &rt->phases);
    }
    free(rt);
    return st;
}

cask_status cask_dashboard_url(const cask_runtime *rt, char *buf, size_t len)
{
    if (!rt || !buf || !len)
        return CASK_ERR_INVALID;
    buf[0] = 0;
#ifdef CASK_HAVE_DASHBOARD
    if (rt->dash) {
        snprintf(buf, len, "%s", dashboard_url(rt->dash));
        return CASK_OK;
    }
#endif
    return CASK_ERR_NOT_FOUND;
}

cask_status cask_runtime_query(const cask_runtime *rt, cask_runtime_info *info)
{
    if (!rt || !info)
        return CASK_ERR_INVALID;
    info->ncpu_workers = rt->ncpu;
    info->ngpus = rt->ngpu;
    info->simulated_gpus = rt->sim;
    info->ncores = rt->topo.ncores;
    info->ncores_used = rt->topo.nmine;
    info->sched = rt->cfg.sched;
    return CASK_OK;
}

cask_status cask_kernel_register(cask_runtime *rt, const cask_kernel_desc *desc, cask_kernel **out)
{
    if (!rt || !desc || !out)
        return CASK_ERR_INVALID;
    if (!desc->name || !desc->name[0])
        return log_error(rt, CASK_ERR_INVALID, "cask_kernel_register: kernel without a name");
    if (!desc->cpu && !desc->cuda)
        return log_error(rt, CASK_ERR_INVALID, "cask_kernel_register(%s): no implementation", desc->name);
    cask_kernel *k = calloc(1, sizeof *k);
    char *name = strdup(desc->name);
    if (!k || !name) {
        free(k);
        free(name);
        return log_error(rt, CASK_ERR_NOMEM, "cask_kernel_register(%s)", desc->name);
    }
    k->name = name;
    k->cpu = desc->cpu;
    k->cuda = desc->cuda;
    k->flags = desc->flags;
    /* where a task without CASK_TASK_WHERE may run (graph.c's task_placement): simulated
       GPUs run no kernel without a CPU implementation */
    k->where_any = (desc->cpu ? CASK_WHERE_CPU : 0) |
                   (desc->cuda && (desc->cpu || !rt->sim) ? CASK_WHERE_GPU : 0);
    pthread_mutex_lock(&rt->lock);
    perf_file_apply(rt, k);
    k->id = rt->nkernels++;
    k->next = rt->kernels;
    rt->kernels = k;
    pthread_mutex_unlock(&rt->lock);
    *out = k;
    return CASK_OK;
}

cask_status cask_host_alloc(cask_runtime *rt, size_t bytes, void **out)
{
    if (!rt || !out || !bytes)
        return CASK_ERR_INVALID;
    if (rt->dev)
        return device_host_alloc(rt->dev, bytes, out);
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0)
        return log_error(rt, CASK_ERR_NOMEM, "cask_host_alloc(%zu bytes)", bytes);
    *out = p;
    return CASK_OK;
}

cask_status cask_host_free(cask_runtime *rt, void *ptr)
{
    if (!rt)
        return CASK_ERR_INVALID;
    if (!ptr)
        return CASK_OK;
    if (rt->dev)
        device_host_free(rt->dev, ptr);
    else
        free(ptr);
    return CASK_OK;
}

cask_status cask_runtime_nworkers(const cask_runtime *rt, int *n)
{
    if (!rt || !n)
        return CASK_ERR_INVALID;
    *n = rt->sched->nworkers;
    return CASK_OK;
}

cask_status cask_runtime_stats(const cask_runtime *rt, cask_worker_stats *stats, int n)
{
    if (!rt || !stats || n < 0 || n > rt->sched->nworkers)
        return CASK_ERR_INVALID;
    for (int i = 0; i < n; i++) {
        worker *w = &rt->sched->w[i];
        cask_worker_stats *o = &stats[i];
        o->kind = w->kind;
        o->device = w->device;
        o->tasks_run = atomic_load(&w->ctr.tasks_run);
        o->steals = atomic_load(&w->ctr.steals);
        o->steal_attempts = atomic_load(&w->ctr.steal_attempts);
        o->busy_ns = atomic_load(&w->ctr.busy_ns);
        o->idle_ns = atomic_load(&w->ctr.idle_ns);
        o->bytes_h2d = atomic_load(&w->ctr.bytes_h2d);
        o->bytes_d2h = atomic_load(&w->ctr.bytes_d2h);
        o->bytes_peer = atomic_load(&w->ctr.bytes_peer);
        o->evictions = atomic_load(&w->ctr.evictions);
        o->spills = atomic_load(&w->ctr.spills);
    }
    return CASK_OK;
}

cask_status cask_runtime_stats_reset(cask_runtime *rt)
{
    if (!rt)
        return CASK_ERR_INVALID;
    for (int i = 0; i < rt->sched->nworkers; i++) {
        worker_counters *c = &rt->sched->w[i].ctr;
        atomic_store(&c->tasks_run, 0);
        atomic_store(&c->steals, 0);
        atomic_store(&c->steal_attempts, 0);
        atomic_store(&c->busy_ns, 0);
        atomic_store(&c->idle_ns, 0);
        atomic_store(&c->bytes_h2d, 0);
        atomic_store(&c->bytes_d2h, 0);
        atomic_store(&c->bytes_peer, 0);
        atomic_store(&c->evictions, 0);
        atomic_store(&c->spills, 0);
    }
    return CASK_OK;
}
