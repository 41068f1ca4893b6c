"""A headless Chromium driven over the DevTools protocol (standard library only).

Chromium is started with --remote-debugging-pipe: it reads commands on fd 3 and writes
answers and events on fd 4, each a JSON message ended by a NUL byte, so no port and no
websocket are needed. `Page` drives one tab the way a user does: real mouse events at an
element's centre, text typed through the input pipeline, screenshots of the whole page.
"""

import base64
import fcntl
import json
import os
import queue
import subprocess
import threading
import time

# what every launch passes (the brief's list, plus what a container needs)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--mute-audio",
    "--force-device-scale-factor=1",
    "--remote-debugging-pipe",
]


class CdpError(RuntimeError):
    pass


class Chrome:
    """One Chromium process with a fresh profile in `profile`; its stderr goes to `log`."""

    def __init__(self, binary, profile, log):
        # the pipe ends Chromium gets, moved above fd 10 so that bash's 3<& 4>& cannot clash (dash takes one-digit fds only)
        cmd_r, cmd_w = os.pipe()
        out_r, out_w = os.pipe()
        child_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(out_w, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (cmd_r, out_w):
            os.close(fd)
        args = [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{child_r} 4>&{child_w} {child_r}<&- {child_w}>&-', "bash", *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(child_r, child_w),
        )
        os.close(child_r)
        os.close(child_w)
        self.out = os.fdopen(cmd_w, "wb", buffering=0)
        self.inbox = queue.Queue()
        self.events = []
        self.next_id = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=(out_r,), daemon=True).start()

    def _read(self, fd):
        buf = b""
        with os.fdopen(fd, "rb", buffering=0) as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    self.inbox.put(None)
                    return
                buf += chunk
                while b"\0" in buf:
                    msg, buf = buf.split(b"\0", 1)
                    self.inbox.put(json.loads(msg))

    def send(self, method, params=None, session=None, timeout=30):
        """Sends a command and waits for its answer (events that arrive meanwhile are kept)."""
        with self.lock:
            self.next_id += 1
            mid = self.next_id
            msg = {"id": mid, "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            self.out.write(json.dumps(msg).encode() + b"\0")
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CdpError(f"{method}: no answer in {timeout} s")
                try:
                    m = self.inbox.get(timeout=left)
                except queue.Empty:
                    continue
                if m is None:
                    raise CdpError(f"{method}: Chromium exited (rc {self.proc.poll()})")
                if m.get("id") == mid:
                    if "error" in m:
                        raise CdpError(f"{method}: {m['error']}")
                    return m.get("result", {})
                self.events.append(m)
                if m.get("method") == "Page.javascriptDialogOpening":
                    # dismissed at once (a page blocked on alert() answers nothing); the
                    # event stays in `events`, where `Page.problems` reports it
                    self._dismiss(m.get("sessionId"))

    def _dismiss(self, session):
        self.next_id += 1
        msg = {"id": self.next_id, "method": "Page.handleJavaScriptDialog"}
        msg.update(params={"accept": False}, sessionId=session)
        self.out.write(json.dumps(msg).encode() + b"\0")

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Page:
    """One tab of `chrome`, `width` × `height` CSS pixels."""

    def __init__(self, chrome, width=1360, height=900):
        self.chrome = chrome
        target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.width = width

    def send(self, method, params=None, timeout=30):
        return self.chrome.send(method, params, session=self.session, timeout=timeout)

    def goto(self, url):
        self.send("Page.navigate", {"url": url})

    def eval(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError(f"{expression[:80]}: {d.get('exception', {}).get('description', d)}")
        return r["result"].get("value")

    def wait(self, condition, what, timeout=15):
        """Polls a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        # false while the page is still loading (no body yet, no element yet)
        guarded = f"(() => {{ try {{ return ({condition}); }} catch (e) {{ return false; }} }})()"
        while True:
            v = self.eval(guarded)
            if v:
                return v
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(0.05)

    def click(self, element_js, what):
        """A real mouse click at the centre of the element `element_js` evaluates to."""
        box = self.eval(
            f"""(() => {{ const e = {element_js};
                if (!e) return null;
                e.scrollIntoView({{block: 'center', inline: 'nearest'}});
                const r = e.getBoundingClientRect();
                return r.width && r.height ? [r.x + r.width / 2, r.y + r.height / 2] : null; }})()"""
        )
        if not box:
            raise AssertionError(f"nothing visible to click: {what}")
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            )

    def type(self, element_js, text):
        """Focuses the element, selects what it holds and types `text` over it."""
        self.eval(f"(() => {{ const e = {element_js}; e.focus(); e.select(); return true; }})()")
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path, full=True):
        """The whole page (else the viewport, where a modal dialog's backdrop ends) as a PNG."""
        params = {"format": "png"}
        if full:
            h = self.eval("Math.ceil(document.documentElement.scrollHeight)")
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": h, "scale": 1}
        else:
            self.eval("window.scrollTo(0, 0)")
        shot = self.send("Page.captureScreenshot", params)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def problems(self):
        """Uncaught exceptions, CSP violations and dialogs (alert, confirm) seen so far."""
        out = []
        for m in self.chrome.events:
            if m.get("sessionId") != self.session:
                continue
            method, p = m.get("method"), m.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("uncaught: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                # a 4xx the test asks for on purpose is logged by the network stack: not a problem
                if e.get("source") != "network":
                    out.append(f"console {e.get('source')}: {e.get('text')}")
            elif method == "Page.javascriptDialogOpening":
                out.append(f"a {p.get('type')} dialog opened: {p.get('message')!r}")
        return out
