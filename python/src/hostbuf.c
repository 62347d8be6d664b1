/* hostbuf.c: host memory for results handed to NumPy (cask.knn's index and distance),
 * kept and reused between calls. A new np.empty per call puts the first write of each
 * page (a page fault) inside the call, and GPU results go back through a bounce buffer
 * when it is pageable; a block from here was touched before (reused) and, when cask has
 * real GPUs, is pinned (cask_host_alloc), so GPUs write it back at full speed.
 *
 * A block is a _cask.HostBlock, an object with the buffer protocol: NumPy arrays over it
 * (np.frombuffer) keep it alive, without a copy, and when the last of them goes it
 * returns to a short list of free blocks (HB_KEEP blocks, HB_KEEP_BYTES at most; the
 * oldest leave first) for the next call of about the same size. Everything here runs
 * with the GIL held, which guards the list (as in CPython's own free lists). */
#include "pc.h"

#include <stdlib.h>
#include <string.h>

#define HB_KEEP 4
#define HB_KEEP_BYTES ((size_t)4 << 30)

typedef struct hb_mem {
    void *p;
    size_t bytes;
    int pinned;                 /* cask_host_alloc of a runtime with real GPUs */
    uint64_t generation;        /* pc_st.generation of that runtime */
} hb_mem;

typedef struct pc_hostblock {
    PyObject_HEAD
    hb_mem m;
    Py_ssize_t len;             /* what its buffer shows (m.bytes or a little less) */
} pc_hostblock;

static struct {
    hb_mem free[HB_KEEP];       /* oldest first */
    int nfree;
    size_t free_bytes;
    uint64_t hits, misses;
} hb;

static PyObject *hostblock_type;

/* Gives m back to the system. Pinned memory of a runtime that stopped since goes back
 * through a runtime with real GPUs (cudaFreeHost serves the whole process), else it
 * stays allocated: a runtime stopped while its results live is rare, and freeing
 * page-locked memory with free() would corrupt the heap. */
static void mem_free(hb_mem *m)
{
    if (!m->p)
        return;
    if (!m->pinned) {
        free(m->p);
    } else if (pc_st.rt) {
        cask_runtime_info info;
        if (m->generation == pc_st.generation ||
            (!cask_runtime_query(pc_st.rt, &info) && info.ngpus > 0 && !info.simulated_gpus))
            cask_host_free(pc_st.rt, m->p);
    }
    m->p = NULL;
}

/* Whether m is of the running runtime (so of the kind it would allocate now). */
static int mem_current(const hb_mem *m)
{
    return pc_st.rt && m->generation == pc_st.generation;
}

static void list_remove(int i)
{
    hb.free_bytes -= hb.free[i].bytes;
    memmove(&hb.free[i], &hb.free[i + 1], (size_t)(hb.nfree - i - 1) * sizeof hb.free[0]);
    hb.nfree--;
}

/* Frees every kept block (the runtime stops, or cask.knn's cache is cleared). */
void pc_hostbuf_drop(void)
{
    while (hb.nfree > 0) {
        hb_mem m = hb.free[0];
        list_remove(0);
        mem_free(&m);
    }
}

static void hostblock_dealloc(PyObject *self)
{
    pc_hostblock *b = (pc_hostblock *)self;
    if (b->m.p && mem_current(&b->m) && b->m.bytes <= HB_KEEP_BYTES) {
        while (hb.nfree > 0 && (hb.nfree == HB_KEEP ||
                                hb.free_bytes + b->m.bytes > HB_KEEP_BYTES)) {
            hb_mem old = hb.free[0];
            list_remove(0);
            mem_free(&old);
        }
        hb.free[hb.nfree++] = b->m;
        hb.free_bytes += b->m.bytes;
        b->m.p = NULL;
    }
    mem_free(&b->m);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

static int hostblock_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pc_hostblock *b = (pc_hostblock *)self;
    return PyBuffer_FillInfo(view, self, b->m.p, b->len, 0, flags);
}

