/* tests/test_stats_print.c: the statistics table printed at shutdown (CASK_STATS=1) has a
 * row per worker, a subtotal per worker kind and a total, with the numbers in them, and
 * a line for the host chunk pool. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/stats_print.h"

/* The table for stats[0..n-1], as one string (caller frees). */
static char *table(const cask_worker_stats *stats, int n, double wall_s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    stats_print(f, stats, n, wall_s);
    fclose(f);
    return buf;
}

/* The line of text that starts with label (a copy, caller frees), or NULL. */
static char *line_of(const char *text, const char *label)
{
    size_t n = strlen(label);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (!strncmp(p, label, n) && p[n] == ' ') {
            const char *e = strchr(p, '\n');
            return strndup(p, e ? (size_t)(e - p) : strlen(p));
        }
    }
    return NULL;
}

static const cask_worker_stats two_cpus_one_gpu[3] = {
    { .kind = 0, .device = -1, .tasks_run = 100, .steals = 3, .steal_attempts = 10,
      .busy_ns = 1500000000ull, .idle_ns = 500000000ull },
    { .kind = 0, .device = -1, .tasks_run = 50, .steals = 7, .steal_attempts = 20,
      .busy_ns = 500000000ull, .idle_ns = 1500000000ull },
    { .kind = 1, .device = 0, .tasks_run = 25, .busy_ns = 1000000000ull, .idle_ns = 1000000000ull,
      .bytes_h2d = 3ull << 30, .bytes_d2h = 1536ull << 10, .bytes_peer = 512,
      .evictions = 4, .spills = 2 },
};

Test(stats_print, has_a_header_a_row_per_worker_subtotals_and_a_total)
{
    char *t = table(two_cpus_one_gpu, 3, 2.0);
    const char *labels[] = { "worker", "cpu 0", "cpu 1", "cpu all", "gpu 0", "gpu all", "total" };
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
        char *l = line_of(t, labels[i]);
        cr_assert_not_null(l, "no row \"%s\" in:\n%s", labels[i], t);
        free(l);
    }
    cr_assert_not_null(strstr(t, "3 workers, wall 2.000 s"), "%s", t);
    free(t);
}

Test(stats_print, rows_show_busy_idle_percent_tasks_and_steals)
{
    char *t = table(two_cpus_one_gpu, 3, 2.0);
    char *cpu0 = line_of(t, "cpu 0"), *cpu_all = line_of(t, "cpu all"), *total = line_of(t, "total");
    char label[16], busy[16], idle[16], steals[32];
    unsigned long long tasks;
    cr_assert_eq(sscanf(cpu0, "cpu 0 %15s %15s %llu %31s", busy, idle, &tasks, steals), 4);
    cr_assert_str_eq(busy, "75.0");
    cr_assert_str_eq(idle, "25.0");
    cr_assert_eq(tasks, 100);
    cr_assert_str_eq(steals, "3/10");
    /* subtotal: (1.5 + 0.5) s busy over 2 workers x 2 s */
    cr_assert_eq(sscanf(cpu_all, "cpu all %15s %15s %llu %31s", busy, idle, &tasks, steals), 4);
    cr_assert_str_eq(busy, "50.0");
    cr_assert_eq(tasks, 150);
    cr_assert_str_eq(steals, "10/30");
    cr_assert_eq(sscanf(total, "%15s %15s %15s %llu", label, busy, idle, &tasks), 4);
    cr_assert_str_eq(busy, "50.0");
    cr_assert_eq(tasks, 175);
    free(cpu0);
    free(cpu_all);
    free(total);
    free(t);
}

