/* tests/test_data_evict.c: simulated GPUs with a tiny memory limit: eviction and spills
 * to the host lose no data, on two GPUs and on one. Suite data runs in `meson test
 * --suite unit`, data_stress in `--suite stress`. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "cask/cask.h"
#include "data_helpers.h"
#include "test_helpers.h"

TestSuite(data, .fini = leak_check, .timeout = 120);
TestSuite(data_stress, .fini = leak_check, .timeout = 600);

/* ---- simulated GPUs: a tiny memory forces eviction and spills ---- */

#define CHUNKS 32
#define CHUNK_BYTES 8192
#define CHUNK_WORDS (CHUNK_BYTES / sizeof(int64_t))

/* [0] W: chunk c gets c * 1e6 + word index. arg: c */
static cask_status chunk_fill_k(cask_task_ctx *ctx)
{
    int c = arg_int(ctx);
    int64_t *w = cask_task_buffer(ctx, 0);
    for (size_t i = 0; i < CHUNK_WORDS; i++)
        w[i] = (int64_t)c * 1000000 + (int64_t)i;
    return CASK_OK;
}

/* [0] RW: += 1 */
static cask_status chunk_inc_k(cask_task_ctx *ctx)
{
    int64_t *w = cask_task_buffer(ctx, 0);
    for (size_t i = 0; i < CHUNK_WORDS; i++)
        w[i] += 1;
    return CASK_OK;
}

/* [0] R, [1] W (one int64): sum */
static cask_status chunk_sum_k(cask_task_ctx *ctx)
{
    const int64_t *w = cask_task_buffer(ctx, 0);
    int64_t s = 0;
    for (size_t i = 0; i < CHUNK_WORDS; i++)
        s += w[i];
    *(int64_t *)cask_task_buffer(ctx, 1) = s;
    return CASK_OK;
}

static void small_gpu_memory(int nsim, int rounds)
{
    cask_runtime *rt = start_sim(2, nsim, 64 * 1024);
    cask_kernel *fillk = dual_kernel(rt, "chunk_fill", chunk_fill_k);
    cask_kernel *inck = dual_kernel(rt, "chunk_inc", chunk_inc_k);
    cask_kernel *sumk = dual_kernel(rt, "chunk_sum", chunk_sum_k);
    int64_t *host = calloc(CHUNKS, CHUNK_BYTES);
    int64_t sums_host[CHUNKS];
    cask_data *chunk[CHUNKS], *sum[CHUNKS];
    for (int c = 0; c < CHUNKS; c++) {
        cr_assert_eq(cask_data_register(rt, host + c * CHUNK_WORDS, CHUNK_BYTES, &chunk[c]),
                     CASK_OK);
        cr_assert_eq(cask_data_register(rt, &sums_host[c], sizeof sums_host[c], &sum[c]),
                     CASK_OK);
    }
    cr_assert_eq(cask_runtime_stats_reset(rt), CASK_OK);
    cask_graph *g = graph(rt);
    for (int c = 0; c < CHUNKS; c++) {
        cask_access w = { chunk[c], CASK_WRITE };
        add_on(g, fillk, c % nsim, c, &w, 1);
    }
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < CHUNKS; c++) {
            cask_access rw = { chunk[c], CASK_RW };
            add_on(g, inck, (c + r + 1) % nsim, c, &rw, 1);
        }
    for (int c = 0; c < CHUNKS; c++) {
        cask_access acc[2] = { { chunk[c], CASK_READ }, { sum[c], CASK_WRITE } };
        add_on(g, sumk, (c + 1) % nsim, c, acc, 2);
    }
    compute_ok(g);
    totals t = stats_total(rt);
    cr_assert_gt(t.evictions + t.spills, 0, "256 KiB went through 64 KiB GPUs with no "
                 "eviction");
    cr_assert_gt(t.spills, 0, "dirty replicas were dropped without a spill (or not counted)");
    for (int c = 0; c < CHUNKS; c++) {
        int64_t *w;
        cr_assert_eq(cask_data_acquire(chunk[c], CASK_READ, (void **)&w), CASK_OK);
        int64_t want_sum = 0;
        for (size_t i = 0; i < CHUNK_WORDS; i++) {
            int64_t want = (int64_t)c * 1000000 + (int64_t)i + rounds;
            cr_assert_eq(w[i], want, "chunk %d word %zu: %lld, want %lld", c, i,
                         (long long)w[i], (long long)want);
            want_sum += want;
        }
        cr_assert_eq(cask_data_release(chunk[c]), CASK_OK);
        int64_t *s;
        cr_assert_eq(cask_data_acquire(sum[c], CASK_READ, (void **)&s), CASK_OK);
        cr_assert_eq(*s, want_sum, "sum of chunk %d", c);
        cr_assert_eq(cask_data_release(sum[c]), CASK_OK);
    }
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    for (int c = 0; c < CHUNKS; c++) {
        cr_assert_eq(cask_data_destroy(chunk[c]), CASK_OK);
        cr_assert_eq(cask_data_destroy(sum[c]), CASK_OK);
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    free(host);
}

Test(data, tiny_gpu_memory_evicts_and_spills_without_losing_data)
{
    small_gpu_memory(2, 2);
}

Test(data, tiny_memory_of_one_gpu_evicts_and_spills_without_losing_data)
{
    small_gpu_memory(1, 1);
}

Test(data_stress, tiny_gpu_memory_over_many_rounds)
{
    small_gpu_memory(2, 50);
}
