/* knn.c: cask.knn, the nearest references on the sphere of each observation, by the
 * graph cask-knn builds (apps/knn/knn_graph.c, compiled into this extension: the same
 * tasks, chunk sizes and method choice, hence the same answers). */
#include "pc.h"

#include <stdlib.h>
#include <string.h>

#include "auto_method.h"
#include "knn_chunks.h"
#include "knn_graph.h"

typedef struct knn_call {
    pc_job job;
    Py_buffer views[4];        /* obs, ref, index, dist */
    knn_points obs, ref;
    knn_plan plan;
} knn_call;

static cask_status knn_fn(pc_job *job)
{
    knn_call *c = (knn_call *)job;
    knn_job *kj = NULL;
    cask_status st = knn_job_create(pc_st.rt, &pc_st.knn, &c->obs, &c->ref, c->views[2].buf,
                                    c->views[3].buf, &c->plan, &kj, job->err,
                                    sizeof job->err);
    if (!st)
        st = knn_job_run(kj, 0, job->err, sizeof job->err);
    knn_job_destroy(kj);
    return st;
}

static void knn_cleanup(pc_job *job)
{
    knn_call *c = (knn_call *)job;
    for (int i = 0; i < 4; i++)
        if (c->views[i].obj)
            PyBuffer_Release(&c->views[i]);
    free(c);
}

/* A (n, 2) float buffer as points; -1 with an exception. */
static int points_of(Py_buffer *v, knn_points *p, int degrees, const char *what)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int f64 = !strcmp(f, "d") ? 1 : !strcmp(f, "f") ? 0 : -1;
    if (f64 < 0 || v->ndim != 2 || v->shape[1] != 2 || v->shape[0] < 1) {
        PyErr_Format(PyExc_ValueError,
                     "cask.knn: %s must be a non-empty (n, 2) float32 or float64 array of "
                     "(latitude, longitude)", what);
        return -1;
    }
    memset(p, 0, sizeof *p);
    p->data = v->buf;
    p->n = v->shape[0];
    p->f64 = f64;
    p->degrees = degrees;
    return 0;
}

/* knn(obs, ref, k, method, km, chunk, ref_chunk, degrees, index, dist) */
static PyObject *knn(PyObject *m, PyObject *args)
{
    PyObject *o[4];
    int k, km, degrees;
    const char *method;
    long long chunk, ref_chunk;
    if (!PyArg_ParseTuple(args, "OOispLLpOO", &o[0], &o[1], &k, &method, &km, &chunk,
                          &ref_chunk, &degrees, &o[2], &o[3]))
        return NULL;
    int meth = !strcmp(method, "auto") ? 0 : !strcmp(method, "brute") ? 1
               : !strcmp(method, "pruned") ? 2 : -1;
    if (meth < 0) {
        PyErr_Format(PyExc_ValueError, "cask.knn: method '%s' (auto, brute or pruned)", method);
        return NULL;
    }
    if (k < 1 || k > CASK_KNN_KMAX) {
        PyErr_Format(PyExc_ValueError, "cask.knn: k must be 1..%d", CASK_KNN_KMAX);
        return NULL;
    }
    if (chunk < 0 || ref_chunk < 0) {
        PyErr_SetString(PyExc_ValueError, "cask.knn: chunk sizes must be positive");
        return NULL;
    }
    if (pc_ready())
        return NULL;
    if (!pc_st.knn_ready) {
        cask_status st = cask_knn_kernels_register(pc_st.rt, &pc_st.knn);
        if (st)
            return pc_raise(st, NULL);
        pc_st.knn_ready = 1;
    }
    knn_call *c = calloc(1, sizeof *c);
    if (!c)
        return PyErr_NoMemory();
    c->job.fn = knn_fn;
    c->job.cleanup = knn_cleanup;
    for (int i = 0; i < 4; i++)
        if (PyObject_GetBuffer(o[i], &c->views[i], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                               (i >= 2 ? PyBUF_WRITABLE : 0)) < 0) {
            c->views[i].obj = NULL;
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, i < 2
                ? "cask.knn: points must be C-contiguous buffers"
                : "cask.knn: outputs must be writable C-contiguous buffers");
            goto fail;
        }
    if (points_of(&c->views[0], &c->obs, degrees, "obs") ||
        points_of(&c->views[1], &c->ref, degrees, "ref"))
        goto fail;
    size_t nk = (size_t)c->obs.n * (size_t)k;
    if ((size_t)c->views[2].len < nk * 4 || (size_t)c->views[3].len < nk * 4) {
        PyErr_SetString(PyExc_ValueError, "cask.knn: outputs too small");
        goto fail;
    }
    /* the plan of cask-knn (apps/knn/main.c, one process) */
    cask_runtime_info info;
    cask_status st = cask_runtime_query(pc_st.rt, &info);
    if (st) {
        pc_raise(st, NULL);
        goto fail;
    }
    int64_t cchunk = 0, pchunk = 0;
    int prune = meth == 2;
    knn_plan_sizes(c->obs.n, c->ref.n, c->obs.f64, k, k > 1 || prune || meth == 0, meth == 1,
                   chunk, ref_chunk, &info, &c->plan.ref_chunk, &cchunk, &pchunk);
    if (prune)
        cchunk = pchunk;
    if (meth == 0) {
        double fraction;
        prune = knn_auto_prune(&c->obs, &c->ref, k, pchunk, &fraction);
        if (prune)
            cchunk = pchunk;
        else if (k == 1 && !ref_chunk)
            c->plan.ref_chunk = c->ref.n;
    }
    c->plan.chunk = cchunk;
    c->plan.scale = km ? CASK_EARTH_RADIUS_KM : 1.0;
    c->plan.where = info.ngpus > 0 ? CASK_WHERE_GPU : CASK_WHERE_CPU;
    c->plan.k = k;
    c->plan.prune = prune;
    if (pc_job_run(&c->job, 1))
        return NULL;
    st = c->job.status;
    char err[sizeof c->job.err];
    memcpy(err, c->job.err, sizeof err);
    knn_cleanup(&c->job);
    if (st)
        return pc_raise(st, err);
    return PyBool_FromLong(prune);
fail:
    knn_cleanup(&c->job);
    return NULL;
}

PyMethodDef pc_knn_methods[] = {
    {"knn", knn, METH_VARARGS,
     "knn(obs, ref, k, method, km, chunk, ref_chunk, degrees, index, dist) -> pruned"},
    {NULL, NULL, 0, NULL},
};
