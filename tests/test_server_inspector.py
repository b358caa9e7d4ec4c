"""``GET /inspect``: the live inspector, served on the sidecar's port, in headless Chromium."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from pathlib import Path

import chromium
from wsclient import WsClient, observe, running, say

TOKENS = {"writer_tokens": ["town=w-secret"], "reader_tokens": ["town=r-secret"]}
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str) -> tuple[int, str, bytes]:
    try:
        with _OPENER.open(url, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


async def test_inspector_files_are_served_and_other_paths_stay_health(tmp_path: Path) -> None:
    """/inspect serves the page and its two files; unknown names 404; / stays the health check."""
    async with running(tmp_path) as sc:
        base = f"http://127.0.0.1:{sc.port}"
        status, ctype, body = await asyncio.to_thread(fetch, f"{base}/inspect?token=x")
        assert status == 200 and ctype.startswith("text/html") and b"/inspect/inspector.js" in body
        status, ctype, body = await asyncio.to_thread(fetch, f"{base}/inspect/inspector.js")
        assert status == 200 and ctype.startswith("text/javascript") and b"hello" in body
        status, ctype, _ = await asyncio.to_thread(fetch, f"{base}/inspect/inspector.css")
        assert status == 200 and ctype.startswith("text/css")
        status, _, _ = await asyncio.to_thread(fetch, f"{base}/inspect/../app.py")
        assert status == 404
        for path in ("/", "/inspector", "/any/other/path"):
            status, ctype, body = await asyncio.to_thread(fetch, f"{base}{path}")
            assert status == 200 and ctype == "application/json" and b'"status":"ok"' in body


async def test_inspector_shows_a_belief_a_test_event_just_formed(tmp_path: Path) -> None:
    """The page, connected with a reader token, shows a belief formed after it opened."""
    chromium.need(chromium.available())
    async with running(tmp_path, **TOKENS) as sc:
        async with WsClient(sc.url, token="w-secret") as writer:
            await writer.event("say", 1, **say("bo", ["mira"], "water:well", "poisoned"))
        page = f"http://127.0.0.1:{sc.port}/inspect?world=town&token=r-secret&resident=mira"
        loop = asyncio.get_running_loop()

        async def send_event() -> None:
            async with WsClient(sc.url, token="w-secret") as writer:
                ack = await writer.event(
                    "observe", 3, **observe(["mira"], "lamp:square", "lit", "The lamp is lit")
                )
                assert ack["type"] == "ack" and ack["changes"] == 1

        def drive() -> tuple[str, str, bytes]:
            with chromium.browser() as b:
                b.get(page)
                b.wait_for("return document.body.dataset.connected === 'true'", "the welcome")
                b.wait_for(
                    "return document.querySelector('#beliefs tbody tr[data-root=\"water:well\"]')",
                    "the earlier belief",
                )
                asyncio.run_coroutine_threadsafe(send_event(), loop).result(60)
                row = b.wait_for(
                    "const r = document.querySelector('#beliefs tbody tr[data-root=\"lamp:square\"]');"
                    "return r && r.innerText;",
                    "the belief the event just formed",
                )
                stream = b.wait_for(
                    "return [...document.querySelectorAll('#stream li')]"
                    ".map(li => li.innerText).find(t => t.includes('lamp:square'));",
                    "its live notification",
                )
                b.run(
                    "document.querySelector('#beliefs tbody tr[data-root=\"lamp:square\"]').click()"
                )
                b.wait_for(
                    "return document.querySelector('#timeline li[data-change=\"formed\"]')"
                    " && document.querySelector('#graph svg rect')"
                    " && document.querySelector('#distribution .dist-row');",
                    "the explain timeline, graph and distribution",
                )
                return row, stream, b.screenshot()

        row, stream, png = await asyncio.to_thread(drive)
    assert "lit" in row and "78" in row and "influencing" in row and "firsthand" in row
    assert "mira" in stream and "formed" in stream
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    (tmp_path / "inspector.png").write_bytes(png)
