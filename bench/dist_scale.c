/* bench/dist_scale.c: what joining a job and running a first distributed graph cost
 * each rank, as the number of ranks grows (public API only: cask/distributed.h).
 *
 *   mpirun -n P [--oversubscribe] build/bench/bench-dist-scale [--idle S] [--bytes B]
 *          [--computes K] [--json FILE] [--label L]
 *          [--limit-idle-cpu PCT] [--limit-rss MIB] [--limit-init-ms MS]
 *   bench/dist_scale.sh 2 4 8 16 32          (the curve, one launch per rank count)
 *
 * Each rank measures, in this order:
 *   init       wall time of cask_dist_init (launcher fence, UCX worker, one endpoint
 *              per peer, the HELLO handshake with every peer); a rank that starts late
 *              makes the others wait, so the slowest rank is the job's setup time
 *   barrier    one cask_dist_barrier after init (every rank to every rank)
 *   plan       cask_dist_graph_plan of a ring graph (each rank owns x[r] and y[r],
 *              fills x[r], y[r] = x[r] + x[r+1 mod P] (one chunk from its neighbour),
 *              y[0] += y[i] as a binary tree, y[0] gathered on rank 0): placement, and
 *              the PLAN message to every rank agreeing that all built the same graph
 *   first      the first compute of that graph; steady: median of the next K
 *   idle cpu   CPU time (user + system, getrusage) this process spends while its
 *              thread sleeps S seconds: the progress thread's heartbeats, credit
 *              returns and liveness checks, in % of one core
 *   memory     VmRSS after cask_init (before the distributed layer), after
 *              cask_dist_init, after the first compute, after the steady computes;
 *              VmHWM at the end (/proc/self/status)
 *   fds, threads  open file descriptors (/proc/self/fd) and threads of the process
 *              after the first compute (UCX endpoints, progress and UCX threads)
 * Rank 0 checks the result against plain C, collects every rank's figures with a
 * second graph (each rank's figures are a datum it owns, gathered on rank 0) and prints
 * one row: the median and the largest value over the ranks, then one JSON object per
 * figure (also appended to --json FILE). The --limit options make it a test (suite dist,
 * at 32 ranks): exit 1 when some rank's idle CPU, RSS after the computes or init time
 * passed the limit (a heartbeat storm, memory that grows with the peers). */
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cask/cask.h"
#include "common/timing.h"

enum {
    F_INIT, F_BARRIER, F_PLAN, F_FIRST, F_STEADY, F_IDLE, F_RSS_RT, F_RSS_DIST, F_RSS_FIRST,
    F_RSS_STEADY, F_HWM, F_FDS, F_THREADS, NFIG
};
static const struct { const char *name, *unit; } figs[NFIG] = {
    [F_INIT] = { "init", "ms" },           [F_BARRIER] = { "barrier", "ms" },
    [F_PLAN] = { "plan", "ms" },           [F_FIRST] = { "first_compute", "ms" },
    [F_STEADY] = { "compute", "ms" },      [F_IDLE] = { "idle_cpu", "%" },
    [F_RSS_RT] = { "rss_runtime", "MiB" }, [F_RSS_DIST] = { "rss_dist_init", "MiB" },
    [F_RSS_FIRST] = { "rss_first", "MiB" }, [F_RSS_STEADY] = { "rss_steady", "MiB" },
    [F_HWM] = { "hwm", "MiB" },           [F_FDS] = { "fds", "files" },
    [F_THREADS] = { "threads", "threads" },
};

static int me = -1;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench-dist-scale [rank %d]: %s: %s\n", me, what, why);
    exit(1);
}

static void check(cask_status st, const char *what, const char *why)
{
    if (st != CASK_OK)
        die(what, why && *why ? why : cask_status_string(st));
}

/* A field of /proc/self/status in MiB (-1 where it cannot be read). */
static double status_mib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    double v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtod(line + n + 1, NULL) / 1024.0;   /* kB */
            break;
        }
    fclose(f);
    return v;
}

static double open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;   /* the one opendir holds */
}

static cask_status k_fill(cask_task_ctx *ctx)
{
    double *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *x;
    int64_t seed;
    memcpy(&seed, cask_task_args(ctx, NULL), sizeof seed);
    for (size_t k = 0; k < n; k++)
        x[k] = (double)(seed * 1000 + (int64_t)(k % 977));
    return CASK_OK;
}

/* [0] W = [1] R + [2] R */
static cask_status k_sum2(cask_task_ctx *ctx)
{
    double *y = cask_task_buffer(ctx, 0);
    const double *a = cask_task_buffer(ctx, 1), *b = cask_task_buffer(ctx, 2);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *y;
    for (size_t k = 0; k < n; k++)
        y[k] = a[k] + b[k];
    return CASK_OK;
}

