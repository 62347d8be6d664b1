/* main.c: the cask-knn command line. Exact 1-nearest-neighbour search by great-circle
 * distance: for each observation, the nearest reference and its distance. Parses the
 * options, starts the runtime, loads (points.h) or generates the points, runs the task
 * graph (knn_graph.h), optionally checks a sample against a float64 brute force, writes
 * the result all-or-nothing and prints a summary on stderr. See docs/knn.md.
 *
 * Under a launcher (mpirun -n P, srun --mpi=pmix) the P processes join one job and run
 * the search as one distributed graph (knn_dist.h): every rank loads the input, rank 0
 * checks, writes the output and prints the summary; the output is the same bytes as a
 * single process's. Without a launcher the job has one process and nothing differs.
 *
 * Exit status: 0 success, 1 bad data or a failure while running, 2 bad command line,
 * 3 --check found errors above its limits. */
#include <errno.h>
#include <getopt.h>
#include "cask/dist.h"
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cask/cask.h"
#include "auto_method.h"
#include "check.h"
#include "generate.h"
#include "knn_chunks.h"
#include "knn_dist.h"
#include "knn_graph.h"
#include "kout.h"
#include "main_stream.h"
#include "points.h"
#include "write_par.h"

enum { EXIT_DATA = 1, EXIT_USAGE = 2, EXIT_CHECK = 3 };
/* Default reference chunk of the k kernels: 2048 tiles of 128 (KNN_SORT_MAX_TILES). */
#define KNN_PRUNE_REF_CHUNK ((int64_t)1 << 18)
enum { CASK_MAX_GPUS_APP = 64 };
/* A CSV observation file larger than this is streamed unless --no-stream (it is scanned
 * anyway to count its rows, so it is not read twice for nothing). */
#define KNN_CSV_STREAM_BYTES ((long long)256 << 20)

typedef struct options {
    const char *obs_path, *ref_path, *out_path, *dot_path;
    const char *lat_col, *lon_col;
    int radians, wrap, quiet, cpu_only;
    int gpus;          /* -2 unset, -1 all, else count */
    int threads;       /* 0 unset */
    int generate;
    int64_t gen_n, gen_m;
    uint64_t seed;
    int64_t chunk, ref_chunk; /* 0 = default */
    int km;
    int64_t check;
    int repeat;
    int stream;        /* -1 auto, 0 off, 1 on */
    int64_t window;    /* observation rows per streamed window */
    int k;             /* neighbours per observation */
    int method;        /* KNN_METHOD_* */
    int64_t clusters;  /* --generate: blobs, 0 = uniform */
} options;

enum { KNN_METHOD_AUTO, KNN_METHOD_BRUTE, KNN_METHOD_PRUNED };
static const char *const method_names[] = {"auto", "brute", "pruned"};

static const char *prog = "cask-knn";

