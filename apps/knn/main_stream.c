/* main_stream.c: see main_stream.h. */
#include "main_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "knn_chunks.h"
#include "kout.h"
#include "options.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int knn_stream_main(const knn_stream_main_args *a)
{
    char err[KNN_ERRLEN];
    const char *prog = a->prog;
    const char *out_path = a->out->path;   /* the commit clears a->out */
    double t0 = now_s();
    if (knn_points_read(a->ref_path, &a->ro, a->alloc, a->ref, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    if (a->ref->n > INT32_MAX) {
        fprintf(stderr, "%s: %s: %lld references: at most %d are supported (int32 index)\n",
                prog, a->ref_path, (long long)a->ref->n, INT32_MAX);
        return 1;
    }
    double t_ref = now_s() - t0;

    knn_stream_cfg c = {0};
    c.obs = a->obs;
    c.ref = a->ref;
    c.window = a->window;
    {
        int64_t W = a->window < a->obs->n ? a->window : a->obs->n, chunk, pchunk;
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
    c.out = a->out->f;
    c.out_name = out_path;
    c.out_npy = out_path && knn_path_is_npy(out_path);
    c.nworkers = a->info->ncpu_workers;
    c.check = a->check;
    c.alloc = a->alloc;

    knn_stream_result r;
    int rc = 1;
    if (knn_stream_run(a->rt, a->kernels, &c, &r, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto done;
    }
    int check_failed = 0;
    knn_check_report cr;
    if (a->check) {
        if (a->k > 1 ? knn_check_k(&r.sample_obs, a->ref, r.sample_index, r.sample_dist,
                                   a->k, a->scale, r.nsamples, &cr)
                     : knn_check(&r.sample_obs, a->ref, r.sample_index, r.sample_dist,
                                 a->scale, r.nsamples, &cr)) {
            fprintf(stderr, "%s: --check: out of memory\n", prog);
            goto done;
        }
        /* the report names sample positions: back to rows of the file */
        if (cr.first_bad_index >= 0)
            cr.first_bad_index = r.sample_rows[cr.first_bad_index];
        if (cr.worst_chosen >= 0)
            cr.worst_chosen = r.sample_rows[cr.worst_chosen];
        if (cr.worst_reported >= 0)
            cr.worst_reported = r.sample_rows[cr.worst_reported];
        check_failed = cr.bad_index > 0 || cr.max_err_chosen > KNN_CHECK_TOL_CHOSEN ||
                       cr.max_err_reported > KNN_CHECK_TOL_REPORTED;
    }
    double t_commit = now_s();
    if (a->out->f && !check_failed && knn_outfile_commit(a->out, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto done;
    }
    t_commit = now_s() - t_commit;
    int64_t n = a->obs->n, m = a->ref->n;
    if (!a->quiet) {
        const cask_runtime_info *in = a->info;
        double pairs = (double)n * (double)m;
        int64_t W = a->window < n ? a->window : n;
        fprintf(stderr, "%s: %lld observations x %lld references = %.4g pairs\n", prog,
                (long long)n, (long long)m, pairs);
        fprintf(stderr, "%s: k = %d, method %s", prog, a->k, r.prune ? "pruned" : "brute");
        if (r.auto_fraction >= 0)
            fprintf(stderr, " (auto, from the first window: about %.3g of the pairs visited "
                    "if pruned)", r.auto_fraction);
        fputc('\n', stderr);
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
                "windows), waiting for I/O %.3f s, total %.3f s%s\n",
                prog, t_ref + r.t_first_load, r.t_compute, r.t_wait_io,
                t_ref + r.t_total + t_commit, out_path ? " (output written as it came)" : "");
        fprintf(stderr, "%s: %.4g pairs/s (compute), %.4g pairs/s (end to end)\n", prog,
                r.t_compute > 0 ? pairs / r.t_compute : 0,
                pairs / (t_ref + r.t_total + t_commit));
    }
    if (a->check && (!a->quiet || check_failed))
        knn_check_print(stderr, prog, &cr);
    if (check_failed && out_path)
        fprintf(stderr, "%s: %s not written: the check failed\n", prog, out_path);
    rc = check_failed ? 3 : 0;
done:
    knn_stream_result_free(&r);
    return rc;
}
