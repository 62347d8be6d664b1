/* gpu_kernels.h: launchers of bench/common/gpu_kernels.cu (CUDA builds only). */
#ifndef CASK_BENCH_GPU_KERNELS_H
#define CASK_BENCH_GPU_KERNELS_H
#include <stdint.h>
int test_gpu_add(int32_t *x, int64_t n, int32_t v, void *stream);
int test_gpu_axpy(const int32_t *a, int32_t *b, int64_t n, int32_t m, void *stream);
int test_gpu_empty(void *stream);
int test_gpu_bad_launch(void *stream);
/* Traps while it runs (a device fault: the context is lost) if *flag (device memory) != 0. */
int test_gpu_trap_if(const int32_t *flag, void *stream);
const char *test_gpu_error_string(int e);
/* Occupies `blocks` blocks of 1024 threads for about `cycles` cycles each. */
int test_gpu_spin(long long cycles, int blocks, void *stream);
/* n empty kernels captured into a CUDA graph (a chain, or independent under one root)
 * and instantiated into *exec (a cudaGraphExec_t); launched; destroyed. cudaError_t. */
int test_gpu_graph_make(int n, int independent, void *stream, void **exec);
int test_gpu_graph_launch(void *exec, void *stream);
int test_gpu_graph_destroy(void *exec);
#endif
