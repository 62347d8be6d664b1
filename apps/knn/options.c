/* options.c: cask-knn's command line (options.h). */
#include "options.h"
#include "out_compact.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cask/cask.h"
#include "cask/distributed.h"

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
"  --write-mode auto|inplace|gather  across ranks: each rank writes its own rows of\n"
"                          --out (inplace: FILE must be on a file system every rank\n"
"                          sees), or rank 0 gathers and writes them all; auto: in place\n"
"                          when every rank sees FILE (checked), else gather (default)\n"
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
"  --read-ahead W          streamed: windows read ahead of the one computing (default:\n"
"                          0 without --out, whose second window is the one read ahead;\n"
"                          with --out 2, fewer where W + 2 windows of observations and\n"
"                          results would hold more than 2 GiB; memory: W + 2 windows)\n"
"  --io-threads N          streamed: parallel reads and .npy writes of a window (default:\n"
"                          one a core, 8 to 16)\n"
"  --out-format F          .npy results: f64 ((N, 2) float64 [ref_index, distance], the\n"
"                          default) or compact (records of int32 index, float32 dist:\n"
"                          8 bytes a result instead of 16; one process)\n"
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
    exit(KNN_EXIT_USAGE);
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

void knn_parse_args(int argc, char **argv, options *o)
{
    enum {
        O_OBS = 256, O_REF, O_OUT, O_LATCOL, O_LONCOL, O_RADIANS, O_WRAP, O_GENERATE,
        O_SEED, O_UNITS, O_GPUS, O_CPU_ONLY, O_THREADS, O_CHUNK, O_REF_CHUNK, O_REPEAT,
        O_CHECK, O_DOT, O_VERSION, O_STREAM, O_NO_STREAM, O_WINDOW, O_K, O_METHOD,
        O_CLUSTERS, O_WRITE_MODE, O_OUT_FORMAT, O_READ_AHEAD, O_IO_THREADS
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
        {"write-mode", required_argument, 0, O_WRITE_MODE},
        {"out-format", required_argument, 0, O_OUT_FORMAT},
        {"read-ahead", required_argument, 0, O_READ_AHEAD},
        {"io-threads", required_argument, 0, O_IO_THREADS},
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
    o->out_format = KNN_OUT_F64;
    o->read_ahead = -1;   /* by the run: 0 without --out, else 2 or fewer (stream.c) */
    o->io_threads = 0;    /* by the machine, after the options */
    int format_set = 0;
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
        case O_OUT_FORMAT: {
            knn_out_format f;
            if (knn_out_format_parse(optarg, &f))
                usage_error("--out-format: '%s' is not compact or f64", optarg);
            o->out_format = (int)f;
            format_set = 1;
            break;
        }
        case O_READ_AHEAD: {
            int64_t v = need_count("--read-ahead", optarg, 0);
            if (v > 16)
                usage_error("--read-ahead: %lld windows is more than 16", (long long)v);
            o->read_ahead = (int)v;
            break;
        }
        case O_IO_THREADS: {
            int64_t v = need_count("--io-threads", optarg, 1);
            if (v > 64)
                usage_error("--io-threads: %lld is more than 64", (long long)v);
            o->io_threads = (int)v;
            break;
        }
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
        case O_WRITE_MODE: {
            cask_dist_write_mode m;
            if (cask_dist_write_mode_parse(optarg, &m))
                usage_error("--write-mode: '%s' is not auto, inplace or gather", optarg);
            o->write_mode = (int)m;
            break;
        }
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
    if (o->stream == 1 && (o->repeat > 1 || o->dot_path))
        usage_error("--repeat and --dot apply to the in-memory path, not to --stream");
    if (o->cpu_only && o->gpus != -2)
        usage_error("--cpu-only and --gpus exclude each other");
    if (o->cpu_only)
        o->gpus = 0;
    if (o->out_path && !*o->out_path)
        usage_error("--out: empty file name");
    if (format_set && (!o->out_path || !knn_path_is_npy(o->out_path)))
        usage_error("--out-format applies to .npy results (--out FILE.npy)");
    if (!o->io_threads) {
        /* one read in flight a core, 8 to 16: on the H200 host (16 cores) 8 reads of a
           2^24-row window from the page cache fell behind the search by 0.09-0.23 s over
           64 windows, 16 by 0.004-0.03 (bench/RESULTS.md, section 39) */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->io_threads = n < 8 ? 8 : n > 16 ? 16 : (int)n;
    }
}

