/* dlpack.c: GPU tensors in through DLPack without a copy (cask_array_from_device), and
 * the runtime's transfer counters (which show that nothing went through the host).
 * DLPack's ABI (dlpack.h, v0.8 unversioned capsules "dltensor") is declared in pc.h: a
 * few plain structs, stable since 2017. The consumer renames the capsule
 * "used_dltensor" and calls the tensor's deleter when done with it: here, when the
 * node that wraps it dies (a capsule of ours kept by the node). */
#include "pc.h"

#include <stdlib.h>
#include <string.h>

static void keeper_free(PyObject *cap)
{
    pc_dl_managed *m = PyCapsule_GetPointer(cap, "cask.dlpack_tensor");
    if (m && m->deleter)
        m->deleter(m);
}

static int dtype_of_dl(pc_dl_dtype t)
{
    if (t.lanes == 1) {
        if (t.code == DL_FLOAT && t.bits == 32) return CASK_FLOAT32;
        if (t.code == DL_FLOAT && t.bits == 64) return CASK_FLOAT64;
        if (t.code == DL_INT && t.bits == 32) return CASK_INT32;
        if (t.code == DL_INT && t.bits == 64) return CASK_INT64;
        if (t.code == DL_UINT && t.bits == 32) return CASK_UINT32;
    }
    PyErr_Format(PyExc_TypeError, "cask: DLPack dtype (code %d, %d bits, %d lanes) is not "
                 "supported (float32, float64, int32, int64, uint32)", t.code, t.bits, t.lanes);
    return -1;
}

/* from_dlpack_device(capsule, chunks or None) -> Node over the tensor's GPU memory */
static PyObject *from_dlpack_device(PyObject *m, PyObject *args)
{
    PyObject *cap, *chunks_obj;
    if (!PyArg_ParseTuple(args, "OO", &cap, &chunks_obj))
        return NULL;
    if (!PyCapsule_IsValid(cap, "dltensor")) {
        PyErr_SetString(PyExc_TypeError,
                        "cask: expected an unused DLPack capsule (\"dltensor\") from __dlpack__()");
        return NULL;
    }
    pc_dl_managed *mt = PyCapsule_GetPointer(cap, "dltensor");
    pc_dl_tensor *t = &mt->dl_tensor;
    if (t->device.device_type != DL_CUDA && t->device.device_type != DL_CUDA_MANAGED) {
        PyErr_Format(PyExc_ValueError, "cask: DLPack device type %d is not a CUDA GPU",
                     t->device.device_type);
        return NULL;
    }
    int dt = dtype_of_dl(t->dtype);
    if (dt < 0)
        return NULL;
    if (t->ndim < 1 || t->ndim > CASK_ARRAY_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "cask: a GPU tensor of %d axes (1..%d)", t->ndim,
                     CASK_ARRAY_MAX_DIMS);
        return NULL;
    }
    int64_t shape[CASK_ARRAY_MAX_DIMS], ch[CASK_ARRAY_MAX_DIMS], expect = 1;
    for (int k = t->ndim - 1; k >= 0; k--) {
        shape[k] = t->shape[k];
        if (shape[k] < 1) {
            PyErr_SetString(PyExc_ValueError, "cask: empty arrays are not supported");
            return NULL;
        }
        if (t->strides && shape[k] > 1 && t->strides[k] != expect) {
            PyErr_SetString(PyExc_ValueError, "cask: the GPU tensor is not C-contiguous "
                            "(make it so first, e.g. cupy.ascontiguousarray)");
            return NULL;
        }
        expect *= shape[k];
    }
    const int64_t *chp = NULL;
    if (chunks_obj != Py_None) {
        int n = pc_int64s(chunks_obj, ch, CASK_ARRAY_MAX_DIMS, "chunks");
        if (n < 0)
            return NULL;
        if (n != t->ndim) {
            PyErr_Format(PyExc_ValueError, "cask: %d chunk sizes for %d axes", n, t->ndim);
            return NULL;
        }
        chp = ch;
    }
    if (pc_ready())
        return NULL;
    const char *data = (const char *)t->data + t->byte_offset;
    cask_array *a;
    cask_status st = cask_array_from_device(pc_st.ctx, data, t->device.device_id, (cask_dtype)dt,
                                            t->ndim, shape, chp, &a);
    if (st)
        return pc_raise_array(st);
    /* from here on the tensor is ours: the node keeps it, its deleter runs with the node */
    PyObject *keeper = PyCapsule_New(mt, "cask.dlpack_tensor", keeper_free);
    if (!keeper) {
        cask_array_release(a);
        return NULL;
    }
    if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
        PyCapsule_SetDestructor(keeper, NULL);
        Py_DECREF(keeper);
        cask_array_release(a);
        return NULL;
    }
    PyObject *node = pc_node_new(a, keeper, NULL);
    Py_DECREF(keeper);
    return node;
}

/* transfer_stats(reset) -> dict: the workers' copy counters summed (then reset) */
static PyObject *transfer_stats(PyObject *m, PyObject *args)
{
    int reset = 0;
    if (!PyArg_ParseTuple(args, "|p", &reset) || pc_ready())
        return NULL;
    int n = 0;
    cask_status st = cask_runtime_nworkers(pc_st.rt, &n);
    if (st)
        return pc_raise(st, NULL);
    cask_worker_stats *s = calloc((size_t)n + 1, sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    if ((st = cask_runtime_stats(pc_st.rt, s, n))) {
        free(s);
        return pc_raise(st, NULL);
    }
    unsigned long long h2d = 0, d2h = 0, peer = 0, tasks = 0, gpu_tasks = 0;
    for (int i = 0; i < n; i++) {
        h2d += s[i].bytes_h2d;
        d2h += s[i].bytes_d2h;
        peer += s[i].bytes_peer;
        tasks += s[i].tasks_run;
        if (s[i].kind == 1)
            gpu_tasks += s[i].tasks_run;
    }
    free(s);
    if (reset && (st = cask_runtime_stats_reset(pc_st.rt)))
        return pc_raise(st, NULL);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "bytes_h2d", h2d, "bytes_d2h", d2h,
                         "bytes_peer", peer, "tasks", tasks, "gpu_tasks", gpu_tasks);
}

PyMethodDef pc_dlpack_methods[] = {
    {"from_dlpack_device", from_dlpack_device, METH_VARARGS,
     "from_dlpack_device(capsule, chunks) -> Node over a CUDA tensor (not copied)"},
    {"transfer_stats", transfer_stats, METH_VARARGS,
     "transfer_stats(reset=False) -> dict: host<->GPU and GPU<->GPU bytes copied"},
    {NULL, NULL, 0, NULL},
};
