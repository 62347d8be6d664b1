/* tests/dist/test_dist_write.c: results written where they are computed, as SPMD programs
 * (under tests/dist/run.sh):
 *
 *   test_dist_write allreduce          cask_dist_allreduce: min, max, sum and or of values
 *                                      every rank knows, on every rank alike
 *   test_dist_write array MODE DIR     cask_array_to_npy of arrays of 1, 2 and 3 axes
 *                                      (ragged chunks, fused expressions, a 0-d one)
 *                                      across the ranks with --write-mode MODE (auto,
 *                                      inplace, gather): the bytes one process writes
 *                                      (the last rank writes that file from a context
 *                                      of its own first), no temporary file left
 *   test_dist_write arraykill DIR      (under --survivors NP-1, with
 *                                      CASK_DIST_TEST_KILL_WRITE set for a rank but the
 *                                      last) the same in place while a rank dies writing
 *                                      its slabs: the survivors compute and write them,
 *                                      and every file is one process's bytes
 */
#include <dirent.h>

#include "cask/cask.h"
#include "dist_test.h"

static cask_status make(cask_array_ctx *ctx, int which, cask_array **out)
{
    cask_array *r = NULL, *b = NULL;
    cask_status st;
    switch (which) {
    case 0: {   /* 1-D, ragged: 1000 in chunks of 64 */
        int64_t shape[1] = {1000}, ch[1] = {64};
        st = cask_array_random_uniform(ctx, CASK_FLOAT64, 1, shape, ch, 7, -1, 1, &r);
        if (!st)
            st = cask_array_binary_scalar(CASK_MUL, r, 3.0, 0, out);
        break;
    }
    case 1: {   /* 2-D, chunked along both axes, a fused chain */
        int64_t shape[2] = {301, 37}, ch[2] = {40, 16};
        st = cask_array_random_normal(ctx, CASK_FLOAT32, 2, shape, ch, 11, 0, 1, &r);
        if (!st)
            st = cask_array_unary(CASK_SQUARE, r, &b);
        if (!st)
            st = cask_array_binary_scalar(CASK_ADD, b, 1.5, 0, out);
        break;
    }
    case 2: {   /* 3-D integers, one chunk along the first axis */
        int64_t shape[3] = {5, 9, 4}, ch[3] = {8, 4, 4};
        st = cask_array_full(ctx, CASK_INT64, 3, shape, ch, 42, out);
        break;
    }
    default: {   /* 0-d: the sum of the 1-D one */
        cask_array *a;
        st = make(ctx, 0, &a);
        if (!st)
            st = cask_array_reduce(CASK_REDUCE_SUM, a, CASK_AXIS_ALL, out);
        cask_array_release(a);
        break;
    }
    }
    cask_array_release(r);
    cask_array_release(b);
    return st;
}

enum { NARRAYS = 4 };

static int same_file(const char *a, const char *b)
{
    FILE *x = fopen(a, "rb"), *y = fopen(b, "rb");
    int same = x && y;
    while (same) {
        int c = fgetc(x), d = fgetc(y);
        same = c == d;
        if (c == EOF)
            break;
    }
    if (x) fclose(x);
    if (y) fclose(y);
    return same;
}

/* No PATH.tmp.* left in dir. */
static int temp_left(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int left = 0;
    while (d && (e = readdir(d)))
        left |= strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return left;
}

/* The one-process bytes of the arrays, into DIR/one<i>.npy. */
static void reference(cask_runtime *rt, const char *dir)
{
    cask_array_ctx *ctx;
    CHECK_OK(cask_array_ctx_create(rt, &ctx), "ctx");
    for (int i = 0; i < NARRAYS; i++) {
        cask_array *a;
        char path[4096];
        snprintf(path, sizeof path, "%s/one%d.npy", dir, i);
        CHECK_OK(make(ctx, i, &a), "array %d", i);
        CHECK_OK(cask_array_to_npy(a, path), "one process: %s", cask_array_ctx_error(ctx));
        cask_array_release(a);
    }
    cask_array_ctx_destroy(ctx);
}

/* Every array across the ranks into DIR/many<i>.npy, compared with DIR/one<i>.npy,
 * which the last rank writes first (every rank compares: any may be lost). */
