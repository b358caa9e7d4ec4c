"""``python -m tools.graphpages``: a graph page deep in a long belief costs what the first costs.

The ``graph`` query answers one page (SPEC §10.5): at most ``limit`` event nodes after the
cursor ``after``, read as one range of the ``evidence_by_seq`` index from that cursor. This
tool checks that the cost does not depend on where the page is. It writes the query
benchmark's world (:func:`tools.querybench.build_world`: ``mira`` with 2,000 beliefs and
``well:water`` seen 10,000 times; ``--quick``: 200 and 1,000), then:

* **over the wire** (``credence serve`` as a child process, WebSocket + msgpack), walks every
  page of ``well:water`` and of mira's whole graph at the default limit (100) once, to learn
  each page's cursor, and then times the first, the middle and the last full page, interleaved,
  ``--samples`` times each: p50 and p99 in ms, and the ratio last/first of the p50s;
* **in the process**, counts the SQLite virtual-machine instructions (a progress handler;
  free of the machine's noise) that the first and the last page take, beside the whole graph
  of the belief as one reply used to read it (``sidecar.read.graph.graph``).

Figures are printed, never asserted (``tests/test_tools_graphpages.py`` checks they are
consistent). Target: the last page within 1.5x of the first (p50 and instructions).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import websockets

from sidecar.read.graph import graph, graph_page
from sidecar.store import Reader

from .harness import ServerProcess, percentiles
from .querybench import RESIDENT, WORLD, build_world

__all__ = ["GraphPages", "main", "render", "run"]

ROOT = "well:water"
RATIO_TARGET = 1.5
#: The graphs paged: one much-seen belief, and the resident's whole graph.
SCOPES: dict[str, dict[str, str]] = {
    "well:water": {"resident": RESIDENT, "root": ROOT},
    "all of mira": {"resident": RESIDENT},
}
_PAGES = ("first", "middle", "last")


@dataclass
class Scope:
    """One graph's figures: its pages, the timed round trips, the instruction counts."""

    pages: int = 0
    walk_seconds: float = 0.0
    cursors: dict[str, str | None] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in _PAGES})
    events: dict[str, int] = field(default_factory=dict)
    steps: dict[str, int] = field(default_factory=dict)


@dataclass
class GraphPages:
    """Every figure of one run."""

    beliefs: int
    evidence: int
    samples: int
    built: dict[str, float] = field(default_factory=dict)
    scopes: dict[str, Scope] = field(default_factory=dict)


async def _ask(ws: Any, frame: dict[str, Any], rid: int) -> tuple[float, list[dict[str, Any]]]:
    """One query: (ms until its last part, every part)."""
    t0 = time.perf_counter()
    await ws.send(msgpack.packb({**frame, "rid": rid}))
    parts = []
    while True:
        reply = msgpack.unpackb(await ws.recv())
        if reply.get("rid") != rid:
            continue  # a notification
        if reply.get("type") == "error":
            raise RuntimeError(f"graph failed: {reply.get('code')}: {reply.get('message')}")
        parts.append(reply)
        if not reply.get("more"):
            return (time.perf_counter() - t0) * 1000, parts


def _query(scope: dict[str, str], after: str | None) -> dict[str, Any]:
    return {"type": "graph", **scope} | ({} if after is None else {"after": after})


