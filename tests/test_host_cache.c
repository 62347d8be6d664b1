/* tests/test_host_cache.c: what cask_runtime_host_cache_stats says of the runtime's pool
 * of host chunk memory: bytes in use and kept for reuse, apart for pageable and pinned
 * blocks, their peaks, hits and misses, and that cask_runtime_host_cache agrees. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cask/cask.h"

#define MIB ((size_t)1 << 20)

/* ncpu CPU workers, nsim simulated GPUs (0: none), a pool that keeps up to limit bytes. */
static cask_runtime *start(int nsim, size_t limit)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS |
                     CASK_CONFIG_BIND | CASK_CONFIG_HOST_CACHE | CASK_CONFIG_HOST_MEM_LIMIT;
    cfg.ncpu = 2;
    cfg.ngpu = nsim ? -1 : 0;
    cfg.sim_gpus = nsim;
    cfg.bind = 0;
    cfg.host_cache_limit = limit;
    cfg.huge_pages = 1;
    cfg.host_mem_limit = 0;   /* chunks from the pool, not from the spilling layer */
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    if (nsim) {
        cask_runtime_info info;
        cr_assert_eq(cask_runtime_query(rt, &info), CASK_OK);
        if (!info.simulated_gpus) {
            cask_shutdown(rt);
            cr_skip_test("real GPUs in use: simulated-GPU test skipped");
        }
    }
    return rt;
}

static cask_host_cache_stats stats_of(cask_runtime *rt)
{
    cask_host_cache_stats s;
    memset(&s, 0xa5, sizeof s);
    cr_assert_eq(cask_runtime_host_cache_stats(rt, &s), CASK_OK);
    return s;
}

