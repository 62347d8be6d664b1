/* main_stream.c: see main_stream.h. */
#include "main_stream.h"
#include "knn_clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "knn_chunks.h"
#include "kout.h"
#include "options.h"

/* The ranks' meeting inside knn_stream_run (knn_stream_agree_fn): this rank's failure is
 * told by knn_stream_run's caller, so here only that it failed. */
static int stream_agree(void *ctx, int failed, int64_t *value)
{
    const knn_stream_main_args *a = ctx;
    char err[KNN_ERRLEN];
    snprintf(err, sizeof err, "rank %d failed before the search (its message follows)",
             a->cl->rank);
    return knn_ranks_agree(a->cl, a->prog, failed, value, err, sizeof err);
}

int knn_stream_main(const knn_stream_main_args *a)
{
    char err[KNN_ERRLEN];
    const char *prog = a->prog;
    const char *out_path = a->out_path;
    const int P = a->cl ? a->cl->size : 1, me = a->cl ? a->cl->rank : 0;
    FILE *share = NULL;                    /* several ranks: where this one's rows go */
    int failed = 0;
    double t0 = knn_now_s();
    if (knn_points_read(a->ref_path, &a->ro, a->alloc, a->ref, err, sizeof err)) {
        failed = 1;
    } else if (a->ref->n > INT32_MAX) {
        failed = 1;
        snprintf(err, sizeof err, "%s: %lld references: at most %d are supported (int32 "
                 "index)", a->ref_path, (long long)a->ref->n, INT32_MAX);
    } else if (P > 1 && !a->obs->by_range) {
        failed = 1;
        snprintf(err, sizeof err, "%s: --stream across ranks reads a .npy observation file "
                 "(each rank its share of the rows, by offset); a CSV file is read in order: "
                 "convert it, or run --no-stream", a->obs->name);
    } else if (P > 1 && out_path && !knn_path_is_npy(out_path)) {
        failed = 1;
        snprintf(err, sizeof err, "%s: --stream across ranks writes .npy output (each rank "
                 "writes its rows in place; CSV rows have no fixed offset): --out FILE.npy, "
                 "or --no-stream", out_path);
    } else if (P > 1 && a->obs->n < P) {
        failed = 1;
        snprintf(err, sizeof err, "%s: %lld rows for %d ranks: fewer than one a rank",
                 a->obs->name, (long long)a->obs->n, P);
    } else if (P > 1 && out_path && !a->dout->in_place) {
        failed = 1;
        snprintf(err, sizeof err, "%s: --stream across ranks writes each rank's rows in "
                 "place, into one file every rank sees%s%s (or run --no-stream, where rank 0 "
                 "may gather them)", out_path, cask_dist_file_note(a->dout->file)[0] ? ": " : "",
                 cask_dist_file_note(a->dout->file));
    } else if (P > 1 && out_path && !(share = knn_out_stream(a->dout, err, sizeof err))) {
        failed = 1;
    }
    /* every rank learns whether one failed */
    int64_t none = 0;
    if (knn_ranks_agree(a->cl, prog, failed, &none, err, sizeof err))
        return 1;
    if (share)
        a->dout->n = a->obs->n;   /* its rows, for the commit's messages */
    double t_ref = knn_now_s() - t0;
    const int64_t lo = a->obs->n * me / P, hi = a->obs->n * (me + 1) / P;

    knn_stream_cfg c = {0};
    c.obs = a->obs;
    c.first_row = lo;
    c.nrows = hi - lo;
    c.out_rows = a->obs->n;
    c.header_elsewhere = me != 0;
    if (P > 1) {
        c.agree = stream_agree;
        c.agree_ctx = (void *)a;
    }
    c.ref = a->ref;
    c.window = a->window;
    {
        int64_t W = a->window < hi - lo ? a->window : hi - lo, chunk, pchunk;
        /* as the in-memory path sizes its chunks, for one window */
        knn_plan_sizes(W, a->ref->n, a->obs->f64, a->k,
                       a->k > 1 || a->method != KNN_METHOD_BRUTE, a->method == KNN_METHOD_BRUTE,
                       a->chunk, a->ref_chunk, a->info, &c.plan.ref_chunk, &chunk, &pchunk);
        c.plan.k = a->k;
        c.plan.prune = a->method == KNN_METHOD_PRUNED;
        c.plan.chunk = c.plan.prune ? pchunk : chunk;
        c.auto_prune = a->method == KNN_METHOD_AUTO;
        c.pchunk = pchunk;
        c.brute_ref_chunk = a->ref_chunk ? a->ref_chunk : a->ref->n;
    }
    c.plan.scale = a->scale;
    c.plan.where = a->info->ngpus > 0 ? CASK_WHERE_GPU : CASK_WHERE_CPU;
    c.out = P > 1 ? share : a->out->f;
    c.out_file = P > 1 && out_path ? a->dout->file : NULL;
    c.out_name = out_path;
    c.out_npy = out_path && knn_path_is_npy(out_path);
    c.nworkers = a->info->ncpu_workers;
    c.check = a->check;
    c.alloc = a->alloc;
    c.out_format = a->out_format;
    c.read_ahead = a->read_ahead;
    c.io_threads = a->io_threads;

    knn_stream_result r;
    int rc = 1, check_failed = 0;
    knn_check_report cr;
    if (knn_stream_run(a->rt, a->kernels, &c, &r, err, sizeof err)) {
        failed = 1;
    } else if (a->check) {
        if (a->k > 1 ? knn_check_k(&r.sample_obs, a->ref, r.sample_index, r.sample_dist,
                                   a->k, a->scale, r.nsamples, &cr)
                     : knn_check(&r.sample_obs, a->ref, r.sample_index, r.sample_dist,
                                 a->scale, r.nsamples, &cr)) {
            failed = 1;
            snprintf(err, sizeof err, "--check: out of memory");
        } else {
            /* the report names sample positions: back to rows of the file */
            if (cr.first_bad_index >= 0)
                cr.first_bad_index = lo + r.sample_rows[cr.first_bad_index];
            if (cr.worst_chosen >= 0)
                cr.worst_chosen = lo + r.sample_rows[cr.worst_chosen];
            if (cr.worst_reported >= 0)
                cr.worst_reported = lo + r.sample_rows[cr.worst_reported];
            check_failed = cr.bad_index > 0 || cr.max_err_chosen > KNN_CHECK_TOL_CHOSEN ||
                           cr.max_err_reported > KNN_CHECK_TOL_REPORTED;
        }
    }
    /* this rank's share of the rows is written: unit `me` of the file */
    if (share && !failed && cask_dist_file_mark(a->dout->file, me)) {
        failed = 1;
        snprintf(err, sizeof err, "out of memory");
    }
    /* the job's verdict: a failure anywhere, or a check that failed anywhere */
    int64_t all_checked = !check_failed;
    if (knn_ranks_agree(a->cl, prog, failed, &all_checked, err, sizeof err))
        goto done;
    check_failed = check_failed || !all_checked;
    double t_commit = knn_now_s();
    if (P > 1 && out_path && !check_failed) {
        /* every rank's share reported written, then the file appears */
        if (knn_out_commit(a->dout, 1, P, 0, -1, err, sizeof err)) {
            if (me == 0)
                fprintf(stderr, "%s: %s\n", prog, err);
            goto done;
        }
    } else if (P == 1 && a->out->f && !check_failed &&
               knn_outfile_commit(a->out, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto done;
    }
    t_commit = knn_now_s() - t_commit;
    int64_t n = a->obs->n, m = a->ref->n;
    if (!a->quiet) {
        const cask_runtime_info *in = a->info;
        double pairs = (double)n * (double)m;
        double mine = (double)(hi - lo) * (double)m;   /* rates: this rank's own pairs */
        int64_t W = a->window < hi - lo ? a->window : hi - lo;
        fprintf(stderr, "%s: %lld observations x %lld references = %.4g pairs\n", prog,
                (long long)n, (long long)m, pairs);
        fprintf(stderr, "%s: k = %d, method %s", prog, a->k, r.prune ? "pruned" : "brute");
        if (r.auto_fraction >= 0)
            fprintf(stderr, " (auto, from the first window: about %.3g of the pairs visited "
                    "if pruned)", r.auto_fraction);
        fputc('\n', stderr);
        if (P > 1)
            fprintf(stderr, "%s: %d ranks, each streaming its share of the rows into the "
                    "output; rank 0 (rows 0 to %lld):\n", prog, P, (long long)hi - 1);
        fprintf(stderr,
                "%s: streamed in %lld windows of %lld rows; %d GPU%s%s, %d CPU worker%s; "
                "per window %lld x %lld chunks of %lld x %lld rows, %zu tasks\n",
                prog, (long long)r.windows, (long long)W, in->ngpus, in->ngpus == 1 ? "" : "s",
                in->simulated_gpus && in->ngpus ? " (simulated)" : "", in->ncpu_workers,
                in->ncpu_workers == 1 ? "" : "s", (long long)r.obs_chunks,
                (long long)r.ref_chunks, (long long)(c.plan.chunk < W ? c.plan.chunk : W),
                (long long)(c.plan.ref_chunk < m ? c.plan.ref_chunk : m), r.ntasks);
        fprintf(stderr,
                "%s: time: load %.3f s (references, first window), compute %.3f s (sum over "
                "windows), waiting for I/O %.3f s (reads %.3f, writes after the last window "
                "%.3f), total %.3f s%s\n",
                prog, t_ref + r.t_first_load, r.t_compute, r.t_wait_io, r.t_wait_read,
                r.t_wait_write, t_ref + r.t_total + t_commit,
                out_path ? " (output written as it came)" : "");
        fprintf(stderr, "%s: outside the windows: auto %.3f s, references %.3f, the windows' "
                "jobs %.3f, after the last window %.3f (writes finished, buffers freed)\n",
                prog, r.t_auto, r.t_refs, r.t_jobs, r.t_end);
        fprintf(stderr, "%s: I/O: %d windows of buffers (--read-ahead %d%s), %d parallel reads "
                "and writes a window%s%s\n", prog, r.slots, r.slots - 2 > 0 ? r.slots - 2 : 0,
                a->read_ahead < 0 ? ", by default" : "", a->io_threads,
                out_path && P == 1 ? "; the output synced to disk before its rename" : "",
                out_path && P == 1 ? " (in the total)" : "");
        fprintf(stderr, "%s: %.4g pairs/s (compute), %.4g pairs/s (end to end)\n", prog,
                r.t_compute > 0 ? mine / r.t_compute : 0, mine / (t_ref + r.t_total + t_commit));
    }
    if (a->check && (!a->quiet || check_failed))
        knn_check_print(stderr, prog, &cr);
    if (check_failed && out_path && me == 0)
        fprintf(stderr, "%s: %s not written: the check failed\n", prog, out_path);
    rc = check_failed ? 3 : 0;
done:
    knn_stream_result_free(&r);
    return rc;
}
