"""A tiny Chrome DevTools Protocol client for the page tests, standard library only.

Chromium is started headless with `--remote-debugging-pipe`: the protocol's JSON
messages travel over file descriptors 3 (to the browser) and 4 (from it), each
ended by a NUL byte, so no websocket library is needed. `find_browser()` returns
None when no Chromium or Chrome is installed, and the tests skip.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from typing import Any

BROWSERS = (
    "chromium",
    "chromium-browser",
    "chromium-headless-shell",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
)


def find_browser() -> str | None:
    """The path of a Chromium-like browser ($ADCLI_BROWSER first), or None."""
    env = os.environ.get("ADCLI_BROWSER")
    if env:
        return shutil.which(env) or (env if os.path.exists(env) else None)
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def _above(fd: int, low: int) -> int:
    """`fd` moved to a number >= `low` (the old number is closed)."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low)
    os.close(fd)
    return new


class CDPError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """One headless browser with one page (a flattened session on its first tab)."""

    def __init__(self, exe: str, *, width: int = 1200, height: int = 900) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="adcli-browser-")
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        # the child's ends moved above 4, so that placing them at 3 and 4 clobbers neither
        to_r, from_w = (_above(fd, 10) for fd in (to_r, from_w))
        args = [
            exe,
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--mute-audio",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile.name}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root otherwise

        def child_fds() -> None:  # runs in the child: the pipe ends become fds 3 and 4
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        # close_fds=False: closing runs after preexec_fn and would close 3 and 4 again;
        # the parent's other descriptors are not inheritable (PEP 446) and close at exec
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,
            close_fds=False,
        )
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=False
        )["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    # ------------------------------------------------------------------ protocol

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise CDPError("the browser did not answer in time")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise CDPError("the browser closed the pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = True,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session is not None:
            msg["sessionId"] = self.session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """The first event called `method` (already received, or the next to come)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append(reply)

    # ------------------------------------------------------------------ page actions

    def open(self, url: str) -> None:
        """Load `url` and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise CDPError(f"script error: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def center(self, selector: str) -> tuple[float, float]:
        """The middle of the first element matching `selector`, scrolled into view."""
        box = self.evaluate(
            f"(function(){{var e=document.querySelector({json.dumps(selector)});"
            "if(!e)return null;e.scrollIntoView({block:'center',inline:'center'});"
            "var r=e.getBoundingClientRect();return [r.left+r.width/2,r.top+r.height/2];})()"
        )
        if box is None:
            raise CDPError(f"nothing matches {selector!r}")
        return box[0], box[1]

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) on the middle of an element."""
        x, y = self.center(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            if kind == "mouseMoved":
                params["button"] = "none"
            self.call("Input.dispatchMouseEvent", params)

    def press(self, key: str, code: int) -> None:
        """A key pressed and released on the focused element (e.g. ArrowRight, 39)."""
        for kind in ("keyDown", "keyUp"):
            self.call(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
            )

    def screenshot(self, selector: str | None = None) -> bytes:
        """A PNG of the visible page, or of the element matching `selector`."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            self.center(selector)  # scrolled into view
            box = self.evaluate(
                f"(function(){{var r=document.querySelector({json.dumps(selector)})"
                ".getBoundingClientRect();return [r.left+window.scrollX,r.top+window.scrollY,"
                "r.width,r.height];})()"
            )
            params["clip"] = {
                "x": box[0],
                "y": box[1],
                "width": box[2],
                "height": box[3],
                "scale": 1,
            }
        data = self.call("Page.captureScreenshot", params)["data"]
        return base64.b64decode(data)

    def close(self) -> None:
        """End the browser (the process this object started) and remove its profile."""
        try:
            self.call("Browser.close", session=False, timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._to_w, self._from_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = 0
    channels = 4
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6), "unexpected PNG kind"
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        ftype = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def count_color(data: bytes, rgb: tuple[int, int, int], tolerance: int = 8) -> int:
    """How many pixels of a PNG are within `tolerance` of colour `rgb`."""
    width, _, rows = png_pixels(data)
    channels = len(rows[0]) // width if rows else 3
    r0, g0, b0 = rgb
    n = 0
    for row in rows:
        for i in range(0, len(row), channels):
            if (
                abs(row[i] - r0) <= tolerance
                and abs(row[i + 1] - g0) <= tolerance
                and abs(row[i + 2] - b0) <= tolerance
            ):
                n += 1
    return n
