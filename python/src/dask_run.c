/* dask_run.c: Python callables as cask tasks, the engine of cask.dask.get. Python hands
 * over a graph already reduced to numbers (cask/dask.py): for each task a callable
 * taking a dict of its inputs' results, its key, and the indexes of the tasks it needs.
 * cask orders them, runs each on a worker with the GIL taken only around the call,
 * keeps the results (dropping each once its last consumer ran, unless it was asked
 * for), and hands back the wanted ones. A task that raises fails the graph; the first
 * exception is raised again in the caller as Dask's schedulers do. */
#include "pc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct dask_run {
    pc_job job;
    Py_ssize_t n;
    PyObject **calls, **keys;  /* borrowed from the lists, which the caller keeps */
    PyObject **results;        /* owned */
    uint32_t *dep_start, *dep_index;   /* by original index */
    uint32_t *left;            /* consumers not yet run */
    unsigned char *wanted;
    atomic_int stop;           /* a task failed or Ctrl-C: skip the rest */
    /* Combining: one worker at a time runs Python (the GIL allows no more), and it runs
     * the Python tasks other workers queued meanwhile, without giving up the GIL in
     * between: workers do not hand the GIL to each other for every small task (2 workers
     * on small tasks: 2x slower than 1 without this). Tasks of Dask whose calls take
     * long (NumPy on big chunks, which releases the GIL) run side by side instead:
     * heavy is set once the mean call passes HEAVY_NS. */
    pthread_mutex_t qlock;
    int draining;              /* a worker runs the queue */
    struct queued { uint64_t index; cask_task_async *token; } *queue;
    size_t qhead, qtail, qcap;
    double mean_ns;            /* mean duration of a call (exponential average) */
    atomic_int heavy;
    PyObject *et, *ev, *tb;    /* the first exception */
    cask_graph *graph;
} dask_run;

typedef struct dask_arg {
    dask_run *run;
    uint64_t index;
} dask_arg;

/* This worker's Python thread state, made on its first Python task and kept. */
static __thread PyThreadState *worker_tstate;

static void gil_take(void)
{
    if (!worker_tstate) {
        PyGILState_Ensure();           /* never released: the state stays this thread's */
        worker_tstate = PyThreadState_Get();
    } else {
        PyEval_RestoreThread(worker_tstate);
    }
}

#define HEAVY_NS 200000.0

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Runs task i with the GIL held; 0, or -1 after recording the exception. */
static int call_task(dask_run *r, Py_ssize_t i)
{
    if (atomic_load_explicit(&r->stop, memory_order_relaxed))
        return -1;
    PyObject *d = PyDict_New(), *res = NULL;
    for (uint32_t e = r->dep_start[i]; d && e < r->dep_start[i + 1]; e++) {
        uint32_t j = r->dep_index[e];
        if (PyDict_SetItem(d, r->keys[j], r->results[j] ? r->results[j] : Py_None) < 0)
            Py_CLEAR(d);
    }
    if (d) {
        res = PyObject_CallFunctionObjArgs(r->calls[i], d, NULL);
        Py_DECREF(d);
    }
    if (!res) {
        if (!r->et)
            PyErr_Fetch(&r->et, &r->ev, &r->tb);
        else
            PyErr_Clear();
        atomic_store(&r->stop, 1);
        return -1;
    }
    r->results[i] = res;
    for (uint32_t e = r->dep_start[i]; e < r->dep_start[i + 1]; e++) {
        uint32_t j = r->dep_index[e];
        if (--r->left[j] == 0 && !r->wanted[j])
            Py_CLEAR(r->results[j]);
    }
    return 0;
}

static const char skipped_msg[] = "skipped or raised: see the Python exception";

/* Queues (i, token) for the draining worker; 0, or -1 when none drains (then the caller
 * becomes it: draining is set). */