Test(stats_print, bytes_are_in_human_units_with_evictions_and_spills)
{
    char *t = table(two_cpus_one_gpu, 3, 2.0);
    char *gpu = line_of(t, "gpu 0");
    cr_assert_not_null(strstr(gpu, "3.0 GiB"), "%s", gpu);
    cr_assert_not_null(strstr(gpu, "1.5 MiB"), "%s", gpu);
    cr_assert_not_null(strstr(gpu, "512 B"), "%s", gpu);
    unsigned long long evict, spill;
    const char *end = gpu + strlen(gpu);
    while (end > gpu && end[-1] != ' ')
        end--;
    spill = strtoull(end, NULL, 10);
    while (end > gpu && end[-1] == ' ')
        end--;
    while (end > gpu && end[-1] != ' ')
        end--;
    evict = strtoull(end, NULL, 10);
    cr_assert(evict == 4 && spill == 2, "evictions/spills wrong in: %s", gpu);
    free(gpu);
    free(t);
}

Test(stats_print, human_bytes_picks_the_unit)
{
    char b[32];
    cr_assert_str_eq(stats_human_bytes(0, b, sizeof b), "0 B");
    cr_assert_str_eq(stats_human_bytes(1023, b, sizeof b), "1023 B");
    cr_assert_str_eq(stats_human_bytes(1024, b, sizeof b), "1.0 KiB");
    cr_assert_str_eq(stats_human_bytes((1ull << 20) - 1, b, sizeof b), "1.0 MiB");
    cr_assert_str_eq(stats_human_bytes(5ull << 40, b, sizeof b), "5.0 TiB");
    cr_assert_str_eq(stats_human_bytes(UINT64_MAX, b, sizeof b), "16.0 EiB");
}

Test(stats_print, zero_wall_time_or_no_workers_do_not_divide_by_zero)
{
    char *t = table(two_cpus_one_gpu, 3, 0.0);
    char *cpu0 = line_of(t, "cpu 0");
    char busy[16], idle[16];
    cr_assert_eq(sscanf(cpu0, "cpu 0 %15s %15s", busy, idle), 2);
    cr_assert_str_eq(busy, "-");
    free(cpu0);
    free(t);
    t = table(NULL, 0, 1.0);
    char *total = line_of(t, "total");
    cr_assert_not_null(total, "%s", t);
    free(total);
    free(t);
}

/* The host pool's line, as one string (caller frees). */
static char *pool_line(const cask_host_cache_stats *hc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    stats_print_host_pool(f, hc);
    fclose(f);
    return buf;
}

Test(stats_print, host_pool_line_shows_cached_in_use_pinned_parts_and_hits)
{
    const cask_host_cache_stats hc = {
        .limit = 6ull << 30,
        .pageable_cached = 48ull << 20, .pinned_cached = 16ull << 20,
        .pageable_live = 3ull << 20, .pinned_live = 1ull << 20,
        .pageable_peak = 64ull << 20, .pinned_peak = 32ull << 20,
        .hits = 120, .misses = 8,
    };
    char *t = pool_line(&hc);
    char *l = line_of(t, "host pool");
    cr_assert_not_null(l, "no \"host pool\" line in:\n%s", t);
    cr_assert_not_null(strstr(l, "cached 64.0 MiB (pinned 16.0 MiB)"), "%s", l);
    cr_assert_not_null(strstr(l, "in use 4.0 MiB (pinned 1.0 MiB)"), "%s", l);
    cr_assert_not_null(strstr(l, "peak 96.0 MiB (pinned 32.0 MiB)"), "%s", l);
    cr_assert_not_null(strstr(l, "limit 6.0 GiB"), "%s", l);
    cr_assert_not_null(strstr(l, "hits 120, misses 8 (93.8% hit)"), "%s", l);
    cr_assert_eq(strchr(t, '\n'), t + strlen(t) - 1, "one line: %s", t);
    free(l);
    free(t);
}

Test(stats_print, host_pool_line_without_requests_has_no_rate)
{
    const cask_host_cache_stats hc = { .limit = 1ull << 30 };
    char *t = pool_line(&hc);
    cr_assert_not_null(strstr(t, "cached 0 B (pinned 0 B), in use 0 B (pinned 0 B)"), "%s", t);
    cr_assert_not_null(strstr(t, "hits 0, misses 0\n"), "%s", t);
    free(t);
    t = pool_line(NULL);
    cr_assert(!t || !*t, "NULL prints nothing: %s", t);
    free(t);
}
