"""README's sharding recipe, for real: HAProxy routes ``/w/<world>`` over two sidecars.

The HAProxy configuration is read from README ("Sharding worlds across processes and
machines"), with only its three ``host:port`` addresses replaced by loopback ones, so the
docs cannot drift from what is tested. Skipped without haproxy (``apt-get install haproxy``);
a failure instead when ``$CREDENCE_REQUIRE_HAPROXY`` is set, as ``.ci/run`` does.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from wsclient import guard

from tools.harness import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
REQUIRE = "CREDENCE_REQUIRE_HAPROXY"
HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
WORLDS = [f"shard-{i:02d}" for i in range(40)]
EVENTS = 8
#: Connections are tried while a backend is down until one is opened this long after it
#: went: longer than HAProxy's default health check (3 failures, 2 s apart) would take to
#: mark it down and rehash its worlds. (Each try takes about 3 s itself: HAProxy's 3
#: retries, 1 s apart, before its 503.)
PROBING = 7.0

#: The README's addresses and what the test puts in their place (frontend, server a, b).
ADDRESSES = ("0.0.0.0:8765", "10.0.0.11:8765", "10.0.0.12:8765")


def readme_config() -> str:
    """The HAProxy configuration block of README's sharding paragraph."""
    section = README.partition("**Sharding worlds across processes and machines.**")[2]
    found = re.search(r"```haproxy\n(.*?)```", section, re.S)
    assert found, "README's sharding paragraph has no ```haproxy block"
    return found[1]


def config_for(ports: tuple[int, int, int]) -> str:
    """README's configuration with loopback addresses (each README address exactly once)."""
    text = readme_config()
    for address, port in zip(ADDRESSES, ports, strict=True):
        assert text.count(address) == 1, f"README's HAProxy config should name {address} once"
        text = text.replace(address, f"127.0.0.1:{port}")
    return text


def need_haproxy() -> str:
    if HAPROXY is None:
        reason = "haproxy is not installed (apt-get install -y haproxy; .ci/run does)"
        if os.environ.get(REQUIRE):
            pytest.fail(f"{reason}, and ${REQUIRE} is set")
        pytest.skip(reason)
    return HAPROXY


def credence(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args],
        capture_output=True, text=True, timeout=guard(300), check=False,
    )  # fmt: skip


def serve_data_dir(data_dir: Path) -> Callable[[int], list[str]]:
    """The argv of ``credence serve --data-dir`` on a given port (for ServerProcess)."""

    def argv(port: int) -> list[str]:
        return [
            sys.executable, "-m", "sidecar.cli", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--data-dir", str(data_dir), "--log-level", "WARNING",
        ]  # fmt: skip

    return argv


