/* apps/chol/main.c: cask-chol, the tiled Cholesky factorization A = L L^T of a symmetric
 * positive definite matrix, and the solve A X = B that follows, through the public
 * array API only (cask_array_cholesky, cask_array_cho_solve; docs/linalg.md).
 *
 * The matrix is generated (n I + (R + R^T)/2) or read from a .npy file. It lives in
 * host memory from cask_host_alloc (pinned where there are GPUs, as a library call's
 * pinned copies would use), and the factor is computed into such memory too: the time
 * printed is host to host, copies included. --resident first keeps the matrix's tiles
 * where they are computed (on the GPU when there is one: a persisted array) and then
 * times the factorization alone, the factor kept there too. Prints the time (median of
 * --repeat after --warmup untimed runs), the rate counted as n^3/3 flops, and where the
 * tiles ran. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cask/cask.h"
#include "chol_app.h"


static void usage(FILE *f, const char *p)
{
    fprintf(f,
            "usage: %s [--n N] [--tile T] [--dtype f32|f64] [--in A.npy] [--out L.npy]\n"
            "          [--rhs K] [--check] [--cpu-only] [--gpus G] [--repeat R] [--warmup W]\n"
            "          [--resident] [--gpu-only] [--seed S] [--digest] [--grid PxQ] [--json]\n"
            "          [-q]\n"
            "  --n N        order of the generated matrix n I + (R + R^T)/2 (default 4096;\n"
            "               2^K accepted)\n"
            "  --tile T     tile size (default 512; the last tile may be smaller)\n"
            "  --dtype D    f32 or f64 (default f64)\n"
            "  --in A.npy   factor this matrix instead (2-D, square, <f4 or <f8; its lower\n"
            "               triangle is read)\n"
            "  --out L.npy  write the factor (zeros above the diagonal); nothing is left\n"
            "               behind if the factorization fails\n"
            "  --rhs K      also solve A X = B for K generated right-hand sides\n"
            "  --check      print ||A - L L^T||_F / (n ||A||_F) (and the solve's backward\n"
            "               error with --rhs), and fail past the bounds of docs/linalg.md\n"
            "  --cpu-only   CPU workers only; --gpus G: at most G GPUs; --gpu-only: every\n"
            "               tile on a GPU (else the cost model chooses, CASK_PERFMODEL)\n"
            "  --repeat R   timed runs (default 1), median printed; --warmup W untimed\n"
            "               runs first (default 1 when R > 1: the cost model calibrates)\n"
            "  --resident   the matrix kept where cask computes it (a persisted array, on\n"
            "               the GPU) before the clock starts; the factor stays there too\n"
            "  --digest     print a digest of the factor's bytes (compare runs, ranks)\n"
            "  --grid PxQ   across the ranks of a job (mpirun, srun, launch-local.sh): tiles\n"
            "               2-D block-cyclic on P x Q ranks (default: the most square)\n"
            "  --json       one JSON line of the figures\n"
            "Started as several ranks, the factorization runs across them (docs/linalg.md,\n"
            "\"Across ranks\"); --check, --rhs, --digest and --out then work on rank 0.\n",
            p);
}

static int parse_int(const char *s, int64_t *out)
{
    char *end;
    if (s[0] == '2' && s[1] == '^') {
        long e = strtol(s + 2, &end, 10);
        if (*end || e < 0 || e > 40) return -1;
        *out = (int64_t)1 << e;
        return 0;
    }
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < 0) return -1;
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, chol_opts *o)
{
    static const struct option lo[] = {
        {"n", 1, 0, 'n'}, {"tile", 1, 0, 't'}, {"dtype", 1, 0, 'd'}, {"in", 1, 0, 'i'},
        {"out", 1, 0, 'o'}, {"rhs", 1, 0, 'r'}, {"check", 0, 0, 'c'}, {"cpu-only", 0, 0, 'C'},
        {"gpus", 1, 0, 'g'}, {"gpu-only", 0, 0, 'G'}, {"repeat", 1, 0, 'R'}, {"warmup", 1, 0, 'w'},
        {"resident", 0, 0, 'P'}, {"seed", 1, 0, 's'}, {"json", 0, 0, 'j'},
        {"digest", 0, 0, 'D'}, {"grid", 1, 0, 'x'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}
    };
    *o = (chol_opts){ .n = 4096, .tile = 512, .dt = CASK_FLOAT64, .gpus = -1, .repeat = 1,
                 .warmup = -1, .seed = 1 };
    int c;
    int64_t v;
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case 'n': if (parse_int(optarg, &o->n) || o->n < 1) goto bad; break;
        case 't': if (parse_int(optarg, &o->tile) || o->tile < 1) goto bad; break;
        case 'd':
            if (!strcmp(optarg, "f64") || !strcmp(optarg, "float64")) o->dt = CASK_FLOAT64;
            else if (!strcmp(optarg, "f32") || !strcmp(optarg, "float32")) o->dt = CASK_FLOAT32;
            else goto bad;
            break;
        case 'i': o->in = optarg; break;
        case 'o': o->out = optarg; break;
        case 'r': if (parse_int(optarg, &o->rhs) || o->rhs < 1) goto bad; break;
        case 'c': o->check = 1; break;
        case 'C': o->cpu_only = 1; break;
        case 'G': o->gpu_only = 1; break;
        case 'g': if (parse_int(optarg, &v)) goto bad; o->gpus = (int)v; break;
        case 'R': if (parse_int(optarg, &v) || v < 1) goto bad; o->repeat = (int)v; break;
        case 'w': if (parse_int(optarg, &v)) goto bad; o->warmup = (int)v; break;
        case 'P': o->resident = 1; break;
        case 's': if (parse_int(optarg, &v)) goto bad; o->seed = (uint64_t)v; break;
        case 'j': o->json = 1; break;
        case 'D': o->digest = 1; break;
        case 'x': {
            char *end;
            long p = strtol(optarg, &end, 10), q = *end == 'x' ? strtol(end + 1, &end, 10) : 0;
            if (*end || p < 1 || q < 1 || p > 4096 || q > 4096) goto bad;
            o->grid_p = (int)p;
            o->grid_q = (int)q;
            break;
        }
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout, argv[0]); exit(0);
        default: usage(stderr, argv[0]); return -1;
        }
        continue;
    bad:
        fprintf(stderr, "cask-chol: bad value \"%s\" (see --help)\n", optarg ? optarg : "");
        return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "cask-chol: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    if (o->warmup < 0) o->warmup = o->repeat > 1 ? 1 : 0;
    return 0;
}

/* Reads the matrix of --in into host memory of the runtime (n, dtype from the file). */
cask_status chol_read_input(cask_runtime *rt, cask_array_ctx *ctx, chol_opts *o, void **a)
{
    cask_array *x = NULL;
    cask_status st = cask_array_from_npy(ctx, o->in, NULL, &x);
    cask_array_meta m;
    if (!st) st = cask_array_get_meta(x, &m);
    if (!st && (m.ndim != 2 || m.shape[0] != m.shape[1])) {
        fprintf(stderr, "cask-chol: %s: not a square matrix (%d-D, %lld rows)\n", o->in, m.ndim,
                (long long)m.shape[0]);
        st = CASK_ERR_INVALID;
    } else if (!st && m.dtype != CASK_FLOAT32 && m.dtype != CASK_FLOAT64) {
        fprintf(stderr, "cask-chol: %s: dtype %s: float32 or float64 needed\n", o->in,
                cask_dtype_name(m.dtype));
        st = CASK_ERR_INVALID;
    }
    if (!st) {
        o->n = m.shape[0];
        o->dt = m.dtype;
        size_t bytes = (size_t)(o->n * o->n) * cask_dtype_size(o->dt);
        st = cask_host_alloc(rt, bytes, a);
        if (!st) st = cask_array_compute(x, *a, bytes);
        if (st == CASK_OK) {   /* non-finite values are refused before any work */
            for (int64_t i = 0; i < o->n * o->n; i++) {
                double v = o->dt == CASK_FLOAT64 ? ((double *)*a)[i] : ((float *)*a)[i];
                if (!isfinite(v)) {
                    fprintf(stderr, "cask-chol: %s: element (%lld,%lld) is %g: the matrix "
                            "must be finite\n", o->in, (long long)(i / o->n),
                            (long long)(i % o->n), v);
                    st = CASK_ERR_INVALID;
                    break;
                }
            }
        }
    }
    if (st && st != CASK_ERR_INVALID)
        fprintf(stderr, "cask-chol: %s: %s: %s\n", o->in, cask_status_string(st),
                cask_array_ctx_error(ctx));
    cask_array_release(x);
    return st;
}

