/* cask/status.h: the status codes every cask call returns, and their names. */
#ifndef CASK_STATUS_H
#define CASK_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Every public cask function that can fail returns one of these; CASK_OK is 0 so that
 * `if (st) goto fail;` works. A more detailed message for the last failure is kept by
 * the runtime (cask_runtime_error) or by the graph that failed (cask_graph_error). */
typedef enum cask_status {
    CASK_OK = 0,
    CASK_ERR_INVALID,      /* an argument is NULL, out of range or inconsistent */
    CASK_ERR_NOMEM,        /* host or device memory could not be allocated */
    CASK_ERR_CYCLE,        /* explicit dependencies form a cycle */
    CASK_ERR_STATE,        /* call not allowed now (graph running, data acquired, ...) */
    CASK_ERR_BUSY,         /* the object is in use by a graph that has not finished */
    CASK_ERR_TASK_FAILED,  /* a task's kernel reported failure; see cask_graph_error */
    CASK_ERR_UNSUPPORTED,  /* no implementation for where it must run (no GPU, no UCX) */
    CASK_ERR_CUDA,         /* a CUDA call failed; the message names the call */
    CASK_ERR_NCCL,         /* an NCCL call failed */
    CASK_ERR_UCX,          /* a UCX call failed */
    CASK_ERR_HWLOC,        /* an hwloc call failed */
    CASK_ERR_IO,           /* a file could not be read or written */
    CASK_ERR_FORMAT,       /* a file's content is malformed */
    CASK_ERR_NOT_FOUND,    /* a named thing (column, kernel, GPU) does not exist */
    CASK_ERR_CANCELLED,    /* the graph was stopped before this task ran */
    CASK_ERR_PEER,         /* a remote process failed or became unreachable */
    CASK_ERR_INTERNAL,     /* a bug in cask: please report it */
    CASK_ERR_LAUNCH,       /* started as one of several processes cask cannot join (srun
                            * without --mpi=pmix, a launcher without PMIx) */
    CASK_ERR_NOT_SPD,      /* a matrix to factor is not symmetric positive definite (a
                            * leading minor is not positive, or it holds NaN or Inf) */
    CASK_STATUS_COUNT_
} cask_status;

/* A static, human-readable name for a status ("invalid argument", ...). Never NULL: an
 * unknown value gives "unknown status". Thread safe. */
const char *cask_status_string(cask_status status);

#ifdef __cplusplus
}
#endif
#endif
