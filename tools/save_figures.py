"""Figures for saves at a long game's size: import and fork times, and what a fork does to
another world's acks.

``python -m tools.save_figures [N]`` (default 20,000 events), for ``--db`` and for
``--data-dir``: imports a synthetic town of N events (``tools.town``) as ``credence import``
does and times it; starts ``credence serve`` on that store (its own process, loopback, an
ephemeral port); times a fork of the town over the wire with nothing else going on; then
measures one client's acks on another world (sequential: each event waits for the previous
ack) first with no save running, then during a second fork of the town, then while the first
fork is deleted (until its id takes events again: its rows are gone). It prints p50, p99 and
the worst ack of each phase and how many acks went through. It asserts
nothing: a busy machine shows in every figure (compare the two phases of one run).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack

from sidecar.engine import DEFAULT_RULES, parse_event
from sidecar.store import DataDir, SingleFile

from .harness import free_port, percentiles
from .load import open_client
from .town import Town

__all__ = ["main"]

BASELINE_ACKS = 200


def _store(mode: str, where: Path) -> SingleFile | DataDir:
    return SingleFile(where) if mode == "db" else DataDir(where)


async def _request(ws: Any, frame: dict[str, Any]) -> dict[str, Any]:
    await ws.send(msgpack.packb(frame))
    while True:
        reply: dict[str, Any] = msgpack.unpackb(await ws.recv(), raw=False)
        if reply.get("rid") == frame.get("rid") or reply.get("event_id") == frame.get("event_id"):
            return reply


class _Acks:
    """Sequential events on one world, each timed from send to its ack."""

    def __init__(self, ws: Any) -> None:
        self.ws, self.day, self.ids = ws, 1.0, itertools.count()

    async def one(self) -> float:
        event = {
            "type": "event", "event_id": f"a{next(self.ids)}", "kind": "observe",
            "day": self.day, "witnesses": ["ann"], "claim": {"root": "k", "value": 1},
            "subject": "k",
        }  # fmt: skip
        self.day += 0.001
        start = time.perf_counter()
        reply = await _request(self.ws, event)
        if reply.get("type") != "ack":
            raise RuntimeError(f"event refused: {reply}")
        return time.perf_counter() - start


async def _measure(url: str, n: int) -> dict[str, Any]:
    town = await open_client(url, "town", None)
    other = await open_client(url, "other", None)
    try:
        start = time.perf_counter()
        alone = await _request(town, {"type": "fork", "into": "slot-1", "rid": 1})
        fork_alone = time.perf_counter() - start
        assert alone.get("type") == "forked" and alone["events"] == n, alone
        acks = _Acks(other)
        baseline = [await acks.one() for _ in range(BASELINE_ACKS)]
        fork = asyncio.ensure_future(_request(town, {"type": "fork", "into": "slot-2", "rid": 2}))
        start = time.perf_counter()
        during = []
        while not fork.done():
            during.append(await acks.one())
        fork_busy = time.perf_counter() - start
        assert fork.result().get("type") == "forked", fork.result()
        start = time.perf_counter()
        deleted = await _request(other, {"type": "delete", "world": "slot-1", "rid": 3})
        assert deleted.get("type") == "deleted", deleted
        delete_reply = time.perf_counter() - start
        gone = asyncio.ensure_future(_until_free(url, "slot-1"))
        deleting = []
        while not gone.done():
            deleting.append(await acks.one())
        delete_rows = time.perf_counter() - start
    finally:
        await town.close()
        await other.close()
    return {"fork_alone": fork_alone, "fork_busy": fork_busy, "baseline": baseline,
            "during": during, "delete_reply": delete_reply, "delete_rows": delete_rows,
            "deleting": deleting}  # fmt: skip


async def _until_free(url: str, world: str) -> None:
    """Until an event for the deleted ``world`` is taken (its rows are gone: not world_busy)."""
    ws = await open_client(url, world, None)
    try:
        for i in itertools.count():
            event = {"type": "event", "event_id": f"free{i}", "kind": "tick", "day": 1}
            reply = await _request(ws, event)
            if reply.get("type") == "ack":
                return
            if reply.get("code") != "world_busy":
                raise RuntimeError(f"event refused: {reply}")
            await asyncio.sleep(0.02)
    finally:
        await ws.close()


def _serve(args: list[str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sidecar.cli", "serve", "--port", str(port), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def _wait_up(url: str, server: subprocess.Popen[bytes]) -> None:
    for _ in range(1200):
        if server.poll() is not None:
            raise RuntimeError(f"the sidecar exited with {server.returncode}")
        try:
            ws = await open_client(url, "probe", None)
        except (OSError, RuntimeError, TimeoutError):
            await asyncio.sleep(0.05)
            continue
        await ws.close()
        return
    raise RuntimeError("the sidecar did not start")


def _ms(samples: list[float]) -> str:
    p = percentiles(samples)
    return f"p50 {p['p50'] * 1e3:6.1f}  p99 {p['p99'] * 1e3:6.1f}  max {p['max'] * 1e3:6.1f} ms"


def run(mode: str, n: int, tmp: Path) -> list[str]:
    events = [parse_event(e) for _, e in itertools.islice(Town(50, seed=1), n)]
    where = tmp / ("a.db" if mode == "db" else "worlds")
    store = _store(mode, where)
    try:
        start = time.perf_counter()
        store.import_events("town", DEFAULT_RULES, events)
        imported = time.perf_counter() - start
    finally:
        store.close()
    port = free_port()
    server = _serve([f"--{mode.replace('_', '-')}", str(where)], port)
    try:
        url = f"ws://127.0.0.1:{port}"
        asyncio.run(_wait_up(url, server))
        res = asyncio.run(_measure(url, n))
    finally:
        server.terminate()
        server.wait(30)
    return [
        f"--{mode.replace('_', '-')}: {n} town events",
        f"  import (as credence import)   {imported:7.2f} s  ({n / imported:.0f} events/s)",
        f"  fork over the wire, alone     {res['fork_alone']:7.2f} s",
        f"  fork while another world acks {res['fork_busy']:7.2f} s",
        f"  other world's acks, no save   {_ms(res['baseline'])}  (n={len(res['baseline'])})",
        f"  other world's acks, in a fork {_ms(res['during'])}  (n={len(res['during'])})",
        f"  delete of the fork: reply     {res['delete_reply']:7.2f} s, id free after "
        f"{res['delete_rows']:.2f} s",
        f"  other world's acks, deleting  {_ms(res['deleting'])}  (n={len(res['deleting'])})",
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.save_figures", description=__doc__)
    p.add_argument("events", nargs="?", type=int, default=20_000, help="town events (20,000)")
    n = p.parse_args(argv).events
    with tempfile.TemporaryDirectory(prefix="credence-saves-") as name:
        for mode in ("db", "data_dir"):
            sub = Path(name) / mode
            sub.mkdir()
            for line in run(mode, n, sub):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
