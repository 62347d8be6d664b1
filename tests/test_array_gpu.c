/* tests/test_array_gpu.c: lazy chunked arrays on real GPUs (suite gpu; every test skips
 * without one). The same expressions run on a GPU runtime (array tasks forced onto the
 * GPUs) and on a CPU-only runtime; what the docs promise bit for bit (IEEE arithmetic,
 * uniform random numbers, sums, min/max/arg, integers, copies) must be identical, the
 * rest (library math functions, normal variates, matmul) close. */
#include "gpu_main.h"
#include <criterion/criterion.h>
#include <stdio.h>
#include "array_ref.h"

static cask_runtime *grt, *crt;
static cask_array_ctx *gctx, *cctx;
static int ngpus;

static void up(void)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NGPU;
    cfg.ngpu = -1;
    cr_assert_eq(cask_init(&cfg, &grt), CASK_OK);
    cask_runtime_info info;
    cr_assert_eq(cask_runtime_query(grt, &info), CASK_OK);
    ngpus = info.ngpus;
    if (info.ngpus == 0 || info.simulated_gpus) {
        cask_shutdown(grt);
        grt = NULL;
        return;
    }
    cr_assert_eq(cask_array_ctx_create(grt, &gctx), CASK_OK);
    cr_assert_eq(cask_array_ctx_set(gctx, CASK_ARRAY_OPT_WHERE, CASK_WHERE_GPU), CASK_OK);
    cfg.field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU;
    cfg.ngpu = 0;
    cfg.ncpu = 4;
    cr_assert_eq(cask_init(&cfg, &crt), CASK_OK);
    cr_assert_eq(cask_array_ctx_create(crt, &cctx), CASK_OK);
}

static void down(void)
{
    cask_array_ctx_destroy(gctx);
    cask_array_ctx_destroy(cctx);
    cask_shutdown(grt);
    cask_shutdown(crt);
    gctx = cctx = NULL;
    grt = crt = NULL;
}

#define NEED_GPU()                                                                     \
    do {                                                                               \
        if (!grt) cr_skip_test("no real GPU (cask_runtime_query reports none)");       \
    } while (0)

/* Builds an expression in a context (the same on both runtimes). */
typedef cask_array *(*builder)(cask_array_ctx *ctx, const void *ud);

static void *run(cask_array_ctx *ctx, cask_array *a, size_t *bytes)
{
    cask_array_meta m;
    cask_array_get_meta(a, &m);
    *bytes = (size_t)m.size * cask_dtype_size(m.dtype);
    void *out = malloc(*bytes + 8);
    cask_status st = cask_array_compute(a, out, *bytes);
    cr_assert_eq(st, CASK_OK, "compute: %s: %s", cask_status_string(st), cask_array_ctx_error(ctx));
    return out;
}

/* Runs b on both; tol < 0: bitwise equal, else |g - c| <= tol * (1 + |c|). */
static void both(builder b, const void *ud, double tol, const char *what)
{
    cask_array *g = b(gctx, ud), *c = b(cctx, ud);
    size_t gb, cb;
    void *go = run(gctx, g, &gb), *co = run(cctx, c, &cb);
    cask_array_meta m;
    cask_array_get_meta(g, &m);
    cr_assert_eq(gb, cb);
    for (int64_t i = 0; i < m.size; i++) {
        double x = ref_get(go, m.dtype, i), y = ref_get(co, m.dtype, i);
        int isf = m.dtype == CASK_FLOAT32 || m.dtype == CASK_FLOAT64;
        if (tol < 0 && !isf)
            cr_assert_eq(ref_geti(go, m.dtype, i), ref_geti(co, m.dtype, i), "%s [%lld]", what,
                         (long long)i);
        else if (tol < 0)
            cr_assert((x != x && y != y) || x == y, "%s [%lld]: gpu %.17g cpu %.17g", what,
                      (long long)i, x, y);
        else
            cr_assert((x != x && y != y) || fabs(x - y) <= tol * (1 + fabs(y)),
                      "%s [%lld]: gpu %.17g cpu %.17g", what, (long long)i, x, y);
    }
    free(go);
    free(co);
    cask_array_release(g);
    cask_array_release(c);
}

/* ---- builders ---- */

typedef struct spec {
    cask_dtype dt;
    int nd;
    int64_t shape[4], chunks[4];
    const void *data;
    int op;
    int axis;
    uint64_t seed;
} spec;

static cask_array *src(cask_array_ctx *ctx, const spec *s)
{
    cask_array *a;
    if (s->data)
        cr_assert_eq(cask_array_from_host(ctx, s->data, s->dt, s->nd, s->shape, s->chunks, &a), 0);
    else
        cr_assert_eq(cask_array_random_uniform(ctx, s->dt, s->nd, s->shape, s->chunks, s->seed,
                                               -2.0, 2.0, &a), 0);
    return a;
}

