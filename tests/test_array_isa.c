/* tests/test_array_isa.c: the CPU interpreter's typed loops (kernels/array_cpu_loops.c,
 * built for baseline x86-64, AVX2 and AVX-512) give the same bits at every width
 * (suite unit). Every elementwise operation that is one IEEE operation per element
 * (neg, abs, sqrt, square, add, sub, mul, div, min, max, casts) and the integer ones, over
 * values that include NaN, infinities, signed zeros, subnormals and division by zero, is
 * computed with CASK_CPU_ISA capping the width at each level the CPU has, and compared
 * byte for byte with the baseline build. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include "array_fixture.h"

#define N 5000
#define CHUNK 1500   /* tiles of 1024 plus tails of every length */
#define MAXR 128

/* the inputs' memory (cask_array_from_host does not copy): freed at the end */
static void *bufs[10];
static int nbufs;

static const cask_dtype DTS[5] = {CASK_FLOAT32, CASK_FLOAT64, CASK_INT32, CASK_INT64, CASK_UINT32};

/* value i of a mix of ordinary and special numbers, as double */
static double value(int i, uint64_t *s)
{
    static const double special[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 1e-40,
                                     -1e-40, 5e-324, 3.4e38, -3.4e38, 2147483648.0, -2147483649.0,
                                     4294967296.0, 1e19, -1e19, 0.5, -0.5, 2.5};
    if (i % 7 == 0) return special[(i / 7) % (int)(sizeof special / sizeof *special)];
    double u = (double)(ref_splitmix(s) >> 11) / 9007199254740992.0;
    return i % 3 ? (u - 0.5) * 2000.0 : (u - 0.5) * 1e-30;
}

static cask_array *input(cask_dtype dt, uint64_t seed)
{
    void *buf = malloc((size_t)N * 8);
    uint64_t s = seed;
    for (int i = 0; i < N; i++) {
        double v = value(i, &s);
        if (dt == CASK_FLOAT32) ((float *)buf)[i] = (float)v;
        else if (dt == CASK_FLOAT64) ((double *)buf)[i] = v;
        else if (dt == CASK_INT32) ((int32_t *)buf)[i] = (int32_t)(ref_splitmix(&s) >> (i % 5 ? 33 : 0));
        else if (dt == CASK_UINT32) ((uint32_t *)buf)[i] = (uint32_t)(ref_splitmix(&s) >> (i % 5 ? 33 : 0));
        else ((int64_t *)buf)[i] = (int64_t)(ref_splitmix(&s) >> (i % 5 ? 40 : 0)) * (i % 2 ? -1 : 1);
        if (i % 11 == 0 && dt != CASK_FLOAT32 && dt != CASK_FLOAT64)   /* zeros: division */
            memset((char *)buf + (size_t)i * cask_dtype_size(dt), 0, cask_dtype_size(dt));
    }
    int64_t shape[1] = {N}, ch[1] = {CHUNK};
    bufs[nbufs++] = buf;
    return host(buf, dt, 1, shape, ch);
}

/* the arrays to compare: unary, binary (array and scalar operands, both orders), casts */
static int build(cask_array **out)
{
    int n = 0;
    for (int d = 0; d < 5; d++) {
        cask_dtype dt = DTS[d];
        int isf = dt == CASK_FLOAT32 || dt == CASK_FLOAT64;
        cask_array *x = input(dt, 11 + (uint64_t)d), *y = input(dt, 99 + (uint64_t)d), *r;
        const cask_unary_op un[4] = {CASK_NEG, CASK_ABS, CASK_SQRT, CASK_SQUARE};
        for (int u = 0; u < 4; u++) {
            if (un[u] == CASK_SQRT && !isf) continue;
            cr_assert_eq(cask_array_unary(un[u], x, &r), CASK_OK);
            out[n++] = r;
        }
        const cask_binary_op bin[6] = {CASK_ADD, CASK_SUB, CASK_MUL, CASK_DIV, CASK_MIN, CASK_MAX};
        for (int b = 0; b < 6; b++) {
            cr_assert_eq(cask_array_binary(bin[b], x, y, &r), CASK_OK);
            out[n++] = r;
            cr_assert_eq(cask_array_binary_scalar(bin[b], x, isf ? 0.3 : 7.0, 0, &r), CASK_OK);
            out[n++] = r;
            cr_assert_eq(cask_array_binary_scalar(bin[b], x, isf ? -2.5 : 3.0, 1, &r), CASK_OK);
            out[n++] = r;
        }
        for (int e = 0; e < 5; e++) {
            if (e == d) continue;
            cr_assert_eq(cask_array_astype(x, DTS[e], &r), CASK_OK);
            out[n++] = r;
        }
        cask_array_release(x);
        cask_array_release(y);
    }
    cr_assert_leq(n, MAXR);
    return n;
}

static size_t bytes_of(cask_array *a)
{
    cask_array_meta m;
    cask_array_get_meta(a, &m);
    return (size_t)m.size * cask_dtype_size(m.dtype);
}

Test(unit, array_loops_same_bits_at_every_width, .init = up, .fini = down)
{
    cask_array *arr[MAXR];
    int n = build(arr);
    const char *caps[3] = {"baseline", "avx2", "avx512"};
    int levels = 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) levels = 2;
    if (levels == 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
        levels = 3;
#endif
    cr_log_info("array_loops: %d of 3 widths run on this CPU (%s)", levels,
                levels == 3 ? "baseline, AVX2, AVX-512" : levels == 2 ? "baseline, AVX2" : "baseline");
    void *ref[MAXR];
    const char *old = getenv("CASK_CPU_ISA");
    char *saved = old ? strdup(old) : NULL;
    for (int l = 0; l < levels; l++) {
        setenv("CASK_CPU_ISA", caps[l], 1);
        for (int i = 0; i < n; i++) {
            void *got = run(arr[i]);
            if (l == 0) {
                ref[i] = got;
                continue;
            }
            size_t nb = bytes_of(arr[i]);
            cr_expect(memcmp(got, ref[i], nb) == 0,
                      "result %d differs between the baseline loops and the %s loops", i, caps[l]);
            free(got);
        }
    }
    if (saved) setenv("CASK_CPU_ISA", saved, 1);
    else unsetenv("CASK_CPU_ISA");
    free(saved);
    for (int i = 0; i < n; i++) {
        free(ref[i]);
        cask_array_release(arr[i]);
    }
    while (nbufs) free(bufs[--nbufs]);
}
