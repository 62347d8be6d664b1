#!/usr/bin/env python3
"""bench/dash_capture.py URL SECONDS OUT.json: records what a live cask dashboard serves
(/api/status and /api/stream, every 0.5 s as its page polls) into OUT.json, so a run on
a machine without a browser can be looked at later (bench/dash_replay.py, retired: see
bench/RESULTS.md, served it back to the page for docs/dashboard_gpu.png). While it polls,
the dashboard is in use, as the dashboard step's run "with the dashboard" needs."""
import json
import sys
import time
import urllib.request

url, seconds, out = sys.argv[1].rstrip("/"), float(sys.argv[2]), sys.argv[3]
frames, since, t_end = [], 0, time.time() + seconds
while time.time() < t_end:
    try:
        st = json.load(urllib.request.urlopen(url + "/api/status", timeout=5))
        sr = json.load(urllib.request.urlopen(url + "/api/stream?since=%d" % since, timeout=5))
    except Exception as e:   # not up yet, or gone
        print("dash_capture:", e, file=sys.stderr)
        time.sleep(0.1)
        continue
    if sr["slices"]:
        since = max(since, max(s[3] for s in sr["slices"]))
    frames.append({"status": st, "stream": sr})
    time.sleep(0.5)
json.dump(frames, open(out, "w"))
print("dash_capture: %d frames to %s" % (len(frames), out))
