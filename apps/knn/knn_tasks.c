/* knn_tasks.c: the tasks of a search (knn_tasks.h). Priorities: prepare first (3), then
 * finish (2) and merge (1) a chunk before new searches (0), so results leave and partial
 * buffers are freed early. Ties go to the lowest index in every kernel, so the result
 * never depends on the chunking. */
#include "knn_tasks.h"
#include "knn_chunks.h"

cask_status knn_add_prep(const knn_build *b, int64_t q, cask_data *ref, cask_data *prep,
                         cask_data *scratch, int device, const char *name)
{
    cask_knn_prep_args a = {knn_rows_of(b->m, b->ref_chunk, q), b->rfmt};
    cask_access acc[3] = {{ref, CASK_READ}, {prep, CASK_WRITE}, {scratch, CASK_WRITE}};
    return b->add(b->ctx, b->ksearch ? b->kernels->prep_sorted : b->kernels->prep, acc,
                  b->ksearch ? 3 : 2, &a, sizeof a, 3, b->where, device, name);
}

/* Where a task that writes index and dist runs: out_device's GPU with pin_out. */
static uint32_t out_where(const knn_build *b)
{
    return b->pin_out ? CASK_WHERE_GPU : b->where;
}

static int out_device(const knn_build *b, int device)
{
    return b->pin_out ? b->out_device : device;
}

/* Chunk i's searches (n rows), one per reference chunk: FINAL into index and dist with
 * one reference chunk, else PARTIAL into best[q]; the k kernels' after korder (which
 * orders the chunk in scratch for them). */
static cask_status add_searches(const knn_build *b, int64_t i, int64_t n,
                                const knn_chunk_data *d, int device)
{
    const cask_knn_kernels *k = b->kernels;
    const int partial = b->nref > 1;
    char nb[64];
    cask_status st;
    if (b->ksearch) {
        cask_knn_korder_args oa = {n, b->ofmt, b->prune, 0};
        cask_access oacc[2] = {{d->obs, CASK_READ}, {d->scratch, CASK_WRITE}};
        if ((st = b->add(b->ctx, k->korder, oacc, 2, &oa, sizeof oa, 0, b->where, device,
                         knn_name(nb, "order[%lld]", (long long)i))))
            return st;
    }
    for (int64_t q = 0; q < b->nref; q++) {
        int64_t m = knn_rows_of(b->m, b->ref_chunk, q), base = q * b->ref_chunk;
        int mode = partial ? CASK_KNN_PARTIAL : CASK_KNN_FINAL;
        cask_knn_search_args a1 = {0};
        cask_knn_ksearch_args ak = {0};
        a1.n = ak.n = n;
        a1.m = ak.m = m;
        a1.ref_base = ak.ref_base = base;
        a1.in = ak.in = b->ofmt;
        a1.mode = ak.mode = mode;
        a1.scale = ak.scale = b->scale;
        ak.k = b->k;
        ak.prune = b->prune;
        cask_access acc[5];
        int nacc = 0;
        acc[nacc++] = (cask_access){d->obs, CASK_READ};
        acc[nacc++] = (cask_access){d->prep[q], CASK_READ};
        if (b->ksearch)
            acc[nacc++] = (cask_access){d->scratch, CASK_READ};
        if (partial) {
            acc[nacc++] = (cask_access){d->best[q], CASK_WRITE};
        } else {
            acc[nacc++] = (cask_access){d->index, CASK_WRITE};
            acc[nacc++] = (cask_access){d->dist, CASK_WRITE};
        }
        knn_name(nb, "knn[%lld,%lld]", (long long)i, (long long)q);
        uint32_t w = partial ? b->where : out_where(b);
        int dv = partial ? device : out_device(b, device);
        if ((st = b->ksearch
                      ? b->add(b->ctx, k->ksearch, acc, nacc, &ak, sizeof ak, 0, w, dv, nb)
                      : b->add(b->ctx, k->search, acc, nacc, &a1, sizeof a1, 0, w, dv, nb)))
            return st;
    }
    return CASK_OK;
}

cask_status knn_add_chunk(const knn_build *b, int64_t i, const knn_chunk_data *d, int device)
{
    const cask_knn_kernels *k = b->kernels;
    int64_t n = knn_rows_of(b->n, b->chunk, i);
    char nb[64];
    cask_status st = add_searches(b, i, n, d, device);
    if (st || b->nref == 1)
        return st;
    /* merge[i,q+s>q] reads best[q+s] into best[q] */
    cask_knn_merge_args a1 = {n};
    cask_knn_kmerge_args ak = {n, b->k};
    cask_kernel *merge = b->ksearch ? k->kmerge : k->merge;
    const void *margs = b->ksearch ? (const void *)&ak : (const void *)&a1;
    size_t msize = b->ksearch ? sizeof ak : sizeof a1;
    for (int64_t s = 1; s < b->nref; s *= 2)
        for (int64_t q = 0; q + s < b->nref; q += 2 * s) {
            cask_access acc[2] = {{d->best[q], CASK_RW}, {d->best[q + s], CASK_READ}};
            if ((st = b->add(b->ctx, merge, acc, 2, margs, msize, 1, b->where, device,
                             knn_name(nb, "merge[%lld,%lld>%lld]", (long long)i,
                                      (long long)(q + s), (long long)q))))
                return st;
        }
    knn_name(nb, "finish[%lld]", (long long)i);
    if (b->ksearch) {
        cask_knn_kfinish_args a = {n, b->k, b->scale};
        cask_access acc[3] = {{d->best[0], CASK_READ}, {d->index, CASK_WRITE},
                              {d->dist, CASK_WRITE}};
        return b->add(b->ctx, k->kfinish, acc, 3, &a, sizeof a, 2, out_where(b),
                      out_device(b, device), nb);
    }
    /* the 1-NN finish re-reads the winning reference's coordinates: ref_all */
    cask_knn_finish_args a = {n, b->scale, b->ofmt, b->rfmt};
    cask_access acc[5] = {{d->obs, CASK_READ}, {d->best[0], CASK_READ}, {d->index, CASK_WRITE},
                          {d->dist, CASK_WRITE}, {d->ref_all, CASK_READ}};
    return b->add(b->ctx, k->finish, acc, 5, &a, sizeof a, 2, out_where(b),
                  out_device(b, device), nb);
}