static void usage(FILE *f)
{
    fprintf(f,
"Usage: %s (--obs FILE --ref FILE | --generate N M [--seed S]) [options]\n"
"Exact nearest references (great-circle distance) of every observation.\n"
"\n"
"Input:\n"
"  --obs FILE, --ref FILE  observations and references: CSV with a header row, or .npy\n"
"                          (float32/float64, shape (N, 2): latitude, longitude)\n"
"  --lat-col NAME          CSV latitude column (default: lat or latitude, any case)\n"
"  --lon-col NAME          CSV longitude column (default: lon, lng, long or longitude)\n"
"  --radians               input values are radians (default: degrees)\n"
"  --wrap                  wrap longitudes outside [-180, 180] instead of rejecting them\n"
"  --generate N M          N observations and M references uniform on the sphere\n"
"  --seed S                seed of --generate (default 0)\n"
"  --clusters C            --generate a mixture of C Gaussian blobs instead of uniform\n"
"Search:\n"
"  --k K                   the K nearest references, nearest first (1..%d, default 1)\n"
"  --method auto|brute|pruned  brute force, or skip reference tiles that cannot hold a\n"
"                          neighbour (same results); auto prunes unless the data defeat\n"
"                          it (default auto)\n"
"Output:\n"
"  --out FILE              results: CSV (obs,ref_index,distance) or, if FILE ends in .npy,\n"
"                          an (N, 2) float64 array of rows [ref_index, distance]; with\n"
"                          --k K > 1: CSV obs,rank,ref_index,distance (rank 1 nearest),\n"
"                          one row per (obs, rank), or .npy of shape (N, K, 2)\n"
"  --units km|rad          distance unit (default km, Earth radius %.4f km)\n"
"  -q, --quiet             no summary on stderr\n"
"Execution:\n"
"  --gpus N|all            GPUs to use (default: all there are)\n"
"  --cpu-only              use no GPU\n"
"  --threads N             CPU worker threads (default: all cores)\n"
"  --chunk ROWS            observation rows per task (default: from the sizes)\n"
"  --ref-chunk ROWS        reference rows per chunk (default: all in one)\n"
"  --repeat R              run the computation R times, report the median time\n"
"  --check K               compare K observations with a float64 brute force; exit 3 if\n"
"                          the relative error passes 1e-6 (chosen reference) or 1e-5\n"
"                          (reported distance)\n"
"  --dot FILE              write the task graph in Graphviz dot\n"
"  --stream, --no-stream   read observations and write results window by window\n"
"                          (default: when the file has more rows than a window)\n"
"  --window ROWS           observation rows per streamed window (default 2^24)\n"
"  -h, --help, --version\n"
"Counts accept powers such as 2^24. Exit status: 0 ok, 1 data or run error,\n"
"2 usage error, 3 check failed.\n",
            prog, CASK_KNN_KMAX, CASK_EARTH_RADIUS_KM);
}

__attribute__((format(printf, 1, 2), noreturn))
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", prog);
    exit(EXIT_USAGE);
}

/* A positive count: decimal digits, or B^E. */
static int parse_count(const char *s, int64_t min, int64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == '^') {
        const char *e = end + 1;
        if (!*e || *e == '-' || *e == '+' || *e == ' ')
            return -1;
        long long x = strtoll(e, &end, 10);
        if (errno || end == e || x > 62)
            return -1;
        long long p = 1;
        for (long long i = 0; i < x; i++) {
            if (p > LLONG_MAX / (v ? v : 1))
                return -1;
            p *= v;
        }
        v = p;
    }
    if (*end || v < min)
        return -1;
    *out = v;
    return 0;
}

static int64_t need_count(const char *opt, const char *s, int64_t min)
{
    int64_t v;
    if (parse_count(s, min, &v))
        usage_error("%s: '%s' is not an integer >= %lld", opt, s ? s : "", (long long)min);
    return v;
}

