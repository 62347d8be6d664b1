/* knn_memo.c: the last decision of cask.knn's method auto, kept with what it was made
 * from (knn_memo.h). The estimate (apps/knn/auto_method.h) is a pure function of the
 * sampled points' unit vectors, the sizes, k and the chunk: a call whose sample is the
 * same in every bit gets the same decision, so it need not run again. Calls run side by
 * side on helper threads without the GIL: one lock guards the single entry. */
#include "knn_memo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static knn_auto_est memo;       /* ov == NULL: empty */
static int memo_prune;
static uint64_t recalled, estimated;

static int same(const knn_auto_est *a, const knn_auto_est *b)
{
    return a->so == b->so && a->sr == b->sr && a->n == b->n && a->m == b->m &&
           a->k == b->k && a->chunk == b->chunk &&
           !memcmp(a->ov, b->ov, (size_t)a->so * 3 * sizeof *a->ov) &&
           !memcmp(a->rv, b->rv, (size_t)a->sr * 3 * sizeof *a->rv);
}

int pc_knn_memo_recall(const knn_auto_est *e, int *prune)
{
    pthread_mutex_lock(&memo_lock);
    int hit = memo.ov && same(&memo, e);
    if (hit) {
        *prune = memo_prune;
        recalled++;
    }
    pthread_mutex_unlock(&memo_lock);
    return hit;
}

int pc_knn_memo_end(knn_auto_est *e, const double *fractions, double *fraction)
{
    if (!fractions)
        return knn_auto_end(e, NULL, fraction);
    /* knn_auto_end decides and frees the samples: keep them from it, for the entry */
    double *ov = e->ov, *rv = e->rv;
    e->ov = e->rv = NULL;
    int prune = knn_auto_end(e, fractions, fraction);
    knn_auto_est old;
    pthread_mutex_lock(&memo_lock);
    old = memo;
    memo = *e;
    memo.ov = ov;
    memo.rv = rv;
    memo_prune = prune;
    estimated++;
    pthread_mutex_unlock(&memo_lock);
    knn_auto_end(&old, NULL, NULL);     /* frees the previous entry's samples */
    return prune;
}

void pc_knn_memo_counts(uint64_t *recalls, uint64_t *estimates)
{
    pthread_mutex_lock(&memo_lock);
    *recalls = recalled;
    *estimates = estimated;
    pthread_mutex_unlock(&memo_lock);
}

void pc_knn_memo_clear(void)
{
    pthread_mutex_lock(&memo_lock);
    knn_auto_est old = memo;
    memo.ov = memo.rv = NULL;
    pthread_mutex_unlock(&memo_lock);
    knn_auto_end(&old, NULL, NULL);
}
