/* runtime/stats_print.c: formats the per-worker statistics table (stats_print.h). Kept
 * apart from the runtime so that the format can be tested without starting workers. */
#include "runtime/stats_print.h"

#include <inttypes.h>
#include <string.h>

char *stats_human_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (!buf || !len)
        return buf;
    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    /* 1023.96 KiB would print as "1024.0 KiB": go up one unit instead. */
    if (v >= 1023.95 && u < 6) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

static const char *kind_name(int kind)
{
    return kind == 0 ? "cpu" : kind == 1 ? "gpu" : "other";
}

/* Sums of one group of workers, and how many they are. */
typedef struct stats_sum {
    cask_worker_stats s;
    int n;
} stats_sum;

static void add(stats_sum *sum, const cask_worker_stats *w)
{
    sum->s.tasks_run += w->tasks_run;
    sum->s.steals += w->steals;
    sum->s.steal_attempts += w->steal_attempts;
    sum->s.busy_ns += w->busy_ns;
    sum->s.idle_ns += w->idle_ns;
    sum->s.bytes_h2d += w->bytes_h2d;
    sum->s.bytes_d2h += w->bytes_d2h;
    sum->s.bytes_peer += w->bytes_peer;
    sum->s.evictions += w->evictions;
    sum->s.spills += w->spills;
    sum->n++;
}

static void pct(char *buf, size_t len, uint64_t ns, double wall_s, int nworkers)
{
    if (wall_s <= 0 || nworkers <= 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f", 100.0 * (double)ns * 1e-9 / (wall_s * nworkers));
}

static void row(FILE *out, const char *label, const cask_worker_stats *w, int nworkers,
                double wall_s)
{
    char busy[16], idle[16], steals[48], h2d[16], d2h[16], peer[16];
    pct(busy, sizeof busy, w->busy_ns, wall_s, nworkers);
    pct(idle, sizeof idle, w->idle_ns, wall_s, nworkers);
    snprintf(steals, sizeof steals, "%" PRIu64 "/%" PRIu64, w->steals, w->steal_attempts);
    fprintf(out, "%-10s %6s %6s %12" PRIu64 " %17s %10s %10s %10s %8" PRIu64 " %8" PRIu64 "\n",
            label, busy, idle, w->tasks_run, steals,
            stats_human_bytes(w->bytes_h2d, h2d, sizeof h2d),
            stats_human_bytes(w->bytes_d2h, d2h, sizeof d2h),
            stats_human_bytes(w->bytes_peer, peer, sizeof peer), w->evictions, w->spills);
}

void stats_print(FILE *out, const cask_worker_stats *stats, int n, double wall_s)
{
    if (!out || n < 0 || (n > 0 && !stats))
        return;
    stats_sum kinds[3], total;
    memset(kinds, 0, sizeof kinds);
    memset(&total, 0, sizeof total);

    fprintf(out, "cask statistics: %d workers, wall %.3f s\n", n, wall_s);
    fprintf(out, "%-10s %6s %6s %12s %17s %10s %10s %10s %8s %8s\n", "worker", "busy%",
            "idle%", "tasks", "steals/attempts", "H2D", "D2H", "peer", "evict", "spill");
    /* Rows grouped by kind in a fixed order (cpu, gpu, other) whatever the input order. */
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < n; i++) {
            int kind = stats[i].kind == 0 || stats[i].kind == 1 ? stats[i].kind : 2;
            if (kind != k)
                continue;
            char label[32];
            int id = k == 1 && stats[i].device >= 0 ? stats[i].device : kinds[k].n;
            snprintf(label, sizeof label, "%s %d", kind_name(k), id);
            row(out, label, &stats[i], 1, wall_s);
            add(&kinds[k], &stats[i]);
            add(&total, &stats[i]);
        }
        if (kinds[k].n) {
            char label[32];
            snprintf(label, sizeof label, "%s all", kind_name(k));
            row(out, label, &kinds[k].s, kinds[k].n, wall_s);
        }
    }
    row(out, "total", &total.s, total.n, wall_s);
}

void stats_print_host_pool(FILE *out, const cask_host_cache_stats *hc)
{
    if (!out || !hc)
        return;
    char cached[16], cpin[16], live[16], lpin[16], peak[16], ppin[16], limit[16], rate[32];
    uint64_t req = hc->hits + hc->misses;
    if (req)
        snprintf(rate, sizeof rate, " (%.1f%% hit)", 100.0 * (double)hc->hits / (double)req);
    else
        rate[0] = 0;
    fprintf(out, "%-10s cached %s (pinned %s), in use %s (pinned %s), peak %s (pinned %s), "
                 "limit %s, hits %" PRIu64 ", misses %" PRIu64 "%s\n", "host pool",
            stats_human_bytes(hc->pageable_cached + hc->pinned_cached, cached, sizeof cached),
            stats_human_bytes(hc->pinned_cached, cpin, sizeof cpin),
            stats_human_bytes(hc->pageable_live + hc->pinned_live, live, sizeof live),
            stats_human_bytes(hc->pinned_live, lpin, sizeof lpin),
            stats_human_bytes(hc->pageable_peak + hc->pinned_peak, peak, sizeof peak),
            stats_human_bytes(hc->pinned_peak, ppin, sizeof ppin),
            stats_human_bytes(hc->limit, limit, sizeof limit), hc->hits, hc->misses, rate);
}
