/* kernels/array_jit.cu: fused programs compiled at run time (NVRTC). The interpreter in
 * array_cuda.cu pays a decode and a branch per instruction; for a chain of cheap
 * operations that, not memory, bounds it. Here each distinct program becomes CUDA C --
 * one typed variable per instruction, straight-line code per element -- compiled once
 * per context with NVRTC into a library (cudaLibraryLoadData: valid on every device),
 * and launched in place of the interpreter. The generated code calls the very functions
 * of array_ops.h (their text is embedded at build time), so it computes the same bits.
 * Without NVRTC (CASK_HAVE_NVRTC unset) every lookup returns NULL: the interpreter runs. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/array_kernels.h"
#include "kernels/array_jit_params.h"

#ifdef CASK_HAVE_NVRTC
#include <nvrtc.h>
#include "kernels/array_jit_source.h"   /* generated: ak_jit_source */

/* ---- code generation ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if (b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k) * 2;
        char *q = (char *)realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
}

static const char *ctype(int dt)
{
    switch (dt) {
    case AK_F32: return "float";
    case AK_F64: return "double";
    case AK_I32: return "int";
    case AK_U32: return "unsigned";
    default: return "long long";
    }
}

/* An immediate of dtype dt as an exact C expression. */
static void imm_expr(sbuf *b, int dt, ak_scalar v)
{
    if (dt == AK_F32) {
        float f = (float)v.f;
        unsigned u;
        memcpy(&u, &f, 4);
        put(b, "__int_as_float(0x%08x)", u);
    } else if (dt == AK_F64) {
        put(b, "__longlong_as_double(0x%016llxLL)", (unsigned long long)v.u);
    } else {
        put(b, "(%s)(%lldLL)", ctype(dt), (long long)v.i);
    }
}

/* The operand of instruction pc: an immediate, a side variable or an input load. */
static void operand_expr(sbuf *b, const ak_prog *p, const ak_instr *ins, const int *side_var,
                         int need_index)
{
    if (ins->okind == AK_OPND_IMM) {
        imm_expr(b, ins->dt, ins->imm[0]);
    } else if (ins->okind == AK_OPND_SIDE) {
        put(b, "s%d", side_var[ins->oidx]);
    } else {
        int k = ins->oidx;
        if (need_index)
            put(b, "((const %s *)J.in[%d])[J.contig[%d] ? e : ak_jit_bidx(J, %d, j)]",
                ctype(p->in_dt[k]), k, k, k);
        else
            put(b, "((const %s *)J.in[%d])[e]", ctype(p->in_dt[k]), k);
    }
}

