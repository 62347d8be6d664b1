/* tests/test_array_device.c: arrays in GPU memory in and out (cask_array_from_device,
 * cask_array_compute_to_device, cask_data_register_device) on simulated GPUs (suite
 * unit): a simulated GPU's memory is host memory, so a malloc'd buffer stands for the
 * user's device array, and the transfer counters show what moved. Real GPUs:
 * test_array_device_gpu.c (suite gpu). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "cask/cask.h"

static cask_runtime *rt;
static cask_array_ctx *ctx;

static void start(int ngpu, int where)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND;
    cfg.ncpu = 2;
    cfg.ngpu = ngpu ? -1 : 0;
    cfg.sim_gpus = ngpu;
    cfg.bind = 0;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    if (where) cr_assert_eq(cask_array_ctx_set(ctx, CASK_ARRAY_OPT_WHERE, where), CASK_OK);
}

static void up1(void) { start(1, CASK_WHERE_GPU); }
static void up2(void) { start(2, CASK_WHERE_GPU); }
static void up_cpu(void) { start(0, 0); }

static void down(void)
{
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    ctx = NULL;
    rt = NULL;
}

/* Host<->device bytes of every worker since the last reset. */
static uint64_t host_bytes(uint64_t *peer)
{
    int n = 0;
    cr_assert_eq(cask_runtime_nworkers(rt, &n), CASK_OK);
    cask_worker_stats s[64];
    cr_assert(n <= 64);
    cr_assert_eq(cask_runtime_stats(rt, s, n), CASK_OK);
    uint64_t b = 0, p = 0;
    for (int i = 0; i < n; i++) {
        b += s[i].bytes_h2d + s[i].bytes_d2h;
        p += s[i].bytes_peer;
    }
    if (peer) *peer = p;
    return b;
}

static double *iota(int64_t n)
{
    double *x = malloc((size_t)n * sizeof *x);
    cr_assert(x);
    for (int64_t i = 0; i < n; i++) x[i] = (double)i;
    return x;
}

/* y = (x * 2 + 1) computed from "device" memory x into "device" memory out. */
static void chain_to_device(const double *x, int device, const int64_t *shape,
                            const int64_t *chunks, double *out)
{
    cask_array *a, *b, *c;
    cr_assert_eq(cask_array_from_device(ctx, x, device, CASK_FLOAT64, 2, shape, chunks, &a),
                 CASK_OK, "%s", cask_array_ctx_error(ctx));
    cr_assert_eq(cask_array_binary_scalar(CASK_MUL, a, 2.0, 0, &b), CASK_OK);
    cr_assert_eq(cask_array_binary_scalar(CASK_ADD, b, 1.0, 0, &c), CASK_OK);
    size_t bytes = (size_t)(shape[0] * shape[1]) * sizeof(double);
    cr_assert_eq(cask_array_compute_to_device(c, out, bytes, device), CASK_OK, "%s",
                 cask_array_ctx_error(ctx));
    cask_array_release(a);
    cask_array_release(b);
    cask_array_release(c);
}

Test(array_device, contiguous_chunks_are_read_in_place_and_written_device_to_device,
     .init = up1, .fini = down)
{
    int64_t shape[2] = {1000, 24}, chunks[2] = {128, 24};
    double *x = iota(24000), *out = calloc(24000, sizeof *out);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    chain_to_device(x, 0, shape, chunks, out);
    for (int i = 0; i < 24000; i++) cr_assert_eq(out[i], 2.0 * i + 1.0, "element %d", i);
    cr_assert_eq(host_bytes(NULL), 0, "no byte through the host");
    cask_array_stats st;
    cr_assert_eq(cask_array_last_stats(ctx, &st), CASK_OK);
    cr_assert_eq(st.ntasks, 2 * 8, "one fused task and one copy per chunk, no gather");
    free(x);
    free(out);
}

