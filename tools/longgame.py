"""``python -m tools.longgame``: a year of a 50-resident town against a real sidecar.

Does every answer still come as fast after a year of game days as after a month? The soak
starts ``credence serve`` as a child process (default rules, a real SQLite file, an ephemeral
loopback port), names the residents with a ``register`` event, and plays a
:class:`~tools.town.Town` over the wire with :func:`tools.load.drive`: sightings (some with
interpretations), conversations that pass rumours on from teller to teller, lies,
announcements, acts with their outcomes (completed, rejected, interrupted, replaced), player
implants and distortions, ticks, the world's truth changing now and then, and every game day
new things happening (``news:<place>:<n>``) that are talked about while they are recent. One
more connection subscribes to every resident, as a game would. The events go out in rounds
dated after the world's clock (:class:`~tools.load.ClockedSource`), so none is refused.

At each checkpoint (day 30, 90 and 365; ``--quick``: a smaller town over fewer days) it stops
sending and prints: the events in the world's log, the database size (file + WAL), the
sidecar's RSS, the ack latency since the last checkpoint, p50/p99 of every query kind for a
seeded sample of residents (``narrative``, one ``beliefs`` page, one ``explain`` page,
``distribution``, one ``trust`` page, the ``trust table``, one ``graph`` page, ``worlds``; a
page is the first frame of a reply, and every reply is read to its end before the next
request; 200 samples of each, so a p99 is not one slow sample), and how long ``credence
rebuild --check`` takes on the live file. At the end, per query kind, the p99 at the last
checkpoint over the p99 at the first: the goal is at most 2. Figures are printed, never
asserted.

A page compares like with like: the ``beliefs`` page is 100 entries of tables far larger
than 100 at every checkpoint, the ``explain`` page the latest 10 pieces of evidence and
changes of a belief seen at least 10 times (where the resident holds one), and the ``trust``
page 10 entries (an inspector's page; a resident of the town trusts ~10 sources by day 30
and ~45 by day 365). The ``trust table`` is the default trust page (up to 100 entries),
which holds the whole of such a table: it grows with the table, so it is printed but not
held to the goal (``GROWING_KINDS``).

Everything is seeded (the town, the sample, the roots asked about) and bounded: a fixed
number of events and requests, every wait with a timeout, loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from .harness import ServerProcess, percentiles
from .load import ClockedSource, DriveResult, drive, open_client, world_clock
from .town import Town

__all__ = [
    "EXPLAIN_PAGE",
    "GROWING_KINDS",
    "QUERY_KINDS",
    "TRUST_PAGE",
    "Checkpoint",
    "SoakConfig",
    "main",
    "render",
    "run_soak",
]

WORLD = "longgame"

#: The query kinds measured, in the order printed.
QUERY_KINDS = (
    "narrative", "beliefs", "explain", "distribution", "trust", "trust table", "graph", "worlds",
)  # fmt: skip

#: Kinds whose reply grows with what the world holds (not a fixed-size page): their ratio
#: is printed, not judged against the goal. ``trust table`` is a resident's whole table
#: (the default trust page holds every entry of the town's tables).
GROWING_KINDS = frozenset({"trust table"})

#: Entries of the ``trust`` page measured: a fixed size, full at every checkpoint.
TRUST_PAGE = 10
#: Evidence and changes of the ``explain`` page measured (``limit``), of a belief seen at
#: least that often where the resident holds one: a full page at every checkpoint.
EXPLAIN_PAGE = 10

#: How long a late reply is waited out (untimed) before the next question.
DRAIN_TIMEOUT = 600.0

#: The goal: every query's p99 at the last checkpoint within this factor of the first.
TARGET_GROWTH = 2.0


@dataclass(slots=True)
class SoakConfig:
    residents: int = 50
    days: float = 365.0
    checkpoints: tuple[float, ...] = (30.0, 90.0, 365.0)
    events_per_day: float = 110.0
    news_per_day: float = 2.0
    clients: int = 2
    window: int = 32
    #: Rounds of a quarter of a game day: the events of one round share its day.
    rounds_per_day: float = 4.0
    sample: int = 8
    #: 8 residents × 25 rounds: 200 samples a kind, so a p99 is the third slowest, not the
    #: slowest (a nearest-rank p99 of fewer than 101 samples is their maximum).
    repeats: int = 25
    budget: int = 2000
    #: A reply not ended by then is a timeout; a kind is asked for this long at most.
    query_timeout: float = 60.0
    kind_budget: float = 60.0
    seed: int = 1
    quick: bool = False

    @classmethod
    def quick_config(cls) -> SoakConfig:
        return cls(
            residents=16, days=40.0, checkpoints=(10.0, 20.0, 40.0), events_per_day=40.0,
            news_per_day=1.0, sample=4, repeats=2, quick=True,
        )  # fmt: skip


@dataclass(slots=True)
class Checkpoint:
    """What one checkpoint measured (times in seconds, sizes in MiB)."""

    day: float
    events: int
    sent: int
    acked: int
    refused: dict[str, int]
    seconds: float
    db_mib: float
    rss_mib: float
    peak_rss_mib: float
    ack: dict[str, float]
    queries: dict[str, list[float]] = field(default_factory=dict)
    query_errors: dict[str, int] = field(default_factory=dict)
    query_timeouts: dict[str, int] = field(default_factory=dict)
    beliefs_sampled: int = 0
    #: How many of the sampled residents hold a belief seen at least ``EXPLAIN_PAGE`` times
    #: (the others' explain page is of any belief of theirs, and shorter).
    explain_full: int = 0
    query_s: float = 0.0
    drained_s: float = 0.0
    rebuild_s: float = 0.0
    rebuild_ok: bool = False


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def register_frame(town: Town) -> dict[str, Any]:
    """Display names for the town's residents (the narrative reads names, not ids)."""
    residents = []
    for i, rid in enumerate(town.residents):
        base = rid.rstrip("0123456789").title()
        name = base if rid == rid.rstrip("0123456789") else f"{base} {i // 20 + 1}"
        residents.append({"resident": rid, "names": {"en": name}})
    return {"type": "register", "event_id": "names", "day": 0.0, "residents": residents}


