/* auto_method.h: `cask-knn --method auto`: whether a pruned search is expected to beat the
 * brute force on these data, estimated from a small sample before the graph is built. */
#ifndef KNN_AUTO_METHOD_H
#define KNN_AUTO_METHOD_H

#include "points.h"

/* Below these sizes auto always takes the brute force. */
#define KNN_AUTO_MIN_REFS 1024
#define KNN_AUTO_MIN_OBS 4096
/* Auto prunes when the estimated fraction of pairs visited is below this: for K = 1 the
 * brute force is the tuned 1-NN kernel (about 2x to 3x faster per pair than the K-nearest
 * kernel that pruning uses); for K > 1 both methods use the K-nearest kernel, so pruning
 * costs about the fraction plus the ordering. */
#define KNN_AUTO_MAX_FRACTION_K1 0.2
#define KNN_AUTO_MAX_FRACTION_K 0.5

/* Returns 1 to prune, 0 for the brute force, and the estimated fraction of the pairs a
 * pruned search would visit in *fraction (1 when not estimated). The estimate: for 256
 * observations and up to 2048 references sampled evenly by row, the distance d_K to the
 * k-th nearest reference and the radii of a reference tile (128 references) and of an
 * observation tile (64 of a chunk of `chunk` rows: tiles are cut within a chunk) around
 * the observation, all scaled from the sample's local density; a pruned search visits about the references within d_K plus twice both radii.
 * Everything in one spot (or two) makes that fraction large. Pure; a few milliseconds. */
/* The observations the estimate reads: row knn_auto_sample_row(n, i) for i below
 * KNN_AUTO_SAMPLE_OBS (n at least KNN_AUTO_MIN_OBS), and no other. */
#define KNN_AUTO_SAMPLE_OBS 256
static inline int64_t knn_auto_sample_row(int64_t n, int64_t i)
{
    return i * (n / KNN_AUTO_SAMPLE_OBS);
}

int knn_auto_prune(const knn_points *obs, const knn_points *ref, int k, int64_t chunk,
                   double *fraction);

#endif
