/* knn_pre.c: what cask.knn does before the search's graph (knn_pre.h): the check of
 * every coordinate, one pass over each point set, and the sample estimate of method
 * auto (apps/knn/auto_method.h), as CPU tasks of one small graph, so that both spread
 * over cask's workers instead of running on the caller's thread. */
#include "knn_pre.h"

#include <math.h>
#include <stdlib.h>

/* Points per checking task: large enough that a task costs far more than its
 * scheduling (a few microseconds for 2^17 points), small enough to spread. */
#define CHECK_MIN_ROWS ((int64_t)1 << 17)

typedef struct check_args {
    const void *data;
    int64_t n;                 /* points */
    int f64;
    double lat, lon;           /* limits of |latitude|, |longitude| */
    int *bad;                  /* set to 1 if a value is outside or not finite */
} check_args;

typedef struct auto_args {
    const knn_auto_est *est;
    int64_t first, count;      /* observation samples */
    double *fractions;
} auto_args;

/* 1 if any value is outside its limit or not finite (NaN fails every comparison). No
 * early exit and no branch: inputs are normally fine. The blocks of 8 points have a
 * fixed trip count, which GCC vectorizes at -O2 too (21 GB/s a core, against 5 for the
 * plain loop); the double loop stays scalar (some 4 GB/s a core). */
static int check_f32(const float *x, int64_t n, float lat, float lon)
{
    int bad = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        int b = 0;
        for (int j = 0; j < 8; j++)
            b |= !(fabsf(x[2 * (i + j)]) <= lat) | !(fabsf(x[2 * (i + j) + 1]) <= lon);
        bad |= b;
    }
    for (; i < n; i++)
        bad |= !(fabsf(x[2 * i]) <= lat) | !(fabsf(x[2 * i + 1]) <= lon);
    return bad;
}

static int check_f64(const double *x, int64_t n, double lat, double lon)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad |= !(fabs(x[2 * i]) <= lat) | !(fabs(x[2 * i + 1]) <= lon);
    return bad;
}

static cask_status check_cpu(cask_task_ctx *ctx)
{
    size_t size;
    const check_args *a = cask_task_args(ctx, &size);
    if (size != sizeof *a)
        return cask_task_fail(ctx, "bad arguments");
    /* float values compare with the float limits (as NumPy compares float32 arrays with
     * a Python float): a rounded pi/2 or pi in float radians is in range */
    int bad = a->f64 ? check_f64(a->data, a->n, a->lat, a->lon)
                     : check_f32(a->data, a->n, (float)a->lat, (float)a->lon);
    if (bad)
        __atomic_store_n(a->bad, 1, __ATOMIC_RELAXED);
    return CASK_OK;
}

static cask_status auto_cpu(cask_task_ctx *ctx)
{
    size_t size;
    const auto_args *a = cask_task_args(ctx, &size);
    if (size != sizeof *a)
        return cask_task_fail(ctx, "bad arguments");
    double *scratch = malloc(knn_auto_scratch_count(a->est) * sizeof *scratch);
    if (!scratch)
        return cask_task_fail_status(ctx, CASK_ERR_NOMEM, "out of memory");
    for (int64_t i = a->first; i < a->first + a->count; i++)
        a->fractions[i] = knn_auto_one(a->est, i, scratch);
    free(scratch);
    return CASK_OK;
}

cask_status pc_knn_pre_kernels(cask_runtime *rt, pc_knn_pre_kernels_t *out)
{
    cask_kernel_desc c = {.name = "knn_check_points", .cpu = check_cpu};
    cask_kernel_desc a = {.name = "knn_auto_estimate", .cpu = auto_cpu};
    cask_status st = cask_kernel_register(rt, &c, &out->check);
    return st ? st : cask_kernel_register(rt, &a, &out->estimate);
}

static cask_status add(cask_graph *g, cask_kernel *k, const void *args, size_t size)
{
    cask_task_desc d = {0};
    d.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE;
    d.kernel = k;
    d.args = args;
    d.args_size = size;
    d.where = CASK_WHERE_CPU;
    return cask_graph_add_task(g, &d, NULL);
}

cask_status pc_knn_pre(cask_runtime *rt, const pc_knn_pre_kernels_t *k, int workers,
                       const knn_points *const check[2], int bad[2], const knn_auto_est *est,
                       double *fractions)
{
    cask_graph *g;
    cask_status st = cask_graph_create(rt, &g);
    if (st)
        return st;
    int tasks = workers > 1 ? 4 * workers : 1;   /* a few per worker: even finishes */
    for (int s = 0; s < 2 && !st; s++) {
        bad[s] = 0;
        const knn_points *p = check[s];
        if (!p)
            continue;
        int64_t rows = (p->n + tasks - 1) / tasks;
        if (rows < CHECK_MIN_ROWS)
            rows = CHECK_MIN_ROWS;
        size_t row = 2 * (p->f64 ? sizeof(double) : sizeof(float));
        double lat = p->degrees ? 90.0 : M_PI / 2, lon = p->degrees ? 180.0 : M_PI;
        for (int64_t r0 = 0; r0 < p->n && !st; r0 += rows) {
            check_args a = {(const char *)p->data + (size_t)r0 * row,
                            p->n - r0 < rows ? p->n - r0 : rows, p->f64, lat, lon, &bad[s]};
            st = add(g, k->check, &a, sizeof a);
        }
    }
    if (est && !st) {
        int64_t per = (est->so + tasks - 1) / tasks;
        if (per < 8)
            per = 8;            /* a sample costs some 20 us: keep tasks above that */
        for (int64_t i = 0; i < est->so && !st; i += per) {
            auto_args a = {est, i, est->so - i < per ? est->so - i : per, fractions};
            st = add(g, k->estimate, &a, sizeof a);
        }
    }
    if (!st)
        st = cask_graph_compute(g);
    cask_graph_destroy(g);
    return st;
}
