/* tests/array_fixture.h: the CPU runtime and array context of the array tests
 * (test_array.c, test_array_reduce.c), and helpers that assert as they go. */
#ifndef CASK_TESTS_ARRAY_FIXTURE_H
#define CASK_TESTS_ARRAY_FIXTURE_H

#include <criterion/criterion.h>
#include "array_ref.h"
#include "test_helpers.h"

static cask_runtime *rt;
static cask_array_ctx *ctx;

static inline void start(int ncpu)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_BIND;
    cfg.ncpu = ncpu;
    cfg.ngpu = 0;
    cfg.bind = 0;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
}
static inline void up(void) { start(2); }
static inline void down(void)
{
    cask_array_ctx_destroy(ctx);
    cask_shutdown(rt);
    ctx = NULL;
    rt = NULL;
    leak_check();
}

/* Computes a into a new buffer (asserting success). */
static inline void *run(cask_array *a)
{
    cask_array_meta m;
    cask_array_get_meta(a, &m);
    size_t bytes = (size_t)m.size * cask_dtype_size(m.dtype);
    void *out = malloc(bytes + 8);
    cask_status st = cask_array_compute(a, out, bytes);
    cr_assert_eq(st, CASK_OK, "compute: %s: %s", cask_status_string(st), cask_array_ctx_error(ctx));
    return out;
}

static inline cask_array *host(const void *p, cask_dtype dt, int nd, const int64_t *shape,
                        const int64_t *chunks)
{
    cask_array *a;
    cr_assert_eq(cask_array_from_host(ctx, p, dt, nd, shape, chunks, &a), CASK_OK);
    return a;
}

/* Bitwise equal, NaN equal to NaN. */
static inline int same(double a, double b) { return (a != a && b != b) || a == b; }

#endif
