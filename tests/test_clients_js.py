"""The TypeScript client (protocol/clients/js): its ``node --test`` suite, run by pytest.

The suite builds the client with tsc and runs it against real ``credence serve --port 0``
processes started with this interpreter (vectors, the scripted session, acks, paging,
backpressure, reconnect with resume). Skipped only when node or npm is not installed.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import chromium
from wsclient import running

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "protocol" / "clients" / "js"


def node_missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (.ci/run installs them)"
    return None


@functools.cache
def npm_ready() -> None:
    """``npm ci`` unless node_modules already matches package-lock.json, then build with tsc.

    Once per test session (the build takes seconds).
    """
    lock = (JS / "package-lock.json").read_text()
    installed = JS / "node_modules" / ".package-lock.json"
    if not installed.exists() or _packages(installed.read_text()) != _packages(lock):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True)
    subprocess.run(["npm", "run", "--silent", "build"], cwd=JS, check=True)


def _packages(lock_text: str) -> object:
    packages = json.loads(lock_text).get("packages", {})
    return {k: v.get("version") for k, v in packages.items() if k}


def test_js_client_node_suite() -> None:
    """The client's node --test suite passes against real sidecars."""
    chromium.need(node_missing())
    npm_ready()
    tests = sorted(str(p.relative_to(JS)) for p in (JS / "test").glob("*.test.js"))
    env = {**os.environ, "CREDENCE_PYTHON": sys.executable}
    result = subprocess.run(
        ["node", "--test", *tests], cwd=JS, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "# fail 0" in result.stdout and "# pass" in result.stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript", ".js": "text/javascript"}  # fmt: skip

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_js_client_in_headless_chromium(tmp_path: Path) -> None:
    """A page using the client with the browser's native WebSocket: hello, event, ack, query."""
    chromium.need(node_missing() or chromium.available())
    npm_ready()
    handler = functools.partial(_Quiet, directory=str(JS))
    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=files.serve_forever, daemon=True)
    thread.start()
    try:
        async with running(tmp_path) as sc:
            page = f"http://127.0.0.1:{files.server_address[1]}/test/browser.html?url={sc.url}"

            def drive() -> dict[str, object]:
                with chromium.browser() as b:
                    b.get(page)
                    text = b.wait_for(
                        "const t = document.getElementById('result').textContent;"
                        "return t !== 'running' && t;",
                        "the page's result",
                    )
                    result: dict[str, object] = json.loads(text)
                    return result

            result = await asyncio.to_thread(drive)
    finally:
        files.shutdown()
        files.server_close()
    assert result["ok"] is True, result
    assert result["native"] is True and result["role"] == "writer"
    assert result["ack"] == {"type": "ack", "event_id": "web-1", "duplicate": False, "changes": 1, "seq": 1, "rid": "c1"}  # fmt: skip
    assert result["notes"] == [["mira", "lamp:square", "formed", 78]]
    assert result["beliefs"] == ["lamp:square"]
    mirror = result["mirror"]
    assert isinstance(mirror, dict) and mirror["value"] == "lit" and mirror["seq"] == 1
