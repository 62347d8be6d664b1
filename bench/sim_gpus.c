/* bench/sim_gpus.c: what dynamic placement buys on two simulated GPUs (2-core VMs: no
 * GPU needed), the CPU counterpart of bench-knn's even / uneven / hog cases:
 *   even     a static equal split (tasks bound to GPUs) vs cask placing them;
 *   uneven   a static split that is off (3:1) vs cask;
 *   hog      the last GPU slowed --factor times for the whole run (CASK_SIM_GPU_SLOW,
 *            as a competing load would), static equal split vs cask;
 *   window   the same, slowed only between --window FROM-TO ms of each run.
 * The workload is bench/sim_load.h's: --waves waves of --per-wave tasks of --task-us
 * each. Every run has a runtime of its own; static and cask runs alternate; medians of
 * --reps. Prints a table and one JSON line per measurement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_load.h"

typedef struct opts {
    int gpus, waves, per_wave, task_us, reps;
    double factor;
    char window[64];
} opts;

static void measure(const opts *o, const char *cas, const double *split, const char *slow)
{
    double even[SIM_LOAD_MAX_GPUS];
    for (int g = 0; g < o->gpus; g++)
        even[g] = 1.0;
    sim_load_cfg base = { o->gpus, o->waves, o->per_wave, o->task_us, split ? split : even, slow };
    sim_load_cfg dyn = base;
    dyn.split = NULL;
    double *ts = calloc((size_t)o->reps, sizeof *ts), *tc = calloc((size_t)o->reps, sizeof *tc);
    sim_load_result rs, rc, last = {0};
    char err[256];
    for (int r = 0; r < o->reps; r++) {
        if (sim_load_run(&base, &rs, err, sizeof err) || sim_load_run(&dyn, &rc, err, sizeof err)) {
            fprintf(stderr, "bench-sim-gpus: %s\n", err);
            exit(1);
        }
        ts[r] = rs.seconds;
        tc[r] = rc.seconds;
        last = rc;
    }
    double ms = sim_load_median(ts, o->reps), mc = sim_load_median(tc, o->reps);
    printf("%-7s %10.2f %10.2f %8.3f %8.2f   ", cas, ms * 1e3, mc * 1e3, mc / ms, ms / mc);
    for (int g = 0; g < o->gpus; g++)
        printf("%s%lld(%llu)", g ? "/" : "", (long long)last.tasks[g], (unsigned long long)last.steals[g]);
    printf("\n");
    for (int k = 0; k < 2; k++) {
        printf("{\"bench\":\"sim_gpus\",\"case\":\"%s\",\"impl\":\"%s\",\"gpus\":%d,\"waves\":%d,"
               "\"per_wave\":%d,\"task_us\":%d,\"slow\":\"%s\",\"reps\":%d,\"seconds\":%.6f",
               cas, k ? "cask" : "static", o->gpus, o->waves, o->per_wave, o->task_us,
               slow ? slow : "", o->reps, k ? mc : ms);
        if (k) {
            printf(",\"ratio_to_static\":%.4f,\"speedup_over_static\":%.4f,\"tasks\":[", mc / ms, ms / mc);
            for (int g = 0; g < o->gpus; g++)
                printf("%s%lld", g ? "," : "", (long long)last.tasks[g]);
            printf("],\"steals\":[");
            for (int g = 0; g < o->gpus; g++)
                printf("%s%llu", g ? "," : "", (unsigned long long)last.steals[g]);
            printf("]");
        }
        printf("}\n");
    }
    fflush(stdout);
    free(ts);
    free(tc);
}

int main(int argc, char **argv)
{
    opts o = { .gpus = 2, .waves = 8, .per_wave = 4, .task_us = 5000, .reps = 7, .factor = 3.0 };
    snprintf(o.window, sizeof o.window, "20-140");
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus") && i + 1 < argc) o.gpus = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--waves") && i + 1 < argc) o.waves = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--per-wave") && i + 1 < argc) o.per_wave = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--task-us") && i + 1 < argc) o.task_us = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) o.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--factor") && i + 1 < argc) o.factor = atof(argv[++i]);
        else if (!strcmp(argv[i], "--window") && i + 1 < argc) snprintf(o.window, sizeof o.window, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--gpus G] [--waves W] [--per-wave P] [--task-us U] [--reps R]"
                            " [--factor F] [--window FROM-TO] [--case even|uneven|hog|window]\n", argv[0]);
            return 2;
        }
    }
    if (o.gpus < 2 || o.gpus > SIM_LOAD_MAX_GPUS || o.reps < 1 || o.waves < 1 || o.per_wave < 1 ||
        o.task_us < 0 || !(o.factor >= 1.0)) {
        fprintf(stderr, "bench-sim-gpus: bad arguments\n");
        return 2;
    }
    char hog[64], win[128];
    snprintf(hog, sizeof hog, "%d:%g", o.gpus - 1, o.factor);
    snprintf(win, sizeof win, "%d:%g:%s", o.gpus - 1, o.factor, o.window);
    double uneven[SIM_LOAD_MAX_GPUS];
    for (int g = 0; g < o.gpus; g++)
        uneven[g] = g == 0 ? 3.0 : 1.0;
    printf("# bench-sim-gpus: %d simulated GPUs, %d wave(s) of %d tasks of %d us, median of %d\n",
           o.gpus, o.waves, o.per_wave, o.task_us, o.reps);
    printf("%-7s %10s %10s %8s %8s   %s\n", "case", "static ms", "cask ms", "cask/st", "speedup",
           "cask tasks(steals) per GPU, last rep");
    if (!only || !strcmp(only, "even")) measure(&o, "even", NULL, NULL);
    if (!only || !strcmp(only, "uneven")) measure(&o, "uneven", uneven, NULL);
    if (!only || !strcmp(only, "hog")) measure(&o, "hog", NULL, hog);
    if (!only || !strcmp(only, "window")) measure(&o, "window", NULL, win);
    return 0;
}
