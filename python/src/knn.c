/* knn.c: cask.knn, the nearest references on the sphere of each observation, by the
 * graph cask-knn builds (apps/knn/knn_graph.c, compiled into this extension: the same
 * tasks, chunk sizes and method choice, hence the same answers). Points come as host
 * buffers (used in place) or as DLPack capsules of CUDA tensors, registered in place on
 * their GPU (knn_points.on_device). Results go to host buffers, or to GPU memory given
 * by address (written in place by tasks on that GPU: knn_plan.out_on_device). Before
 * the graph, one small graph of CPU tasks checks the coordinates and runs the estimate
 * of method auto (knn_pre.c), unless the last estimate had this sample (knn_memo.c). */
#include "pc.h"

#include <stdlib.h>
#include <string.h>

#include "auto_method.h"
#include "knn_chunks.h"
#include "knn_clock.h"
#include "knn_graph.h"
#include "knn_memo.h"
#include "knn_pre.h"

typedef struct knn_call {
    pc_job job;
    Py_buffer views[4];        /* obs, ref (host points), index, dist (host results) */
    void *out[2];              /* index, dist: where the graph writes them */
    PyObject *keep;            /* what owns GPU results' memory: held until cleanup, so
                                  that a search left running by Ctrl-C writes live memory */
    Py_buffer samples[2];      /* sample rows of points the host cannot read */
    pc_dl_managed *dl[2];      /* DLPack tensors of points on a GPU: deleted at cleanup */
    knn_points pts[2];         /* obs, ref */
    knn_points sample[2];      /* the samples as points (n = their rows), if given */
    int has_sample[2];
    int meth, km;              /* 0 auto, 1 brute, 2 pruned; distances in km */
    int64_t chunk, ref_chunk;  /* asked for (0: cask-knn's choice) */
    cask_runtime_info info;
    int bad;                   /* 1 + the point set whose values are out of range */
    int pruned;
    knn_plan plan;
} knn_call;

/* Plans as cask-knn does (apps/knn/main.c, one process), checking the points that the
 * host can read and running auto's estimate in one graph first. */
static cask_status knn_prepare(knn_call *c)
{
    int k = c->plan.k;
    int64_t cchunk = 0, pchunk = 0;
    int prune = c->meth == 2;
    const knn_points *o = &c->pts[0], *r = &c->pts[1];
    knn_plan_sizes(o->n, r->n, o->f64, k, k > 1 || prune || c->meth == 0, c->meth == 1,
                   c->chunk, c->ref_chunk, &c->info, &c->plan.ref_chunk, &cchunk, &pchunk);
    if (prune)
        cchunk = pchunk;
    int est_on = c->meth == 0 && knn_auto_applies(o->n, r->n, pchunk);
    knn_auto_est est;
    double fractions[KNN_AUTO_SAMPLE_OBS], fraction;
    if (est_on) {
        /* a set given by its sample: the sample's rows, one after the other */
        const knn_points *os = c->has_sample[0] ? &c->sample[0] : o;
        const knn_points *rs = c->has_sample[1] ? &c->sample[1] : r;
        int64_t ostep = c->has_sample[0] ? 1 : o->n / KNN_AUTO_SAMPLE_OBS;
        int64_t rstep = c->has_sample[1] ? 1 : r->n / knn_auto_ref_samples(r->n);
        if (knn_auto_begin(&est, os, ostep, rs, rstep, o->n, r->n, k, pchunk))
            est_on = 0;     /* out of memory: the brute force, as knn_auto_prune */
        else if (pc_knn_memo_recall(&est, &prune)) {
            knn_auto_end(&est, NULL, NULL);     /* decided before, on this very sample */
            est_on = 0;
        }
    }
    const knn_points *check[2] = {c->has_sample[0] ? NULL : o, c->has_sample[1] ? NULL : r};
    int bad[2] = {0, 0};
    cask_status st = CASK_OK;
    if (check[0] || check[1] || est_on)
        st = pc_knn_pre(pc_st.rt, &(pc_knn_pre_kernels_t){pc_st.knn_check,
                        pc_st.knn_estimate}, c->info.ncpu_workers, check, bad,
                        est_on ? &est : NULL, fractions);
    if (est_on)
        prune = pc_knn_memo_end(&est, st ? NULL : fractions, &fraction) ? 1 : prune;
    if (st)
        return st;
    c->bad = bad[0] ? 1 : bad[1] ? 2 : 0;
    if (c->meth == 0) {
        if (prune)
            cchunk = pchunk;
        else if (k == 1 && !c->ref_chunk)
            c->plan.ref_chunk = r->n;
    }
    c->plan.chunk = cchunk;
    c->plan.prune = prune;
    return CASK_OK;
}

