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

// Traps (a device fault, which ends the context) if *flag is not 0: a kernel failing
// while it runs, not at its launch.
__global__ void k_trap_if(const int32_t *flag)
{
    if (*flag)
        __trap();
}

extern "C" int test_gpu_trap_if(const int32_t *flag, void *stream)
{
    k_trap_if<<<1, 1, 0, (cudaStream_t)stream>>>(flag);
    return (int)cudaGetLastError();
}

// The raw CUDA-graph ceiling of bench-gpu: n empty kernels captured into one graph and
// instantiated, either a chain (one stream) or independent (each depending on an empty
// root node only, set through cudaStreamUpdateCaptureDependencies as cask records
// independent tasks). Returns a cudaError_t; *exec receives the cudaGraphExec_t.
extern "C" int test_gpu_graph_make(int n, int independent, void *stream, void **exec)
{
    cudaStream_t s = (cudaStream_t)stream;
    cudaGraph_t g = NULL, cg = NULL;
    cudaGraphNode_t root = NULL;
    cudaStreamCaptureStatus cs;
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess)
        return (int)e;
    if (independent) {
#if CUDART_VERSION >= 13000
        e = cudaStreamGetCaptureInfo(s, &cs, NULL, &cg, NULL, NULL, NULL);
#else
        e = cudaStreamGetCaptureInfo(s, &cs, NULL, &cg, NULL, NULL);
#endif
        if (e == cudaSuccess)
            e = cudaGraphAddEmptyNode(&root, cg, NULL, 0);
    }
    for (int i = 0; i < n && e == cudaSuccess; i++) {
        if (independent)
#if CUDART_VERSION >= 13000
            e = cudaStreamUpdateCaptureDependencies(s, &root, NULL, 1, cudaStreamSetCaptureDependencies);
#else
            e = cudaStreamUpdateCaptureDependencies(s, &root, 1, cudaStreamSetCaptureDependencies);
#endif
        if (e == cudaSuccess) {
            k_empty<<<1, 32, 0, s>>>();
            e = cudaGetLastError();
        }
    }
    cudaError_t e2 = cudaStreamEndCapture(s, &g);
    if (e == cudaSuccess)
        e = e2;
    if (e == cudaSuccess)
        e = cudaGraphInstantiate((cudaGraphExec_t *)exec, g, 0);
    if (g)
        cudaGraphDestroy(g);
    return (int)e;
}

extern "C" int test_gpu_graph_launch(void *exec, void *stream)
{
    return (int)cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)stream);
}

extern "C" int test_gpu_graph_destroy(void *exec)
{
    return (int)cudaGraphExecDestroy((cudaGraphExec_t)exec);
}
