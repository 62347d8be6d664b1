#!/usr/bin/env python3
"""tests/browser/dashboard.py CASK_JACOBI SCREENSHOT.png

Opens the live dashboard of a running cask-jacobi (CPU workers) in headless Chromium and
checks, from the page's DOM after its scripts ran, that the workers, running tasks and
progress appear and change between two looks; saves a screenshot. Exit 77 (SKIP) without
Chromium. Suite `browser` (meson test --suite browser)."""
import base64
import http.client
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

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


class Page:
    """A page of headless Chromium, driven through the DevTools protocol over its
    WebSocket (a minimal client on the standard library; the page runs in real time and
    is read when the test chooses)."""

    def __init__(self, url):
        self.proc = subprocess.Popen(
            [chrome, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--remote-debugging-port=0", "--window-size=1280,1000",
             "--hide-scrollbars", "--user-data-dir=" + profile, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port, t_end = None, time.time() + 60
        while time.time() < t_end and not port:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        if not port:
            fail("chromium did not open its DevTools port")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("PUT", "/json/new?" + url)
        target = json.loads(conn.getresponse().read())
        ws = urllib.parse.urlparse(target["webSocketDebuggerUrl"])
        self.sock = socket.create_connection((ws.hostname, ws.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n"
                           % (ws.path, ws.hostname, ws.port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            fail("DevTools WebSocket refused: %r" % head[:80])
        self.next_id = 0

    def _recv_exact(self, n):
        b = b""
        while len(b) < n:
            chunk = self.sock.recv(n - len(b))
            if not chunk:
                fail("DevTools connection closed")
            b += chunk
        return b

    def _recv_message(self):
        data = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            data += self._recv_exact(n)
            if b0 & 0x80:
                return data

    def call(self, method, **params):
        self.next_id += 1
        msg = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        size = bytes([0x80 | len(msg)]) if len(msg) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(msg))
        self.sock.sendall(bytes([0x81]) + size + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(msg)))
        while True:
            reply = json.loads(self._recv_message())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    fail("%s: %s" % (method, reply["error"]))
                return reply["result"]

    def eval(self, expr):
        return self.call("Runtime.evaluate", expression=expr, returnByValue=True)["result"].get("value")

    def close(self):
        self.sock.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


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
    page = Page(url)
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
    png = base64.b64decode(page.call("Page.captureScreenshot", format="png")["data"])
    with open(shot, "wb") as f:
        f.write(png)
    print("screenshot: %s (%d bytes)" % (shot, len(png)))
    print("1 passed, 0 failed")
finally:
    if page:
        page.close()
    app.terminate()
    try:
        app.wait(timeout=10)
    except subprocess.TimeoutExpired:
        app.kill()
    shutil.rmtree(profile, ignore_errors=True)