static int enqueue_or_drain(dask_run *r, uint64_t i, cask_task_async *token)
{
    pthread_mutex_lock(&r->qlock);
    if (!r->draining) {
        r->draining = 1;
        pthread_mutex_unlock(&r->qlock);
        return -1;
    }
    if (r->qtail - r->qhead == r->qcap) {
        size_t cap = r->qcap ? 2 * r->qcap : 256, n = r->qtail - r->qhead;
        struct queued *q = malloc(cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&r->qlock);
            return -2;
        }
        for (size_t k = 0; k < n; k++)
            q[k] = r->queue[(r->qhead + k) % (r->qcap ? r->qcap : 1)];
        free(r->queue);
        r->queue = q;
        r->qcap = cap;
        r->qhead = 0;
        r->qtail = n;
    }
    r->queue[r->qtail++ % r->qcap] = (struct queued){i, token};
    pthread_mutex_unlock(&r->qlock);
    return 0;
}

static cask_status python_task(cask_task_ctx *tctx)
{
    const dask_arg *a = cask_task_args(tctx, NULL);
    dask_run *r = a->run;
    if (atomic_load_explicit(&r->heavy, memory_order_relaxed)) {
        gil_take();                       /* long calls: side by side */
        int rc = call_task(r, (Py_ssize_t)a->index);
        PyEval_SaveThread();
        return rc ? cask_task_fail(tctx, skipped_msg) : CASK_OK;
    }
    cask_task_async *token = cask_task_async_begin(tctx);
    int q = enqueue_or_drain(r, a->index, token);
    if (q == 0)
        return CASK_OK;                   /* the draining worker runs it */
    if (q == -2) {
        cask_task_async_end(token, CASK_ERR_NOMEM, "out of memory");
        return CASK_OK;
    }
    gil_take();
    struct queued item = {a->index, token};
    for (;;) {
        double t0 = now_ns();
        int rc = call_task(r, (Py_ssize_t)item.index);
        r->mean_ns += (now_ns() - t0 - r->mean_ns) / 16;
        cask_task_async_end(item.token, rc ? CASK_ERR_TASK_FAILED : CASK_OK,
                            rc ? skipped_msg : NULL);
        if (r->mean_ns > HEAVY_NS)
            atomic_store(&r->heavy, 1);
        pthread_mutex_lock(&r->qlock);
        if (r->qhead == r->qtail) {
            r->draining = 0;
            pthread_mutex_unlock(&r->qlock);
            break;
        }
        item = r->queue[r->qhead++ % r->qcap];
        pthread_mutex_unlock(&r->qlock);
    }
    PyEval_SaveThread();
    return CASK_OK;
}

static cask_status run_fn(pc_job *job)
{
    dask_run *r = (dask_run *)job;
    cask_status st = cask_graph_compute(r->graph);
    if (st)
        snprintf(job->err, sizeof job->err, "%s", cask_graph_error(r->graph));
    return st;
}

static void run_cancel(pc_job *job)
{
    atomic_store(&((dask_run *)job)->stop, 1);
}

static void run_free(dask_run *r)
{
    if (r->results)
        for (Py_ssize_t i = 0; i < r->n; i++)
            Py_XDECREF(r->results[i]);
    Py_XDECREF(r->et);
    Py_XDECREF(r->ev);
    Py_XDECREF(r->tb);
    cask_graph_destroy(r->graph);
    free(r->calls);
    free(r->keys);
    free(r->results);
    free(r->dep_start);
    free(r->dep_index);
    free(r->left);
    free(r->wanted);
    free(r->queue);
    pthread_mutex_destroy(&r->qlock);
    free(r);
}

/* The tasks in an order where each comes after its dependencies (Kahn), into order;
 * -1 with ValueError on a cycle. */
