/* knn_dist.c: the graph of cask-knn across the ranks of a job (cask/distributed.h), and the
 * small agreement the ranks need before it (did every rank load its input?).
 *
 * The graph is knn_graph.c's, cut by owner: observation chunk i, its results, its
 * partial bests (and scratch, for the k kernels) belong to rank i % P; each rank r owns
 * a replica of the references (ref[r,j], refs[r]: the rank's own copy of the input) and
 * prepares it (prep[r,j]; sorted by prep_sorted for the k kernels), so every search
 * reads only data its rank holds and nothing travels but the results, gathered into rank
 * 0's arrays (the tasks are knn_tasks.c's, as in one process; chunks owned by rank 0
 * write rank 0's arrays in place). With --out written in place (knn_dist_out.h) even the
 * results stay: each rank's write tasks write its chunks' rows into the output file.
 * The same kernels, chunk boundaries and tie rule as one process make the output the
 * same bytes whatever P.
 *
 * Every rank holds the whole input, so each input chunk has a loader (a copy from this
 * rank's input): if a rank dies, the survivors make its chunks again and recompute its
 * searches (cask_dist_data_set_loader), and the output is the same bytes. Generated
 * observations are the exception: each rank generates only its own chunks' rows (the
 * others' would be work repeated on every rank), and their loader generates them again
 * from the seed. */
#include "knn_dist.h"
#include "knn_dist_out.h"
#include "knn_chunks.h"
#include "knn_tasks.h"
#include "generate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the job and its handles ---- */

/* Declares a datum owned by owner; host memory p is used on the owner only (NULL: the
 * runtime allocates it there). cask_dist_finalize destroys the handle. */
static cask_status declare(knn_cluster *c, size_t bytes, int owner, void *p, cask_data **out)
{
    return cask_dist_data_create(c->dist, bytes, owner, owner == c->rank ? p : NULL, out);
}

/* Loaders (cask_dist_data_set_loader): the chunk again, on whichever rank needs it. */
typedef struct load_copy_args {
    const void *src;          /* this rank's copy of the input, as big as the chunk */
} load_copy_args;

static cask_status load_copy_cpu(cask_task_ctx *ctx)
{
    const load_copy_args *a = cask_task_args(ctx, NULL);
    memcpy(cask_task_buffer(ctx, 0), a->src, cask_task_buffer_size(ctx, 0));
    return CASK_OK;
}

/* Declares an input chunk that every rank holds at src: owned by owner, made again from
 * src anywhere. */
static cask_status declare_input(knn_cluster *c, size_t bytes, int owner, void *src,
                                 cask_data **out)
{
    cask_status st = declare(c, bytes, owner, src, out);
    load_copy_args a = {src};
    return st ? st : cask_dist_data_set_loader(c->dist, *out, c->load_copy, &a, sizeof a);
}

static cask_status dist_fail(knn_cluster *c, cask_status st, const char *what, char *err,
                             size_t errlen)
{
    char msg[KNN_ERRLEN / 2];
    msg[0] = '\0';
    cask_runtime_error(c->rt, msg, sizeof msg);
    if (!msg[0] && c->dist)
        snprintf(msg, sizeof msg, "%s", cask_dist_error(c->dist));
    /* the runtime's message may already begin with the status's name */
    const char *name = cask_status_string(st);
    int named = !strncmp(msg, name, strlen(name));
    return knn_errorf(st, err, errlen, "%s: %s%s%s", what, named ? "" : name,
                      msg[0] && !named ? ": " : "", msg);
}

cask_status knn_cluster_open(cask_runtime *rt, knn_cluster *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->rt = rt;
    cask_status st = cask_dist_init(rt, NULL, &c->dist);
    if (st)
        return dist_fail(c, st, "joining the job", err, errlen);
    c->rank = cask_dist_rank(c->dist);
    c->size = cask_dist_size(c->dist);
    c->local_rank = cask_dist_local_rank(c->dist);
    c->local_size = cask_dist_local_size(c->dist);
    cask_kernel_desc kd = {0};
    kd.name = "knn_load_copy";
    kd.cpu = load_copy_cpu;
    if ((st = cask_kernel_register(rt, &kd, &c->load_copy)))
        return dist_fail(c, st, "registering kernels", err, errlen);
    kd.name = "knn_load_generate";
    kd.cpu = knn_generate_cpu;
    if ((st = cask_kernel_register(rt, &kd, &c->load_gen)) ||
        (st = knn_out_kernels_register(c)))
        return dist_fail(c, st, "registering kernels", err, errlen);
    return CASK_OK;
}

cask_status knn_cluster_close(knn_cluster *c)
{
    cask_status st = c->dist ? cask_dist_finalize(c->dist) : CASK_OK;
    c->dist = NULL;
    return st;
}

