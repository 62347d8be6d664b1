/* kernels/array_cuda_reduce.cu: CUDA partial reductions (array_kernels.h). The dyadic
 * sums reproduce the CPU's trees exactly: a node of 2^L elements is summed by 2^(L-3)
 * threads, each adding 8 values as ((a+b)+(c+d))+((e+f)+(g+h)), then by pairs of
 * neighbours in shared memory -- the same binary tree the CPU walks. min/max/arg entries
 * are exact and combined in any order. */
#include "kernels/array_cuda_eval.cuh"

/* ---- reductions ---- */

/* The program's value of element e as a double (float programs) or int64. */
static __device__ __forceinline__ ak_scalar value1(const ak_fused_args &A, const ak_ptrs &P,
                                                   int64_t e)
{
    ak_acc a;
    eval_prog<1>(A, P, &e, &a);
    ak_scalar s;
    int dt = A.prog.out_dt;
    if (dt == AK_F32) s.f = (double)a.f();
    else if (dt == AK_F64) s.f = a.d();
    else s.i = a.i();
    return s;
}

static __global__ void dy_header_kernel(int64_t c0, int64_t c1, int64_t K, int64_t *hdr)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < K;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t pos;
        int L;
        ak_dy_node(c0, c1, AK_DY_CAP, k, &pos, &L);
        hdr[1 + k] = (pos << 6) | L;
        if (k == 0) hdr[0] = K;
    }
}

/* Float sums along a contiguous axis: one block per (lane, node). */
static __global__ void __launch_bounds__(AK_THREADS)
dy_contig_kernel(const __grid_constant__ ak_red_args R, const __grid_constant__ ak_ptrs P,
                 double *vals)
{
    __shared__ double s[AK_THREADS];
    const int64_t K = R.K, items = R.outer * K;
    const int t = threadIdx.x;
    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {
        int64_t o = it / K, k = it % K, pos;
        int L;
        ak_dy_node(R.c0, R.c0 + R.len, AK_DY_CAP, k, &pos, &L);
        int64_t e0 = o * R.len + (pos - R.c0);
        if (L >= 3) {
            int active = 1 << (L - 3);
            if (t < active) {
                double x[8];
                int64_t e[4];
                ak_acc a[4];
#pragma unroll
                for (int h = 0; h < 2; h++) {
#pragma unroll
                    for (int j = 0; j < 4; j++) e[j] = e0 + 8 * t + 4 * h + j;
                    eval_prog<4>(R.f, P, e, a);
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        x[4 * h + j] = R.f.prog.out_dt == AK_F32 ? (double)a[j].f() : a[j].d();
                }
                s[t] = AK_DADD(AK_DADD(AK_DADD(x[0], x[1]), AK_DADD(x[2], x[3])),
                               AK_DADD(AK_DADD(x[4], x[5]), AK_DADD(x[6], x[7])));
            }
            for (int step = 1; step < active; step *= 2) {
                __syncthreads();
                int idx = 2 * step * t;
                if (idx < active) s[idx] = AK_DADD(s[idx], s[idx + step]);
            }
            __syncthreads();
            if (t == 0) vals[o * K + k] = s[0];
            __syncthreads();
        } else if (t == 0) {
            double x[4];
            for (int j = 0; j < (1 << L); j++) x[j] = value1(R.f, P, e0 + j).f;
            vals[o * K + k] = ak_canon_sum(x, L);
        }
    }
}

/* Float sums along a strided axis: one thread per (lane, node, inner), binary counter. */
static __global__ void __launch_bounds__(AK_THREADS)
dy_strided_kernel(const __grid_constant__ ak_red_args R, const __grid_constant__ ak_ptrs P,
                  double *vals)
{
    const int64_t K = R.K, inner = R.inner, items = R.outer * K * inner;
    for (int64_t it = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; it < items;
         it += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = it % inner, rest = it / inner, k = rest % K, o = rest / K, pos;
        int L;
        ak_dy_node(R.c0, R.c0 + R.len, AK_DY_CAP, k, &pos, &L);
        double st[AK_DY_CAP + 2];
        int64_t q0 = o * R.len + (pos - R.c0);
        for (int64_t q = 0; q < ((int64_t)1 << L); q++) {
            double v = value1(R.f, P, (q0 + q) * inner + i).f;
            int lvl = 0;
            for (int64_t j = q; j & 1; j >>= 1, lvl++) v = AK_DADD(st[lvl], v);
            st[lvl] = v;
        }
        vals[(o * K + k) * inner + i] = st[L];
    }
}

