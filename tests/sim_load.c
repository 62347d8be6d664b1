/* tests/sim_load.c: see sim_load.h. */
#include "sim_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cask/cask.h"
#include "common/timing.h"

/* each task reads a chunk of its own from host memory, as a search reads its rows */
#define SIM_LOAD_IN_BYTES 65536

typedef struct { int us; } load_args;

static cask_status load_task(cask_task_ctx *ctx)
{
    const load_args *a = cask_task_args(ctx, NULL);
    struct timespec ts = { a->us / 1000000, (long)(a->us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0) {}
    int64_t *out = cask_task_buffer(ctx, 0);
    out[0] = cask_task_device(ctx);
    return CASK_OK;
}

static cask_status join_task(cask_task_ctx *ctx)
{
    int64_t *tok = cask_task_buffer(ctx, 0);
    tok[0]++;
    return CASK_OK;
}

double sim_load_median(double *x, int n)
{
    return bench_median(x, n);
}

/* Static split: the GPU of task i of n by cumulative shares. */
static int split_gpu(const sim_load_cfg *c, int i)
{
    double total = 0, acc = 0;
    for (int g = 0; g < c->ngpu; g++)
        total += c->split[g];
    for (int g = 0; g < c->ngpu; g++) {
        acc += c->split[g];
        if ((double)i + 0.5 < (double)c->per_wave * acc / total)
            return g;
    }
    return c->ngpu - 1;
}

#define TRY(call) do { cask_status s_ = (call); if (s_ != CASK_OK) { \
    snprintf(err, errlen, "%s: %s", #call, cask_status_string(s_)); goto out; } } while (0)

int sim_load_run(const sim_load_cfg *c, sim_load_result *res, char *err, size_t errlen)
{
    if (c->ngpu < 2 || c->ngpu > SIM_LOAD_MAX_GPUS || c->waves < 1 || c->per_wave < 1 ||
        c->task_us < 0) {
        snprintf(err, errlen, "sim_load_run: bad configuration");
        return -1;
    }
    memset(res, 0, sizeof *res);
    const char *old = getenv("CASK_SIM_GPU_SLOW");
    char *saved = old ? strdup(old) : NULL;
    if (c->slow)
        setenv("CASK_SIM_GPU_SLOW", c->slow, 1);
    else
        unsetenv("CASK_SIM_GPU_SLOW");
    int rc = -1, nd = c->waves * c->per_wave;
    cask_runtime *rt = NULL;
    cask_graph *g = NULL;
    cask_data **out = calloc((size_t)nd, sizeof *out);
    cask_data **tok = calloc((size_t)c->waves, sizeof *tok);
    cask_data **in = calloc((size_t)nd, sizeof *in);
    char *inmem = calloc((size_t)nd, SIM_LOAD_IN_BYTES);
    cask_task **wave = calloc((size_t)c->per_wave, sizeof *wave);
    int64_t *mem = calloc((size_t)(nd + c->waves), sizeof *mem);
    cask_config cfg = { .field_mask = CASK_CONFIG_SIM_GPUS | CASK_CONFIG_NCPU | CASK_CONFIG_BIND,
                        .sim_gpus = c->ngpu, .ncpu = 1, .bind = 0 };
    if (!out || !tok || !in || !inmem || !wave || !mem) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    TRY(cask_init(&cfg, &rt));
    cask_kernel *kl, *kj;
    TRY(cask_kernel_register(rt, &(cask_kernel_desc){ .name = "load", .cpu = load_task }, &kl));
    TRY(cask_kernel_register(rt, &(cask_kernel_desc){ .name = "join", .cpu = join_task }, &kj));
    for (int i = 0; i < nd; i++)
        TRY(cask_data_register(rt, &mem[i], sizeof(int64_t), &out[i]));
    for (int i = 0; i < nd; i++)
        TRY(cask_data_register(rt, inmem + (size_t)i * SIM_LOAD_IN_BYTES, SIM_LOAD_IN_BYTES, &in[i]));
    for (int w = 0; w < c->waves; w++)
        TRY(cask_data_register(rt, &mem[nd + w], sizeof(int64_t), &tok[w]));
    TRY(cask_graph_create(rt, &g));
    load_args a = { c->task_us };
    for (int w = 0; w < c->waves; w++) {
        for (int i = 0; i < c->per_wave; i++) {
            int k = w * c->per_wave + i;
            cask_access acc[3] = { { out[k], CASK_WRITE }, { in[k], CASK_READ }, { tok[w], CASK_READ } };
            cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE | CASK_TASK_DEVICE,
                                 .kernel = kl, .access = acc, .naccess = w ? 3 : 2, .args = &a,
                                 .args_size = sizeof a, .where = CASK_WHERE_GPU,
                                 .device = c->split ? split_gpu(c, i) : -1 };
            TRY(cask_graph_add_task(g, &d, &wave[i]));
        }
        if (w + 1 < c->waves) {   /* the next wave's token, written once this wave is done */
            cask_access acc = { tok[w + 1], CASK_WRITE };
            cask_task_desc d = { .field_mask = CASK_TASK_WHERE, .kernel = kj, .access = &acc,
                                 .naccess = 1, .where = CASK_WHERE_CPU };
            cask_task *j;
            TRY(cask_graph_add_task(g, &d, &j));
            for (int i = 0; i < c->per_wave; i++)
                TRY(cask_task_depend(j, wave[i]));
        }
    }
    TRY(cask_runtime_stats_reset(rt));
    double t0 = bench_now_s();
    TRY(cask_graph_compute(g));
    res->seconds = bench_now_s() - t0;
    int nw = 0;
    TRY(cask_runtime_nworkers(rt, &nw));
    cask_worker_stats ws[64];
    if (nw > 64)
        nw = 64;
    TRY(cask_runtime_stats(rt, ws, nw));
    for (int i = 0; i < nw; i++)
        if (ws[i].kind == 1 && ws[i].device >= 0 && ws[i].device < SIM_LOAD_MAX_GPUS)
            res->steals[ws[i].device] = ws[i].steals;
    for (int i = 0; i < nd; i++) {   /* where each task ran, as it wrote */
        void *p;
        TRY(cask_data_acquire(out[i], CASK_READ, &p));
        int64_t dev = *(int64_t *)p;
        TRY(cask_data_release(out[i]));
        if (dev >= 0 && dev < SIM_LOAD_MAX_GPUS)
            res->tasks[dev]++;
    }
    rc = 0;
out:
    if (g)
        cask_graph_destroy(g);
    if (rt)
        cask_shutdown(rt);
    free(out);
    free(tok);
    free(in);
    free(inmem);
    free(wave);
    free(mem);
    if (saved) {
        setenv("CASK_SIM_GPU_SLOW", saved, 1);
        free(saved);
    } else {
        unsetenv("CASK_SIM_GPU_SLOW");
    }
    return rc;
}
