/* bench/sched.c (bench-sched): throughput of empty tasks through cask's scheduler, by
 * graph shape and worker count, against a hand-threaded pthreads baseline that runs the
 * same empty calls over a static split.
 *
 *   bench-sched [--workers 1,2,4,16] [--tasks N] [--reps R] [--cases a,b] [--window W]
 *               [--chains C] [--sched ws|locality|eager] [--work-ns NS] [--json-only]
 *               [--mode compute|bcd] [--peers starpu,openmp]
 *               [--edges depend|deps|both|batch|all]
 *
 * Shapes: independent (T tasks, no edges); fanout (1 root -> T children -> 1 sink, explicit
 * edges); chains (C chains of T/C tasks); random (each task depends on up to 3 distinct
 * earlier tasks among the W before it). Each graph is built once per (shape, workers) and
 * computed R times after a warm-up; the median is reported. The baseline keeps its
 * threads alive across repetitions as cask keeps its workers: per repetition it pays one
 * barrier per level (independent, chains: 1; fanout: 3; random: one per depth level).
 * --work-ns makes every task (both implementations) busy-wait about NS nanoseconds, to see
 * the overhead against a realistic task grain; by default tasks are empty calls.
 * --mode bcd times what a program that builds once and runs once pays: a fresh graph per
 * repetition, built, computed and destroyed (sched_build.c), beside the peers asked for
 * with --peers and built in (StarPU, OpenMP tasks: sched_peers.c) on the same shapes.
 * --edges: how cask's builds name edges (bcd: all three by default): cask_task_depend,
 * deps named at add (CASK_TASK_DEPS), or the whole graph from arrays (cask_graph_add_batch).
 * Output: one JSON object per measurement on stdout as it is taken, then a table on
 * stderr (--json-only: no table). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cask/cask.h"
#include "common/timing.h"
#include "sched_bench.h"

/* ---- the task body, called through a pointer the compiler cannot see through ---- */

/* --work-ns: iterations of a calibrated busy loop per task (0: an empty call). */
static volatile uint64_t work_iters;

static void empty_body(void)
{
    for (uint64_t i = 0, n = work_iters; i < n; i++)
        __asm__ volatile("" ::: "memory");
}
void (*volatile bench_empty_fn)(void) = empty_body;

const char *shape_names[NSHAPES] = { "independent", "fanout", "chains", "random" };
const char *edges_names[EDGES_ALL + 1] = { "depend", "deps", "both", "batch", "all" };

void bench_task_body(void)
{
    bench_empty_fn();
}

cask_status bench_empty_kernel(cask_task_ctx *ctx)
{
    (void)ctx;
    bench_empty_fn();
    return CASK_OK;
}

