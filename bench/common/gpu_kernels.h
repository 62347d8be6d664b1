/* gpu_kernels.h: launchers of bench/common/gpu_kernels.cu (CUDA builds only). */
#ifndef CASK_BENCH_GPU_KERNELS_H
#define CASK_BENCH_GPU_KERNELS_H
#include <stdint.h>
int test_gpu_add(int32_t *x, int64_t n, int32_t v, void *stream);
int test_gpu_axpy(const int32_t *a, int32_t *b, int64_t n, int32_t m, void *stream);
int test_gpu_empty(void *stream);
int test_gpu_bad_launch(void *stream);
const char *test_gpu_error_string(int e);
/* Occupies `blocks` blocks of 1024 threads for about `cycles` cycles each. */
int test_gpu_spin(long long cycles, int blocks, void *stream);
#endif
