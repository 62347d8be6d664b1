#!/usr/bin/env python3
"""bench/dash_replay.py CAPTURE.json SHOT.png [FRAME]: serves a recorded dashboard
(bench/dash_capture.py) to the real page (runtime/dashboard.html) in headless Chromium,
frame by frame as the page polls, and takes a screenshot once FRAME (default: the last)
has been shown. For runs on machines without a browser (the GPU machine)."""
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "browser"))
from cdp import Page  # noqa: E402

frames = json.load(open(sys.argv[1]))
shot = sys.argv[2]
stop_at = int(sys.argv[3]) if len(sys.argv) > 3 else len(frames) - 1
page_html = open(os.path.join(here, "..", "runtime", "dashboard.html"), "rb").read()
state = {"i": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        i = min(state["i"], stop_at)
        if self.path == "/":
            body, kind = page_html, "text/html"
        elif self.path.startswith("/api/status"):
            body, kind = json.dumps(frames[i]["status"]).encode(), "application/json"
        elif self.path.startswith("/api/stream"):
            body, kind = json.dumps(frames[i]["stream"]).encode(), "application/json"
            state["i"] += 1          # the page asks for both, then waits 0.5 s
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
chrome = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
profile = tempfile.mkdtemp(prefix="cask-replay-")
page = Page(chrome, profile, "http://127.0.0.1:%d/" % srv.server_address[1], size="1280,1100")
try:
    t_end = time.time() + 0.6 * (stop_at + 2) + 10
    while state["i"] <= stop_at and time.time() < t_end:
        time.sleep(0.2)
    time.sleep(1.0)
    print("dash_replay: frame %d of %d shown; %s (%d bytes)" % (stop_at, len(frames),
          shot, page.screenshot(shot)))
finally:
    page.close()
    srv.shutdown()
    shutil.rmtree(profile, ignore_errors=True)
