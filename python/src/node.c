/* node.c: _cask.Node, the Python object holding one reference to a lazy cask array,
 * and the constructors of arrays (from a buffer, a .npy file, constants, ranges,
 * random numbers). cask.array.Array (Python) wraps a Node. */
#include "pc.h"

#include <stdlib.h>
#include <string.h>

static PyObject *node_type;

void pc_release_dropped(void)
{
    for (size_t i = 0; i < pc_st.ndropped; i++) {
        cask_array_release(pc_st.dropped[i]);
        if (pc_st.dropped_views[i]) {
            PyBuffer_Release(pc_st.dropped_views[i]);
            free(pc_st.dropped_views[i]);
        }
    }
    pc_st.ndropped = 0;
}

static void node_dealloc(PyObject *self)
{
    pc_node *n = (pc_node *)self;
    int live = n->a && n->generation == pc_st.generation && pc_st.ctx;
    if (live && (pc_st.busy || pc_st.inflight)) {
        if (pc_st.ndropped == pc_st.capdropped) {
            size_t cap = pc_st.capdropped ? 2 * pc_st.capdropped : 64;
            cask_array **a = realloc(pc_st.dropped, cap * sizeof *a);
            if (a)
                pc_st.dropped = a;
            Py_buffer **v = a ? realloc(pc_st.dropped_views, cap * sizeof *v) : NULL;
            if (v)
                pc_st.dropped_views = v;
            if (a && v)
                pc_st.capdropped = cap;
        }
        if (pc_st.ndropped < pc_st.capdropped) {
            pc_st.dropped[pc_st.ndropped] = n->a;
            pc_st.dropped_views[pc_st.ndropped++] = n->view;
            n->view = NULL;
            live = 0;
        } else {
            live = 0;   /* out of memory: leak the array rather than race the compute */
            n->view = NULL;
        }
    }
    if (live)
        cask_array_release(n->a);
    if (n->view) {
        PyBuffer_Release(n->view);
        free(n->view);
    }
    Py_XDECREF(n->keep);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

static PyObject *node_meta(PyObject *self, PyObject *unused)
{
    cask_array *a = pc_node_array(self);
    if (!a)
        return NULL;
    cask_array_meta m;
    cask_status st = cask_array_get_meta(a, &m);
    if (st)
        return pc_raise(st, NULL);
    PyObject *shape = pc_tuple64(m.shape, m.ndim), *chunks = pc_tuple64(m.chunks, m.ndim);
    PyObject *r = NULL;
    if (shape && chunks)
        r = Py_BuildValue("(sOOLi)", cask_dtype_name(m.dtype), shape, chunks,
                          (long long)m.total_chunks, m.persisted);
    Py_XDECREF(shape);
    Py_XDECREF(chunks);
    return r;
}

static PyMethodDef node_methods[] = {
    {"meta", node_meta, METH_NOARGS,
     "meta() -> (dtype, shape, chunks, number of chunks, persisted)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_methods, node_methods},
    {Py_tp_doc, "A lazy cask array of the C library (wrapped by cask.array.Array)."},
    {0, NULL},
};

static PyType_Spec node_spec = {
    "cask._cask.Node", sizeof(pc_node), 0, Py_TPFLAGS_DEFAULT, node_slots,
};

int pc_node_type_init(PyObject *module)
{
    node_type = PyType_FromSpec(&node_spec);
    if (!node_type)
        return -1;
    Py_INCREF(node_type);
    if (PyModule_AddObject(module, "Node", node_type) < 0) {
        Py_DECREF(node_type);
        return -1;
    }
    return 0;
}

cask_array *pc_node_array(PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, (PyTypeObject *)node_type)) {
        PyErr_SetString(PyExc_TypeError, "cask: expected a cask array");
        return NULL;
    }
    pc_node *n = (pc_node *)obj;
    if (n->generation != pc_st.generation || !pc_st.ctx) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cask: this array belongs to a runtime that was shut down");
        return NULL;
    }
    return n->a;
}

PyObject *pc_node_new(cask_array *a, PyObject *keep, Py_buffer *view)
{
    PyTypeObject *tp = (PyTypeObject *)node_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    pc_node *n = (pc_node *)alloc(tp, 0);
    if (!n) {
        cask_array_release(a);
        if (view) {
            PyBuffer_Release(view);
            free(view);
        }
        return NULL;
    }
    n->a = a;
    n->generation = pc_st.generation;
    Py_XINCREF(keep);
    n->keep = keep;
    n->view = view;
    return (PyObject *)n;
}

/* ---- constructors ---- */