/* Tasks run on CPU workers and on GPUs since the last reset. */
static void where_ran(cask_runtime *rt, uint64_t *cpu, uint64_t *gpu)
{
    int nw = 0;
    *cpu = *gpu = 0;
    cask_runtime_nworkers(rt, &nw);
    cask_worker_stats *s = calloc((size_t)nw, sizeof *s);
    if (s && cask_runtime_stats(rt, s, nw) == CASK_OK)
        for (int i = 0; i < nw; i++) *(s[i].kind ? gpu : cpu) += s[i].tasks_run;
    free(s);
}

/* One factorization (and solve): 0 or the status. */
static cask_status factor_once(cask_array_ctx *ctx, const chol_opts *o, cask_array *A, void *l,
                               const void *b, void *x)
{
    cask_array *L = NULL, *B = NULL, *X = NULL;
    size_t es = cask_dtype_size(o->dt), lbytes = (size_t)(o->n * o->n) * es;
    cask_status st = cask_array_cholesky(A, &L);
    if (!st && o->rhs) {
        int64_t bs[2] = {o->n, o->rhs}, bc[2] = {o->tile, o->rhs};
        st = cask_array_from_host(ctx, b, o->dt, 2, bs, bc, &B);
        if (!st) st = cask_array_cho_solve(L, B, &X);
    }
    if (!st && o->resident) {
        cask_array *keep[2] = {L, X};
        st = cask_array_persist(ctx, o->rhs ? 2 : 1, keep);
    } else if (!st) {
        cask_array *outs[2] = {L, X};
        void *bufs[2] = {l, x};
        size_t sizes[2] = {lbytes, (size_t)(o->n * o->rhs) * es};
        st = cask_array_compute_many(ctx, o->rhs ? 2 : 1, outs, bufs, sizes);
    }
    cask_array_release(L);
    cask_array_release(B);
    cask_array_release(X);
    return st;
}

