/* transport/ucx_load.c: libcask's side of the UCX transport (ucx_module.h): the
 * xport_ucx_* functions of ucx.h, which load libcask-ucx.so (and with it UCX) the first
 * time a transport is made or described, then call the module's.
 *
 * Before loading it, the UCX environment gets cask's defaults, each only where the
 * user set nothing (UCX reads its memory-hook settings once, when its libraries load):
 *   a process that moves no CUDA memory (xport_ucx_config.no_cuda: no GPU, or --cpu-only)
 *     UCX_MEM_EVENTS=no   UCX's memory hooks stay out of libc and CUDA. Loading UCX
 *                         1.22 otherwise patches mmap, munmap, brk... in place, each
 *                         patch followed by a 50 ms grace period (~0.4 s a process), and
 *                         its CUDA hooks as many again; cask gives UCX the memory type
 *                         of every buffer and uses no transport that registers memory
 *                         (TCP, CMA), so nothing needs the hooks
 *     UCX_MODULES=^cuda*  UCX's CUDA modules are not loaded (they would initialise the
 *                         driver where a GPU is visible)
 *   a process with GPUs: nothing (UCX's CUDA transports keep their registration cache)
 * The first transport of the process decides; later ones get the same UCX.
 *
 * The module's handle and table are the one process-wide state here: written once,
 * under pthread_once, then only read, as the dynamic linker's own tables are. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/phases.h"
#include "transport/ucx_module.h"

static struct {
    pthread_once_t once;
    const xport_ucx_module *_Atomic m;
    _Atomic int no_cuda;      /* what the first create asked for (read in load_module) */
    char err[600];
} ucx_mod = { PTHREAD_ONCE_INIT, NULL, 0, "" };

static void set_default(const char *name, const char *value)
{
    if (!getenv(name))
        setenv(name, value, 0);
}

/* The folder of libcask.so, where the module lies (in the build tree and installed). */
static void module_path(char *buf, size_t len)
{
    Dl_info info;
    const char *lib = dladdr((void *)&xport_ucx_create, &info) && info.dli_fname ?
                      info.dli_fname : "";
    const char *slash = strrchr(lib, '/');
    if (slash)
        snprintf(buf, len, "%.*s/%s", (int)(slash - lib), lib, XPORT_UCX_MODULE_FILE);
    else
        snprintf(buf, len, "%s", XPORT_UCX_MODULE_FILE);
}

static void load_module(void)
{
    if (atomic_load(&ucx_mod.no_cuda)) {
        set_default("UCX_MEM_EVENTS", "no");
        set_default("UCX_MODULES", "^cuda*");
    }
    char path[4096];
    module_path(path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(ucx_mod.err, sizeof ucx_mod.err, "cannot load the UCX transport: %.500s",
                 e ? e : path);
        return;
    }
    const xport_ucx_module *m = dlsym(h, XPORT_UCX_MODULE_SYMBOL);
    if (!m || m->version != XPORT_UCX_MODULE_VERSION) {
        snprintf(ucx_mod.err, sizeof ucx_mod.err, "cannot load the UCX transport: %.400s is "
                 "%s", path, m ? "of another cask build" : "not cask's UCX module");
        dlclose(h);
        return;
    }
    atomic_store(&ucx_mod.m, m);   /* never unloaded: UCX stays for the process */
}

static const xport_ucx_module *module(int no_cuda)
{
    if (!atomic_load(&ucx_mod.m)) {
        atomic_store(&ucx_mod.no_cuda, no_cuda);   /* two first creates: either decides */
        pthread_once(&ucx_mod.once, load_module);
    }
    return atomic_load(&ucx_mod.m);
}

/* A transport exists only once the module was loaded: the table is there. */
#define M (atomic_load_explicit(&ucx_mod.m, memory_order_acquire))

