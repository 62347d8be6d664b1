/* knn_memo.h: cask.knn remembers its last auto decision (knn_memo.c). */
#ifndef PC_KNN_MEMO_H
#define PC_KNN_MEMO_H

#include "auto_method.h"

/* 1 and *prune, the decision, if e (begun by knn_auto_begin) is the estimate last ended
 * by pc_knn_memo_end: the same sizes, k, chunk and sample, bit for bit; else 0. Thread
 * safe. */
int pc_knn_memo_recall(const knn_auto_est *e, int *prune);

/* knn_auto_end (the decision, from fractions), which also keeps e's samples as the entry
 * pc_knn_memo_recall compares with (fractions NULL: only ends e, keeps nothing). Thread
 * safe. */
int pc_knn_memo_end(knn_auto_est *e, const double *fractions, double *fraction);

/* How many decisions were recalled and how many estimated (ended with fractions). */
void pc_knn_memo_counts(uint64_t *recalls, uint64_t *estimates);

/* Forgets the entry. Thread safe. */
void pc_knn_memo_clear(void);

#endif