int knn_ranks_agree(knn_cluster *c, const char *prog, int failed, int64_t *value, char *err,
                    size_t errlen)
{
    int first_failed;
    if (knn_cluster_agree(c, failed, failed ? INT64_MAX : *value, &first_failed, value, err,
                          errlen)) {
        fprintf(stderr, "%s: rank %d: %s\n", prog, c->rank, err);
        return 1;
    }
    if (first_failed >= 0) {
        if (first_failed == c->rank)
            fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    return 0;
}

cask_status knn_cluster_agree(knn_cluster *c, int failed, int64_t value, int *first_failed,
                              int64_t *min_value, char *err, size_t errlen)
{
    /* the lowest rank that failed, and the smallest value of those that did not */
    int64_t v[2] = {failed ? c->rank : INT64_MAX, failed ? INT64_MAX : value};
    cask_status st = cask_dist_allreduce(c->dist, v, 2, CASK_DIST_MIN);
    if (st)
        return knn_errorf(st, err, errlen, "agreeing with the other ranks: %s: %s",
                          cask_status_string(st), cask_dist_error(c->dist));
    *first_failed = v[0] == INT64_MAX ? -1 : (int)v[0];
    *min_value = v[1];
    return CASK_OK;
}

/* ---- the search graph ---- */

struct knn_dist_job {
    knn_cluster *c;
    cask_dist_graph *g;
    int64_t n, m, chunk, ref_chunk, nobs, nref;
    cask_data **obs, **index, **dist;  /* nobs each */
    cask_data **ref, **prep;           /* P x nref: rank r's replica */
    cask_data **ref_all;               /* P, PARTIAL 1-NN only */
    cask_data **best;                  /* nobs x nref, PARTIAL only */
    cask_data **scratch;               /* nobs, ksearch only */
    cask_data **rscratch;              /* P x nref, ksearch only: prep_sorted's */
    int k, ksearch;                    /* neighbours; 1 when the k kernels are used */
    size_t ntasks;
    knn_out_job *out;                  /* --out written in place (NULL: gathered) */
    cask_dist_file *out_file;
};

/* One task into the graph of job ctx (knn_add_fn). */
static cask_status add(void *ctx, cask_kernel *kern, const cask_access *acc, int nacc,
                       const void *args, size_t args_size, int priority, uint32_t where,
                       int device, const char *name)
{
    knn_dist_job *j = ctx;
    cask_task_desc d = knn_task_desc(kern, acc, nacc, args, args_size, priority, where, device,
                                     name);
    j->ntasks++;
    return cask_dist_graph_add_task(j->g, &d, NULL);
}

/* Observation chunk i's results, owned by its rank o: written there (in place), or sent
 * to rank 0's arrays (rank 0's own are its arrays already). */
static cask_status place_results(knn_dist_job *j, int64_t i, int32_t *index, float *dist)
{
    if (j->out)
        return knn_out_job_add_chunk(j->out, j->g, i, j->index[i], j->dist[i]);
    if (i % j->c->size == 0)
        return CASK_OK;
    int64_t r0 = i * j->chunk * j->k;
    int me0 = j->c->rank == 0;
    cask_status st = cask_dist_graph_gather(j->g, j->index[i], 0, me0 ? index + r0 : NULL);
    return st ? st : cask_dist_graph_gather(j->g, j->dist[i], 0, me0 ? dist + r0 : NULL);
}

cask_status knn_dist_job_create(knn_cluster *c, const cask_knn_kernels *k,
                                const knn_points *obs, const knn_points *ref, int32_t *index,
                                float *dist, const knn_plan *plan, const int *devices,
                                int ndevices, const knn_out *in_place, int64_t samples,
                                knn_dist_job **out, char *err, size_t errlen)
{
    cask_status st;
    int P = c->size, me = c->rank;
    *out = NULL;
    if (plan->chunk <= 0 || plan->ref_chunk <= 0 || obs->n <= 0 || ref->n <= 0)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "empty input or chunk");
    knn_dist_job *j = calloc(1, sizeof *j);
    if (!j)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "out of memory");
    j->c = c;
    j->n = obs->n;
    j->m = ref->n;
    knn_cut(obs->n, plan->chunk, &j->chunk, &j->nobs);
    knn_cut(ref->n, plan->ref_chunk, &j->ref_chunk, &j->nref);
    int partial = j->nref > 1;
    j->k = plan->k > 1 ? plan->k : 1;
    j->ksearch = j->k > 1 || plan->prune;
    if (j->k > CASK_KNN_KMAX) {
        knn_dist_job_destroy(j);
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "k = %d: at most %d", plan->k,
                          CASK_KNN_KMAX);
    }
    const size_t K = (size_t)j->k;
    j->obs = calloc((size_t)j->nobs, sizeof *j->obs);
    j->index = calloc((size_t)j->nobs, sizeof *j->index);
    j->dist = calloc((size_t)j->nobs, sizeof *j->dist);
    j->ref = calloc((size_t)(P * j->nref), sizeof *j->ref);
    j->prep = calloc((size_t)(P * j->nref), sizeof *j->prep);
    j->ref_all = calloc((size_t)P, sizeof *j->ref_all);
    if (partial)
        j->best = calloc((size_t)(j->nobs * j->nref), sizeof *j->best);
    if (j->ksearch) {
        j->scratch = calloc((size_t)j->nobs, sizeof *j->scratch);
        j->rscratch = calloc((size_t)(P * j->nref), sizeof *j->rscratch);
    }
    if (!j->obs || !j->index || !j->dist || !j->ref || !j->prep || !j->ref_all ||
        (partial && !j->best) || (j->ksearch && (!j->scratch || !j->rscratch))) {
        knn_dist_job_destroy(j);
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "out of memory");
    }

    /* Declarations: the same order on every rank (it names the data across ranks). */
    const char *what = "declaring data";
    size_t oe = 2 * knn_elem_bytes(obs), re = 2 * knn_elem_bytes(ref);
    for (int64_t i = 0; i < j->nobs; i++) {
        int64_t r0 = i * j->chunk, n = knn_rows_of(j->n, j->chunk, i);
        int o = (int)(i % P);
        knn_gen_args ga = {c->gen_seed, KNN_STREAM_OBS, r0, n, c->gen_clusters, obs->f64};
        if ((st = c->gen_obs
                  ? declare(c, (size_t)n * oe, o, (char *)obs->data + r0 * oe, &j->obs[i])
                  : declare_input(c, (size_t)n * oe, o, (char *)obs->data + r0 * oe,
                                  &j->obs[i])) ||
            (c->gen_obs && (st = cask_dist_data_set_loader(c->dist, j->obs[i], c->load_gen,
                                                            &ga, sizeof ga))) ||
            (st = declare(c, (size_t)n * K * sizeof *index, o,
                          o == 0 && index ? index + r0 * K : NULL, &j->index[i])) ||
            (st = declare(c, (size_t)n * K * sizeof *dist, o,
                          o == 0 && dist ? dist + r0 * K : NULL, &j->dist[i])) ||
            (j->ksearch &&
             (st = declare(c, cask_knn_scratch_bytes(n), o, NULL, &j->scratch[i]))))
            goto fail;
        if (o == me && ((st = cask_data_set_writeback(j->index[i], 1)) ||
                        (st = cask_data_set_writeback(j->dist[i], 1))))
            goto fail;
    }
    for (int r = 0; r < P; r++)
        for (int64_t q = 0; q < j->nref; q++) {
            int64_t r0 = q * j->ref_chunk, m = knn_rows_of(j->m, j->ref_chunk, q);
            if ((st = declare_input(c, (size_t)m * re, r, (char *)ref->data + r0 * re,
                                    &j->ref[r * j->nref + q])) ||
                (st = declare(c, j->ksearch ? cask_knn_sorted_bytes(m)
                                            : cask_knn_prepared_bytes(m),
                              r, NULL, &j->prep[r * j->nref + q])) ||
                (j->ksearch && (st = declare(c, cask_knn_scratch_bytes(m), r, NULL,
                                             &j->rscratch[r * j->nref + q]))))
                goto fail;
        }
    if (partial) {
        /* finish re-reads the winning reference's coordinates (not kfinish) */
        for (int r = 0; r < P && !j->ksearch; r++)
            if ((st = declare_input(c, (size_t)j->m * re, r, ref->data, &j->ref_all[r])))
                goto fail;
        for (int64_t i = 0; i < j->nobs; i++)
            for (int64_t q = 0; q < j->nref; q++)
                if ((st = declare(c, (size_t)knn_rows_of(j->n, j->chunk, i) * K *
                                         sizeof(cask_knn_best),
                                  (int)(i % P), NULL, &j->best[i * j->nref + q])))
                    goto fail;
    }

    if (in_place && (st = knn_out_job_create(c, in_place, j->nobs, j->chunk, samples, &j->out)))
        goto fail;
    j->out_file = in_place ? in_place->file : NULL;

    what = "building the graph";
    if ((st = cask_dist_graph_create(c->dist, &j->g)))
        goto fail;
    /* Each rank prepares its replica of the references (prep[r,q]); observation chunk i
     * is searched, merged and finished by its owner, against that owner's replica. */
    knn_build b = {k, add, j, j->n, j->m, j->chunk, j->ref_chunk, j->nref, j->k,
                   j->ksearch, plan->prune ? 1 : 0, plan->scale, plan->where,
                   {obs->f64, obs->degrees}, {ref->f64, ref->degrees}, 0, -1};
    char nb[64];
    for (int r = 0; r < P; r++)
        for (int64_t q = 0; q < j->nref; q++) {
            int64_t rq = r * j->nref + q;
            int dev = r == me && ndevices > 0 ? devices[q % ndevices] : -1;
            if ((st = knn_add_prep(&b, q, j->ref[rq], j->prep[rq],
                                   j->ksearch ? j->rscratch[rq] : NULL, dev,
                                   knn_name(nb, "prep[%d,%lld]", r, (long long)q))))
                goto fail;
        }
    for (int64_t i = 0; i < j->nobs; i++) {
        int o = (int)(i % P);
        int dev = o == me && ndevices > 0 ? devices[(i / P) % ndevices] : -1;
        knn_chunk_data d = {j->obs[i], j->ksearch ? j->scratch[i] : NULL, j->ref_all[o],
                            j->index[i], j->dist[i], j->prep + o * j->nref,
                            partial ? j->best + i * j->nref : NULL};
        if ((st = knn_add_chunk(&b, i, &d, dev)) || (st = place_results(j, i, index, dist)))
            goto fail;
    }
    if (j->out && (st = knn_out_job_finish(j->out, j->g)))
        goto fail;
    *out = j;
    return CASK_OK;

