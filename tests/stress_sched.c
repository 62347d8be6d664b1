/* stress_sched.c: a plain C stress of the scheduler and coherence layer, without
 * Criterion, so that it also runs under ThreadSanitizer (Criterion's forking runner does
 * not start under TSan): random DAGs over shared data checked against a sequential
 * replay, big fan-out/fan-in, failures, and simulated GPUs moving data. Prints
 * "N passed, N failed" and exits non-zero on any failure. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"

static int passed, failed;
#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); } } while (0)

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

/* Each task folds the first word of what it reads into a value and fills what it
 * writes with it; the sequential replay does the same in submission order. */
typedef struct { int32_t id; uint8_t modes[8]; int n; } rargs;

static cask_status mix2(cask_task_ctx *ctx)
{
    const rargs *a = cask_task_args(ctx, NULL);
    uint64_t acc = (uint64_t)a->id;
    for (int i = 0; i < a->n; i++)
        if (a->modes[i] & CASK_READ)
            acc = acc * 1000003u ^ ((uint64_t *)cask_task_buffer(ctx, i))[0];
    for (int i = 0; i < a->n; i++)
        if (a->modes[i] & CASK_WRITE) {
            uint64_t *p = cask_task_buffer(ctx, i);
            size_t words = cask_task_buffer_size(ctx, i) / 8;
            for (size_t k = 0; k < words; k++)
                p[k] = acc + k;
        }
    return CASK_OK;
}

static void random_dag(int ncpu, int sim_gpus, uint64_t seed, int ntasks, int ndata)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_NGPU,
                        .ncpu = ncpu, .sim_gpus = sim_gpus, .ngpu = sim_gpus ? -1 : 0 };
    cask_runtime *rt;
    if (cask_init(&cfg, &rt) != CASK_OK) {
        CHECK(0, "init");
        return;
    }
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    if (sim_gpus && !info.simulated_gpus) {
        /* a real GPU is present: simulated ones are not used, and this CPU-only kernel
         * cannot be sent to it; the CPU-worker runs cover the scheduler here */
        cask_shutdown(rt);
        return;
    }
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "mix", .cpu = mix2 };
    cask_kernel_register(rt, &kd, &k);
    enum { WORDS = 64 };
    uint64_t *mem = calloc((size_t)ndata * WORDS, 8), *ref = calloc((size_t)ndata * WORDS, 8);
    cask_data **d = malloc(sizeof *d * (size_t)ndata);
    for (int i = 0; i < ndata; i++) {
        for (int w = 0; w < WORDS; w++)
            mem[i * WORDS + w] = ref[i * WORDS + w] = (uint64_t)i * 7 + (uint64_t)w;
        cask_data_register(rt, mem + i * WORDS, WORDS * 8, &d[i]);
    }
    cask_graph *g;
    cask_graph_create(rt, &g);
    uint64_t s = seed;
    for (int t = 0; t < ntasks; t++) {
        rargs a = { .id = t };
        cask_access acc[8];
        int n = 1 + (int)(rng(&s) % 3);
        int used[8];
        for (int i = 0; i < n; i++) {
            int di;
            int dup;
            do {
                di = (int)(rng(&s) % (uint64_t)ndata);
                dup = 0;
                for (int j = 0; j < i; j++) dup |= used[j] == di;
            } while (dup);
            used[i] = di;
            int m = 1 + (int)(rng(&s) % 3);
            acc[i].data = d[di];
            acc[i].mode = (cask_access_mode)m;
            a.modes[i] = (uint8_t)m;
        }
        a.n = n;
        cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = k, .access = acc, .naccess = n,
                              .args = &a, .args_size = sizeof a };
        if (info.ngpus && (rng(&s) & 1)) {
            td.field_mask |= CASK_TASK_WHERE | CASK_TASK_DEVICE;
            td.where = CASK_WHERE_GPU;
            td.device = (int)(rng(&s) % (uint64_t)info.ngpus);
        }
        cask_graph_add_task(g, &td, NULL);
        /* sequential replay */
        uint64_t accv = (uint64_t)t;
        for (int i = 0; i < n; i++)
            if (a.modes[i] & CASK_READ)
                accv = accv * 1000003u ^ ref[used[i] * WORDS];
        for (int i = 0; i < n; i++)
            if (a.modes[i] & CASK_WRITE)
                for (int w = 0; w < WORDS; w++)
                    ref[used[i] * WORDS + w] = accv + (uint64_t)w;
    }
    for (int rep = 0; rep < 2; rep++) {
        cask_status st = cask_graph_compute(g);
        CHECK(st == CASK_OK, "compute: %s", cask_graph_error(g));
        if (rep == 0) {
            for (int i = 0; i < ndata; i++) {
                void *p;
                cask_data_acquire(d[i], CASK_READ, &p);
                CHECK(memcmp(p, ref + i * WORDS, WORDS * 8) == 0, "data %d differs (ncpu %d, gpus %d, seed %llu)",
                      i, ncpu, sim_gpus, (unsigned long long)seed);
                cask_data_release(d[i]);
            }
            /* rerun from the same start: reset the data, replay gives the same */
            for (int i = 0; i < ndata; i++) {
                void *p;
                cask_data_acquire(d[i], CASK_WRITE, &p);
                for (int w = 0; w < WORDS; w++)
                    ((uint64_t *)p)[w] = (uint64_t)i * 7 + (uint64_t)w;
                cask_data_release(d[i]);
            }
        }
    }
    for (int i = 0; i < ndata; i++)
        cask_data_destroy(d[i]);
    CHECK(memcmp(mem, ref, (size_t)ndata * WORDS * 8) == 0, "second run differs");
    cask_graph_destroy(g);
    cask_shutdown(rt);
    free(mem);
    free(ref);
    free(d);
}

