"""The load and bench tools: they run end to end and print consistent figures (never speed)."""

from __future__ import annotations

import itertools
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from wsclient import db_rows

from sidecar.engine import EngineError, MemoryWorld, parse_event
from sidecar.engine.rules import Rules
from tools.bench import prefill, scale_events, storage_plan
from tools.town import LATE_EVENT_DAYS, deal
from tools.writer_cost import apply_events

NUMBER = r"(-?\d+(?:\.\d+)?)"


def credence(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``credence ARGS`` as a child process with this interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def tool(name: str, *args: str) -> str:
    """What ``python -m tools.NAME ARGS`` printed (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", f"tools.{name}", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def figure(text: str, pattern: str) -> list[float]:
    """The numbers captured by ``pattern`` (one match required) in ``text``."""
    found = re.search(pattern, text)
    assert found, f"no match for {pattern!r} in:\n{text}"
    return [float(x) for x in found.groups()]


def test_town_is_deterministic_and_always_valid() -> None:
    """The same seed deals the same events; in deal order days never go down, and every event
    applies in any client interleaving in a world with the town's late_event_days."""
    first = deal(30, 1500, seed=3, clients=3)
    assert first == deal(30, 1500, seed=3, clients=3)
    assert first != deal(30, 1500, seed=4, clients=3)
    kinds = {e["kind"] for stream in first for e in stream}
    assert kinds == {"observe", "say", "announce", "act", "intervene", "tick"}
    in_order = [first[k % 3][k // 3] for k in range(1500)]
    assert all(a["day"] <= b["day"] for a, b in itertools.pairwise(in_order))
    strict = MemoryWorld()  # the default rules refuse any earlier day: none comes, in order
    for event in in_order:
        strict.apply(parse_event(event))
    rng = random.Random(0)
    world = MemoryWorld(Rules(late_event_days=LATE_EVENT_DAYS))
    cursors = [0, 0, 0]
    refused: list[str] = []
    while any(c < len(s) for c, s in zip(cursors, first, strict=True)):
        i = rng.choice([i for i in range(3) if cursors[i] < len(first[i])])
        event = first[i][cursors[i]]
        cursors[i] += 1
        try:
            world.apply(parse_event(event))
        except EngineError as exc:
            refused.append(f"{event['event_id']}: {exc}")
    assert refused == []
    kinds_of_change = {str(c.kind) for c in world.changes}
    assert {"formed", "reinforced", "doubted", "corrected", "decayed"} <= kinds_of_change


def test_storage_plan_numbers_every_change_once() -> None:
    """The storage bench's rows: one event row per event, change seqs 1..n without gaps."""
    streams = deal(20, 200, seed=1, clients=2)
    events = [streams[k % 2][k // 2] for k in range(200)]
    plan = storage_plan(events)
    assert [rows.event[1] for rows in plan] == list(range(1, 201))
    seqs = [change[1] for rows in plan for change in rows.changes]
    assert seqs == list(range(1, len(seqs) + 1))
    assert all(rows.evidence or rows.event[4] == "tick" for rows in plan)


def test_storage_bench_writes_exactly_the_writers_rows(tmp_path: Path) -> None:
    """(b) leaves the very tables the store's Writer leaves for the same events and batches."""
    import sqlite3

    from tools.bench import WORLD, run_storage, run_writer

    streams = deal(20, 300, seed=2, clients=2)
    events = [streams[k % 2][k // 2] for k in range(300)]
    run_storage(storage_plan(events), tmp_path / "b.db", 64)
    run_writer([parse_event(e) for e in events], tmp_path / "w.db", 64)
    tables = (
        "worlds",
        "events",
        "residents",
        "evidence_pieces",
        "evidence",
        "beliefs",
        "changes",
        "trust",
        "facts",
    )
    dumps = []
    for name in ("b.db", "w.db"):
        conn = sqlite3.connect(tmp_path / name)
        try:
            dumps.append({t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables})
        finally:
            conn.close()
    assert dumps[0] == dumps[1]
    assert dumps[0]["beliefs"] and dumps[0]["worlds"][0][0] == WORLD


def test_minimal_reference_writes_one_upsert_and_one_change_per_affected_belief(
    tmp_path: Path,
) -> None:
    """(b0) stores every event once, and per affected belief one upsert and one change row;
    its beliefs end as the engine's (value, confidence, state)."""
    import sqlite3

    from tools.bench import run_minimal

    streams = deal(20, 300, seed=2, clients=2)
    events = [streams[k % 2][k // 2] for k in range(300)]
    plan = storage_plan(events)
    assert run_minimal(plan, tmp_path / "b0.db", 64) > 0
    world = MemoryWorld()
    for e in events:
        world.apply(parse_event(e))
    conn = sqlite3.connect(tmp_path / "b0.db")
    try:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (300,)
        affected = sum(len(rows.minimal) for rows in plan)
        assert conn.execute("SELECT count(*), max(seq) FROM changes").fetchone() == (
            affected,
            affected,
        )
        stored = {
            (r, k): (orjson.loads(v), c, s)
            for r, k, v, c, s in conn.execute(
                "SELECT resident, root, value, confidence, state FROM beliefs"
            )
        }
    finally:
        conn.close()
    assert stored == {
        key: (b.value, b.confidence, str(b.state)) for key, b in world.beliefs.items()
    }


def test_prefill_makes_exactly_the_due_beliefs(tmp_path: Path) -> None:
    """A prefilled database has the asked number of beliefs and that many due per coming day."""
    import sqlite3

    path = tmp_path / "pre.db"
    prefill(path, 2_000, ticks=3, due_per_tick=25)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM beliefs").fetchone() == (2_000,)
        per_day = conn.execute(
            "SELECT CAST(next_decay_day AS INTEGER), count(*) FROM beliefs "
            "WHERE next_decay_day < 1003 GROUP BY 1 ORDER BY 1"
        ).fetchall()
        assert per_day == [(1000, 25), (1001, 25), (1002, 25)]
        touched = {e["claim"]["root"] for e in scale_events(100, "t") if "claim" in e}
        due_roots = {r for (r,) in conn.execute(
            "SELECT DISTINCT root FROM beliefs WHERE next_decay_day < 1003"
        )}  # fmt: skip
        assert not touched & due_roots
    finally:
        conn.close()
    half = tmp_path / "half.db"  # the growth part's ticks come every half day
    prefill(half, 2_000, ticks=3, due_per_tick=25, spacing=0.5)
    conn = sqlite3.connect(half)
    try:
        assert conn.execute(
            "SELECT next_decay_day, count(*) FROM beliefs WHERE next_decay_day < 1003 "
            "GROUP BY 1 ORDER BY 1"
        ).fetchall() == [(1000.25, 25), (1000.75, 25), (1001.25, 25)]
    finally:
        conn.close()


def test_load_json_reports_every_figure() -> None:
    """credence load --events 300 --json: all acked, every change notified, sane latencies."""
    done = credence("load", "--events", "300", "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    fig = orjson.loads(done.stdout)
    assert fig["events_sent"] == fig["events_acked"] == 300
    assert fig["errors"] == {}
    assert fig["duplicates"] == 0
    assert fig["changes_acked"] > 0
    assert fig["notifications"] == fig["changes_acked"]
    for key in ("sent_per_s", "acked_per_s", "notifications_per_s", "duration_s"):
        assert isinstance(fig[key], float) and fig[key] > 0, key
    for key in ("ack_latency_ms", "notify_latency_ms"):
        p = fig[key]
        assert 0 < p["p50"] <= p["p95"] <= p["p99"] <= p["max"], (key, p)
    assert isinstance(fig["sidecar_peak_rss_mib"], float)
    assert fig["sidecar_peak_rss_mib"] >= fig["sidecar_rss_mib"] > 0


def test_load_curve_runs_each_rate_and_reports_its_latency() -> None:
    """credence load --curve 40,120 --duration 1.5 --json: one row per rate, in order, each
    at about its rate (never above it), with ordered latencies and no error."""
    done = credence("load", "--curve", "40,120", "--duration", "1.5", "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    fig = orjson.loads(done.stdout)
    assert [row["rate"] for row in fig["curve"]] == [40.0, 120.0]
    assert fig["target"] == {"ack_p99_ms": 16.0, "up_to_rate": 400.0}
    for row in fig["curve"]:
        assert row["errors"] == {}
        assert 0.5 * row["rate"] < row["acked_per_s"] <= 1.1 * row["rate"], row
        p = row["ack_latency_ms"]
        assert 0 < p["p50"] <= p["p95"] <= p["p99"] <= p["max"], p


def test_clocked_source_dates_each_round_once_after_the_base_and_waits_for_answers() -> None:
    """ClockedSource: a round opens only when the previous one is all answered; its events
    carry one day, base_day + the town's day of its last event, never going down; until_day
    holds the next round back until it is raised; the events then apply under default rules
    in any interleaving within rounds."""
    import asyncio

    import msgpack

    from tools.load import ClockedSource
    from tools.town import Town

    async def play() -> list[list[dict[str, object]]]:
        source = ClockedSource(Town(20, seed=5, clients=3), 300, round_events=40,
                               base_day=1000.0, until_day=3.0)  # fmt: skip
        rounds: list[list[dict[str, object]]] = []
        while True:
            for client in range(3):
                turn = source.turn(client)
                if turn is not None:
                    await asyncio.wait_for(turn, 5)
            got = [source.take(c) for c in range(3)]
            taken = []
            for client, item in enumerate(got):
                while item is not None:
                    taken.append(msgpack.unpackb(item[1]))
                    item = source.take(client)
            if not taken:
                if source.until_day is not None:  # held back: go on to the end
                    assert source.town_day <= 3.0
                    source.until_day = None
                    continue
                return rounds
            waiting = source.turn(0)  # the next round waits for these answers
            assert waiting is not None
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(waiting, 0.05)
            for _ in taken:
                source.answered()
            rounds.append(taken)

    rounds = asyncio.run(play())
    assert sum(len(r) for r in rounds) == 300 and all(len(r) == 40 for r in rounds[:-1])
    days = [{e["day"] for e in r} for r in rounds]
    assert all(len(d) == 1 for d in days)
    flat = [d.pop() for d in days]
    assert flat == sorted(flat) and flat[0] >= 1000.0
    world = MemoryWorld()  # the default rules: an earlier day is refused
    rng = random.Random(1)
    for r in rounds:
        for event in rng.sample(r, len(r)):
            if event["kind"] != "intervene":  # a distort needs its client's earlier event
                world.apply(parse_event({k: v for k, v in event.items() if k != "type"}))


def test_load_against_default_rules_and_a_clock_ahead_is_never_refused(tmp_path: Path) -> None:
    """credence load --url at a sidecar with the default rules (late events refused), into a
    world whose clock is at day 500: every event acked, none refused or a duplicate, all dated
    after that clock; a second run into the same world is acked whole again."""
    import asyncio

    import msgpack
    from websockets.asyncio.client import connect

    from tools.harness import ServerProcess

    async def tick_to(url: str, day: float) -> None:
        async with connect(url, proxy=None) as ws:
            await ws.send(msgpack.packb({"type": "hello", "protocol": 1, "world": "ahead"}))
            assert msgpack.unpackb(await ws.recv())["type"] == "welcome"
            await ws.send(msgpack.packb({"type": "event", "event_id": "t", "day": day,
                                         "kind": "tick"}))  # fmt: skip
            assert msgpack.unpackb(await ws.recv())["type"] == "ack"

    db = tmp_path / "x.db"
    with ServerProcess(db) as server:
        asyncio.run(tick_to(server.url, 500.0))
        runs = [
            credence("load", "--url", server.url, "--world", "ahead", "--events", "1200",
                     "--json", timeout=180)
            for _ in range(2)
        ]  # fmt: skip
    for done in runs:
        assert done.returncode == 0, done.stderr
        fig = orjson.loads(done.stdout)
        assert fig["errors"] == {}, fig["errors"]
        assert fig["events_sent"] == fig["events_acked"] == 1200
        assert fig["duplicates"] == 0 and fig["changes_acked"] > 0
    first_day, events = db_rows(db, "SELECT min(day), count(*) FROM events WHERE event_id != 't'")[
        0
    ]
    assert first_day >= 500.0 and events == 2400


def test_load_dates_its_town_by_the_day_step_it_is_given(tmp_path: Path) -> None:
    """``--day-step`` is the game time between two town events: the same 600 events into two
    worlds, one at the default 0.02 days an event and one at 0.0005, all acked; the slow
    world's clock ends about 40 times nearer its start, and the figures name the step."""
    from tools.harness import ServerProcess

    db = tmp_path / "x.db"
    with ServerProcess(db) as server:
        runs = {
            world: credence("load", "--url", server.url, "--world", world, "--events", "600",
                            *step, "--json", timeout=180)
            for world, step in (("fast", ()), ("slow", ("--day-step", "0.0005")))
        }  # fmt: skip
    for world, done in runs.items():
        assert done.returncode == 0, done.stderr
        fig = orjson.loads(done.stdout)
        assert fig["errors"] == {} and fig["events_acked"] == 600, (world, fig["errors"])
        assert fig["config"]["day_step"] == (0.02 if world == "fast" else 0.0005)
    days = dict(db_rows(db, "SELECT world, max(day) - min(day) FROM events GROUP BY world"))
    assert days["fast"] > 0 and 0 < days["slow"] < days["fast"] / 10, days
    refused = credence("load", "--events", "10", "--day-step", "0")
    assert refused.returncode == 2 and "--day-step" in refused.stderr, refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr


def test_load_against_a_url_with_a_wrong_token_fails_cleanly(tmp_path: Path) -> None:
    """Refused by the sidecar, load exits 2 with the refusal on stderr and no traceback."""
    from tools.harness import ServerProcess

    with ServerProcess(tmp_path / "x.db", tokens=["town=right"]) as server:
        done = credence("load", "--url", server.url, "--world", "town", "--token", "wrong",
                        "--events", "10", timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "unauthorized" in done.stderr and "Traceback" not in done.stderr


def test_bench_quick_prints_consistent_figures() -> None:
    """credence bench --quick prints every figure, and L, c/L and the ratios follow from them."""
    done = credence("bench", "--quick", timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    (a,) = figure(out, rf"\(a\) transport:.*?{NUMBER} events/s")
    (b,) = figure(out, rf"\(b\) storage:.*?{NUMBER} events/s")
    (c,) = figure(out, rf"\(c\) sidecar:.*?{NUMBER} events/s")
    (limit,) = figure(out, rf"serial limit L = 1/\(1/a \+ 1/b\)\s+{NUMBER} events/s")
    (ratio,) = figure(out, rf"c / L\s+{NUMBER}")
    assert min(a, b, c) > 0
    assert limit == pytest.approx(1 / (1 / a + 1 / b), rel=1e-3)
    assert limit < min(a, b)
    assert ratio == pytest.approx(c / limit, abs=2e-3)
    (w,) = figure(out, rf"\(w\) reference: Writer.apply, no network\s+{NUMBER} events/s")
    (b0,) = figure(out, rf"\(b0\) fixed reference: minimal faithful rows\s+{NUMBER} events/s")
    (limit0,) = figure(out, rf"serial limit L0 = 1/\(1/a \+ 1/b0\)\s+{NUMBER} events/s")
    (ratio0,) = figure(out, rf"c / L0\s+{NUMBER}")
    assert limit0 == pytest.approx(1 / (1 / a + 1 / b0), rel=1e-3)
    assert ratio0 == pytest.approx(c / limit0, abs=2e-3)
    for name, median in (("a", a), ("b", b), ("b0", b0), ("c", c), ("w", w)):
        found = re.search(rf"\s{name}: ((?:\d+ ?)+)\n", out)
        assert found, name
        rounds = [float(x) for x in found[1].split()]
        assert len(rounds) == 3 and min(rounds) > 0
        assert statistics.median(rounds) == pytest.approx(median, abs=1)

    (paced, achieved) = figure(out, rf"paced at {NUMBER} events/s, achieved {NUMBER}\)")
    assert paced == pytest.approx(c / 2, rel=1e-3) and achieved > 0
    (p50,) = figure(out, rf"\n  p50\s+{NUMBER} ms")
    (p99,) = figure(out, rf"\n  p99\s+{NUMBER} ms")
    assert 0 < p50 <= p99

    assert "(10k → 100k;" in out
    for what in ("per event", "per tick "):
        small, large, grew = figure(
            out, rf"{what} @10k\s+{NUMBER} µs\s+@100k\s+{NUMBER} µs\s+ratio {NUMBER}"
        )
        assert small > 0 and large > 0
        assert grew == pytest.approx(large / small, abs=2e-3)
    nine = ", ".join(["100"] * 9)
    assert f"beliefs aged per tick: 10k [{nine}], 100k [{nine}]" in out

    samples = re.findall(rf"\n\s+{NUMBER}\s+(\d+)\s+{NUMBER}(?=\n)", out)
    assert len(samples) >= 3
    times = [float(t) for t, _, _ in samples]
    acked = [int(n) for _, n, _ in samples]
    assert times == sorted(times) and acked == sorted(acked) and acked[-1] > 0
    baseline, peak = figure(out, rf"RSS: baseline {NUMBER} MiB, peak {NUMBER} MiB")
    assert 0 < baseline <= peak
    assert max(float(rss) for _, _, rss in samples) <= peak + 0.1
    assert re.search(r"subscriber: (closed 4008 slow_consumer by|not closed as a slow)", out)
    assert re.search(r"frames still buffered, then close \d+", out)
    for target in ("≥ 0.6", "≥ 0.35", "≤ 25 ms", "≤ 1.5", "bounded"):
        assert target in out


def test_breakdown_prints_every_stage() -> None:
    """python -m tools.breakdown: each stage of the write path with a figure, v4 and v3."""
    out = tool("breakdown", "--events", "60", "--batch", "16", "--rounds", "1")
    for stage in ("decode + validate frame", "engine fold", "sql INSERT INTO beliefs",
                  "sql INSERT INTO changes", "sql COMMIT", "ack: build + encode",
                  "notifications: build + encode", "thread hand-off"):  # fmt: skip
        (cost,) = figure(out, rf"{re.escape(stage)}.*?{NUMBER}")
        assert cost >= 0, stage
    (total, total_v3) = figure(out, rf"Writer.apply total\s+{NUMBER}\s+{NUMBER}")
    assert total > 0 and total_v3 > 0


def test_tail_reports_batches_gc_lag_and_fsync() -> None:
    """python -m tools.tail: a short paced run, every event acked, each ack split into its
    parts by event id, and every source of delay with its figures."""
    out = tool("tail", "--rate", "100", "--duration", "2", "--residents", "12", "--day-step", "0.5")
    assert "gc.freeze True" in out and "12 residents, 0.5 game days an event" in out
    (acked, rate) = figure(out, rf"{NUMBER} acks at {NUMBER}/s \(offered 100/s\), 0 other replies")
    assert acked == 200 and rate > 0
    for label in ("all acks", "slowest 1%"):
        parts = figure(
            out, rf"ack split, median ms \({label}\): in {NUMBER}  queue {NUMBER}  "
            rf"batch {NUMBER}  out {NUMBER}"
        )  # fmt: skip
        assert min(parts) >= 0 and parts[2] > 0, label  # one clock: causal order
    assert "Writer.apply ms per event by batch size" in out
    assert "slowest batches (ms, events, change records, kinds):" in out
    (batches,) = figure(out, rf"batches: {NUMBER},")
    assert batches >= 1
    for line in ("Writer.apply ms:", "gc gen0 pause ms:", "loop lag ms:", "fsync ms (disk):"):
        (p50, p95, p99, top) = figure(
            out,
            rf"{re.escape(line)}\s+p50\s+{NUMBER}\s+p95\s+{NUMBER}\s+p99\s+{NUMBER}"
            rf"\s+max\s+{NUMBER}",
        )
        assert 0 <= p50 <= p95 <= p99 <= top, line


def test_writer_cost_measured_run_applies_exactly_the_events_asked(tmp_path: Path) -> None:
    """python -m tools.writer_cost's measured run (what callgrind executes) applies the first
    K of the bench's events in batches and nothing more, so two runs differ by exactly the
    events measured."""
    for count in (0, 40):
        db = tmp_path / f"w{count}.db"
        apply_events(count, 60, 16, db)
        rows = db_rows(db, "SELECT count(*) FROM events")
        assert rows[0][0] == count


def test_burst_reports_a_commit_bigger_than_the_outbox_reaching_every_subscriber() -> None:
    """python -m tools.burst: an announcement to a town of 600 against a 64 KiB outbox (~1,200
    notifications, several times the bound) reaches both subscribers and the writer, none
    closed, the writer's ack after its notifications."""
    out = tool("burst", "--residents", "600", "--subscribers", "2", "--outbox", "65536")
    changes = re.search(r"change records in the commit\s+([\d,]+)", out)
    assert changes and changes[1] == "1,198"  # hearsay and "what the crier says", 599 hearers
    (ack,) = figure(out, rf"writer's ack after\s+{NUMBER} ms \(after its notifications\)")
    first, median, last = figure(
        out, rf"had them all after\s+{NUMBER} / {NUMBER} / {NUMBER} ms"
    )  # fmt: skip
    assert 0 < first <= median <= last and ack > 0
    assert figure(out, rf"subscribers closed early\s+{NUMBER}") == [0]
    for label in ("before", "during"):  # another world's writer, one event at a time
        n, *ms = figure(
            out, rf"another world's acks {label}:\s+n {NUMBER}, p50 {NUMBER}, p99 {NUMBER}, "
            rf"max {NUMBER} ms"
        )  # fmt: skip
        assert n >= 1 and 0 < ms[0] <= ms[1] <= ms[2]