fail:
    dist_fail(c, st, what, err, errlen);
    knn_dist_job_destroy(j);
    return st;
}

cask_status knn_dist_job_run(knn_dist_job *j, char *err, size_t errlen)
{
    knn_cluster *c = j->c;
    cask_status st = cask_dist_graph_compute(j->g);
    if (st)
        return knn_errorf(st, err, errlen, "computing: %s: %s", cask_status_string(st),
                          cask_dist_graph_error(j->g));
    if (j->out && (st = cask_dist_file_receipts(j->out_file)))
        return dist_fail(c, st, "noting the rows written", err, errlen);
    /* Gathered chunks are in rank 0's arrays; rank 0's own chunks are its handles, which
     * acquiring brings home. (In place, each rank wrote its own.) */
    for (int64_t i = 0; c->rank == 0 && !j->out && i < j->nobs; i += c->size) {
        void *p;
        if ((st = cask_data_acquire(j->index[i], CASK_READ, &p)) ||
            (st = cask_data_release(j->index[i])) ||
            (st = cask_data_acquire(j->dist[i], CASK_READ, &p)) ||
            (st = cask_data_release(j->dist[i])))
            return dist_fail(c, st, "reading the results back", err, errlen);
    }
    return CASK_OK;
}

static cask_status touch(cask_data *d)
{
    void *p;
    cask_status st = cask_data_acquire(d, CASK_RW, &p);
    return st ? st : cask_data_release(d);
}

