/* state.c: the module state of _cask: the one runtime of the process (started on first
 * use, configured by cask.config or the CASK_* environment), its array context, errors
 * as Python exceptions, and blocking calls run so that Ctrl-C works (pc_job). */
#include "pc.h"

#include <errno.h>
#include <string.h>
#include <time.h>

pc_state pc_st;

PyObject *pc_raise(cask_status st, const char *msg)
{
    char buf[1024];
    if (!msg || !*msg) {
        buf[0] = 0;
        if (pc_st.rt)
            cask_runtime_error(pc_st.rt, buf, sizeof buf);
        msg = buf[0] ? buf : cask_status_string(st);
    }
    PyObject *type = pc_st.error;
    switch (st) {
    case CASK_ERR_INVALID:
    case CASK_ERR_FORMAT: type = PyExc_ValueError; break;
    case CASK_ERR_NOMEM: type = PyExc_MemoryError; break;
    case CASK_ERR_IO: type = PyExc_OSError; break;
    case CASK_ERR_UNSUPPORTED: type = PyExc_NotImplementedError; break;
    default: break;
    }
    if (type == pc_st.error) {   /* CaskError(message, status) */
        PyObject *args = Py_BuildValue("(si)", msg, (int)st);
        if (args) {
            PyErr_SetObject(type, args);
            Py_DECREF(args);
        }
    } else {
        PyErr_SetString(type, msg);
    }
    return NULL;
}

PyObject *pc_raise_array(cask_status st)
{
    return pc_raise(st, pc_st.ctx ? cask_array_ctx_error(pc_st.ctx) : NULL);
}

/* Waits while another Python thread's job runs on the array context (its owner has
 * released the GIL). -1 with an exception if interrupted. */
static int wait_inflight(void)
{
    while (pc_st.inflight) {
        Py_BEGIN_ALLOW_THREADS
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0)
            return -1;
    }
    return 0;
}

int pc_ready(void)
{
    if (wait_inflight() || pc_wait_busy())
        return -1;
    if (pc_st.ctx)
        return 0;
    cask_runtime *rt = NULL;
    cask_array_ctx *ctx = NULL;
    cask_status st;
    Py_BEGIN_ALLOW_THREADS
    st = cask_init(pc_st.cfg.field_mask ? &pc_st.cfg : NULL, &rt);
    if (!st)
        st = cask_array_ctx_create(rt, &ctx);
    Py_END_ALLOW_THREADS
    if (st) {
        char buf[1024] = "";
        if (rt)
            cask_runtime_error(rt, buf, sizeof buf);
        cask_shutdown(rt);
        pc_raise(st, buf[0] ? buf : "cask could not start (CASK_* environment or cask.config)");
        return -1;
    }
    pc_st.rt = rt;
    pc_st.ctx = ctx;
    pc_st.knn_ready = 0;
    pc_st.generation++;
    return 0;
}

int pc_shutdown(void)
{
    if (wait_inflight() || pc_wait_busy())
        return -1;
    if (!pc_st.rt)
        return 0;
    cask_array_ctx *ctx = pc_st.ctx;
    cask_runtime *rt = pc_st.rt;
    pc_release_dropped();
    pc_hostbuf_drop();          /* while the runtime that pinned them runs */
    pc_st.ctx = NULL;
    pc_st.rt = NULL;
    pc_st.generation++;
    Py_BEGIN_ALLOW_THREADS
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    Py_END_ALLOW_THREADS
    return 0;
}

static void *job_main(void *p)
{
    pc_job *job = p;
    cask_status st = job->fn(job);
    pthread_mutex_lock(&job->lock);
    job->status = st;
    job->done = 1;
    pthread_cond_broadcast(&job->cond);
    pthread_mutex_unlock(&job->lock);
    return NULL;
}

/* Waits up to ms for the job; 1 if it is done. Called without the GIL. */
static int job_wait_slice(pc_job *job, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&job->lock);
    while (!job->done)
        if (pthread_cond_timedwait(&job->cond, &job->lock, &ts) == ETIMEDOUT)
            break;
    int done = job->done;
    pthread_mutex_unlock(&job->lock);
    return done;
}

