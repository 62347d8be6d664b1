/* knn_graph.c: builds and runs the graph of cask-knn through the public API.
 *
 * Observations are cut into row chunks i, references into chunks j. Each reference chunk
 * is prepared once (prep[j]: unit vectors, in cask_knn_prepared_bytes). With one
 * reference chunk, knn[i,0] (FINAL mode) writes index[i] and dist[i] directly. With J
 * chunks, knn[i,j] (PARTIAL) writes best[i,j]; a binary tree merges best[i,*] into
 * best[i,0] (merge[i,j+s>j] reads best[i,j+s] into best[i,j]); finish[i] turns it into
 * index[i] and dist[i]. Ties go to the lowest index everywhere, so the result never
 * depends on the chunking. index[i]/dist[i] are registered slices of the caller's host
 * arrays with write-back on, so each chunk's result streams to host memory while others
 * still compute; or slices of the caller's GPU memory (plan out_on_device), written in
 * place by tasks pinned to that GPU. The tasks themselves, and those of the k kernels, are added by
 * knn_tasks.c (shared with the ranks of a job, knn_dist.c); this file holds the data. */
#include "knn_graph.h"
#include "knn_chunks.h"
#include "knn_tasks.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "progress.h"

/* The references cut in chunks, as handles, with what their prep tasks write. */
struct knn_refs {
    cask_runtime *rt;
    int64_t m, ref_chunk, nref;
    int ksearch;                       /* 1: prep_sorted (the k kernels), 0: prep */
    int prepared;                      /* 1: prep ran (knn_refs_create), jobs only read */
    int on_device;                     /* the references are the user's GPU memory */
    cask_data **ref, **prep;           /* nref each */
    cask_data **rscratch;              /* nref, ksearch only: prep_sorted's */
    cask_data *ref_all;                /* all references, for the 1-NN finish (PARTIAL) */
};

struct knn_job {
    cask_runtime *rt;
    cask_graph *g;
    int64_t n, m, chunk, ref_chunk, nobs, nref;
    cask_data **obs, **index, **dist;  /* nobs each */
    cask_data **ref, **prep;           /* nref each: refs' */
    cask_data **best;                  /* nobs x nref, PARTIAL only */
    cask_data *ref_all;                /* refs': all references (1-NN PARTIAL only) */
    cask_data **scratch;               /* nobs, ksearch only */
    cask_data **rscratch;              /* nref, ksearch only: refs' */
    knn_refs *refs;                    /* the references, prepared or to prepare */
    int own_refs;                      /* 1: made (and destroyed) by this job */
    int k, ksearch;                    /* neighbours; 1 when the k kernels are used */
    int obs_on_device;                 /* the observations are the user's GPU memory */
    int out_on_device;                 /* index and dist are the user's GPU memory */
    size_t ntasks;
};

/* Registers host memory as a named handle. */
static cask_status reg(knn_job *j, void *p, size_t bytes, cask_data **out, const char *name)
{
    cask_status st = cask_data_register(j->rt, p, bytes, out);
    return st ? st : cask_data_set_name(*out, name);
}

/* Registers rows of a point set as a named handle: in place on its GPU for points there
 * (only read by the graph's tasks, never written: cask_data_register_device). */
static cask_status reg_points(knn_job *j, const knn_points *p, void *at, size_t bytes,
                              cask_data **out, const char *name)
{
    if (!p->on_device)
        return reg(j, at, bytes, out, name);
    cask_status st = cask_data_register_device(j->rt, at, bytes, p->device, out);
    return st ? st : cask_data_set_name(*out, name);
}

/* Registers rows of a result (index or dist): host memory written back as each chunk
 * ends, or GPU memory of plan->out_device, in place (written by tasks pinned there). */
static cask_status reg_result(knn_job *j, const knn_plan *plan, void *at, size_t bytes,
                              cask_data **out, const char *name)
{
    if (!plan->out_on_device) {
        cask_status st = reg(j, at, bytes, out, name);
        return st ? st : cask_data_set_writeback(*out, 1);
    }
    cask_status st = cask_data_register_device(j->rt, at, bytes, plan->out_device, out);
    return st ? st : cask_data_set_name(*out, name);
}