/* IEEE-exact chain: + * - / sqrt square neg abs min max, no library functions. */
static cask_array *b_exact_chain(cask_array_ctx *ctx, const void *ud)
{
    cask_array *x = src(ctx, ud), *y = cask_array_retain(x), *t;
    cask_array_binary_scalar(CASK_MUL, y, 1.25, 0, &t); cask_array_release(y); y = t;
    cask_array_unary(CASK_SQUARE, y, &t); cask_array_release(y); y = t;
    cask_array_binary_scalar(CASK_ADD, y, 0.5, 0, &t); cask_array_release(y); y = t;
    cask_array_unary(CASK_SQRT, y, &t); cask_array_release(y); y = t;
    cask_array_binary(CASK_SUB, y, x, &t); cask_array_release(y); y = t;
    cask_array_binary_scalar(CASK_DIV, y, 3.0, 1, &t); cask_array_release(y); y = t;
    cask_array_unary(CASK_ABS, y, &t); cask_array_release(y); y = t;
    cask_array_binary_scalar(CASK_MIN, y, 4.0, 0, &t); cask_array_release(y); y = t;
    cask_array_unary(CASK_NEG, y, &t); cask_array_release(y); y = t;
    cask_array_release(x);
    return y;
}

static cask_array *b_math_chain(cask_array_ctx *ctx, const void *ud)
{
    cask_array *y = src(ctx, ud), *t;
    cask_unary_op ops[5] = {CASK_SIN, CASK_EXP, CASK_LOG, CASK_COS, CASK_SQUARE};
    for (int i = 0; i < 5; i++) {
        cask_array_unary(ops[i], y, &t);
        cask_array_release(y);
        y = t;
    }
    cask_array_binary_scalar(CASK_POW, y, 1.5, 0, &t);
    cask_array_release(y);
    return t;
}

static cask_array *b_unary(cask_array_ctx *ctx, const void *ud)
{
    const spec *s = ud;
    cask_array *x = src(ctx, s), *y;
    cr_assert_eq(cask_array_unary((cask_unary_op)s->op, x, &y), 0);
    cask_array_release(x);
    return y;
}

static cask_array *b_binary_bcast(cask_array_ctx *ctx, const void *ud)
{
    const spec *s = ud;
    cask_array *x = src(ctx, s), *row, *y;
    int64_t lo[2] = {0, 0}, hi[2] = {s->chunks[0] < s->shape[0] ? s->chunks[0] : s->shape[0], s->shape[1]};
    cask_array *sl, *r;
    cr_assert_eq(cask_array_slice(x, lo, hi, &sl), 0);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_MAX, sl, 0, &r), 0);   /* a row vector */
    cr_assert_eq(cask_array_expand_dims(r, 0, &row), 0);
    cr_assert_eq(cask_array_binary((cask_binary_op)s->op, x, row, &y), 0);
    cask_array_release(x); cask_array_release(sl); cask_array_release(r); cask_array_release(row);
    return y;
}

static cask_array *b_reduce(cask_array_ctx *ctx, const void *ud)
{
    const spec *s = ud;
    cask_array *x = src(ctx, s), *y;
    cr_assert_eq(cask_array_reduce((cask_reduce_op)s->op, x, s->axis, &y), 0);
    cask_array_release(x);
    return y;
}

static cask_array *b_rechunk(cask_array_ctx *ctx, const void *ud)
{
    const spec *s = ud;
    cask_array *x = src(ctx, s), *y;
    int64_t c[4] = {3, 5, 7, 2};
    cr_assert_eq(cask_array_rechunk(x, c, &y), 0);
    cask_array_release(x);
    return y;
}

static cask_array *b_matmul(cask_array_ctx *ctx, const void *ud)
{
    const spec *s = ud;
    cask_array *a = src(ctx, s), *b, *c;
    spec t = *s;
    t.shape[0] = s->shape[1];
    t.shape[1] = 37;
    t.chunks[0] = 19;
    t.chunks[1] = 16;
    t.seed = s->seed + 1;
    t.data = NULL;
    b = src(ctx, &t);
    cr_assert_eq(cask_array_matmul(a, b, &c), 0);
    cask_array_release(a);
    cask_array_release(b);
    return c;
}

/* ---- tests ---- */

Test(gpu, array_exact_chain_is_bitwise_equal_to_cpu, .init = up, .fini = down)
{
    NEED_GPU();
    for (int d = 0; d < 2; d++) {
        spec s = {d ? CASK_FLOAT64 : CASK_FLOAT32, 2, {1000, 333}, {128, 100}, NULL, 0, 0, 5};
        both(b_exact_chain, &s, -1, "exact chain");
    }
}