Test(array_device, chunks_cut_along_inner_axes_are_gathered_on_the_gpu, .init = up1,
     .fini = down)
{
    int64_t shape[2] = {100, 60}, chunks[2] = {30, 16};
    double *x = iota(6000), *out = calloc(6000, sizeof *out);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    chain_to_device(x, 0, shape, chunks, out);
    for (int i = 0; i < 6000; i++) cr_assert_eq(out[i], 2.0 * i + 1.0, "element %d", i);
    cr_assert_eq(host_bytes(NULL), 0);
    free(x);
    free(out);
}

Test(array_device, memory_on_another_gpu_is_read_and_written_there, .init = up2, .fini = down)
{
    int64_t shape[2] = {512, 8}, chunks[2] = {32, 8};
    double *x = iota(4096), *out = calloc(4096, sizeof *out);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    chain_to_device(x, 1, shape, chunks, out);
    for (int i = 0; i < 4096; i++) cr_assert_eq(out[i], 2.0 * i + 1.0, "element %d", i);
    cr_assert_eq(host_bytes(NULL), 0, "GPU to GPU only");
    free(x);
    free(out);
}

Test(array_device, a_device_array_computes_to_host_memory_too, .init = up1, .fini = down)
{
    int64_t shape[1] = {5000}, chunks[1] = {1024};
    double *x = iota(5000), out[5000];
    cask_array *a, *s;
    cr_assert_eq(cask_array_from_device(ctx, x, 0, CASK_FLOAT64, 1, shape, chunks, &a), CASK_OK);
    cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, a, CASK_AXIS_ALL, &s), CASK_OK);
    double sum = 0;
    cr_assert_eq(cask_array_compute(s, &sum, sizeof sum), CASK_OK, "%s", cask_array_ctx_error(ctx));
    cr_assert_eq(sum, 4999.0 * 5000.0 / 2);
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cr_assert_eq(cask_array_compute(a, out, sizeof out), CASK_OK);
    cr_assert_eq(memcmp(out, x, sizeof out), 0);
    cr_assert_eq(host_bytes(NULL), sizeof out, "the counters see the copy to the host");
    cask_array_release(s);
    cask_array_release(a);
    free(x);
}

Test(array_device, the_same_memory_wrapped_twice_is_one_array_and_persist_keeps_views,
     .init = up1, .fini = down)
{
    int64_t shape[1] = {300};
    double *x = iota(300);
    cask_array *a, *b, *c;
    cr_assert_eq(cask_array_from_device(ctx, x, 0, CASK_FLOAT64, 1, shape, NULL, &a), CASK_OK);
    cr_assert_eq(cask_array_from_device(ctx, x, 0, CASK_FLOAT64, 1, shape, NULL, &b), CASK_OK);
    cr_assert_eq(a, b);
    cr_assert_eq(cask_array_persist(ctx, 1, &a), CASK_OK);
    cr_assert_eq(cask_array_unary(CASK_NEG, a, &c), CASK_OK);
    double out[300];
    cr_assert_eq(cask_array_compute(c, out, sizeof out), CASK_OK);
    for (int i = 0; i < 300; i++) cr_assert_eq(out[i], -(double)i);
    cask_array_release(c);
    cask_array_release(b);
    cask_array_release(a);
    cr_assert_eq(x[299], 299.0, "the user's memory is left alone");
    free(x);
}