static cask_status create(knn_job *j, size_t bytes, cask_data **out, const char *name)
{
    cask_status st = cask_data_create(j->rt, bytes, out);
    return st ? st : cask_data_set_name(*out, name);
}

static void destroy_all(cask_data **d, int64_t n)
{
    if (!d)
        return;
    for (int64_t i = 0; i < n; i++)
        cask_data_destroy(d[i]);
    free(d);
}

/* One task into the graph of job ctx (knn_add_fn). */
static cask_status add(void *ctx, cask_kernel *kern, const cask_access *acc, int nacc,
                       const void *args, size_t args_size, int priority, uint32_t where,
                       int device, const char *name)
{
    knn_job *j = ctx;
    cask_task_desc d = knn_task_desc(kern, acc, nacc, args, args_size, priority, where, device,
                                     name);
    j->ntasks++;
    return cask_graph_add_task(j->g, &d, NULL);
}

static cask_status fail_rt(knn_job *j, cask_status st, const char *what, char *err,
                           size_t errlen)
{
    char msg[KNN_ERRLEN / 2];
    msg[0] = '\0';
    if (j && j->rt)
        cask_runtime_error(j->rt, msg, sizeof msg);
    return knn_errorf(st, err, errlen, "%s: %s%s%s", what, cask_status_string(st),
                      msg[0] ? ": " : "", msg);
}

/* The handles of refs (ksearch: prepared for the k kernels; partial: several reference
 * chunks and the 1-NN kernels, whose finish reads every reference). */
static cask_status refs_make(cask_runtime *rt, const knn_points *ref, int64_t ref_chunk,
                             int ksearch, knn_refs **out, char *err, size_t errlen)
{
    cask_status st;
    knn_refs *r = calloc(1, sizeof *r);
    if (!r)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "out of memory");
    r->rt = rt;
    r->m = ref->n;
    r->ksearch = ksearch;
    r->on_device = ref->on_device;
    knn_cut(ref->n, ref_chunk, &r->ref_chunk, &r->nref);
    r->ref = calloc((size_t)r->nref, sizeof *r->ref);
    r->prep = calloc((size_t)r->nref, sizeof *r->prep);
    if (ksearch)
        r->rscratch = calloc((size_t)r->nref, sizeof *r->rscratch);
    if (!r->ref || !r->prep || (ksearch && !r->rscratch)) {
        knn_refs_destroy(r);
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "out of memory");
    }
    knn_job ctx = {.rt = rt};   /* for reg, create and fail_rt */
    char nb[64];
    size_t re = 2 * knn_elem_bytes(ref);
    for (int64_t q = 0; q < r->nref; q++) {
        int64_t r0 = q * r->ref_chunk, m = knn_rows_of(r->m, r->ref_chunk, q);
        if ((st = reg_points(&ctx, ref, (char *)ref->data + r0 * re, (size_t)m * re,
                             &r->ref[q], knn_name(nb, "ref[%lld]", (long long)q))) ||
            (st = create(&ctx, ksearch ? cask_knn_sorted_bytes(m) : cask_knn_prepared_bytes(m),
                         &r->prep[q], knn_name(nb, "prepared[%lld]", (long long)q))) ||
            (ksearch && (st = create(&ctx, cask_knn_scratch_bytes(m), &r->rscratch[q],
                                     knn_name(nb, "rscratch[%lld]", (long long)q)))))
            goto fail;
    }
    /* finish re-reads the winning reference's coordinates: a read-only view of the whole
     * reference array beside the chunk views (not read by kfinish). */
    if (r->nref > 1 && !ksearch &&
        (st = reg_points(&ctx, ref, ref->data, (size_t)r->m * re, &r->ref_all, "refs")))
        goto fail;
    *out = r;
    return CASK_OK;
fail:
    fail_rt(&ctx, st, "registering the references", err, errlen);
    knn_refs_destroy(r);
    return st;
}

