/* ops.c: the lazy operations of _cask on Nodes: elementwise (by name), casts,
 * reductions, matmul, slices, rechunk, expand_dims. Each returns a new Node that keeps
 * its inputs alive (their wrapped buffers must outlive it). */
#include "pc.h"

#include <string.h>

static const char *const unary_names[CASK_UNARY_COUNT_] = {
    "neg", "abs", "sqrt", "exp", "log", "sin", "cos", "square"};
static const char *const binary_names[CASK_BINARY_COUNT_] = {
    "add", "sub", "mul", "div", "min", "max", "pow"};
static const char *const reduce_names[CASK_REDUCE_COUNT_] = {
    "sum", "min", "max", "mean", "argmin", "argmax", "var", "std"};

static int lookup(const char *const *names, int n, const char *s, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    PyErr_Format(PyExc_ValueError, "cask: unknown %s operation '%s'", what, s);
    return -1;
}

/* A node of result *ap (one reference, or none after st) that keeps ins alive. The
 * pointer is read after st was computed (argument order is unspecified in C). */
static PyObject *result(cask_status st, cask_array **ap, PyObject *in1, PyObject *in2)
{
    cask_array *a = *ap;
    if (st)
        return pc_raise_array(st);
    PyObject *keep = in2 ? PyTuple_Pack(2, in1, in2) : PyTuple_Pack(1, in1);
    if (!keep) {
        cask_array_release(a);
        return NULL;
    }
    PyObject *n = pc_node_new(a, keep, NULL);
    Py_DECREF(keep);
    return n;
}

static PyObject *unary(PyObject *m, PyObject *args)
{
    const char *op;
    PyObject *x;
    if (!PyArg_ParseTuple(args, "sO", &op, &x))
        return NULL;
    int o = lookup(unary_names, CASK_UNARY_COUNT_, op, "unary");
    cask_array *a = o < 0 ? NULL : pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    return result(cask_array_unary((cask_unary_op)o, a, &r), &r, x, NULL);
}

static PyObject *binary(PyObject *m, PyObject *args)
{
    const char *op;
    PyObject *x, *y;
    if (!PyArg_ParseTuple(args, "sOO", &op, &x, &y))
        return NULL;
    int o = lookup(binary_names, CASK_BINARY_COUNT_, op, "binary");
    cask_array *a = o < 0 ? NULL : pc_node_array(x), *b = a ? pc_node_array(y) : NULL, *r = NULL;
    if (!b || pc_ready())
        return NULL;
    return result(cask_array_binary((cask_binary_op)o, a, b, &r), &r, x, y);
}

/* binary_scalar(op, node, scalar, scalar_first) */
static PyObject *binary_scalar(PyObject *m, PyObject *args)
{
    const char *op;
    PyObject *x;
    double s;
    int first;
    if (!PyArg_ParseTuple(args, "sOdp", &op, &x, &s, &first))
        return NULL;
    int o = lookup(binary_names, CASK_BINARY_COUNT_, op, "binary");
    cask_array *a = o < 0 ? NULL : pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    return result(cask_array_binary_scalar((cask_binary_op)o, a, s, first, &r), &r, x, NULL);
}

static PyObject *astype(PyObject *m, PyObject *args)
{
    PyObject *x, *dt_obj;
    if (!PyArg_ParseTuple(args, "OO", &x, &dt_obj))
        return NULL;
    int dt = pc_dtype_from_name(dt_obj);
    cask_array *a = dt < 0 ? NULL : pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    return result(cask_array_astype(a, (cask_dtype)dt, &r), &r, x, NULL);
}

