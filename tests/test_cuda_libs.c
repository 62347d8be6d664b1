/* tests/test_cuda_libs.c: cuBLAS and cuSOLVER are opened by their first use
 * (kernels/cuda_libs.h), not at start: a process that has libcask loaded and a runtime
 * made has neither mapped (linking cuBLAS cost every process 80-90 ms and 215 MiB, its
 * cuBLASLt's constructors); the first load finds every entry point. No GPU needed: the
 * libraries open without one. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cask/cask.h"
#include "kernels/cuda_libs.h"

static int mapped(const char *lib)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, lib) != NULL;
    if (f) fclose(f);
    return found;
}

static void need_maps(void)
{
    if (access("/proc/self/maps", R_OK) != 0) cr_skip_test("no /proc/self/maps to look in");
}

Test(unit, cuda_libs_not_loaded_at_start)
{
    need_maps();
    cask_runtime *rt = NULL;
    cask_config cfg = {0};
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert(!mapped("libcublas"), "cuBLAS was loaded with libcask, before any product");
    cr_assert(!mapped("libcusolver"), "cuSOLVER was loaded before any factorization");
    cask_shutdown(rt);
}

Test(unit, cuda_libs_opened_by_the_first_use)
{
    need_maps();
#ifdef CASK_HAVE_CUBLAS
    const char *why = "(none given)";
    const cuda_blas_fns *b = cuda_blas_load(&why);
    cr_assert(b, "cuBLAS did not open: %s", why);
    void *const *slot = (void *const *)b;
    for (size_t i = 0; i < sizeof *b / sizeof(void *); i++)
        cr_assert(slot[i], "cuBLAS entry point %zu missing", i);
    cr_assert(mapped("libcublas"), "cuBLAS reported open but is not mapped");
    cr_assert_eq(cuda_blas_load(NULL), b, "a second load gave another table");
#ifdef CASK_HAVE_CUSOLVER
    const cuda_sol_fns *s = cuda_sol_load(&why);
    cr_assert(s, "cuSOLVER did not open: %s", why);
    slot = (void *const *)s;
    for (size_t i = 0; i < sizeof *s / sizeof(void *); i++)
        cr_assert(slot[i], "cuSOLVER entry point %zu missing", i);
    cr_assert(mapped("libcusolver"), "cuSOLVER reported open but is not mapped");
#endif
#else
    cr_skip_test("built without cuBLAS (no CUDA toolkit): nothing to open");
#endif
}
