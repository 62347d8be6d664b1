#!/usr/bin/env python3
"""bench/bcd_reps.py: tabulates the repetitions bench/bcd_ab.sh logged (BENCH_REP_LOG) in
OUT/bcd_reps.txt: per shape, API and build, build + destroy ns per task over every
repetition of every round: the median, the 10th and 90th percentiles, the share of
repetitions at most LIMIT ns (default 40), and the median core clock measured after them.
The GPU machine's host slows whole stretches of repetitions (its cores are shared), at a
steady clock: the low percentile is the code's cost, the spread is the host's.
    python3 bench/bcd_reps.py bcd_reps.txt [LIMIT]"""
import collections
import statistics as st
import sys

limit = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
v = collections.defaultdict(list)
clk = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 9 or f[5] != "build_destroy_ns":
        continue   # bin round shape api rep build_destroy_ns X clock_ghz Y ...
    key = (f[2], f[3], f[0])
    v[key].append(float(f[6]))
    clk[key].append(float(f[8]))
pct = lambda a, q: sorted(a)[min(len(a) - 1, int(q * len(a)))]
print("| shape | API | build | reps | median | p10 | p90 | <= %g ns | clock GHz |" % limit)
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
order = {"independent": 0, "fanout": 1, "chains": 2, "random": 3}
for key in sorted(v, key=lambda k: (order.get(k[0], 9), k[1], k[2])):
    a = v[key]
    ok = sum(x <= limit for x in a) / len(a)
    print("| %s | %s | %s | %d | %.1f | %.1f | %.1f | %.0f%% | %.2f |" %
          (key[0], key[1], key[2], len(a), st.median(a), pct(a, 0.1), pct(a, 0.9), 100 * ok,
           st.median(clk[key])))