/* chunks: None or a tuple of ndim sizes. Returns 0 with *p NULL or at out, -1 on error. */
static int chunks_arg(PyObject *obj, int ndim, int64_t *out, const int64_t **p)
{
    *p = NULL;
    if (obj == Py_None)
        return 0;
    int n = pc_int64s(obj, out, CASK_ARRAY_MAX_DIMS, "chunks");
    if (n < 0)
        return -1;
    if (n != ndim) {
        PyErr_Format(PyExc_ValueError, "cask: chunks has %d entries for %d axes", n, ndim);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (out[i] < 1) {
            PyErr_SetString(PyExc_ValueError, "cask: chunk sizes must be at least 1");
            return -1;
        }
    *p = out;
    return 0;
}

static int shape_arg(PyObject *obj, int64_t *shape)
{
    int n = pc_int64s(obj, shape, CASK_ARRAY_MAX_DIMS, "shape");
    for (int i = 0; i < n; i++)
        if (shape[i] < 1) {
            PyErr_SetString(PyExc_ValueError,
                            "cask: every axis needs at least one element (no empty arrays)");
            return -1;
        }
    return n;
}

/* The cask dtype of a buffer's struct format and item size; -1 with TypeError. */
static int dtype_of_format(const char *fmt, Py_ssize_t itemsize)
{
    if (!fmt)
        fmt = "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@')
        fmt++;
    else if (*fmt == '>' || *fmt == '!') {
        PyErr_SetString(PyExc_TypeError, "cask: big-endian buffers are not supported");
        return -1;
    }
    if (fmt[0] && !fmt[1]) {
        char c = fmt[0];
        if (c == 'f' && itemsize == 4) return CASK_FLOAT32;
        if (c == 'd' && itemsize == 8) return CASK_FLOAT64;
        if ((c == 'i' || c == 'l' || c == 'q') && itemsize == 4) return CASK_INT32;
        if ((c == 'i' || c == 'l' || c == 'q') && itemsize == 8) return CASK_INT64;
        if ((c == 'I' || c == 'L') && itemsize == 4) return CASK_UINT32;
    }
    PyErr_Format(PyExc_TypeError,
                 "cask: buffer format '%s' (%zd-byte items) is not supported "
                 "(float32, float64, int32, int64, uint32)", fmt, itemsize);
    return -1;
}

static PyObject *from_buffer(PyObject *m, PyObject *args)
{
    PyObject *obj, *chunks_obj;
    if (!PyArg_ParseTuple(args, "OO", &obj, &chunks_obj))
        return NULL;
    Py_buffer *view = calloc(1, sizeof *view);
    if (!view)
        return PyErr_NoMemory();
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        free(view);
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "cask: from_buffer needs a C-contiguous buffer (copy it first)");
        return NULL;
    }
    PyObject *r = NULL;
    int64_t shape[CASK_ARRAY_MAX_DIMS], ch[CASK_ARRAY_MAX_DIMS];
    const int64_t *chp;
    int dt = dtype_of_format(view->format, view->itemsize);
    if (dt < 0)
        goto fail;
    if (view->ndim > CASK_ARRAY_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "cask: %d axes, at most %d", view->ndim,
                     CASK_ARRAY_MAX_DIMS);
        goto fail;
    }
    for (int i = 0; i < view->ndim; i++) {
        shape[i] = view->shape ? view->shape[i] : view->len / view->itemsize;
        if (shape[i] < 1) {
            PyErr_SetString(PyExc_ValueError, "cask: empty arrays are not supported");
            goto fail;
        }
    }
    if (chunks_arg(chunks_obj, view->ndim, ch, &chp) || pc_ready())
        goto fail;
    cask_array *a;
    cask_status st = cask_array_from_host(pc_st.ctx, view->buf, (cask_dtype)dt, view->ndim,
                                          shape, chp, &a);
    if (st) {
        pc_raise_array(st);
        goto fail;
    }
    return pc_node_new(a, NULL, view);
fail:
    PyBuffer_Release(view);
    free(view);
    return r;
}

static PyObject *from_npy(PyObject *m, PyObject *args)
{
    PyObject *path, *chunks_obj;
    if (!PyArg_ParseTuple(args, "O&O", PyUnicode_FSConverter, &path, &chunks_obj))
        return NULL;
    PyObject *r = NULL;
    int64_t ch[CASK_ARRAY_MAX_DIMS];
    const int64_t *chp = NULL;
    if (chunks_obj != Py_None) {
        int n = pc_int64s(chunks_obj, ch, CASK_ARRAY_MAX_DIMS, "chunks");
        if (n < 0)
            goto done;
        chp = ch;
    }
    if (pc_ready())
        goto done;
    cask_array *a;
    cask_status st = cask_array_from_npy(pc_st.ctx, PyBytes_AsString(path), chp, &a);
    if (st) {
        pc_raise_array(st);
        goto done;
    }
    r = pc_node_new(a, NULL, NULL);
done:
    Py_DECREF(path);
    return r;
}