/* [0] RW += [1] R */
static cask_status k_acc(cask_task_ctx *ctx)
{
    double *y = cask_task_buffer(ctx, 0);
    const double *x = cask_task_buffer(ctx, 1);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *y;
    for (size_t k = 0; k < n; k++)
        y[k] += x[k];
    return CASK_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct opts {
    double idle_s;
    size_t bytes;
    int computes;
    const char *json, *label;
    double limit_idle, limit_rss, limit_init;   /* 0: none */
} opts;

static void usage(void)
{
    fprintf(stderr, "usage: bench-dist-scale [--idle S] [--bytes B] [--computes K] "
                    "[--json FILE] [--label L]\n"
                    "       [--limit-idle-cpu PCT] [--limit-rss MIB] [--limit-init-ms MS]\n");
    exit(2);
}

static void parse(int argc, char **argv, opts *o)
{
    *o = (opts){ .idle_s = 2.0, .bytes = 64 * 1024, .computes = 5, .json = NULL,
                 .label = "" };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (!strcmp(a, "--idle"))
            o->idle_s = atof(v);
        else if (!strcmp(a, "--bytes"))
            o->bytes = (size_t)strtoull(v, NULL, 0);
        else if (!strcmp(a, "--computes"))
            o->computes = atoi(v);
        else if (!strcmp(a, "--json"))
            o->json = v;
        else if (!strcmp(a, "--label"))
            o->label = v;
        else if (!strcmp(a, "--limit-idle-cpu"))
            o->limit_idle = atof(v);
        else if (!strcmp(a, "--limit-rss"))
            o->limit_rss = atof(v);
        else if (!strcmp(a, "--limit-init-ms"))
            o->limit_init = atof(v);
        else
            usage();
        i++;
    }
    if (o->idle_s < 0 || o->bytes < sizeof(double) || o->computes < 1)
        usage();
    o->bytes -= o->bytes % sizeof(double);
}

static void add(cask_dist_graph *g, cask_kernel *k, cask_access *acc, size_t n,
                const void *args, size_t nargs)
{
    cask_task_desc d = { .field_mask = nargs ? CASK_TASK_ARGS : 0, .kernel = k,
                         .access = acc, .naccess = n, .args = args, .args_size = nargs };
    check(cask_dist_graph_add_task(g, &d, NULL), "cask_dist_graph_add_task",
          cask_dist_graph_error(g));
}

/* The measured graph; returns the gathered y[0] on rank 0 (NULL elsewhere). */
static double *ring_graph(cask_dist *dist, const opts *o, cask_kernel *fill,
                          cask_kernel *sum2, cask_kernel *acc, double fig[NFIG])
{
    int P = cask_dist_size(dist);
    size_t n = o->bytes / sizeof(double);
    cask_data **x = calloc((size_t)P, sizeof *x), **y = calloc((size_t)P, sizeof *y);
    if (!x || !y)
        die("ring graph", "out of memory");
    for (int r = 0; r < P; r++) {
        check(cask_dist_data_create(dist, o->bytes, r, NULL, &x[r]), "cask_dist_data_create",
              cask_dist_error(dist));
        check(cask_dist_data_create(dist, o->bytes, r, NULL, &y[r]), "cask_dist_data_create",
              cask_dist_error(dist));
    }
    cask_dist_graph *g;
    check(cask_dist_graph_create(dist, &g), "cask_dist_graph_create", cask_dist_error(dist));
    for (int r = 0; r < P; r++) {
        int64_t seed = r;
        cask_access a[1] = { { x[r], CASK_WRITE } };
        add(g, fill, a, 1, &seed, sizeof seed);
    }
    for (int r = 0; r < P; r++) {
        cask_access a[3] = { { y[r], CASK_WRITE }, { x[r], CASK_READ },
                             { x[(r + 1) % P], CASK_READ } };
        add(g, sum2, a, 3, NULL, 0);
    }
    for (int step = 1; step < P; step *= 2)
        for (int r = 0; r + step < P; r += 2 * step) {
            cask_access a[2] = { { y[r], CASK_RW }, { y[r + step], CASK_READ } };
            add(g, acc, a, 2, NULL, 0);
        }
    double *out = me == 0 ? calloc(n, sizeof *out) : NULL;
    if (me == 0 && !out)
        die("ring graph", "out of memory");
    check(cask_dist_graph_gather(g, y[0], 0, out), "cask_dist_graph_gather",
          cask_dist_graph_error(g));

    double t = bench_now_s();
    check(cask_dist_graph_plan(g), "cask_dist_graph_plan", cask_dist_graph_error(g));
    fig[F_PLAN] = 1e3 * (bench_now_s() - t);
    t = bench_now_s();
    check(cask_dist_graph_compute(g), "first cask_dist_graph_compute", cask_dist_graph_error(g));
    fig[F_FIRST] = 1e3 * (bench_now_s() - t);
    fig[F_RSS_FIRST] = status_mib("VmRSS");
    fig[F_FDS] = open_fds();
    fig[F_THREADS] = status_mib("Threads") * 1024.0;
    double *ts = malloc((size_t)o->computes * sizeof *ts);
    if (!ts)
        die("ring graph", "out of memory");
    for (int i = 0; i < o->computes; i++) {
        t = bench_now_s();
        check(cask_dist_graph_compute(g), "cask_dist_graph_compute", cask_dist_graph_error(g));
        ts[i] = 1e3 * (bench_now_s() - t);
    }
    qsort(ts, (size_t)o->computes, sizeof *ts, cmp_double);
    fig[F_STEADY] = ts[o->computes / 2];
    fig[F_RSS_STEADY] = status_mib("VmRSS");
    free(ts);
    check(cask_dist_graph_destroy(g), "cask_dist_graph_destroy", "");
    free(x);
    free(y);
    return out;
}