/* reduce(op, node, axis, ddof): axis None for every axis */
static PyObject *reduce(PyObject *m, PyObject *args)
{
    const char *op;
    PyObject *x, *axis_obj;
    int ddof;
    if (!PyArg_ParseTuple(args, "sOOi", &op, &x, &axis_obj, &ddof))
        return NULL;
    int o = lookup(reduce_names, CASK_REDUCE_COUNT_, op, "reduction");
    int axis = CASK_AXIS_ALL;
    if (axis_obj != Py_None) {
        axis = PyLong_AsLong(axis_obj);
        if (axis == -1 && PyErr_Occurred())
            return NULL;
    }
    cask_array *a = o < 0 ? NULL : pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    cask_status st;
    if (o == CASK_REDUCE_VAR && ddof)
        st = cask_array_var(a, axis, ddof, &r);
    else if (o == CASK_REDUCE_STD && ddof)
        st = cask_array_std(a, axis, ddof, &r);
    else
        st = cask_array_reduce((cask_reduce_op)o, a, axis, &r);
    return result(st, &r, x, NULL);
}

static PyObject *matmul(PyObject *m, PyObject *args)
{
    PyObject *x, *y;
    if (!PyArg_ParseTuple(args, "OO", &x, &y))
        return NULL;
    cask_array *a = pc_node_array(x), *b = a ? pc_node_array(y) : NULL, *r = NULL;
    if (!b || pc_ready())
        return NULL;
    return result(cask_array_matmul(a, b, &r), &r, x, y);
}

/* slice(node, start, stop) */
static PyObject *slice(PyObject *m, PyObject *args)
{
    PyObject *x, *start_obj, *stop_obj;
    if (!PyArg_ParseTuple(args, "OOO", &x, &start_obj, &stop_obj))
        return NULL;
    int64_t start[CASK_ARRAY_MAX_DIMS], stop[CASK_ARRAY_MAX_DIMS];
    if (pc_int64s(start_obj, start, CASK_ARRAY_MAX_DIMS, "start") < 0 ||
        pc_int64s(stop_obj, stop, CASK_ARRAY_MAX_DIMS, "stop") < 0)
        return NULL;
    cask_array *a = pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    return result(cask_array_slice(a, start, stop, &r), &r, x, NULL);
}

static PyObject *rechunk(PyObject *m, PyObject *args)
{
    PyObject *x, *chunks_obj;
    if (!PyArg_ParseTuple(args, "OO", &x, &chunks_obj))
        return NULL;
    int64_t ch[CASK_ARRAY_MAX_DIMS];
    if (pc_int64s(chunks_obj, ch, CASK_ARRAY_MAX_DIMS, "chunks") < 0)
        return NULL;
    cask_array *a = pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    return result(cask_array_rechunk(a, ch, &r), &r, x, NULL);
}

static PyObject *expand_dims(PyObject *m, PyObject *args)
{
    PyObject *x;
    int axis;
    if (!PyArg_ParseTuple(args, "Oi", &x, &axis))
        return NULL;
    cask_array *a = pc_node_array(x), *r = NULL;
    if (!a || pc_ready())
        return NULL;
    return result(cask_array_expand_dims(a, axis, &r), &r, x, NULL);
}

PyMethodDef pc_ops_methods[] = {
    {"unary", unary, METH_VARARGS, "unary(op, x) -> Node"},
    {"binary", binary, METH_VARARGS, "binary(op, x, y) -> Node (numpy broadcasting)"},
    {"binary_scalar", binary_scalar, METH_VARARGS,
     "binary_scalar(op, x, scalar, scalar_first) -> Node"},
    {"astype", astype, METH_VARARGS, "astype(x, dtype) -> Node"},
    {"reduce", reduce, METH_VARARGS, "reduce(op, x, axis or None, ddof) -> Node"},
    {"matmul", matmul, METH_VARARGS, "matmul(x, y) -> Node"},
    {"slice", slice, METH_VARARGS, "slice(x, start, stop) -> Node (chunk-aligned)"},
    {"rechunk", rechunk, METH_VARARGS, "rechunk(x, chunks) -> Node"},
    {"expand_dims", expand_dims, METH_VARARGS, "expand_dims(x, axis) -> Node"},
    {NULL, NULL, 0, NULL},
};
