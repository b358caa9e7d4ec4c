"""The file-handle budget (sidecar/server/handles.py): world files first, connections with
what is left; a connection past ``max_connections`` is answered 503 before its handshake,
and the connections already open and every world's file keep their handles."""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import urllib.request
from pathlib import Path

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus
from wsclient import guard

from sidecar.server.handles import DEFAULT_MAX_CONNECTIONS, PER_WORLD, RESERVE, budget

ROOT = Path(__file__).resolve().parents[1]
#: Clients that connect at the same moment. A refused connection holds its socket until its
#: 503 is written and it closes, so a crowd larger than the handles set aside (RESERVE) that
#: arrives in one instant can still leave a world file no handle for that instant (a hello
#: then answered `internal_error`, close 1013: retry later); the sidecar raises its own limit
#: to the hard one for that. Ten at a time, as clients of a game reconnect, it never does.
WAVE = 10


def test_the_budget_gives_world_files_their_share_first() -> None:
    """Connections get what the limit leaves beside the world files and the reserve, at most
    the default; a configured number that does not fit, or a limit that leaves none, is one
    line naming the numbers."""
    worlds = PER_WORLD * 64 * 3
    b = budget(pools=3, per_pool=64, configured=None, limit=1024)
    assert (b.worlds, b.max_connections) == (worlds, 1024 - worlds - RESERVE)
    assert budget(pools=3, per_pool=64, configured=None, limit=1 << 20).max_connections == (
        DEFAULT_MAX_CONNECTIONS
    )
    assert budget(pools=3, per_pool=64, configured=50, limit=1024).max_connections == 50
    with pytest.raises(ValueError, match=r"max_connections 5000 does not fit .*at most 384"):
        budget(pools=3, per_pool=64, configured=5000, limit=1024)
    with pytest.raises(ValueError, match=r"leaves no room for a connection .*max_open_worlds"):
        budget(pools=3, per_pool=64, configured=None, limit=600)


def _serve(data_dir: Path, nofile: int, *extra: str) -> tuple[subprocess.Popen[str], str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar.cli", "serve", "--port", "0", "--data-dir",
         str(data_dir), "--log-level", "WARNING", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("CREDENCE_URL="):
        proc.kill()
        raise AssertionError(f"no URL: {line!r} {proc.communicate(timeout=guard(30))[1]}")
    return proc, line.split("=", 1)[1].strip()


async def _hello(url: str, world: str) -> ClientConnection | int:
    """A connection welcomed into ``world``, or the HTTP status its upgrade was refused with."""
    try:
        ws = await connect(url)
    except InvalidStatus as exc:
        return exc.response.status_code
    await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": world}))
    reply = msgpack.unpackb(await asyncio.wait_for(ws.recv(), guard(30)))
    assert reply["type"] == "welcome", reply
    return ws


def _health(url: str) -> tuple[int, dict[str, object]]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url.replace("ws://", "http://") + "/", timeout=guard(10)) as resp:
        return resp.status, json.loads(resp.read())


async def test_connections_past_the_limit_are_refused_503_and_worlds_still_open(
    tmp_path: Path,
) -> None:
    """RLIMIT_NOFILE 256 and 16 world files open at most per pool: 48 connections fit beside
    the world files. 250 clients, ten at a time: 48 are welcomed, the rest answered 503 before any
    handshake; then a welcomed client writes into 20 worlds never opened before, each file
    opening. Before, they were taken until no handle was left: 243 welcomed, 7 timed out, the
    next event refused and the health check unreachable. Once some close, newcomers are
    welcomed again."""
    proc, url = _serve(tmp_path / "worlds", 256, "--max-open-worlds", "16")
    try:
        status, health = await asyncio.to_thread(_health, url)
        assert status == 200 and health["max_connections"] == 256 - PER_WORLD * 16 * 3 - RESERVE
        got: list[ClientConnection | int] = []
        for wave in range(0, 250, WAVE):  # (see WAVE)
            got += await asyncio.gather(
                *(_hello(url, f"w{i % 5}") for i in range(wave, wave + WAVE))
            )
        open_ = [c for c in got if not isinstance(c, int)]
        assert len(open_) == 48 and [c for c in got if isinstance(c, int)] == [503] * 202
        writer = open_[0]
        for n in range(20):
            event = {"type": "event", "event_id": f"e{n}", "day": 1, "kind": "observe",
                     "world": f"fresh{n}", "witnesses": ["mira"],
                     "claim": {"root": "k", "value": n}, "subject": "seen"}  # fmt: skip
            await writer.send(msgpack.packb(event))
        replies = [
            msgpack.unpackb(await asyncio.wait_for(writer.recv(), guard(30))) for _ in range(20)
        ]
        assert [r["type"] for r in replies] == ["ack"] * 20, replies
        status, health = await asyncio.to_thread(_health, url)
        assert status == 200 and health["connections"] == 48 and health["unavailable_worlds"] == 0
        for c in open_[-10:]:
            await c.close()
        await asyncio.sleep(0.2)
        again = await asyncio.gather(*(_hello(url, "w0") for _ in range(10)))
        assert all(not isinstance(c, int) for c in again)
        for c in [*open_[:-10], *again]:
            if not isinstance(c, int):
                await c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=guard(30))


def test_a_max_connections_the_handle_limit_cannot_hold_is_refused_at_start(
    tmp_path: Path,
) -> None:
    """One line on stderr, exit 2, nothing created."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    done = subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "serve", "--port", "0", "--data-dir",
         str(tmp_path / "worlds"), "--max-open-worlds", "16", "--max-connections", "500"],
        cwd=ROOT, capture_output=True, text=True, timeout=guard(60), preexec_fn=limit,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "max_connections 500 does not fit" in done.stderr and "at most 48" in done.stderr
    assert not (tmp_path / "worlds").exists()


def test_the_soft_limit_is_raised_as_near_the_hard_one_as_the_system_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS: soft 256, hard unlimited, but no more than 10,240 may be set. The limit goes to
    10,240 (not left at 256, which leaves `--data-dir`'s default world files no room); a hard
    limit of 4,000 is reached exactly; a soft limit already there is left alone."""
    from sidecar.server import handles

    def system(soft: int, hard: int, most: int) -> list[tuple[int, int]]:
        state = {"soft": soft}
        calls: list[tuple[int, int]] = []

        def setrlimit(kind: int, limits: tuple[int, int]) -> None:
            calls.append(limits)
            if limits[0] > most:
                raise ValueError("not allowed")
            state["soft"] = limits[0]

        monkeypatch.setattr(handles.resource, "getrlimit", lambda kind: (state["soft"], hard))
        monkeypatch.setattr(handles.resource, "setrlimit", setrlimit)
        return calls

    infinity = handles.resource.RLIM_INFINITY
    system(256, infinity, 10_240)
    assert handles.raise_limit() == 10_240
    system(256, 4_000, 4_000)
    assert handles.raise_limit() == 4_000
    calls = system(8_192, 8_192, 8_192)
    assert handles.raise_limit() == 8_192 and calls == []
    assert budget(pools=3, per_pool=64, configured=None, limit=10_240).max_connections == (
        10_240 - PER_WORLD * 64 * 3 - RESERVE
    )
