"""End-to-end: graceful stop, and ``credence serve`` as a real process stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from websockets.exceptions import ConnectionClosed
from wsclient import WsClient, db_rows, guard, observe, within

from sidecar.server import ServerConfig, Sidecar

ROOT = Path(__file__).resolve().parent.parent


def stored_ids(db: Path) -> set[str]:
    return {r[0] for r in db_rows(db, "SELECT event_id FROM events")}


async def test_stop_commits_and_acks_what_was_accepted_then_closes_1001(tmp_path: Path) -> None:
    """Events sent before stop() are acked and in the DB, and the client sees close 1001."""
    sc = Sidecar(ServerConfig(port=0, db=tmp_path / "x.db", ping_interval=None))
    await sc.start()
    try:
        async with WsClient(sc.url) as c:
            sent = [
                await c.send_event("observe", **observe(["mira", "kai"], f"k{i}", i))
                for i in range(300)
            ]
            await c.sync()  # the server has read every event: all of them are accepted
            await within(sc.stop(), 30)
            assert await c.wait_closed() == 1001
            acked = [f["event_id"] for f in c.untaken("ack")]
            assert acked == sent
            assert c.untaken("error") == []
    finally:
        await within(sc.stop(), 30)
    assert stored_ids(tmp_path / "x.db") == set(sent)


async def test_stop_while_a_client_keeps_sending_closes_1001_and_loses_no_ack(
    tmp_path: Path,
) -> None:
    """A client still sending during stop() gets 1001; exactly the acked events are stored."""
    sc = Sidecar(ServerConfig(port=0, db=tmp_path / "x.db", ping_interval=None))
    await sc.start()
    sent: list[str] = []
    try:
        async with WsClient(sc.url) as c:

            async def keep_sending() -> None:
                with contextlib.suppress(ConnectionClosed):
                    for i in range(100_000):
                        sent.append(await c.send_event("observe", **observe(["mira"], f"k{i}", i)))
                        if i % 50 == 0:
                            await asyncio.sleep(0)

            sender = asyncio.create_task(keep_sending())
            await c.next_of("ack")  # events are flowing
            await within(sc.stop(), 30)
            assert await c.wait_closed() == 1001
            await within(sender)
            acked = [r.frame["event_id"] for r in c.received if r.frame["type"] == "ack"]
            assert not c.untaken("error")
    finally:
        await within(sc.stop(), 30)
    assert acked, "no event was acknowledged before the stop"
    assert set(acked) == stored_ids(tmp_path / "x.db")  # stored iff acked: no ack was lost
    assert acked == [e for e in sent if e in set(acked)]  # acks in send order


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def health(port: int) -> dict[str, object] | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/", timeout=2) as resp:
            assert resp.status == 200
            body: dict[str, object] = json.loads(resp.read())
            return body
    except (urllib.error.URLError, ConnectionError, OSError):
        return None


async def wait_healthy(port: int, proc: subprocess.Popen[bytes]) -> dict[str, object]:
    async def poll() -> dict[str, object]:
        while True:
            assert proc.poll() is None, "credence serve exited before it was healthy"
            body = await asyncio.to_thread(health, port)
            if body is not None:
                return body
            await asyncio.sleep(0.05)

    return await within(poll(), 30)


async def test_credence_serve_process_serves_logs_and_stops_on_sigterm(tmp_path: Path) -> None:
    """credence serve answers health, acks an event, logs each connection once, never the token."""
    port = free_port()
    token = "s3cret-t0ken-value"
    log_path = tmp_path / "serve.log"
    cmd = [
        sys.executable, "-m", "sidecar.cli", "serve", "--port", str(port),
        "--db", str(tmp_path / "x.db"),
        "--token", f"town={token}", "--read-token", "town=r3ad-t0ken",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        body = await wait_healthy(port, proc)
        assert body["status"] == "ok"
        url = f"ws://127.0.0.1:{port}"
        async with WsClient(url, token=token) as c:
            assert c.welcome is not None and c.welcome["role"] == "writer"
            ack = await c.event("observe", **observe(["mira"], "water:well", "clean"))
            assert ack["type"] == "ack" and ack["changes"] == 1
        async with WsClient(url, headers={"Authorization": "Bearer r3ad-t0ken"}) as r:
            reply = await r.request({"type": "beliefs", "resident": "mira"})
            assert [b["value"] for b in reply["beliefs"]] == ["clean"]
        async with WsClient(url, token="not-" + token) as bad:
            assert await bad.wait_closed() == 4001
        async with WsClient(url, token=token, subscribe="*") as live:
            assert live.welcome is not None
            proc.send_signal(signal.SIGTERM)
            assert await live.wait_closed() == 1001
        code = await within(asyncio.to_thread(proc.wait), 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(guard(10))
    assert code == 0
    assert db_rows(tmp_path / "x.db", "SELECT count(*) FROM events") == [(1,)]
    text = log_path.read_text()
    assert token not in text and "r3ad-t0ken" not in text
    opened = re.findall(r"conn (\d+) open from", text)
    closed = re.findall(r"conn (\d+) closed code=", text)
    refused = re.findall(r"conn (\d+) from \S+ refused", text)
    assert len(opened) == 3 and len(set(opened)) == 3, text
    assert sorted(closed) == sorted(opened), text
    assert len(refused) == 1 and refused[0] not in opened, text
    assert re.search(rf"conn {opened[-1]} closed code=1001", text), text
