/* main.c: cask-knn. Exact nearest-neighbour search by great-circle distance: for each
 * observation, the nearest reference (or the --k nearest) and the distances, by brute
 * force or pruned (--method). Parses the options (options.h), starts the runtime, loads (points.h) or generates the points, runs the task
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
#include "cask/distributed.h"
#include "knn_clock.h"
#include <limits.h>
#include <math.h>
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
#include "knn_out.h"
#include "kout.h"
#include "main_stream.h"
#include "options.h"
#include "out_compact.h"
#include "points.h"
#include "results_alloc.h"
#include "same_input.h"
#include "tmp_guard.h"
#include "write_par.h"

enum { EXIT_DATA = 1, EXIT_CHECK = 3 }; /* 2: a usage error (options.h) */
enum { CASK_MAX_GPUS_APP = 64 };
/* A CSV observation file larger than this is streamed unless --no-stream (it is scanned
 * anyway to count its rows, so it is not read twice for nothing). */
#define KNN_CSV_STREAM_BYTES ((long long)256 << 20)

static const char *prog = "cask-knn";

/* ---- the parts of main ---- */

static void *host_alloc(void *ctx, size_t bytes)
{
    void *p = NULL;
    return cask_host_alloc(ctx, bytes, &p) ? NULL : p;
}

static void host_free(void *ctx, void *p)
{
    cask_host_free(ctx, p);
}

/* Rows a generating task makes, for `rows` rows on `workers` CPU workers: 4 tasks a
 * worker, 65536 rows at least. */
static int64_t gen_piece(int64_t rows, int workers)
{
    int64_t piece = rows / (4 * (workers > 0 ? workers : 1));
    return piece < 65536 ? 65536 : piece;
}

