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
/* The same from the sample rows of n observations held apart: observation sample i is
 * row i * ostep of obs (ostep 1: obs holds only the KNN_AUTO_SAMPLE_OBS rows
 * knn_auto_sample_row(n, i); ostep n / KNN_AUTO_SAMPLE_OBS with obs->n == n: the call
 * above). The same decision and fraction as knn_auto_prune on the n rows. */
int knn_auto_prune_at(const knn_points *obs, int64_t ostep, int64_t n, const knn_points *ref,
                      int k, int64_t chunk, double *fraction);

/* The estimate in pieces, for callers that spread it over workers or hold only the
 * sample rows (points on a GPU: the sample copied to the host). knn_auto_applies says
 * whether auto estimates at all (else it takes the brute force). The references it
 * reads: row j * (m / knn_auto_ref_samples(m)) for j below knn_auto_ref_samples(m).
 * knn_auto_begin takes the unit vectors of the samples: observation i is row i * ostep
 * of obs and reference j row j * rstep of ref (the full sets: ostep = n /
 * KNN_AUTO_SAMPLE_OBS, rstep as above; the sample rows alone: 1, 1); n and m are the
 * full sizes. -1 if out of memory (nothing to end). knn_auto_one(e, i, scratch) is the
 * fraction of observation sample i (0 <= i < KNN_AUTO_SAMPLE_OBS), pure: calls for
 * different i may run at once, each with its own scratch of knn_auto_scratch_count(e)
 * doubles. knn_auto_end frees e and, given all the fractions in order, returns the
 * decision of knn_auto_prune (the same sum, in the same order) and the mean fraction;
 * fractions NULL: frees only (returns 0). */
typedef struct knn_auto_est {
    int64_t so, sr, n, m, chunk;
    int k;
    double *ov, *rv;        /* unit vectors of the samples */
} knn_auto_est;

int knn_auto_applies(int64_t n, int64_t m, int64_t chunk);
int64_t knn_auto_ref_samples(int64_t m);
int knn_auto_begin(knn_auto_est *e, const knn_points *obs, int64_t ostep,
                   const knn_points *ref, int64_t rstep, int64_t n, int64_t m, int k,
                   int64_t chunk);
static inline size_t knn_auto_scratch_count(const knn_auto_est *e)
{
    return (size_t)(e->sr > e->so ? e->sr : e->so) + (size_t)e->sr;
}
double knn_auto_one(const knn_auto_est *e, int64_t i, double *scratch);
int knn_auto_end(knn_auto_est *e, const double *fractions, double *fraction);

#endif
