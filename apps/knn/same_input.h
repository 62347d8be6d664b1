/* same_input.h: the ranks of a job must have read the same points (a job whose nodes see
 * different copies of --obs or --ref would otherwise compute a mixture: each rank
 * searches its own chunks against its own copy). */
#ifndef KNN_SAME_INPUT_H
#define KNN_SAME_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include "knn_dist.h"
#include "points.h"

/* A 63-bit digest of the points' count, type and bytes (FNV-1a over 64-bit words). */
int64_t knn_points_digest(const knn_points *p, int64_t seed);

/* Collective: every rank digests its obs and ref and the ranks compare. 0 when all read
 * the same bytes; 1 when they did not (the lowest rank that differs from the smallest
 * digest prints one line naming itself, its host, the files and the fix), or when a
 * rank had already failed (failed != 0 here: its message in err, printed by it) or the
 * agreement failed (each rank prints why). prog prefixes the lines. */
int knn_ranks_same_input(knn_cluster *c, const char *prog, int failed, const knn_points *obs,
                         const knn_points *ref, const char *obs_path, const char *ref_path,
                         char *err, size_t errlen);

#endif
