/* kernel.c: user kernels written in C (or CUDA) for cask.array.map_blocks: loaded from
 * a shared library by symbol name (dlopen/dlsym) and registered with the runtime as any
 * C program registers its kernels; and map_blocks itself. */
#include "pc.h"

#include <dlfcn.h>
#include <string.h>

/* load_kernel(path, name, cpu_symbol or None, cuda_symbol or None, elementwise) ->
 * (capsule, generation) */
static PyObject *load_kernel(PyObject *m, PyObject *args)
{
    PyObject *path;
    const char *name, *cpu = NULL, *cuda = NULL;
    int elementwise = 0;
    if (!PyArg_ParseTuple(args, "O&szz|p", PyUnicode_FSConverter, &path, &name, &cpu, &cuda,
                          &elementwise))
        return NULL;
    PyObject *r = NULL;
    if (!cpu && !cuda) {
        PyErr_SetString(PyExc_ValueError, "cask: a kernel needs a cpu or a cuda symbol");
        goto done;
    }
    if (pc_ready())
        goto done;
    /* never closed: the runtime may call into it until it shuts down */
    void *lib = dlopen(PyBytes_AsString(path), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        PyErr_Format(PyExc_OSError, "cask: %s", dlerror());
        goto done;
    }
    cask_kernel_desc kd = {.name = name};
    if (cpu && !(kd.cpu = (cask_kernel_fn)dlsym(lib, cpu))) {
        PyErr_Format(PyExc_ValueError, "cask: no symbol %s in %s", cpu, PyBytes_AsString(path));
        goto done;
    }
    if (cuda && !(kd.cuda = (cask_kernel_fn)dlsym(lib, cuda))) {
        PyErr_Format(PyExc_ValueError, "cask: no symbol %s in %s", cuda, PyBytes_AsString(path));
        goto done;
    }
    if (elementwise)
        kd.flags = CASK_KERNEL_ELEMENTWISE;
    cask_kernel *k;
    cask_status st = cask_kernel_register(pc_st.rt, &kd, &k);
    if (st) {
        pc_raise(st, NULL);
        goto done;
    }
    PyObject *cap = PyCapsule_New(k, "cask_kernel", NULL);
    if (cap) {
        r = Py_BuildValue("(OK)", cap, (unsigned long long)pc_st.generation);
        Py_DECREF(cap);
    }
done:
    Py_DECREF(path);
    return r;
}

/* map_blocks((capsule, generation), nodes, out_dtype, args bytes) -> Node */
static PyObject *map_blocks(PyObject *m, PyObject *args)
{
    PyObject *cap;
    unsigned long long gen;
    PyObject *nodes, *dt_obj;
    Py_buffer user = {0};
    if (!PyArg_ParseTuple(args, "(OK)OOy*", &cap, &gen, &nodes, &dt_obj, &user))
        return NULL;
    PyObject *r = NULL, *seq = NULL;
    cask_array *in[CASK_MAX_BUFFERS];
    int dt = pc_dtype_from_name(dt_obj);
    if (dt < 0 || pc_ready())
        goto done;
    cask_kernel *k = PyCapsule_GetPointer(cap, "cask_kernel");
    if (!k)
        goto done;
    if (gen != pc_st.generation) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cask: this kernel belongs to a runtime that was shut down");
        goto done;
    }
    seq = PySequence_Tuple(nodes);
    if (!seq)
        goto done;
    Py_ssize_t n = PyTuple_Size(seq);
    if (n > CASK_MAX_BUFFERS - 1) {
        PyErr_Format(PyExc_ValueError, "cask: map_blocks takes at most %d arrays",
                     CASK_MAX_BUFFERS - 1);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(in[i] = pc_node_array(PyTuple_GetItem(seq, i))))
            goto done;
    cask_array *a;
    cask_status st = cask_array_map_blocks(k, (int)n, in, (cask_dtype)dt,
                                           user.len ? user.buf : NULL, (size_t)user.len, &a);
    if (st) {
        pc_raise_array(st);
        goto done;
    }
    r = pc_node_new(a, seq, NULL);
done:
    Py_XDECREF(seq);
    PyBuffer_Release(&user);
    return r;
}

PyMethodDef pc_kernel_methods[] = {
    {"load_kernel", load_kernel, METH_VARARGS,
     "load_kernel(path, name, cpu_symbol, cuda_symbol, elementwise) -> kernel handle"},
    {"map_blocks", map_blocks, METH_VARARGS,
     "map_blocks(kernel, nodes, out_dtype, args) -> Node"},
    {NULL, NULL, 0, NULL},
};
