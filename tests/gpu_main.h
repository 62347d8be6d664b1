/* tests/gpu_main.h: what the gpu-suite test programs share. Without a real GPU (none, or
 * only simulated ones) a program exits 77, Meson's SKIP, and says why: the suite is
 * skipped visibly instead of passing with every test skipped inside. */
#ifndef CASK_TESTS_GPU_MAIN_H
#define CASK_TESTS_GPU_MAIN_H

#include <stdio.h>
#include <criterion/criterion.h>
#include "cask/cask.h"

/* A runtime with ncpu CPU workers and every real GPU (unbound), or NULL when there is
 * no real GPU. */
static inline cask_runtime *gpu_runtime_ncpu(int ncpu)
{
    cask_config cfg = {0};
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND;
    cfg.ncpu = ncpu;
    cfg.sim_gpus = 0;
    cfg.bind = 0;
    cask_runtime *rt = NULL;
    if (cask_init(&cfg, &rt) != CASK_OK)
        return NULL;
    cask_runtime_info info;
    if (cask_runtime_query(rt, &info) != CASK_OK || info.ngpus == 0 || info.simulated_gpus) {
        cask_shutdown(rt);
        return NULL;
    }
    return rt;
}

/* Real GPUs present (0 without CUDA or with simulated GPUs only). */
static inline int gpus_present(void)
{
    cask_runtime *rt = gpu_runtime_ncpu(1);
    if (!rt)
        return 0;
    cask_runtime_info info;
    cask_runtime_query(rt, &info);
    cask_shutdown(rt);
    return info.ngpus;
}

/* The program's main: SKIP (77) without a real GPU, else Criterion's run. */
#define CASK_GPU_TEST_MAIN(what)                                                          \
    int main(int argc, char *argv[])                                                      \
    {                                                                                     \
        int n = gpus_present();                                                           \
        if (n == 0) {                                                                     \
            printf("SKIP: no real GPU present: %s needs one\n", what);                    \
            return 77;                                                                    \
        }                                                                                 \
        printf("%s: %d GPU%s present\n", what, n, n > 1 ? "s" : "");                      \
        struct criterion_test_set *tests = criterion_initialize();                        \
        int result = 0;                                                                   \
        if (criterion_handle_args(argc, argv, true))                                      \
            result = !criterion_run_all_tests(tests);                                     \
        criterion_finalize(tests);                                                        \
        return result;                                                                    \
    }

#endif