class QueryClient:
    """One connection asking one question at a time and reading its reply to the end."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self.ws: ClientConnection | None = None
        self.rid = 0
        self.drained = 0.0  # seconds spent waiting out late replies

    async def ask(self, frame: dict[str, Any]) -> tuple[float, list[dict[str, Any]]] | None:
        """``(seconds to the first frame of the reply, every frame of it)``, or None when the
        reply did not end within ``timeout`` (the connection is then dropped: replies on a
        connection come in order, so the next question gets a new one)."""
        if self.ws is None:
            self.ws = await open_client(self.url, WORLD, None, client="credence-longgame-queries")
        self.rid += 1
        rid = self.rid
        t0 = time.perf_counter()
        deadline = t0 + self.timeout
        await self.ws.send(msgpack.packb({**frame, "rid": rid}))
        parts: list[dict[str, Any]] = []
        first = 0.0
        while True:
            left = deadline - time.perf_counter()
            try:
                data = await asyncio.wait_for(self.ws.recv(), max(left, 0.001))
            except TimeoutError:
                await self._drain(rid)
                return None
            got = msgpack.unpackb(data, raw=False)
            if got.get("rid") != rid:
                continue  # not ours (nothing else is expected on this connection)
            if not parts:
                first = time.perf_counter() - t0
            parts.append(got)
            if got.get("type") == "error" or not got.get("more"):
                return first, parts

    async def _drain(self, rid: int) -> None:
        """After a timeout, wait (bounded, untimed) for the late reply to end, so the next
        questions are not measured against a sidecar still busy with it; then a new
        connection."""
        assert self.ws is not None
        t0 = time.perf_counter()
        with contextlib.suppress(TimeoutError, ConnectionClosed):
            while True:
                left = DRAIN_TIMEOUT - (time.perf_counter() - t0)
                got = msgpack.unpackb(await asyncio.wait_for(self.ws.recv(), max(left, 0.001)))
                if got.get("rid") == rid and (got.get("type") == "error" or not got.get("more")):
                    break
        self.drained += time.perf_counter() - t0
        await self.close()

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
            self.ws = None


def _mib(paths: Sequence[Path]) -> float:
    return sum(p.stat().st_size for p in paths if p.exists()) / (1024 * 1024)


async def measure_queries(
    url: str, residents: list[str], config: SoakConfig, rng: random.Random, cp: Checkpoint
) -> None:
    """p50/p99 samples of every query kind for the sampled residents, ``repeats`` rounds.

    Bounded: a reply that has not ended after ``query_timeout`` seconds counts as a timeout
    (and that kind is asked no more at this checkpoint; the late reply is waited out, untimed
    and at most ``DRAIN_TIMEOUT``, so it does not slow the next questions), and a kind stops being asked once
    its replies took ``kind_budget`` seconds in all. The questions asked (residents, roots)
    do not depend on which were skipped.
    """
    q = QueryClient(url, config.query_timeout)
    times: dict[str, list[float]] = {kind: [] for kind in QUERY_KINDS}
    spent = dict.fromkeys(QUERY_KINDS, 0.0)
    timeouts = dict.fromkeys(QUERY_KINDS, 0)
    errors: dict[str, int] = {}
    roots_of: dict[str, list[str]] = {}
    full_of: dict[str, list[str]] = {}  # (her roots seen at least EXPLAIN_PAGE times)

    async def ask(kind: str, frame: dict[str, Any]) -> list[dict[str, Any]] | None:
        if timeouts[kind] or spent[kind] >= config.kind_budget:
            return None
        t0 = time.perf_counter()
        got = await q.ask(frame)
        spent[kind] += time.perf_counter() - t0
        if got is None:
            timeouts[kind] += 1
            return None
        took, parts = got
        if parts[-1].get("type") == "error":
            key = f"{kind}: {parts[-1].get('code')}"
            errors[key] = errors.get(key, 0) + 1
        else:
            times[kind].append(took)
        return parts

    try:
        for _ in range(config.repeats):
            for resident in residents:
                await ask("narrative", {"type": "narrative", "resident": resident,
                                        "budget": config.budget})  # fmt: skip
                # One page of the resident's beliefs (100, in root order), as a viewer asks it.
                await ask("beliefs", {"type": "beliefs", "resident": resident, "limit": 100})
                if resident not in roots_of:  # every root, once per checkpoint, untimed
                    listed = await q.ask({"type": "beliefs", "resident": resident})
                    held = sorted(
                        (b["root"], b.get("evidence_count") or 0)
                        for part in (listed or (0.0, []))[1] for b in part.get("beliefs") or ()
                    )  # fmt: skip
                    roots_of[resident] = [root for root, _ in held]
                    full_of[resident] = [root for root, n in held if n >= EXPLAIN_PAGE]
                    cp.beliefs_sampled = max(cp.beliefs_sampled, len(roots_of[resident]))
                    cp.explain_full += bool(full_of[resident])
                roots = roots_of.get(resident) or ["weather"]
                root = rng.choice(roots)
                # One explain page (the latest 10 pieces of evidence and changes) of a belief
                # seen at least that often where she has one: a full page at every checkpoint.
                seen = rng.choice(full_of.get(resident) or roots)
                await ask("explain", {"type": "explain", "resident": resident, "root": seen,
                                      "limit": EXPLAIN_PAGE})  # fmt: skip
                await ask("distribution", {"type": "distribution", "root": root})
                # One page of the resident's trust table, as an inspector pages it (a fixed
                # size, like the beliefs page), and the whole table (the default page of 100
                # holds all of it in this town: it grows with the table).
                await ask("trust", {"type": "trust", "resident": resident, "limit": TRUST_PAGE})
                await ask("trust table", {"type": "trust", "resident": resident})
                # One page of the resident's graph (100 event nodes), as a viewer asks it.
                await ask("graph", {"type": "graph", "resident": resident, "limit": 100})
                await ask("worlds", {"type": "worlds"})
    finally:
        await q.close()
    cp.drained_s = q.drained
    cp.queries = times
    cp.query_timeouts = timeouts
    cp.query_errors = errors


def rebuild_check(db: Path) -> tuple[float, bool]:
    """Seconds ``credence rebuild --check`` takes on ``db``, and whether it matched."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "rebuild", "--db", str(db), "--check"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    return time.perf_counter() - t0, done.returncode == 0


