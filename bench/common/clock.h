/* clock.h: the core clock a benchmark ran at, measured (the GPU machine's kernel refuses
 * hardware counters, and its cores run between base and turbo clocks as the host's other
 * load changes: a build's ns per task moves with it). A chain of dependent adds takes
 * one cycle each on every x86-64 core since the Pentium 4, so its time gives the clock. */
#ifndef CASK_BENCH_CLOCK_H
#define CASK_BENCH_CLOCK_H

#include <stdint.h>
#include "common/timing.h"

/* The calling thread's core clock in GHz over about iters * 10 cycles (1e6: ~4 ms at
 * 2.5 GHz), or 0 where it cannot be measured this way (not x86-64). */
static inline double bench_clock_ghz(long iters)
{
#if defined(__x86_64__)
    uint64_t x = 0, one = 1;
    double t0 = bench_now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                         "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                         "add %1, %0\n\tadd %1, %0"
                         : "+r"(x)
                         : "r"(one));
    double t = bench_now_s() - t0;
    return t > 0 && x ? (double)iters * 10.0 / t * 1e-9 : 0;
#else
    (void)iters;
    return 0;
#endif
}

#endif
