/* tests/test_array_io.c: lazy arrays meeting the outside (suite unit): user kernels on
 * blocks (map_blocks, blockwise), failing kernels and bad arguments, .npy files, and
 * persisted results reused by later expressions. */
#include <stdio.h>
#include <unistd.h>
#include "array_fixture.h"
#include "kernels/array_ops.h"

/* ---- user kernels ---- */

static cask_status k_scale_by_chunk(cask_task_ctx *t)
{
    const void *ua;
    size_t us;
    const cask_array_block *b = cask_array_task_block(t, &ua, &us);
    if (!b || us != sizeof(double)) return cask_task_fail(t, "no block info");
    const double *in = cask_task_buffer(t, 0);
    double *out = cask_task_buffer(t, b->nin);
    int64_t n = b->out.shape[0];
    for (int64_t i = 0; i < n; i++) out[i] = in[i] * *(const double *)ua + (double)b->out_chunk[0];
    return CASK_OK;
}

static cask_status k_transpose(cask_task_ctx *t)
{
    const cask_array_block *b = cask_array_task_block(t, NULL, NULL);
    const int32_t *in = cask_task_buffer(t, 0);
    int32_t *out = cask_task_buffer(t, 1);
    int64_t r = b->in[0].shape[0], c = b->in[0].shape[1];
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) out[j * r + i] = in[i * c + j];
    return CASK_OK;
}

static cask_status k_row_sums(cask_task_ctx *t)
{
    const cask_array_block *b = cask_array_task_block(t, NULL, NULL);
    int64_t *out = cask_task_buffer(t, b->nin);
    for (int64_t i = 0; i < b->out.shape[0]; i++) out[i] = 0;
    for (int k = 0; k < b->nin; k++) {
        const int32_t *in = cask_task_buffer(t, k);
        int64_t r = b->in[k].shape[0], c = b->in[k].shape[1];
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++) out[i] += in[i * c + j];
    }
    return CASK_OK;
}

static cask_status k_fail(cask_task_ctx *t) { return cask_task_fail(t, "deliberate failure"); }

static cask_kernel *user_kernel(const char *name, cask_kernel_fn fn)
{
    cask_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.cpu = fn;
    cask_kernel *k;
    cr_assert_eq(cask_kernel_register(rt, &d, &k), CASK_OK);
    return k;
}

Test(unit, array_map_blocks_and_blockwise_run_user_kernels, .init = up, .fini = down)
{
    int64_t shape[1] = {25}, ch[1] = {10};
    double *x = ref_data(CASK_FLOAT64, 25, 4), k = 3.0;
    cask_array *a = host(x, CASK_FLOAT64, 1, shape, ch), *b;
    cr_assert_eq(cask_array_map_blocks(user_kernel("scale", k_scale_by_chunk), 1, &a, CASK_FLOAT64, &k,
                                       sizeof k, &b), CASK_OK);
    double *o = run(b);
    for (int i = 0; i < 25; i++) cr_assert_eq(o[i], x[i] * 3.0 + i / 10);
    int64_t s2[2] = {13, 7}, c2[2] = {5, 3};
    int32_t *y = ref_data(CASK_INT32, 91, 5);
    cask_array *m = host(y, CASK_INT32, 2, s2, c2), *tr, *rs;
    const char *ij = "ij";
    cr_assert_eq(cask_array_blockwise(user_kernel("transpose", k_transpose), "ji", 1, &m, &ij,
                                      CASK_INT32, NULL, 0, &tr), CASK_OK);
    cr_assert_eq(cask_array_blockwise(user_kernel("rowsum", k_row_sums), "i", 1, &m, &ij, CASK_INT64,
                                      NULL, 0, &rs), CASK_OK);
    int32_t *ot = run(tr);
    int64_t *ors = run(rs);
    for (int i = 0; i < 13; i++) {
        int64_t sum = 0;
        for (int j = 0; j < 7; j++) {
            cr_assert_eq(ot[j * 13 + i], y[i * 7 + j]);
            sum += y[i * 7 + j];
        }
        cr_assert_eq(ors[i], sum);
    }
    free(o); free(ot); free(ors); free(x); free(y);
    cask_array_release(a); cask_array_release(b); cask_array_release(m);
    cask_array_release(tr); cask_array_release(rs);
}

