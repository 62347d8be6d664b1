#!/usr/bin/env python3
"""bench/bcd_ab.py: tabulates bench/bcd_ab.sh's JSON lines. Per shape and API, build +
destroy ns per task of the base and the new build (median of the rounds, and their range),
the median of the per-round ratios new/base, and the same ratio for compute on a reused
graph (bench-sched's "reused" column: the compute path must not get slower).
    python3 bench/bcd_ab.py bcd_pinned.jsonl [BASE_SUBSTRING [NEW_SUBSTRING]]
NEW_SUBSTRING: with more than one new build (bcd_ab.sh's BCD_MORE), the one to compare."""
import collections
import json
import statistics as st
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
base_tag = sys.argv[2] if len(sys.argv) > 2 else "bcdbase"
if len(sys.argv) > 3:
    rows = [r for r in rows if base_tag in r["bin"] or sys.argv[3] in r["bin"]]
side = lambda r: "base" if base_tag in r["bin"] else "new"
shapes = ["independent", "fanout", "chains", "random"]
print("| shape | API | base | new | new/base (paired) | reused compute new/base |")
print("|---|---|---:|---:|---:|---:|")
for c in shapes:
    for impl in ["cask", "cask-deps", "floor-64", "floor-96", "floor-160"]:
        v = collections.defaultdict(list)
        pair = collections.defaultdict(dict)
        reuse = collections.defaultdict(dict)
        for r in rows:
            if r["case"] != c or r["impl"] != impl:
                continue
            x = r.get("build_destroy_ns", r.get("ns_per_task"))
            v[side(r)].append(x)
            pair[r["round"]][side(r)] = x
            if "reused_compute_ns" in r:
                reuse[r["round"]][side(r)] = r["reused_compute_ns"]
        if not v:
            continue
        cell = lambda s: "%.1f (%.1f-%.1f)" % (st.median(v[s]), min(v[s]), max(v[s])) if v[s] else "-"
        def ratio(d):
            q = [p["new"] / p["base"] for p in d.values() if "new" in p and "base" in p]
            return "%.2f" % st.median(q) if q else ""
        print("| %s | %s | %s | %s | %s | %s |" % (c, impl, cell("base"), cell("new"),
                                                   ratio(pair), ratio(reuse) if impl == "cask" else ""))