static atomic_long counter;

static cask_status bump(cask_task_ctx *ctx)
{
    atomic_fetch_add(&counter, 1);
    return CASK_OK;
}

static cask_status boom(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "boom");
}

static void fan(int ncpu, int width)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU, .ncpu = ncpu, .ngpu = 0 };
    cask_runtime *rt;
    cask_init(&cfg, &rt);
    cask_kernel *k, *kb;
    cask_kernel_desc kd = { .name = "bump", .cpu = bump };
    cask_kernel_register(rt, &kd, &k);
    cask_kernel_desc kbd = { .name = "boom", .cpu = boom };
    cask_kernel_register(rt, &kbd, &kb);
    cask_graph *g;
    cask_graph_create(rt, &g);
    cask_task_desc td = { .kernel = k };
    cask_task *root, *sink, *t;
    cask_graph_add_task(g, &td, &root);
    cask_graph_add_task(g, &td, &sink);
    for (int i = 0; i < width; i++) {
        cask_graph_add_task(g, &td, &t);
        cask_task_depend(t, root);
        cask_task_depend(sink, t);
    }
    for (int rep = 0; rep < 3; rep++) {
        atomic_store(&counter, 0);
        CHECK(cask_graph_compute(g) == CASK_OK, "fan compute");
        CHECK(atomic_load(&counter) == width + 2, "fan ran %ld of %d", atomic_load(&counter), width + 2);
    }
    /* a failure in the middle: the sink must not run, nothing hangs */
    cask_graph *g2;
    cask_graph_create(rt, &g2);
    cask_graph_add_task(g2, &td, &root);
    cask_graph_add_task(g2, &td, &sink);
    for (int i = 0; i < width; i++) {
        cask_task_desc tb = { .kernel = i == width / 2 ? kb : k };
        cask_graph_add_task(g2, &tb, &t);
        cask_task_depend(t, root);
        cask_task_depend(sink, t);
    }
    atomic_store(&counter, 0);
    CHECK(cask_graph_compute(g2) == CASK_ERR_TASK_FAILED, "failing fan");
    CHECK(atomic_load(&counter) <= width, "sink ran after a failure");
    cask_graph_destroy(g);
    cask_graph_destroy(g2);
    cask_shutdown(rt);
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    for (int seed = 1; seed <= 6 * scale; seed++) {
        random_dag(1 + seed % 4, 0, (uint64_t)seed * 7919, 400, 12);
        random_dag(2, 1 + seed % 3, (uint64_t)seed * 104729, 300, 10);
    }
    fan(4, 5000);
    fan(3, 700);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