cask_status knn_dist_job_make_cold(knn_dist_job *j, char *err, size_t errlen)
{
    knn_cluster *c = j->c;
    cask_status st = CASK_OK;
    for (int64_t i = c->rank; i < j->nobs && !st; i += c->size)
        st = touch(j->obs[i]);
    for (int64_t q = 0; q < j->nref && !st; q++)
        st = touch(j->ref[c->rank * j->nref + q]);
    if (!st && j->best && !j->ksearch)
        st = touch(j->ref_all[c->rank]);
    if (st)
        return dist_fail(c, st, "dropping device copies", err, errlen);
    return CASK_OK;
}

cask_status knn_dist_job_samples(knn_dist_job *j, const int32_t **index, const float **dist,
                                 char *err, size_t errlen)
{
    cask_status st = j->out ? knn_out_job_samples(j->out, index, dist) : CASK_ERR_INVALID;
    return st ? dist_fail(j->c, st, "reading the sampled rows back", err, errlen) : CASK_OK;
}

void knn_dist_job_shape(const knn_dist_job *j, int64_t *obs_chunks, int64_t *ref_chunks,
                        size_t *ntasks)
{
    *obs_chunks = j->nobs;
    *ref_chunks = j->nref;
    *ntasks = j->ntasks;
}

void knn_dist_job_destroy(knn_dist_job *j)
{
    if (!j)
        return;
    cask_dist_graph_destroy(j->g);
    knn_out_job_destroy(j->out);
    free(j->obs);
    free(j->index);
    free(j->dist);
    free(j->ref);
    free(j->prep);
    free(j->ref_all);
    free(j->best);
    free(j->scratch);
    free(j->rscratch);
    free(j);
}
