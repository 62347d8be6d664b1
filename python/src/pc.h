/* pc.h: what the files of the _cask extension share. The extension is the C half of the
 * Python package cask: a thin layer over cask's public C API (cask/cask.h), built with
 * Python's limited API. Internal names start with pc_. */
#ifndef PC_H
#define PC_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>
#include "cask/cask.h"

/* A blocking cask call run on a helper thread, so that the thread that called it (which
 * holds no GIL meanwhile) can notice Ctrl-C: pc_job_run waits for it in slices and
 * checks for signals between them. */
typedef struct pc_job pc_job;
struct pc_job {
    cask_status (*fn)(pc_job *job);   /* the blocking call; runs without the GIL */
    void (*cancel)(pc_job *job);      /* asks fn to end early (NULL: it cannot) */
    void (*cleanup)(pc_job *job);     /* frees what the job holds; called with the GIL */
    void *arg;
    int uses_ctx;                     /* runs on the array context (one thread's at a time) */
    cask_status status;
    char err[1024];                   /* message of a failure, set by fn */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    pthread_t thread;
};

/* The module's state: one runtime per process, started on first use. */
typedef struct pc_state {
    cask_runtime *rt;
    cask_array_ctx *ctx;
    cask_knn_kernels knn;
    cask_kernel *knn_check, *knn_estimate;   /* cask.knn's work before its graph */
    int knn_ready;
    double knn_times[4];        /* the last cask.knn's parts, s: plan (checks, auto), job
                                   made, run, job destroyed (knn_times()) */
    uint64_t generation;        /* bumped by each start: arrays of a stopped runtime die */
    pc_job *busy;               /* a compute left running by Ctrl-C (array context busy) */
    pc_job *inflight;           /* a job on the array context that a thread waits for:
                                   other Python threads wait before using the context */
    cask_kernel *py_kernel;     /* the kernel of Python tasks (dask bridge), this runtime's */
    uint64_t py_kernel_generation;
    cask_config cfg;            /* what cask.config asked for (field_mask: which) */
    char trace_path[1024];
    PyObject *error;            /* cask.CaskError */
    /* arrays dropped while busy ran (the context is one thread's at a time): released
     * once it ends, with the buffers they wrapped */
    cask_array **dropped;
    Py_buffer **dropped_views;
    size_t ndropped, capdropped;
} pc_state;

extern pc_state pc_st;          /* the module state (single-phase module: one instance) */

/* Starts the runtime and the array context if not yet (waits for a busy compute first).
 * Returns 0, or -1 with a Python exception set. Needs the GIL. */
int pc_ready(void);
/* Stops the runtime (waits for a busy compute); arrays made before die. */
int pc_shutdown(void);

/* Sets the Python exception for status st with message msg (NULL: the runtime's last
 * error, else cask_status_string). Returns NULL. */
PyObject *pc_raise(cask_status st, const char *msg);
/* The same with the array context's message. */
PyObject *pc_raise_array(cask_status st);

/* Runs job->fn on a helper thread and waits, checking for signals. Returns 0 when fn
 * ended (job->status says how), -1 with KeyboardInterrupt (or another signal's
 * exception) set: then a job with cancel was cancelled and waited for, and a job without
 * is left running as pc_st.busy (detached: pc_ready waits for it later). The caller must
 * not touch a detached job again. Needs the GIL (released while waiting). */
int pc_job_run(pc_job *job, int detach_ok);
/* Waits for pc_st.busy to end and frees it. -1 with an exception if interrupted. */
int pc_wait_busy(void);

/* A node of the Python side: one reference to a cask_array of the current runtime. */
typedef struct pc_node {
    PyObject_HEAD
    cask_array *a;
    uint64_t generation;        /* pc_st.generation when made */
    PyObject *keep;             /* what its memory depends on: input nodes, an exporter */
    Py_buffer *view;            /* the buffer it wraps (from_buffer), else NULL */
} pc_node;

/* The cask_array of a node object, or NULL with TypeError/RuntimeError set. */
cask_array *pc_node_array(PyObject *obj);
/* A new node owning a (one reference) and keeping keep (borrowed, may be NULL). */
PyObject *pc_node_new(cask_array *a, PyObject *keep, Py_buffer *view);
/* Releases what pc_st.dropped holds (the context is free). */
void pc_release_dropped(void);

/* dtype names <-> cask_dtype; -1 if unknown (Python exception set). */
int pc_dtype_from_name(PyObject *name);
/* int64 tuple of n values from a sequence; -1 with an exception on failure. */
int pc_int64s(PyObject *seq, int64_t *out, int max, const char *what);
PyObject *pc_tuple64(const int64_t *v, int n);

/* DLPack's ABI (dlpack.h, v0.8 unversioned capsules "dltensor"): a few plain structs,
 * stable since 2017 (dlpack.c, knn.c). */
typedef struct { int32_t device_type, device_id; } pc_dl_device;
typedef struct { uint8_t code, bits; uint16_t lanes; } pc_dl_dtype;
typedef struct {
    void *data;
    pc_dl_device device;
    int32_t ndim;
    pc_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} pc_dl_tensor;
typedef struct pc_dl_managed {
    pc_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct pc_dl_managed *self);
} pc_dl_managed;

enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_CUDA = 2, DL_CUDA_MANAGED = 13 };

/* Function tables of the parts (module.c gathers them). */
extern PyMethodDef pc_array_methods[];
extern PyMethodDef pc_ops_methods[];
extern PyMethodDef pc_compute_methods[];
extern PyMethodDef pc_dask_methods[];
extern PyMethodDef pc_knn_methods[];
extern PyMethodDef pc_kernel_methods[];
extern PyMethodDef pc_dlpack_methods[];
extern PyMethodDef pc_hostbuf_methods[];
int pc_node_type_init(PyObject *module);
int pc_hostbuf_type_init(PyObject *module);
/* Frees the host blocks kept for reuse (hostbuf.c); the GIL held, the runtime running. */
void pc_hostbuf_drop(void);

#endif
