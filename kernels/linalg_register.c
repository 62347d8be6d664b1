/* kernels/linalg_register.c: registration of the dense linear algebra tile kernels
 * (linalg_kernels.h), and what a build without their libraries lost. */
#include <string.h>
#include "kernels/linalg_kernels.h"

#if defined(CASK_HAVE_CUDA) && defined(CASK_HAVE_CUBLAS) && defined(CASK_HAVE_CUSOLVER)
#define LA_CUDA(f) f
#else
#define LA_CUDA(f) NULL
#endif

cask_status la_kernels_register(cask_runtime *rt, la_kernels *out)
{
    static const char *const names[LA_OP_COUNT] = {
        "linalg.potrf", "linalg.trsm", "linalg.syrk", "linalg.gemm", "linalg.zero",
        "linalg.load", "linalg.store", "linalg.trinv"
    };
    cask_kernel_fn cpu[LA_OP_COUNT] = { la_cpu_potrf, la_cpu_trsm, la_cpu_syrk, la_cpu_gemm,
                                        la_cpu_zero, la_cpu_load, la_cpu_store, la_cpu_trinv };
    cask_kernel_fn cuda[LA_OP_COUNT] = { LA_CUDA(la_cuda_potrf), LA_CUDA(la_cuda_trsm),
                                         LA_CUDA(la_cuda_syrk), LA_CUDA(la_cuda_gemm), NULL,
                                         LA_CUDA(la_cuda_load), LA_CUDA(la_cuda_store),
                                         LA_CUDA(la_cuda_trinv) };
    memset(out, 0, sizeof *out);
    for (int i = 0; i < LA_OP_COUNT; i++) {
        cask_kernel_desc d;
        memset(&d, 0, sizeof d);
        d.name = names[i];
        d.cpu = cpu[i];
        d.cuda = cuda[i];
        /* potrf and trinv end through a host function (asynchronous tasks): never captured */
        /* the panel's tasks (top priority: array/linalg.c) on the urgent stream; stores on
           the side stream to the host, beside the loads */
        d.flags = (i == LA_POTRF || i == LA_TRINV ? CASK_KERNEL_NO_REPLAY : 0) |
                  (i == LA_LOAD || i == LA_STORE ? CASK_KERNEL_SIDE_STREAM
                                                 : CASK_KERNEL_COST_MODEL) |
                  (i == LA_STORE ? CASK_KERNEL_SIDE_TO_HOST : 0) |
                  (i == LA_ZERO || i == LA_LOAD || i == LA_STORE ? 0 : CASK_KERNEL_URGENT_STREAM);
        cask_status st = cask_kernel_register(rt, &d, &out->k[i]);
        if (st) return st;
    }
    return CASK_OK;
}

int la_has_gpu_kernels(void)
{
#if defined(CASK_HAVE_CUDA) && defined(CASK_HAVE_CUBLAS) && defined(CASK_HAVE_CUSOLVER)
    return 1;
#else
    return 0;
#endif
}

const char *la_build_note(void)
{
#if !defined(CASK_HAVE_BLAS)
    return "built without OpenBLAS: CPU tiles of Cholesky and solves run plain loops, "
           "far slower (libopenblas-dev)";
#elif defined(CASK_HAVE_CUDA) && !(defined(CASK_HAVE_CUBLAS) && defined(CASK_HAVE_CUSOLVER))
    return "built without cuBLAS or cuSOLVER: Cholesky and solves run on CPU workers only";
#else
    return NULL;
#endif
}
