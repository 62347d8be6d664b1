#!/usr/bin/env python3
"""bench/bcd_reps.py: tabulates the repetitions bench/bcd_ab.sh logged (BENCH_REP_LOG) in
OUT/bcd_reps.txt: per shape, API and build, build + destroy ns per task over every
repetition of every round: the median, the 10th and 90th percentiles, the share of
repetitions at most LIMIT ns (default 40), the median core clock and core_ipc (independent
adds per cycle the thread got, bench/common/clock.h) measured after them. Where the log
has core_ipc, a second table splits the repetitions by it: at least 0.8 of the run's 90th
percentile ("whole core"), or below ("shared core": a busy hyperthread sibling, another
guest's, took part of the core). The GPU machine's host slows whole stretches of
repetitions at a steady clock: the low percentile is the code's cost, the spread is the
host's.
    python3 bench/bcd_reps.py bcd_reps.txt [LIMIT]"""
import collections
import statistics as st
import sys

limit = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
v = collections.defaultdict(list)
clk = collections.defaultdict(list)
ipc = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 9 or f[5] != "build_destroy_ns":
        continue   # bin round shape api rep build_destroy_ns X clock_ghz Y minflt Z [core_ipc W]
    key = (f[2], f[3], f[0])
    v[key].append(float(f[6]))
    clk[key].append(float(f[8]))
    ipc[key].append(float(f[12]) if len(f) > 12 and f[11] == "core_ipc" else None)
pct = lambda a, q: sorted(a)[min(len(a) - 1, int(q * len(a)))]
order = {"independent": 0, "fanout": 1, "chains": 2, "random": 3}
keys = sorted(v, key=lambda k: (order.get(k[0], 9), k[1], k[2]))


def row(key, a, extra=""):
    ok = sum(x <= limit for x in a) / len(a)
    return "| %s | %s | %s |%s %d | %.1f | %.1f | %.1f | %.0f%% |" % (
        key[0], key[1], key[2], extra, len(a), st.median(a), pct(a, 0.1), pct(a, 0.9), 100 * ok)


print("| shape | API | build | reps | median | p10 | p90 | <= %g ns | clock GHz | core_ipc |" % limit)
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
for key in keys:
    ii = [x for x in ipc[key] if x is not None]
    print(row(key, v[key]) + " %.2f | %s |" % (st.median(clk[key]),
                                               "%.2f" % st.median(ii) if ii else "-"))
all_ipc = [x for k in keys for x in ipc[k] if x is not None]
if all_ipc:
    cut = 0.8 * pct(all_ipc, 0.9)
    print("\nBy core_ipc (whole core: at least %.2f adds per cycle, 0.8 of the 90th percentile)\n" % cut)
    print("| shape | API | build | core | reps | median | p10 | p90 | <= %g ns |" % limit)
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    for key in keys:
        for name, keep in (("whole", lambda x: x >= cut), ("shared", lambda x: x < cut)):
            a = [t for t, x in zip(v[key], ipc[key]) if x is not None and keep(x)]
            if a:
                print(row(key, a, " %s |" % name))