static cask_status knn_fn(pc_job *job)
{
    knn_call *c = (knn_call *)job;
    double t[5];
    memset(pc_st.knn_times, 0, sizeof pc_st.knn_times);
    t[0] = knn_now_s();
    cask_status st = knn_prepare(c);
    t[1] = knn_now_s();
    pc_st.knn_times[0] = t[1] - t[0];
    if (st || c->bad)
        return st;
    knn_job *kj = NULL;
    st = knn_job_create(pc_st.rt, &pc_st.knn, &c->pts[0], &c->pts[1], c->out[0], c->out[1],
                        &c->plan, &kj, job->err, sizeof job->err);
    t[2] = knn_now_s();
    if (!st)
        st = knn_job_run(kj, 0, job->err, sizeof job->err);
    t[3] = knn_now_s();
    knn_job_destroy(kj);
    t[4] = knn_now_s();
    for (int i = 1; i < 4; i++)
        pc_st.knn_times[i] = t[i + 1] - t[i];
    c->pruned = c->plan.prune;
    return st;
}

static void knn_cleanup(pc_job *job)
{
    knn_call *c = (knn_call *)job;
    for (int i = 0; i < 4; i++)
        if (c->views[i].obj)
            PyBuffer_Release(&c->views[i]);
    Py_XDECREF(c->keep);
    for (int i = 0; i < 2; i++) {
        if (c->samples[i].obj)
            PyBuffer_Release(&c->samples[i]);
        if (c->dl[i] && c->dl[i]->deleter)
            c->dl[i]->deleter(c->dl[i]);
    }
    free(c);
}

/* The float format of a buffer: 1 double, 0 float, -1 other. */
static int f64_of_format(const char *f)
{
    f = f ? f : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    return !strcmp(f, "d") ? 1 : !strcmp(f, "f") ? 0 : -1;
}

static int bad_shape(const char *what)
{
    PyErr_Format(PyExc_ValueError,
                 "cask.knn: %s must be a non-empty (n, 2) float32 or float64 array of "
                 "(latitude, longitude)", what);
    return -1;
}

/* A (n, 2) float buffer as points; -1 with an exception. */
static int points_of(PyObject *o, Py_buffer *v, knn_points *p, int degrees, int writable,
                     const char *what)
{
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                           (writable ? PyBUF_WRITABLE : 0)) < 0) {
        v->obj = NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "cask.knn: %s must be a C-contiguous buffer", what);
        return -1;
    }
    int f64 = f64_of_format(v->format);
    if (f64 < 0 || v->ndim != 2 || v->shape[1] != 2 || v->shape[0] < 1)
        return bad_shape(what);
    memset(p, 0, sizeof *p);
    p->data = v->buf;
    p->n = v->shape[0];
    p->f64 = f64;
    p->degrees = degrees;
    return 0;
}

/* An unused DLPack capsule of a (n, 2) float CUDA tensor as points on its GPU, taken
 * (renamed "used_dltensor"; its deleter runs at cleanup); -1 with an exception. */
