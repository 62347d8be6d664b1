#!/usr/bin/env python3
"""bench/compute_ab.py: compute on a graph built once (bench-sched's default mode), base
against new, from JSON lines tagged with "bin" and "round" (as bench/bcd_ab.sh tags them).
Per shape and workers: cask's ns per task, median over the rounds, for each build; the
median of the per-round ratios new/base; and the same for cask/pthreads, which the
machine's load moves less (both ran in the same process, one after the other).
    python3 bench/compute_ab.py compute.jsonl [BASE_SUBSTRING]"""
import collections
import json
import statistics as st
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
base_tag = sys.argv[2] if len(sys.argv) > 2 else "bcdbase"
runs = collections.defaultdict(dict)   # (case, workers, round, side) -> impl -> ns
for r in rows:
    side = "base" if base_tag in r["bin"] else "new"
    runs[(r["case"], r["workers"], r["round"], side)][r["impl"]] = r["ns_per_task"]
print("| shape | workers | base ns/task | new ns/task | new/base | cask/pthreads base | new |")
print("|---|---:|---:|---:|---:|---:|---:|")
keys = sorted({(c, w) for (c, w, _, _) in runs})
for c, w in keys:
    rounds = sorted({r for (cc, ww, r, _) in runs if (cc, ww) == (c, w)})
    ns = {s: [runs[(c, w, r, s)]["cask"] for r in rounds
              if "cask" in runs.get((c, w, r, s), {})] for s in ("base", "new")}
    rel = {s: [runs[(c, w, r, s)]["cask"] / runs[(c, w, r, s)]["pthreads"] for r in rounds
               if {"cask", "pthreads"} <= set(runs.get((c, w, r, s), {}))]
           for s in ("base", "new")}
    pair = [runs[(c, w, r, "new")]["cask"] / runs[(c, w, r, "base")]["cask"] for r in rounds
            if "cask" in runs.get((c, w, r, "new"), {}) and "cask" in runs.get((c, w, r, "base"), {})]
    med = lambda v: "%.1f" % st.median(v) if v else "-"
    medr = lambda v: "%.2f" % st.median(v) if v else "-"
    print("| %s | %d | %s | %s | %s | %s | %s |" % (c, w, med(ns["base"]), med(ns["new"]), medr(pair),
                                                  medr(rel["base"]), medr(rel["new"])))
