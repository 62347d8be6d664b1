#!/usr/bin/env python3
"""tests/browser/dashboard.py CASK_JACOBI SCREENSHOT.png

Opens the live dashboard of a running cask-jacobi (CPU workers) in headless Chromium and
checks, from the page's DOM after its scripts ran, that the workers, running tasks and
progress appear and change between two looks, and that the memory table shows the host
chunk pool (in use, cached, pinned parts, hits/misses); saves a screenshot. Exit 77 (SKIP) without
Chromium. Suite `browser` (meson test --suite browser)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import CdpError, Page  # noqa: E402

jacobi, shot = sys.argv[1], sys.argv[2]
chrome = next((shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome")
               if shutil.which(c)), None)
if not chrome:
    print("no chromium on PATH (apt-get install chromium): browser test skipped")
    sys.exit(77)

env = dict(os.environ, CASK_DASHBOARD="127.0.0.1:0", CASK_LOG="info", CASK_NCPU="2")
app = subprocess.Popen([jacobi, "--n", "1536", "--iters", "1000000", "--tol", "0", "--cpu-only"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
profile = tempfile.mkdtemp(prefix="cask-chromium-")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


# what the test reads of the page: the DOM as the page's script left it
LOOK = """(() => {
  const t = (id) => (document.getElementById(id) || {}).textContent || "";
  const rows = [...document.querySelectorAll("#workers tr.worker")];
  return {
    who: t("who"), tasks: +t("tasks-total"), running: +t("running"), recent: +t("recent"),
    done: +t("graphs-done"),
    occupancy: rows.map((r) => +r.dataset.occupancy),
    running_rows: rows.map((r) => +r.dataset.running),
    graphs: [...document.querySelectorAll("#graphs td.progress")].map((c) => c.textContent),
    kernels: document.querySelectorAll("#kernels tr.kernel").length,
    pool: (() => {
      const r = document.querySelector("#memory tr#host-pool");
      if (!r) return null;
      const d = r.dataset;
      return { live: +d.live, cached: +d.cached, pinned_live: +d.pinnedLive,
               pinned_cached: +d.pinnedCached, hits: +d.hits, misses: +d.misses,
               limit: +d.limit, text: r.textContent };
    })(),
  };
})()"""


page = None
try:
    url = None
    t_end = time.time() + 30
    while time.time() < t_end and not url:
        line = app.stderr.readline()
        if not line:
            break
        m = re.search(r"dashboard at (http://\S+)", line)
        url = m.group(1) if m else None
    if not url:
        fail("cask-jacobi did not say where its dashboard is")
    print("dashboard at", url)
    page = Page(chrome, profile, url)
    time.sleep(3.0)                 # the page polls every 0.5 s; rates need 1 s of history
    looks = [page.eval(LOOK)]
    time.sleep(1.5)
    looks.append(page.eval(LOOK))
    # "running now" is an instant: with 2 busy workers one of a few looks shows it
    while not any(v["running"] > 0 for v in looks) and len(looks) < 12:
        time.sleep(0.5)
        looks.append(page.eval(LOOK))
    first, second = looks[0], looks[1]
    for i, v in enumerate(looks):
        print("look %d: %s" % (i, v))
    for name, v in (("first", first), ("second", second)):
        if not v["who"].startswith("rank 0 of 1: 2 CPU workers"):
            fail("%s look: header %r" % (name, v["who"]))
        if len(v["occupancy"]) != 2:
            fail("%s look: %d worker rows, expected 2" % (name, len(v["occupancy"])))
        if not v["kernels"]:
            fail("%s look: no kernel rows" % name)
        # the host chunk pool beside the memory nodes: the grid's blocks are the
        # runtime's own chunks (cask_data_create), in use while the run goes on
        pool = v["pool"]
        if not pool:
            fail("%s look: no host pool row in the memory table" % name)
        if not (pool["live"] > 0 and pool["misses"] > 0 and pool["limit"] > 0):
            fail("%s look: host pool shows nothing in use: %r" % (name, pool))
        if pool["pinned_live"] != 0 or pool["pinned_cached"] != 0:
            fail("%s look: pinned host memory on CPU workers only: %r" % (name, pool))
        for word in ("host pool", "in use", "cached", "pinned", "hits", "misses"):
            if word not in pool["text"]:
                fail("%s look: %r missing from the host pool row %r" % (name, word, pool["text"]))
    if not any(v["running"] > 0 and any(r >= 0 for r in v["running_rows"]) for v in looks):
        fail("no running task shown in %d looks" % len(looks))
    if not any(v["recent"] > 0 for v in looks):
        fail("no task slices drawn in the task stream")
    if not any(o > 0 for v in looks for o in v["occupancy"]):
        fail("workers never shown busy")
    if not (second["tasks"] > first["tasks"] > 0):
        fail("tasks run did not grow: %d then %d" % (first["tasks"], second["tasks"]))
    if not (second["done"] > first["done"] and (first["graphs"] or second["graphs"] or second["done"])):
        fail("graph progress did not change between the looks")
    print("screenshot: %s (%d bytes)" % (shot, page.screenshot(shot)))
    print("1 passed, 0 failed")
except CdpError as e:
    fail(str(e))
finally:
    if page:
        page.close()
    app.terminate()
    try:
        app.wait(timeout=10)
    except subprocess.TimeoutExpired:
        app.kill()
    shutil.rmtree(profile, ignore_errors=True)