/* The factorization in this process (a job of one rank): returns the exit code. */
static int run_local(cask_runtime *rt, cask_array_ctx *ctx, chol_opts *o)
{
    int rc = 1;
    void *a = NULL, *l = NULL, *b = NULL, *x = NULL;
    cask_array *A = NULL;
    cask_status st = CASK_OK;
    double *times = calloc((size_t)o->repeat, sizeof *times);
    if (!times) goto out;
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    if (o->in) {
        if ((st = chol_read_input(rt, ctx, o, &a))) goto out;
    } else {
        if ((st = cask_host_alloc(rt, (size_t)(o->n * o->n) * cask_dtype_size(o->dt), &a))) goto out;
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        chol_generate(a, o->dt, o->n, o->seed, nc > 0 ? (int)nc : 1);
    }
    size_t es = cask_dtype_size(o->dt), bytes = (size_t)(o->n * o->n) * es;
    if ((st = cask_host_alloc(rt, bytes, &l))) goto out;
    if (o->rhs) {
        b = malloc((size_t)(o->n * o->rhs) * es);
        if ((st = cask_host_alloc(rt, (size_t)(o->n * o->rhs) * es, &x)) || !b) goto out;
        chol_generate_rhs(b, o->dt, o->n, o->rhs, o->seed);
    }
    int64_t shape[2] = {o->n, o->n}, ch[2] = {o->tile, o->tile};
    if ((st = cask_array_from_host(ctx, a, o->dt, 2, shape, ch, &A))) goto out;
    if (o->resident) {   /* the matrix's tiles computed (x 1) and kept where they were */
        cask_array *k1 = NULL;
        st = cask_array_binary_scalar(CASK_MUL, A, 1.0, 0, &k1);
        if (!st) st = cask_array_persist(ctx, 1, &k1);
        cask_array_release(A);
        A = k1;
        if (st) goto out;
    }
    for (int r = -o->warmup; r < o->repeat; r++) {
        if (r == 0) cask_runtime_stats_reset(rt);
        double t0 = chol_now_s();
        st = factor_once(ctx, o, A, l, b, x);
        if (st) goto out;
        if (r >= 0) times[r] = chol_now_s() - t0;
    }
    uint64_t ncpu_tasks, ngpu_tasks;
    where_ran(rt, &ncpu_tasks, &ngpu_tasks);
    cask_array_stats ls;   /* the last timed run's */
    if (cask_array_last_stats(ctx, &ls)) memset(&ls, 0, sizeof ls);
    qsort(times, (size_t)o->repeat, sizeof *times, chol_cmp_d);
    double med = times[o->repeat / 2], gf = (double)o->n * o->n * o->n / 3.0 / med * 1e-9;
    if (o->resident && (o->check || o->out || o->digest)) {   /* the factor to host, untimed */
        st = factor_once(ctx, &(chol_opts){ .n = o->n, .tile = o->tile, .dt = o->dt, .rhs = o->rhs },
                         A, l, b, x);
        if (st) goto out;
    }
    if (!o->quiet)
        printf("cholesky n=%lld tile=%lld %s%s: %.4f s (median of %d; min %.4f, max %.4f), "
               "%.1f GFLOP/s\ntiles ran: %llu tasks on CPU workers (%d), %llu on GPUs (%d%s); "
               "%zu diagonal tiles inverted for the TRSMs\n",
               (long long)o->n, (long long)o->tile, cask_dtype_name(o->dt),
               o->resident ? ", resident" : ", host to host", med, o->repeat, times[0],
               times[o->repeat - 1], gf, (unsigned long long)ncpu_tasks, info.ncpu_workers,
               (unsigned long long)ngpu_tasks, info.ngpus, info.simulated_gpus ? " simulated" : "",
               ls.ntiles_inverted);
    double res, berr;
    if (chol_finish(ctx, o, a, l, b, x, &res, &berr)) goto out;
    if (o->json)
        printf("{\"bench\":\"cask-chol\",\"n\":%lld,\"tile\":%lld,\"dtype\":\"%s\",\"mode\":\"%s\","
               "\"ranks\":1,\"cpu_workers\":%d,\"gpus\":%d,\"median_s\":%.6f,\"min_s\":%.6f,"
               "\"gflops\":%.1f,\"tasks_cpu\":%llu,\"tasks_gpu\":%llu,\"residual\":%.3e,"
               "\"backward_error\":%.3e,\"tiles_inverted\":%zu}\n",
               (long long)o->n, (long long)o->tile, cask_dtype_name(o->dt),
               o->resident ? "resident" : "host", info.ncpu_workers, info.ngpus, med, times[0],
               gf, (unsigned long long)ncpu_tasks, (unsigned long long)ngpu_tasks, res, berr,
               ls.ntiles_inverted);
    rc = 0;
out:
    if (st) {
        fprintf(stderr, "cask-chol: %s: %s\n", cask_status_string(st), cask_array_ctx_error(ctx));
        rc = st == CASK_ERR_NOT_SPD ? 3 : st == CASK_ERR_INVALID ? 2 : 1;
    }
    cask_array_release(A);
    cask_host_free(rt, a);
    cask_host_free(rt, l);
    cask_host_free(rt, x);
    free(b);
    free(times);
    return rc;
}