static char *gen_source(const ak_prog *p, int need_index)
{
    sbuf b = {NULL, 0, 0, 0};
    put(&b, "typedef int int32_t; typedef unsigned uint32_t; typedef long long int64_t;\n"
            "typedef unsigned long long uint64_t;\n"
            "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
            "#define UINT32_MAX 4294967295u\n#define INT64_MIN (-9223372036854775807LL - 1)\n"
            "#define INT64_MAX 9223372036854775807LL\n");
    put(&b, "%s", ak_jit_source);
    put(&b, "static __device__ __forceinline__ long long ak_jit_bidx(const ak_jit_params &J, int k,"
            " const long long *j)\n{ long long x = 0; for (int a = 0; a < J.ndim; a++) x += j[a] *"
            " J.stride[k][a]; return x; }\n");
    put(&b, "extern \"C\" __global__ void __launch_bounds__(256) ak_jit(const __grid_constant__"
            " ak_jit_params J)\n{\n  const long long n = J.n, step = (long long)gridDim.x *"
            " blockDim.x;\n  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;"
            " e < n; e += step) {\n");
    if (need_index)
        put(&b, "    long long j[4] = {0, 0, 0, 0}, r = e;\n"
                "    for (int a = J.ndim - 1; a >= 0; a--) { j[a] = r %% J.shape[a]; r /= J.shape[a]; }\n"
                "    unsigned long long g = 0;\n"
                "    for (int a = 0; a < J.ndim; a++) g = g * J.gshape[a] + J.offset[a] + j[a];\n");
    int side_var[AK_MAX_SIDE] = {0};
    int cur = -1, cur_dt = p->out_dt;
    for (int pc = 0; pc < p->nops; pc++) {
        const ak_instr *ins = &p->ops[pc];
        int dt = ins->dt, op = ins->op;
        const char *T = ctype(dt);
        if (op == AK_OP_PUT) {
            put(&b, "    const %s s%d = a%d;\n", T, pc, cur);
            side_var[ins->oidx] = pc;
            continue;
        }
        put(&b, "    const %s a%d = ", T, pc);
        switch (op) {
        case AK_OP_SET:
            operand_expr(&b, p, ins, side_var, need_index);
            break;
        case AK_OP_ARANGE:
            if (ak_dt_is_float(dt))
                put(&b, "(%s)AK_DADD(__longlong_as_double(0x%016llxLL), AK_DMUL((double)g,"
                        " __longlong_as_double(0x%016llxLL)))",
                    T, (unsigned long long)ins->imm[0].u, (unsigned long long)ins->imm[1].u);
            else
                put(&b, "(%s)ak_int_norm(%d, %lluULL + g * %lluULL)", T, dt,
                    (unsigned long long)ins->imm[0].u, (unsigned long long)ins->imm[1].u);
            break;
        case AK_OP_RAND_U:
            if (dt == AK_F32)
                put(&b, "ak_rand_uniform_f32(%lluULL, g, (float)__longlong_as_double(0x%016llxLL),"
                        " (float)__longlong_as_double(0x%016llxLL))",
                    (unsigned long long)ins->imm[0].u, (unsigned long long)ins->imm[1].u,
                    (unsigned long long)ins->imm[2].u);
            else
                put(&b, "ak_rand_uniform(%lluULL, g, __longlong_as_double(0x%016llxLL),"
                        " __longlong_as_double(0x%016llxLL))",
                    (unsigned long long)ins->imm[0].u, (unsigned long long)ins->imm[1].u,
                    (unsigned long long)ins->imm[2].u);
            break;
        case AK_OP_RAND_N:
            put(&b, "(%s)ak_rand_normal(%lluULL, g, __longlong_as_double(0x%016llxLL),"
                    " __longlong_as_double(0x%016llxLL))",
                T, (unsigned long long)ins->imm[0].u, (unsigned long long)ins->imm[1].u,
                (unsigned long long)ins->imm[2].u);
            break;
        case AK_OP_CAST: {
            int sd = ins->src_dt;
            if (ak_dt_is_float(sd) && ak_dt_is_float(dt))
                put(&b, "(%s)a%d", T, cur);
            else if (ak_dt_is_float(sd))
                put(&b, "(%s)ak_float_to_int(%d, (double)a%d)", T, dt, cur);
            else if (ak_dt_is_float(dt))
                put(&b, "(%s)(long long)a%d", T, cur);
            else
                put(&b, "(%s)ak_int_norm(%d, (unsigned long long)(long long)a%d)", T, dt, cur);
            break;
        }
        default:
            if (op < AK_OP_BINARY0) {
                if (dt == AK_F32) put(&b, "ak_f32_un(%d, a%d)", op, cur);
                else if (dt == AK_F64) put(&b, "ak_f64_un(%d, a%d)", op, cur);
                else put(&b, "(%s)ak_int_un(%d, %d, (long long)a%d)", T, op, dt, cur);
            } else {
                char acc[16];
                snprintf(acc, sizeof acc, "a%d", cur);
                sbuf o = {NULL, 0, 0, 0};
                operand_expr(&o, p, ins, side_var, need_index);
                const char *x = ins->rev ? (o.p ? o.p : "0") : acc;
                const char *y = ins->rev ? acc : (o.p ? o.p : "0");
                if (dt == AK_F32) put(&b, "ak_f32_bin(%d, %s, %s)", op, x, y);
                else if (dt == AK_F64) put(&b, "ak_f64_bin(%d, %s, %s)", op, x, y);
                else put(&b, "(%s)ak_int_bin(%d, %d, (long long)(%s), (long long)(%s))", T, op, dt, x, y);
                b.oom |= o.oom;
                free(o.p);
            }
        }
        put(&b, ";\n");
        cur = pc;
        cur_dt = dt;
    }
    put(&b, "    ((%s *)J.out)[e] = a%d;\n  }\n}\n", ctype(cur_dt), cur);
    if (b.oom || cur < 0) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- compile and cache ---- */

typedef struct jit_entry {
    ak_prog prog;            /* the key, with need_index */
    int need_index;
    cudaKernel_t kernel;     /* NULL: failed to build (not retried) */
    cudaLibrary_t lib;
} jit_entry;

typedef struct jit_cache {
    pthread_mutex_t mu;
    jit_entry *e;
    int n, cap;
    int disabled;            /* NVRTC or the library loader failed once */
    char arch[32];
    double compile_s;
    int compiled;
} jit_cache;

static size_t prog_bytes(const ak_prog *p)
{
    return offsetof(ak_prog, ops) + sizeof(ak_instr) * (size_t)p->nops;
}

static cudaKernel_t compile(jit_cache *c, const ak_prog *p, int need_index, cudaLibrary_t *lib)
{
    char *src = gen_source(p, need_index);
    if (!src) return NULL;
    nvrtcProgram prog;
    cudaKernel_t k = NULL;
    if (nvrtcCreateProgram(&prog, src, "ak_jit.cu", 0, NULL, NULL) != NVRTC_SUCCESS) {
        free(src);
        return NULL;
    }
    const char *opts[] = {c->arch, "-std=c++17", "-default-device"};
    nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
    if (r == NVRTC_SUCCESS) {
        size_t n = 0;
        if (nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n) {
            char *cubin = (char *)malloc(n);
            if (cubin && nvrtcGetCUBIN(prog, cubin) == NVRTC_SUCCESS &&
                cudaLibraryLoadData(lib, cubin, NULL, NULL, 0, NULL, NULL, 0) == cudaSuccess &&
                cudaLibraryGetKernel(&k, *lib, "ak_jit") != cudaSuccess)
                k = NULL;
            free(cubin);
        }
    } else {
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        char *log = (char *)malloc(n + 1);
        if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
            fprintf(stderr, "cask arrays: run-time compilation failed (interpreting):\n%.2000s\n", log);
        free(log);
    }
    nvrtcDestroyProgram(&prog);
    free(src);
    cudaGetLastError();   /* a failed load must not be reported by the next launch */
    return k;
}

extern "C" void *ak_jit_cache_create(void)
{
    jit_cache *c = (jit_cache *)calloc(1, sizeof(jit_cache));
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        cudaGetLastError();
        c->disabled = 1;
    }
    snprintf(c->arch, sizeof c->arch, "--gpu-architecture=sm_%d%d", major, minor);
    return c;
}

