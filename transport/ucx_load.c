/* transport/ucx_load.c: libcask's side of the UCX transport (ucx_module.h): the
 * xport_ucx_* functions of ucx.h, which load libcask-ucx.so (and with it UCX) the first
 * time a transport is made or described, then call the module's.
 *
 * Before loading it, the UCX environment gets cask's defaults, each only where the
 * user set nothing (UCX reads its memory-hook settings once, when its libraries load):
 *   every process (unless CASK_UCX_MEM_EVENTS=1, or the user set UCX_MEM_EVENTS or
 *   asked for UCX_RCACHE_ENABLE, or verbs could be used: below)
 *     UCX_MEM_EVENTS=no     UCX's memory hooks stay out of libc and CUDA. With them UCX
 *                           1.22 patches mmap, munmap, brk... in place, each patch
 *                           followed by a 50 ms grace period, and with its CUDA module
 *                           16 CUDA driver functions the same way: ucp_init took
 *                           1.17 s a rank on the H200 host, 21 ms without (issue 53)
 *     UCX_RCACHE_ENABLE=n   ...and so no registration cache in ucp: every rendezvous
 *                           registers its buffer for that transfer and deregisters it
 *                           after. The hooks existed only to tell that cache a buffer
 *                           was freed; UCX >= 1.13 cannot build the cache without them
 *                           (ucs_rcache_create fails, "try" falls back to none, "y"
 *                           fails ucp_init), so this only says so out loud.
 *   Why cask needs nothing from the hooks, per route (the test: test_ucx_reuse.c):
 *     host memory  TCP copies from the buffer as it is; CMA reads it by the sender's pid
 *                  and address, whatever pages are there now; cask's segments and rings
 *                  are cask's own memory. No transport holds a registration of it.
 *     GPU memory   cuda_ipc: the sender's registration (cuIpcGetMemHandle and the
 *                  allocation's CU_POINTER_ATTRIBUTE_BUFFER_ID) is made per transfer;
 *                  the receiver's cache of opened IPC handles compares that buffer id
 *                  with its entry's, so a freed and reallocated buffer at the same
 *                  address is opened anew (uct cuda_ipc_cache.c), with or without
 *                  events. cuda_copy registers nothing it keeps. NCCL is not UCX.
 *     memory types cask names the memory type of every send and receive, so UCX's
 *                  memory-type cache (also fed by the hooks) is not consulted.
 *   Where the host has RDMA devices (/sys/class/infiniband) and this UCX has verbs
 *   modules (libuct_ib* where it loads its modules: Debian's and cluster builds; the
 *   wheel has none), UCX's verbs transports register host memory with the adapter, and
 *   without the cache every rendezvous would pin its buffer anew (correct, but
 *   ibv_reg_mr of a MiB costs about what sending it does): there a process with GPUs
 *   keeps UCX's defaults unless CASK_UCX_MEM_EVENTS=0.
 *   a process that moves no CUDA memory (xport_ucx_config.no_cuda: no GPU, or --cpu-only)
 *     UCX_MODULES=^cuda*    UCX's CUDA modules are not loaded (they would initialise the
 *                           driver where a GPU is visible); memory events off as above
 * CASK_UCX_MEM_EVENTS=1 gives a process with GPUs UCX's own defaults back (hooks and
 * registration cache: the behaviour before issue 53, for comparison), =0 turns them off
 * on any host; unset, the verbs test above decides.
 * The first transport of the process decides; later ones get the same UCX.
 *
 * The module's handle and table are the one process-wide state here: written once,
 * under pthread_once, then only read, as the dynamic linker's own tables are. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* 1 if folder has an entry whose name starts with prefix ("": any but . and ..). */
static int has_entry(const char *folder, const char *prefix)
{
    DIR *d = opendir(folder);
    if (!d)
        return 0;
    int any = 0;
    struct dirent *e;
    while (!any && (e = readdir(d)))
        any = e->d_name[0] != '.' && !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return any;
}

#ifndef CASK_UCX_MODULE_DIR
#define CASK_UCX_MODULE_DIR ""
#endif

/* 1 if UCX could register memory with an RDMA adapter here: the host has one (an
 * InfiniBand or RoCE device the kernel knows) and UCX has its verbs modules where it
 * loads modules from (UCX_MODULE_DIR, else the folder of the UCX cask was built with;
 * unknown: assumed to have them). */
static int verbs_possible(void)
{
    if (!has_entry("/sys/class/infiniband", ""))
        return 0;
    const char *dir = getenv("UCX_MODULE_DIR");
    if (!dir || !*dir)
        dir = CASK_UCX_MODULE_DIR;
    return !*dir || has_entry(dir, "libuct_ib");
}

/* Whether the user asked for UCX's registration cache (UCX_RCACHE_ENABLE other than
 * n/no/off/0): it needs the memory events, so they stay on. */
static int rcache_asked(void)
{
    const char *v = getenv("UCX_RCACHE_ENABLE");
    if (!v || !*v)
        return 0;
    return strcasecmp(v, "n") && strcasecmp(v, "no") && strcasecmp(v, "off") &&
           strcmp(v, "0");
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
    int no_cuda = atomic_load(&ucx_mod.no_cuda);
    const char *want = getenv("CASK_UCX_MEM_EVENTS");
    int off = no_cuda ? 1 : want && *want ? !strcmp(want, "0") : !verbs_possible();
    if (off) {
        if (!getenv("UCX_MEM_EVENTS") && !rcache_asked()) {
            set_default("UCX_MEM_EVENTS", "no");
            set_default("UCX_RCACHE_ENABLE", "n");
        }
    }
    if (no_cuda)
        set_default("UCX_MODULES", "^cuda*");
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
