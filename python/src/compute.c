/* compute.c: running arrays from Python: compute into buffers (one graph for several
 * arrays), persist, to_npy, plan and the last run's statistics. The run goes on a helper
 * thread (pc_job) with the GIL released; Ctrl-C returns at once and leaves it to end in
 * the background (the next call waits for it). */
#include "pc.h"

#include <stdlib.h>
#include <string.h>

typedef struct compute_job {
    pc_job job;
    int n;
    int what;                  /* 0 compute, 1 persist, 2 to_npy, 3 to GPU memory */
    PyObject **nodes;          /* references held until cleanup */
    cask_array **arrays;
    Py_buffer *views;          /* n outputs (compute) */
    void **outs;
    size_t *bytes;
    char *path;                /* to_npy */
    PyObject *dev_owner;       /* to GPU memory: the object owning dev_ptr (kept) */
    void *dev_ptr;
    size_t dev_bytes;
    int device;
    int gpu_only;              /* run every task that can on a GPU (CASK_WHERE_GPU) */
} compute_job;

static cask_status compute_fn(pc_job *job)
{
    compute_job *c = (compute_job *)job;
    cask_status st;
    if (c->what == 0)
        st = cask_array_compute_many(pc_st.ctx, c->n, c->arrays, c->outs, c->bytes);
    else if (c->what == 1)
        st = cask_array_persist(pc_st.ctx, c->n, c->arrays);
    else if (c->what == 3) {
        /* the context is this job's alone while it runs: set its placement for it */
        if (c->gpu_only)
            cask_array_ctx_set(pc_st.ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU);
        st = cask_array_compute_to_device(c->arrays[0], c->dev_ptr, c->dev_bytes, c->device);
        if (c->gpu_only)
            cask_array_ctx_set(pc_st.ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_ANY);
    }
    else
        st = cask_array_to_npy(c->arrays[0], c->path);
    if (st)
        snprintf(job->err, sizeof job->err, "%s", cask_array_ctx_error(pc_st.ctx));
    return st;
}

static void compute_cleanup(pc_job *job)
{
    compute_job *c = (compute_job *)job;
    for (int i = 0; i < c->n; i++) {
        if (c->views && c->views[i].obj)
            PyBuffer_Release(&c->views[i]);
        Py_XDECREF(c->nodes[i]);
    }
    free(c->nodes);
    free(c->arrays);
    free(c->views);
    free(c->outs);
    free(c->bytes);
    free(c->path);
    Py_XDECREF(c->dev_owner);
    free(c);
}

/* A job over the nodes of list (a sequence); NULL with an exception. */
static compute_job *job_new(PyObject *list, int what)
{
    PyObject *seq = PySequence_Tuple(list);
    if (!seq)
        return NULL;
    Py_ssize_t n = PyTuple_Size(seq);
    compute_job *c = calloc(1, sizeof *c);
    if (c) {
        c->nodes = calloc((size_t)n + 1, sizeof *c->nodes);
        c->arrays = calloc((size_t)n + 1, sizeof *c->arrays);
    }
    if (!c || !c->nodes || !c->arrays) {
        if (c) {
            free(c->nodes);
            free(c->arrays);
            free(c);
        }
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    c->what = what;
    c->job.fn = compute_fn;
    c->job.cleanup = compute_cleanup;
    c->job.uses_ctx = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GetItem(seq, i);
        cask_array *a = pc_node_array(o);
        if (!a) {
            Py_DECREF(seq);
            compute_cleanup(&c->job);
            return NULL;
        }
        Py_INCREF(o);
        c->nodes[i] = o;
        c->arrays[i] = a;
        c->n = (int)i + 1;
    }
    Py_DECREF(seq);
    return c;
}

/* Runs the job and converts its outcome; frees it unless Ctrl-C left it running. */
static PyObject *run(compute_job *c)
{
    if (pc_job_run(&c->job, 1))
        return NULL;                   /* detached (pc_st.busy) or failed to start */
    cask_status st = c->job.status;
    char err[sizeof c->job.err];
    memcpy(err, c->job.err, sizeof err);
    compute_cleanup(&c->job);
    if (st)
        return pc_raise(st, err);
    Py_RETURN_NONE;
}

/* compute(nodes, outs): each out a writable C-contiguous buffer of the node's bytes */
static PyObject *compute(PyObject *m, PyObject *args)
{
    PyObject *nodes, *outs;
    if (!PyArg_ParseTuple(args, "OO", &nodes, &outs) || pc_ready())
        return NULL;
    compute_job *c = job_new(nodes, 0);
    if (!c)
        return NULL;
    PyObject *seq = PySequence_Tuple(outs);
    if (!seq)
        goto fail;
    if (PyTuple_Size(seq) != c->n) {
        PyErr_SetString(PyExc_ValueError, "cask: compute needs one output per array");
        goto fail;
    }
    c->views = calloc((size_t)c->n + 1, sizeof *c->views);
    c->outs = calloc((size_t)c->n + 1, sizeof *c->outs);
    c->bytes = calloc((size_t)c->n + 1, sizeof *c->bytes);
    if (!c->views || !c->outs || !c->bytes) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int i = 0; i < c->n; i++) {
        cask_array_meta meta;
        cask_status st = cask_array_get_meta(c->arrays[i], &meta);
        if (st) {
            pc_raise(st, NULL);
            goto fail;
        }
        if (PyObject_GetBuffer(PyTuple_GetItem(seq, i), &c->views[i],
                               PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "cask: an output must be a writable C-contiguous buffer");
            goto fail;
        }
        size_t need = (size_t)meta.size * cask_dtype_size(meta.dtype);
        if ((size_t)c->views[i].len < need) {
            PyErr_Format(PyExc_ValueError, "cask: output of %zd bytes for an array of %zu",
                         c->views[i].len, need);
            goto fail;
        }
        c->outs[i] = c->views[i].buf;
        c->bytes[i] = (size_t)c->views[i].len;
    }
    Py_DECREF(seq);
    return run(c);