static uint64_t rng_next(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int make_dag(long n, int window, dag *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    d->preds = malloc((size_t)n * sizeof *d->preds);
    d->npred = malloc((size_t)n);
    d->level = malloc((size_t)n * sizeof *d->level);
    d->by_level = malloc((size_t)n * sizeof *d->by_level);
    if (!d->preds || !d->npred || !d->level || !d->by_level)
        return -1;
    uint64_t s = 12345;
    int maxlevel = 0;
    for (long i = 0; i < n; i++) {
        long span = i < window ? i : window;
        int want = span ? (int)(rng_next(&s) % 4) : 0;
        d->npred[i] = 0;
        d->level[i] = 0;
        for (int k = 0; k < want; k++) {
            int32_t p = (int32_t)(i - 1 - (long)(rng_next(&s) % (uint64_t)span));
            int dup = 0;
            for (int j = 0; j < d->npred[i]; j++)
                dup |= d->preds[i][j] == p;
            if (dup)
                continue;
            d->preds[i][d->npred[i]++] = p;
            if (d->level[p] + 1 > d->level[i])
                d->level[i] = d->level[p] + 1;
        }
        if (d->level[i] > maxlevel)
            maxlevel = d->level[i];
    }
    d->nlevels = maxlevel + 1;
    d->level_start = calloc((size_t)d->nlevels + 1, sizeof *d->level_start);
    if (!d->level_start)
        return -1;
    for (long i = 0; i < n; i++)
        d->level_start[d->level[i] + 1]++;
    for (int l = 0; l < d->nlevels; l++)
        d->level_start[l + 1] += d->level_start[l];
    long *fill = malloc((size_t)d->nlevels * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, d->level_start, (size_t)d->nlevels * sizeof *fill);
    for (long i = 0; i < n; i++)
        d->by_level[fill[d->level[i]]++] = i;
    free(fill);
    return 0;
}

static void free_dag(dag *d)
{
    free(d->preds);
    free(d->npred);
    free(d->level);
    free(d->by_level);
    free(d->level_start);
}

/* ---- cask ---- */

/* The descriptions are made once per graph and reused, as a program that adds many tasks
 * of one kind would (a description is only read by the call): zeroing one per task is
 * the caller's cost, not the runtime's (gcc -O2 clears the 96 bytes with rep stos). */
static cask_task *add_empty(cask_graph *g, const cask_task_desc *plain)
{
    cask_task *t;
    CHECK(cask_graph_add_task(g, plain, &t));
    return t;
}

/* A task that names the n tasks it waits for (CASK_TASK_DEPS). */
static cask_task *add_after(cask_graph *g, cask_task_desc *after, cask_task *const *deps, int n)
{
    after->deps = deps;
    after->ndeps = n;
    cask_task *t;
    CHECK(cask_graph_add_task(g, after, &t));
    return t;
}

/* Builds shape s of about T tasks; returns the exact task count in *ntasks. Edges by
 * cask_task_depend, or with o->deps named at add (the sink of a fan-out then comes last,
 * with every child in its list). */
cask_graph *bench_build_graph(cask_runtime *rt, cask_kernel *k, enum shape s,
                               const options *o, const dag *d, long *ntasks)
{
    cask_graph *g;
    CHECK(cask_graph_create(rt, &g));
    const cask_task_desc plain = { .kernel = k };
    cask_task_desc after = { .field_mask = CASK_TASK_DEPS, .kernel = k };
    long T = o->tasks;
    switch (s) {
    case INDEPENDENT:
        for (long i = 0; i < T; i++)
            add_empty(g, &plain);
        *ntasks = T;
        break;
    case FANOUT: {
        cask_task *root = add_empty(g, &plain);
        if (o->deps == EDGES_DEPS) {
            cask_task **kids = malloc((size_t)T * sizeof *kids);
            if (!kids) {
                fprintf(stderr, "bench-sched: out of memory\n");
                exit(1);
            }
            for (long i = 0; i < T; i++)
                kids[i] = add_after(g, &after, &root, 1);
            add_after(g, &after, kids, (int)T);
            free(kids);
        } else {
            cask_task *sink = add_empty(g, &plain);
            for (long i = 0; i < T; i++) {
                cask_task *t = add_empty(g, &plain);
                CHECK(cask_task_depend(t, root));
                CHECK(cask_task_depend(sink, t));
            }
        }
        *ntasks = T + 2;
        break;
    }
    case CHAINS: {
        long len = T / o->chains;
        for (int c = 0; c < o->chains; c++) {
            cask_task *prev = NULL;
            for (long i = 0; i < len; i++) {
                cask_task *t;
                if (o->deps == EDGES_DEPS) {
                    t = add_after(g, &after, &prev, prev ? 1 : 0);
                } else {
                    t = add_empty(g, &plain);
                    if (prev)
                        CHECK(cask_task_depend(t, prev));
                }
                prev = t;
            }
        }
        *ntasks = len * o->chains;
        break;
    }
    case RANDOM: {
        cask_task **t = malloc((size_t)d->n * sizeof *t);
        if (!t) {
            fprintf(stderr, "bench-sched: out of memory\n");
            exit(1);
        }
        for (long i = 0; i < d->n; i++) {
            if (o->deps == EDGES_DEPS) {
                cask_task *in[3];
                for (int j = 0; j < d->npred[i]; j++)
                    in[j] = t[d->preds[i][j]];
                t[i] = add_after(g, &after, in, d->npred[i]);
            } else {
                t[i] = add_empty(g, &plain);
                for (int j = 0; j < d->npred[i]; j++)
                    CHECK(cask_task_depend(t[i], t[d->preds[i][j]]));
            }
        }
        free(t);
        *ntasks = d->n;
        break;
    }
    default:
        break;
    }
    return g;
}

cask_runtime *bench_start_cask(int workers, const options *o, cask_kernel **empty)
{
    cask_config cfg = { 0 };
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS;
    cfg.ncpu = workers;
    cfg.ngpu = 0;
    cfg.sim_gpus = 0;
    if (o->sched >= 0) {
        cfg.field_mask |= CASK_CONFIG_SCHED;
        cfg.sched = (cask_sched_policy)o->sched;
    }
    cask_runtime *rt;
    CHECK(cask_init(&cfg, &rt));
    cask_kernel_desc kd = { .name = "empty", .cpu = bench_empty_kernel };
    CHECK(cask_kernel_register(rt, &kd, empty));
    return rt;
}

double bench_time_cask(enum shape s, int workers, const options *o, const dag *d,
                        long *ntasks)
{
    cask_kernel *k;
    cask_runtime *rt = bench_start_cask(workers, o, &k);
    cask_graph *g = bench_build_graph(rt, k, s, o, d, ntasks);
    CHECK(cask_graph_compute(g)); /* warm-up: pools, pages, caches */
    double *t = malloc((size_t)o->reps * sizeof *t);
    for (int r = 0; r < o->reps; r++) {
        double t0 = bench_now_s();
        CHECK(cask_graph_compute(g));
        t[r] = bench_now_s() - t0;
    }
    double m = bench_median(t, o->reps);
    free(t);
    CHECK(cask_graph_destroy(g));
    CHECK(cask_shutdown(rt));
    return m;
}

/* ---- driver ---- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench-sched [--workers 1,2,4,...] [--tasks N] [--reps R]\n"
            "                   [--cases independent,fanout,chains,random] [--window W]\n"
            "                   [--chains C] [--sched ws|locality|eager] [--work-ns NS]\n"
            "                   [--mode compute|bcd] [--peers starpu,openmp] [--json-only]\n"
            "                   [--edges depend|deps|both|batch|all]\n");
    exit(2);
}

static long parse_long(const char *s, long min)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < min)
        usage();
    return v;
}

static void parse(int argc, char **argv, options *o)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    memset(o, 0, sizeof *o);
    for (long w = 1; w < cores && o->nworkers < 63; w *= 2)
        o->workers[o->nworkers++] = (int)w;
    o->workers[o->nworkers++] = (int)cores;
    o->tasks = 1000000;
    o->reps = 5;
    o->window = 100;
    o->deps = -1;   /* default: cask_task_depend; all three in --mode bcd */
    o->chains = 64;
    o->sched = -1;
    for (int s = 0; s < NSHAPES; s++)
        o->cases[s] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json-only")) {
            o->json_only = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--workers")) {
            o->nworkers = 0;
            char *copy = strdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                if (o->nworkers < 64)
                    o->workers[o->nworkers++] = (int)parse_long(tok, 1);
            free(copy);
            if (!o->nworkers)
                usage();
        } else if (!strcmp(a, "--tasks")) {
            o->tasks = parse_long(v, 1);
        } else if (!strcmp(a, "--reps")) {
            o->reps = (int)parse_long(v, 1);
        } else if (!strcmp(a, "--window")) {
            o->window = (int)parse_long(v, 1);
        } else if (!strcmp(a, "--edges")) {
            o->deps = -1;
            for (int e = EDGES_DEPEND; e <= EDGES_ALL; e++)
                if (!strcmp(v, edges_names[e]))
                    o->deps = e;
            if (o->deps < 0) {
                fprintf(stderr, "bench-sched: --edges depend|deps|both|batch|all, not %s\n", v);
                exit(2);
            }
        } else if (!strcmp(a, "--work-ns")) {
            o->work_ns = parse_long(v, 0);
        } else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "bcd"))
                o->bcd = 1;
            else if (strcmp(v, "compute"))
                usage();
        } else if (!strcmp(a, "--peers")) {
            char *copy = strdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (!strcmp(tok, "starpu"))
                    o->peers |= PEER_STARPU;
                else if (!strcmp(tok, "openmp"))
                    o->peers |= PEER_OPENMP;
                else if (strcmp(tok, "none"))
                    usage();
            }
            free(copy);
        } else if (!strcmp(a, "--chains")) {
            o->chains = (int)parse_long(v, 1);
        } else if (!strcmp(a, "--sched")) {
            o->sched = !strcmp(v, "ws") ? CASK_SCHED_WS
                     : !strcmp(v, "locality") ? CASK_SCHED_LOCALITY
                     : !strcmp(v, "eager") ? CASK_SCHED_EAGER : -2;
            if (o->sched == -2)
                usage();
        } else if (!strcmp(a, "--cases")) {
            for (int s = 0; s < NSHAPES; s++)
                o->cases[s] = 0;
            char *copy = strdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int s = 0; s < NSHAPES; s++)
                    if (!strcmp(tok, shape_names[s]))
                        o->cases[s] = found = 1;
                if (!found)
                    usage();
            }
            free(copy);
        } else {
            usage();
        }
    }
    if (o->chains > o->tasks)
        o->chains = (int)o->tasks;
}