Test(gpu, array_math_functions_are_close_to_cpu, .init = up, .fini = down)
{
    NEED_GPU();
    spec s = {CASK_FLOAT32, 1, {100000}, {30000}, NULL, 0, 0, 6};
    both(b_math_chain, &s, 1e-5, "math chain f32");
    s.dt = CASK_FLOAT64;
    both(b_math_chain, &s, 1e-13, "math chain f64");
    for (int op = 0; op < CASK_UNARY_COUNT_; op++) {
        s.op = op;
        both(b_unary, &s, op == CASK_NEG || op == CASK_ABS || op == CASK_SQRT || op == CASK_SQUARE ? -1 : 1e-14, "unary");
    }
}

Test(gpu, array_integer_ops_and_broadcasting_are_exact, .init = up, .fini = down)
{
    NEED_GPU();
    const cask_dtype dts[3] = {CASK_INT32, CASK_INT64, CASK_UINT32};
    for (int d = 0; d < 3; d++) {
        void *x = ref_data(dts[d], 300 * 70, 7 + (uint64_t)d);
        for (int op = 0; op < CASK_BINARY_COUNT_; op++) {
            spec s = {dts[d], 2, {300, 70}, {64, 30}, x, op, 0, 0};
            both(b_binary_bcast, &s, -1, "int binary broadcast");
        }
        free(x);
    }
    double *xf = ref_data(CASK_FLOAT64, 300 * 70, 9);
    for (int op = 0; op < CASK_POW; op++) {
        spec s = {CASK_FLOAT64, 2, {300, 70}, {64, 30}, xf, op, 0, 0};
        both(b_binary_bcast, &s, -1, "float binary broadcast");
    }
    free(xf);
}

Test(gpu, array_random_uniform_is_bitwise_equal_to_cpu, .init = up, .fini = down)
{
    NEED_GPU();
    for (int d = 0; d < 2; d++) {
        spec s = {d ? CASK_FLOAT64 : CASK_FLOAT32, 3, {50, 40, 30}, {7, 40, 11}, NULL, CASK_NEG, 0, 11};
        both(b_unary, &s, -1, "uniform");
    }
}

Test(gpu, array_reductions_are_bitwise_equal_to_cpu, .init = up, .fini = down)
{
    NEED_GPU();
    /* shapes that give full 2^11 nodes, ragged ends and strided axes */
    const int64_t shapes[3][2] = {{1, 300001}, {5000, 77}, {333, 4444}};
    const int64_t chunks[3][2] = {{1, 70001}, {999, 30}, {100, 1000}};
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 3; d++) {
            cask_dtype dt = d == 0 ? CASK_FLOAT32 : d == 1 ? CASK_FLOAT64 : CASK_INT32;
            void *x = ref_data(dt, shapes[c][0] * shapes[c][1], 20 + (uint64_t)c);
            for (int axis = -1; axis < 2; axis++)
                for (int op = 0; op < CASK_REDUCE_COUNT_; op++) {
                    spec s = {dt, 2, {shapes[c][0], shapes[c][1]}, {chunks[c][0], chunks[c][1]}, x,
                              op, axis < 0 ? CASK_AXIS_ALL : axis, 0};
                    /* var/std of int32 go through float64 casts: still exact operations */
                    both(b_reduce, &s, -1, "reduction");
                }
            free(x);
        }
}

Test(gpu, array_rechunk_and_matmul, .init = up, .fini = down)
{
    NEED_GPU();
    int64_t *x = ref_data(CASK_INT64, 20 * 30 * 40 * 5, 3);
    spec s = {CASK_INT64, 4, {20, 30, 40, 5}, {6, 30, 9, 5}, x, 0, 0, 0};
    both(b_rechunk, &s, -1, "rechunk");
    free(x);
    for (int d = 0; d < 2; d++) {
        spec m = {d ? CASK_FLOAT64 : CASK_FLOAT32, 2, {200, 150}, {64, 19}, NULL, 0, 0, 4};
        both(b_matmul, &m, d ? 1e-12 : 1e-4, "matmul");
    }
    int32_t *xi = ref_data(CASK_INT32, 200 * 150, 4);
    spec mi = {CASK_INT32, 2, {200, 150}, {64, 19}, xi, 0, 0, 4};
    cask_array *a = src(gctx, &mi), *b, *c;
    int64_t sb[2] = {150, 37};
    int32_t *yi = ref_data(CASK_INT32, 150 * 37, 5);
    cr_assert_eq(cask_array_from_host(gctx, yi, CASK_INT32, 2, sb, NULL, &b), 0);
    cr_assert_eq(cask_array_matmul(a, b, &c), 0);
    size_t bytes;
    int32_t *o = run(gctx, c, &bytes);
    for (int i = 0; i < 200; i++)
        for (int j = 0; j < 37; j++) {
            int32_t acc = 0;
            for (int k = 0; k < 150; k++) acc += xi[i * 150 + k] * yi[k * 37 + j];
            cr_assert_eq(o[i * 37 + j], acc);
        }
    free(o); free(xi); free(yi);
    cask_array_release(a); cask_array_release(b); cask_array_release(c);
}

