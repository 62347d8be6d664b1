/* knn_dist.h: cask-knn across the processes of a job (cask/distributed.h). Every rank holds the
 * whole input (it read or generated it); observation chunk i is owned, searched and
 * finished by rank i % P, against a replica of the references that each rank prepares
 * (or, with k > 1 or pruning, sorts: knn_tasks.h) for itself, and its results are
 * gathered into the index/dist arrays of rank 0, or written into the output file by
 * that rank (in place: knn_dist_out.h). Only
 * the public API. Started without a launcher, the job has one process and cask-knn
 * does not use this file's graph at all (knn_graph.h, unchanged). */
#ifndef KNN_DIST_H
#define KNN_DIST_H

#include <stdint.h>
#include "cask/cask.h"
#include "knn_graph.h"
#include "knn_out.h"
#include "points.h"

/* This process's membership of the job. The data handles the job declares (through
 * cask_dist_data_create) are destroyed by knn_cluster_close: the memory they describe
 * (the points, rank 0's results) must stay until then. */
typedef struct knn_cluster {
    cask_runtime *rt;
    cask_dist *dist;
    int rank, size, local_rank, local_size;
    cask_kernel *load_copy;    /* loaders: a lost rank's inputs made again */
    cask_kernel *load_gen;
    cask_kernel *out_npy, *out_format, *out_sum, *out_csv, *out_head;   /* knn_dist_out.c */
    /* --generate across ranks: each rank generated only the observations of its own
     * chunks (knn_generate_part), so another rank's are made again from the seed, not
     * copied (set before knn_dist_job_create) */
    int gen_obs;
    uint64_t gen_seed;
    int64_t gen_clusters;
} knn_cluster;

/* Joins the job (collective). On failure the message is in err. */
cask_status knn_cluster_open(cask_runtime *rt, knn_cluster *c, char *err, size_t errlen);

/* Leaves the job (collective unless a rank failed) and destroys the handles declared to
 * it. c may be zeroed (never opened); a second call does nothing. */
cask_status knn_cluster_close(knn_cluster *c);

/* Agreement, collective: each rank says whether it failed and proposes a value; every
 * rank learns the lowest failed rank (-1: none) and the smallest value. With one rank,
 * no communication. Errors: the distributed layer's (message in err). */
cask_status knn_cluster_agree(knn_cluster *c, int failed, int64_t value, int *first_failed,
                              int64_t *min_value, char *err, size_t errlen);

/* knn_cluster_agree, and what a program says of it: whether one rank failed (this rank's
 * message in err) and the smallest of their proposed *value. 0 when none failed, else 1
 * once the rank that failed (every rank, if the agreement itself failed) printed why on
 * stderr, after "prog: ". With one process, no communication. */
int knn_ranks_agree(knn_cluster *c, const char *prog, int failed, int64_t *value, char *err,
                    size_t errlen);

typedef struct knn_dist_job knn_dist_job;

/* Builds the distributed graph for obs x ref (both whole on every rank); index and dist
 * (n x plan->k entries) on rank 0, NULL elsewhere, receive the results; or, in_place not
 * NULL (an output written in place, knn_out_rows done), every rank writes its chunks'
 * rows into it, index and dist are unused, and rank 0 receives the results of the
 * `samples` rows --check samples (knn_dist_job_samples). devices/ndevices: the GPUs
 * this rank's tasks prefer, chunk k of the rank on devices[k % ndevices] (ndevices 0:
 * the scheduler's choice). Same rules as knn_job_create otherwise; every rank must pass
 * the same plan. */
cask_status knn_dist_job_create(knn_cluster *c, const cask_knn_kernels *k,
                                const knn_points *obs, const knn_points *ref, int32_t *index,
                                float *dist, const knn_plan *plan, const int *devices,
                                int ndevices, const knn_out *in_place, int64_t samples,
                                knn_dist_job **out, char *err, size_t errlen);

/* Runs the graph on all ranks (collective); on return rank 0's index/dist are complete
 * (in place: every chunk's rows are written). The verdict is the same on every rank. */
cask_status knn_dist_job_run(knn_dist_job *j, char *err, size_t errlen);

/* Rank 0, in place, after a run: the results of the sampled rows, samples x k each
 * (the job's memory), in the order knn_check samples them. */
cask_status knn_dist_job_samples(knn_dist_job *j, const int32_t **index, const float **dist,
                                 char *err, size_t errlen);

/* Drops this rank's device copies of its inputs (as knn_job_make_cold). */
cask_status knn_dist_job_make_cold(knn_dist_job *j, char *err, size_t errlen);

void knn_dist_job_shape(const knn_dist_job *j, int64_t *obs_chunks, int64_t *ref_chunks,
                        size_t *ntasks);

/* Frees the graph (the handles go with knn_cluster_close). NULL ok. */
void knn_dist_job_destroy(knn_dist_job *j);

#endif
