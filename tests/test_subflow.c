/* test_subflow.c: tasks that spawn tasks: joined children hold the parent's
 * successors, detached ones only the graph; recursion three deep; a tree reduction
 * whose shape depends on the data; adaptive quadrature; errors through subflows. */
#include <math.h>
#include <string.h>
#include "test_helpers.h"

/* ---- nested three deep: 3 children per level, 27 leaves ---- */

static _Atomic int leaves, max_depth;
static int leaves_seen_by_successor;
static cask_kernel *nest_k;

static cask_status nest_task(cask_task_ctx *ctx)
{
    int depth = arg_int(ctx);
    int m = atomic_load(&max_depth);
    while (depth > m && !atomic_compare_exchange_weak(&max_depth, &m, depth))
        ;
    if (depth == 3) {
        spin_ns(20000);
        atomic_fetch_add(&leaves, 1);
        return CASK_OK;
    }
    int next = depth + 1;
    for (int i = 0; i < 3; i++) {
        cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = nest_k, .args = &next,
                              .args_size = sizeof next };
        cask_status st = cask_task_spawn(ctx, &td, 0, NULL);
        if (st)
            return cask_task_fail(ctx, "spawn: %s", cask_status_string(st));
    }
    return CASK_OK;
}

static cask_status count_task(cask_task_ctx *ctx)
{
    (void)ctx;
    leaves_seen_by_successor = atomic_load(&leaves);
    return CASK_OK;
}

Test(subflow, nested_3_deep_joins_before_the_successor, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    nest_k = kernel(rt, "nest", nest_task);
    cask_kernel *count = kernel(rt, "count", count_task);
    int token = 0, zero = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &token, sizeof token, &d), CASK_OK);
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    cask_task_desc root = { .field_mask = CASK_TASK_ARGS, .kernel = nest_k, .access = &w,
                            .naccess = 1, .args = &zero, .args_size = sizeof zero };
    cask_task_desc succ = { .kernel = count, .access = &r, .naccess = 1 };
    cask_task *troot;
    cr_assert_eq(cask_graph_add_task(g, &root, &troot), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &succ, NULL), CASK_OK);
    for (int run = 0; run < 2; run++) {   /* children are spawned again on each run */
        atomic_store(&leaves, 0);
        atomic_store(&max_depth, 0);
        leaves_seen_by_successor = -1;
        cask_future *f;
        cr_assert_eq(cask_task_future(troot, &f), CASK_OK);
        cr_assert_eq(cask_graph_submit(g), CASK_OK);
        cr_assert_eq(cask_future_wait(f), CASK_OK);
        cr_assert_eq(atomic_load(&leaves), 27, "the root's future came before its subflow ended");
        cr_assert_eq(cask_graph_wait(g), CASK_OK, "%s", cask_graph_error(g));
        cr_assert_eq(atomic_load(&max_depth), 3);
        cr_assert_eq(leaves_seen_by_successor, 27, "the successor ran before the subflow ended (%d)",
                     leaves_seen_by_successor);
    }
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* ---- a tree reduction whose shape depends on the data ---- */

#define NV 20000
static int64_t values[NV];
static cask_kernel *reduce_k, *combine_k;

typedef struct range {
    int lo, hi;
    int64_t *out;
} range;

typedef struct pair {
    const int64_t *a, *b;
    int64_t *out;
} pair;

static cask_status combine_task(cask_task_ctx *ctx)
{
    const pair *p = cask_task_args(ctx, NULL);
    *p->out = *p->a + *p->b;
    return CASK_OK;
}

/* Splits while the range holds more than 64 units of "work", a unit being the value's
 * low 3 bits + 1: the tree is deeper where the data is heavier. */