/* Table rows, printed once all measurements are done so that they do not mix with the
 * JSON lines on a terminal. */
static char *table;
static size_t table_len, table_cap;

void bench_table_add(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    if (table_len + (size_t)n + 1 > table_cap) {
        size_t cap = table_cap ? table_cap * 2 : 4096;
        while (cap < table_len + (size_t)n + 1)
            cap *= 2;
        char *t = realloc(table, cap);
        if (!t)
            return;
        table = t;
        table_cap = cap;
    }
    memcpy(table + table_len, line, (size_t)n + 1);
    table_len += (size_t)n;
}

void bench_emit(const char *shape, int workers, const char *impl, long tasks, double sec,
                double ratio, long work_ns, const char *extra, int add_row)
{
    double tps = sec > 0 ? (double)tasks / sec : 0;
    double ns = tasks > 0 ? sec * 1e9 / (double)tasks : 0;
    printf("{\"bench\":\"sched\",\"case\":\"%s\",\"workers\":%d,\"impl\":\"%s\","
           "\"tasks\":%ld,\"seconds\":%.6g,\"tasks_per_s\":%.6g,\"ns_per_task\":%.4g",
           shape, workers, impl, tasks, sec, tps, ns);
    if (work_ns)
        printf(",\"work_ns\":%ld", work_ns);
    if (ratio > 0)
        printf(",\"ratio_vs_baseline\":%.4g", ratio);
    printf("%s}\n", extra ? extra : "");
    fflush(stdout);
    if (!add_row)
        return;
    char r[16] = "";
    if (ratio > 0)
        snprintf(r, sizeof r, "%.2f", ratio);
    bench_table_add("%-12s %7d  %-8s %10ld %11.6f %14.4g %10.1f %8s\n", shape, workers, impl, tasks,
              sec, tps, ns, r);
}