/* y[0] as plain C computes it: sum over r of (x[r] + x[r+1 mod P]) = 2 * sum of x[r]. */
static int verify(const double *got, int P, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        double want = 0;
        for (int r = 0; r < P; r++)
            want += 2.0 * (double)(r * 1000 + (int64_t)(k % 977));
        if (got[k] != want) {
            fprintf(stderr, "bench-dist-scale: y[0][%zu] = %.17g, expected %.17g\n", k,
                    got[k], want);
            return 0;
        }
    }
    return 1;
}

/* Every rank's figures on rank 0 (all[r * NFIG + f]); NULL elsewhere. */
/* mine (NFIG doubles) becomes a registered handle: it must live until
 * cask_dist_finalize. */
static double *collect(cask_dist *dist, double *mine)
{
    int P = cask_dist_size(dist);
    double *all = me == 0 ? calloc((size_t)P * NFIG, sizeof *all) : NULL;
    cask_data **d = calloc((size_t)P, sizeof *d);
    if ((me == 0 && !all) || !d)
        die("collect", "out of memory");
    cask_dist_graph *g;
    check(cask_dist_graph_create(dist, &g), "cask_dist_graph_create", cask_dist_error(dist));
    for (int r = 0; r < P; r++) {
        check(cask_dist_data_create(dist, NFIG * sizeof(double), r, r == me ? mine : NULL,
                                    &d[r]), "cask_dist_data_create", cask_dist_error(dist));
        check(cask_dist_graph_gather(g, d[r], 0, all ? all + (size_t)r * NFIG : NULL),
              "cask_dist_graph_gather", cask_dist_graph_error(g));
    }
    check(cask_dist_graph_compute(g), "collect: cask_dist_graph_compute",
          cask_dist_graph_error(g));
    check(cask_dist_graph_destroy(g), "cask_dist_graph_destroy", "");
    free(d);
    return all;
}

/* Whether every rank kept within the --limit options; says which did not. */
static int within_limits(const opts *o, int P, const double *all)
{
    static const struct { int fig; size_t off; } lim[] = {
        { F_IDLE, offsetof(opts, limit_idle) }, { F_RSS_STEADY, offsetof(opts, limit_rss) },
        { F_INIT, offsetof(opts, limit_init) } };
    int ok = 1;
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        double l = *(const double *)((const char *)o + lim[i].off);
        for (int r = 0; l > 0 && r < P; r++) {
            double v = all[(size_t)r * NFIG + lim[i].fig];
            if (v > l) {
                fprintf(stderr, "bench-dist-scale: rank %d of %d: %s %.3g %s, over the limit "
                        "%.3g\n", r, P, figs[lim[i].fig].name, v, figs[lim[i].fig].unit, l);
                ok = 0;
            }
        }
    }
    return ok;
}