static void parse_args(int argc, char **argv, options *o)
{
    enum {
        O_OBS = 256, O_REF, O_OUT, O_LATCOL, O_LONCOL, O_RADIANS, O_WRAP, O_GENERATE,
        O_SEED, O_UNITS, O_GPUS, O_CPU_ONLY, O_THREADS, O_CHUNK, O_REF_CHUNK, O_REPEAT,
        O_CHECK, O_DOT, O_VERSION, O_STREAM, O_NO_STREAM, O_WINDOW, O_K, O_METHOD,
        O_CLUSTERS
    };
    static const struct option longs[] = {
        {"obs", required_argument, 0, O_OBS},
        {"ref", required_argument, 0, O_REF},
        {"out", required_argument, 0, O_OUT},
        {"lat-col", required_argument, 0, O_LATCOL},
        {"lon-col", required_argument, 0, O_LONCOL},
        {"radians", no_argument, 0, O_RADIANS},
        {"wrap", no_argument, 0, O_WRAP},
        {"generate", required_argument, 0, O_GENERATE},
        {"seed", required_argument, 0, O_SEED},
        {"units", required_argument, 0, O_UNITS},
        {"gpus", required_argument, 0, O_GPUS},
        {"cpu-only", no_argument, 0, O_CPU_ONLY},
        {"threads", required_argument, 0, O_THREADS},
        {"chunk", required_argument, 0, O_CHUNK},
        {"ref-chunk", required_argument, 0, O_REF_CHUNK},
        {"repeat", required_argument, 0, O_REPEAT},
        {"check", required_argument, 0, O_CHECK},
        {"dot", required_argument, 0, O_DOT},
        {"stream", no_argument, 0, O_STREAM},
        {"no-stream", no_argument, 0, O_NO_STREAM},
        {"window", required_argument, 0, O_WINDOW},
        {"k", required_argument, 0, O_K},
        {"method", required_argument, 0, O_METHOD},
        {"clusters", required_argument, 0, O_CLUSTERS},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0}};
    int seed_set = 0;

    memset(o, 0, sizeof *o);
    o->gpus = -2;
    o->km = 1;
    o->repeat = 1;
    o->stream = -1;
    o->window = (int64_t)1 << 24;
    o->k = 1;
    o->method = KNN_METHOD_AUTO;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "+:qh", longs, NULL);
        if (c == -1)
            break;
        switch (c) {
        case O_OBS: o->obs_path = optarg; break;
        case O_REF: o->ref_path = optarg; break;
        case O_OUT: o->out_path = optarg; break;
        case O_DOT: o->dot_path = optarg; break;
        case O_LATCOL: o->lat_col = optarg; break;
        case O_LONCOL: o->lon_col = optarg; break;
        case O_RADIANS: o->radians = 1; break;
        case O_WRAP: o->wrap = 1; break;
        case 'q': o->quiet = 1; break;
        case O_CPU_ONLY: o->cpu_only = 1; break;
        case O_GENERATE: {
            const char *comma = strchr(optarg, ',');
            char nbuf[64];
            const char *m;
            if (comma) {
                snprintf(nbuf, sizeof nbuf, "%.*s", (int)(comma - optarg), optarg);
                m = comma + 1;
            } else {
                snprintf(nbuf, sizeof nbuf, "%s", optarg);
                if (optind >= argc)
                    usage_error("--generate needs two counts: N M");
                m = argv[optind++];
            }
            o->generate = 1;
            o->gen_n = need_count("--generate N", nbuf, 1);
            o->gen_m = need_count("--generate M", m, 1);
            break;
        }
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 0);
            if (errno || end == optarg || *end || optarg[0] == '-')
                usage_error("--seed: '%s' is not a non-negative integer", optarg);
            o->seed = v;
            seed_set = 1;
            break;
        }
        case O_UNITS:
            if (strcasecmp(optarg, "km") == 0)
                o->km = 1;
            else if (strcasecmp(optarg, "rad") == 0 || strcasecmp(optarg, "radians") == 0)
                o->km = 0;
            else
                usage_error("--units: '%s' is not km or rad", optarg);
            break;
        case O_GPUS:
            if (strcasecmp(optarg, "all") == 0)
                o->gpus = -1;
            else
                o->gpus = (int)need_count("--gpus", optarg, 0);
            break;
        case O_THREADS: {
            int64_t v = need_count("--threads", optarg, 1);
            if (v > 4096)
                usage_error("--threads: %lld is too many", (long long)v);
            o->threads = (int)v;
            break;
        }
        case O_CHUNK: o->chunk = need_count("--chunk", optarg, 1); break;
        case O_REF_CHUNK: o->ref_chunk = need_count("--ref-chunk", optarg, 1); break;
        case O_REPEAT: {
            int64_t v = need_count("--repeat", optarg, 1);
            if (v > 100000)
                usage_error("--repeat: %lld is too many", (long long)v);
            o->repeat = (int)v;
            break;
        }
        case O_CHECK: o->check = need_count("--check", optarg, 1); break;
        case O_STREAM: o->stream = 1; break;
        case O_NO_STREAM: o->stream = 0; break;
        case O_WINDOW: o->window = need_count("--window", optarg, 1); break;
        case O_K: {
            int64_t v = need_count("--k", optarg, 1);
            if (v > CASK_KNN_KMAX)
                usage_error("--k: %lld is more than %d", (long long)v, CASK_KNN_KMAX);
            o->k = (int)v;
            break;
        }
        case O_METHOD: {
            int found = -1;
            for (int i = 0; i < 3; i++)
                if (strcasecmp(optarg, method_names[i]) == 0)
                    found = i;
            if (found < 0)
                usage_error("--method: '%s' is not auto, brute or pruned", optarg);
            o->method = found;
            break;
        }
        case O_CLUSTERS: o->clusters = need_count("--clusters", optarg, 1); break;
        case 'h':
            usage(stdout);
            exit(0);
        case O_VERSION:
        {
            char ucx[256];
            cask_dist_transport_describe(ucx, sizeof ucx);
            printf("cask-knn (cask %d.%d.%d)\nbetween processes: %s\n", CASK_VERSION_MAJOR,
                   CASK_VERSION_MINOR, CASK_VERSION_PATCH, ucx);
            exit(0);
        }
        case ':':
            usage_error("%s needs a value", argv[optind - 1]);
        default:
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (o->generate) {
        if (o->obs_path || o->ref_path)
            usage_error("--generate replaces --obs and --ref: give one or the other");
        if (o->lat_col || o->lon_col || o->radians || o->wrap)
            usage_error("--lat-col, --lon-col, --radians and --wrap apply to input files, "
                        "not to --generate");
    } else {
        if (seed_set || o->clusters)
            usage_error("--seed and --clusters apply to --generate only");
        if (!o->obs_path || !o->ref_path)
            usage_error("give --obs FILE and --ref FILE, or --generate N M");
    }
    if (o->stream == 1 && o->generate)
        usage_error("--stream reads an observation file: not with --generate");
    if (o->stream == 1 && (o->k > 1 || o->method == KNN_METHOD_PRUNED))
        usage_error("--stream supports --k 1 and --method brute or auto (brute) only");
    if (o->stream == 1 && (o->repeat > 1 || o->dot_path))
        usage_error("--repeat and --dot apply to the in-memory path, not to --stream");
    if (o->cpu_only && o->gpus != -2)
        usage_error("--cpu-only and --gpus exclude each other");
    if (o->cpu_only)
        o->gpus = 0;
    if (o->out_path && !*o->out_path)
        usage_error("--out: empty file name");
}

