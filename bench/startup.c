/* bench/startup.c: what joining and leaving a job costs a process, and nothing else
 * (public API only). Each rank starts the runtime, joins the job, waits at one barrier,
 * leaves the job and stops the runtime, then prints one JSON line on stdout:
 *
 *   {"bench":"startup","rank":R,"size":P,"exec_ms":..,"init_ms":..,"join_ms":..,
 *    "barrier_ms":..,"leave_ms":..,"shutdown_ms":..,"main_ms":..,"cpu_ms":..,"t0":..,
 *    "t1":..}
 *
 *   exec_ms      from the process's start (the kernel's record of the exec, 10 ms ticks)
 *                to main(): loading the program and its libraries
 *   init_ms      cask_init (topology, devices, workers)
 *   join_ms      cask_dist_init (bootstrap, UCX, one endpoint per peer, handshakes)
 *   barrier_ms   the first cask_dist_barrier
 *   leave_ms     cask_dist_finalize (goodbyes, endpoints closed, UCX torn down)
 *   shutdown_ms  cask_shutdown
 *   main_ms      main() entry to its return
 *   cpu_ms       the process's CPU time (user + system, every thread) at main()'s return:
 *                what it cost the host, whatever else runs there
 *   t0, t1       main() entry and return on CLOCK_MONOTONIC (s), the same clock in every
 *                process of a host: bench/startup.sh takes the job's span from them
 *
 *   bench-startup [--threads N] [--cpu-only] [--no-dist]
 *
 * --cpu-only opens no GPU (as cask-knn --cpu-only: the job's UCX then goes without its
 * CUDA parts). --no-dist leaves the job out (the runtime alone: the floor the job is
 * compared with).
 * With CASK_STATS=1 the runtime prints its own phases on stderr at cask_shutdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cask/cask.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds since this process was started (exec), from /proc/self/stat's start time in
 * clock ticks after boot and CLOCK_BOOTTIME; -1 if unknown. */
static double since_exec_s(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');   /* the command name may hold spaces */
    if (!p)
        return -1;
    unsigned long long start = 0;
    /* after ')': state is field 3, starttime field 22 */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                      "%*d %*d %llu", &start) != 1)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
        return -1;
    double up = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return up - (double)start / (double)hz;
}

static void check(cask_status st, const char *what, cask_runtime *rt)
{
    if (st == CASK_OK)
        return;
    char err[512] = "";
    if (rt)
        cask_runtime_error(rt, err, sizeof err);
    fprintf(stderr, "bench-startup: %s: %s%s%s\n", what, cask_status_string(st),
            err[0] ? ": " : "", err);
    exit(1);
}

int main(int argc, char **argv)
{
    double t0 = mono_s(), exec_s = since_exec_s();
    int threads = 1, dist_on = 1, cpu_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-dist"))
            dist_on = 0;
        else if (!strcmp(argv[i], "--cpu-only"))
            cpu_only = 1;
        else {
            fprintf(stderr, "usage: bench-startup [--threads N] [--cpu-only] [--no-dist]\n");
            return 2;
        }
    }
    cask_config cfg = {0};
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_PROGRESS;
    cfg.ncpu = threads > 0 ? threads : 1;
    cfg.progress = 0;
    if (cpu_only) {
        cfg.field_mask |= CASK_CONFIG_NGPU;
        cfg.ngpu = 0;
    }
    cask_runtime *rt = NULL;
    double a = mono_s();
    check(cask_init(&cfg, &rt), "cask_init", NULL);
    double init = mono_s() - a, join = 0, barrier = 0, leave = 0;
    int rank = 0, size = 1;
    if (dist_on) {
        cask_dist *dist = NULL;
        a = mono_s();
        check(cask_dist_init(rt, NULL, &dist), "cask_dist_init", rt);
        join = mono_s() - a;
        rank = cask_dist_rank(dist);
        size = cask_dist_size(dist);
        a = mono_s();
        check(cask_dist_barrier(dist), "cask_dist_barrier", rt);
        barrier = mono_s() - a;
        a = mono_s();
        check(cask_dist_finalize(dist), "cask_dist_finalize", rt);
        leave = mono_s() - a;
    }
    a = mono_s();
    check(cask_shutdown(rt), "cask_shutdown", NULL);
    double shut = mono_s() - a, t1 = mono_s();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    printf("{\"bench\":\"startup\",\"rank\":%d,\"size\":%d,\"exec_ms\":%.1f,\"init_ms\":%.3f,"
           "\"join_ms\":%.3f,\"barrier_ms\":%.3f,\"leave_ms\":%.3f,\"shutdown_ms\":%.3f,"
           "\"main_ms\":%.3f,\"cpu_ms\":%.1f,\"t0\":%.6f,\"t1\":%.6f}\n", rank, size,
           exec_s >= 0 ? 1e3 * exec_s : -1.0, 1e3 * init, 1e3 * join, 1e3 * barrier,
           1e3 * leave, 1e3 * shut, 1e3 * (t1 - t0), 1e3 * cpu, t0, t1);
    return 0;
}