Test(unit, array_failing_kernel_is_reported, .init = up, .fini = down)
{
    int64_t shape[1] = {8};
    cask_array *a, *b;
    cask_array_ones(ctx, CASK_FLOAT32, 1, shape, NULL, &a);
    cr_assert_eq(cask_array_map_blocks(user_kernel("bad", k_fail), 1, &a, CASK_FLOAT32, NULL, 0, &b), 0);
    float out[8];
    cr_assert_eq(cask_array_compute(b, out, sizeof out), CASK_ERR_TASK_FAILED);
    cr_assert(strstr(cask_array_ctx_error(ctx), "deliberate failure"), "message: %s",
              cask_array_ctx_error(ctx));
    cr_assert_eq(cask_array_compute(a, out, 4), CASK_ERR_INVALID, "buffer too small");
    cask_array_release(a);
    cask_array_release(b);
}

Test(unit, array_bad_arguments_are_rejected, .init = up, .fini = down)
{
    int64_t s1[2] = {4, 5}, s2[1] = {4}, s0[1] = {0};
    cask_array *a, *b, *c;
    cask_array_zeros(ctx, CASK_FLOAT32, 2, s1, NULL, &a);
    cask_array_zeros(ctx, CASK_FLOAT32, 1, s2, NULL, &b);
    cr_assert_eq(cask_array_binary(CASK_ADD, a, b, &c), CASK_ERR_INVALID, "(4,5) + (4,)");
    cr_assert_eq(cask_array_zeros(ctx, CASK_FLOAT32, 1, s0, NULL, &c), CASK_ERR_INVALID);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, a, 2, &c), CASK_ERR_INVALID);
    cr_assert_eq(cask_array_matmul(a, a, &c), CASK_ERR_INVALID);
    cr_assert_eq(cask_array_random_normal(ctx, CASK_INT32, 1, s2, NULL, 1, 0, 1, &c), CASK_ERR_INVALID);
    cask_array_release(a);
    cask_array_release(b);
}

/* ---- files and persistence ---- */

Test(unit, array_npy_round_trip, .init = up, .fini = down)
{
    char path[] = "/tmp/cask_test_arrayXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    int64_t shape[3] = {9, 4, 6}, c1[3] = {2, 4, 5}, c2[3] = {9, 1, 2};
    float *x = ref_data(CASK_FLOAT32, 216, 6);
    cask_array *a = host(x, CASK_FLOAT32, 3, shape, c1), *b, *bad;
    cr_assert_eq(cask_array_to_npy(a, path), CASK_OK);
    cr_assert_eq(cask_array_from_npy(ctx, path, c2, &b), CASK_OK);
    cask_array_meta m;
    cask_array_get_meta(b, &m);
    cr_assert_eq(m.ndim, 3);
    cr_assert_eq(m.shape[2], 6);
    float *o = run(b);
    cr_assert_eq(memcmp(o, x, sizeof(float) * 216), 0);
    cr_assert_eq(cask_array_from_npy(ctx, "/nonexistent/x.npy", NULL, &bad), CASK_ERR_IO);
    FILE *f = fopen(path, "wb");
    fputs("not numpy at all", f);
    fclose(f);
    cr_assert_eq(cask_array_from_npy(ctx, path, NULL, &bad), CASK_ERR_FORMAT);
    unlink(path);
    free(o); free(x);
    cask_array_release(a); cask_array_release(b);
}