cask_status xport_ucx_create(xport_boot *boot, const xport_ucx_config *cfg,
                             xport_ucx **out, char *err, size_t errlen)
{
    int no_cuda = cfg && (cfg->field_mask & XPORT_UCX_NO_CUDA) && cfg->no_cuda;
    uint64_t t = phases_now_ns();
    const xport_ucx_module *m = module(no_cuda);
    if (cfg && (cfg->field_mask & XPORT_UCX_PHASES) && cfg->phase_ns)
        cfg->phase_ns[PHASE_UCX_CONTEXT] += phases_now_ns() - t;   /* UCX loaded */
    if (!m) {
        if (out)
            *out = NULL;
        if (err && errlen)
            snprintf(err, errlen, "%s", ucx_mod.err);
        return CASK_ERR_UNSUPPORTED;
    }
    return m->create(boot, cfg, out, err, errlen);
}

void xport_ucx_describe(char *buf, size_t len)
{
    const xport_ucx_module *m = module(0);
    if (m)
        m->describe(buf, len);
    else if (buf && len)
        snprintf(buf, len, "UCX not loaded (%s)", ucx_mod.err);
}

cask_status xport_ucx_set_handler(xport_ucx *x, unsigned id, xport_ucx_am_fn fn, void *arg)
{
    return x ? M->set_handler(x, id, fn, arg) : CASK_ERR_INVALID;
}

cask_status xport_ucx_connect(xport_ucx *x)
{
    return x ? M->connect(x) : CASK_ERR_INVALID;
}

int xport_ucx_rank(const xport_ucx *x) { return M->rank(x); }
int xport_ucx_size(const xport_ucx *x) { return M->size(x); }

cask_status xport_ucx_am_send(xport_ucx *x, int peer, unsigned id, const void *header,
                              size_t header_len, const void *data, size_t len,
                              xport_ucx_done_fn done, void *arg)
{
    return x ? M->am_send(x, peer, id, header, header_len, data, len, done, arg)
             : CASK_ERR_INVALID;
}

int xport_ucx_cuda_memory(const xport_ucx *x)
{
    return x ? M->cuda_memory(x) : 0;
}

cask_status xport_ucx_am_send_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                                  size_t header_len, const void *data, size_t len,
                                  xport_ucx_mem mem, xport_ucx_done_fn done, void *arg)
{
    return x ? M->am_send_mem(x, peer, id, header, header_len, data, len, mem, done, arg)
             : CASK_ERR_INVALID;
}

cask_status xport_ucx_am_post_mem(xport_ucx *x, int peer, unsigned id, const void *header,
                                  size_t header_len, const void *data, size_t len,
                                  xport_ucx_mem mem, xport_ucx_done_fn done, void *arg)
{
    return x ? M->am_post_mem(x, peer, id, header, header_len, data, len, mem, done, arg)
             : CASK_ERR_INVALID;
}

/* A message exists only while a transport does. */
cask_status xport_ucx_recv_into_mem(xport_ucx_msg *msg, void *buf, xport_ucx_mem mem,
                                    xport_ucx_done_fn done, void *arg)
{
    return M ? M->recv_into_mem(msg, buf, mem, done, arg) : CASK_ERR_INVALID;
}

cask_status xport_ucx_recv_into(xport_ucx_msg *msg, void *buf, xport_ucx_done_fn done,
                                void *arg)
{
    return M ? M->recv_into(msg, buf, done, arg) : CASK_ERR_INVALID;
}

cask_status xport_ucx_peer_status(const xport_ucx *x, int peer)
{
    return x ? M->peer_status(x, peer) : CASK_ERR_INVALID;
}

cask_status xport_ucx_fence(xport_ucx *x, int peer)
{
    return x ? M->fence(x, peer) : CASK_ERR_INVALID;
}

cask_status xport_ucx_peer_stats(const xport_ucx *x, int peer, xport_ucx_stats *out)
{
    return x ? M->peer_stats(x, peer, out) : CASK_ERR_INVALID;
}

void xport_ucx_error(const xport_ucx *x, char *buf, size_t len)
{
    if (x)
        M->error(x, buf, len);
    else if (buf && len)
        buf[0] = 0;
}

cask_status xport_ucx_destroy(xport_ucx *x, char *err, size_t errlen)
{
    if (!x) {
        if (err && errlen)
            err[0] = 0;
        return CASK_OK;
    }
    return M->destroy(x, err, errlen);
}
