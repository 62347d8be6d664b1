/* knn_graph.h: the task graph of cask-knn, built on the public cask API only: chunks of
 * observations and references as data handles, prep / search / merge / finish tasks of
 * the built-in knn kernels, and parallel generation of synthetic points as tasks. */
#ifndef KNN_GRAPH_H
#define KNN_GRAPH_H

#include <stdint.h>
#include "cask/cask.h"
#include "points.h"

typedef struct knn_plan {
    int64_t chunk;      /* observation rows per search task (> 0) */
    int64_t ref_chunk;  /* reference rows per chunk (> 0; >= m means one chunk) */
    double scale;       /* distance = scale * angle in radians */
    uint32_t where;     /* cask_where of every task */
    int k;              /* neighbours per observation (0 or 1: one) */
    int prune;          /* 1: pruned search (ksearch kernels), 0: brute force */
    /* out_on_device: index and dist are memory of GPU out_device, not host memory. They
     * are registered in place (cask_data_register_device), the tasks that write them run
     * on that GPU (pinned there, whatever where says), nothing is written back to the
     * host and knn_job_run does not read them back: the results are there when it
     * returns. 0 (the default): host results, streamed back as each chunk ends. */
    int out_on_device;
    int out_device;
} knn_plan;

typedef struct knn_job knn_job;

/* Builds the graph for obs x ref. index (n x k int32) and dist (n x k float) receive the
 * results (row i: the k nearest of observation i, nearest first); obs, ref, index and
 * dist must stay valid and untouched until knn_job_destroy (they are registered with the
 * runtime, in slices; points with on_device set are GPU memory, registered in place and
 * only read: tasks elsewhere read copies). With one reference chunk each observation
 * chunk gets one search task in FINAL mode; with J chunks it gets J PARTIAL searches, a
 * binary tree of merges and a finish. With k > 1 or prune, the references are sorted and
 * tiled (prep_sorted, on a CPU worker) and the searches are ksearch tasks (each
 * observation chunk has a scratch buffer), merged by kmerge and finished by kfinish. The
 * message of a failure goes to err. */
cask_status knn_job_create(cask_runtime *rt, const cask_knn_kernels *k,
                           const knn_points *obs, const knn_points *ref, int32_t *index,
                           float *dist, const knn_plan *plan, knn_job **out, char *err,
                           size_t errlen);

/* References cut in chunks and prepared once, for several jobs to share (a streamed
 * run's windows): knn_refs_create registers ref in plan->ref_chunk rows each and runs the
 * prep tasks of plan's kernels (prep, or prep_sorted with k > 1 or prune) in a graph of
 * their own, waiting for them. ref must stay valid and untouched until knn_refs_destroy,
 * which must come after every job made on it is destroyed. */
typedef struct knn_refs knn_refs;
cask_status knn_refs_create(cask_runtime *rt, const cask_knn_kernels *k, const knn_points *ref,
                            const knn_plan *plan, knn_refs **out, char *err, size_t errlen);
void knn_refs_destroy(knn_refs *r);

/* knn_job_create on references already prepared by knn_refs_create (refs; NULL: as
 * knn_job_create): the job's graph only reads them. CASK_ERR_INVALID if refs were made
 * for another reference chunk or kernel set. */
cask_status knn_job_create_on(cask_runtime *rt, const cask_knn_kernels *k,
                              const knn_points *obs, const knn_points *ref, knn_refs *refs,
                              int32_t *index, float *dist, const knn_plan *plan,
                              knn_job **out, char *err, size_t errlen);

/* Runs the graph and waits until every result is valid in index/dist (host memory, or
 * the GPU memory of plan->out_device with out_on_device).
 * With progress, a bar is drawn on stderr if it is a terminal and the run lasts. */
cask_status knn_job_run(knn_job *j, int progress, char *err, size_t errlen);

/* Drops the device copies of the inputs, so that the next run moves them again (each
 * --repeat then measures the same thing as the first run; a streamed run's next window
 * replaced the observations). References prepared by knn_refs_create stay, and so do
 * points on a GPU (on_device: their replica there is the caller's memory). */
cask_status knn_job_make_cold(knn_job *j, char *err, size_t errlen);

/* Chunk counts and graph size, for the summary. */
void knn_job_shape(const knn_job *j, int64_t *obs_chunks, int64_t *ref_chunks,
                   size_t *ntasks);

/* Writes the graph in Graphviz dot. */
cask_status knn_job_dot(const knn_job *j, FILE *out);

/* Unregisters everything (results are then in index/dist) and frees the graph. NULL ok. */
void knn_job_destroy(knn_job *j);

/* Fills obs and ref (already allocated, radians, float or double) with the synthetic
 * points of seed, as CPU tasks of chunk rows each (see generate.h): uniform when clusters
 * is 0, else a mixture of that many blobs (knn_generate_clustered). */
cask_status knn_generate_tasks(cask_runtime *rt, uint64_t seed, knn_points *obs,
                               knn_points *ref, int64_t chunk, int64_t clusters, char *err,
                               size_t errlen);

/* As knn_generate_tasks, for one rank of `parts`: of obs (NULL: none) only the chunks c
 * of chunk rows with c % parts == part, which that rank owns in the distributed graph
 * (knn_dist.c); ref (NULL: none) whole. The other rows are left as they are. A task
 * makes at most `piece` rows (0: a chunk), so that a rank's few large chunks keep all
 * its workers busy (the rows are the same whatever the pieces). */
cask_status knn_generate_part(cask_runtime *rt, uint64_t seed, knn_points *obs,
                              knn_points *ref, int64_t chunk, int64_t piece, int64_t clusters,
                              int part, int parts, char *err, size_t errlen);

/* The arguments of knn_generate_cpu: rows first .. first+n-1 of a stream of seed. */
typedef struct knn_gen_args {
    uint64_t seed, stream;
    int64_t first, n;
    int64_t clusters;
    int f64;
} knn_gen_args;

/* The CPU body of a generating task (knn_gen_args; its buffer takes the n rows): also a
 * loader, which makes a lost rank's generated observations again where they are needed. */
cask_status knn_generate_cpu(cask_task_ctx *ctx);

#endif