async def run_soak(config: SoakConfig, db_dir: Path) -> list[Checkpoint]:
    """Play the year against a sidecar on ``db_dir / "longgame.db"``; one entry per checkpoint."""
    db = db_dir / "longgame.db"
    town = Town(
        config.residents, seed=config.seed, clients=config.clients,
        day_step=1.0 / config.events_per_day, tick_days=0.25, news_per_day=config.news_per_day,
        id_prefix="y",
    )  # fmt: skip
    rng = random.Random(config.seed)
    sample = sorted(rng.sample(town.residents, min(config.sample, len(town.residents))))
    round_events = max(1, round(config.events_per_day / config.rounds_per_day))
    out: list[Checkpoint] = []
    with ServerProcess(db) as server:
        names = await open_client(server.url, WORLD, None, client="credence-longgame")
        try:
            await names.send(msgpack.packb(register_frame(town)))
            reply = msgpack.unpackb(await asyncio.wait_for(names.recv(), 30), raw=False)
            if reply.get("type") != "ack":
                raise RuntimeError(f"register refused: {reply}")
        finally:
            await names.close()
        source = ClockedSource(town, None, round_events=round_events)
        for day in config.checkpoints:
            source.until_day = day
            t0 = time.perf_counter()
            _log(f"longgame: playing to day {day:g} …")
            result: DriveResult = await drive(
                server.url, source, clients=config.clients, world=WORLD,
                window=config.window, timeout=3600.0,
            )  # fmt: skip
            seconds = time.perf_counter() - t0
            _, events = await world_clock(server.url, WORLD, None)
            peak, rss = server.memory() or (0.0, 0.0)
            cp = Checkpoint(
                day=day, events=events, sent=result.sent, acked=result.acked,
                refused=dict(sorted(result.errors.items())), seconds=seconds,
                db_mib=_mib([db, db.with_name(db.name + "-wal")]), rss_mib=rss,
                peak_rss_mib=peak,
                ack={k: v * 1000 for k, v in percentiles(result.ack_latency).items()},
            )  # fmt: skip
            _log(f"longgame: day {day:g}: {events} events; queries …")
            t0 = time.perf_counter()
            await measure_queries(server.url, sample, config, rng, cp)
            cp.query_s = time.perf_counter() - t0
            _log(f"longgame: day {day:g}: rebuild --check …")
            cp.rebuild_s, cp.rebuild_ok = rebuild_check(db)
            out.append(cp)
            print(render_checkpoint(cp, config.query_timeout), flush=True)
    return out


