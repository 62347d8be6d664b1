"""tests/browser/cdp.py: a page of headless Chromium driven through the DevTools
protocol over its WebSocket, with the standard library only (a minimal client: text
frames). Used by the dashboard's browser test."""
import base64
import http.client
import json
import os
import re
import socket
import struct
import subprocess
import time
import urllib.parse


class CdpError(Exception):
    pass


def fail(msg):
    raise CdpError(msg)


class Page:
    """A page of headless Chromium, driven through the DevTools protocol over its
    WebSocket (a minimal client on the standard library; the page runs in real time and
    is read when the test chooses)."""

    def __init__(self, chrome, profile, url, size="1280,1000"):
        self.proc = subprocess.Popen(
            [chrome, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--remote-debugging-port=0", "--window-size=" + size,
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

    def screenshot(self, path):
        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        with open(path, "wb") as f:
            f.write(png)
        return len(png)