/* ---- the parts of main ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *host_alloc(void *ctx, size_t bytes)
{
    void *p = NULL;
    return cask_host_alloc(ctx, bytes, &p) ? NULL : p;
}

static void host_free(void *ctx, void *p)
{
    cask_host_free(ctx, p);
}

/* The temporary output file is removed if a signal ends the run. */
static volatile sig_atomic_t tmp_armed;
static char tmp_path_copy[4096];

static void on_signal(int sig)
{
    if (tmp_armed)
        unlink(tmp_path_copy);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Armed before the temporary file is made (its name is known: knn_outfile_open's
 * PATH.tmp.PID), so that a signal arriving while it is made still removes it. */
static void arm_cleanup(const char *out_path)
{
    snprintf(tmp_path_copy, sizeof tmp_path_copy, "%s.tmp.%ld", out_path, (long)getpid());
    tmp_armed = 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    options o;
    cask_runtime *rt = NULL;
    cask_runtime_info info = {0};
    cask_knn_kernels kernels;
    knn_points obs = {0}, ref = {0};
    knn_outfile out = {0};
    knn_job *job = NULL;
    knn_dist_job *djob = NULL;
    knn_cluster cl = {0};
    int devices[CASK_MAX_GPUS_APP];
    int ndevices = 0;
    int32_t *index = NULL;
    float *dist = NULL;
    double *times = NULL;
    char err[KNN_ERRLEN];
    int rc = EXIT_DATA;
    cask_status st;

    parse_args(argc, argv, &o);
    double scale = o.km ? CASK_EARTH_RADIUS_KM : 1.0;

    cask_config cfg = {0};
    cfg.field_mask |= CASK_CONFIG_PROGRESS;   /* cask-knn draws its own, labelled bar */
    cfg.progress = 0;
    if (o.gpus != -2) {
        cfg.field_mask |= CASK_CONFIG_NGPU;
        cfg.ngpu = o.gpus;
    }
    if (o.threads) {
        cfg.field_mask |= CASK_CONFIG_NCPU;
        cfg.ncpu = o.threads;
    }
    if ((st = cask_init(&cfg, &rt))) {
        fprintf(stderr, "%s: cannot start the runtime: %s\n", prog, cask_status_string(st));
        goto done;
    }
    if ((st = cask_runtime_query(rt, &info)) ||
        (st = cask_knn_kernels_register(rt, &kernels))) {
        cask_runtime_error(rt, err, sizeof err);
        fprintf(stderr, "%s: cannot start the runtime: %s%s%s\n", prog,
                cask_status_string(st), err[0] ? ": " : "", err);
        goto done;
    }
    knn_alloc alloc = {host_alloc, host_free, rt};
    if (knn_cluster_open(rt, &cl, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto done;
    }
    int rank = cl.rank, nranks = cl.size;
    if (rank != 0)
        o.quiet = 1;   /* rank 0 speaks for the job; the others report only errors */

    /* Until the ranks agree that all of them loaded their input, a failure is only
     * noted (failed, message in err): a rank that left alone would leave the others
     * waiting. With one process the message is printed as soon as it is known. */
    int failed = 0;
    /* Fail on an unwritable output before spending any time. */
    if (o.out_path && rank == 0) {
        arm_cleanup(o.out_path);
        if (knn_outfile_open(&out, o.out_path, err, sizeof err))
            failed = 1;
        else if (strcmp(out.tmp_path, tmp_path_copy))   /* the names must agree */
            snprintf(tmp_path_copy, sizeof tmp_path_copy, "%s", out.tmp_path);
    }

    /* ---- streamed: observations with more rows than a window, one process (a CSV
     * file is streamed when it is larger than KNN_CSV_STREAM_BYTES, or with --stream) */
    knn_read_opts ro = {o.lat_col, o.lon_col, !o.radians, o.wrap};
    if (!failed && !o.generate && nranks == 1 && o.stream != 0 && o.repeat == 1 &&
        !o.dot_path && o.k == 1 && o.method != KNN_METHOD_PRUNED) {
        int npy = knn_file_has_npy_magic(o.obs_path), try_it = o.stream == 1 || npy;
        struct stat sb;
        if (!npy && !try_it && stat(o.obs_path, &sb) == 0 && sb.st_size > KNN_CSV_STREAM_BYTES)
            try_it = 1;
        knn_obs_source src;
        if (!try_it) {
        } else if (knn_obs_source_open(o.obs_path, &ro, o.window, &src, err, sizeof err)) {
            failed = 1;
        } else if (o.stream == 1 || src.n > o.window || !npy) {
            knn_stream_main_args sa = {
                prog, rt, &info, &kernels, &alloc, &src, o.ref_path, ro, &ref, &out,
                o.window, o.chunk, o.ref_chunk, scale, o.quiet, o.check};
            rc = knn_stream_main(&sa);
            knn_obs_source_close(&src);
            tmp_armed = 0;
            goto done;
        } else {
            knn_obs_source_close(&src);
        }
    }

    /* ---- load ---- */
    double t0 = now_s();
    if (failed) {
    } else if (o.generate) {
        if (knn_points_alloc(o.gen_n, 1, 0, &alloc, &obs) ||
            knn_points_alloc(o.gen_m, 1, 0, &alloc, &ref)) {
            snprintf(err, sizeof err, "out of memory for %lld + %lld points",
                     (long long)o.gen_n, (long long)o.gen_m);
            failed = 1;
        } else {
            int64_t gchunk = o.gen_n / (4 * (info.ncpu_workers > 0 ? info.ncpu_workers : 1));
            if (gchunk < 65536)
                gchunk = 65536;
            failed = knn_generate_tasks(rt, o.seed, &obs, &ref, gchunk, o.clusters, err,
                                        sizeof err) != 0;
        }
    } else {
        failed = knn_points_read(o.obs_path, &ro, &alloc, &obs, err, sizeof err) ||
                 knn_points_read(o.ref_path, &ro, &alloc, &ref, err, sizeof err);
    }
    if (!failed && ref.n > INT32_MAX) {
        snprintf(err, sizeof err, "%s: %lld references: at most %d are supported (int32 index)",
                 o.generate ? "--generate" : o.ref_path, (long long)ref.n, INT32_MAX);
        failed = 1;
    }
    if (!failed && (rank == 0 || nranks == 1)) {   /* the results live on rank 0 */
        index = host_alloc(rt, (size_t)obs.n * (size_t)o.k * sizeof *index);
        dist = host_alloc(rt, (size_t)obs.n * (size_t)o.k * sizeof *dist);
        if (!index || !dist) {
            snprintf(err, sizeof err, "out of memory for %lld results", (long long)obs.n);
            failed = 1;
        }
    }
    times = calloc((size_t)o.repeat, sizeof *times);
    if (!failed && !times) {
        snprintf(err, sizeof err, "out of memory");
        failed = 1;
    }
    double t_load = now_s() - t0;

    /* ---- method: pruned or brute force ---- */
    int prune = 0;
    double auto_fraction = -1;
    if (!failed && nranks > 1 && (o.k > 1 || o.method == KNN_METHOD_PRUNED)) {
        snprintf(err, sizeof err, "--k > 1 and --method pruned run in one process only "
                                  "(not across processes yet)");
        failed = 1;
    } else if (!failed && o.method == KNN_METHOD_PRUNED) {
        prune = 1;
    }

    /* ---- compute ---- */
    knn_plan plan = {0};
    int64_t chunk = 0;
    if (!failed) {
        /* a GPU orders at most KNN_PRUNE_REF_CHUNK references' tiles per chunk */
        int maybe_k = o.k > 1 || prune || (o.method == KNN_METHOD_AUTO && nranks == 1);
        plan.ref_chunk = o.ref_chunk ? o.ref_chunk
                         : maybe_k && ref.n > KNN_PRUNE_REF_CHUNK ? KNN_PRUNE_REF_CHUNK : ref.n;
        int64_t nrefc = (ref.n + plan.ref_chunk - 1) / plan.ref_chunk;
        /* with P ranks, each rank's share is cut as one process would cut its input */
        chunk = o.chunk ? o.chunk
                        : knn_default_chunk((obs.n + nranks - 1) / nranks, nrefc, obs.f64, &info);
        /* K results per row: keep a chunk's buffers under 256 MiB */
        int64_t kcap = ((int64_t)256 << 20) /
                       ((int64_t)o.k * (8 + (nrefc > 1 ? 16 : 0)) + 20 + 16);
        if (!o.chunk && o.k > 1 && chunk > kcap)
            chunk = kcap / 256 * 256 > 1024 ? kcap / 256 * 256 : 1024;
        if (o.method == KNN_METHOD_AUTO && nranks == 1) {
            prune = knn_auto_prune(&obs, &ref, o.k, chunk, &auto_fraction);
            if (!prune && o.k == 1 && !o.ref_chunk)
                plan.ref_chunk = ref.n; /* the 1-NN kernels take any number */
        }
    }
    /* Every rank must build the same graph: the smallest proposed chunk wins. */
    int first_failed;
    if (knn_cluster_agree(&cl, failed, failed ? INT64_MAX : chunk, &first_failed, &chunk,
                          err, sizeof err)) {
        fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err);
        goto done;
    }
    if (first_failed >= 0) {
        if (first_failed == rank)
            fprintf(stderr, "%s: %s\n", prog, err);
        goto done;
    }
    plan.chunk = chunk;
    plan.scale = scale;
    plan.where = info.ngpus > 0 ? CASK_WHERE_GPU : CASK_WHERE_CPU;
    plan.k = o.k;
    plan.prune = prune;
    if (nranks == 1) {
        if (knn_job_create(rt, &kernels, &obs, &ref, index, dist, &plan, &job, err,
                           sizeof err)) {
            fprintf(stderr, "%s: %s\n", prog, err);
            goto done;
        }
    } else {
        /* GPUs of this node shared among its ranks: one each while there are enough
         * (local rank r on GPU r), else round robin; a rank alone on its node uses
         * them all as one process does. */
        int lr = cl.local_rank, ls = cl.local_size;
        if (info.ngpus > 0 && !info.simulated_gpus && ls > 1) {
            if (ls >= info.ngpus)
                devices[ndevices++] = lr % info.ngpus;
            else
                for (int g = lr; g < info.ngpus && ndevices < CASK_MAX_GPUS_APP; g += ls)
                    devices[ndevices++] = g;
        }
        /* A failure here is the same on every rank (same input, same plan). */
        if (knn_dist_job_create(&cl, &kernels, &obs, &ref, index, dist, &plan, devices,
                                ndevices, &djob, err, sizeof err)) {
            fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err);
            goto done;
        }
    }
    if (o.dot_path && job) {
        FILE *f = fopen(o.dot_path, "w");
        if (!f || knn_job_dot(job, f) || fclose(f)) {
            fprintf(stderr, "%s: %s: cannot write the graph: %s\n", prog, o.dot_path,
                    strerror(errno));
            goto done;
        }
    }
    for (int r = 0; r < o.repeat; r++) {
        if (r > 0 && (job ? knn_job_make_cold(job, err, sizeof err)
                          : knn_dist_job_make_cold(djob, err, sizeof err))) {
            fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err);
            goto done;
        }
        double t = now_s();
        cask_status rst = job ? knn_job_run(job, !o.quiet, err, sizeof err)
                              : knn_dist_job_run(djob, err, sizeof err);
        if (rst) {
            /* the same verdict on every rank: rank 0 tells; but a rank fenced out (or
             * cut off) after a loss fails alone, and says so */
            if (rank == 0 || rst == CASK_ERR_PEER)
                fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err);
            goto done;
        }
        times[r] = now_s() - t;
    }
    int64_t nobsc, nrc;
    size_t ntasks;
    if (job)
        knn_job_shape(job, &nobsc, &nrc, &ntasks);
    else
        knn_dist_job_shape(djob, &nobsc, &nrc, &ntasks);
    knn_job_destroy(job); /* results are in index/dist from here on */
    job = NULL;
    knn_dist_job_destroy(djob);
    djob = NULL;
    /* The job is over: leave it now, so that no rank waits for rank 0's check and
     * write (the results are in rank 0's host arrays). */
    if ((st = knn_cluster_close(&cl))) {
        fprintf(stderr, "%s: rank %d: leaving the job: %s\n", prog, rank,
                cask_status_string(st));
        goto done;
    }
    if (rank != 0) {   /* rank 0 checks, writes and reports */
        rc = 0;
        goto done;
    }
    qsort(times, (size_t)o.repeat, sizeof *times, cmp_double);
    double t_compute = o.repeat % 2 ? times[o.repeat / 2]
                                    : 0.5 * (times[o.repeat / 2 - 1] + times[o.repeat / 2]);

    /* ---- check ---- */
    int check_failed = 0;
    knn_check_report cr;
    if (o.check) {
        if (o.k > 1 ? knn_check_k(&obs, &ref, index, dist, o.k, scale, o.check, &cr)
                    : knn_check(&obs, &ref, index, dist, scale, o.check, &cr)) {
            fprintf(stderr, "%s: --check: out of memory\n", prog);
            goto done;
        }
        check_failed = cr.bad_index > 0 || cr.max_err_chosen > KNN_CHECK_TOL_CHOSEN ||
                       cr.max_err_reported > KNN_CHECK_TOL_REPORTED;
    }

    /* ---- write ---- */
    double t_write = 0;
    if (o.out_path && !check_failed) {
        t0 = now_s();
        int npy = knn_path_is_npy(o.out_path);
        if (o.k > 1)
            st = npy ? knn_knpy_write(out.f, o.out_path, index, dist, obs.n, o.k, err, sizeof err)
                     : knn_kcsv_write(out.f, o.out_path, index, dist, obs.n, o.k, err, sizeof err);
        else
            st = npy ? knn_npy_write(out.f, o.out_path, index, dist, obs.n, err, sizeof err)
                     : knn_csv_write_tasks(rt, out.f, o.out_path, index, dist, obs.n,
                                           info.ncpu_workers, err, sizeof err);
        if (!st)
            st = knn_outfile_commit(&out, err, sizeof err);
        tmp_armed = 0;
        if (st) {
            fprintf(stderr, "%s: %s\n", prog, err);
            goto done;
        }
        t_write = now_s() - t0;
    }

    if (!o.quiet) {
        char procs[64] = "";
        if (nranks > 1)
            snprintf(procs, sizeof procs, "%d processes x ", nranks);
        double pairs = (double)obs.n * (double)ref.n;
        fprintf(stderr, "%s: %lld observations x %lld references = %.4g pairs\n", prog,
                (long long)obs.n, (long long)ref.n, pairs);
        fprintf(stderr,
                "%s: %s%d GPU%s%s, %d CPU worker%s; %lld x %lld chunks of %lld x %lld rows, "
                "%zu tasks\n",
                prog, procs, info.ngpus, info.ngpus == 1 ? "" : "s",
                info.simulated_gpus && info.ngpus ? " (simulated)" : "", info.ncpu_workers,
                info.ncpu_workers == 1 ? "" : "s", (long long)nobsc, (long long)nrc,
                (long long)(plan.chunk < obs.n ? plan.chunk : obs.n),
                (long long)(plan.ref_chunk < ref.n ? plan.ref_chunk : ref.n), ntasks);
        fprintf(stderr, "%s: k = %d, method %s", prog, o.k, prune ? "pruned" : "brute");
        if (o.method == KNN_METHOD_AUTO && auto_fraction >= 0)
            fprintf(stderr, " (auto: about %.2g of the pairs to visit)", auto_fraction);
        fprintf(stderr, "\n");
        fprintf(stderr, "%s: time: %s %.3f s, compute %.3f s", prog,
                o.generate ? "generate" : "load", t_load, t_compute);
        if (o.repeat > 1)
            fprintf(stderr, " (median of %d, min %.3f, max %.3f)", o.repeat, times[0],
                    times[o.repeat - 1]);
        if (o.out_path)
            fprintf(stderr, ", write %.3f s", t_write);
        fprintf(stderr, "\n%s: %.4g pairs/s\n", prog, t_compute > 0 ? pairs / t_compute : 0);
    }
    if (o.check && (!o.quiet || check_failed))
        knn_check_print(stderr, prog, &cr);
    if (check_failed && o.out_path)
        fprintf(stderr, "%s: %s not written: the check failed\n", prog, o.out_path);
    rc = check_failed ? EXIT_CHECK : 0;

done:
    if (out.f) {
        tmp_armed = 0;
        knn_outfile_abort(&out);
    }
    knn_job_destroy(job);
    knn_dist_job_destroy(djob);
    /* The handles declared to the job go with it; then the memory they described. */
    knn_cluster_close(&cl);
    free(times);
    if (rt) {
        host_free(rt, index);
        host_free(rt, dist);
    }
    knn_points_free(&obs);
    knn_points_free(&ref);
    if (rt && (st = cask_shutdown(rt)) && rc == 0) {
        fprintf(stderr, "%s: shutting down: %s\n", prog, cask_status_string(st));
        rc = EXIT_DATA;
    }
    return rc;
}
