"""``python -m tools.querybench``: what one query costs as a resident's memory grows.

Two databases are written through the real :class:`~sidecar.store.Writer` (every row a real
event makes: log, evidence, beliefs, changes, trust): a resident ``mira`` with ``small`` and
``large`` beliefs (2,000 and 20,000; ``--quick``: 200 and 2,000) of every kind a long game
gives her — firsthand facts in families of ten (bulk lines), hearsay from ten townsfolk,
doubts, corrections, implanted memories, people, acts — and one belief, ``well:water``, seen
``evidence`` times (10,000; ``--quick``: 1,000). Fifty other residents hold a belief on
``festival:day``.

Then ``credence serve`` runs on each database as a child process and one client times, over
the real WebSocket + msgpack wire, every part of the reply of:

* ``narrative`` — the default budget (2,000 characters), no focus;
* ``narrative, focused`` — the same, focused on one of the townsfolk and one of her places
  (:data:`FOCUS`: who she is talking to, and where);
* ``beliefs page`` — ``limit: 100`` after a root in the middle of her beliefs;
* ``explain page`` — ``well:water`` with ``limit: 100`` (its latest evidence and changes);
* ``distribution`` — ``festival:day``;
* ``graph page`` — the first page (100 event nodes) of ``well:water``'s graph (a deep page
  costs the same: ``python -m tools.graphpages``);

and once each, the largest replies there are: ``narrative`` at budget 50,000 in zh-Hant, and
``explain`` of ``well:water`` without a limit (every piece of evidence, paged); then the
narrative across budgets (:data:`SWEEP_BUDGETS`, 600 to 20,000 characters), unfocused and
focused, in both languages, ``--sweep-samples`` each. Queries run
interleaved, so a noisy neighbour hurts them alike. Printed: p50 and p99 (ms) per query and
size, the growth ``p50@large / p50@small`` beside the growth of the data (×10), and the
targets (p99 ≤ 50 ms at the large size, growth no worse than linear). Figures are printed,
never asserted.

``--calm`` tells the same year with few doubts and no implants (:data:`CALM_EVERY`): her contested and
corrected memories then fit the budget and the narrative lays out the rest of what she holds
(what a big resident with few doubts costs, not one whose doubts alone overflow the budget).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import websockets

from sidecar.engine import parse_event
from sidecar.engine.rules import Rules
from sidecar.store import ResultStatus, Writer

from .harness import ServerProcess, percentiles

__all__ = ["QueryBench", "build_world", "main", "render", "run", "story"]

WORLD = "bench"
RESIDENT = "mira"
TOWNSFOLK = tuple(f"t{i:02d}" for i in range(10))
VOTERS = 50
P99_TARGET_MS = 50.0
#: Beliefs of hers one step of the story makes on average (hearsay also gives her a belief
#: on what the speaker believes), so ``beliefs`` steps are scaled to about ``beliefs``.
_BELIEFS_PER_STEP = 1.43
#: In a ``calm`` story, one step in this many that would make a doubt or a correction does
#: (about a dozen protected memories of 20,000 beliefs), and none makes an implant.
CALM_EVERY = 150
#: What a game sends while one of the townsfolk talks to her at one of her places: the
#: focused narrative ranks what bears on them first (``t03`` told her a tenth of what she
#: heard, a fifth of her doubts among it; a fortieth of her facts and rumours is at ``place7``).
FOCUS: dict[str, list[str]] = {"people": ["t03"], "places": ["place7"]}
#: The timed queries, by name (each frame gets a fresh ``rid``).
QUERIES: dict[str, dict[str, Any]] = {
    "narrative": {"type": "narrative", "resident": RESIDENT},
    "narrative, focused": {"type": "narrative", "resident": RESIDENT, "focus": FOCUS},
    "beliefs page": {"type": "beliefs", "resident": RESIDENT, "after": "fact:5", "limit": 100},
    "explain page": {"type": "explain", "resident": RESIDENT, "root": "well:water", "limit": 100},
    "distribution": {"type": "distribution", "root": "festival:day"},
    "graph page": {"type": "graph", "resident": RESIDENT, "root": "well:water"},
}
#: The largest replies, timed once per size.
LARGEST: dict[str, dict[str, Any]] = {
    "narrative 50k zh-Hant": {
        "type": "narrative", "resident": RESIDENT, "budget": 50_000, "lang": "zh-Hant",
    },
    "explain, every ref": {"type": "explain", "resident": RESIDENT, "root": "well:water"},
}  # fmt: skip
#: Budgets the narrative is also timed at, unfocused and focused, in both languages, with
#: fewer samples each (``--sweep-samples``): a prompt may be short or long, and which read
#: answers (bounded, social or full) depends on what fits.
SWEEP_BUDGETS = (600, 1000, 4000, 8000, 20000)
SWEEP_LANGS = ("en", "zh-Hant")
#: The swept narratives, by (focused, language, budget).
SWEEP: dict[tuple[bool, str, int], dict[str, Any]] = {
    (focused, lang, budget): {
        "type": "narrative", "resident": RESIDENT, "budget": budget, "lang": lang,
        **({"focus": FOCUS} if focused else {}),
    }
    for focused in (False, True) for lang in SWEEP_LANGS for budget in SWEEP_BUDGETS
}  # fmt: skip


def story(
    beliefs: int,
    evidence: int,
    *,
    resident: str = "mira",
    tag: str = "q",
    seed: int = 17,
    calm: bool = False,
) -> Iterator[dict[str, Any]]:
    """The events of ``resident``'s year: about ``beliefs`` beliefs of hers (the ones of
    what others believe included) and one, ``well:water``, seen ``evidence`` times.

    ``calm``: few doubts (one step in :data:`CALM_EVERY` of those that would make a doubt or
    a correction still does; the others, and every implant, are plain facts), so that her
    contested and corrected memories fit the budget and the narrative lays out the rest."""
    rng = random.Random(seed)
    n = 0
    RESIDENT = resident

    def eid() -> str:
        nonlocal n
        n += 1
        return f"{tag}{n}"

    day = 1.0
    for i in range(VOTERS if tag == "q" else 0):
        yield {"event_id": eid(), "day": day, "kind": "say", "speaker": "mayor",
               "listeners": [f"v{i:02d}"], "claim": {"root": "festival:day", "value": 12 + i % 3},
               "subject": f"the festival is on day {12 + i % 3}"}  # fmt: skip
    for i in range(round(beliefs / _BELIEFS_PER_STEP)):
        day = 1.0 + i * 300 / beliefs  # a year of game days over her memories
        roll = rng.random()
        place = f"place{i % 40}"
        if calm and 0.80 <= roll < 0.95 and (i % CALM_EVERY or roll >= 0.93):
            roll = 0.0  # a plain fact instead (and never an implant)
        if roll < 0.55:  # firsthand facts in families of ten: bulk lines
            yield {"event_id": eid(), "day": day, "kind": "observe", "witnesses": [RESIDENT],
                   "claim": {"root": f"fact:{i // 10}:{i % 10}", "value": rng.randint(0, 9)},
                   "subject": f"the thing {i} at the {place} looks fine", "places": [place]}  # fmt: skip
        elif roll < 0.80:  # hearsay
            yield {"event_id": eid(), "day": day, "kind": "say", "speaker": rng.choice(TOWNSFOLK),
                   "listeners": [RESIDENT], "claim": {"root": f"rumour:{i}", "value": True},
                   "subject": f"rumour {i} about the {place} is true", "places": [place]}  # fmt: skip
        elif roll < 0.88:  # a doubt: hearsay, then a contradiction from someone else
            a, b = rng.sample(TOWNSFOLK, 2)
            for speaker, value in ((a, "broken"), (b, "fixed")):
                yield {"event_id": eid(), "day": day, "kind": "say", "speaker": speaker,
                       "listeners": [RESIDENT], "claim": {"root": f"doubt:{i}", "value": value},
                       "subject": f"the cart {i} is {value}"}  # fmt: skip
        elif roll < 0.93:  # a correction: hearsay, then seen otherwise twice
            yield {"event_id": eid(), "day": day, "kind": "say", "speaker": rng.choice(TOWNSFOLK),
                   "listeners": [RESIDENT], "claim": {"root": f"fix:{i}", "value": "poisoned"},
                   "subject": f"well {i} is poisoned"}  # fmt: skip
            for _ in range(2):
                yield {"event_id": eid(), "day": day, "kind": "observe", "witnesses": [RESIDENT],
                       "claim": {"root": f"fix:{i}", "value": "clean"},
                       "subject": f"well {i} is clean"}  # fmt: skip
        elif roll < 0.95:
            yield {"event_id": eid(), "day": day, "kind": "intervene", "resident": RESIDENT,
                   "op": "implant", "claim": {"root": f"odd:{i}", "value": "gold"},
                   "subject": f"there is gold under stone {i}"}  # fmt: skip
        elif roll < 0.97:
            other = rng.choice(TOWNSFOLK)
            yield {"event_id": eid(), "day": day, "kind": "observe", "witnesses": [RESIDENT],
                   "claim": {"root": f"relation:{other}:{i}", "value": "friendly"},
                   "subject": f"{other} was friendly to me", "people": [other]}  # fmt: skip
        else:
            yield {"event_id": eid(), "day": day, "kind": "act", "actor": RESIDENT,
                   "action": f"chore_{i % 30}", "status": rng.choice(("completed", "rejected")),
                   "witnesses": [RESIDENT]}  # fmt: skip
    for k in range(evidence):  # one belief seen over and over
        if k % 2:
            yield {"event_id": eid(), "day": day, "kind": "observe", "witnesses": [RESIDENT],
                   "claim": {"root": "well:water", "value": "clean"},
                   "subject": "the well water is clean"}  # fmt: skip
        else:
            yield {"event_id": eid(), "day": day, "kind": "say",
                   "speaker": TOWNSFOLK[k % len(TOWNSFOLK)], "listeners": [RESIDENT],
                   "claim": {"root": "well:water", "value": "clean"},
                   "subject": "the well water is clean"}  # fmt: skip


def build_world(path: Path, beliefs: int, evidence: int, *, calm: bool = False) -> dict[str, float]:
    """Write the story (``calm``: with few doubts) into a fresh database; its belief count
    and the seconds taken."""
    t0 = time.perf_counter()
    writer = Writer(path, rules=Rules(late_event_days=1.0), synchronous="OFF")
    try:
        batch: list[tuple[str, Any]] = []
        for event in story(beliefs, evidence, calm=calm):
            batch.append((WORLD, parse_event(event)))
            if len(batch) == 500:
                _apply(writer, batch)
                batch = []
        _apply(writer, batch)
        count = writer.conn.execute(
            "SELECT count(*) FROM beliefs WHERE world = ? AND resident = ?", (WORLD, RESIDENT)
        ).fetchone()[0]
        refs = writer.conn.execute(
            "SELECT evidence_count FROM beliefs "
            "WHERE world = ? AND resident = ? AND root = 'well:water'",
            (WORLD, RESIDENT),
        ).fetchone()[0]
    finally:
        writer.close()
    return {"beliefs": count, "refs": refs, "seconds": time.perf_counter() - t0}


def _apply(writer: Writer, batch: list[tuple[str, Any]]) -> None:
    if not batch:
        return
    bad = [r for r in writer.apply(batch) if r.status is not ResultStatus.APPLIED]
    if bad:
        raise RuntimeError(f"the bench story was refused: {bad[0]}")


@dataclass
class Timed:
    """The round trips of one query at one size (ms), and the size of its last reply."""

    samples: list[float] = field(default_factory=list)
    parts: int = 0
    largest_frame: int = 0

    def record(self, ms: float, parts: int, largest: int) -> None:
        self.samples.append(ms)
        self.parts, self.largest_frame = parts, max(self.largest_frame, largest)


async def _ask(ws: Any, frame: dict[str, Any], rid: int) -> tuple[float, int, int]:
    """One query; (ms until its last part, parts, largest frame in bytes)."""
    t0 = time.perf_counter()
    await ws.send(msgpack.packb({**frame, "rid": rid}))
    parts, largest = 0, 0
    while True:
        raw = await ws.recv()
        reply = msgpack.unpackb(raw)
        if reply.get("rid") != rid:
            continue  # a notification
        if reply.get("type") == "error":
            raise RuntimeError(f"{frame['type']} failed: {reply.get('code')}: {reply}")
        parts += 1
        largest = max(largest, len(raw))
        if not reply.get("more"):
            return (time.perf_counter() - t0) * 1000, parts, largest


async def _measure(
    url: str, samples: int, sweep_samples: int
) -> tuple[dict[str, Timed], dict[tuple[bool, str, int], Timed]]:
    out = {name: Timed() for name in (*QUERIES, *LARGEST)}
    swept = {key: Timed() for key in SWEEP}
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": WORLD}))
        welcome = msgpack.unpackb(await ws.recv())
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"hello refused: {welcome}")
        rid = 0
        for _ in range(3):  # warm the caches
            for frame in QUERIES.values():
                rid += 1
                await _ask(ws, frame, rid)
        for _ in range(samples):
            for name, frame in QUERIES.items():
                rid += 1
                out[name].record(*await _ask(ws, frame, rid))
        for name, frame in LARGEST.items():
            rid += 1
            ms, parts, largest = await _ask(ws, frame, rid)
            out[name] = Timed([ms], parts, largest)
        for _ in range(sweep_samples):
            for key, frame in SWEEP.items():
                rid += 1
                swept[key].record(*await _ask(ws, frame, rid))
    return out, swept


@dataclass
class QueryBench:
    """Every figure of one run."""

    sizes: tuple[int, int]
    evidence: int
    samples: int
    calm: bool = False
    sweep_samples: int = 0
    built: list[dict[str, float]] = field(default_factory=list)
    timed: list[dict[str, Timed]] = field(default_factory=list)
    swept: list[dict[tuple[bool, str, int], Timed]] = field(default_factory=list)


def run(
    *, quick: bool = False, samples: int | None = None, calm: bool = False,
    sweep_samples: int | None = None,
) -> QueryBench:  # fmt: skip
    """Build both worlds (``calm``: with few doubts, see :func:`story`), serve each and time
    the queries, then the narrative across budgets (:data:`SWEEP`)."""
    sizes = (200, 2_000) if quick else (2_000, 20_000)
    evidence = 1_000 if quick else 10_000
    bench = QueryBench(
        sizes, evidence, samples or (30 if quick else 200), calm,
        sweep_samples if sweep_samples is not None else (3 if quick else 15),
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="credence-querybench-") as tmp:
        for size in sizes:
            db = Path(tmp) / f"q{size}.db"
            print(f"building {size} beliefs, {evidence} refs ...", file=sys.stderr, flush=True)
            bench.built.append(build_world(db, size, evidence, calm=calm))
            with ServerProcess(db) as server:
                timed, swept = asyncio.run(_measure(server.url, bench.samples, bench.sweep_samples))
            bench.timed.append(timed)
            bench.swept.append(swept)
    return bench


def render(bench: QueryBench) -> str:
    """The figures as a table (ms), the growth and the targets."""
    small, large = bench.sizes
    lines = [
        f"query benchmark: resident with {small} and {large} beliefs, one belief with "
        f"{bench.evidence} evidence refs, {bench.samples} samples per query"
        + (" (calm: few doubts)" if bench.calm else ""),
    ]
    for built, size in zip(bench.built, bench.sizes, strict=True):
        lines.append(
            f"  world {size}: {built['beliefs']:.0f} beliefs of mira, "
            f"{built['refs']:.0f} refs on well:water, built in {built['seconds']:.1f} s"
        )
    lines.append(
        f"{'query':<24}{'p50@' + str(small):>11}{'p99@' + str(small):>11}"
        f"{'p50@' + str(large):>11}{'p99@' + str(large):>11}{'growth':>9}{'parts':>7}  target"
    )
    for name in QUERIES:
        a = percentiles(bench.timed[0][name].samples)
        b = percentiles(bench.timed[1][name].samples)
        growth = b["p50"] / a["p50"] if a["p50"] else 0.0
        ok = b["p99"] <= P99_TARGET_MS and growth <= large / small
        lines.append(
            f"{name:<24}{a['p50']:>11.2f}{a['p99']:>11.2f}{b['p50']:>11.2f}{b['p99']:>11.2f}"
            f"{growth:>8.2f}x{bench.timed[1][name].parts:>7}  {'ok' if ok else 'MISSED'}"
        )
    for name in LARGEST:
        once_small, once_large = bench.timed[0][name], bench.timed[1][name]
        lines.append(
            f"{name:<24}{once_small.samples[0]:>11.2f}{'':>11}{once_large.samples[0]:>11.2f}"
            f"{'':>11}{'':>9}{once_large.parts:>7}  once; largest frame "
            f"{once_large.largest_frame} bytes"
        )
    lines.append(
        f"targets: p99 <= {P99_TARGET_MS:g} ms at {large} beliefs; growth "
        f"{small} -> {large} beliefs (x{large // small}) no worse than linear (<= {large / small:g}x)"
    )
    if bench.sweep_samples:
        lines += _render_sweep(bench)
    return "\n".join(lines)


def _render_sweep(bench: QueryBench) -> list[str]:
    """The narrative across budgets at the large size: p50 / slowest of its samples (ms)."""
    large = bench.sizes[1]
    lines = [
        f"narrative across budgets at {large} beliefs, p50 / slowest of "
        f"{bench.sweep_samples} (ms; the target is p99 <= {P99_TARGET_MS:g}):",
        f"{'':<24}" + "".join(f"{'@' + str(b):>15}" for b in SWEEP_BUDGETS),
    ]
    over = 0
    for focused in (False, True):
        for lang in SWEEP_LANGS:
            cells = []
            for budget in SWEEP_BUDGETS:
                found = percentiles(bench.swept[1][focused, lang, budget].samples)
                slowest = max(bench.swept[1][focused, lang, budget].samples)
                over += slowest > P99_TARGET_MS
                cells.append(f"{found['p50']:>8.1f} /{slowest:>5.0f}")
            name = f"{'focused' if focused else 'narrative'} {lang}"
            lines.append(f"{name:<24}" + "".join(cells))
    lines.append(f"sweep: {over} of {len(SWEEP)} budgets had a sample over {P99_TARGET_MS:g} ms")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.querybench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200/2,000 beliefs, 1,000 refs")
    parser.add_argument("--samples", type=int, default=None, help="timed queries per kind")
    parser.add_argument(
        "--calm",
        action="store_true",
        help="few doubts: her contested memories fit the budget and the rest are laid out",
    )
    parser.add_argument(
        "--sweep-samples", type=int, default=None,
        help="timed narratives per budget of the sweep (15; --quick 3; 0 skips it)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.samples is not None and args.samples < 1:
        parser.error("--samples must be at least 1")
    if args.sweep_samples is not None and args.sweep_samples < 0:
        parser.error("--sweep-samples must be at least 0")
    bench = run(
        quick=args.quick, samples=args.samples, calm=args.calm, sweep_samples=args.sweep_samples
    )
    print(render(bench))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
