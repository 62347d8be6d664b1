/* module.c: the _cask extension module: its functions (gathered from the other files),
 * the runtime's configuration (cask.config) and lifetime (started on first use, never at
 * import), and cask.CaskError. The package loads it on first use (cask/_lib.py), not
 * at `import cask`: loading libcask loads CUDA's libraries in a CUDA build. */
#include "pc.h"

#include <string.h>

/* configure(dict): fields of cask_config for the next start; {} clears them */
static PyObject *configure(PyObject *m, PyObject *args)
{
    PyObject *d;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &d))
        return NULL;
    if (pc_st.rt) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cask: the runtime is running; cask.shutdown() first, then configure");
        return NULL;
    }
    cask_config cfg = {0};
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        const char *name = PyUnicode_AsUTF8AndSize(k, NULL);
        if (!name)
            return NULL;
        if (!strcmp(name, "trace")) {
            const char *s = PyUnicode_AsUTF8AndSize(v, NULL);
            if (!s)
                return NULL;
            snprintf(pc_st.trace_path, sizeof pc_st.trace_path, "%s", s);
            cfg.trace_path = pc_st.trace_path;
            cfg.field_mask |= CASK_CONFIG_TRACE_PATH;
            continue;
        }
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        if (!strcmp(name, "ncpu")) { cfg.ncpu = (int)x; cfg.field_mask |= CASK_CONFIG_NCPU; }
        else if (!strcmp(name, "ngpu")) { cfg.ngpu = (int)x; cfg.field_mask |= CASK_CONFIG_NGPU; }
        else if (!strcmp(name, "sim_gpus")) { cfg.sim_gpus = (int)x; cfg.field_mask |= CASK_CONFIG_SIM_GPUS; }
        else if (!strcmp(name, "bind")) { cfg.bind = (int)x; cfg.field_mask |= CASK_CONFIG_BIND; }
        else if (!strcmp(name, "log_level")) { cfg.log_level = (cask_log_level)x; cfg.field_mask |= CASK_CONFIG_LOG_LEVEL; }
        else if (!strcmp(name, "gpu_streams")) { cfg.gpu_streams = (int)x; cfg.field_mask |= CASK_CONFIG_GPU_STREAMS; }
        else if (!strcmp(name, "stats")) { cfg.stats = (int)x; cfg.field_mask |= CASK_CONFIG_STATS; }
        else if (!strcmp(name, "progress")) { cfg.progress = (int)x; cfg.field_mask |= CASK_CONFIG_PROGRESS; }
        else if (!strcmp(name, "gpu_mem_limit")) { cfg.gpu_mem_limit = (size_t)x; cfg.field_mask |= CASK_CONFIG_GPU_MEM_LIMIT; }
        else if (!strcmp(name, "host_mem_limit")) { cfg.host_mem_limit = (size_t)x; cfg.field_mask |= CASK_CONFIG_HOST_MEM_LIMIT; }
        else {
            PyErr_Format(PyExc_ValueError, "cask: unknown configuration field '%s'", name);
            return NULL;
        }
    }
    pc_st.cfg = cfg;
    Py_RETURN_NONE;
}

static PyObject *start(PyObject *m, PyObject *unused)
{
    if (pc_ready())
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *shutdown(PyObject *m, PyObject *unused)
{
    if (pc_shutdown())
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *started(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(pc_st.rt != NULL);
}

static PyObject *info(PyObject *m, PyObject *unused)
{
    if (pc_ready())
        return NULL;
    cask_runtime_info i;
    cask_status st = cask_runtime_query(pc_st.rt, &i);
    if (st)
        return pc_raise(st, NULL);
    static const char *const sched[] = {"ws", "locality", "eager"};
    return Py_BuildValue("{s:i,s:i,s:O,s:i,s:i,s:s}", "ncpu_workers", i.ncpu_workers,
                         "ngpus", i.ngpus, "simulated_gpus", i.simulated_gpus ? Py_True : Py_False,
                         "ncores", i.ncores, "ncores_used", i.ncores_used,
                         "sched", (unsigned)i.sched < 3 ? sched[i.sched] : "?");
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS, "configure(dict): cask_config for the next start"},
    {"start", start, METH_NOARGS, "start(): starts the runtime now (else on first use)"},
    {"shutdown", shutdown, METH_NOARGS, "shutdown(): stops the runtime; its arrays die"},
    {"started", started, METH_NOARGS, "started() -> bool"},
    {"info", info, METH_NOARGS, "info() -> dict: workers and GPUs (starts the runtime)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_cask",
    "The C half of the cask package: the runtime and lazy arrays of libcask.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cask(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    PyMethodDef *tables[] = {pc_array_methods, pc_ops_methods, pc_compute_methods,
                             pc_dask_methods, pc_knn_methods, pc_kernel_methods,
                             pc_dlpack_methods, pc_hostbuf_methods};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
        if (PyModule_AddFunctions(m, tables[i]) < 0)
            goto fail;
    if (!pc_st.error) {
        /* the package's class (cask.CaskError, defined before this module is loaded),
         * else one of our own when loaded alone */
        PyObject *pkg = PyImport_ImportModule("cask");
        if (pkg) {
            pc_st.error = PyObject_GetAttrString(pkg, "CaskError");
            Py_DECREF(pkg);
        }
        if (!pc_st.error) {
            PyErr_Clear();
            pc_st.error = PyErr_NewExceptionWithDoc(
                "cask.CaskError",
                "A cask call failed: args are (message, status code) of the C library.",
                PyExc_RuntimeError, NULL);
        }
        if (!pc_st.error)
            goto fail;
    }
    Py_INCREF(pc_st.error);
    if (PyModule_AddObject(m, "CaskError", pc_st.error) < 0) {
        Py_DECREF(pc_st.error);
        goto fail;
    }
    if (pc_node_type_init(m) < 0 || pc_hostbuf_type_init(m) < 0)
        goto fail;
    if (PyModule_AddIntConstant(m, "MAX_DIMS", CASK_ARRAY_MAX_DIMS) < 0 ||
        PyModule_AddIntConstant(m, "KNN_KMAX", CASK_KNN_KMAX) < 0 ||
        PyModule_AddObject(m, "EARTH_RADIUS_KM", PyFloat_FromDouble(CASK_EARTH_RADIUS_KM)) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
