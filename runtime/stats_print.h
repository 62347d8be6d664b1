/* runtime/stats_print.h: the per-worker statistics table cask prints at shutdown when
 * CASK_STATS=1 (see docs/observability.md). */
#ifndef CASK_RUNTIME_STATS_PRINT_H
#define CASK_RUNTIME_STATS_PRINT_H

#include <stdio.h>
#include "cask/runtime.h"

/* Prints to out a table of workers stats[0..n-1] (CPU workers, then GPU workers, as
 * cask_runtime_stats returns them): one row per worker, a subtotal row per worker kind
 * ("cpu all", "gpu all") and a "total" row. Columns: busy and idle time as % of wall_s
 * (for subtotals, % of wall_s times the number of workers), tasks run, steals/steal
 * attempts, bytes copied host->device, device->host and peer (human units, powers of
 * 1024), evictions and spills. wall_s <= 0 prints "-" for the percentages. Does nothing
 * if out is NULL; stats may be NULL only if n is 0. Not thread safe with respect to out. */
void stats_print(FILE *out, const cask_worker_stats *stats, int n, double wall_s);

/* Prints to out the line of the runtime's host chunk pool (cask_host_cache_stats):
 * "host pool" then the bytes kept for reuse, in use now and at the peak, each with its
 * pinned part in parentheses, the limit, and the requests met from kept blocks (hits)
 * and from the system (misses), with the hit rate:
 *   host pool  cached 64.0 MiB (pinned 16.0 MiB), in use 0 B (pinned 0 B),
 *   peak 96.0 MiB (pinned 32.0 MiB), limit 6.0 GiB, hits 120, misses 8 (93.8% hit)
 * (one line). Does nothing if out or hc is NULL. */
void stats_print_host_pool(FILE *out, const cask_host_cache_stats *hc);

/* Writes bytes in human units ("512 B", "1.5 KiB", "3.0 GiB") into buf (NUL-terminated,
 * truncated to len). Returns buf. */
char *stats_human_bytes(uint64_t bytes, char *buf, size_t len);

#endif
