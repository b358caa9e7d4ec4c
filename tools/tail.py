"""Where the ack tail comes from: one in-process sidecar under paced load, instrumented.

``python -m tools.tail --rate 800 --duration 10 [--no-freeze]`` runs the sidecar exactly as
``credence serve`` does (same config, ``gc.freeze()`` after start-up unless ``--no-freeze``)
in this process, drives it from a ``credence load`` child at a fixed rate, and prints the
load's ack latency beside what can hold an ack up on the sidecar's side:

- group-commit batches: size and ``Writer.apply`` time (engine, rows and the fsync'd commit);
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
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from sidecar.server import ServerConfig, Sidecar
from sidecar.store import EventResult

from .harness import free_port, percentiles


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


async def run(rate: float, duration: float, freeze: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="credence-tail-") as tmp:
        # Not pipelined: this times whole Writer.apply batches (the pipeline splits them).
        config = ServerConfig(
            host="127.0.0.1", port=free_port(), db=Path(tmp) / "t.db", pipelined=False
        )
        sidecar = Sidecar(config)
        await sidecar.start()
        if freeze:
            gc.freeze()
        batches: list[tuple[int, float]] = []
        writer = sidecar.writer.writer
        apply = writer.apply

        def timed(batch: Sequence[Any]) -> list[EventResult]:
            t0 = time.perf_counter()
            try:
                return apply(batch)
            finally:
                batches.append((len(batch), time.perf_counter() - t0))

        writer.apply = timed  # type: ignore[method-assign]
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
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sidecar.cli", "load", "--url", sidecar.url, "--rate",
            str(rate), "--duration", str(duration), "--json",
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await child.communicate()
        tick.cancel()
        gc.callbacks.remove(on_gc)
        await sidecar.stop()
        gc.unfreeze()
        load = orjson.loads(out)
        fsyncs = await asyncio.to_thread(fsync_probe, Path(tmp))
    return {"load": load, "batches": batches, "gc": pauses, "lags": lags, "fsync": fsyncs}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.tail", description=__doc__)
    p.add_argument("--rate", type=float, default=800.0)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--no-freeze", action="store_true")
    args = p.parse_args(argv)
    res = asyncio.run(run(args.rate, args.duration, not args.no_freeze))
    load, batches = res["load"], res["batches"]
    ack = load["ack_latency_ms"]
    print(f"paced {args.rate:g} events/s for {args.duration:g} s, gc.freeze {not args.no_freeze}")
    print(f"  achieved {load['acked_per_s']:.0f} acks/s; ack latency ms: "
          + "  ".join(f"{k} {v:.2f}" for k, v in ack.items()))  # fmt: skip
    sizes = [n for n, _ in batches]
    busy = sum(t for _, t in batches)
    print(f"  batches: {len(batches)}, mean size {sum(sizes) / max(1, len(sizes)):.1f}, "
          f"max {max(sizes, default=0)}; writer busy {busy / args.duration:.0%} of the run")  # fmt: skip
    print(f"  Writer.apply ms:  {_ms([t for _, t in batches])}")
    for gen, xs in res["gc"].items():
        print(f"  gc gen{gen} pause ms: {_ms(xs)}")
    print(f"  loop lag ms:      {_ms(res['lags'])}")
    print(f"  fsync ms (disk):  {_ms(res['fsync'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