static __device__ __forceinline__ void accumulate(int op, int isf, ak_scalar v, int64_t i,
                                                  ak_red_entry &e)
{
    if (op == AK_RED_SUM_I) {
        e.v.u += v.u;
        e.idx = 0;
    } else if (ak_better(op, isf, v, i, e.v, e.idx)) {
        e.v = v;
        e.idx = i;
    }
}

/* min/max/arg/int sum along a contiguous axis: one block per (lane, piece). */
static __global__ void __launch_bounds__(AK_THREADS)
plain_contig_kernel(const __grid_constant__ ak_red_args R, const __grid_constant__ ak_ptrs P,
                    ak_red_entry *ent)
{
    __shared__ ak_red_entry s[AK_THREADS];
    const int64_t nb = R.nb, items = R.outer * nb;
    const int t = threadIdx.x, op = R.op, isf = R.src_float;
    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {
        int64_t o = it / nb, b = it % nb;
        int64_t p0 = b * AK_PIECE, p1 = p0 + AK_PIECE < R.len ? p0 + AK_PIECE : R.len;
        ak_red_entry best;
        best.v.i = 0;
        best.idx = -1;
        for (int64_t q = p0 + t; q < p1; q += blockDim.x) {
            int64_t e = o * R.len + q;
            ak_scalar v = value1(R.f, P, e);
            accumulate(op, isf, v, R.all ? gidx_of(R.f.geom, e) : R.c0 + q, best);
        }
        s[t] = best;
        for (int step = 1; step < AK_THREADS; step *= 2) {
            __syncthreads();
            int idx = 2 * step * t;
            if (idx + step < AK_THREADS) {
                ak_red_entry x = s[idx + step];
                if (x.idx >= 0) accumulate(op, isf, x.v, x.idx, s[idx]);
            }
        }
        __syncthreads();
        if (t == 0) ent[o * nb + b] = s[0];
        __syncthreads();
    }
}

/* The same along a strided axis: one thread per (lane, piece, inner). */
static __global__ void __launch_bounds__(AK_THREADS)
plain_strided_kernel(const __grid_constant__ ak_red_args R, const __grid_constant__ ak_ptrs P,
                     ak_red_entry *ent)
{
    const int64_t nb = R.nb, inner = R.inner, items = R.outer * nb * inner;
    const int op = R.op, isf = R.src_float;
    for (int64_t it = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; it < items;
         it += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = it % inner, rest = it / inner, b = rest % nb, o = rest / nb;
        int64_t p0 = b * AK_PIECE, p1 = p0 + AK_PIECE < R.len ? p0 + AK_PIECE : R.len;
        ak_red_entry best;
        best.v.i = 0;
        best.idx = -1;
        for (int64_t q = p0; q < p1; q++)
            accumulate(op, isf, value1(R.f, P, (o * R.len + q) * inner + i), R.c0 + q, best);
        ent[(o * nb + b) * inner + i] = best;
    }
}

extern "C" cask_status ak_cuda_reduce_partial(cask_task_ctx *ctx)
{
    size_t asz;
    const ak_red_args *r = (const ak_red_args *)cask_task_args(ctx, &asz);
    if (!r || asz < sizeof *r) return cask_task_fail(ctx, "bad arguments");
    ak_ptrs P;
    memset(&P, 0, sizeof P);
    int nin = r->f.prog.nin;
    for (int i = 0; i < nin; i++) P.in[i] = cask_task_buffer(ctx, i);
    char *out = (char *)cask_task_buffer(ctx, nin);
    P.out = out;
    cudaStream_t s = stream_of(ctx);
    if (r->op == AK_RED_SUM_F) {
        int64_t *hdr = (int64_t *)out;
        double *vals = (double *)(hdr + 1 + r->K);
        dy_header_kernel<<<grid_for(r->K, AK_THREADS), AK_THREADS, 0, s>>>(r->c0, r->c0 + r->len,
                                                                          r->K, hdr);
        if (r->inner == 1)
            dy_contig_kernel<<<grid_for(r->outer * r->K, 1), AK_THREADS, 0, s>>>(*r, P, vals);
        else
            dy_strided_kernel<<<grid_for(r->outer * r->K * r->inner, AK_THREADS), AK_THREADS, 0,
                                s>>>(*r, P, vals);
    } else {
        ak_red_entry *ent = (ak_red_entry *)out;
        if (r->inner == 1)
            plain_contig_kernel<<<grid_for(r->outer * r->nb, 1), AK_THREADS, 0, s>>>(*r, P, ent);
        else
            plain_strided_kernel<<<grid_for(r->outer * r->nb * r->inner, AK_THREADS), AK_THREADS,
                                   0, s>>>(*r, P, ent);
    }
    return launched(ctx, "array.reduce_partial: launch");
}