static int topo_order(const dask_run *r, uint32_t *order)
{
    Py_ssize_t n = r->n, head = 0, tail = 0;
    uint32_t *missing = malloc((size_t)n * sizeof *missing);
    uint32_t *cstart = calloc((size_t)n + 1, sizeof *cstart);
    uint32_t *cons = malloc((size_t)r->dep_start[n] * sizeof *cons + 1);
    if (!missing || !cstart || !cons) {
        free(missing);
        free(cstart);
        free(cons);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        missing[i] = r->dep_start[i + 1] - r->dep_start[i];
        for (uint32_t e = r->dep_start[i]; e < r->dep_start[i + 1]; e++)
            cstart[r->dep_index[e] + 1]++;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        cstart[i + 1] += cstart[i];
    uint32_t *fill = r->left;    /* scratch until the counts are set below */
    memcpy(fill, cstart, (size_t)n * sizeof *fill);
    for (Py_ssize_t i = 0; i < n; i++)
        for (uint32_t e = r->dep_start[i]; e < r->dep_start[i + 1]; e++)
            cons[fill[r->dep_index[e]]++] = (uint32_t)i;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!missing[i])
            order[tail++] = (uint32_t)i;
    while (head < tail) {
        uint32_t t = order[head++];
        for (uint32_t e = cstart[t]; e < cstart[t + 1]; e++)
            if (--missing[cons[e]] == 0)
                order[tail++] = cons[e];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        r->left[i] = cstart[i + 1] - cstart[i];
    free(missing);
    free(cstart);
    free(cons);
    if (tail != n) {
        PyErr_SetString(PyExc_ValueError, "cask.dask: the graph has a cycle");
        return -1;
    }
    return 0;
}

/* Fills r from the Python lists; -1 with an exception. */
static int parse(dask_run *r, PyObject *calls, PyObject *keys, PyObject *deps, PyObject *wanted)
{
    Py_ssize_t n = PyList_Size(calls);
    if (n < 0)
        return -1;
    if (PyList_Size(keys) != n || PyList_Size(deps) != n || PyList_Size(wanted) != n) {
        PyErr_SetString(PyExc_ValueError, "cask.dask: lists of different lengths");
        return -1;
    }
    if ((unsigned long long)n >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "cask.dask: too many tasks");
        return -1;
    }
    r->n = n;
    r->calls = malloc(((size_t)n + 1) * sizeof *r->calls);
    r->keys = malloc(((size_t)n + 1) * sizeof *r->keys);
    r->results = calloc((size_t)n + 1, sizeof *r->results);
    r->dep_start = malloc(((size_t)n + 1) * sizeof *r->dep_start);
    r->left = calloc((size_t)n + 1, sizeof *r->left);
    r->wanted = calloc((size_t)n + 1, 1);
    if (!r->calls || !r->keys || !r->results || !r->dep_start || !r->left || !r->wanted) {
        PyErr_NoMemory();
        return -1;
    }
    size_t ne = 0, cap = (size_t)n + 16;
    r->dep_index = malloc(cap * sizeof *r->dep_index);
    if (!r->dep_index) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        r->calls[i] = PyList_GetItem(calls, i);
        r->keys[i] = PyList_GetItem(keys, i);
        r->wanted[i] = (unsigned char)PyObject_IsTrue(PyList_GetItem(wanted, i));
        r->dep_start[i] = (uint32_t)ne;
        PyObject *dl = PyList_GetItem(deps, i);
        Py_ssize_t nd = PySequence_Size(dl);
        if (nd < 0)
            return -1;
        for (Py_ssize_t e = 0; e < nd; e++) {
            PyObject *o = PySequence_GetItem(dl, e);
            long long j = o ? PyLong_AsLongLong(o) : -1;
            Py_XDECREF(o);
            if (j == -1 && PyErr_Occurred())
                return -1;
            if (j < 0 || j >= n) {
                PyErr_SetString(PyExc_ValueError, "cask.dask: dependency out of range");
                return -1;
            }
            if (ne == cap) {
                cap *= 2;
                uint32_t *p = realloc(r->dep_index, cap * sizeof *p);
                if (!p) {
                    PyErr_NoMemory();
                    return -1;
                }
                r->dep_index = p;
            }
            r->dep_index[ne++] = (uint32_t)j;
        }
        if (ne >= UINT32_MAX - (size_t)n) {
            PyErr_SetString(PyExc_ValueError, "cask.dask: too many edges");
            return -1;
        }
    }
    r->dep_start[n] = (uint32_t)ne;
    return 0;
}