/* Row i of the generated observations (generate.h: a pure function of seed and i). */
static void generate_row(knn_points *obs, uint64_t seed, int64_t clusters, int64_t i)
{
    void *at = (char *)obs->data + (size_t)i * 2 * knn_elem_bytes(obs);
    if (clusters > 0)
        knn_generate_clustered(seed, KNN_STREAM_OBS, i, 1, obs->f64, clusters, at);
    else
        knn_generate_points(seed, KNN_STREAM_OBS, i, 1, obs->f64, at);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The lowest rank this one holds alive: it speaks for the job when rank 0 cannot. */
static int lowest_alive(knn_cluster *cl)
{
    int r = 0;
    while (r < cl->rank && cask_dist_rank_lost(cl->dist, r))
        r++;
    return r;
}

static int ranks_agree(knn_cluster *cl, int failed, int64_t *value, char *err, size_t errlen)
{
    return knn_ranks_agree(cl, prog, failed, value, err, errlen);
}

int main(int argc, char **argv)
{
    double t_main = knn_now_s(), t_joined = 0, t_done;   /* end to end: main to exit */
    options o;
    cask_runtime *rt = NULL;
    cask_runtime_info info = {0};
    cask_knn_kernels kernels;
    knn_points obs = {0}, ref = {0};
    knn_outfile out = {0};     /* --out of one process */
    knn_out dout = {0};        /* --out of a job of several */
    knn_job *job = NULL;
    knn_dist_job *djob = NULL;
    knn_cluster cl = {0};
    int devices[CASK_MAX_GPUS_APP];
    int ndevices = 0;
    int32_t *index = NULL;
    float *dist = NULL;
    knn_results_alloc ra = {0};   /* index and dist, made while the rows are generated */
    double *times = NULL;
    char err[KNN_ERRLEN];
    int rc = EXIT_DATA;
    cask_status st;

    knn_parse_args(argc, argv, &o);
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
    t_joined = knn_now_s();
    int rank = cl.rank, nranks = cl.size;
    if (rank != 0)
        o.quiet = 1;   /* rank 0 speaks for the job; the others report only errors */

    /* Until the ranks agree that all of them loaded their input, a failure is only
     * noted (failed, message in err): a rank that left alone would leave the others
     * waiting. With one process the message is printed as soon as it is known. */
    int failed = 0;
    /* Fail on an unwritable output before spending any time. Across ranks, the job's
     * file (every rank learns whether it writes its own rows there: knn_out.h). */
    if (o.out_path && nranks == 1) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o.out_path, (long)getpid());
        knn_tmp_arm(tmp);
        if (knn_outfile_open(&out, o.out_path, err, sizeof err))
            failed = 1;
        else
            knn_tmp_rename(out.tmp_path);   /* the names must agree */
    } else if (o.out_path && o.out_format == KNN_OUT_COMPACT) {
        failed = 1;   /* every rank has the same options: all of them say so */
        snprintf(err, sizeof err, "%s: --out-format compact is written by one process; "
                 "across ranks the results are f64 (the default)", o.out_path);
    } else if (o.out_path) {
        if (knn_out_open(cl.dist, prog, o.out_path, o.write_mode, &dout, err, sizeof err))
            failed = 1;
        else if (rank == 0)
            knn_tmp_arm(cask_dist_file_temp_path(dout.file));
    }

    /* ---- streamed: observations with more rows than a window (a CSV file is streamed
     * when it is larger than KNN_CSV_STREAM_BYTES, or with --stream); across ranks each
     * streams its share of a .npy file, and every rank streams or none does */
    knn_read_opts ro = {o.lat_col, o.lon_col, !o.radians, o.wrap};
    knn_obs_source src;
    int streamed = 0, src_open = 0;
    if (!failed && !o.generate && o.stream != 0 && o.repeat == 1 && !o.dot_path) {
        int npy = knn_file_has_npy_magic(o.obs_path), try_it = o.stream == 1 || npy;
        struct stat sb;
        if (!npy && !try_it && stat(o.obs_path, &sb) == 0 && sb.st_size > KNN_CSV_STREAM_BYTES)
            try_it = 1;
        if (!try_it) {
        } else if (knn_obs_source_open(o.obs_path, &ro, o.window, &src, err, sizeof err)) {
            failed = 1;
        } else {
            src_open = 1;
            streamed = o.stream == 1 || src.n > o.window || !npy;
        }
    }
    if (nranks > 1) {
        int64_t all = streamed;
        if (ranks_agree(&cl, failed, &all, err, sizeof err)) {
            if (src_open)
                knn_obs_source_close(&src);
            goto done;
        }
        streamed = all == 1;
    }
    if (streamed) {
        knn_stream_main_args sa = {
            prog, rt, &info, &kernels, &alloc, &src, o.ref_path, ro, &ref, &out, &dout, o.out_path,
            o.window, o.chunk, o.ref_chunk, o.k, o.method, scale, o.quiet, o.check, &cl,
            (knn_out_format)o.out_format, o.read_ahead, o.io_threads};
        rc = knn_stream_main(&sa);
        knn_obs_source_close(&src);
        knn_tmp_disarm();
        goto done;
    }
    if (src_open)
        knn_obs_source_close(&src);

    /* ---- load ---- */
    double t0 = knn_now_s();
    if (failed) {
    } else if (o.generate) {
        if (knn_points_alloc(o.gen_n, 1, 0, &alloc, &obs) ||
            knn_points_alloc(o.gen_m, 1, 0, &alloc, &ref)) {
            snprintf(err, sizeof err, "out of memory for %lld + %lld points",
                     (long long)o.gen_n, (long long)o.gen_m);
            failed = 1;
        } else {
            if (rank == 0 && !dout.in_place)   /* the results live on rank 0 */
                knn_results_alloc_start(&ra, rt, obs.n, o.k, 1);
            int64_t gchunk = gen_piece(o.gen_n, info.ncpu_workers);
            /* Across ranks each generates only the observations it searches, once the
             * chunks are agreed (below), and now the rows the method estimate and the
             * check read; the references whole. */
            if (nranks > 1) {
                failed = knn_generate_part(rt, o.seed, NULL, &ref, gchunk, 0, o.clusters, 0, 1,
                                           err, sizeof err) != 0;
                for (int64_t i = 0; !failed && i < KNN_AUTO_SAMPLE_OBS; i++)
                    generate_row(&obs, o.seed, o.clusters, knn_auto_sample_row(obs.n, i));
                int64_t samples = o.check < obs.n ? o.check : obs.n;
                for (int64_t s = 0; !failed && rank == 0 && s < samples; s++)
                    generate_row(&obs, o.seed, o.clusters, knn_check_row(obs.n, samples, s));
            } else {
                failed = knn_generate_tasks(rt, o.seed, &obs, &ref, gchunk, o.clusters, err,
                                            sizeof err) != 0;
            }
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
    if (!failed && dout.in_place)   /* the rows' writers need where rows start */
        knn_out_rows(&dout, obs.n, o.k);
    if (!failed && rank == 0 && !dout.in_place && !o.generate)   /* (nothing to overlap) */
        knn_results_alloc_start(&ra, rt, obs.n, o.k, 0);
    times = calloc((size_t)o.repeat, sizeof *times);
    if (!failed && !times) {
        snprintf(err, sizeof err, "out of memory");
        failed = 1;
    }
    double t_load = knn_now_s() - t0;
    /* Read files: every rank must hold the same bytes (nodes may see other copies). */
    if (!o.generate && nranks > 1 &&
        knn_ranks_same_input(&cl, prog, failed, &obs, &ref, o.obs_path, o.ref_path, err,
                             sizeof err))
        goto done;

    /* ---- method: pruned or brute force ---- */
    int prune = 0, overruled = 0;   /* overruled: auto chose pruned here, not everywhere */
    double auto_fraction = -1;
    if (!failed && o.method == KNN_METHOD_PRUNED)
        prune = 1;

    /* ---- compute ---- */
    knn_plan plan = {0};
    int64_t chunk = 0, pchunk = 0;
    if (!failed) {
        /* with P ranks, each rank's share is cut as one process would cut its input */
        knn_plan_sizes((obs.n + nranks - 1) / nranks, ref.n, obs.f64, o.k,
                       o.k > 1 || prune || o.method == KNN_METHOD_AUTO,
                       o.method == KNN_METHOD_BRUTE, o.chunk, o.ref_chunk, &info,
                       &plan.ref_chunk, &chunk, &pchunk);
        if (prune)
            chunk = pchunk;
        if (o.method == KNN_METHOD_AUTO)
            prune = knn_auto_prune(&obs, &ref, o.k, pchunk, &auto_fraction);
    }
    /* Every rank must build the same graph. The method: pruned by auto only where every
     * rank chose it (ranks with other GPUs propose other chunks, hence estimates). */
    if (o.method == KNN_METHOD_AUTO) {
        int64_t all = prune;
        if (ranks_agree(&cl, failed, &all, err, sizeof err))
            goto done;
        overruled = prune && all != 1;
        prune = all == 1;
        if (prune)
            chunk = pchunk;
        else if (o.k == 1 && !o.ref_chunk)
            plan.ref_chunk = ref.n; /* the 1-NN kernels take any number */
    }
    /* The chunk: the smallest proposed wins. */
    if (ranks_agree(&cl, failed, &chunk, err, sizeof err))
        goto done;
    plan.chunk = chunk;
    if (!failed && o.generate && nranks > 1) {
        /* this rank's observation chunks (chunk c is rank c % P's, knn_dist.c); another
         * rank's are made again from the seed should it be lost */
        double tg = knn_now_s();
        /* in pieces of the one-process split (4 a worker): a rank owns few search
         * chunks, fewer than its workers at 2 ranks (8 chunks of 2^20 rows on 7 workers
         * made the generation two chunks long: 0.285 s against 0.14 alone, H200 host) */
        failed = knn_generate_part(rt, o.seed, &obs, NULL, chunk,
                                   gen_piece(obs.n / nranks, info.ncpu_workers), o.clusters,
                                   rank, nranks, err, sizeof err) != 0;
        t_load += knn_now_s() - tg;
        if (failed) {   /* the others find this rank lost, and make its chunks */
            fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err);
            goto done;
        }
        cl.gen_obs = 1;
        cl.gen_seed = o.seed;
        cl.gen_clusters = o.clusters;
    }
    if (knn_results_alloc_wait(&ra, &index, &dist)) {
        fprintf(stderr, "%s: out of memory for %lld results\n", prog, (long long)obs.n);
        goto done;
    }
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
                                ndevices, dout.in_place ? &dout : NULL, o.check, &djob, err,
                                sizeof err)) {
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
        double t = knn_now_s();
        cask_status rst = job ? knn_job_run(job, !o.quiet, err, sizeof err)
                              : knn_dist_job_run(djob, err, sizeof err);
        if (rst) {
            /* the same verdict on every rank: rank 0 tells; but a rank fenced out (or
             * cut off) after a loss fails alone, and says so */
            if (rank == 0 || rst == CASK_ERR_PEER)
                fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err);
            goto done;
        }
        times[r] = knn_now_s() - t;
    }
    int64_t nobsc, nrc;
    size_t ntasks;
    if (job)
        knn_job_shape(job, &nobsc, &nrc, &ntasks);
    else
        knn_dist_job_shape(djob, &nobsc, &nrc, &ntasks);
    int check_failed = 0, lost0 = nranks > 1 && rank != 0 && cask_dist_rank_lost(cl.dist, 0);
    knn_check_report cr;
    double t_write = 0;
    if (dout.in_place) {
        /* Every rank wrote its rows during the compute. Rank 0 checks the sampled rows
         * gathered to it (a failed check vetoes); then the file is committed once every
         * chunk was reported written (knn_out.h): rank 0 or, lost, the lowest survivor
         * speaks for the job. */
        int ok = 1;
        if (rank == 0 && o.check) {
            const int32_t *si;
            const float *sd;
            if (knn_dist_job_samples(djob, &si, &sd, err, sizeof err) ||
                (knn_check_samples(&obs, &ref, si, sd, o.k, scale, o.check, &cr) &&
                 snprintf(err, sizeof err, "--check: out of memory") > 0)) {
                fprintf(stderr, "%s: %s\n", prog, err);
                ok = 0;
            } else {
                check_failed = cr.bad_index > 0 || cr.max_err_chosen > KNN_CHECK_TOL_CHOSEN ||
                               cr.max_err_reported > KNN_CHECK_TOL_REPORTED;
                ok = !check_failed;
            }
        }
        if (lost0 && o.check)
            ok = 0;   /* rank 0 checked the samples: no check, no output */
        knn_dist_job_destroy(djob);
        djob = NULL;
        int64_t K = o.k > 1 ? o.k : 1;
        t0 = knn_now_s();
        st = knn_out_commit(&dout, ok, nobsc + 1, plan.chunk,
                            dout.npy ? dout.data_off + obs.n * K * 16 : -1, err, sizeof err);
        t_write = knn_now_s() - t0;
        knn_tmp_disarm();
        lost0 = rank != 0 && cask_dist_rank_lost(cl.dist, 0);
        int speaker = lowest_alive(&cl);
        if (st && rank == speaker && (!check_failed || rank != 0))
            fprintf(stderr, "%s: rank %d: %s%s\n", prog, rank, err,
                    lost0 && o.check ? " (rank 0, which checks the sampled rows, was lost)" : "");
        if (st && !check_failed)
            goto done;
        if (lost0 && rank == speaker)
            fprintf(stderr, "%s: rank %d: rank 0 was lost; the survivors wrote every row of %s\n",
                    prog, rank, o.out_path);
    }
    knn_job_destroy(job); /* results are in index/dist from here on */
    job = NULL;
    knn_dist_job_destroy(djob);
    djob = NULL;
    /* Gathered, rank 0 held the results and writes them: lost, the survivors' recovered
     * compute has no output. The lowest survivor says so; all exit non-zero. */
    if (lost0 && !dout.in_place) {
        if (lowest_alive(&cl) == rank)
            fprintf(stderr, "%s: rank %d: rank 0 was lost: it held the results gathered to "
                    "it and writes the output, so this job has none; run it again\n", prog,
                    rank);
        goto done;
    }
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

    /* ---- check (the whole result, in rank 0's arrays) ---- */
    if (o.check && !dout.in_place) {
        if (o.k > 1 ? knn_check_k(&obs, &ref, index, dist, o.k, scale, o.check, &cr)
                    : knn_check(&obs, &ref, index, dist, scale, o.check, &cr)) {
            fprintf(stderr, "%s: --check: out of memory\n", prog);
            goto done;
        }
        check_failed = cr.bad_index > 0 || cr.max_err_chosen > KNN_CHECK_TOL_CHOSEN ||
                       cr.max_err_reported > KNN_CHECK_TOL_REPORTED;
    }

    /* ---- write (one process, or gathered to rank 0) ---- */
    if (o.out_path && !check_failed && !dout.in_place) {
        t0 = knn_now_s();
        int npy = knn_path_is_npy(o.out_path);
        FILE *f = nranks > 1 ? knn_out_stream(&dout, err, sizeof err) : out.f;
        if (!f)
            st = CASK_ERR_IO;
        else if (npy && o.out_format == KNN_OUT_COMPACT)
            st = knn_compact_write(f, o.out_path, index, dist, obs.n, o.k, err, sizeof err);
        else if (o.k > 1)
            st = npy ? knn_knpy_write(f, o.out_path, index, dist, obs.n, o.k, err, sizeof err)
                     : knn_kcsv_write(f, o.out_path, index, dist, obs.n, o.k, err, sizeof err);
        else
            st = npy ? knn_npy_write(f, o.out_path, index, dist, obs.n, err, sizeof err)
                     : knn_csv_write_tasks(rt, f, o.out_path, index, dist, obs.n,
                                           info.ncpu_workers, err, sizeof err);
        if (!st)
            st = nranks > 1 ? knn_out_commit(&dout, 1, 0, 0, -1, err, sizeof err)
                            : knn_outfile_commit(&out, err, sizeof err);
        knn_tmp_disarm();
        if (st) {
            fprintf(stderr, "%s: %s\n", prog, err);
            goto done;
        }
        t_write = knn_now_s() - t0;
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
            fprintf(stderr, " (auto: about %.2g of the pairs to visit%s)", auto_fraction,
                    overruled ? " here; another rank's chunks chose brute force" : "");
        fprintf(stderr, "\n");
        fprintf(stderr, "%s: time: %s %.3f s, compute %.4f s", prog,
                o.generate ? "generate" : "load", t_load, t_compute);
        if (o.repeat > 1)
            fprintf(stderr, " (median of %d, min %.4f, max %.4f)", o.repeat, times[0],
                    times[o.repeat - 1]);
        if (o.out_path)
            fprintf(stderr, ", write %.3f s", t_write);
        if (o.out_path && dout.in_place)
            fprintf(stderr, " (each rank wrote its rows during the compute; the write is the "
                    "commit)");
        else if (o.out_path && nranks > 1)
            fprintf(stderr, " (gathered to rank 0, which wrote every row)");
        fprintf(stderr, "\n%s: %.4g pairs/s\n", prog, t_compute > 0 ? pairs / t_compute : 0);
    }
    if (o.check && (!o.quiet || check_failed))
        knn_check_print(stderr, prog, &cr);
    if (check_failed && o.out_path)
        fprintf(stderr, "%s: %s not written: the check failed\n", prog, o.out_path);
    rc = check_failed ? EXIT_CHECK : 0;

