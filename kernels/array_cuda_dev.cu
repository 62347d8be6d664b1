/* kernels/array_cuda_dev.cu: moving array blocks between a chunk and a whole row-major
 * array in the user's GPU memory (cask_array_from_device's chunks that cannot be views,
 * cask_array_compute_to_device's results): "array.gather_dev" and "array.scatter_dev",
 * the GPU counterparts of array.gather / array.scatter (array_kernels.h). Device to
 * device only, on the task's stream: cudaMemcpy2DAsync with cudaMemcpyDefault, so the
 * user's memory may be on another GPU than the task (a peer copy over NVLink). */
#include <cuda_runtime.h>
#include "kernels/array_kernels.h"

/* Copies block g between the chunk buffer and the whole array at `whole`: to_whole 1
 * scatters, 0 gathers. The trailing axes the block spans whole merge into one
 * contiguous run; the axis outside them is the 2-D copy's rows; axes further out are
 * a loop of 2-D copies (only for blocks cut along 3 or more axes). */
static cudaError_t block_copy(const ak_geom *g, int esize, char *chunk, char *whole, int to_whole,
                              cudaStream_t s)
{
    int nd = g->ndim;
    if (nd == 0)
        return cudaMemcpyAsync(to_whole ? whole : chunk, to_whole ? chunk : whole,
                               (size_t)esize, cudaMemcpyDefault, s);
    int64_t gstride[AK_MAX_DIMS];
    gstride[nd - 1] = 1;
    for (int k = nd - 2; k >= 0; k--) gstride[k] = gstride[k + 1] * g->gshape[k + 1];
    int k = nd - 1;
    int64_t run = g->shape[k];
    while (k > 0 && g->shape[k] == g->gshape[k]) {
        k--;
        run *= g->shape[k];
    }
    /* axis k is the outermost one of the run; rows along axis k - 1 */
    int64_t rows = k > 0 ? g->shape[k - 1] : 1;
    size_t width = (size_t)(run * esize);
    size_t wpitch = k > 0 ? (size_t)(gstride[k - 1] * esize) : width;
    int64_t outer = 1;
    for (int j = 0; j < k - 1; j++) outer *= g->shape[j];
    for (int64_t o = 0; o < outer; o++) {
        int64_t rem = o, woff = 0, coff = o * rows * run;
        for (int j = k - 2; j >= 0; j--) {
            woff += (g->offset[j] + rem % g->shape[j]) * gstride[j];
            rem /= g->shape[j];
        }
        for (int j = k - 1; j < nd; j++)
            if (j >= 0) woff += g->offset[j] * gstride[j];
        char *w = whole + woff * esize, *c = chunk + coff * esize;
        cudaError_t e = to_whole
            ? cudaMemcpy2DAsync(w, wpitch, c, width, width, (size_t)rows, cudaMemcpyDefault, s)
            : cudaMemcpy2DAsync(c, width, w, wpitch, width, (size_t)rows, cudaMemcpyDefault, s);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

static cask_status dev_io(cask_task_ctx *ctx, int to_whole, const char *what)
{
    size_t asz;
    const ak_host_args *a = (const ak_host_args *)cask_task_args(ctx, &asz);
    if (!a || asz < sizeof *a) return cask_task_fail(ctx, "%s: bad arguments", what);
    char *whole = to_whole ? (char *)a->dst : (char *)a->src;
    cudaError_t e = block_copy(&a->geom, a->esize, (char *)cask_task_buffer(ctx, 0), whole,
                               to_whole, (cudaStream_t)cask_task_cuda_stream(ctx));
    if (e != cudaSuccess)
        return cask_task_fail(ctx, "%s: device copy: %s (%s)", what, cudaGetErrorString(e),
                              cudaGetErrorName(e));
    return CASK_OK;
}

extern "C" cask_status ak_cuda_gather_dev(cask_task_ctx *ctx)
{
    return dev_io(ctx, 0, "array.gather_dev");
}

extern "C" cask_status ak_cuda_scatter_dev(cask_task_ctx *ctx)
{
    return dev_io(ctx, 1, "array.scatter_dev");
}
