"""Where the ack tail comes from: one in-process sidecar under paced load, instrumented.

``python -m tools.tail --rate 800 --duration 10 [--events N] [--no-observer] [--no-freeze]``
runs the sidecar as ``credence serve`` does (same config, ``gc.freeze()`` after start-up
unless ``--no-freeze``; worlds accept late events, as under ``credence load`` and ``credence
bench``) in this process, and drives it from a child process with the town of ``credence
load`` and ``credence bench`` (4 connections, window 64 each, paced to ``--rate``; plus one
subscriber to ``"*"`` unless ``--no-observer``, which is how the bench's paced run drives it).
It prints the ack latency beside what can hold an ack up on the sidecar's side:

- each ack's latency split in four, by event id: *in* (sent → queued for the writer: the
  socket, decoding, the loop), *queue* (waiting for a batch to start), *batch* (the
  ``Writer.apply`` it was part of: engine, rows, the fsync'd commit) and *out* (committed →
  the ack received: fan-out, the ack's encoding, the loop, the socket); medians over all
  acks and over the slowest 1%;
- group-commit batches: size, time (``Writer.apply``, as ``credence serve`` runs it), how
  much of the time a batch was in progress, the time per event by batch size, and the slowest batches with what they held;
- garbage-collector pauses by generation (``gc.callbacks``);
- event-loop stalls: how late a 1 ms timer fires;
- the disk's own fsync latency (37 pages appended and fsync'd, as a one-event commit does),
  measured right after the run: no durable ack comes back faster than that.

Figures are printed, never asserted (a busy machine shows in all of them).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
import orjson

from sidecar.engine import WorldEvent, rules_from_mapping
from sidecar.server import ServerConfig, Sidecar
from sidecar.store import EventResult

from .harness import free_port, percentiles
from .load import open_client
from .town import DAY_STEP, LATE_EVENT_DAYS, deal, encode_event

__all__ = ["drive", "fsync_probe", "main", "render", "run"]

WORLD = "tail"
CLIENTS = 4
WINDOW = 64
RESIDENTS = 50


def fsync_probe(directory: Path, n: int = 200, pages: int = 37) -> list[float]:
    """Seconds per fsync of ``pages`` 4 KiB pages appended to a file in ``directory``."""
    out = []
    fd, name = tempfile.mkstemp(dir=directory)
    try:
        for _ in range(n):
            os.write(fd, b"\0" * 4096 * pages)
            t0 = time.perf_counter()
            os.fsync(fd)
            out.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(name)
    return out


def _ms(xs: Sequence[float]) -> str:
    p = percentiles(xs)
    return "  ".join(f"{k} {v * 1000:7.2f}" for k, v in p.items()) + f"   (n={len(xs)})"


# --------------------------------------------------------------------------- the client child


async def drive(
    url: str, rate: float, events: int, observe: bool, *, residents: int = RESIDENTS,
    day_step: float = DAY_STEP,
) -> list[tuple[str, float, float, str]]:  # fmt: skip
    """Send ``events`` town events paced at ``rate``; ``(event_id, sent, answered, reply
    type)`` for each (``time.perf_counter`` seconds: one clock for both processes on Linux)."""
    streams = deal(residents, events, seed=1, clients=CLIENTS, day_step=day_step)
    frames = [[(e["event_id"], encode_event(e)) for e in s] for s in streams]
    observer = await open_client(url, WORLD, None, subscribe="*") if observe else None
    conns = [await open_client(url, WORLD, None) for _ in range(CLIENTS)]
    out: list[tuple[str, float, float, str]] = []
    start = time.perf_counter()

    async def drain(ws: Any) -> None:
        async for _ in ws:
            pass

    async def client(i: int, ws: Any) -> None:
        pending: deque[tuple[float, str]] = deque()
        slots = asyncio.Semaphore(WINDOW)

        async def receive() -> None:
            left = len(frames[i])
            async for message in ws:
                answered = time.perf_counter()
                sent, event_id = pending.popleft()
                slots.release()
                kind = msgpack.unpackb(message, raw=False).get("type")
                out.append((event_id, sent, answered, kind))
                left -= 1
                if not left:
                    return

        receiver = asyncio.create_task(receive())
        for n, (event_id, data) in enumerate(frames[i]):
            due = start + i / rate + n * CLIENTS / rate
            if due > time.perf_counter():
                await asyncio.sleep(due - time.perf_counter())
            await slots.acquire()
            pending.append((time.perf_counter(), event_id))
            await ws.send(data)
        await receiver
        await ws.close()

    watch = asyncio.create_task(drain(observer)) if observer is not None else None
    await asyncio.gather(*(client(i, ws) for i, ws in enumerate(conns)))
    if observer is not None and watch is not None:
        await observer.close()
        await watch
    return out


# --------------------------------------------------------------------------- the sidecar side


async def run(
    rate: float,
    duration: float,
    freeze: bool,
    *,
    events: int | None = None,
    observe: bool = True,
    residents: int = RESIDENTS,
    day_step: float = DAY_STEP,
) -> dict[str, Any]:
    count = events if events is not None else max(1, round(rate * duration))
    with tempfile.TemporaryDirectory(prefix="credence-tail-") as tmp:
        rules = rules_from_mapping({"late_event_days": LATE_EVENT_DAYS})
        config = ServerConfig(host="127.0.0.1", port=free_port(), db=Path(tmp) / "t.db",
                              rules=rules)  # fmt: skip
        sidecar = Sidecar(config)
        await sidecar.start()
        if freeze:
            gc.freeze()
        queued: dict[str, float] = {}
        in_batch: dict[str, int] = {}
        service = sidecar.writer
        submit = service.submit

        async def timed_submit(world: str, event: WorldEvent, size: int) -> Any:
            queued[event.event_id] = time.perf_counter()
            return await submit(world, event, size)

        service.submit = timed_submit  # type: ignore[method-assign]
        writer = service.writer
        apply = writer.apply
        slots: list[tuple[float, float, int, int, list[str]] | None] = []

        def opened(batch: Sequence[tuple[str, WorldEvent]]) -> tuple[int, float]:
            index = len(slots)
            slots.append(None)
            for _, e in batch:
                in_batch[e.event_id] = index
            return index, time.perf_counter()

        def closed(index: int, t0: float, batch: Sequence[Any], results: Sequence[Any]) -> None:
            changes = sum(len(r.changes) for r in results)
            kinds = [str(e.kind) for _, e in batch]
            slots[index] = (t0, time.perf_counter(), len(batch), changes, kinds)

        def timed_apply(batch: Sequence[tuple[str, WorldEvent]]) -> list[EventResult]:
            index, t0 = opened(batch)
            results: list[EventResult] = []
            try:
                results = apply(batch)
                return results
            finally:
                closed(index, t0, batch, results)

        writer.apply = timed_apply  # type: ignore[method-assign]
        pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        started: list[float] = [0.0]

        def on_gc(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                started[0] = time.perf_counter()
            else:
                pauses[info["generation"]].append(time.perf_counter() - started[0])

        gc.callbacks.append(on_gc)
        lags: list[float] = []

        async def ticker() -> None:
            while True:
                t0 = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - t0 - 0.001)

        tick = asyncio.get_running_loop().create_task(ticker())
        argv = ["-m", "tools.tail", "--client", sidecar.url, "--rate", str(rate),
                "--events", str(count), "--residents", str(residents), "--day-step",
                repr(day_step)] + ([] if observe else ["--no-observer"])  # fmt: skip
        child = await asyncio.create_subprocess_exec(
            sys.executable, *argv, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await child.communicate()
        tick.cancel()
        gc.callbacks.remove(on_gc)
        await sidecar.stop()
        gc.unfreeze()
        acks = [tuple(row) for row in orjson.loads(out)]
        fsyncs = await asyncio.to_thread(fsync_probe, Path(tmp))
    batches: list[tuple[float, float, int, int, list[str]]] = []
    index_of: dict[int, int] = {}
    for i, b in enumerate(slots):
        if b is not None:
            index_of[i] = len(batches)
            batches.append(b)
    in_batch = {e: index_of[i] for e, i in in_batch.items() if i in index_of}
    return {"acks": acks, "queued": queued, "in_batch": in_batch, "batches": batches,
            "gc": pauses, "lags": lags, "fsync": fsyncs}  # fmt: skip


def _covered(spans: list[tuple[float, float]]) -> float:
    """Seconds during which at least one of ``spans`` was open."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _parts(res: dict[str, Any], acks: Sequence[Any]) -> dict[str, list[float]]:
    parts: dict[str, list[float]] = {"in": [], "queue": [], "batch": [], "out": []}
    for event_id, sent, answered, _ in acks:
        if event_id not in res["queued"] or event_id not in res["in_batch"]:
            continue
        start, end, *_ = res["batches"][res["in_batch"][event_id]]
        queued = res["queued"][event_id]
        for key, value in (("in", queued - sent), ("queue", start - queued),
                           ("batch", end - start), ("out", answered - end)):  # fmt: skip
            parts[key].append(value)
    return parts


