/* test_helpers.h: what the core test files share: a leak check after each test under
 * AddressSanitizer, and small helpers to register kernels, make graphs, compute them,
 * read an int argument, spin, and draw deterministic random numbers. */
#ifndef CASK_TEST_HELPERS_H
#define CASK_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "cask/cask.h"

/* Under AddressSanitizer, a test that leaks fails: LeakSanitizer checks after each test
 * (Criterion runs each in its own process) and the process aborts, which fails the run. */
#if defined(__SANITIZE_ADDRESS__)
#define CASK_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CASK_TEST_LSAN 1
#endif
#endif
#ifdef CASK_TEST_LSAN
#include <sanitizer/lsan_interface.h>
/* Criterion's runner itself leaks a few bytes when it runs tests in parallel. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libcriterion.so\n"; }
#endif
static inline void leak_check(void)
{
#ifdef CASK_TEST_LSAN
    if (__lsan_do_recoverable_leak_check()) {
        fprintf(stderr, "memory leaked: see the LeakSanitizer report above\n");
        abort();
    }
#endif
}

/* A runtime of ncpu CPU workers and sim_gpus simulated GPUs (0: no GPU at all). */
static inline cask_runtime *start_runtime(int ncpu, int sim_gpus)
{
    cask_config cfg = { 0 };
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS;
    cfg.ncpu = ncpu;
    cfg.ngpu = sim_gpus ? -1 : 0;
    cfg.sim_gpus = sim_gpus;
    cask_runtime *rt = NULL;
    cask_status st = cask_init(&cfg, &rt);
    cr_assert_eq(st, CASK_OK, "cask_init(ncpu=%d, sim_gpus=%d): %s", ncpu, sim_gpus,
                 cask_status_string(st));
    return rt;
}

static inline cask_kernel *kernel(cask_runtime *rt, const char *name, cask_kernel_fn cpu)
{
    cask_kernel_desc kd = { .name = name, .cpu = cpu };
    cask_kernel *k = NULL;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    return k;
}

static inline cask_graph *graph(cask_runtime *rt)
{
    cask_graph *g = NULL;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    return g;
}

/* The int argument of a task added with one (graph_helpers.h's add()); INT_MIN if the args
 * are not one int. Kernels never cr_assert (they run on worker threads): they fail the
 * task instead, and compute_ok shows the message. */
static inline int arg_int(cask_task_ctx *ctx)
{
    size_t size = 0;
    const int *a = cask_task_args(ctx, &size);
    return a && size == sizeof(int) ? *a : INT_MIN;
}

static inline void compute_ok(cask_graph *g)
{
    cask_status st = cask_graph_compute(g);
    cr_assert_eq(st, CASK_OK, "compute: %s: %s", cask_status_string(st), cask_graph_error(g));
}

static inline void spin_ns(long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static inline uint64_t rng_next(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A task that holds its worker until the test opens the gate (gate_open), saying it
 * started (gate_entered); wait_entered waits for that. */
static atomic_int gate_open, gate_entered;

static inline cask_status gate_task(cask_task_ctx *ctx)
{
    (void)ctx;
    atomic_store(&gate_entered, 1);
    while (!atomic_load(&gate_open))
        spin_ns(10000);
    return CASK_OK;
}

static inline void wait_entered(void)
{
    for (int i = 0; i < 100000 && !atomic_load(&gate_entered); i++)
        spin_ns(10000);
    cr_assert(atomic_load(&gate_entered), "the gate task never started");
}

#endif
