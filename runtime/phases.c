/* runtime/phases.c: the clock of the start-up and shutdown phases and their line
 * (phases.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/phases.h"

uint64_t phases_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t phases_since_exec_ns(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return 0;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');   /* the command's name may hold spaces */
    if (!p)
        return 0;
    /* after ")": the state (field 3) ... the start time (field 22) */
    unsigned long long start = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                      "%*d %*d %*d %llu", &start) != 1)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
        return 0;
    double up = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    double since = up - (double)start / (double)hz;
    return since > 0 ? (uint64_t)(since * 1e9) : 0;
}

static double ms(const runtime_phases *p, runtime_phase ph)
{
    return (double)p->ns[ph] * 1e-6;
}

static void part(FILE *f, const runtime_phases *p, const char *name, runtime_phase ph)
{
    fprintf(f, " %s %.1f", name, ms(p, ph));
}

void phases_print(FILE *f, const runtime_phases *p)
{
    double up = ms(p, PHASE_INIT) + ms(p, PHASE_JOIN) + ms(p, PHASE_BARRIER);
    double down = ms(p, PHASE_LEAVE) + ms(p, PHASE_SHUTDOWN);
    fprintf(f, "cask: rank %d/%d phases (ms): start-up %.1f shutdown %.1f | load %.1f |",
            p->rank, p->size > 0 ? p->size : 1, up, down, ms(p, PHASE_LOAD));
    part(f, p, "init", PHASE_INIT);
    part(f, p, "topology", PHASE_TOPOLOGY);
    part(f, p, "devices", PHASE_DEVICES);
    part(f, p, "workers", PHASE_WORKERS);
    if (p->joined) {
        fprintf(f, " |");
        part(f, p, "join", PHASE_JOIN);
        part(f, p, "boot", PHASE_BOOT);
        part(f, p, "ucx-context", PHASE_UCX_CONTEXT);
        part(f, p, "ucx-worker", PHASE_UCX_WORKER);
        part(f, p, "addresses", PHASE_ADDRESSES);
        part(f, p, "wire-up", PHASE_WIREUP);
        part(f, p, "hello", PHASE_HELLO);
        part(f, p, "nccl", PHASE_NCCL);
        part(f, p, "routes", PHASE_ROUTES);
        fprintf(f, " |");
        part(f, p, "barrier", PHASE_BARRIER);
        fprintf(f, " |");
        part(f, p, "leave", PHASE_LEAVE);
        part(f, p, "graphs", PHASE_GRAPHS);
        part(f, p, "goodbye", PHASE_GOODBYE);
        part(f, p, "endpoints", PHASE_ENDPOINTS);
        part(f, p, "ucx-teardown", PHASE_UCX_TEARDOWN);
        part(f, p, "boot-barrier", PHASE_BOOT_BARRIER);
    }
    fprintf(f, " |");
    part(f, p, "shutdown", PHASE_SHUTDOWN);
    fprintf(f, "\n");
}