fail:
    Py_XDECREF(seq);
    compute_cleanup(&c->job);
    return NULL;
}

static PyObject *persist(PyObject *m, PyObject *args)
{
    PyObject *nodes;
    if (!PyArg_ParseTuple(args, "O", &nodes) || pc_ready())
        return NULL;
    compute_job *c = job_new(nodes, 1);
    return c ? run(c) : NULL;
}

static PyObject *to_npy(PyObject *m, PyObject *args)
{
    PyObject *node, *path;
    if (!PyArg_ParseTuple(args, "OO&", &node, PyUnicode_FSConverter, &path))
        return NULL;
    if (pc_ready()) {
        Py_DECREF(path);
        return NULL;
    }
    PyObject *list = PyTuple_Pack(1, node);
    compute_job *c = list ? job_new(list, 2) : NULL;
    Py_XDECREF(list);
    if (c && !(c->path = strdup(PyBytes_AsString(path)))) {
        compute_cleanup(&c->job);
        c = NULL;
        PyErr_NoMemory();
    }
    Py_DECREF(path);
    return c ? run(c) : NULL;
}

/* compute_device(node, owner, ptr, bytes, device, gpu_only): computes into GPU memory
 * ptr of GPU device (owned by owner, kept until the run ended), device to device */
static PyObject *compute_device(PyObject *m, PyObject *args)
{
    PyObject *node, *owner;
    unsigned long long ptr, bytes;
    int device, gpu_only;
    if (!PyArg_ParseTuple(args, "OOKKip", &node, &owner, &ptr, &bytes, &device, &gpu_only) ||
        pc_ready())
        return NULL;
    if (!ptr) {
        PyErr_SetString(PyExc_ValueError, "cask: compute into a NULL device pointer");
        return NULL;
    }
    PyObject *list = PyTuple_Pack(1, node);
    compute_job *c = list ? job_new(list, 3) : NULL;
    Py_XDECREF(list);
    if (!c)
        return NULL;
    Py_INCREF(owner);
    c->dev_owner = owner;
    c->dev_ptr = (void *)(uintptr_t)ptr;
    c->dev_bytes = (size_t)bytes;
    c->device = device;
    c->gpu_only = gpu_only;
    return run(c);
}

static PyObject *stats_dict(const cask_array_stats *s)
{
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:d,s:d}",
                         "nodes", (Py_ssize_t)s->nnodes, "tasks", (Py_ssize_t)s->ntasks,
                         "edges", (Py_ssize_t)s->nedges,
                         "compute_tasks", (Py_ssize_t)s->ntasks_compute,
                         "fused_tasks", (Py_ssize_t)s->ntasks_fused,
                         "fused_ops", (Py_ssize_t)s->nops_fused,
                         "handles", (Py_ssize_t)s->nhandles, "build_s", s->build_s,
                         "elapsed_s", s->elapsed_s);
}

static PyObject *plan(PyObject *m, PyObject *args)
{
    PyObject *nodes;
    if (!PyArg_ParseTuple(args, "O", &nodes) || pc_ready())
        return NULL;
    compute_job *c = job_new(nodes, 0);
    if (!c)
        return NULL;
    cask_array_stats s;
    cask_status st = cask_array_plan(pc_st.ctx, c->n, c->arrays, &s, NULL);
    compute_cleanup(&c->job);
    return st ? pc_raise_array(st) : stats_dict(&s);
}

static PyObject *last_stats(PyObject *m, PyObject *unused)
{
    if (pc_ready())
        return NULL;
    cask_array_stats s;
    cask_status st = cask_array_last_stats(pc_st.ctx, &s);
    return st ? pc_raise_array(st) : stats_dict(&s);
}

PyMethodDef pc_compute_methods[] = {
    {"compute", compute, METH_VARARGS,
     "compute(nodes, outs): computes the arrays (one graph) into the output buffers"},
    {"persist", persist, METH_VARARGS, "persist(nodes): computes and keeps the chunks"},
    {"compute_device", compute_device, METH_VARARGS,
     "compute_device(node, owner, ptr, bytes, device, gpu_only): computes into GPU memory"},
    {"to_npy", to_npy, METH_VARARGS, "to_npy(node, path): computes into a .npy file"},
    {"plan", plan, METH_VARARGS, "plan(nodes) -> dict: the graph compute would run"},
    {"last_stats", last_stats, METH_NOARGS, "last_stats() -> dict of the last run"},
    {NULL, NULL, 0, NULL},
};