/* Iterations of the busy loop per nanosecond, measured on this thread. */
static double calibrate(void)
{
    work_iters = 10000000;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now_s();
        bench_empty_fn();
        double t = bench_now_s() - t0;
        if (t < best)
            best = t;
    }
    return (double)work_iters / (best * 1e9);
}

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);
    dag d = { 0 };
    if (o.cases[RANDOM] && make_dag(o.tasks, o.window, &d) != 0) {
        fprintf(stderr, "bench-sched: out of memory\n");
        return 1;
    }
    work_iters = 0;
    if (o.work_ns) {
        double per_ns = calibrate();
        work_iters = (uint64_t)(per_ns * (double)o.work_ns + 0.5);
    }
    if (o.bcd) {
        bench_bcd(&o, &d);
        goto out;
    }
    bench_table_add("%-12s %7s  %-8s %10s %11s %14s %10s %8s\n", "case", "workers", "impl", "tasks",
              "median s", "tasks/s", "ns/task", "cask/pth");
    for (int s = 0; s < NSHAPES; s++) {
        if (!o.cases[s])
            continue;
        for (int w = 0; w < o.nworkers; w++) {
            int workers = o.workers[w];
            long ntasks = 0;
            double base = bench_time_baseline((enum shape)s, workers, &o, &d);
            double cask = bench_time_cask((enum shape)s, workers, &o, &d, &ntasks);
            bench_emit(shape_names[s], workers, "pthreads", ntasks, base, 0, o.work_ns, NULL, 1);
            bench_emit(shape_names[s], workers, "cask", ntasks, cask, base > 0 ? cask / base : 0,
                       o.work_ns, NULL, 1);
        }
    }
out:
    if (o.cases[RANDOM])
        free_dag(&d);
    if (!o.json_only && table) {
        if (o.work_ns)
            fprintf(stderr, "tasks busy for about %ld ns each\n", o.work_ns);
        fputs(table, stderr);
    }
    free(table);
    return 0;
}