/* What every task of a job or of a refs graph shares. */
static knn_build build_of(const cask_knn_kernels *k, void *ctx, int64_t n, const knn_refs *r,
                          const knn_plan *plan, int kk, cask_knn_points ofmt,
                          cask_knn_points rfmt)
{
    knn_build b = {k, add, ctx, n, r->m, 0, r->ref_chunk, r->nref, kk, r->ksearch,
                   plan->prune ? 1 : 0, plan->scale, plan->where, ofmt, rfmt, 0, -1};
    return b;
}

static cask_status add_preps(const knn_build *b, const knn_refs *r)
{
    char nb[64];
    cask_status st = CASK_OK;
    for (int64_t q = 0; q < r->nref && !st; q++)
        st = knn_add_prep(b, q, r->ref[q], r->prep[q], r->ksearch ? r->rscratch[q] : NULL, -1,
                          knn_name(nb, "prep[%lld]", (long long)q));
    return st;
}

cask_status knn_refs_create(cask_runtime *rt, const cask_knn_kernels *k, const knn_points *ref,
                            const knn_plan *plan, knn_refs **out, char *err, size_t errlen)
{
    *out = NULL;
    if (plan->ref_chunk <= 0 || ref->n <= 0)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "empty references or chunk");
    knn_refs *r;
    int kk = plan->k > 1 ? plan->k : 1;
    cask_status st = refs_make(rt, ref, plan->ref_chunk, kk > 1 || plan->prune, &r, err,
                               errlen);
    if (st)
        return st;
    knn_job ctx = {.rt = rt};
    cask_knn_points fmt = {ref->f64, ref->degrees};
    knn_build b = build_of(k, &ctx, 0, r, plan, kk, fmt, fmt);
    if ((st = cask_graph_create(rt, &ctx.g)) || (st = add_preps(&b, r)) ||
        (st = cask_graph_compute(ctx.g))) {
        const char *msg = ctx.g ? cask_graph_error(ctx.g) : NULL;
        if (msg && msg[0])
            knn_errorf(st, err, errlen, "preparing the references: %s: %s",
                       cask_status_string(st), msg);
        else
            fail_rt(&ctx, st, "preparing the references", err, errlen);
        cask_graph_destroy(ctx.g);
        knn_refs_destroy(r);
        return st;
    }
    cask_graph_destroy(ctx.g);
    r->prepared = 1;
    *out = r;
    return CASK_OK;
}

void knn_refs_destroy(knn_refs *r)
{
    if (!r)
        return;
    destroy_all(r->rscratch, r->nref);
    destroy_all(r->prep, r->nref);
    destroy_all(r->ref, r->nref);
    cask_data_destroy(r->ref_all);
    free(r);
}

cask_status knn_job_create(cask_runtime *rt, const cask_knn_kernels *k,
                           const knn_points *obs, const knn_points *ref, int32_t *index,
                           float *dist, const knn_plan *plan, knn_job **out, char *err,
                           size_t errlen)
{
    return knn_job_create_on(rt, k, obs, ref, NULL, index, dist, plan, out, err, errlen);
}