static void arrays(cask_runtime *rt, cask_dist *dist, cask_dist_write_mode mode, const char *dir)
{
    if (cask_dist_rank(dist) == cask_dist_size(dist) - 1)
        reference(rt, dir);
    cask_array_ctx *ctx;
    CHECK_OK(cask_array_ctx_create(rt, &ctx), "ctx");
    CHECK_OK(cask_array_ctx_set_dist(ctx, dist, mode), "set_dist");
    for (int i = 0; i < NARRAYS; i++) {
        cask_array *a;
        char path[4096], one[4096];
        snprintf(path, sizeof path, "%s/many%d.npy", dir, i);
        snprintf(one, sizeof one, "%s/one%d.npy", dir, i);
        CHECK_OK(make(ctx, i, &a), "array %d", i);
        CHECK_OK(cask_array_to_npy(a, path), "array %d: %s", i, cask_array_ctx_error(ctx));
        CHECK(same_file(one, path), "array %d: %s differs from %s", i, path, one);
        cask_array_release(a);
    }
    CHECK(!temp_left(dir), "a temporary file was left in %s", dir);
    cask_array_ctx_destroy(ctx);
}

static void allreduce(cask_dist *dist)
{
    int me = cask_dist_rank(dist), P = cask_dist_size(dist);
    const cask_dist_op ops[] = {CASK_DIST_MIN, CASK_DIST_MAX, CASK_DIST_SUM, CASK_DIST_BOR};
    for (int o = 0; o < 4; o++) {
        int64_t v[3] = {100 - me, (int64_t)1 << (me % 63), me == P - 1 ? INT64_MIN : me};
        CHECK_OK(cask_dist_allreduce(dist, v, 3, ops[o]), "allreduce %d: %s", o,
                 cask_dist_error(dist));
        int64_t want[3] = {0, 0, 0};
        for (int r = 0; r < P; r++) {
            int64_t x[3] = {100 - r, (int64_t)1 << (r % 63), r == P - 1 ? INT64_MIN : r};
            for (int k = 0; k < 3; k++) {
                if (r == 0)
                    want[k] = x[k];
                else if (ops[o] == CASK_DIST_MIN)
                    want[k] = x[k] < want[k] ? x[k] : want[k];
                else if (ops[o] == CASK_DIST_MAX)
                    want[k] = x[k] > want[k] ? x[k] : want[k];
                else if (ops[o] == CASK_DIST_SUM)
                    want[k] = (int64_t)((uint64_t)want[k] + (uint64_t)x[k]);
                else
                    want[k] |= x[k];
            }
        }
        for (int k = 0; k < 3; k++)
            CHECK(v[k] == want[k], "op %d value %d: %lld, want %lld", o, k, (long long)v[k],
                  (long long)want[k]);
    }
    CHECK(cask_dist_allreduce(dist, NULL, 1, CASK_DIST_MIN) == CASK_ERR_INVALID, "NULL values");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *what = argv[1];
    cask_runtime *rt;
    cask_dist *dist;
    CHECK_OK(cask_init(NULL, &rt), "cask_init");
    CHECK_OK(cask_dist_init(rt, NULL, &dist), "cask_dist_init");
    int me = dt_rank_ = cask_dist_rank(dist);
    if (!strcmp(what, "allreduce")) {
        allreduce(dist);
    } else if (!strcmp(what, "array") && argc == 4) {
        cask_dist_write_mode mode;
        CHECK_OK(cask_dist_write_mode_parse(argv[2], &mode), "mode %s", argv[2]);
        arrays(rt, dist, mode, argv[3]);
    } else if (!strcmp(what, "arraykill") && argc == 3) {
        arrays(rt, dist, CASK_DIST_WRITE_IN_PLACE, argv[2]);
        dt_report_survivor(me);
    } else {
        fprintf(stderr, "usage: test_dist_write allreduce | array MODE DIR | arraykill DIR\n");
        return 2;
    }
    CHECK_OK(cask_dist_finalize(dist), "finalize");
    cask_shutdown(rt);
    fprintf(stderr, "[rank %d] %s: ok\n", me, what);
    return 0;
}