static int points_of_dlpack(PyObject *cap, pc_dl_managed **dl, knn_points *p, int degrees,
                            int ngpus, const char *what)
{
    pc_dl_managed *mt = PyCapsule_GetPointer(cap, "dltensor");
    if (!mt)
        return -1;
    pc_dl_tensor *t = &mt->dl_tensor;
    if (t->device.device_type != DL_CUDA && t->device.device_type != DL_CUDA_MANAGED) {
        PyErr_Format(PyExc_ValueError, "cask.knn: %s: DLPack device type %d is not a CUDA "
                     "GPU", what, t->device.device_type);
        return -1;
    }
    if (t->device.device_id < 0 || t->device.device_id >= ngpus) {
        PyErr_Format(PyExc_ValueError, "cask.knn: %s is on GPU %d: cask's runtime has %d",
                     what, t->device.device_id, ngpus);
        return -1;
    }
    if (t->dtype.code != DL_FLOAT || t->dtype.lanes != 1 ||
        (t->dtype.bits != 32 && t->dtype.bits != 64) || t->ndim != 2 || t->shape[1] != 2 ||
        t->shape[0] < 1)
        return bad_shape(what);
    if (t->strides && ((t->shape[0] > 1 && t->strides[0] != 2) || t->strides[1] != 1)) {
        PyErr_Format(PyExc_ValueError, "cask.knn: %s: the GPU tensor is not C-contiguous",
                     what);
        return -1;
    }
    if (PyCapsule_SetName(cap, "used_dltensor") < 0)
        return -1;
    *dl = mt;
    memset(p, 0, sizeof *p);
    p->data = (char *)t->data + t->byte_offset;
    p->n = t->shape[0];
    p->f64 = t->dtype.bits == 64;
    p->degrees = degrees;
    p->on_device = 1;
    p->device = t->device.device_id;
    return 0;
}

/* Points from a host buffer or a DLPack capsule; a sample (not None) stands for points
 * the host cannot read, in the estimate; the caller checked those. -1 with an exception. */
static int input_of(knn_call *c, int s, PyObject *o, PyObject *sample, int degrees)
{
    const char *what = s ? "ref" : "obs";
    if (PyCapsule_CheckExact(o)) {
        if (points_of_dlpack(o, &c->dl[s], &c->pts[s], degrees, c->info.ngpus, what))
            return -1;
    } else if (points_of(o, &c->views[s], &c->pts[s], degrees, 0, what)) {
        return -1;
    }
    if (sample != Py_None) {
        if (points_of(sample, &c->samples[s], &c->sample[s], degrees, 0, what))
            return -1;
        int64_t need = s ? knn_auto_ref_samples(c->pts[1].n) : KNN_AUTO_SAMPLE_OBS;
        if (c->sample[s].f64 != c->pts[s].f64 || (c->sample[s].n < need &&
            c->sample[s].n < c->pts[s].n)) {
            PyErr_Format(PyExc_ValueError, "cask.knn: %s: a sample of %lld rows of its "
                         "dtype is needed", what, (long long)need);
            return -1;
        }
        c->has_sample[s] = 1;
    }
    return 0;
}

/* The results: writable host buffers of n x k elements at least, or (out_device >= 0)
 * the addresses of n x k elements of that GPU's memory, which the caller allocated so.
 * -1 with an exception. */
static int outputs_of(knn_call *c, PyObject *const o[2], int out_device, size_t nk)
{
    if (out_device >= 0) {
        if (out_device >= c->info.ngpus) {
            PyErr_Format(PyExc_ValueError, "cask.knn: results on GPU %d: cask's runtime has "
                         "%d", out_device, c->info.ngpus);
            return -1;
        }
        for (int i = 0; i < 2; i++) {
            c->out[i] = PyLong_Check(o[i]) ? PyLong_AsVoidPtr(o[i]) : NULL;
            if (!c->out[i]) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "cask.knn: GPU results need the "
                                    "addresses of their memory (non-zero ints)");
                return -1;
            }
        }
        c->plan.out_on_device = 1;
        c->plan.out_device = out_device;
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        Py_buffer *v = &c->views[2 + i];
        if (PyObject_GetBuffer(o[i], v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
            v->obj = NULL;
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "cask.knn: outputs must be writable C-contiguous buffers");
            return -1;
        }
        if ((size_t)v->len < nk * 4) {
            PyErr_SetString(PyExc_ValueError, "cask.knn: outputs too small");
            return -1;
        }
        c->out[i] = v->buf;
    }
    return 0;
}

/* knn(obs, ref, k, method, km, chunk, ref_chunk, degrees, index, dist, obs_sample,
 *     ref_sample[, out_device, keep]) -> pruned */
