/* tests/tsan/sim_gpus.c: GPU workers against simulated GPUs under ThreadSanitizer (run.sh):
 * the workload of tests/test_sim_slow.c (sim_load.h) on 2 simulated GPUs, 3 waves of 4
 * tasks, each case once with a static split and once placed by cask: even, uneven (3:1),
 * the last GPU slowed 3x for the whole run and for a window of it. Tasks in flight on a
 * virtual clock, late binding, placement by expected finish; the timings mean nothing
 * under TSan and are only printed. Exit 1 when a run failed. */
#include <stdio.h>
#include "sim_load.h"

int main(void)
{
    static const double even[2] = { 1, 1 }, uneven[2] = { 3, 1 };
    static const struct { const char *name; const double *split; const char *slow; } cases[] = {
        { "even", even, NULL }, { "uneven", uneven, NULL },
        { "hog", even, "1:3" }, { "window", even, "1:3:20-140" },
    };
    int bad = 0;
    for (int c = 0; c < 4; c++)
        for (int placed = 0; placed < 2; placed++) {
            sim_load_cfg cfg = { 2, 3, 4, 5000, placed ? NULL : cases[c].split, cases[c].slow };
            sim_load_result r;
            char err[256];
            if (sim_load_run(&cfg, &r, err, sizeof err)) {
                fprintf(stderr, "%s: %s\n", cases[c].name, err);
                bad = 1;
                continue;
            }
            printf("%-7s %-6s %8.1f ms, tasks %lld/%lld\n", cases[c].name,
                   placed ? "cask" : "static", r.seconds * 1e3, (long long)r.tasks[0],
                   (long long)r.tasks[1]);
        }
    return bad;
}
