/* results_alloc.c: see results_alloc.h. */
#include "results_alloc.h"

#include <string.h>

static void *alloc_both(void *arg)
{
    knn_results_alloc *ra = arg;
    void *p = NULL;
    if (cask_host_alloc(ra->rt, ra->index_bytes, &p) == CASK_OK)
        ra->index = p;
    p = NULL;
    if (cask_host_alloc(ra->rt, ra->dist_bytes, &p) == CASK_OK)
        ra->dist = p;
    return NULL;
}

void knn_results_alloc_start(knn_results_alloc *ra, cask_runtime *rt, int64_t rows, int k,
                             int background)
{
    memset(ra, 0, sizeof *ra);
    ra->rt = rt;
    ra->index_bytes = (size_t)rows * (size_t)k * sizeof *ra->index;
    ra->dist_bytes = (size_t)rows * (size_t)k * sizeof *ra->dist;
    if (background && pthread_create(&ra->thread, NULL, alloc_both, ra) == 0) {
        ra->state = 1;
        return;
    }
    alloc_both(ra);
    ra->state = 2;
}

int knn_results_alloc_wait(knn_results_alloc *ra, int32_t **index, float **dist)
{
    *index = NULL;
    *dist = NULL;
    if (ra->state == 0)
        return 0;
    if (ra->state == 1)
        pthread_join(ra->thread, NULL);
    ra->state = 0;
    if (!ra->index || !ra->dist) {
        cask_host_free(ra->rt, ra->index);
        cask_host_free(ra->rt, ra->dist);
        return -1;
    }
    *index = ra->index;
    *dist = ra->dist;
    return 0;
}