Test(gpu, array_fused_chain_is_one_gpu_task_per_chunk, .init = up, .fini = down)
{
    NEED_GPU();
    spec s = {CASK_FLOAT32, 1, {1 << 22}, {1 << 18}, NULL, 0, 0, 8};
    cask_array *y = b_exact_chain(gctx, &s);
    cr_assert_eq(cask_array_persist(gctx, 1, &y), CASK_OK, "%s", cask_array_ctx_error(gctx));
    cask_array_stats st;
    cask_array_last_stats(gctx, &st);
    cr_assert_eq(st.ntasks, 16);
    cr_assert_eq(st.ntasks_fused, 16);
    cask_array *c = b_exact_chain(cctx, &s);
    size_t gb, cb;
    void *go = run(gctx, y, &gb), *co = run(cctx, c, &cb);
    cr_assert_eq(memcmp(go, co, gb), 0);
    free(go); free(co);
    cask_array_release(y);
    cask_array_release(c);
}

Test(gpu, array_mean_and_std_on_all_gpus_match_cpu, .init = up, .fini = down)
{
    NEED_GPU();
    int64_t shape[1] = {(int64_t)1 << 24}, ch[1] = {(int64_t)1 << 21};
    cask_array *x[2], *m[2], *sd[2];
    cask_array_ctx *cs[2] = {gctx, cctx};
    double out[2][2];
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(cask_array_random_uniform(cs[i], CASK_FLOAT64, 1, shape, ch, 99, 0, 1, &x[i]), 0);
        cr_assert_eq(cask_array_reduce(CASK_REDUCE_MEAN, x[i], 0, &m[i]), 0);
        cr_assert_eq(cask_array_std(x[i], 0, 0, &sd[i]), 0);
        cask_array *outs[2] = {m[i], sd[i]};
        void *ptrs[2] = {&out[i][0], &out[i][1]};
        size_t bytes[2] = {8, 8};
        cr_assert_eq(cask_array_compute_many(cs[i], 2, outs, ptrs, bytes), CASK_OK, "%s",
                     cask_array_ctx_error(cs[i]));
    }
    cr_assert_eq(out[0][0], out[1][0], "mean %.17g vs %.17g", out[0][0], out[1][0]);
    cr_assert_eq(out[0][1], out[1][1], "std %.17g vs %.17g", out[0][1], out[1][1]);
    cr_assert(fabs(out[0][0] - 0.5) < 1e-3 && fabs(out[0][1] - sqrt(1.0 / 12)) < 1e-3);
    for (int i = 0; i < 2; i++) {
        cask_array_release(x[i]); cask_array_release(m[i]); cask_array_release(sd[i]);
    }
    (void)ngpus;
}

Test(gpu, array_compiled_programs_equal_the_interpreter, .init = up, .fini = down)
{
    NEED_GPU();
    /* same GPU, programs compiled at run time (default) vs interpreted: same bits, also
     * for the library math functions, generators and broadcast inputs */
    builder bs[4] = {b_math_chain, b_exact_chain, b_unary, b_binary_bcast};
    double *xf = ref_data(CASK_FLOAT64, 300 * 70, 9);
    spec ss[4] = {{CASK_FLOAT32, 1, {100000}, {30000}, NULL, 0, 0, 6},
                  {CASK_FLOAT64, 2, {1000, 333}, {128, 100}, NULL, 0, 0, 5},
                  {CASK_FLOAT32, 3, {50, 40, 30}, {7, 40, 11}, NULL, CASK_EXP, 0, 11},
                  {CASK_FLOAT64, 2, {300, 70}, {64, 30}, xf, CASK_SUB, 0, 0}};
    for (int i = 0; i < 4; i++) {
        cask_array *a = bs[i](gctx, &ss[i]);
        size_t ab, bb;
        void *jo = run(gctx, a, &ab);
        cask_array_release(a);
        cr_assert_eq(cask_array_ctx_set(gctx, CASK_ARRAY_OPT_JIT, 0), CASK_OK);
        cask_array *b = bs[i](gctx, &ss[i]);
        void *io = run(gctx, b, &bb);
        cask_array_release(b);
        cr_assert_eq(cask_array_ctx_set(gctx, CASK_ARRAY_OPT_JIT, 1), CASK_OK);
        cr_assert_eq(ab, bb);
        cr_assert_eq(memcmp(jo, io, ab), 0, "program %d: compiled and interpreted differ", i);
        free(jo);
        free(io);
    }
    free(xf);
}

CASK_GPU_TEST_MAIN("array_gpu")