cask_status knn_job_create_on(cask_runtime *rt, const cask_knn_kernels *k,
                              const knn_points *obs, const knn_points *ref, knn_refs *refs,
                              int32_t *index, float *dist, const knn_plan *plan,
                              knn_job **out, char *err, size_t errlen)
{
    cask_status st;
    *out = NULL;
    if (plan->chunk <= 0 || plan->ref_chunk <= 0 || obs->n <= 0 || ref->n <= 0)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "empty input or chunk");
    int kk = plan->k > 1 ? plan->k : 1;
    if (kk > CASK_KNN_KMAX)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "k = %d: at most %d", kk,
                          CASK_KNN_KMAX);
    int ksearch = kk > 1 || plan->prune;
    if (refs && (refs->m != ref->n || refs->ksearch != ksearch ||
                 refs->ref_chunk != (plan->ref_chunk < ref->n ? plan->ref_chunk : ref->n)))
        return knn_errorf(CASK_ERR_INVALID, err, errlen,
                          "prepared references of another plan (%lld rows in chunks of %lld, "
                          "%s kernels)", (long long)refs->m, (long long)refs->ref_chunk,
                          refs->ksearch ? "k" : "1-NN");
    knn_job *j = calloc(1, sizeof *j);
    if (!j)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "out of memory");
    j->rt = rt;
    j->n = obs->n;
    j->m = ref->n;
    j->k = kk;
    j->ksearch = ksearch;
    j->obs_on_device = obs->on_device;
    j->out_on_device = plan->out_on_device;
    if (!refs) {
        if ((st = refs_make(rt, ref, plan->ref_chunk, ksearch, &refs, err, errlen))) {
            free(j);
            return st;
        }
        j->own_refs = 1;
    }
    j->refs = refs;
    j->ref = refs->ref;
    j->prep = refs->prep;
    j->rscratch = refs->rscratch;
    j->ref_all = refs->ref_all;
    j->ref_chunk = refs->ref_chunk;
    j->nref = refs->nref;
    knn_cut(obs->n, plan->chunk, &j->chunk, &j->nobs);
    int partial = j->nref > 1;
    const size_t K = (size_t)j->k;

    j->obs = calloc((size_t)j->nobs, sizeof *j->obs);
    j->index = calloc((size_t)j->nobs, sizeof *j->index);
    j->dist = calloc((size_t)j->nobs, sizeof *j->dist);
    if (partial)
        j->best = calloc((size_t)(j->nobs * j->nref), sizeof *j->best);
    if (j->ksearch)
        j->scratch = calloc((size_t)j->nobs, sizeof *j->scratch);
    if (!j->obs || !j->index || !j->dist || (partial && !j->best) ||
        (j->ksearch && !j->scratch)) {
        st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "out of memory");
        goto fail;
    }

    const char *what = "registering data";
    char nb[64];
    size_t oe = 2 * knn_elem_bytes(obs);
    for (int64_t i = 0; i < j->nobs; i++) {
        int64_t r0 = i * j->chunk, n = knn_rows_of(j->n, j->chunk, i);
        if ((st = reg_points(j, obs, (char *)obs->data + r0 * oe, (size_t)n * oe,
                             &j->obs[i], knn_name(nb, "obs[%lld]", (long long)i))) ||
            (st = reg_result(j, plan, index + r0 * K, (size_t)n * K * sizeof *index,
                             &j->index[i], knn_name(nb, "index[%lld]", (long long)i))) ||
            (st = reg_result(j, plan, dist + r0 * K, (size_t)n * K * sizeof *dist,
                             &j->dist[i], knn_name(nb, "dist[%lld]", (long long)i))) ||
            (j->ksearch && (st = create(j, cask_knn_scratch_bytes(n), &j->scratch[i],
                                        knn_name(nb, "scratch[%lld]", (long long)i)))))
            goto fail_rt;
    }
    if (partial) {
        for (int64_t i = 0; i < j->nobs; i++)
            for (int64_t r = 0; r < j->nref; r++)
                if ((st = create(j, (size_t)knn_rows_of(j->n, j->chunk, i) * K *
                                        sizeof(cask_knn_best),
                                 &j->best[i * j->nref + r],
                                 knn_name(nb, "best[%lld,%lld]", (long long)i, (long long)r))))
                    goto fail_rt;
    }

    what = "building the graph";
    if ((st = cask_graph_create(rt, &j->g)))
        goto fail_rt;
    knn_build b = build_of(k, j, j->n, refs, plan, j->k, (cask_knn_points){obs->f64, obs->degrees},
                           (cask_knn_points){ref->f64, ref->degrees});
    b.chunk = j->chunk;
    b.pin_out = plan->out_on_device;
    b.out_device = plan->out_device;
    /* prepared references are only read: their prep ran once, in knn_refs_create */
    if (!refs->prepared && (st = add_preps(&b, refs)))
        goto fail_rt;
    for (int64_t i = 0; i < j->nobs; i++) {
        knn_chunk_data d = {j->obs[i], j->ksearch ? j->scratch[i] : NULL, j->ref_all,
                            j->index[i], j->dist[i], j->prep,
                            partial ? j->best + i * j->nref : NULL};
        if ((st = knn_add_chunk(&b, i, &d, -1)))
            goto fail_rt;
    }
    *out = j;
    return CASK_OK;