static PyType_Slot hostblock_slots[] = {
    {Py_tp_dealloc, hostblock_dealloc},
    {Py_bf_getbuffer, hostblock_getbuffer},
    {Py_tp_doc, "Host memory for results (pinned with real GPUs), reused once dropped."},
    {0, NULL},
};

static PyType_Spec hostblock_spec = {
    "cask._cask.HostBlock", sizeof(pc_hostblock), 0, Py_TPFLAGS_DEFAULT, hostblock_slots,
};

/* A kept block of at least bytes and at most an eighth more, newest first; -1 if none. */
static int list_find(size_t bytes)
{
    for (int i = hb.nfree - 1; i >= 0; i--)
        if (hb.free[i].bytes >= bytes && hb.free[i].bytes - bytes <= bytes / 8 &&
            mem_current(&hb.free[i]))
            return i;
    return -1;
}

/* host_block(bytes) -> HostBlock: writable host memory of at least bytes (its buffer is
 * exactly bytes long), reused from a dropped block when one fits. */
static PyObject *host_block(PyObject *m, PyObject *args)
{
    Py_ssize_t want;
    if (!PyArg_ParseTuple(args, "n", &want))
        return NULL;
    if (want < 1) {
        PyErr_SetString(PyExc_ValueError, "cask: host_block needs at least 1 byte");
        return NULL;
    }
    if (pc_ready())
        return NULL;
    pc_hostblock *b = PyObject_New(pc_hostblock, (PyTypeObject *)hostblock_type);
    if (!b)
        return NULL;
    memset(&b->m, 0, sizeof b->m);
    b->len = want;
    size_t bytes = (size_t)want;
    int i = list_find(bytes);
    if (i >= 0) {
        b->m = hb.free[i];
        list_remove(i);
        hb.hits++;
    } else {
        cask_runtime_info info;
        cask_status st = cask_runtime_query(pc_st.rt, &info);
        int pinned = !st && info.ngpus > 0 && !info.simulated_gpus;
        void *p = NULL;
        Py_BEGIN_ALLOW_THREADS      /* pinning a large block takes a while */
        if (pinned)
            st = cask_host_alloc(pc_st.rt, bytes, &p);
        else if (posix_memalign(&p, 4096, bytes) != 0)
            p = NULL;
        Py_END_ALLOW_THREADS
        if (!p) {
            Py_DECREF(b);
            return st ? pc_raise(st, NULL) : PyErr_NoMemory();
        }
        b->m = (hb_mem){p, bytes, pinned, pc_st.generation};
        hb.misses++;
    }
    return (PyObject *)b;
}

/* host_blocks() -> (kept, kept bytes, hits, misses) */
static PyObject *host_blocks(PyObject *m, PyObject *unused)
{
    return Py_BuildValue("(inKK)", hb.nfree, (Py_ssize_t)hb.free_bytes,
                         (unsigned long long)hb.hits, (unsigned long long)hb.misses);
}

static PyObject *host_blocks_clear(PyObject *m, PyObject *unused)
{
    pc_hostbuf_drop();
    Py_RETURN_NONE;
}

PyMethodDef pc_hostbuf_methods[] = {
    {"host_block", host_block, METH_VARARGS,
     "host_block(bytes) -> HostBlock: host memory for results (pinned with real GPUs), "
     "reused once every view of it is dropped"},
    {"host_blocks", host_blocks, METH_NOARGS,
     "host_blocks() -> (blocks kept, bytes kept, reuses, allocations)"},
    {"host_blocks_clear", host_blocks_clear, METH_NOARGS,
     "host_blocks_clear(): frees the kept blocks"},
    {NULL, NULL, 0, NULL},
};

int pc_hostbuf_type_init(PyObject *module)
{
    hostblock_type = PyType_FromSpec(&hostblock_spec);
    if (!hostblock_type)
        return -1;
    Py_INCREF(hostblock_type);
    if (PyModule_AddObject(module, "HostBlock", hostblock_type) < 0) {
        Py_DECREF(hostblock_type);
        return -1;
    }
    return 0;
}
