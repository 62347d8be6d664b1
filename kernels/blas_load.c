/* kernels/blas_load.c: OpenBLAS opened when the first product needs it (blas_load.h). */
#include "kernels/blas_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static blas_fns fns;
static const blas_fns *loaded_fns;
static atomic_int tried;
static char note[320];

#if defined(__x86_64__) && defined(__GNUC__)
/* OpenBLAS built for every x86 core (DYNAMIC_ARCH, as Debian's) picks its kernels when it
 * is loaded, from the CPU's model number: Debian 12's 0.3.21 does not know recent Xeons
 * and falls back to its generic SSE3 kernels ("Prescott"), which ran a 2048^2 sgemm at
 * 196 GFLOP/s on 16 AVX-512 cores against 852 with OPENBLAS_CORETYPE=SkylakeX. Newer
 * OpenBLAS releases choose by the CPU's features in that case; this does the same for the
 * older ones: when the user has not named a core and OpenBLAS chose "Prescott" on a CPU
 * with AVX-512 (F, CD, BW, DQ, VL) or AVX2+FMA, it asks OpenBLAS to choose again with
 * OPENBLAS_CORETYPE set to SkylakeX or Haswell (its own exported gotoblas_dynamic_quit /
 * gotoblas_dynamic_init, the path its start-up takes; a BLAS without them is left
 * alone). Runs once, right after the library is opened, before any product. */
static void core_choose(void *h)
{
    const char *core = fns.get_corename ? fns.get_corename() : NULL;
    if (!core || strcmp(core, "Prescott") != 0 || getenv("OPENBLAS_CORETYPE")) return;
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        /* (also where the CPU has BF16: on 16 Sapphire Rapids-class cores, one cblas_sgemm
           of 2048^2 ran at 1425 GFLOP/s with SkylakeX, 1140 with Cooperlake; 8192^2 at
           1263 and 1255: bench/RESULTS.md 22) */
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    if (!want) return;
    void (*dyn_init)(void) = (void (*)(void))dlsym(h, "gotoblas_dynamic_init");
    void (*dyn_quit)(void) = (void (*)(void))dlsym(h, "gotoblas_dynamic_quit");
    if (!dyn_init || !dyn_quit || getenv("CASK_BLAS_KEEP_CORE")) {
        snprintf(note, sizeof note, "!OpenBLAS runs its generic Prescott kernels on this CPU; "
                 "start the program with OPENBLAS_CORETYPE=%s", want);
        return;
    }
    setenv("OPENBLAS_CORETYPE", want, 1);
    dyn_quit();
    dyn_init();
    unsetenv("OPENBLAS_CORETYPE");
    const char *now = fns.get_corename();
    snprintf(note, sizeof note, "%sOpenBLAS chose its generic Prescott kernels on this CPU; "
             "cask asked it for %s and it runs %s (OPENBLAS_CORETYPE chooses; "
             "CASK_BLAS_KEEP_CORE=1 keeps OpenBLAS's choice)",
             now && !strcmp(now, want) ? "" : "!", want, now ? now : "?");
}
#else
static void core_choose(void *h)
{
    (void)h;
}
#endif

/* Opens the library and resolves fns (loaded_fns on success); note says what happened. */
static void open_library(void)
{
    static const char *const names[] = { "libopenblas.so.0", "libopenblas.so" };
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(note, sizeof note, "!OpenBLAS could not be opened (%s): float matrix "
                 "products on CPU workers use a blocked loop, about 15x slower", dlerror());
        return;
    }
    *(void **)&fns.sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&fns.dgemm = dlsym(h, "cblas_dgemm");
    *(void **)&fns.strsm = dlsym(h, "cblas_strsm");
    *(void **)&fns.dtrsm = dlsym(h, "cblas_dtrsm");
    *(void **)&fns.ssyrk = dlsym(h, "cblas_ssyrk");
    *(void **)&fns.dsyrk = dlsym(h, "cblas_dsyrk");
    *(void **)&fns.spotrf = dlsym(h, "spotrf_");
    *(void **)&fns.dpotrf = dlsym(h, "dpotrf_");
    *(void **)&fns.set_num_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&fns.get_num_threads = dlsym(h, "openblas_get_num_threads");
    *(void **)&fns.get_corename = dlsym(h, "openblas_get_corename");
    if (!fns.sgemm || !fns.dgemm || !fns.set_num_threads || !fns.get_num_threads) {
        snprintf(note, sizeof note, "!%s lacks cblas_sgemm, cblas_dgemm or "
                 "openblas_set_num_threads: float matrix products on CPU workers use a "
                 "blocked loop", names[0]);
        return;   /* (left open: it may be in use by the program itself) */
    }
    core_choose(h);
    loaded_fns = &fns;
}

static void open_blas(void)
{
    open_library();
    atomic_store_explicit(&tried, 1, memory_order_release);   /* note is final */
}

const blas_fns *blas_load(void)
{
    pthread_once(&once, open_blas);
    return loaded_fns;
}

const char *blas_load_note(int *warn)
{
    *warn = 0;
    if (!atomic_load_explicit(&tried, memory_order_acquire))
        return NULL;
    *warn = note[0] == '!';
    return note[0] ? note + *warn : NULL;
}
