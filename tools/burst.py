"""``python -m tools.burst``: one commit far bigger than a subscriber's outbox.

A town-wide announcement in a big town, or a long time skip that ages thousands of rumours,
makes one commit of thousands of notifications; past the outbox bound (1 MiB by default,
~4,000 of them) a sidecar used to close every ``"*"`` subscriber 4008 ``slow_consumer``,
however fast it read. Now a subscriber that keeps up is caught up from SQLite as its outbox
drains (SPEC §14.4), and an ack on a connection that also subscribes still comes after the
notifications of its event (§14.2).

``python -m tools.burst [--residents N] [--subscribers K] [--outbox BYTES]`` starts
``credence serve`` as a child process (a real SQLite file, an ephemeral loopback port),
introduces ``N`` residents (observed 256 at a time), connects ``K`` subscribers to ``"*"``
(raw ``websockets`` + ``msgpack``, one task each, reading as fast as they can) and a writer
that subscribes too, then sends one ``announce`` to ``"*"``. Printed: the announcement's
change count, when its ack came, when each subscriber had every notification of it (first,
median and last subscriber), the rate, how many were closed and with which codes, whether
the writer's ack came after its notifications, the ack latency of another world's writer
sending one event at a time (before the announcement, and until every subscriber had its
notifications: it shares this client process), and the sidecar's peak RSS. Figures are
printed, never asserted (``tests/test_tools_bench.py`` checks that they come).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import websockets

from .harness import ServerProcess, percentiles

__all__ = ["Burst", "main", "run"]

WORLD = "burst"
#: Another world of the same sidecar, whose writer sends one event at a time throughout.
STEADY = "steady"
#: Its events timed before the announcement (the figures to compare with).
STEADY_BEFORE = 50
#: Residents an ``observe`` may name at once (SPEC §7.1).
WITNESSES = 256


@dataclass
class Burst:
    """What one run measured (times in seconds after the announcement was sent)."""

    residents: int
    subscribers: int
    outbox: int | None
    changes: int = 0
    ack_at: float = 0.0
    done_at: list[float] = field(default_factory=list)  # per subscriber that got them all
    closed: list[int | None] = field(default_factory=list)  # per subscriber closed early
    ack_after_notes: bool = False
    writer_closed: int | None = None  # the writer's connection closed before its ack
    #: Ack latencies (s) of another world's writer, one event at a time: before the
    #: announcement, and from it until every subscriber had its notifications.
    steady_before: list[float] = field(default_factory=list)
    steady_during: list[float] = field(default_factory=list)
    peak_rss_mib: float | None = None


async def _hello(url: str, world: str = WORLD, **extra: Any) -> Any:
    ws = await websockets.connect(url, max_size=None)
    await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": world, **extra}))
    welcome = msgpack.unpackb(await ws.recv())
    if welcome.get("type") != "welcome":
        raise RuntimeError(f"hello refused: {welcome}")
    return ws


async def _read_until(ws: Any, seq: int) -> None:
    """Read belief frames until ``seq`` has come (other frames are passed over)."""
    while True:
        frame = msgpack.unpackb(await ws.recv())
        if frame.get("type") == "belief" and frame["seq"] >= seq:
            return


@dataclass
class _Follower:
    """One subscriber reading as fast as it can: when each seq came, and how it ended."""

    ws: Any
    start: float
    arrivals: list[tuple[int, float]] = field(default_factory=list)
    closed: int | None = None
    ended: bool = False

    async def follow(self) -> None:
        try:
            while True:
                frame = msgpack.unpackb(await self.ws.recv())
                if frame.get("type") == "belief":
                    self.arrivals.append((frame["seq"], time.perf_counter() - self.start))
        except websockets.ConnectionClosed as exc:
            self.closed = exc.rcvd.code if exc.rcvd else None
            self.ended = True

    def reached(self, seq: int) -> float | None:
        """When the notification of ``seq`` (or a later one) came, if it has."""
        return next((t for s, t in self.arrivals if s >= seq), None)


async def _measure(url: str, burst: Burst) -> None:
    writer = await _hello(url, subscribe="*")
    subs = [await _hello(url, subscribe="*") for _ in range(burst.subscribers)]
    names = [f"r{i:05d}" for i in range(burst.residents)]
    last = 0
    for i in range(0, len(names), WITNESSES):
        await writer.send(msgpack.packb({
            "type": "event", "kind": "observe", "event_id": f"o{i}", "day": 1,
            "witnesses": names[i : i + WITNESSES], "claim": {"root": f"here:{i}", "value": 1},
            "subject": "seen about town",
        }))  # fmt: skip
        while True:
            frame = msgpack.unpackb(await writer.recv())
            if frame.get("type") == "ack":
                last = frame["seq"]
                break
    for ws in subs:  # (the writer read its own before each ack: SPEC §14.2)
        await _read_until(ws, last)
    steady = await _hello(url, world=STEADY)
    sent = 0

    async def one_event() -> float:
        nonlocal sent
        sent += 1
        began = time.perf_counter()
        await steady.send(msgpack.packb({
            "type": "event", "kind": "observe", "event_id": f"s{sent}", "day": 1 + sent / 1e4,
            "witnesses": ["keeper"], "claim": {"root": "lamp", "value": sent},
            "subject": "the lamp is lit",
        }))  # fmt: skip
        await steady.recv()
        return time.perf_counter() - began

    for _ in range(STEADY_BEFORE):
        burst.steady_before.append(await one_event())
    stop = asyncio.Event()

    async def steady_along() -> None:
        while not stop.is_set():
            burst.steady_during.append(await one_event())

    along = asyncio.create_task(steady_along())
    start = time.perf_counter()
    followers = [_Follower(ws, start) for ws in subs]
    tasks = [asyncio.create_task(f.follow()) for f in followers]
    await writer.send(msgpack.packb({
        "type": "event", "kind": "announce", "event_id": "crier", "day": 2, "speaker": names[0],
        "audience": "*", "claim": {"root": "festival:day", "value": 12},
        "subject": "The harvest festival is on day twelve, in the square",
    }))  # fmt: skip
    seen, wanted = 0, None
    try:
        while True:  # the writer's own connection: its notifications, then its ack
            frame = msgpack.unpackb(await writer.recv())
            if frame.get("type") == "belief":
                seen = frame["seq"]
            elif frame.get("type") == "ack":
                burst.ack_at = time.perf_counter() - start
                burst.changes = frame["changes"]
                burst.ack_after_notes = seen >= frame["seq"]
                wanted = frame["seq"]
                break
    except websockets.ConnectionClosed as exc:  # (what a sidecar before 2026-12-07 did)
        burst.writer_closed = exc.rcvd.code if exc.rcvd else -1
    if wanted is None:
        await asyncio.sleep(1.0)  # the subscribers' fate, too
        wanted = sys.maxsize
    deadline = time.perf_counter() + 300
    while time.perf_counter() < deadline:
        if all(f.ended or f.reached(wanted) is not None for f in followers):
            break
        await asyncio.sleep(0.01)
    stop.set()
    await along
    for f, task in zip(followers, tasks, strict=True):
        task.cancel()
        when = f.reached(wanted)
        if when is not None:
            burst.done_at.append(when)
        else:
            burst.closed.append(f.closed)
    for ws in [writer, steady, *subs]:
        await ws.close()


def run(residents: int, subscribers: int, outbox: int | None = None) -> Burst:
    burst = Burst(residents, subscribers, outbox)
    with tempfile.TemporaryDirectory(prefix="credence-burst-") as tmp:
        extra: tuple[str, ...] = ()
        if outbox is not None:  # (a config key only: no flag sets it)
            config = Path(tmp) / "credence.toml"
            config.write_text(f"[limits]\noutbox_limit = {outbox}\n", encoding="utf-8")
            extra = ("--config", str(config))
        with ServerProcess(Path(tmp) / "burst.db", extra=extra) as server:
            asyncio.run(_measure(server.url, burst))
            memory = server.memory()
            burst.peak_rss_mib = memory[0] if memory else None
    return burst


def render(b: Burst) -> str:
    outbox = "the default outbox" if b.outbox is None else f"a {b.outbox:,}-byte outbox"
    lines = [
        f"burst: one announce to '*' in a town of {b.residents:,}, {b.subscribers} '*' "
        f"subscriber(s) and a writer that subscribes, {outbox}",
    ]
    if b.writer_closed is not None:
        lines.append(f"  the writer was closed {b.writer_closed} before its ack")
    else:
        lines.append(f"  change records in the commit       {b.changes:,}")
        lines.append(
            f"  writer's ack after                 {b.ack_at * 1000:.0f} ms "
            f"({'after' if b.ack_after_notes else 'BEFORE'} its notifications)"
        )
    if b.done_at:
        done = sorted(b.done_at)
        lines.append(
            f"  subscribers had them all after     {done[0] * 1000:.0f} / "
            f"{statistics.median(done) * 1000:.0f} / {done[-1] * 1000:.0f} ms "
            "(first / median / last)"
        )
        lines.append(
            f"  per subscriber                     {b.changes / done[-1]:,.0f} notifications/s"
        )
    lines.append(
        f"  subscribers closed early           {len(b.closed)}"
        + (f" (codes {sorted(set(b.closed), key=str)})" if b.closed else "")
    )
    for label, acks in (("before", b.steady_before), ("during", b.steady_during)):
        if acks:
            ms = {k: v * 1000 for k, v in percentiles(acks, (50, 99)).items()}
            lines.append(
                f"  another world's acks {label}:{' ' * (8 - len(label))}  n {len(acks)}, p50 "
                f"{ms['p50']:.1f}, p99 {ms['p99']:.1f}, max {ms['max']:.1f} ms"
            )
    if b.peak_rss_mib is not None:
        lines.append(f"  sidecar peak RSS                   {b.peak_rss_mib:.1f} MiB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.burst", description=__doc__)
    parser.add_argument("--residents", type=int, default=10_000, help="town size (10,000)")
    parser.add_argument("--subscribers", type=int, default=4, help="'*' subscribers (4)")
    parser.add_argument("--outbox", type=int, default=None, help="the sidecar's outbox_limit")
    args = parser.parse_args(argv)
    if args.residents < 2:
        parser.error("--residents must be at least 2")
    if args.subscribers < 1:
        parser.error("--subscribers must be at least 1")
    try:
        burst = run(args.residents, args.subscribers, args.outbox)
    except RuntimeError as exc:  # the sidecar did not start: its own line says why
        parser.exit(2, f"python -m tools.burst: {exc}\n")
    print(render(burst))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