static int job_wait(pc_job *job, int detach_ok);

static void job_free(pc_job *job)
{
    pthread_join(job->thread, NULL);
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->cond);
    if (job->cleanup)
        job->cleanup(job);
}

int pc_job_run(pc_job *job, int detach_ok)
{
    job->done = 0;
    job->status = CASK_OK;
    job->err[0] = 0;
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->cond, NULL);
    if (pthread_create(&job->thread, NULL, job_main, job)) {
        pthread_mutex_destroy(&job->lock);
        pthread_cond_destroy(&job->cond);
        PyErr_SetString(PyExc_RuntimeError, "cask: cannot start a thread");
        return -1;
    }
    if (job->uses_ctx)
        pc_st.inflight = job;
    int rc = job_wait(job, detach_ok);
    if (job->uses_ctx) {
        pc_st.inflight = NULL;
        if (!pc_st.busy)
            pc_release_dropped();
    }
    return rc;
}

static int job_wait(pc_job *job, int detach_ok)
{
    for (;;) {
        int done;
        Py_BEGIN_ALLOW_THREADS
        done = job_wait_slice(job, 50);
        Py_END_ALLOW_THREADS
        if (done)
            break;
        if (PyErr_CheckSignals() < 0) {
            if (job->cancel) {
                job->cancel(job);
                Py_BEGIN_ALLOW_THREADS
                while (!job_wait_slice(job, 1000))
                    ;
                Py_END_ALLOW_THREADS
                pthread_join(job->thread, NULL);
                pthread_mutex_destroy(&job->lock);
                pthread_cond_destroy(&job->cond);
                return -1;
            }
            if (detach_ok) {
                pc_st.busy = job;    /* finishes in the background; freed by pc_wait_busy */
                return -1;
            }
            /* cannot leave it: wait, then report the interruption */
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            Py_BEGIN_ALLOW_THREADS
            while (!job_wait_slice(job, 1000))
                ;
            Py_END_ALLOW_THREADS
            PyErr_Restore(et, ev, tb);
            pthread_join(job->thread, NULL);
            pthread_mutex_destroy(&job->lock);
            pthread_cond_destroy(&job->cond);
            return -1;
        }
    }
    pthread_join(job->thread, NULL);
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->cond);
    return 0;
}

int pc_wait_busy(void)
{
    pc_job *job = pc_st.busy;
    if (!job)
        return 0;
    for (;;) {
        int done;
        Py_BEGIN_ALLOW_THREADS
        done = job_wait_slice(job, 50);
        Py_END_ALLOW_THREADS
        if (done)
            break;
        if (PyErr_CheckSignals() < 0)
            return -1;
    }
    pc_st.busy = NULL;
    job_free(job);
    pc_release_dropped();
    return 0;
}

static const char *const dtype_names[] = {"float32", "float64", "int32", "int64", "uint32"};

int pc_dtype_from_name(PyObject *name)
{
    const char *s = PyUnicode_AsUTF8AndSize(name, NULL);
    if (!s)
        return -1;
    for (int i = 0; i < CASK_DTYPE_COUNT_; i++)
        if (!strcmp(s, dtype_names[i]))
            return i;
    PyErr_Format(PyExc_TypeError,
                 "cask: dtype %s is not supported (float32, float64, int32, int64, uint32)", s);
    return -1;
}

int pc_int64s(PyObject *seq, int64_t *out, int max, const char *what)
{
    PyObject *fast = PySequence_Tuple(seq);
    if (!fast)
        return -1;
    Py_ssize_t n = PyTuple_Size(fast);
    if (n > max) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "cask: %s has %zd entries, at most %d", what, n, max);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GetItem(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(fast);
    return (int)n;
}

PyObject *pc_tuple64(const int64_t *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SetItem(t, i, x);
    }
    return t;
}