Test(array_device, bad_device_arguments_are_errors, .init = up1, .fini = down)
{
    int64_t shape[1] = {10};
    double x[10] = {0}, y[10];
    cask_array *a = NULL;
    cr_assert_eq(cask_array_from_device(ctx, NULL, 0, CASK_FLOAT64, 1, shape, NULL, &a),
                 CASK_ERR_INVALID);
    cr_assert_eq(cask_array_from_device(ctx, x, 1, CASK_FLOAT64, 1, shape, NULL, &a),
                 CASK_ERR_INVALID);
    cr_assert(strstr(cask_array_ctx_error(ctx), "no GPU 1"), "%s", cask_array_ctx_error(ctx));
    cr_assert_eq(cask_array_from_device(ctx, x, -1, CASK_FLOAT64, 1, shape, NULL, &a),
                 CASK_ERR_INVALID);
    cr_assert_eq(cask_array_from_device(ctx, x, 0, (cask_dtype)42, 1, shape, NULL, &a),
                 CASK_ERR_INVALID);
    cr_assert_null(a);
    cr_assert_eq(cask_array_from_device(ctx, x, 0, CASK_FLOAT64, 1, shape, NULL, &a), CASK_OK);
    cr_assert_eq(cask_array_compute_to_device(a, y, sizeof y - 8, 0), CASK_ERR_INVALID);
    cr_assert_eq(cask_array_compute_to_device(a, NULL, sizeof y, 0), CASK_ERR_INVALID);
    cr_assert_eq(cask_array_compute_to_device(a, y, sizeof y, 3), CASK_ERR_INVALID);
    cr_assert_eq(cask_array_compute_to_device(NULL, y, sizeof y, 0), CASK_ERR_INVALID);
    cask_array_release(a);
    cask_data *d;
    cr_assert_eq(cask_data_register_device(rt, NULL, 8, 0, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register_device(rt, x, 0, 0, &d), CASK_ERR_INVALID);
    cr_assert_eq(cask_data_register_device(rt, x, 8, 1, &d), CASK_ERR_INVALID);
}

Test(array_device, a_runtime_without_gpus_refuses_device_memory, .init = up_cpu, .fini = down)
{
    int64_t shape[1] = {10};
    double x[10] = {0};
    cask_array *a;
    cr_assert_eq(cask_array_from_device(ctx, x, 0, CASK_FLOAT64, 1, shape, NULL, &a),
                 CASK_ERR_INVALID);
    cr_assert(strstr(cask_array_ctx_error(ctx), "no GPU"), "%s", cask_array_ctx_error(ctx));
    cr_assert_eq(cask_array_ones(ctx, CASK_FLOAT64, 1, shape, NULL, &a), CASK_OK);
    cr_assert_eq(cask_array_compute_to_device(a, x, sizeof x, 0), CASK_ERR_INVALID);
    cask_array_release(a);
    cask_data *d;
    cr_assert_eq(cask_data_register_device(rt, x, sizeof x, 0, &d), CASK_ERR_INVALID);
}

/* A task graph over a registered device handle: read in place, never freed by cask. */
static cask_status double_it(cask_task_ctx *t)
{
    const double *in = cask_task_buffer(t, 0);
    double *out = cask_task_buffer(t, 1);
    for (int i = 0; i < 64; i++) out[i] = 2 * in[i];
    return CASK_OK;
}

Test(array_device, registered_device_memory_is_used_in_place_and_left_to_its_owner,
     .init = up1, .fini = down)
{
    double *x = iota(64), y[64];
    cask_kernel_desc kd;
    memset(&kd, 0, sizeof kd);
    kd.name = "test.double";
    kd.cpu = double_it;
    cask_kernel *k;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_data *dx, *dy;
    cr_assert_eq(cask_data_register_device(rt, x, sizeof(double) * 64, 0, &dx), CASK_OK);
    cr_assert_eq(cask_data_register(rt, y, sizeof y, &dy), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_access acc[2] = {{dx, CASK_READ}, {dy, CASK_WRITE}};
    cask_task_desc d;
    memset(&d, 0, sizeof d);
    d.kernel = k;
    d.access = acc;
    d.naccess = 2;
    cr_assert_eq(cask_graph_add_task(g, &d, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(dy), CASK_OK);
    for (int i = 0; i < 64; i++) cr_assert_eq(y[i], 2.0 * i);
    cr_assert_eq(cask_data_destroy(dx), CASK_OK);
    x[0] = 5;   /* still the user's (not freed by cask) */
    free(x);
}