static cask_status reduce_task(cask_task_ctx *ctx)
{
    const range *r = cask_task_args(ctx, NULL);
    int64_t work = 0, sum = 0;
    for (int i = r->lo; i < r->hi; i++) {
        work += (values[i] & 7) + 1;
        sum += values[i];
    }
    if (work <= 64 || r->hi - r->lo < 2) {
        *r->out = sum;
        return CASK_OK;
    }
    int64_t *part = cask_task_scratch(ctx, 2 * sizeof *part);
    if (!part)
        return cask_task_fail(ctx, "no scratch");
    int mid = r->lo + (r->hi - r->lo) / 2;
    range left = { r->lo, mid, &part[0] }, right = { mid, r->hi, &part[1] };
    pair p = { &part[0], &part[1], r->out };
    cask_task_desc dl = { .field_mask = CASK_TASK_ARGS, .kernel = reduce_k, .args = &left,
                          .args_size = sizeof left };
    cask_task_desc dr = dl, dc = { .field_mask = CASK_TASK_ARGS, .kernel = combine_k,
                                   .args = &p, .args_size = sizeof p };
    dr.args = &right;
    cask_task *a, *b, *c;
    if (cask_task_spawn(ctx, &dl, 0, &a) || cask_task_spawn(ctx, &dr, 0, &b) ||
        cask_task_spawn(ctx, &dc, 0, &c) || cask_task_depend(c, a) || cask_task_depend(c, b))
        return cask_task_fail(ctx, "spawn failed");
    return CASK_OK;
}

static int64_t checked_total;
static cask_status check_task(cask_task_ctx *ctx)
{
    checked_total = *(const int64_t *)cask_task_buffer(ctx, 0);
    return CASK_OK;
}

Test(subflow, tree_reduction_shaped_by_the_data, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    reduce_k = kernel(rt, "reduce", reduce_task);
    combine_k = kernel(rt, "combine", combine_task);
    cask_kernel *check = kernel(rt, "check", check_task);
    uint64_t rng = 11;
    int64_t expect = 0;
    for (int i = 0; i < NV; i++) {
        values[i] = (int64_t)(rng_next(&rng) % 1000) - 300;
        expect += values[i];
    }
    int64_t total = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &total, sizeof total, &d), CASK_OK);
    range all = { 0, NV, &total };
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    cask_task_desc root = { .field_mask = CASK_TASK_ARGS, .kernel = reduce_k, .access = &w,
                            .naccess = 1, .args = &all, .args_size = sizeof all };
    cask_task_desc after = { .kernel = check, .access = &r, .naccess = 1 };
    cr_assert_eq(cask_graph_add_task(g, &root, NULL), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &after, NULL), CASK_OK);
    checked_total = 0;
    compute_ok(g);
    cr_assert_eq(checked_total, expect, "the successor saw %lld, the sum is %lld",
                 (long long)checked_total, (long long)expect);
    cr_assert_eq(total, expect);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* ---- adaptive quadrature (Simpson, split where the error estimate is too large) ---- */

static cask_kernel *quad_k;
static _Atomic int quad_leaves;

typedef struct interval {
    double a, b, tol;
    double *out;
} interval;

static double fq(double x)
{
    return sin(x) * x * x + exp(-50.0 * (x - 1.0) * (x - 1.0));
}

static double simpson(double a, double b)
{
    double m = 0.5 * (a + b);
    return (b - a) / 6.0 * (fq(a) + 4.0 * fq(m) + fq(b));
}

static cask_status quad_task(cask_task_ctx *ctx)
{
    const interval *iv = cask_task_args(ctx, NULL);
    double m = 0.5 * (iv->a + iv->b);
    double whole = simpson(iv->a, iv->b), halves = simpson(iv->a, m) + simpson(m, iv->b);
    if (fabs(halves - whole) < 15.0 * iv->tol || iv->b - iv->a < 1e-6) {
        *iv->out = halves + (halves - whole) / 15.0;
        atomic_fetch_add(&quad_leaves, 1);
        return CASK_OK;
    }
    double *part = cask_task_scratch(ctx, 2 * sizeof *part);
    if (!part)
        return cask_task_fail(ctx, "no scratch");
    interval l = { iv->a, m, iv->tol / 2, &part[0] }, r = { m, iv->b, iv->tol / 2, &part[1] };
    pair p = { NULL, NULL, NULL };
    (void)p;
    cask_task_desc dl = { .field_mask = CASK_TASK_ARGS, .kernel = quad_k, .args = &l,
                          .args_size = sizeof l };
    cask_task_desc dr = dl;
    dr.args = &r;
    cask_task *a, *b, *c;
    typedef struct sum2 { const double *a, *b; double *out; } sum2;
    sum2 s = { &part[0], &part[1], iv->out };
    cask_task_desc dc = { .field_mask = CASK_TASK_ARGS, .kernel = combine_k, .args = &s,
                          .args_size = sizeof s };
    if (cask_task_spawn(ctx, &dl, 0, &a) || cask_task_spawn(ctx, &dr, 0, &b) ||
        cask_task_spawn(ctx, &dc, 0, &c) || cask_task_depend(c, a) || cask_task_depend(c, b))
        return cask_task_fail(ctx, "spawn failed");
    return CASK_OK;
}

