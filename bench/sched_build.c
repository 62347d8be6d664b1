/* bench/sched_build.c: bench-sched --mode bcd. What a program that builds a graph once and
 * runs it once pays: per repetition a fresh graph is created and built (build), computed
 * (compute, which includes the first-run check), and destroyed (destroy), on a runtime
 * started once per (shape, workers). Beside it, in the same run: cask computing a graph
 * built once (the compute-only cost of the default mode), and the peers asked for. The
 * build + destroy cost per task is reported two ways: the build and destroy phases alone,
 * and the whole build+compute+destroy minus the reused-graph compute ("overhead"); and as
 * the calling thread's CPU time in build, submit (the first-run check) and destroy ("cpu
 * b+s+d"), which a loaded machine does not stretch. (The rows of a build with no API at
 * all, sched_floor.c, and the per-repetition clock and counters, BENCH_REP_LOG and
 * BENCH_PMU, are retired: bench/RESULTS.md, "Retired programs and steps".) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched_bench.h"
#include "common/timing.h"

typedef struct phases {
    double build, compute, destroy, total;
    double cpu_build, cpu_submit, cpu_destroy;   /* the calling thread's CPU time */
} phases;

/* CPU seconds of the calling thread: what building costs, whatever else runs on the
 * machine (a loaded machine stretches wall time, not this). */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static phases time_bcd(enum shape s, int workers, const options *o, const dag *d, long *ntasks)
{
    cask_kernel *k;
    cask_runtime *rt = bench_start_cask(workers, o, &k);
    double *v = malloc(7 * (size_t)o->reps * sizeof *v);
    if (!v) {
        fprintf(stderr, "bench-sched: out of memory\n");
        exit(1);
    }
    batch_arrays ba = { 0 };
    if (o->deps == EDGES_BATCH) {
        if (bench_batch_make(s, o, d, &ba)) {
            fprintf(stderr, "bench-sched: out of memory\n");
            exit(1);
        }
        *ntasks = (long)ba.n;
    }
    for (int r = -1; r < o->reps; r++) {   /* r = -1: warm-up */
        double c0 = thread_cpu_s(), t0 = bench_now_s();
        cask_graph *g = o->deps == EDGES_BATCH ? bench_build_batch(rt, k, &ba)
                                               : bench_build_graph(rt, k, s, o, d, ntasks);
        double c1 = thread_cpu_s(), t1 = bench_now_s();
        CHECK(cask_graph_submit(g));
        double c2 = thread_cpu_s();
        CHECK(cask_graph_wait(g));
        double c3 = thread_cpu_s(), t2 = bench_now_s();
        CHECK(cask_graph_destroy(g));
        double c4 = thread_cpu_s(), t3 = bench_now_s();
        if (r < 0)
            continue;
        int R = o->reps;
        v[r] = t1 - t0;
        v[R + r] = t2 - t1;
        v[2 * R + r] = t3 - t2;
        v[3 * R + r] = t3 - t0;
        v[4 * R + r] = c1 - c0;
        v[5 * R + r] = c2 - c1;
        v[6 * R + r] = c4 - c3;
    }
    bench_batch_free(&ba);
    int R = o->reps;
    phases p = { bench_median(v, R), bench_median(v + R, R), bench_median(v + 2 * R, R),
                 bench_median(v + 3 * R, R), bench_median(v + 4 * R, R),
                 bench_median(v + 5 * R, R), bench_median(v + 6 * R, R) };
    free(v);
    CHECK(cask_shutdown(rt));
    return p;
}