/* full(dtype, shape, chunks, value) */
static PyObject *full(PyObject *m, PyObject *args)
{
    PyObject *dt_obj, *shape_obj, *chunks_obj;
    double value;
    if (!PyArg_ParseTuple(args, "OOOd", &dt_obj, &shape_obj, &chunks_obj, &value))
        return NULL;
    int64_t shape[CASK_ARRAY_MAX_DIMS], ch[CASK_ARRAY_MAX_DIMS];
    const int64_t *chp;
    int dt = pc_dtype_from_name(dt_obj), nd = dt < 0 ? -1 : shape_arg(shape_obj, shape);
    if (nd < 0 || chunks_arg(chunks_obj, nd, ch, &chp) || pc_ready())
        return NULL;
    cask_array *a;
    cask_status st = cask_array_full(pc_st.ctx, (cask_dtype)dt, nd, shape, chp, value, &a);
    return st ? pc_raise_array(st) : pc_node_new(a, NULL, NULL);
}

/* arange(dtype, n, start, step, chunk) */
static PyObject *arange(PyObject *m, PyObject *args)
{
    PyObject *dt_obj;
    long long n, chunk;
    double start, step;
    if (!PyArg_ParseTuple(args, "OLddL", &dt_obj, &n, &start, &step, &chunk))
        return NULL;
    int dt = pc_dtype_from_name(dt_obj);
    if (dt < 0)
        return NULL;
    if (n < 1 || chunk < 1) {
        PyErr_SetString(PyExc_ValueError, "cask: arange needs at least one element");
        return NULL;
    }
    if (pc_ready())
        return NULL;
    cask_array *a;
    cask_status st = cask_array_arange(pc_st.ctx, (cask_dtype)dt, n, start, step, chunk, &a);
    return st ? pc_raise_array(st) : pc_node_new(a, NULL, NULL);
}

/* random(kind, dtype, shape, chunks, seed, p1, p2): kind "uniform" (lo, hi) or "normal" */
static PyObject *random_(PyObject *m, PyObject *args)
{
    const char *kind;
    PyObject *dt_obj, *shape_obj, *chunks_obj;
    unsigned long long seed;
    double p1, p2;
    if (!PyArg_ParseTuple(args, "sOOOKdd", &kind, &dt_obj, &shape_obj, &chunks_obj, &seed,
                          &p1, &p2))
        return NULL;
    int64_t shape[CASK_ARRAY_MAX_DIMS], ch[CASK_ARRAY_MAX_DIMS];
    const int64_t *chp;
    int dt = pc_dtype_from_name(dt_obj), nd = dt < 0 ? -1 : shape_arg(shape_obj, shape);
    if (nd < 0 || chunks_arg(chunks_obj, nd, ch, &chp))
        return NULL;
    if (dt != CASK_FLOAT32 && dt != CASK_FLOAT64) {
        PyErr_SetString(PyExc_TypeError, "cask: random arrays are float32 or float64");
        return NULL;
    }
    if (pc_ready())
        return NULL;
    cask_array *a;
    cask_status st = !strcmp(kind, "normal")
        ? cask_array_random_normal(pc_st.ctx, (cask_dtype)dt, nd, shape, chp, seed, p1, p2, &a)
        : cask_array_random_uniform(pc_st.ctx, (cask_dtype)dt, nd, shape, chp, seed, p1, p2, &a);
    return st ? pc_raise_array(st) : pc_node_new(a, NULL, NULL);
}

PyMethodDef pc_array_methods[] = {
    {"from_buffer", from_buffer, METH_VARARGS,
     "from_buffer(obj, chunks) -> Node: wraps a C-contiguous buffer (not copied)"},
    {"from_npy", from_npy, METH_VARARGS, "from_npy(path, chunks) -> Node"},
    {"full", full, METH_VARARGS, "full(dtype, shape, chunks, value) -> Node"},
    {"arange", arange, METH_VARARGS, "arange(dtype, n, start, step, chunk) -> Node"},
    {"random", random_, METH_VARARGS,
     "random(kind, dtype, shape, chunks, seed, a, b) -> Node (uniform [a, b) or normal)"},
    {NULL, NULL, 0, NULL},
};
