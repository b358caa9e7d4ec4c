"""Headless Chromium for tests, driven through chromedriver's W3C WebDriver HTTP API.

No selenium: the handful of WebDriver calls needed (new session, navigate, run a script,
screenshot) are plain JSON over HTTP, sent with urllib. :func:`browser` starts chromedriver on
a free port and a headless Chromium session; :func:`available` says why a test must skip.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from wsclient import guard

__all__ = ["REQUIRE", "Browser", "available", "browser", "need"]

#: Set by ``.ci/run``: a missing browser or node is a failure there, never a skip.
REQUIRE = "CREDENCE_REQUIRE_BROWSER"

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def _binary() -> str | None:
    for name in CHROMIUM:
        path = shutil.which(name)
        if path:
            return path
    return None


def available() -> str | None:
    """None when chromium and chromedriver are installed; else the reason to skip."""
    if _binary() is None:
        return "chromium is not installed (.ci/run installs it: apt-get install chromium)"
    if shutil.which("chromedriver") is None:
        return (
            "chromedriver is not installed (.ci/run installs it: apt-get install chromium-driver)"
        )
    return None


def need(reason: str | None) -> None:
    """Skip the calling test for ``reason`` (fail instead when $CREDENCE_REQUIRE_BROWSER is set)."""
    if reason is None:
        return
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason}, and ${REQUIRE} is set")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _call(method: str, url: str, body: Any = None, timeout: float = 60) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return json.loads(resp.read())["value"]
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"webdriver {method} {url}: {exc.read()[:2000]!r}") from None


class Browser:
    """One WebDriver session."""

    def __init__(self, base: str, session: str) -> None:
        self.url = f"{base}/session/{session}"

    def get(self, url: str) -> None:
        _call("POST", f"{self.url}/url", {"url": url})

    def run(self, script: str, *args: Any) -> Any:
        """Run ``script`` (a function body; ``return`` gives the result) in the page."""
        return _call("POST", f"{self.url}/execute/sync", {"script": script, "args": list(args)})

    def wait_for(self, script: str, what: str, seconds: float = 30) -> Any:
        """Poll ``script`` until it returns something truthy (a hang guard, not a timing test)."""
        deadline = time.monotonic() + guard(seconds)
        while True:
            value = self.run(script)
            if value:
                return value
            if time.monotonic() > deadline:
                text = self.run("return document.body ? document.body.innerText : ''")
                raise AssertionError(f"timed out waiting for {what}; page text:\n{text[:3000]}")
            time.sleep(0.1)

    def screenshot(self) -> bytes:
        return base64.b64decode(_call("GET", f"{self.url}/screenshot"))


@contextlib.contextmanager
def browser(width: int = 1400, height: int = 1000) -> Iterator[Browser]:
    """A headless Chromium session; chromedriver and the browser are stopped afterwards."""
    binary = _binary()
    assert binary is not None
    port = _free_port()
    driver = subprocess.Popen(
        ["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    session: str | None = None
    try:
        deadline = time.monotonic() + guard(30)
        while True:
            try:
                if _call("GET", f"{base}/status", timeout=2).get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError, OSError, AssertionError):
                pass
            assert time.monotonic() < deadline, "chromedriver did not start"
            time.sleep(0.05)
        args = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-proxy-server", "--no-first-run", f"--window-size={width},{height}",
        ]  # fmt: skip
        caps = {"browserName": "chrome", "goog:chromeOptions": {"binary": binary, "args": args}}
        value = _call("POST", f"{base}/session", {"capabilities": {"alwaysMatch": caps}}, 120)
        session = value["sessionId"]
        yield Browser(base, session)
    finally:
        if session is not None:
            with contextlib.suppress(Exception):
                _call("DELETE", f"{base}/session/{session}", timeout=30)
        driver.terminate()
        try:
            driver.wait(guard(10))
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
