// gpu_kernels.cu: small CUDA kernels that the GPU tests and benchmarks run through cask.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void k_add(int32_t *x, int64_t n, int32_t v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] += v;
}

__global__ void k_axpy(const int32_t *a, int32_t *b, int64_t n, int32_t m)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        b[i] = a[i] * m + b[i];
}

__global__ void k_empty(void) {}

// Keeps the SMs it occupies busy for about `cycles` clock cycles: a competing load.
__global__ void k_spin(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

extern "C" int test_gpu_add(int32_t *x, int64_t n, int32_t v, void *stream)
{
    int blocks = (int)((n + 255) / 256);
    if (blocks > 1024) blocks = 1024;
    if (blocks < 1) blocks = 1;
    k_add<<<blocks, 256, 0, (cudaStream_t)stream>>>(x, n, v);
    return (int)cudaGetLastError();
}

extern "C" int test_gpu_axpy(const int32_t *a, int32_t *b, int64_t n, int32_t m, void *stream)
{
    int blocks = (int)((n + 255) / 256);
    if (blocks > 1024) blocks = 1024;
    if (blocks < 1) blocks = 1;
    k_axpy<<<blocks, 256, 0, (cudaStream_t)stream>>>(a, b, n, m);
    return (int)cudaGetLastError();
}

extern "C" int test_gpu_empty(void *stream)
{
    k_empty<<<1, 32, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" int test_gpu_bad_launch(void *stream)
{
    k_empty<<<1, 4096, 0, (cudaStream_t)stream>>>();   // too many threads: launch error
    return (int)cudaGetLastError();
}

extern "C" const char *test_gpu_error_string(int e)
{
    return cudaGetErrorString((cudaError_t)e);
}

extern "C" int test_gpu_spin(long long cycles, int blocks, void *stream)
{
    k_spin<<<blocks, 1024, 0, (cudaStream_t)stream>>>(cycles);
    return (int)cudaGetLastError();
}
