/* tests/test_array_device_gpu.c: arrays in GPU memory in and out on real GPUs (suite
 * gpu; SKIP, exit 77, without one or in a build without CUDA): cudaMalloc'd arrays
 * wrapped without a copy (cask_array_from_device), results written device to device
 * (cask_array_compute_to_device), and the transfer counters at zero host bytes. The
 * same on simulated GPUs: test_array_device.c (suite unit). */
#include <stdio.h>
#if CASK_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_main.h"

static cask_runtime *rt;
static cask_array_ctx *ctx;

static void up(void)
{
    rt = gpu_runtime_ncpu(2);
    cr_assert(rt);
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU), CASK_OK);
}

static void down(void)
{
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
}

static uint64_t host_bytes(void)
{
    int n = 0;
    cask_runtime_nworkers(rt, &n);
    cask_worker_stats s[256];
    cr_assert(n <= 256);
    cr_assert_eq(cask_runtime_stats(rt, s, n), CASK_OK);
    uint64_t b = 0;
    for (int i = 0; i < n; i++) b += s[i].bytes_h2d + s[i].bytes_d2h;
    return b;
}

static void chain(const int64_t *shape, const int64_t *chunks)
{
    size_t n = (size_t)(shape[0] * shape[1]), bytes = n * sizeof(float);
    float *h = malloc(bytes), *r = malloc(bytes);
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000);
    void *dx, *dy;
    cr_assert_eq(cudaMalloc(&dx, bytes), cudaSuccess);
    cr_assert_eq(cudaMalloc(&dy, bytes), cudaSuccess);
    cr_assert_eq(cudaMemcpy(dx, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cudaMemset(dy, 0, bytes), cudaSuccess);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cask_array *a, *b, *c;
    cr_assert_eq(cask_array_from_device(ctx, dx, 0, CASK_FLOAT32, 2, shape, chunks, &a), CASK_OK,
                 "%s", cask_array_ctx_error(ctx));
    cr_assert_eq(cask_array_binary_scalar(CASK_MUL, a, 2.0, 0, &b), CASK_OK);
    cr_assert_eq(cask_array_binary_scalar(CASK_ADD, b, 1.0, 0, &c), CASK_OK);
    cr_assert_eq(cask_array_compute_to_device(c, dy, bytes, 0), CASK_OK, "%s",
                 cask_array_ctx_error(ctx));
    cr_assert_eq(host_bytes(), 0, "no byte through the host");
    cr_assert_eq(cudaMemcpy(r, dy, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < n; i++) cr_assert_eq(r[i], h[i] * 2.0f + 1.0f, "element %zu", i);
    cask_array_release(a);
    cask_array_release(b);
    cask_array_release(c);
    cudaFree(dx);
    cudaFree(dy);
    free(h);
    free(r);
}

Test(gpu, device_array_chain_in_place_and_out_device_to_device, .init = up, .fini = down)
{
    int64_t shape[2] = {4096, 256}, chunks[2] = {512, 256};
    chain(shape, chunks);
}

Test(gpu, device_array_inner_chunks_gathered_on_the_gpu, .init = up, .fini = down)
{
    int64_t shape[2] = {1000, 300}, chunks[2] = {256, 128};
    chain(shape, chunks);
}

Test(gpu, device_array_on_a_missing_gpu_is_an_error, .init = up, .fini = down)
{
    int64_t shape[1] = {16};
    void *dx;
    cr_assert_eq(cudaMalloc(&dx, 64), cudaSuccess);
    cask_array *a;
    cr_assert_eq(cask_array_from_device(ctx, dx, 999, CASK_FLOAT32, 1, shape, NULL, &a),
                 CASK_ERR_INVALID);
    cudaFree(dx);
}

CASK_GPU_TEST_MAIN("test_array_device_gpu")
#else
int main(void)
{
    printf("SKIP: a build without CUDA: test_array_device_gpu needs it\n");
    return 77;
}
#endif
