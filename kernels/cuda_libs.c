/* kernels/cuda_libs.c: see cuda_libs.h. A library is looked for in the toolkit's
 * directory the build found (CASK_CUDA_LIB_DIR), then by the loader's search path. */
#include "kernels/cuda_libs.h"
#ifdef CASK_HAVE_CUBLAS
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Opens the first of names[] that loads; NULL with the loader's message in err. */
static void *open_first(const char *const *names, size_t n, char *err, size_t errlen,
                        const char *lib)
{
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    snprintf(err, errlen, "%s could not be opened: %s", lib, dlerror());
    return NULL;
}

/* Each symbol of syms[] into the matching slot of the table; 0 when one is missing. */
static int bind_all(void *h, const char *const *syms, void **slots, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(slots[i] = dlsym(h, syms[i])))
            return 0;
    return 1;
}

#ifdef CASK_CUDA_LIB_DIR
#define IN_TOOLKIT(lib) CASK_CUDA_LIB_DIR "/" lib,
#else
#define IN_TOOLKIT(lib)
#endif

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static cuda_blas_fns blas;
static const cuda_blas_fns *blas_ok;
static char blas_err[256];

static void blas_open(void)
{
    static const char *const names[] = {
        IN_TOOLKIT("libcublas.so") "libcublas.so.13", "libcublas.so.12", "libcublas.so"
    };
    static const char *const syms[] = {
        "cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasSgemm_v2",
        "cublasDgemm_v2", "cublasStrsm_v2", "cublasDtrsm_v2", "cublasSsyrk_v2",
        "cublasDsyrk_v2"
    };
    _Static_assert(sizeof syms / sizeof syms[0] == sizeof blas / sizeof(void *),
                   "one symbol a slot");
    void *h = open_first(names, sizeof names / sizeof names[0], blas_err, sizeof blas_err,
                         "cuBLAS");
    if (!h)
        return;
    if (!bind_all(h, syms, (void **)&blas, sizeof syms / sizeof syms[0])) {
        snprintf(blas_err, sizeof blas_err, "cuBLAS lacks %s", dlerror());
        return;
    }
    blas_ok = &blas;
}

const cuda_blas_fns *cuda_blas_load(const char **why)
{
    pthread_once(&blas_once, blas_open);
    if (!blas_ok && why)
        *why = blas_err;
    return blas_ok;
}

#ifdef CASK_HAVE_CUSOLVER
static pthread_once_t sol_once = PTHREAD_ONCE_INIT;
static cuda_sol_fns sol;
static const cuda_sol_fns *sol_ok;
static char sol_err[256];

static void sol_open(void)
{
    static const char *const names[] = {
        IN_TOOLKIT("libcusolver.so") "libcusolver.so.12", "libcusolver.so.11",
        "libcusolver.so"
    };
    static const char *const syms[] = {
        "cusolverDnCreate", "cusolverDnDestroy", "cusolverDnSetStream",
        "cusolverDnDpotrf_bufferSize", "cusolverDnSpotrf_bufferSize", "cusolverDnDpotrf",
        "cusolverDnSpotrf"
    };
    _Static_assert(sizeof syms / sizeof syms[0] == sizeof sol / sizeof(void *),
                   "one symbol a slot");
    void *h = open_first(names, sizeof names / sizeof names[0], sol_err, sizeof sol_err,
                         "cuSOLVER");
    if (!h)
        return;
    if (!bind_all(h, syms, (void **)&sol, sizeof syms / sizeof syms[0])) {
        snprintf(sol_err, sizeof sol_err, "cuSOLVER lacks %s", dlerror());
        return;
    }
    sol_ok = &sol;
}

const cuda_sol_fns *cuda_sol_load(const char **why)
{
    pthread_once(&sol_once, sol_open);
    if (!sol_ok && why)
        *why = sol_err;
    return sol_ok;
}
#endif
#endif