def render(res: dict[str, Any], rate: float) -> list[str]:
    replies, batches = res["acks"], res["batches"]
    acks = [r for r in replies if r[3] == "ack"]
    latency = [answered - sent for _, sent, answered, _ in acks]
    span = max(r[2] for r in replies) - min(r[1] for r in replies) if replies else 0.0
    lines = [
        f"  {len(acks)} acks at {len(acks) / span if span else 0:.0f}/s (offered {rate:g}/s), "
        f"{len(replies) - len(acks)} other replies; ack ms: {_ms(latency)}"
    ]
    slowest = sorted(acks, key=lambda a: a[2] - a[1])[-max(1, len(acks) // 100) :]
    for label, rows in (("all acks", acks), ("slowest 1%", slowest)):
        parts = _parts(res, rows)
        if parts["in"]:
            lines.append(f"  ack split, median ms ({label}): " + "  ".join(
                f"{k} {statistics.median(v) * 1000:.2f}" for k, v in parts.items()
            ))  # fmt: skip
    if batches:
        sizes = [b[2] for b in batches]
        busy = _covered([(b[0], b[1]) for b in batches]) / max(1e-9, batches[-1][1] - batches[0][0])
        lines.append(f"  batches: {len(batches)}, mean size {statistics.mean(sizes):.1f}, "
                     f"max {max(sizes)}; writer busy {busy:.0%} of the time")  # fmt: skip
        lines.append(f"  Writer.apply ms:  {_ms([b[1] - b[0] for b in batches])}")
        per: list[str] = []
        for lo, hi in ((1, 1), (2, 4), (5, 16), (17, 64), (65, 10**9)):
            got = [(b[1] - b[0]) / b[2] for b in batches if lo <= b[2] <= hi]
            if got:
                what = f"{lo}" if lo == hi else f"{lo}+" if hi > 10**6 else f"{lo}-{hi}"
                per.append(f"{what}: {statistics.median(got) * 1000:.2f} ({len(got)})")
        lines.append("  Writer.apply ms per event by batch size (batches): " + ", ".join(per))
        lines.append("  slowest batches (ms, events, change records, kinds):")
        for b in sorted(batches, key=lambda b: b[1] - b[0])[-5:][::-1]:
            kinds = ", ".join(f"{k} {n}" for k, n in Counter(b[4]).most_common())
            lines.append(f"    {(b[1] - b[0]) * 1000:7.1f}  {b[2]:4}  {b[3]:5}  {kinds}")
    for gen, xs in res["gc"].items():
        lines.append(f"  gc gen{gen} pause ms: {_ms(xs)}")
    lines.append(f"  loop lag ms:      {_ms(res['lags'])}")
    lines.append(f"  fsync ms (disk):  {_ms(res['fsync'])}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.tail", description=__doc__)
    p.add_argument("--rate", type=float, default=800.0)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--events", type=int, help="events in all (default: rate × duration)")
    p.add_argument("--no-freeze", action="store_true")
    p.add_argument("--no-observer", action="store_true", help="no subscriber to '*'")
    p.add_argument("--residents", type=int, default=RESIDENTS, help="residents of the town")
    p.add_argument(
        "--day-step", type=float, default=DAY_STEP,
        help="game days between two town events (credence load's --day-step)",
    )  # fmt: skip
    p.add_argument("--client", metavar="URL", help=argparse.SUPPRESS)  # the child's role
    args = p.parse_args(argv)
    if args.client:
        count = args.events or max(1, round(args.rate * args.duration))
        acks = asyncio.run(drive(args.client, args.rate, count, not args.no_observer,
                                 residents=args.residents, day_step=args.day_step))  # fmt: skip
        sys.stdout.buffer.write(orjson.dumps(acks))
        return 0
    res = asyncio.run(
        run(args.rate, args.duration, not args.no_freeze, events=args.events,
            observe=not args.no_observer, residents=args.residents, day_step=args.day_step)
    )  # fmt: skip
    print(f"paced {args.rate:g} events/s, gc.freeze {not args.no_freeze}, "
          f"observer {not args.no_observer}, {args.residents} residents, "
          f"{args.day_step:g} game days an event")  # fmt: skip
    print("\n".join(render(res, args.rate)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
