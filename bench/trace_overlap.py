#!/usr/bin/env python3
"""trace_overlap.py TRACE.json: checks a cask trace (Chrome trace-event JSON) and reports
how much copy time overlaps compute time.

It loads the file with Python's strict JSON parser, checks every event has the fields
its phase needs (X: name ts dur pid tid; s/f: id ts pid tid; M: name args), that every
flow start has exactly one finish, then sums per GPU the time its copy-engine tracks
("... copies") are busy, the time its stream tracks are busy, and the time both are
(intervals merged per kind first). Exit 0 if the trace is valid, 1 otherwise."""
import json
import sys
from collections import defaultdict


def merge(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(x, y):
    i = j = 0
    tot = 0.0
    while i < len(x) and j < len(y):
        a = max(x[i][0], y[j][0])
        b = min(x[i][1], y[j][1])
        if a < b:
            tot += b - a
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return tot


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    need = {"X": ("name", "ts", "dur", "pid", "tid"), "s": ("id", "ts", "pid", "tid"),
            "f": ("id", "ts", "pid", "tid"), "M": ("name", "args")}
    bad = 0
    names = {}
    for e in ev:
        for k in need.get(e.get("ph"), ()):
            if k not in e:
                bad += 1
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    starts = defaultdict(int)
    finishes = defaultdict(int)
    for e in ev:
        if e.get("ph") == "s":
            starts[e["id"]] += 1
        elif e.get("ph") == "f":
            finishes[e["id"]] += 1
    unpaired = sum(1 for k in set(starts) | set(finishes) if starts[k] != 1 or finishes[k] != 1)
    copy = defaultdict(list)
    comp = defaultdict(list)
    for e in ev:
        if e.get("ph") != "X":
            continue
        tn = names.get((e["pid"], e["tid"]), "")
        parts = tn.split()
        if len(parts) >= 2 and parts[0] == "gpu":
            g = parts[1]
            iv = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
            (copy if "copies" in tn else comp)[g].append(iv)
    print(f"events {len(ev)}, malformed {bad}, flow ids {len(starts)}, unpaired flows {unpaired}")
    for g in sorted(set(copy) | set(comp)):
        c, k = merge(copy[g]), merge(comp[g])
        ct = sum(b - a for a, b in c)
        kt = sum(b - a for a, b in k)
        ov = overlap(c, k)
        print(f"gpu {g}: copies busy {ct / 1e3:.3f} ms ({len(copy[g])} copies), compute busy "
              f"{kt / 1e3:.3f} ms ({len(comp[g])} tasks), overlapped {ov / 1e3:.3f} ms "
              f"({100 * ov / ct if ct else 0:.0f}% of copy time)")
    return 0 if bad == 0 and unpaired == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