Test(unit, array_persisted_results_are_reused, .init = up, .fini = down)
{
    int64_t shape[1] = {1000}, ch[1] = {100};
    cask_array *x, *y, *z;
    cask_array_random_uniform(ctx, CASK_FLOAT64, 1, shape, ch, 5, 0, 1, &x);
    cask_array_unary(CASK_EXP, x, &y);
    cr_assert_eq(cask_array_persist(ctx, 1, &y), CASK_OK);
    cask_array_meta m;
    cask_array_get_meta(y, &m);
    cr_assert(m.persisted);
    cask_array_release(x);
    cask_array_binary_scalar(CASK_ADD, y, 1.0, 0, &z);
    cask_array_stats st;
    cr_assert_eq(cask_array_plan(ctx, 1, &z, &st, NULL), CASK_OK);
    cr_assert_eq(st.ntasks_compute, 10, "only z's own tasks");
    double *o = run(z);
    for (int i = 0; i < 1000; i++) {   /* exp within 1 ULP, then one rounding */
        long double w = expl(ak_rand_uniform(5, (uint64_t)i, 0, 1)) + 1.0L;
        cr_assert(ref_ulps(o[i], w, CASK_FLOAT64) <= 1.5, "%d: %.17g vs %.17Lg", i, o[i], w);
    }
    free(o);
    cask_array_release(y);
    cask_array_release(z);
}

/* Host chunk memory: the temporaries of a compute go back to the runtime's cache and
 * the next compute of the same shapes takes them again, touching no new page. */
Test(unit, array_host_chunks_are_reused_across_computes, .init = up, .fini = down)
{
    int64_t shape[1] = {(int64_t)4 << 20}, ch[1] = {(int64_t)1 << 20};   /* 4 x 4 MiB */
    cask_array *x, *y, *s;
    cr_assert_eq(cask_array_random_uniform(ctx, CASK_FLOAT32, 1, shape, ch, 9, 0, 1, &x), 0);
    cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_FUSE, 0), CASK_OK);   /* temporaries */
    cr_assert_eq(cask_array_unary(CASK_SQRT, x, &y), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, y, CASK_AXIS_ALL, &s), CASK_OK);
    float v1, v2;
    cask_array_stats st1, st2;
    cr_assert_eq(cask_array_compute(s, &v1, sizeof v1), CASK_OK);
    cask_array_last_stats(ctx, &st1);
    cr_assert_geq(st1.host_cached_bytes, (size_t)32 << 20, "x and sqrt(x) chunks kept: %zu",
                  st1.host_cached_bytes);
    cr_assert_eq(cask_array_compute(s, &v2, sizeof v2), CASK_OK);
    cask_array_last_stats(ctx, &st2);
    cr_assert_eq(v1, v2);
    /* 32 MiB of fresh 4 KiB pages would be 8192 faults */
    cr_assert_lt(st2.minor_faults, 1000, "second compute: %zu minor faults (first %zu)",
                 st2.minor_faults, st1.minor_faults);
    size_t cached, limit;
    cr_assert_eq(cask_runtime_host_cache(rt, &cached, &limit), CASK_OK);
    cr_assert_gt(limit, 0);
    cr_assert_eq(cask_runtime_host_cache_trim(rt), CASK_OK);
    cr_assert_eq(cask_runtime_host_cache(rt, &cached, NULL), CASK_OK);
    cr_assert_eq(cached, 0);
    cask_array_release(x); cask_array_release(y); cask_array_release(s);
}

Test(unit, array_host_cache_limit_zero_keeps_nothing)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_BIND | CASK_CONFIG_HOST_CACHE;
    cfg.ncpu = 2;
    cfg.bind = 0;
    cfg.host_cache_limit = 0;
    cfg.huge_pages = 1;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    int64_t shape[1] = {(int64_t)1 << 20}, ch[1] = {(int64_t)1 << 18};
    cask_array *x, *s;
    cr_assert_eq(cask_array_random_uniform(ctx, CASK_FLOAT32, 1, shape, ch, 9, 0, 1, &x), 0);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, x, CASK_AXIS_ALL, &s), CASK_OK);
    cr_assert_eq(cask_array_persist(ctx, 1, &x), CASK_OK);
    float v;
    cr_assert_eq(cask_array_compute(s, &v, sizeof v), CASK_OK);
    cask_array_release(x);   /* persisted chunks freed with the node */
    cask_array_release(s);
    size_t cached = 1;
    cr_assert_eq(cask_runtime_host_cache(rt, &cached, NULL), CASK_OK);
    cr_assert_eq(cached, 0);
    down();
}
