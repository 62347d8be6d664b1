/* knn_kgraph.c: the tasks of the k kernels (knn_kgraph.h). Priorities as the 1-NN graph
 * has them: prepare first (3), finish (2) and merge (1) a chunk before new searches (0),
 * so results leave and partial buffers are freed early. */
#include "knn_kgraph.h"
#include "knn_chunks.h"

cask_status knn_kadd_prep(const knn_kbuild *b, int64_t q, cask_data *ref, cask_data *sorted,
                          cask_data *scratch, int device, const char *name)
{
    cask_knn_prep_args a = {knn_rows_of(b->m, b->ref_chunk, q), b->rfmt};
    cask_access acc[3] = {{ref, CASK_READ}, {sorted, CASK_WRITE}, {scratch, CASK_WRITE}};
    return b->add(b->ctx, b->kernels->prep_sorted, acc, 3, &a, sizeof a, 3, b->where, device,
                  name);
}

cask_status knn_kadd_chunk(const knn_kbuild *b, int64_t i, cask_data *obs, cask_data *scratch,
                           cask_data *const *sorted, cask_data *const *best, cask_data *index,
                           cask_data *dist, int device)
{
    const cask_knn_kernels *k = b->kernels;
    const int partial = b->nref > 1;
    int64_t n = knn_rows_of(b->n, b->chunk, i);
    char nb[64];
    cask_status st;
    cask_knn_korder_args oa = {n, b->ofmt, b->prune, 0};
    cask_access oacc[2] = {{obs, CASK_READ}, {scratch, CASK_WRITE}};
    if ((st = b->add(b->ctx, k->korder, oacc, 2, &oa, sizeof oa, 0, b->where, device,
                     knn_name(nb, "order[%lld]", (long long)i))))
        return st;
    for (int64_t q = 0; q < b->nref; q++) {
        cask_knn_ksearch_args a = {0};
        a.n = n;
        a.m = knn_rows_of(b->m, b->ref_chunk, q);
        a.ref_base = q * b->ref_chunk;
        a.in = b->ofmt;
        a.mode = partial ? CASK_KNN_PARTIAL : CASK_KNN_FINAL;
        a.k = b->k;
        a.prune = b->prune;
        a.scale = b->scale;
        cask_access acc[5] = {{obs, CASK_READ}, {sorted[q], CASK_READ}, {scratch, CASK_READ}};
        int nacc = 5;
        if (partial) {
            acc[3] = (cask_access){best[q], CASK_WRITE};
            nacc = 4;
        } else {
            acc[3] = (cask_access){index, CASK_WRITE};
            acc[4] = (cask_access){dist, CASK_WRITE};
        }
        if ((st = b->add(b->ctx, k->ksearch, acc, nacc, &a, sizeof a, 0, b->where, device,
                         knn_name(nb, "knn[%lld,%lld]", (long long)i, (long long)q))))
            return st;
    }
    if (!partial)
        return CASK_OK;
    for (int64_t s = 1; s < b->nref; s *= 2)
        for (int64_t q = 0; q + s < b->nref; q += 2 * s) {
            cask_knn_kmerge_args a = {n, b->k};
            cask_access acc[2] = {{best[q], CASK_RW}, {best[q + s], CASK_READ}};
            if ((st = b->add(b->ctx, k->kmerge, acc, 2, &a, sizeof a, 1, b->where, device,
                             knn_name(nb, "merge[%lld,%lld>%lld]", (long long)i,
                                      (long long)(q + s), (long long)q))))
                return st;
        }
    cask_knn_kfinish_args a = {n, b->k, b->scale};
    cask_access acc[3] = {{best[0], CASK_READ}, {index, CASK_WRITE}, {dist, CASK_WRITE}};
    return b->add(b->ctx, k->kfinish, acc, 3, &a, sizeof a, 2, b->where, device,
                  knn_name(nb, "finish[%lld]", (long long)i));
}
