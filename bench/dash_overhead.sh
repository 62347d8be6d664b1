#!/bin/sh
# bench/dash_overhead.sh [BUILD] [WORKERS]: what the live dashboard costs the scheduler
# (TASKS=N per graph, default 1000000; ROUNDS=R, default 5).
# Runs bench-sched (same binary, same shapes) three ways, interleaved, 5 rounds:
#   off      no dashboard
#   idle     CASK_DASHBOARD set, nobody connected (the per-kernel counts only)
#   viewed   CASK_DASHBOARD set and a client polling /api/status and /api/stream every
#            0.5 s, as the page does (so the task slices are recorded too)
#   off2     no dashboard again: off2/off is the noise of the machine
# and prints, per case, the median ns/task of each and the ratios to `off`, then one
# JSON line per figure. Empty tasks (the worst case: the hooks' cost against ~13 ns of
# scheduling) and 1 us tasks.
set -eu
B=${1:-build}
W=${2:-$(nproc)}
PORT=${DASH_PORT:-18787}
out=$(mktemp -d "${TMPDIR:-/tmp}/cask-dash.XXXXXX")
trap 'rm -rf "$out"; [ -n "${poller:-}" ] && kill "$poller" 2>/dev/null; true' EXIT

poll() {   # the page's requests, every 0.5 s, until killed
  python3 - "$PORT" <<'EOF'
import sys, time, urllib.request
port = sys.argv[1]
up = False
while True:   # every 10 ms until the runtime answers (so the run is watched from its
    for path in ("/api/status", "/api/stream?since=0"):   # start), then every 0.5 s
        try:
            urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=2).read()
            up = True
        except Exception:
            pass
    time.sleep(0.5 if up else 0.01)
EOF
}

for round in $(seq "${ROUNDS:-5}"); do
  for mode in off idle viewed off2; do
    for wn in 0 1000; do
      poller=""
      case $mode in
        off|off2) unset CASK_DASHBOARD ;;
        idle) export CASK_DASHBOARD=127.0.0.1:$PORT ;;
        viewed) export CASK_DASHBOARD=127.0.0.1:$PORT; poll & poller=$! ;;
      esac
      "$B/bench/bench-sched" --workers "$W" --tasks "${TASKS:-1000000}" --reps 3 --work-ns $wn \
        --cases independent,fanout,chains,random --json-only 2>/dev/null |
        grep '"impl":"cask"' | sed "s/^/$mode $wn /" >> "$out/all.txt"
      [ -n "$poller" ] && kill "$poller" 2>/dev/null && wait "$poller" 2>/dev/null || true
      poller=""
    done
  done
done
unset CASK_DASHBOARD
python3 - "$out/all.txt" "$W" "${ROUNDS:-5}" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, wn, js = line.split(" ", 2)
    r = json.loads(js)
    rows.setdefault((r["case"], int(wn), mode), []).append(r["ns_per_task"])
cases = sorted({(c, w) for c, w, _ in rows})
print("dashboard overhead, bench-sched, %s workers, medians of %s rounds x 3 reps (ns/task)" % (sys.argv[2], sys.argv[3]))
print("%-12s %8s %10s %10s %10s %10s %8s %8s %8s" % ("case", "work_ns", "off", "idle", "viewed", "off2",
      "idle/off", "view/off", "off2/off"))
for c, w in cases:
    m = {k: statistics.median(rows[(c, w, k)]) for k in ("off", "idle", "viewed", "off2") if (c, w, k) in rows}
    print("%-12s %8d %10.1f %10.1f %10.1f %10.1f %8.3f %8.3f %8.3f" % (c, w, m["off"], m["idle"], m["viewed"],
          m["off2"], m["idle"] / m["off"], m["viewed"] / m["off"], m["off2"] / m["off"]))
    for k in ("idle", "viewed", "off2"):
        print(json.dumps({"bench": "dash_overhead", "case": c, "work_ns": w, "workers": int(sys.argv[2]),
                          "impl": k, "ns_per_task": m[k], "baseline_ns_per_task": m["off"],
                          "ratio": m[k] / m["off"]}))
EOF