static void report(const opts *o, int P, const double *all, double wall_s)
{
    double *v = malloc((size_t)P * sizeof *v);
    double med[NFIG], max[NFIG];
    for (int f = 0; f < NFIG; f++) {
        for (int r = 0; r < P; r++)
            v[r] = all[(size_t)r * NFIG + f];
        qsort(v, (size_t)P, sizeof *v, cmp_double);
        med[f] = v[P / 2];
        max[f] = v[P - 1];
    }
    free(v);
    printf("%5s %15s %13s %13s %13s %13s %11s %7s %7s %13s %13s %13s %4s %3s\n", "ranks", "init ms",
           "barrier ms", "plan ms", "first ms", "compute ms", "idle %cpu", "rss rt", "+dist",
           "rss first", "rss steady", "hwm MiB", "fds", "thr");
    printf("%5d %7.1f %7.1f %6.2f %6.2f %6.2f %6.2f %6.1f %6.1f %6.2f %6.2f %5.2f %5.2f"
           " %7.1f %7.1f %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f %4.0f %3.0f\n",
           P, med[F_INIT], max[F_INIT], med[F_BARRIER], max[F_BARRIER], med[F_PLAN],
           max[F_PLAN], med[F_FIRST], max[F_FIRST], med[F_STEADY], max[F_STEADY],
           med[F_IDLE], max[F_IDLE], med[F_RSS_RT], med[F_RSS_DIST] - med[F_RSS_RT],
           med[F_RSS_FIRST], max[F_RSS_FIRST], med[F_RSS_STEADY], max[F_RSS_STEADY],
           med[F_HWM], max[F_HWM], max[F_FDS], max[F_THREADS]);
    printf("(median/largest over the ranks; whole run %.2f s)\n", wall_s);
    FILE *jf = o->json ? fopen(o->json, "a") : NULL;
    if (o->json && !jf)
        fprintf(stderr, "bench-dist-scale: cannot append to %s\n", o->json);
    for (int f = 0; f < NFIG; f++) {
        char line[512];
        /* case and impl, as every bench's JSON lines: one figure, one label */
        snprintf(line, sizeof line, "{\"bench\":\"dist_scale\",\"label\":\"%s\",\"ranks\":%d,"
                 "\"figure\":\"%s\",\"unit\":\"%s\",\"median\":%.4g,\"max\":%.4g,"
                 "\"bytes\":%zu,\"idle_s\":%.3g,\"case\":\"%s (%s)\",\"impl\":\"%s\"}",
                 o->label, P, figs[f].name, figs[f].unit, med[f], max[f], o->bytes, o->idle_s,
                 figs[f].name, figs[f].unit, *o->label ? o->label : "cask");
        puts(line);
        if (jf)
            fprintf(jf, "%s\n", line);
    }
    if (jf)
        fclose(jf);
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    double t_start = bench_now_s();
    double fig[NFIG] = { 0 };
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = 1, .bind = 0, .ngpu = 0 };
    cask_runtime *rt;
    check(cask_init(&cfg, &rt), "cask_init", "");
    char err[1024];
    fig[F_RSS_RT] = status_mib("VmRSS");

    double t = bench_now_s();
    cask_dist *dist;
    cask_status st = cask_dist_init(rt, NULL, &dist);
    fig[F_INIT] = 1e3 * (bench_now_s() - t);
    cask_runtime_error(rt, err, sizeof err);
    check(st, "cask_dist_init", err);
    fig[F_RSS_DIST] = status_mib("VmRSS");
    me = cask_dist_rank(dist);
    int P = cask_dist_size(dist);

    t = bench_now_s();
    check(cask_dist_barrier(dist), "cask_dist_barrier", cask_dist_error(dist));
    fig[F_BARRIER] = 1e3 * (bench_now_s() - t);

    double c0 = bench_cpu_s(), w0 = bench_now_s();
    struct timespec nap = { (time_t)o.idle_s, (long)((o.idle_s - floor(o.idle_s)) * 1e9) };
    nanosleep(&nap, NULL);
    double idle_wall = bench_now_s() - w0;
    fig[F_IDLE] = idle_wall > 0 ? 100.0 * (bench_cpu_s() - c0) / idle_wall : 0;

    cask_kernel_desc kf = { .name = "fill", .cpu = k_fill }, ks = { .name = "sum2", .cpu = k_sum2 },
                     ka = { .name = "acc", .cpu = k_acc };
    cask_kernel *fill, *sum2, *acc;
    check(cask_kernel_register(rt, &kf, &fill), "cask_kernel_register fill", "");
    check(cask_kernel_register(rt, &ks, &sum2), "cask_kernel_register sum2", "");
    check(cask_kernel_register(rt, &ka, &acc), "cask_kernel_register acc", "");
    double *y0 = ring_graph(dist, &o, fill, sum2, acc, fig);
    int ok = me != 0 || verify(y0, P, o.bytes / sizeof(double));
    fig[F_HWM] = status_mib("VmHWM");
    double *all = collect(dist, fig);   /* fig stays registered until finalize */
    if (me == 0 && ok) {
        report(&o, P, all, bench_now_s() - t_start);
        ok = within_limits(&o, P, all);
    }
    check(cask_dist_finalize(dist), "cask_dist_finalize", "");
    check(cask_shutdown(rt), "cask_shutdown", "");
    free(y0);
    free(all);
    return ok ? 0 : 1;
}