/* Adds the tasks to r->graph in topological order; -1 with an exception. */
static int build(dask_run *r)
{
    Py_ssize_t n = r->n;
    uint32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    uint32_t *pos = malloc(((size_t)n + 1) * sizeof *pos);
    uint32_t *bstart = malloc(((size_t)n + 1) * sizeof *bstart);
    uint32_t *bindex = malloc(((size_t)r->dep_start[n] + 1) * sizeof *bindex);
    dask_arg *args = malloc(((size_t)n + 1) * sizeof *args);
    int rc = -1;
    if (!order || !pos || !bstart || !bindex || !args) {
        PyErr_NoMemory();
        goto done;
    }
    if (topo_order(r, order))
        goto done;
    for (Py_ssize_t p = 0; p < n; p++)
        pos[order[p]] = (uint32_t)p;
    uint32_t ne = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        uint32_t t = order[p];
        bstart[p] = ne;
        for (uint32_t e = r->dep_start[t]; e < r->dep_start[t + 1]; e++)
            bindex[ne++] = pos[r->dep_index[e]];
        args[p].run = r;
        args[p].index = t;
    }
    bstart[n] = ne;
    cask_task_batch b = {.ntasks = (size_t)n, .kernel = pc_st.py_kernel, .args = args,
                         .args_size = sizeof *args, .dep_start = bstart, .dep_index = bindex};
    cask_status st = cask_graph_create(pc_st.rt, &r->graph);
    if (!st && n)
        st = cask_graph_add_batch(r->graph, &b, NULL);
    if (st) {
        pc_raise(st, NULL);
        goto done;
    }
    rc = 0;
done:
    free(order);
    free(pos);
    free(bstart);
    free(bindex);
    free(args);
    return rc;
}

/* run_graph(calls, keys, deps, wanted) -> list of results (None where not wanted) */
static PyObject *run_graph(PyObject *m, PyObject *args)
{
    PyObject *calls, *keys, *deps, *wanted;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &calls, &PyList_Type, &keys,
                          &PyList_Type, &deps, &PyList_Type, &wanted) || pc_ready())
        return NULL;
    if (!pc_st.py_kernel || pc_st.py_kernel_generation != pc_st.generation) {
        cask_kernel_desc kd = {.name = "python", .cpu = python_task};
        cask_status st = cask_kernel_register(pc_st.rt, &kd, &pc_st.py_kernel);
        if (st)
            return pc_raise(st, NULL);
        pc_st.py_kernel_generation = pc_st.generation;
    }
    dask_run *r = calloc(1, sizeof *r);
    if (!r)
        return PyErr_NoMemory();
    PyObject *out = NULL;
    pthread_mutex_init(&r->qlock, NULL);
    if (parse(r, calls, keys, deps, wanted) || build(r))
        goto done;
    r->job.fn = run_fn;
    r->job.cancel = run_cancel;
    if (pc_job_run(&r->job, 0))
        goto done;                       /* interrupted: cancelled and waited for */
    if (r->et) {
        PyErr_Restore(r->et, r->ev, r->tb);
        r->et = r->ev = r->tb = NULL;
        goto done;
    }
    if (r->job.status) {
        pc_raise(r->job.status, r->job.err);
        goto done;
    }
    out = PyList_New(r->n);
    for (Py_ssize_t i = 0; out && i < r->n; i++) {
        PyObject *v = r->results[i] ? r->results[i] : Py_None;
        Py_INCREF(v);
        PyList_SetItem(out, i, v);
    }
done:
    run_free(r);
    return out;
}

PyMethodDef pc_dask_methods[] = {
    {"run_graph", run_graph, METH_VARARGS,
     "run_graph(calls, keys, deps, wanted) -> results: Python callables as cask tasks"},
    {NULL, NULL, 0, NULL},
};