fail_rt:
    fail_rt(j, st, what, err, errlen);
fail:
    knn_job_destroy(j);
    return st;
}

cask_status knn_job_run(knn_job *j, int progress, char *err, size_t errlen)
{
    cask_status st = cask_graph_submit(j->g);
    if (!st) {
        knn_progress *bar = progress ? knn_progress_start(j->g, stderr, "cask-knn", 1.0)
                                     : NULL;
        st = cask_graph_wait(j->g);
        knn_progress_stop(bar);
    }
    if (st) {
        const char *msg = cask_graph_error(j->g);
        if (msg && msg[0])
            return knn_errorf(st, err, errlen, "computing: %s: %s", cask_status_string(st),
                              msg);
        return fail_rt(j, st, "computing", err, errlen);
    }
    /* Write-back has normally brought every result home already; acquiring makes sure
     * (and is what a correct program must do before reading registered memory). Results
     * on a GPU were written in place by tasks pinned there: nothing to bring. */
    for (int64_t i = 0; i < j->nobs && !j->out_on_device; i++) {
        void *p;
        if ((st = cask_data_acquire(j->index[i], CASK_READ, &p)) ||
            (st = cask_data_release(j->index[i])) ||
            (st = cask_data_acquire(j->dist[i], CASK_READ, &p)) ||
            (st = cask_data_release(j->dist[i])))
            return fail_rt(j, st, "reading the results back", err, errlen);
    }
    return CASK_OK;
}

static cask_status touch(cask_data *d)
{
    void *p;
    cask_status st = cask_data_acquire(d, CASK_RW, &p);
    if (st)
        return st;
    return cask_data_release(d);
}

cask_status knn_job_make_cold(knn_job *j, char *err, size_t errlen)
{
    cask_status st = CASK_OK;
    /* points on a GPU stay there: their replica is the user's memory, not a copy */
    for (int64_t i = 0; i < j->nobs && !st && !j->obs_on_device; i++)
        st = touch(j->obs[i]);
    /* prepared references are shared by the jobs of a stream and never change */
    int refs_cold = !j->refs->prepared && !j->refs->on_device;
    for (int64_t r = 0; r < j->nref && !st && refs_cold; r++)
        st = touch(j->ref[r]);
    if (!st && j->ref_all && refs_cold)
        st = touch(j->ref_all);
    if (st)
        return fail_rt(j, st, "dropping device copies", err, errlen);
    return CASK_OK;
}

void knn_job_shape(const knn_job *j, int64_t *obs_chunks, int64_t *ref_chunks,
                   size_t *ntasks)
{
    *obs_chunks = j->nobs;
    *ref_chunks = j->nref;
    *ntasks = j->ntasks;
}

cask_status knn_job_dot(const knn_job *j, FILE *out)
{
    return cask_graph_dot(j->g, out, 1);
}

void knn_job_destroy(knn_job *j)
{
    if (!j)
        return;
    cask_graph_destroy(j->g);
    destroy_all(j->best, j->nobs * j->nref);
    destroy_all(j->scratch, j->nobs);
    if (j->own_refs)
        knn_refs_destroy(j->refs);
    destroy_all(j->index, j->nobs);
    destroy_all(j->dist, j->nobs);
    destroy_all(j->obs, j->nobs);
    free(j);
}

/* ---- synthetic points as tasks ---- */

