/* kernels/cuda_libs.c: see cuda_libs.h. A library is looked for in the toolkit's
 * directory the build found (CASK_CUDA_LIB_DIR), then by the loader's search path. */
#include "kernels/cuda_libs.h"
#ifdef CASK_HAVE_CUBLAS
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Opens the first of names[] that loads and binds each symbol of syms[] to the matching
 * slot of the table; 0 with the reason in err (lib names the library) when none loads or
 * a symbol is missing. */
static int open_table(const char *lib, const char *const *names, size_t nnames,
                      const char *const *syms, void **slots, size_t nsyms, char *err,
                      size_t errlen)
{
    void *h = NULL;
    for (size_t i = 0; !h && i < nnames; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "%s could not be opened: %s", lib, dlerror());
        return 0;
    }
    for (size_t i = 0; i < nsyms; i++)
        if (!(slots[i] = dlsym(h, syms[i]))) {
            snprintf(err, errlen, "%s lacks %s", lib, dlerror());
            return 0;
        }
    return 1;
}

/* The table once its library is open, else NULL with the reason in *why (if not NULL). */
static const void *opened(pthread_once_t *once, void (*open)(void), const void *const *ok,
                          const char *err, const char **why)
{
    pthread_once(once, open);
    if (!*ok && why)
        *why = err;
    return *ok;
}

#ifdef CASK_CUDA_LIB_DIR
#define IN_TOOLKIT(lib) CASK_CUDA_LIB_DIR "/" lib,
#else
#define IN_TOOLKIT(lib)
#endif

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static cuda_blas_fns blas;
static const void *blas_ok;
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
    _Static_assert(COUNT(syms) == sizeof blas / sizeof(void *), "one symbol a slot");
    if (open_table("cuBLAS", names, COUNT(names), syms, (void **)&blas, COUNT(syms),
                   blas_err, sizeof blas_err))
        blas_ok = &blas;
}

const cuda_blas_fns *cuda_blas_load(const char **why)
{
    return (const cuda_blas_fns *)opened(&blas_once, blas_open, &blas_ok, blas_err, why);
}

#ifdef CASK_HAVE_CUSOLVER
static pthread_once_t sol_once = PTHREAD_ONCE_INIT;
static cuda_sol_fns sol;
static const void *sol_ok;
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
    _Static_assert(COUNT(syms) == sizeof sol / sizeof(void *), "one symbol a slot");
    if (open_table("cuSOLVER", names, COUNT(names), syms, (void **)&sol, COUNT(syms),
                   sol_err, sizeof sol_err))
        sol_ok = &sol;
}

const cuda_sol_fns *cuda_sol_load(const char **why)
{
    return (const cuda_sol_fns *)opened(&sol_once, sol_open, &sol_ok, sol_err, why);
}
#endif
#endif