static cask_status add_doubles(cask_task_ctx *ctx)
{
    const struct { const double *a, *b; double *out; } *s = cask_task_args(ctx, NULL);
    *s->out = *s->a + *s->b;
    return CASK_OK;
}

Test(subflow, adaptive_quadrature, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    quad_k = kernel(rt, "quad", quad_task);
    combine_k = kernel(rt, "sum2", add_doubles);
    atomic_store(&quad_leaves, 0);
    double result = 0;
    interval all = { 0.0, M_PI, 1e-10, &result };
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = quad_k, .args = &all,
                          .args_size = sizeof all };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    compute_ok(g);
    /* int_0^pi x^2 sin x dx = pi^2 - 4; the Gaussian bump: sqrt(pi/50) (its tails outside
     * [0, pi] are below 1e-20) */
    double exact = M_PI * M_PI - 4.0 + sqrt(M_PI / 50.0);
    cr_assert(fabs(result - exact) < 1e-8, "result %.15g, exact %.15g", result, exact);
    cr_assert_gt(atomic_load(&quad_leaves), 16, "no adaptive refinement happened");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* ---- errors and detached children ---- */

static cask_kernel *bad_k, *parent_k;

static cask_status bad_child(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "child %d broke", arg_int(ctx));
}

static _Atomic int successor_ran;
static cask_status successor_task(cask_task_ctx *ctx)
{
    (void)ctx;
    atomic_store(&successor_ran, 1);
    return CASK_OK;
}

static cask_status parent_of_bad(cask_task_ctx *ctx)
{
    int depth = arg_int(ctx);
    int next = depth + 1;
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = depth < 2 ? parent_k : bad_k,
                          .args = &next, .args_size = sizeof next };
    return cask_task_spawn(ctx, &td, 0, NULL);
}