static void row(const char *shape, int workers, const char *impl, long n, double total,
                const phases *p, double reused, long work_ns)
{
    double ns = 1e9 / (double)n;
    char extra[720];
    if (p) {
        snprintf(extra, sizeof extra,
                 ",\"mode\":\"bcd\",\"build_ns\":%.4g,\"compute_ns\":%.4g,\"destroy_ns\":%.4g,"
                 "\"build_destroy_ns\":%.4g,\"reused_compute_ns\":%.4g,\"overhead_ns\":%.4g,"
                 "\"cpu_build_ns\":%.4g,\"cpu_submit_ns\":%.4g,\"cpu_destroy_ns\":%.4g,"
                 "\"cpu_build_submit_destroy_ns\":%.4g",
                 p->build * ns, p->compute * ns, p->destroy * ns, (p->build + p->destroy) * ns,
                 reused * ns, (total - reused) * ns, p->cpu_build * ns, p->cpu_submit * ns,
                 p->cpu_destroy * ns, (p->cpu_build + p->cpu_submit + p->cpu_destroy) * ns);
        bench_table_add("%-12s %7d  %-10s %9ld %9.1f %8.1f %8.1f %8.1f %9.1f %9.1f %9.1f %9.1f\n",
                        shape, workers, impl, n, total * ns, p->build * ns, p->compute * ns,
                        p->destroy * ns, (p->build + p->destroy) * ns, reused * ns,
                        (total - reused) * ns,
                        (p->cpu_build + p->cpu_submit + p->cpu_destroy) * ns);
    } else {
        snprintf(extra, sizeof extra, ",\"mode\":\"bcd\"");
        bench_table_add("%-12s %7d  %-10s %9ld %9.1f\n", shape, workers, impl, n, total * ns);
    }
    bench_emit(shape, workers, impl, n, total, 0, work_ns, extra, 0);
}

void bench_bcd(const options *o, const dag *d)
{
    bench_table_add("build + compute + destroy, ns per task (median of %d)\n", o->reps);
    bench_table_add("%-12s %7s  %-10s %9s %9s %8s %8s %8s %9s %9s %9s %9s\n", "case",
                    "workers", "impl", "tasks", "total", "build", "compute", "destroy",
                    "build+dst", "reused", "overhead", "cpu b+s+d");
    for (int s = 0; s < NSHAPES; s++) {
        if (!o->cases[s])
            continue;
        for (int w = 0; w < o->nworkers; w++) {
            int workers = o->workers[w];
            long n = 0;
            double reused = bench_time_cask((enum shape)s, workers, o, d, &n);
            /* edges by cask_task_depend ("cask"), the same edges named at add
               (CASK_TASK_DEPS, "cask-deps"), the graph from arrays (cask_graph_add_batch,
               "cask-batch"), as --edges asks (default all three) */
            int all = o->deps < 0 || o->deps == EDGES_ALL;
            int both = all || o->deps == EDGES_BOTH;
            options od = *o;
            if (both || o->deps == EDGES_DEPEND) {
                od.deps = EDGES_DEPEND;
                phases p = time_bcd((enum shape)s, workers, &od, d, &n);
                row(shape_names[s], workers, "cask", n, p.total, &p, reused, o->work_ns);
            }
            if ((both && s != INDEPENDENT) || o->deps == EDGES_DEPS) {
                od.deps = EDGES_DEPS;
                phases p = time_bcd((enum shape)s, workers, &od, d, &n);
                row(shape_names[s], workers, "cask-deps", n, p.total, &p, reused, o->work_ns);
            }
            if (all || o->deps == EDGES_BATCH) {
                od.deps = EDGES_BATCH;
                phases p = time_bcd((enum shape)s, workers, &od, d, &n);
                row(shape_names[s], workers, "cask-batch", n, p.total, &p, reused, o->work_ns);
            }
            if (o->peers & PEER_STARPU) {
                long pn = 0;
                double t = peer_starpu((enum shape)s, workers, o, d, &pn);
                if (t >= 0)
                    row(shape_names[s], workers, "starpu", pn, t, NULL, 0, o->work_ns);
                else if (s == 0 && w == 0)
                    bench_table_add("(StarPU asked for but not built in)\n");
            }
            if (o->peers & PEER_OPENMP) {
                long pn = 0;
                double t = peer_openmp((enum shape)s, workers, o, d, &pn);
                if (t >= 0)
                    row(shape_names[s], workers, "openmp", pn, t, NULL, 0, o->work_ns);
                else if (s == 0 && w == 0)
                    bench_table_add("(OpenMP asked for but not built in)\n");
            }
        }
    }
}