async def _measure(url: str, bench: GraphPages) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": WORLD}))
        welcome = msgpack.unpackb(await ws.recv())
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"hello refused: {welcome}")
        rid = 0
        for name, scope in SCOPES.items():
            figures = bench.scopes.setdefault(name, Scope())
            cursors: list[str | None] = [None]  # the after of each page
            sizes: list[int] = []  # the event nodes of each page
            t0 = time.perf_counter()
            while True:
                rid += 1
                _, parts = await _ask(ws, _query(scope, cursors[-1]), rid)
                sizes.append(sum(n["type"] == "event" for p in parts for n in p["nodes"]))
                if parts[-1]["next"] is None:
                    break
                cursors.append(parts[-1]["next"])
            figures.walk_seconds = time.perf_counter() - t0
            figures.pages = len(cursors)
            # "last": the last full page (a short last page would flatter the ratio).
            last = max(i for i, n in enumerate(sizes) if n == max(sizes))
            figures.cursors = dict(zip(_PAGES, (cursors[0], cursors[last // 2], cursors[last]),
                                       strict=True))  # fmt: skip
        for _ in range(bench.samples):  # interleaved: a noisy neighbour hurts them alike
            for name, scope in SCOPES.items():
                figures = bench.scopes[name]
                for page, after in figures.cursors.items():
                    rid += 1
                    ms, parts = await _ask(ws, _query(scope, after), rid)
                    figures.samples[page].append(ms)
                    figures.events[page] = sum(
                        n["type"] == "event" for p in parts for n in p["nodes"]
                    )


def sqlite_steps(reader: Reader, read: Callable[[], object]) -> int:
    """SQLite VM instructions (in tens) that ``read`` takes: the same on any machine."""
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    reader.conn.set_progress_handler(tick, 10)
    try:
        read()
    finally:
        reader.conn.set_progress_handler(None, 0)
    return count * 10


def _count(db: Path, bench: GraphPages) -> None:
    reader = Reader(db)
    try:
        for name, scope in SCOPES.items():
            figures = bench.scopes[name]
            for page, after in figures.cursors.items():
                figures.steps[page] = sqlite_steps(
                    reader, lambda s=scope, a=after: graph_page(reader, WORLD, **s, after=a)
                )
            if "root" in scope:
                figures.steps["whole graph"] = sqlite_steps(
                    reader, lambda s=scope: graph(reader, WORLD, **s)
                )
    finally:
        reader.close()


def run(*, quick: bool = False, samples: int | None = None) -> GraphPages:
    """Build the world, serve it, walk and time the pages, count their instructions."""
    beliefs, evidence = (200, 1_000) if quick else (2_000, 10_000)
    bench = GraphPages(beliefs, evidence, samples or (10 if quick else 50))
    with tempfile.TemporaryDirectory(prefix="credence-graphpages-") as tmp:
        db = Path(tmp) / "graph.db"
        print(f"building {beliefs} beliefs, {evidence} refs ...", file=sys.stderr, flush=True)
        bench.built = build_world(db, beliefs, evidence)
        with ServerProcess(db) as server:
            asyncio.run(_measure(server.url, bench))
        _count(db, bench)
    return bench


def render(bench: GraphPages) -> str:
    """The figures as a table and the target."""
    lines = [
        f"graph pages: mira with {bench.built['beliefs']:.0f} beliefs, {ROOT} seen "
        f"{bench.built['refs']:.0f} times; default limit (100 event nodes); "
        f"{bench.samples} samples per page",
        f"{'graph':<14}{'page':<8}{'events':>7}{'p50 ms':>9}{'p99 ms':>9}{'SQLite steps':>14}",
    ]
    for name, figures in bench.scopes.items():
        lines.append(
            f"{name:<14}{'all':<8}{'':>7}{'':>9}{'':>9}{'':>14}  {figures.pages} pages walked "
            f"in {figures.walk_seconds:.2f} s"
        )
        for page in _PAGES:
            p = percentiles(figures.samples[page])
            lines.append(
                f"{name:<14}{page:<8}{figures.events[page]:>7}{p['p50']:>9.2f}{p['p99']:>9.2f}"
                f"{figures.steps[page]:>14}"
            )
        first = percentiles(figures.samples["first"])["p50"]
        last = percentiles(figures.samples["last"])["p50"]
        ratio = last / first if first else 0.0
        steps = figures.steps["last"] / figures.steps["first"] if figures.steps["first"] else 0.0
        ok = ratio <= RATIO_TARGET and steps <= RATIO_TARGET
        lines.append(
            f"{name:<14}last/first: p50 {ratio:.2f}x, steps {steps:.2f}x  "
            f"{'ok' if ok else 'MISSED'}"
        )
        if "whole graph" in figures.steps:
            whole = figures.steps["whole graph"]
            lines.append(
                f"{name:<14}the whole graph in one reply: {whole} SQLite steps "
                f"({whole / max(1, figures.steps['first']):.0f}x a page)"
            )
    lines.append(f"target: the last page within {RATIO_TARGET:g}x of the first")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.graphpages", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 beliefs, 1,000 refs")
    parser.add_argument("--samples", type=int, default=None, help="timed round trips per page")
    args = parser.parse_args(argv)
    if args.samples is not None and args.samples < 1:
        parser.error("--samples must be at least 1")
    print(render(run(quick=args.quick, samples=args.samples)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