Test(host_cache, pageable_chunks_count_as_live_then_cached)
{
    cask_runtime *rt = start(0, 64 * MIB);
    cask_host_cache_stats s0 = stats_of(rt);
    cr_assert_eq(s0.limit, 64 * MIB);
    cr_assert_eq(s0.pageable_live + s0.pageable_cached + s0.pinned_live + s0.pinned_cached, 0);
    cr_assert_eq(s0.hits + s0.misses, 0);
    cask_data *a, *b;
    cr_assert_eq(cask_data_create(rt, 4 * MIB, &a), CASK_OK);   /* no GPU: allocated now */
    cr_assert_eq(cask_data_create(rt, 4 * MIB, &b), CASK_OK);
    cask_host_cache_stats s1 = stats_of(rt);
    cr_assert_eq(s1.pageable_live, 8 * MIB);
    cr_assert_eq(s1.pageable_cached, 0);
    cr_assert_eq(s1.pinned_live + s1.pinned_cached, 0, "no GPU: nothing pinned");
    cr_assert_eq(s1.misses, 2);
    cr_assert_eq(s1.hits, 0);
    cr_assert_eq(cask_data_destroy(a), CASK_OK);
    cask_host_cache_stats s2 = stats_of(rt);
    cr_assert_eq(s2.pageable_live, 4 * MIB);
    cr_assert_eq(s2.pageable_cached, 4 * MIB);
    cr_assert_eq(s2.pageable_peak, 8 * MIB);
    size_t cached = 0, limit = 0;
    cr_assert_eq(cask_runtime_host_cache(rt, &cached, &limit), CASK_OK);
    cr_assert_eq(cached, 4 * MIB);
    cr_assert_eq(limit, 64 * MIB);
    cr_assert_eq(cask_data_create(rt, 4 * MIB, &a), CASK_OK);   /* the kept block again */
    cask_host_cache_stats s3 = stats_of(rt);
    cr_assert_eq(s3.hits, 1);
    cr_assert_eq(s3.misses, 2);
    cr_assert_eq(s3.pageable_live, 8 * MIB);
    cr_assert_eq(s3.pageable_cached, 0);
    cr_assert_eq(cask_data_destroy(a), CASK_OK);
    cr_assert_eq(cask_data_destroy(b), CASK_OK);
    cr_assert_eq(cask_runtime_host_cache_trim(rt), CASK_OK);
    cask_host_cache_stats s4 = stats_of(rt);
    cr_assert_eq(s4.pageable_live + s4.pageable_cached, 0);
    cr_assert_eq(s4.pageable_peak, 8 * MIB, "a trim keeps the peak");
    cr_assert_eq(s4.hits, 1);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(host_cache, blocks_past_the_limit_are_not_kept)
{
    cask_runtime *rt = start(0, 6 * MIB);
    cask_data *a, *b;
    cr_assert_eq(cask_data_create(rt, 4 * MIB, &a), CASK_OK);
    cr_assert_eq(cask_data_create(rt, 4 * MIB, &b), CASK_OK);
    cr_assert_eq(cask_data_destroy(a), CASK_OK);
    cr_assert_eq(cask_data_destroy(b), CASK_OK);
    cask_host_cache_stats s = stats_of(rt);
    cr_assert_eq(s.pageable_cached, 4 * MIB, "a second block would pass 6 MiB");
    cr_assert_eq(s.pageable_live, 0);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static cask_status fill(cask_task_ctx *ctx)
{
    memset(cask_task_buffer(ctx, 0), 7, cask_task_buffer_size(ctx, 0));
    return CASK_OK;
}

static cask_status no_real_gpu(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "test kernel has no real CUDA implementation");
}

/* The host copy of a chunk a GPU wrote (written back) is pinned; freed, it is kept
 * apart from pageable blocks. */
Test(host_cache, host_copies_of_gpu_written_chunks_count_as_pinned)
{
    cask_runtime *rt = start(1, 64 * MIB);
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "fill", .cpu = fill, .cuda = no_real_gpu };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, 2 * MIB, &d), CASK_OK);
    cr_assert_eq(cask_data_set_writeback(d, 1), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_access acc = { d, CASK_WRITE };
    cask_task_desc td = { .field_mask = CASK_TASK_WHERE | CASK_TASK_DEVICE, .kernel = k,
                          .access = &acc, .naccess = 1, .where = CASK_WHERE_GPU, .device = 0 };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cask_graph_destroy(g);
    cask_host_cache_stats s = stats_of(rt);
    cr_assert_eq(s.pinned_live, 2 * MIB, "written back to a pinned host copy");
    cr_assert_eq(s.pageable_live, 0);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    s = stats_of(rt);
    cr_assert_eq(s.pinned_live, 0);
    cr_assert_eq(s.pinned_cached, 2 * MIB);
    cr_assert_eq(s.pinned_peak, 2 * MIB);
    cr_assert_eq(s.pageable_cached, 0);
    size_t cached = 0;
    cr_assert_eq(cask_runtime_host_cache(rt, &cached, NULL), CASK_OK);
    cr_assert_eq(cached, 2 * MIB, "cask_runtime_host_cache counts both kinds");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(host_cache, null_arguments_are_refused)
{
    cask_host_cache_stats s;
    cr_assert_eq(cask_runtime_host_cache_stats(NULL, &s), CASK_ERR_INVALID);
    cask_runtime *rt = start(0, MIB);
    cr_assert_eq(cask_runtime_host_cache_stats(rt, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* CASK_STATS=1 (config stats): the table at shutdown ends with the pool's line, read
 * before the handles still alive are freed. */
Test(host_cache, shutdown_statistics_have_a_host_pool_line)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_BIND |
                     CASK_CONFIG_HOST_CACHE | CASK_CONFIG_HOST_MEM_LIMIT | CASK_CONFIG_STATS;
    cfg.ncpu = 1;
    cfg.bind = 0;
    cfg.host_cache_limit = 64 * MIB;
    cfg.huge_pages = 1;
    cfg.stats = 1;
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_data *a, *b;
    cr_assert_eq(cask_data_create(rt, 2 * MIB, &a), CASK_OK);
    cr_assert_eq(cask_data_create(rt, 1 * MIB, &b), CASK_OK);
    cr_assert_eq(cask_data_destroy(a), CASK_OK);   /* b is left for shutdown to free */
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    cask_status st = cask_shutdown(rt);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    cr_assert_eq(st, CASK_OK);
    char text[8192];
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    text[n] = 0;
    fclose(tmp);
    const char *l = strstr(text, "\nhost pool ");
    cr_assert_not_null(l, "no host pool line in:\n%s", text);
    cr_assert_not_null(strstr(l, "cached 2.0 MiB (pinned 0 B), in use 1.0 MiB (pinned 0 B), "
                                 "peak 3.0 MiB (pinned 0 B), limit 64.0 MiB, hits 0, misses 2"),
                       "%s", l);
}