Test(subflow, a_grandchilds_error_reaches_the_parents_future_and_the_graph, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    bad_k = kernel(rt, "bad", bad_child);
    parent_k = kernel(rt, "parent", parent_of_bad);
    cask_kernel *succ = kernel(rt, "succ", successor_task);
    int x = 0, zero = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    cask_task_desc root = { .field_mask = CASK_TASK_ARGS, .kernel = parent_k, .access = &w,
                            .naccess = 1, .args = &zero, .args_size = sizeof zero };
    cask_task_desc after = { .kernel = succ, .access = &r, .naccess = 1 };
    cask_task *troot, *tsucc;
    cr_assert_eq(cask_graph_add_task(g, &root, &troot), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &after, &tsucc), CASK_OK);
    cask_future *froot, *fsucc;
    cr_assert_eq(cask_task_future(troot, &froot), CASK_OK);
    cr_assert_eq(cask_task_future(tsucc, &fsucc), CASK_OK);
    atomic_store(&successor_ran, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cr_assert_eq(cask_future_wait(froot), CASK_ERR_TASK_FAILED);
    cr_assert(strstr(cask_future_error(froot), "child 3 broke"), "%s", cask_future_error(froot));
    cr_assert_eq(cask_future_wait(fsucc), CASK_ERR_CANCELLED);
    cr_assert_eq(cask_graph_wait(g), CASK_ERR_TASK_FAILED);
    cr_assert(strstr(cask_graph_error(g), "child 3 broke"), "%s", cask_graph_error(g));
    cr_assert_eq(atomic_load(&successor_ran), 0, "the successor of a failed subflow ran");
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

static cask_kernel *gate_k;
static cask_status detaching_parent(cask_task_ctx *ctx)
{
    cask_task_desc td = { .kernel = gate_k };
    return cask_task_spawn(ctx, &td, CASK_SPAWN_DETACHED, NULL);
}

Test(subflow, a_detached_child_holds_the_graph_not_the_successors, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    gate_k = kernel(rt, "gate", gate_task);
    cask_kernel *par = kernel(rt, "parent", detaching_parent);
    cask_kernel *succ = kernel(rt, "succ", successor_task);
    cask_task *tp, *ts;
    cask_task_desc pd = { .kernel = par }, sd = { .kernel = succ };
    cr_assert_eq(cask_graph_add_task(g, &pd, &tp), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &sd, &ts), CASK_OK);
    cr_assert_eq(cask_task_depend(ts, tp), CASK_OK);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_entered, 0);
    atomic_store(&successor_ran, 0);
    cask_future *fs;
    cr_assert_eq(cask_task_future(ts, &fs), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cr_assert_eq(cask_future_wait(fs), CASK_OK);   /* while the detached child is held */
    cr_assert_eq(atomic_load(&successor_ran), 1);
    wait_entered();
    struct timespec ts0 = { 0, 20000000 };
    nanosleep(&ts0, NULL);
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    atomic_store(&gate_open, 1);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* a kernel that does nothing */
static cask_status empty_task(cask_task_ctx *ctx)
{
    (void)ctx;
    return CASK_OK;
}

Test(subflow, bad_spawns_are_refused)
{
    cask_runtime *rt = start_runtime(1, 0);
    cask_kernel *k = kernel(rt, "k", empty_task);
    cask_task_desc td = { .kernel = k };
    cr_assert_eq(cask_task_spawn(NULL, &td, 0, NULL), CASK_ERR_INVALID);
    cr_assert_null(cask_task_scratch(NULL, 8));
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* ---- a child's handle after its kernel returned ---- */

static cask_kernel *leaf_k;
static cask_task *kept_kids[2];
/* spawns two children and keeps their handles; fails when its argument says so */
static cask_status keeping_parent(cask_task_ctx *ctx)
{
    cask_task_desc td = { .kernel = leaf_k };
    for (int i = 0; i < 2; i++) {
        cask_status st = cask_task_spawn(ctx, &td, 0, &kept_kids[i]);
        if (st)
            return st;
    }
    return arg_int(ctx) ? cask_task_fail(ctx, "parent gives up") : CASK_OK;
}

/* Children run once per run of their parent and are no part of the graph: once their
 * kernel returned, an edge naming one (by cask_task_depend or in a task's deps) would
 * hold a static task for a task that never runs again, so both refuse it, whether the
 * children ran or were dropped with their failed parent; and the graph still runs. */
static void kids_after_their_kernel(int fail)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    leaf_k = kernel(rt, "leaf", empty_task);
    cask_kernel *par = kernel(rt, "parent", keeping_parent);
    cask_task_desc pd = { .field_mask = CASK_TASK_ARGS, .kernel = par, .args = &fail,
                          .args_size = sizeof fail };
    cask_task *p, *s;
    cr_assert_eq(cask_graph_add_task(g, &pd, &p), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &(cask_task_desc){ .kernel = leaf_k }, &s), CASK_OK);
    kept_kids[0] = kept_kids[1] = NULL;
    cr_assert_eq(cask_graph_compute(g), fail ? CASK_ERR_TASK_FAILED : CASK_OK);
    cask_task *a = kept_kids[0], *b = kept_kids[1];
    cr_assert(a && b);
    cr_assert_eq(cask_task_depend(s, a), CASK_ERR_INVALID);
    cr_assert_eq(cask_task_depend(a, s), CASK_ERR_INVALID);
    cr_assert_eq(cask_task_depend(b, a), CASK_ERR_INVALID);
    cr_assert_eq(cask_task_depend(s, p), CASK_OK);
    cask_task_desc dd = { .field_mask = CASK_TASK_DEPS, .kernel = leaf_k, .deps = &a,
                          .ndeps = 1 };
    cr_assert_eq(cask_graph_add_task(g, &dd, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_graph_compute(g), fail ? CASK_ERR_TASK_FAILED : CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

Test(subflow, a_childs_handle_after_its_kernel_returned_takes_no_edge, .timeout = 60)
{
    kids_after_their_kernel(0);
    kids_after_their_kernel(1);
}