cask_status knn_generate_cpu(cask_task_ctx *ctx)
{
    size_t size;
    const knn_gen_args *a = cask_task_args(ctx, &size);
    void *out = cask_task_buffer(ctx, 0);
    size_t need = (size_t)a->n * 2 * (a->f64 ? sizeof(double) : sizeof(float));
    if (size != sizeof *a || !out || cask_task_buffer_size(ctx, 0) != need)
        return cask_task_fail(ctx, "bad arguments");
    if (a->clusters > 0)
        knn_generate_clustered(a->seed, a->stream, a->first, a->n, a->f64, a->clusters, out);
    else
        knn_generate_points(a->seed, a->stream, a->first, a->n, a->f64, out);
    return CASK_OK;
}

cask_status knn_generate_tasks(cask_runtime *rt, uint64_t seed, knn_points *obs,
                               knn_points *ref, int64_t chunk, int64_t clusters, char *err,
                               size_t errlen)
{
    return knn_generate_part(rt, seed, obs, ref, chunk, 0, clusters, 0, 1, err, errlen);
}

cask_status knn_generate_part(cask_runtime *rt, uint64_t seed, knn_points *obs,
                              knn_points *ref, int64_t chunk, int64_t piece, int64_t clusters,
                              int part, int parts, char *err, size_t errlen)
{
    cask_kernel_desc kd = {0};
    cask_kernel *kern;
    cask_graph *g = NULL;
    cask_data **h = NULL;
    int64_t nh = 0, cap;
    knn_points *sets[2] = {obs, ref};
    cask_status st;
    knn_job ctx = {.rt = rt}; /* only for fail_rt's message */

    if (chunk <= 0 || piece < 0)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "bad chunk");
    if (!piece || piece > chunk)
        piece = chunk;
    int64_t per = (chunk + piece - 1) / piece;   /* tasks a chunk */
    cap = ((obs ? (obs->n + chunk - 1) / chunk : 0) + (ref ? (ref->n + chunk - 1) / chunk : 0)) *
          per;
    kd.name = "knn_generate";
    kd.cpu = knn_generate_cpu;
    if ((st = cask_kernel_register(rt, &kd, &kern)) || (st = cask_graph_create(rt, &g)))
        goto fail;
    h = calloc((size_t)cap, sizeof *h);
    if (!h) {
        st = CASK_ERR_NOMEM;
        goto fail;
    }
    for (int s = 0; s < 2; s++) {
        knn_points *p = sets[s];
        if (!p)
            continue;
        size_t row = 2 * knn_elem_bytes(p);
        for (int64_t c = 0; c * chunk < p->n; c++) {
            if (s == 0 && c % parts != part)
                continue;   /* another rank's observations */
            int64_t rows = knn_rows_of(p->n, chunk, c);
            for (int64_t f = 0; f < rows; f += piece) {
                knn_gen_args a = {seed, s == 0 ? KNN_STREAM_OBS : KNN_STREAM_REF,
                                  c * chunk + f, rows - f < piece ? rows - f : piece, clusters,
                                  p->f64};
                if ((st = cask_data_register(rt, (char *)p->data + (size_t)a.first * row,
                                             (size_t)a.n * row, &h[nh])))
                    goto fail;
                cask_access acc = {h[nh++], CASK_WRITE};
                cask_task_desc d = {0};
                d.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE;
                d.kernel = kern;
                d.access = &acc;
                d.naccess = 1;
                d.args = &a;
                d.args_size = sizeof a;
                d.where = CASK_WHERE_CPU;
                if ((st = cask_graph_add_task(g, &d, NULL)))
                    goto fail;
            }
        }
        p->degrees = 0;
    }
    if ((st = cask_graph_compute(g))) {
        knn_errorf(st, err, errlen, "generating points: %s: %s", cask_status_string(st),
                   cask_graph_error(g));
        cask_graph_destroy(g);
        destroy_all(h, nh);
        return st;
    }
    cask_graph_destroy(g);
    destroy_all(h, nh); /* flushes to the host arrays */
    return CASK_OK;

fail:
    fail_rt(&ctx, st, "generating points", err, errlen);
    cask_graph_destroy(g);
    destroy_all(h, nh);
    return st;
}