def _p(samples: list[float], key: str) -> float:
    return percentiles(samples)[key] * 1000 if samples else 0.0


def _effective(cp: Checkpoint, kind: str, timeout: float) -> list[float]:
    """A kind's samples, each timeout counted as the timeout (so its p99 is a lower bound)."""
    return cp.queries.get(kind, []) + [timeout] * cp.query_timeouts.get(kind, 0)


def _ms(value: float, bound: bool) -> str:
    return ("≥" if bound else "") + f"{value:.2f}"


def render_checkpoint(cp: Checkpoint, timeout: float) -> str:
    refused = ", ".join(f"{k} {v}" for k, v in cp.refused.items()) or "none refused"
    lines = [
        f"day {cp.day:g}",
        f"  {'events in the log':<28}{cp.events:>10}",
        f"  {'events since last':<28}{cp.acked:>10} acked of {cp.sent} in {cp.seconds:.1f} s"
        f" ({refused})",
        f"  {'database (file + WAL)':<28}{cp.db_mib:>10.2f} MiB",
        f"  {'sidecar RSS':<28}{cp.rss_mib:>10.1f} MiB (peak {cp.peak_rss_mib:.1f} MiB)",
        f"  {'ack p50 / p99':<28}{cp.ack['p50']:>10.2f} / {cp.ack['p99']:.2f} ms",
        f"  {'rebuild --check':<28}{cp.rebuild_s:>10.2f} s "
        f"({'matches' if cp.rebuild_ok else 'DIFFERS'})",
        f"  {'query':<16}{'p50 ms':>10}{'p99 ms':>11}{'n':>6}{'timeouts':>10}"
        f"   (all took {cp.query_s:.1f} s"
        + (f", {cp.drained_s:.1f} s of it waiting out late replies)" if cp.drained_s else ")"),
    ]
    for kind in QUERY_KINDS:
        s = _effective(cp, kind, timeout)
        bound = cp.query_timeouts.get(kind, 0) > 0
        lines.append(
            f"  {kind:<16}{_ms(_p(s, 'p50'), bound):>10}{_ms(_p(s, 'p99'), bound):>11}"
            f"{len(cp.queries.get(kind, [])):>6}{cp.query_timeouts.get(kind, 0):>10}"
        )
    lines.append(f"  {'most beliefs in the sample':<28}{cp.beliefs_sampled:>10}")
    lines.append(f"  {'sampled with a full explain':<28}{cp.explain_full:>10}")
    errors = ", ".join(f"{k} {v}" for k, v in cp.query_errors.items())
    lines.append(f"  {'query errors':<28}{errors or 'none':>10}")
    return "\n".join(lines)