def worlds_in(data_dir: Path) -> dict[str, int]:
    """World id → events in its log, for every world file of ``data_dir``."""
    done = credence("worlds", "--data-dir", str(data_dir), "--json")
    assert done.returncode == 0, done.stderr
    rows = [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {row["world"]: row["events"] for row in rows}


class World:
    """A game's connection to one world through the proxy, subscribed to every change."""

    def __init__(self, proxy: int, world: str) -> None:
        self.url = f"ws://127.0.0.1:{proxy}/w/{world}"
        self.world = world
        self.ws: ClientConnection | None = None
        self.seqs: list[int] = []  # every change seq received, in order
        self.sent = 0
        self.welcome_seq = 0

    async def open(self) -> None:
        ws = await asyncio.wait_for(connect(self.url, proxy=None, open_timeout=10), guard(15))
        hello: dict[str, Any] = {"type": "hello", "protocol": 1, "world": self.world,
                                 "subscribe": "*"}  # fmt: skip
        if self.seqs:
            hello["resume"] = self.seqs[-1]
        await ws.send(msgpack.packb(hello))
        welcome = await self.recv(ws)
        assert welcome["type"] == "welcome" and welcome["world"] == self.world, welcome
        self.welcome_seq = welcome["seq"]
        if "resume" in hello:
            while (frame := await self.recv(ws))["type"] != "resumed":
                assert frame["type"] == "belief", frame
        self.ws = ws

    async def recv(self, ws: ClientConnection) -> dict[str, Any]:
        frame: dict[str, Any] = msgpack.unpackb(await asyncio.wait_for(ws.recv(), guard(30)))
        if frame["type"] == "belief":
            self.seqs.append(frame["seq"])
        return frame

    async def reopen(self, tries: int = 100) -> None:
        """Reconnect (and resume) until the world's backend answers again (bounded)."""
        for _ in range(tries):
            try:
                await self.open()
                return
            except (OSError, InvalidStatus, ConnectionClosed, TimeoutError):
                await asyncio.sleep(0.2)
        raise AssertionError(f"{self.world}: no welcome after {tries} tries")

    async def event(self, n: int) -> dict[str, Any]:
        """Send this world's event number ``n``; its ack (notifications are collected)."""
        assert self.ws is not None
        await self.ws.send(msgpack.packb({
            "type": "event", "event_id": f"{self.world}-{n}", "day": float(n), "kind": "observe",
            "witnesses": ["mira", "bo"], "claim": {"root": f"well:{n % 3}", "value": n % 2},
            "subject": f"the well {n % 3} is {'dry' if n % 2 else 'full'}",
        }))  # fmt: skip
        while (frame := await self.recv(self.ws))["type"] == "belief":
            pass
        assert frame["type"] == "ack" and frame["event_id"] == f"{self.world}-{n}", frame
        return frame

    async def play(self, first: int, count: int) -> None:
        for n in range(first, first + count):
            ack = await self.event(n)
            self.sent += not ack["duplicate"]

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None


async def test_haproxy_routes_each_world_to_one_backend_across_a_restart(tmp_path: Path) -> None:
    """README's HAProxy config over two credence serve --data-dir processes: 40 worlds on
    /w/<world> each land on one backend only; a killed backend's worlds refuse connections
    (never moving to the other) while the other's go on; restarted on its port and data dir,
    its clients reconnect, resume without a gap and go on; rebuild --check passes on both."""
    haproxy = need_haproxy()
    dirs = {name: tmp_path / name for name in ("a", "b")}
    backends = {name: ServerProcess(argv_for=serve_data_dir(d)) for name, d in dirs.items()}
    cfg = tmp_path / "haproxy.cfg"

    def proxy_argv(port: int) -> list[str]:
        cfg.write_text(config_for((port, backends["a"].port, backends["b"].port)))
        return [haproxy, "-db", "-f", str(cfg)]

    proxy = ServerProcess(argv_for=proxy_argv)
    clients = {w: World(0, w) for w in WORLDS}
    try:
        for backend in backends.values():
            backend.start()
        proxy.start()
        assert f"bind 127.0.0.1:{proxy.port}" in cfg.read_text()
        clients = {w: World(proxy.port, w) for w in WORLDS}
        await asyncio.gather(*(c.open() for c in clients.values()))
        await asyncio.gather(*(c.play(0, EVENTS) for c in clients.values()))

        placed = {name: worlds_in(d) for name, d in dirs.items()}
        assert not placed["a"].keys() & placed["b"].keys()
        assert placed["a"].keys() | placed["b"].keys() == set(WORLDS)
        assert placed["a"] and placed["b"], "consistent hashing put every world on one side"
        assert all(n == EVENTS for side in placed.values() for n in side.values())
        on_a, on_b = sorted(placed["a"]), sorted(placed["b"])

        backends["a"].kill()  # a crash: nothing gets to run
        for w in on_a:
            await clients[w].close()
        probe = World(proxy.port, on_a[0])
        until = time.monotonic() + PROBING
        while True:  # until a connection opened later than a health check would take
            started = time.monotonic()
            with pytest.raises(InvalidStatus) as refused:
                await probe.open()
            assert refused.value.response.status_code == 503  # not routed to b
            if started >= until:
                break
        await clients[on_b[0]].play(EVENTS, 1)  # b's worlds go on meanwhile

        backends["a"].start()  # the same port and data dir
        assert backends["a"].port == int(re.findall(r"server a 127\.0\.0\.1:(\d+)",
                                                    cfg.read_text())[0])  # fmt: skip
        for w in on_a:
            seen = clients[w].seqs[-1]
            await clients[w].reopen()
            assert clients[w].welcome_seq >= seen, "an acknowledged change was lost"
        await asyncio.gather(*(c.play(EVENTS + 1, EVENTS) for c in clients.values()))
        for c in clients.values():  # a game resending its last event gets a duplicate ack
            assert (await c.event(EVENTS + EVENTS))["duplicate"] is True
            assert c.seqs == list(range(1, len(c.seqs) + 1)), f"{c.world}: a gap or a repeat"
    finally:
        for c in clients.values():
            await c.close()
        proxy.close()
        for backend in backends.values():
            backend.close()

    placed = {name: worlds_in(d) for name, d in dirs.items()}
    assert sorted(placed["a"]) == on_a and sorted(placed["b"]) == on_b
    for w, c in clients.items():
        side = placed["a"] if w in placed["a"] else placed["b"]
        assert side[w] == c.sent == 2 * EVENTS + (w == on_b[0])
    for d in dirs.values():
        done = credence("rebuild", "--data-dir", str(d), "--check")
        assert done.returncode == 0, done.stdout + done.stderr
        assert re.search(r"(\d+) world file\(s\), 0 with differences", done.stdout)


def test_readme_config_names_each_address_once() -> None:
    """The README block the sharding test runs has the frontend and both servers, no checks
    (a backend marked down would have its worlds rehashed to another) and no redispatch."""
    text = readme_config()
    for address in ADDRESSES:
        assert text.count(address) == 1, address
    assert "balance uri depth 2" in text and "hash-type consistent" in text
    assert not re.search(r"^\s*server .*\bcheck\b", text, re.M)
    assert not re.search(r"^\s*option\s+redispatch", text, re.M)
