/* kernels/array_jit_params.h: the parameter block of a run-time compiled fused kernel
 * (array_jit.cu). Plain C with fixed-width fields only: its text is also compiled into
 * every generated kernel, so host and device agree on the layout. */
#ifndef CASK_KERNELS_ARRAY_JIT_PARAMS_H
#define CASK_KERNELS_ARRAY_JIT_PARAMS_H

typedef struct ak_jit_params {
    const void *in[15];
    void *out;
    long long n;                 /* elements of the chunk */
    int ndim;
    int pad;
    long long shape[4], offset[4], gshape[4];
    long long stride[15][4];     /* element strides of each input per output axis */
    unsigned char contig[15];    /* input i is read at the element's own index */
    unsigned char pad2;
} ak_jit_params;

#endif
