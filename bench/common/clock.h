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

/* Independent adds per cycle the calling thread gets, over about iters * 24 adds (eight
 * chains of three), at clock_ghz as bench_clock_ghz measured it; 0 where it cannot be
 * measured. Alone on a core this is the core's integer issue width (4-5 on current x86-64
 * server cores); a busy hyperthread sibling (on a cloud machine, another guest's vCPU on
 * the same physical core) takes a share of it, while bench_clock_ghz's dependent chain
 * barely slows: a repetition slowed at a steady clock, with this low, ran on a shared
 * core. */
static inline double bench_core_ipc(long iters, double clock_ghz)
{
#if defined(__x86_64__)
    uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, one = 1;
    double t0 = bench_now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile("add %8, %0\n\tadd %8, %1\n\tadd %8, %2\n\tadd %8, %3\n\t"
                         "add %8, %4\n\tadd %8, %5\n\tadd %8, %6\n\tadd %8, %7\n\t"
                         "add %8, %0\n\tadd %8, %1\n\tadd %8, %2\n\tadd %8, %3\n\t"
                         "add %8, %4\n\tadd %8, %5\n\tadd %8, %6\n\tadd %8, %7\n\t"
                         "add %8, %0\n\tadd %8, %1\n\tadd %8, %2\n\tadd %8, %3\n\t"
                         "add %8, %4\n\tadd %8, %5\n\tadd %8, %6\n\tadd %8, %7"
                         : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g),
                           "+r"(h)
                         : "r"(one));
    double t = bench_now_s() - t0;
    if (t <= 0 || clock_ghz <= 0 || !(a | b | c | d | e | f | g | h))
        return 0;
    return (double)iters * 24.0 / t * 1e-9 / clock_ghz;
#else
    (void)iters;
    (void)clock_ghz;
    return 0;
#endif
}

#endif