def render(config: SoakConfig, checkpoints: list[Checkpoint], seconds: float) -> str:
    """The closing table: p99 at the last checkpoint over the first, per query kind (a
    timeout at the last makes the ratio a lower bound: ≥); a kind of ``GROWING_KINDS`` is
    labelled as growing with what it reads instead of judged against the goal."""
    first, last = checkpoints[0], checkpoints[-1]
    timeout = config.query_timeout
    lines = [f"p99 at day {last.day:g} / day {first.day:g} (goal ≤ {TARGET_GROWTH:g})"]
    for kind in QUERY_KINDS:
        a = _p(_effective(first, kind, timeout), "p99")
        b = _p(_effective(last, kind, timeout), "p99")
        bound = last.query_timeouts.get(kind, 0) > 0
        ratio = b / a if a > 0 else float("inf")
        verdict = (
            "grows with the table (not a page; not held to the goal)" if kind in GROWING_KINDS
            else "missed" if ratio > TARGET_GROWTH
            else "ok" if not bound
            else "unknown"
        )  # fmt: skip
        lines.append(
            f"  {kind:<16}{_ms(a, first.query_timeouts.get(kind, 0) > 0):>10} → "
            f"{_ms(b, bound):>10} ms  ratio {_ms(ratio, bound):>7}  {verdict}"
        )
    lines.append(f"(longgame took {seconds:.0f} s)")
    return "\n".join(lines)


def header(config: SoakConfig) -> str:
    return (
        f"credence longgame: {config.residents} residents, {config.days:g} days, "
        f"{config.events_per_day:g} events/day, {config.news_per_day:g} news/day, "
        f"{config.clients} clients (window {config.window}), seed {config.seed}, "
        f"queries: {config.sample} residents × {config.repeats}, narrative budget "
        f"{config.budget}; checkpoints at day {', '.join(f'{d:g}' for d in config.checkpoints)}"
    )


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM: unwind, so the sidecar child is stopped too


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.longgame", description=__doc__)
    p.add_argument("--quick", action="store_true", help="a small town over 40 days (~1 min)")
    p.add_argument("--seed", type=int, default=1, help="seed of the story (default 1)")
    p.add_argument("--keep", type=Path, help="keep the database in this (new) directory")
    p.add_argument(
        "--repeats", type=int,
        help="rounds of queries at each checkpoint (default 25: 200 samples a kind; more make "
        "a p99 of a few milliseconds steadier)",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        p.error("--repeats must be at least 1")
    config = SoakConfig.quick_config() if args.quick else SoakConfig()
    config.seed = args.seed
    if args.repeats is not None:
        config.repeats = args.repeats
    signal.signal(signal.SIGTERM, _stop)
    print(header(config), flush=True)
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=False)
            where = args.keep
        else:
            where = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="longgame-")))
        try:
            checkpoints = asyncio.run(run_soak(config, where))
        except (OSError, RuntimeError, TimeoutError) as exc:
            print(f"longgame: {exc}", file=sys.stderr)
            return 2
    print(render(config, checkpoints, time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