int main(int argc, char **argv)
{
    chol_opts o;
    if (parse(argc, argv, &o)) return 2;
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (o.cpu_only || o.gpus >= 0) {
        cfg.field_mask |= CASK_CONFIG_NGPU;
        cfg.ngpu = o.cpu_only ? 0 : o.gpus;
    }
    cask_runtime *rt = NULL;
    cask_array_ctx *ctx = NULL;
    cask_dist *dist = NULL;
    cask_status st = cask_init(&cfg, &rt);
    if (st) {
        fprintf(stderr, "cask-chol: cask_init: %s\n", cask_status_string(st));
        return 1;
    }
    int rc = 1;
    if ((st = cask_array_ctx_create(rt, &ctx)) ||
        (o.gpu_only && (st = cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU)))) {
        fprintf(stderr, "cask-chol: %s: %s\n", cask_status_string(st),
                ctx ? cask_array_ctx_error(ctx) : "");
        goto out;
    }
    /* a job of several ranks (mpirun, srun, launch-local.sh) factors across them */
    if ((st = cask_dist_init(rt, NULL, &dist))) {
        fprintf(stderr, "cask-chol: joining the job: %s\n", cask_status_string(st));
        goto out;
    }
    if (cask_dist_size(dist) > 1) {
        rc = chol_dist_run(rt, ctx, dist, &o);
    } else {
        cask_dist_finalize(dist);
        dist = NULL;
        rc = run_local(rt, ctx, &o);
    }
out:
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    return rc;
}