done:
    t_done = knn_now_s();
    if (out.f) {
        knn_tmp_disarm();
        knn_outfile_abort(&out);
    }
    knn_tmp_disarm();
    knn_out_close(&dout);   /* uncommitted: rank 0 removes it */
    knn_job_destroy(job);
    knn_dist_job_destroy(djob);
    /* The handles declared to the job go with it; then the memory they described. */
    knn_cluster_close(&cl);
    free(times);
    if (rt) {
        int32_t *ri;
        float *rd;
        if (knn_results_alloc_wait(&ra, &ri, &rd) == 0) {   /* one still being made */
            host_free(rt, ri);
            host_free(rt, rd);
        }
        host_free(rt, index);
        host_free(rt, dist);
    }
    knn_points_free(&obs);
    knn_points_free(&ref);
    if (rt && (st = cask_shutdown(rt)) && rc == 0) {
        fprintf(stderr, "%s: shutting down: %s\n", prog, cask_status_string(st));
        rc = EXIT_DATA;
    }
    if (rc == 0 && !o.quiet && t_joined > 0) {
        double t_exit = knn_now_s();
        fprintf(stderr, "%s: end to end %.3f s: start-up %.3f s (main to the runtime started "
                "and the job joined), shutdown %.3f s (after the results, to exit)\n", prog,
                t_exit - t_main, t_joined - t_main, t_exit - t_done);
    }
    return rc;
}