static PyObject *knn(PyObject *m, PyObject *args)
{
    PyObject *o[4], *smp[2], *keep = NULL;
    int k, km, degrees, out_device = -1;
    const char *method;
    long long chunk, ref_chunk;
    if (!PyArg_ParseTuple(args, "OOispLLpOOOO|iO", &o[0], &o[1], &k, &method, &km, &chunk,
                          &ref_chunk, &degrees, &o[2], &o[3], &smp[0], &smp[1], &out_device,
                          &keep))
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
        if (!st) {
            pc_knn_pre_kernels_t pk;
            st = pc_knn_pre_kernels(pc_st.rt, &pk);
            pc_st.knn_check = pk.check;
            pc_st.knn_estimate = pk.estimate;
        }
        if (st)
            return pc_raise(st, NULL);
        pc_st.knn_ready = 1;
    }
    knn_call *c = calloc(1, sizeof *c);
    if (!c)
        return PyErr_NoMemory();
    c->job.fn = knn_fn;
    c->job.cleanup = knn_cleanup;
    Py_XINCREF(keep);
    c->keep = keep;
    c->meth = meth;
    c->km = km;
    c->chunk = chunk;
    c->ref_chunk = ref_chunk;
    cask_status st = cask_runtime_query(pc_st.rt, &c->info);
    if (st) {
        pc_raise(st, NULL);
        goto fail;
    }
    if (input_of(c, 0, o[0], smp[0], degrees) || input_of(c, 1, o[1], smp[1], degrees))
        goto fail;
    if (outputs_of(c, &o[2], out_device, (size_t)c->pts[0].n * (size_t)k))
        goto fail;
    c->plan.scale = km ? CASK_EARTH_RADIUS_KM : 1.0;
    c->plan.where = c->info.ngpus > 0 ? CASK_WHERE_GPU : CASK_WHERE_CPU;
    c->plan.k = k;
    if (pc_job_run(&c->job, 1))
        return NULL;
    st = c->job.status;
    int bad = c->bad, pruned = c->pruned;
    char err[sizeof c->job.err];
    memcpy(err, c->job.err, sizeof err);
    knn_cleanup(&c->job);
    if (st)
        return pc_raise(st, err[0] ? err : NULL);
    if (bad) {      /* the limits as Python's "%g" writes them (PyErr_Format has none) */
        PyErr_Format(PyExc_ValueError, "cask.knn: %s has values outside latitude [-%s, %s], "
                     "longitude [-%s, %s] or not finite", bad == 1 ? "obs" : "ref",
                     degrees ? "90" : "1.5708", degrees ? "90" : "1.5708",
                     degrees ? "180" : "3.14159", degrees ? "180" : "3.14159");
        return NULL;
    }
    return PyBool_FromLong(pruned);
fail:
    knn_cleanup(&c->job);
    return NULL;
}

/* knn_times() -> the last cask.knn's parts in seconds (a diagnostic of bench/). */
static PyObject *knn_times(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    const double *t = pc_st.knn_times;
    return Py_BuildValue("{s:d,s:d,s:d,s:d}", "plan", t[0], "job", t[1], "run", t[2],
                         "destroy", t[3]);
}

/* knn_memo() -> (decisions recalled, estimates run); knn_memo_clear() forgets. */
static PyObject *knn_memo(PyObject *m, PyObject *unused)
{
    uint64_t recalls, estimates;
    pc_knn_memo_counts(&recalls, &estimates);
    return Py_BuildValue("(KK)", (unsigned long long)recalls, (unsigned long long)estimates);
}

static PyObject *knn_memo_clear(PyObject *m, PyObject *unused)
{
    pc_knn_memo_clear();
    Py_RETURN_NONE;
}

PyMethodDef pc_knn_methods[] = {
    {"knn", knn, METH_VARARGS,
     "knn(obs, ref, k, method, km, chunk, ref_chunk, degrees, index, dist, obs_sample, "
     "ref_sample[, out_device, keep]) -> pruned; out_device >= 0: index and dist are "
     "addresses of that GPU's memory, which keep owns (held until the search ends)"},
    {"knn_times", knn_times, METH_NOARGS,
     "knn_times() -> the last cask.knn's parts in seconds: plan (checks and auto's "
     "estimate), job (graph made, references prepared), run, destroy"},
    {"knn_memo", knn_memo, METH_NOARGS,
     "knn_memo() -> (auto decisions recalled from the last sample, estimates run)"},
    {"knn_memo_clear", knn_memo_clear, METH_NOARGS,
     "knn_memo_clear(): forgets the last auto decision"},
    {NULL, NULL, 0, NULL},
};
