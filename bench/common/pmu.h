/* bench/common/pmu.h: the calling thread's hardware counters (cycles, instructions,
 * branch misses, last-level cache misses, dTLB load misses) around a phase, through
 * perf_event_open, user space only. For telling what bounds a build (instructions,
 * mispredicts, memory) on a machine that has no perf tool. BENCH_PMU=1 turns it on;
 * where the kernel refuses the counters, pmu_open returns -1 and nothing is counted. */
#ifndef BENCH_COMMON_PMU_H
#define BENCH_COMMON_PMU_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { PMU_N = 5 };
static const char *const pmu_names[PMU_N] = { "cycles", "instructions", "branch_misses",
                                              "llc_misses", "dtlb_misses" };

typedef struct pmu {
    int fd[PMU_N];
    int n;                /* counters opened (0: none) */
    uint64_t sum[PMU_N];  /* accumulated by pmu_stop */
    uint64_t at[PMU_N];
} pmu;

static inline int pmu_open_one(uint32_t type, uint64_t config, int group)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, 0);
}

/* 0 with at least the cycle counter open, -1 if BENCH_PMU is unset or the kernel refuses. */
static inline int pmu_open(pmu *p)
{
    memset(p, 0, sizeof *p);
    const char *e = getenv("BENCH_PMU");
    if (!e || !*e || *e == '0')
        return -1;
    const uint32_t type[PMU_N] = { PERF_TYPE_HARDWARE, PERF_TYPE_HARDWARE, PERF_TYPE_HARDWARE,
                                   PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE };
    const uint64_t cfg[PMU_N] = {
        PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_BRANCH_MISSES,
        PERF_COUNT_HW_CACHE_MISSES,
        PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
            (PERF_COUNT_HW_CACHE_RESULT_MISS << 16) };
    for (int i = 0; i < PMU_N; i++) {
        p->fd[i] = pmu_open_one(type[i], cfg[i], -1);
        if (p->fd[i] < 0 && i == 0)
            return -1;
    }
    p->n = PMU_N;
    return 0;
}

static inline void pmu_read_all(pmu *p, uint64_t *v)
{
    for (int i = 0; i < p->n; i++) {
        v[i] = 0;
        if (p->fd[i] >= 0 && read(p->fd[i], &v[i], sizeof v[i]) != (ssize_t)sizeof v[i])
            v[i] = 0;
    }
}

static inline void pmu_start(pmu *p)
{
    if (p->n)
        pmu_read_all(p, p->at);
}

static inline void pmu_stop(pmu *p)
{
    if (!p->n)
        return;
    uint64_t v[PMU_N];
    pmu_read_all(p, v);
    for (int i = 0; i < p->n; i++)
        p->sum[i] += v[i] - p->at[i];
}

/* ",\"pmu_cycles\":x,..." per unit (e.g. per task over all repetitions) into buf. */
static inline void pmu_json(const pmu *p, double units, char *buf, size_t len)
{
    buf[0] = 0;
    size_t o = 0;
    for (int i = 0; p->n && i < p->n && o < len; i++)
        if (p->fd[i] >= 0)
            o += (size_t)snprintf(buf + o, len - o, ",\"pmu_%s\":%.4g", pmu_names[i],
                                  (double)p->sum[i] / units);
}

static inline void pmu_close(pmu *p)
{
    for (int i = 0; i < p->n; i++)
        if (p->fd[i] >= 0)
            close(p->fd[i]);
    p->n = 0;
}

#endif