extern "C" void ak_jit_cache_destroy(void *cache)
{
    jit_cache *c = (jit_cache *)cache;
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        if (c->e[i].kernel) cudaLibraryUnload(c->e[i].lib);
    free(c->e);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

extern "C" void *ak_jit_kernel(void *cache, const ak_prog *p, int need_index)
{
    jit_cache *c = (jit_cache *)cache;
    if (!c || c->disabled) return NULL;
    size_t nb = prog_bytes(p);
    void *k = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n; i++)
        if (c->e[i].need_index == need_index && !memcmp(&c->e[i].prog, p, nb)) {
            k = (void *)c->e[i].kernel;
            goto out;
        }
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        jit_entry *v = (jit_entry *)realloc(c->e, sizeof(jit_entry) * (size_t)cap);
        if (!v) goto out;
        c->e = v;
        c->cap = cap;
    }
    {
        jit_entry *e = &c->e[c->n++];
        memset(e, 0, sizeof *e);
        memcpy(&e->prog, p, nb);
        e->need_index = need_index;
        e->kernel = compile(c, p, need_index, &e->lib);
        c->compiled++;
        k = (void *)e->kernel;
    }
out:
    pthread_mutex_unlock(&c->mu);
    return k;
}

#else /* no NVRTC: always interpret */

extern "C" void *ak_jit_cache_create(void) { return NULL; }
extern "C" void ak_jit_cache_destroy(void *cache) { (void)cache; }
extern "C" void *ak_jit_kernel(void *cache, const ak_prog *p, int need_index)
{
    (void)cache; (void)p; (void)need_index;
    return NULL;
}

#endif

/* Launches a compiled program on the task's stream; cudaErrorNotSupported-style failures
 * are returned so that the caller interprets instead. */
extern "C" int ak_jit_launch(void *kernel, const ak_fused_args *a, const void *const *in,
                             void *out, void *stream)
{
    ak_jit_params J;
    memset(&J, 0, sizeof J);
    for (int i = 0; i < a->prog.nin; i++) J.in[i] = in[i];
    J.out = out;
    J.n = a->geom.n;
    J.ndim = a->geom.ndim;
    for (int k = 0; k < AK_MAX_DIMS; k++) {
        J.shape[k] = a->geom.shape[k];
        J.offset[k] = a->geom.offset[k];
        J.gshape[k] = a->geom.gshape[k];
    }
    memcpy(J.stride, a->in_stride, sizeof J.stride);
    memcpy(J.contig, a->in_contig, sizeof J.contig);
    int64_t blocks = (a->geom.n + 1023) / 1024;
    if (blocks < 1) blocks = 1;
    if (blocks > 65535) blocks = 65535;
    void *args[1] = {&J};
    cudaError_t e = cudaLaunchKernel((const void *)kernel, dim3((unsigned)blocks), dim3(256), args,
                                     0, (cudaStream_t)stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}
