/* perf_file.h (internal): the cost model's times kept between runs (CASK_PERFMODEL=FILE),
 * as StarPU keeps its history models: read at start-up, given to each kernel as it is
 * registered (matched by name), written back at shutdown with what this run learnt.
 * The file is per host (its first line names the host; another host's is not used). */
#ifndef CASK_RUNTIME_PERF_FILE_H
#define CASK_RUNTIME_PERF_FILE_H

struct cask_runtime;
struct cask_kernel;

typedef struct perf_saved {
    char name[96];
    unsigned long long fp, bytes, ns[2];
    unsigned n[2];
} perf_saved;

/* Reads CASK_PERFMODEL's file, if the variable is set and the file exists (a missing file
 * is an empty model; a malformed line is skipped with a warning). */
void perf_file_load(struct cask_runtime *rt);
/* Fills k's slots from what was read for its name. */
void perf_file_apply(struct cask_runtime *rt, struct cask_kernel *k);
/* Writes the model (this run's kernels, and what was read for kernels this run did not
 * register) to the file, through a temporary file and a rename; frees what was read. */
void perf_file_save(struct cask_runtime *rt);

#endif
