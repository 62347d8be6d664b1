#!/usr/bin/env python3
"""Draw PNG charts from the JSON lines that cask's benchmarks print.

Every benchmark prints one JSON object per line (other lines are ignored), with at least
"bench" and "case", an "impl" ("cask", or the baseline's name: "baseline", "pthreads";
other names are drawn too) and numeric fields such as "workers", "tasks_per_s",
"ns_per_task", "seconds".

Charts written to --out DIR (created if missing):

  <bench>_scaling.png   for every bench whose records span two or more worker counts:
                        one panel per case, the metric (default tasks/s; derived from
                        ns_per_task when absent) against workers, one line per impl.
                        Repeated runs of a point are drawn as their median with a
                        min-max bar.
                        A dotted line shows perfect scaling from cask's first point; the
                        y axis turns logarithmic when values span 10x or more.
  <bench>_times.png     for knn benches (bench name contains "knn"), and for any bench
                        with "seconds" but a single worker count: one panel per case
                        (each with its own scale), a bar per impl of the median seconds
                        with a min-max bar, labelled with the value and the speed-up
                        over the baseline.

Usage:
  build/bench/bench_overhead --json | python3 bench/plot.py --out plots
  python3 bench/plot.py results/*.jsonl --out plots
  python3 bench/plot.py --metric ns_per_task --out plots < results.jsonl

Options:
  FILE...           input files ("-" or none: stdin)
  --out DIR         where to write the PNGs (default: plots)
  --metric FIELD    y field of the scaling charts (default: tasks_per_s)
  --x FIELD         x field of the scaling charts (default: workers)
  --bars BENCH      also draw BENCH as a bar chart of seconds (repeatable)
  --title TEXT      prefix of every chart title (e.g. the machine)
  --baseline NAME   the impl speed-ups are measured against (default: "baseline", else
                    "pthreads", else the one impl that is not cask)

Needs python3 and matplotlib (pip install matplotlib); exits 1 with a message if
matplotlib is missing, 2 on bad usage or when no usable record was read.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys

CASK_STYLE = {"color": "#1f77b4", "marker": "o"}
BASELINE_STYLE = {"color": "#7f7f7f", "marker": "s", "linestyle": "--"}
BASELINE_NAMES = ("baseline", "pthreads")
OTHER_COLORS = ["#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22"]


def parse_lines(lines, name):
    """Records (dicts with bench and case) from the JSON lines among lines."""
    records = []
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line.startswith("{"):
            continue  # tables and messages printed beside the JSON lines
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            print(f"plot.py: {name}:{lineno}: skipped, not JSON: {e}", file=sys.stderr)
            continue
        if not isinstance(rec, dict) or "bench" not in rec or "case" not in rec:
            print(f"plot.py: {name}:{lineno}: skipped, no bench/case", file=sys.stderr)
            continue
        rec.setdefault("impl", "cask")
        for k in ("bench", "case", "impl"):
            rec[k] = str(rec[k])
        records.append(rec)
    return records


def read_records(paths):
    records = []
    for path in paths or ["-"]:
        if path == "-":
            records += parse_lines(sys.stdin, "<stdin>")
        else:
            with open(path, encoding="utf-8") as f:
                records += parse_lines(f, path)
    return records


def number(rec, field):
    """rec[field] as a finite float, or None."""
    v = rec.get(field)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def metric_value(rec, metric):
    v = number(rec, metric)
    if v is None and metric == "tasks_per_s":
        ns = number(rec, "ns_per_task")
        v = 1e9 / ns if ns else None
    return v


def find_baseline(impls, wanted=None):
    """The impl that speed-ups are measured against, or None."""
    if wanted:
        return wanted if wanted in impls else None
    for name in BASELINE_NAMES:
        if name in impls:
            return name
    rest = [i for i in impls if i != "cask"]
    return rest[0] if len(rest) == 1 else None


def impl_order(impls, baseline):
    """cask first, the baseline second, the others by name: stable colours across charts."""
    return sorted(impls, key=lambda i: (0 if i == "cask" else 1 if i == baseline else 2, i))


def style_of(impl, others, baseline):
    if impl == "cask":
        return dict(CASK_STYLE)
    if impl == baseline:
        return dict(BASELINE_STYLE)
    if impl not in others:
        others[impl] = OTHER_COLORS[len(others) % len(OTHER_COLORS)]
    return {"color": others[impl], "marker": "^"}


def ordered_cases(recs):
    """Cases in the order the benchmark first printed them."""
    seen = {}
    for r in recs:
        seen.setdefault(r["case"], None)
    return list(seen)


def safe_name(s):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "bench"


def by_key(records, keyfn):
    groups = {}
    for r in records:
        groups.setdefault(keyfn(r), []).append(r)
    return groups


def plot_scaling(plt, bench, recs, metric, out_dir, title, baseline, xf="workers"):
    groups = by_key(recs, lambda r: r["case"])
    cases = [(c, groups[c]) for c in ordered_cases(recs)]
    n = len(cases)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    others = {}
    for idx, (case, crecs) in enumerate(cases):
        ax = axes[idx // cols][idx % cols]
        for impl in impl_order({r["impl"] for r in crecs}, baseline):
            pts = by_key([r for r in crecs if r["impl"] == impl], lambda r: number(r, xf))
            xs, med, lo, hi = [], [], [], []
            for w in sorted(k for k in pts if k is not None):
                vals = [v for v in (metric_value(r, metric) for r in pts[w]) if v is not None]
                if not vals:
                    continue
                m = statistics.median(vals)
                xs.append(w)
                med.append(m)
                lo.append(m - min(vals))
                hi.append(max(vals) - m)
            if not xs:
                continue
            st = style_of(impl, others, baseline)
            ax.errorbar(xs, med, yerr=[lo, hi], label=impl, capsize=3, linewidth=1.8,
                        markersize=5, **st)
            if impl == "cask" and len(xs) >= 2 and not metric.startswith("ns_"):
                ideal = [med[0] * x / xs[0] for x in xs]   # perfect scaling from the first point
                ax.plot(xs, ideal, ":", color=st["color"], alpha=0.5, linewidth=1,
                        label="cask ideal")
        ax.set_title(case, fontsize=10)
        ax.set_xlabel(xf)
        ax.set_ylabel(metric.replace("_per_", "/").replace("_", " "))
        workers = sorted({w for w in (number(r, xf) for r in crecs) if w})
        if workers and workers[-1] / workers[0] >= 8:
            ax.set_xscale("log", base=2)
        if workers:
            ax.set_xticks(workers)
            ax.set_xticklabels([f"{w:g}" for w in workers])
        vals = [v for v in (metric_value(r, metric) for r in crecs) if v and v > 0]
        if vals and max(vals) / min(vals) >= 10:
            ax.set_yscale("log")   # straight lines for power-law scaling
        else:
            ax.set_ylim(bottom=0)
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4))
        ax.grid(True, which="major", alpha=0.3)
        ax.grid(True, which="minor", alpha=0.08)
        ax.legend(fontsize=8)
    for idx in range(n, rows * cols):
        axes[idx // cols][idx % cols].set_visible(False)
    fig.suptitle(f"{title}{bench}: {metric.replace('_', ' ')} vs {xf}")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{safe_name(bench)}_scaling.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_times(plt, bench, recs, out_dir, title, baseline):
    recs = [r for r in recs if number(r, "seconds") is not None]
    if not recs:
        return None
    cases = ordered_cases(recs)
    impls = impl_order({r["impl"] for r in recs}, baseline)
    # One panel per case, each with its own scale: cases often differ by 100x.
    n = len(cases)
    cols = min(n, 4)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(3.2, 1.1 * len(impls) + 1.4) * cols,
                                                  3.9 * rows), squeeze=False)
    others = {}
    for idx, case in enumerate(cases):
        ax = axes[idx // cols][idx % cols]
        med = {}
        for impl in impls:
            vals = [number(r, "seconds") for r in recs if r["case"] == case and r["impl"] == impl]
            if vals:
                med[impl] = (statistics.median(vals), min(vals), max(vals))
        names = [i for i in impls if i in med]
        ys = [med[i][0] for i in names]
        bars = ax.bar(range(len(names)), ys, 0.7,
                      yerr=[[med[i][0] - med[i][1] for i in names],
                            [med[i][2] - med[i][0] for i in names]],
                      capsize=4, color=[style_of(i, others, baseline)["color"] for i in names])
        top = max(med[i][2] for i in names)
        for b, impl in zip(bars, names):
            label = f"{med[impl][0]:.3g} s"
            if impl != baseline and baseline in med and med[impl][0] > 0:
                label += f"\n{med[baseline][0] / med[impl][0]:.2f}x vs {baseline}"
            ax.annotate(label, (b.get_x() + b.get_width() / 2, med[impl][2]),
                        xytext=(0, 4), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=9)
        ax.set_ylim(0, top * 1.35)
        ax.set_title(case, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        if idx % cols == 0:
            ax.set_ylabel("seconds (median, min-max)")
    for idx in range(n, rows * cols):
        axes[idx // cols][idx % cols].set_visible(False)
    fig.suptitle(f"{title}{bench}: time per implementation (lower is better)")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{safe_name(bench)}_times.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Draw PNG charts from cask benchmark JSON lines.",
        epilog="See the module docstring (python3 -m pydoc bench/plot.py) for details.")
    ap.add_argument("files", nargs="*", help='JSON-lines files ("-" or none: stdin)')
    ap.add_argument("--out", default="plots", help="output directory (default: plots)")
    ap.add_argument("--metric", default="tasks_per_s",
                    help="y field of the scaling charts (default: tasks_per_s)")
    ap.add_argument("--bars", action="append", default=[],
                    help="also draw this bench as a bar chart of seconds (repeatable)")
    ap.add_argument("--title", default="", help="prefix of every chart title")
    ap.add_argument("--x", default="workers",
                    help="x field of the scaling charts (default: workers; e.g. ranks)")
    ap.add_argument("--baseline", default=None,
                    help='impl to compare with (default: "baseline", else "pthreads")')
    args = ap.parse_args(argv)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: error: matplotlib is not installed; install it with "
              "`pip install matplotlib` (or your distribution's python3-matplotlib)",
              file=sys.stderr)
        return 1

    try:
        records = read_records(args.files)
    except OSError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 2
    if not records:
        print("plot.py: error: no JSON record with \"bench\" and \"case\" in the input",
              file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    title = f"{args.title}: " if args.title else ""

    written = []
    for bench, recs in sorted(by_key(records, lambda r: r["bench"]).items()):
        workers = {w for w in (number(r, args.x) for r in recs) if w is not None}
        has_metric = any(metric_value(r, args.metric) is not None for r in recs)
        has_seconds = any(number(r, "seconds") is not None for r in recs)
        baseline = find_baseline({r["impl"] for r in recs}, args.baseline)
        drew = False
        if len(workers) >= 2 and has_metric:
            written.append(plot_scaling(plt, bench, recs, args.metric, args.out, title,
                                        baseline, args.x))
            drew = True
        if has_seconds and ("knn" in bench.lower() or bench in args.bars or len(workers) < 2):
            path = plot_times(plt, bench, recs, args.out, title, baseline)
            if path:
                written.append(path)
                drew = True
        if not drew:
            print(f"plot.py: {bench}: nothing to draw (needs {args.metric} at two or more "
                  "worker counts, or seconds)", file=sys.stderr)
    for p in written:
        print(p)
    return 0 if written else 2


if __name__ == "__main__":
    sys.exit(main())
