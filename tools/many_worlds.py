"""Many worlds in one data directory: file handles, memory and times, printed (never asserted).

``python -m tools.many_worlds [--worlds 10000] [--touch 2000] [--max-open 64] [--nofile 1024]``
fills a temporary data directory with ``--worlds`` world files, starts ``credence serve
--data-dir`` on it as a child process with its file-handle limit (``RLIMIT_NOFILE``) set to
``--nofile``, and has clients (``--clients`` at a time) each open one of ``--touch`` worlds,
send an event and wait for its ack. It prints the time to start (which renames nothing: the
files are of the current scheme) and to list every world (cold, then warm), the child's open
file handles (the most seen, sampled through ``/proc``) and its resident memory, and how many
events were acknowledged. ``tests/test_store_pool.py`` runs it small under a low limit.

The world files are made quickly: one world is created through :class:`DataDir`, and each
other one is a copy of that file with the id replaced byte for byte (the ids have one length,
and the id is stored twice: the ``worlds`` row and its primary-key index).

``--behind``: every world file is as the previous version left it (its last migration
undone, :mod:`tools.old_files`), as after an upgrade, so each touched world's first event
waits for its file's migration in the worker process. Meanwhile one more client sends event
after event to a world of its own (current) and the ack latency it sees is printed: other
worlds' acks should not wait for the upgrades.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from sidecar.engine import DEFAULT_RULES
from sidecar.store import DataDir, world_file
from tools.harness import LOOPBACK, free_port, percentiles, read_memory
from tools.old_files import before_pieces

__all__ = ["Figures", "make_worlds", "measure", "world_id"]


#: The world of the client that measures acks meanwhile (one more world on disk).
STEADY = "steady"


def world_id(i: int) -> str:
    return f"w{i:06d}"


def make_worlds(data_dir: Path, n: int, *, behind: bool = False) -> float:
    """``n`` worlds ``w000000``… in ``data_dir`` (see the module docstring); the seconds taken.
    ``behind``: each file as the previous version left it."""
    start = time.perf_counter()
    store = DataDir(data_dir)
    try:
        store.ensure_world(world_id(0), DEFAULT_RULES)
    finally:
        store.close()  # (the last connection folds the WAL in: the file is the whole world)
    if behind:
        before_pieces(world_file(data_dir, world_id(0)))
    template = world_file(data_dir, world_id(0)).read_bytes()
    marker = world_id(0).encode()
    assert template.count(marker) == 2, "the template holds its id in its row and its index"
    for i in range(1, n):
        world_file(data_dir, world_id(i)).write_bytes(
            template.replace(marker, world_id(i).encode())
        )
    return time.perf_counter() - start


def _limit(nofile: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


@dataclass(slots=True)
class Figures:
    worlds: int
    touched: int
    acked: int = 0
    refused: list[str] = field(default_factory=list)
    make_s: float = 0.0
    start_s: float = 0.0
    list_cold_s: float = 0.0
    list_warm_s: float = 0.0
    listed: int = 0
    fds_max: int = 0
    fds_idle: int = 0
    rss_mib: float = 0.0
    peak_mib: float = 0.0
    health: str = ""
    touch_s: float = 0.0
    #: The ack latencies (seconds) one more client saw on a world of its own meanwhile.
    steady: list[float] = field(default_factory=list)

    def steady_line(self) -> str:
        if not self.steady:
            return "no acks"
        ms = {k: v * 1000 for k, v in percentiles(self.steady, (50, 99)).items()}
        return (
            f"{len(self.steady)} acks meanwhile, one at a time: p50 {ms['p50']:.1f}, "
            f"p99 {ms['p99']:.1f}, max {ms['max']:.1f} ms"
        )

    def lines(self) -> list[str]:
        return [
            f"worlds on disk      {self.worlds} (made in {self.make_s:.1f} s)",
            f"start               {self.start_s:.2f} s to accept connections",
            f"touched             {self.touched} worlds, {self.acked} events acked, "
            f"{len(self.refused)} refused, in {self.touch_s:.1f} s",
            f"another world       {self.steady_line()}",
            f"open file handles   at most {self.fds_max} while touching, {self.fds_idle} after",
            f"resident memory     {self.rss_mib:.0f} MiB after (peak {self.peak_mib:.0f} MiB)",
            f"worlds listing      {self.listed} worlds: {self.list_cold_s:.2f} s cold, "
            f"{self.list_warm_s:.2f} s warm",
            f"health              {self.health}",
        ]


async def _request(ws: object, frame: dict[str, object]) -> list[dict[str, object]]:
    """Send ``frame`` and gather the parts of its reply (SPEC §11)."""
    await ws.send(msgpack.packb(frame))  # type: ignore[attr-defined]
    parts = []
    while True:
        reply = msgpack.unpackb(await ws.recv())  # type: ignore[attr-defined]
        if reply.get("rid") != frame.get("rid"):
            continue
        parts.append(reply)
        if not reply.get("more"):
            return parts


async def _hello(ws: object, world: str) -> dict[str, object]:
    hello = {"type": "hello", "protocol": 1, "world": world, "client": "many_worlds"}
    await ws.send(msgpack.packb(hello))  # type: ignore[attr-defined]
    reply: dict[str, object] = msgpack.unpackb(await ws.recv())  # type: ignore[attr-defined]
    return reply


async def _touch(url: str, world: str, figures: Figures) -> None:
    try:
        await _touch_once(url, world, figures)
    except ConnectionClosed as exc:  # (counted, not raised: the figures say how many)
        figures.refused.append(f"{world}: closed {exc.rcvd.code if exc.rcvd else None}")


async def _touch_once(url: str, world: str, figures: Figures) -> None:
    async with connect(url, proxy=None, compression=None, ping_interval=None) as ws:
        welcome = await _hello(ws, world)
        if welcome.get("type") != "welcome":
            figures.refused.append(f"{world}: {welcome.get('code')}: {welcome.get('message')}")
            return
        event = {"type": "event", "event_id": f"{world}-tick", "kind": "tick", "day": 1}
        await ws.send(msgpack.packb(event))
        while True:
            reply = msgpack.unpackb(await ws.recv())
            if reply.get("event_id") == event["event_id"]:
                break
        if reply.get("type") == "ack":
            figures.acked += 1
        else:
            figures.refused.append(f"{world}: {reply.get('code')}: {reply.get('message')}")


async def _drive(url: str, pid: int, figures: Figures, clients: int) -> None:
    step = figures.worlds // max(figures.touched, 1)
    queue = [world_id(i * step) for i in range(figures.touched)]
    sampling = True

    async def sample() -> None:
        while sampling:
            figures.fds_max = max(figures.fds_max, open_fds(pid))
            await asyncio.sleep(0.02)

    async def worker() -> None:
        while queue:
            await _touch(url, queue.pop(), figures)

    touching = True

    async def steady() -> None:  # one more client, on a world of its own, all along
        async with connect(url, proxy=None, compression=None, ping_interval=None) as ws:
            await _hello(ws, STEADY)
            for n in itertools.count():
                if not touching:
                    return
                event = {"type": "event", "event_id": f"s{n}", "kind": "tick", "day": 1}
                sent = time.perf_counter()
                await ws.send(msgpack.packb(event))
                while msgpack.unpackb(await ws.recv()).get("event_id") != event["event_id"]:
                    pass
                figures.steady.append(time.perf_counter() - sent)

    sampler = asyncio.create_task(sample())
    steadily = asyncio.create_task(steady())
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    figures.touch_s = time.perf_counter() - start
    touching = False
    await steadily
    async with connect(url, proxy=None, compression=None, ping_interval=None) as ws:
        await _hello(ws, world_id(0))
        for attempt in ("cold", "warm"):
            start = time.perf_counter()
            parts = await _request(ws, {"type": "worlds", "rid": attempt})
            took = time.perf_counter() - start
            if attempt == "cold":
                figures.list_cold_s = took
            else:
                figures.list_warm_s = took
            figures.listed = sum(len(p.get("worlds", [])) for p in parts)  # type: ignore[arg-type]
    sampling = False
    await sampler


def _health(port: int) -> str:
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{LOOPBACK}:{port}/", timeout=10) as resp:
            return f"{resp.status} {resp.read().decode().strip()}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode().strip()}"


def measure(
    data_dir: Path, *, worlds: int, touch: int, max_open: int, nofile: int, clients: int = 16,
    make: bool = True, behind: bool = False,
) -> Figures:  # fmt: skip
    """Make the worlds (unless ``make`` is false; ``behind``: as the previous version left
    them), serve them, touch them; the figures."""
    figures = Figures(worlds=worlds, touched=min(touch, worlds))
    if make:
        figures.make_s = make_worlds(data_dir, worlds, behind=behind)
    port = free_port()
    argv = [
        sys.executable, "-m", "sidecar.cli", "serve", "--host", LOOPBACK, "--port", str(port),
        "--data-dir", str(data_dir), "--max-open-worlds", str(max_open), "--log-level", "ERROR",
        "--synchronous", "NORMAL",
    ]  # fmt: skip
    start = time.perf_counter()
    log = (data_dir.parent / "serve.log").open("wb")
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=log, preexec_fn=lambda: _limit(nofile)
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("CREDENCE_URL="):
            raise RuntimeError(f"credence serve did not start: {line!r}")
        figures.start_s = time.perf_counter() - start
        asyncio.run(_drive(line.strip().split("=", 1)[1], proc.pid, figures, clients))
        figures.fds_idle = open_fds(proc.pid)
        memory = read_memory(proc.pid)
        if memory is not None:
            figures.peak_mib, figures.rss_mib = memory
        figures.health = _health(port)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.many_worlds", description=__doc__)
    p.add_argument("--worlds", type=int, default=10_000)
    p.add_argument("--touch", type=int, default=2_000)
    p.add_argument("--max-open", type=int, default=64)
    p.add_argument("--nofile", type=int, default=1024)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument(
        "--behind", action="store_true",
        help="world files as the previous version left them (each upgraded at its first event)",
    )  # fmt: skip
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="credence-many-worlds-") as tmp:
        figures = measure(
            Path(tmp) / "worlds", worlds=args.worlds, touch=args.touch,
            max_open=args.max_open, nofile=args.nofile, clients=args.clients,
            behind=args.behind,
        )  # fmt: skip
        again = measure(
            Path(tmp) / "worlds", worlds=args.worlds, touch=0, max_open=args.max_open,
            nofile=args.nofile, clients=args.clients, make=False,
        )  # fmt: skip
    print(
        f"credence serve --data-dir, --max-open-worlds {args.max_open}, "
        f"RLIMIT_NOFILE {args.nofile}, {args.clients} clients at a time"
        + (", every world file one migration behind" if args.behind else "")
    )
    for line in figures.lines():
        print(line)
    print(
        f"after a restart     {again.start_s:.2f} s to start, listing {again.listed} worlds "
        f"{again.list_cold_s:.2f} s (from .credence-worlds), {again.fds_idle} handles, "
        f"{again.rss_mib:.0f} MiB"
    )
    for refusal in figures.refused[:5]:
        print(f"  refused: {refusal}")
    return 0 if not figures.refused else 1


if __name__ == "__main__":
    sys.exit(main())
