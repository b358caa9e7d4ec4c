"""The Writer's write-through belief and trust cache changes nothing but speed.

Whatever a batch does (commits, has one event refused by SQLite, has one rejected by the
engine, fails whole, or meets a commit by another connection), the cache holds only what
SQLite holds, stays within its budget, and a writer with the cache gives the same results
and tables as one without it (the hypothesis test at the end).
"""

from __future__ import annotations

import dataclasses
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from belief_builders import announce, intervene, observe, say, tick
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sidecar.store.cache as cache_module
import sidecar.store.writer as store_module
from sidecar.engine import InvalidEvent, WorldEvent, parse_event
from sidecar.store import Reader, ResultStatus, StorageFailure, Writer
from sidecar.store.writer import EventResult

TABLES = ("worlds", "events", "residents", "evidence", "beliefs", "changes", "trust", "facts",
          "said")  # fmt: skip


@pytest.fixture
def writer(db_path: Path) -> Iterator[Writer]:
    w = Writer(db_path, synchronous="OFF")
    yield w
    w.close()


def apply(writer: Writer, *events: dict[str, Any], world: str = "w") -> list[EventResult]:
    return writer.apply([(world, parse_event(e)) for e in events])


def batching(draw: st.DrawFn, count: int) -> tuple[list[int], int | None]:
    """Batch sizes (1-6 events) covering ``count`` events, and the batch (if any) after
    which the writer is closed and reopened."""
    sizes, left = [], count
    while left:
        size = draw(st.integers(1, min(left, 6)))
        sizes.append(size)
        left -= size
    reopen = draw(st.one_of(st.none(), st.integers(0, max(0, len(sizes) - 1))))
    return sizes, reopen


def apply_history(
    open_writer: Callable[[], Writer], events: list[tuple[str, WorldEvent]], sizes: list[int],
    reopen: int | None,
) -> tuple[Writer, list[tuple[Any, ...]]]:  # fmt: skip
    """Apply ``events`` in batches of ``sizes``, closing and reopening the writer after batch
    ``reopen``; the (open) writer and what the caller saw of every batch."""
    w = open_writer()
    got: list[tuple[Any, ...]] = []
    start = 0
    for n, size in enumerate(sizes):
        got += outcome(w.apply(events[start : start + size]))
        start += size
        if n == reopen:
            w.close()
            w = open_writer()
    return w, got


def refuse_doomed(path: Path) -> None:
    """From now on SQLite refuses any change row for resident ``doomed`` (a trigger): a
    failure the engine cannot foresee, as a full disk or a corrupt page would be."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TRIGGER refuse_doomed BEFORE INSERT ON changes WHEN NEW.resident = 'doomed' "
        "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    conn.commit()
    conn.close()


def dump(path: Path, tables: Sequence[str] = TABLES) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table in insertion order (rowid tables) or key order."""
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    finally:
        conn.close()


def outcome(results: list[EventResult]) -> list[tuple[Any, ...]]:
    """What a caller sees of a batch: statuses, change records with their seqs, errors."""
    return [
        (
            r.world,
            r.event_id,
            r.status,
            [(c.seq, c) for c in r.changes],
            type(r.error).__name__,
            str(r.error),
            r.results,
        )
        for r in results
    ]


def assert_cache_matches_sqlite(writer: Writer) -> None:
    """Every cached belief and trust value is what SQLite has (an absence, an absence); a
    world marked complete has no stored belief or trust the cache lacks."""
    cache = writer._cache
    assert cache is not None
    reader = Reader(writer.path)
    try:
        for (world, resident, root), belief in cache.beliefs.items():
            assert reader.belief(world, resident, root) == belief, (world, resident, root)
        for (world, resident, source, topic), value in cache.trust.items():
            rows = reader.conn.execute(
                "SELECT value FROM trust WHERE world = ? AND resident = ? AND source = ? "
                "AND topic = ?",
                (world, resident, source, topic),
            ).fetchall()
            assert (float(rows[0][0]) if rows else None) == value
        for world in cache.complete:
            stored = {(world, b.resident, b.root) for b in reader.all_beliefs(world)}
            assert stored == {
                k for k, b in cache.beliefs.items() if k[0] == world and b is not None
            }
            trust = reader.conn.execute(
                "SELECT resident, source, topic FROM trust WHERE world = ?", (world,)
            ).fetchall()
            assert {(world, *t) for t in trust} == {
                k for k, v in cache.trust.items() if k[0] == world and v is not None
            }
        assert cache.weight == sum(cache_module._weight(b) for b in cache.beliefs.values())
    finally:
        reader.close()


def story(prefix: str = "") -> list[dict[str, Any]]:
    """A little of everything: hearsay, a lie, corrections, trust moves, aging, implants."""
    p = prefix
    return [
        say(0, "bo", ["mira", "kai"], "well", "poisoned", eid=f"{p}1"),
        observe(1, ["mira"], "well", "clean", eid=f"{p}2"),
        say(2, "mira", ["kai"], "well", "clean", eid=f"{p}3"),
        announce(3, "mayor", "*", "festival", 12, eid=f"{p}4"),
        intervene(5, "kai", "implant", "door", True, eid=f"{p}5"),  # day 5: retried after 6
        observe(5, ["kai"], "door", False, eid=f"{p}6"),
        {
            "event_id": f"{p}7",
            "day": 5,
            "kind": "trust",
            "resident": "kai",
            "source": "bo",
            "value": 0.9,
        },
        say(6, "bo", ["kai"], "mill", "burnt", eid=f"{p}8"),
        tick(20, eid=f"{p}9"),
        observe(21, ["kai"], "mill", "burnt", eid=f"{p}10"),
    ]


# --------------------------------------------------------------------------- consistency


def test_cache_holds_what_sqlite_holds_after_ordinary_batches(writer: Writer) -> None:
    events = story()
    apply(writer, *events[:4])
    assert_cache_matches_sqlite(writer)
    apply(writer, *events[4:])
    assert_cache_matches_sqlite(writer)
    assert writer._cache is not None and writer._cache.beliefs  # it was used at all
    assert "w" in writer._cache.complete  # a world seen empty stays complete


def test_event_refused_by_sqlite_leaves_no_cached_trace(writer: Writer, db_path: Path) -> None:
    """An event whose rows SQLite refuses (savepoint rolled back) is not in the cache."""
    apply(writer, observe(1, ["kai", "doomed"], "r", 1, eid="a"))
    refuse_doomed(db_path)
    results = apply(
        writer,
        observe(2, ["kai", "doomed"], "r", 2, eid="b"),  # refused: both would be doubted
        observe(3, ["kai"], "r", 1, eid="c"),  # reads kai's belief: must be the one before b
    )
    assert [r.status for r in results] == [ResultStatus.REJECTED, ResultStatus.APPLIED]
    assert isinstance(results[0].error, StorageFailure)
    assert_cache_matches_sqlite(writer)
    cache = writer._cache
    assert cache is not None
    for belief in cache.beliefs.values():
        assert belief is None or not any(ref.startswith("b/") for ref in belief.evidence_refs)


def test_event_refused_by_sqlite_in_the_same_batch_as_its_readers(
    writer: Writer, db_path: Path
) -> None:
    """Same, with the refused event's beliefs first read (and cached) in that batch."""
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE IF NOT EXISTS worlds_probe (x)")  # any outside commit
    conn.commit()
    conn.close()
    apply(writer, observe(0, ["kai"], "seed", 1, eid="s"))
    refuse_doomed(db_path)
    with_cache = apply(
        writer,
        observe(1, ["kai"], "r", 1, eid="a"),
        observe(2, ["kai", "doomed"], "r", 2, eid="b"),
        observe(3, ["kai"], "r", 2, eid="c"),
    )
    assert [r.status for r in with_cache] == [
        ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED,
    ]  # fmt: skip
    assert_cache_matches_sqlite(writer)


def test_rejected_event_leaves_no_cached_trace(writer: Writer) -> None:
    """The engine refusing an event (soften with no belief) changes nothing in the cache."""
    apply(writer, *story()[:3])
    cache = writer._cache
    assert cache is not None
    before = dict(cache.beliefs), dict(cache.trust)
    results = apply(writer, intervene(9, "mira", "soften", "nothing", eid="x"))
    assert results[0].status is ResultStatus.REJECTED
    assert isinstance(results[0].error, InvalidEvent)
    assert {k: v for k, v in cache.beliefs.items() if v is not None} == {
        k: v for k, v in before[0].items() if v is not None
    }
    assert cache.trust == before[1]
    assert_cache_matches_sqlite(writer)
    again = apply(writer, intervene(9, "mira", "soften", "nothing", eid="x"))  # not logged
    assert again[0].status is ResultStatus.REJECTED


def test_failed_batch_leaves_the_cache_consistent(writer: Writer) -> None:
    """A whole batch undone (SQLite refusing the commit's world update) leaves nothing of it
    cached; the next batch sees the old beliefs."""
    events = story()
    apply(writer, *events[:3])
    # On the writer's own connection: no data_version change.
    writer.conn.execute(
        "CREATE TRIGGER refuse_world BEFORE UPDATE ON worlds "
        "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
    )
    with pytest.raises(StorageFailure):
        apply(writer, *events[3:7])
    writer.conn.execute("DROP TRIGGER refuse_world")
    assert_cache_matches_sqlite(writer)
    results = apply(writer, *events[3:])
    assert all(r.status is ResultStatus.APPLIED for r in results)
    assert_cache_matches_sqlite(writer)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Writer(Path(tmp) / "fresh.db", synchronous="OFF", cache=False)
        apply(fresh, *events[:3])
        expected = apply(fresh, *events[3:])
        fresh.close()
        assert outcome(results) == outcome(expected)


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("stage", ["ingest", "write", "cache"])
def test_an_unexpected_error_refuses_that_event_alone(
    writer: Writer, monkeypatch: pytest.MonkeyPatch, stage: str, batched: bool
) -> None:
    """An exception that is no engine refusal (a bug) while applying one event, in the engine
    or while writing its rows, refuses that event alone as internal_error with its event id;
    the batch's other events commit, the cache stays true to SQLite, and the same event
    applies later once the fault is gone. A fault after its rows are stored (in the cache
    update) does not refuse it: it is stored, and only the cache is dropped."""
    # The fault is planted in both paths' stages: the batched path's rows (_stage) and cache
    # update (_cache_batch), and the event-by-event path's (_write, _cache_outcome). On the
    # batched path a fault in the rows hands the batch to the event-by-event path, where the
    # same fault repeats and refuses that event alone.
    writer.batched = batched
    events = story()
    apply(writer, *events[:3])
    faulty = "6" if stage != "write" else "5"
    real_ingest, real_write = store_module.ingest, Writer._write
    real_cache = store_module._cache_outcome
    real_stage, real_cache_batch = Writer._stage, store_module._cache_batch

    def flaky_ingest(event: WorldEvent, *args: Any) -> Any:
        if event.event_id == faulty:
            raise TypeError("engine bug")
        return real_ingest(event, *args)

    if stage == "ingest":
        monkeypatch.setattr(store_module, "ingest", flaky_ingest)
    elif stage == "write":

        def write(self: Writer, world: str, state: Any, out: Any) -> Any:
            changes = real_write(self, world, state, out)  # rows written, then the bug
            if out.event.event_id == faulty:
                raise KeyError("writer bug")
            return changes

        def stage_rows(self: Writer, world: str, state: Any, out: Any, *rest: Any) -> Any:
            result = real_stage(self, world, state, out, *rest)  # the batched path's rows
            if out.event.event_id == faulty:
                raise KeyError("writer bug")
            return result

        monkeypatch.setattr(Writer, "_write", write)
        monkeypatch.setattr(Writer, "_stage", stage_rows)
    else:

        def cache_outcome(cache: Any, world: str, out: Any) -> None:
            real_cache(cache, world, out)
            if out.event.event_id == faulty:
                raise ValueError("cache bug")

        def cache_batch(cache: Any, staged: Any) -> None:  # the batched path's update
            real_cache_batch(cache, staged)
            if ("w", faulty) in staged.event_ids:
                raise ValueError("cache bug")

        monkeypatch.setattr(store_module, "_cache_outcome", cache_outcome)
        monkeypatch.setattr(store_module, "_cache_batch", cache_batch)
    results = apply(writer, *events[3:7])
    monkeypatch.setattr(store_module, "ingest", real_ingest)
    monkeypatch.setattr(Writer, "_write", real_write)
    monkeypatch.setattr(store_module, "_cache_outcome", real_cache)
    monkeypatch.setattr(Writer, "_stage", real_stage)
    monkeypatch.setattr(store_module, "_cache_batch", real_cache_batch)
    by_id = {r.event_id: r for r in results}
    assert writer.fallbacks == (1 if batched and stage != "cache" else 0)
    if stage == "cache":
        assert all(r.status is ResultStatus.APPLIED for r in results)
    else:
        bad = by_id[faulty]
        assert bad.status is ResultStatus.REJECTED
        assert bad.error is not None and bad.error.code == "internal_error"
        assert faulty in str(bad.error)
        assert all(r.status is ResultStatus.APPLIED for r in results if r.event_id != faulty)
    assert_cache_matches_sqlite(writer)
    again = apply(writer, *events[3:])
    expected_status = {e["event_id"]: ResultStatus.DUPLICATE for e in events[3:7]}
    if stage != "cache":
        expected_status[faulty] = ResultStatus.APPLIED
    for result in again:
        assert result.status is expected_status.get(result.event_id, ResultStatus.APPLIED)
    assert_cache_matches_sqlite(writer)
    reader = Reader(writer.path)
    try:
        logged = [e.event_id for e in reader.events("w")]
    finally:
        reader.close()
    assert sorted(logged) == sorted(e["event_id"] for e in events)


def test_commit_by_another_connection_clears_the_cache(writer: Writer, db_path: Path) -> None:
    """A row changed behind the writer's back (another connection) is read again."""
    apply(writer, observe(1, ["kai"], "r", 1, eid="a"))
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE beliefs SET confidence = 40 WHERE resident = 'kai' AND root = 'r'")
    conn.commit()
    conn.close()
    results = apply(writer, observe(2, ["kai"], "r", 1, eid="b"))
    assert results[0].changes[0].confidence_before == 40
    assert_cache_matches_sqlite(writer)


def test_reopened_writer_agrees_with_a_fresh_one(tmp_path: Path) -> None:
    """Half the story, close, reopen (cold cache, world not complete), the rest: the same
    results and tables as one writer, without a cache, taking it all in one go."""
    events = story()
    w = Writer(tmp_path / "a.db", synchronous="OFF")
    first = apply(w, *events[:5])
    w.close()
    w = Writer(tmp_path / "a.db", synchronous="OFF")
    assert w._cache is not None and not w._cache.complete
    second = apply(w, *events[5:])
    assert_cache_matches_sqlite(w)
    w.close()
    fresh = Writer(tmp_path / "b.db", synchronous="OFF", cache=False)
    expected = apply(fresh, *events)
    fresh.close()
    assert outcome(first + second) == outcome(expected)
    assert dump(tmp_path / "a.db") == dump(tmp_path / "b.db")


def test_cache_stays_within_its_budget(tmp_path: Path) -> None:
    """A small budget: entries are evicted between batches, the world is no longer
    complete, and results are still those of a writer without a cache."""
    budget = 3000  # a few hundred beliefs: the story below needs more
    w = Writer(tmp_path / "a.db", synchronous="OFF", cache_budget=budget)
    plain = Writer(tmp_path / "b.db", synchronous="OFF", cache=False)
    events = [
        say(i, f"s{i % 7}", [f"l{j}" for j in range(i % 5, i % 5 + 3)], f"root{i % 11}", i % 3,
            eid=f"e{i}")
        for i in range(120)
    ]  # fmt: skip
    evicted = False
    for start in range(0, len(events), 10):
        chunk = events[start : start + 10]
        assert outcome(apply(w, *chunk)) == outcome(apply(plain, *chunk))
        assert w._cache is not None
        # Trimmed at the start of each batch; one batch may add its own rows on top.
        assert w._cache.weight <= budget + 10 * 60
        evicted = evicted or len(w._cache.beliefs) < len(plain_beliefs(plain))
    assert evicted and w._cache.beliefs
    assert "w" not in w._cache.complete
    assert_cache_matches_sqlite(w)
    w.close()
    plain.close()
    assert dump(tmp_path / "a.db") == dump(tmp_path / "b.db")


def test_values_that_would_not_read_back_the_same_are_not_cached(writer: Writer) -> None:
    """An int day (SQLite's REAL gives a float back) keeps that belief out of the cache."""
    event = parse_event(observe(1, ["kai"], "r", 1, eid="a"))
    odd = dataclasses.replace(event)
    object.__setattr__(odd, "day", 1)  # past the check that makes it a float, on purpose
    writer.apply([("w", odd)])
    cache = writer._cache
    assert cache is not None
    assert ("w", "kai", "r") not in cache.beliefs
    assert "w" not in cache.complete  # so the next read goes to SQLite
    results = writer.apply([("w", parse_event(observe(2, ["kai"], "r", 1, eid="b")))])
    stored = Reader(writer.path)
    belief = stored.belief("w", "kai", "r")
    stored.close()
    assert belief is not None and type(belief.formed_day) is float
    assert results[0].changes[0].confidence_before == 78
    assert_cache_matches_sqlite(writer)


def test_as_read_accepts_engine_values_and_refuses_each_odd_field() -> None:
    """The read-back check field by field: every float column refuses an int, NaN and -0.0
    (a nullable one takes None), every list column a list, each enum column its raw text."""
    from sidecar.engine import Belief, Intervention, SourceKind, State
    from sidecar.store.cache import _as_read

    good = Belief(
        resident="kai", root="r", value="v", subject="s", confidence=50,
        state=State.INFLUENCING, source_kind=SourceKind.HEARSAY, source_resident_id="bo",
        formed_day=0.0, updated_day=1.0, last_evidence_day=1.0, interpretation="i",
        intervention=Intervention.IMPLANTED, evidence_refs=("e",), evidence_count=1,
        next_decay_day=8.0, decay_period=7.0, value_since=1.0, importance=0.0,
        remembered_day=2.0, people=("bo",),
    )  # fmt: skip
    assert _as_read(good) is True
    assert _as_read(dataclasses.replace(good, next_decay_day=None, decay_period=None,
                                        importance=None, remembered_day=None,
                                        interpretation=None, intervention=None)) is True  # fmt: skip
    odd: list[tuple[str, object]] = [
        ("confidence", 50.0), ("state", "influencing"), ("evidence_count", 1.0),
        ("own_origins", None), ("source_kind", "hearsay"), ("subject", None),
        ("intervention", "implanted"), ("interpretation", 1), ("source_resident_id", 1),
        ("value", 1.5), ("value", None),
    ]  # fmt: skip
    for name in ("formed_day", "updated_day", "last_evidence_day", "value_since"):
        odd += [(name, 1), (name, float("nan")), (name, -0.0), (name, None)]
    for name in ("next_decay_day", "decay_period", "importance", "remembered_day"):
        odd += [(name, 1), (name, float("nan")), (name, -0.0)]
    for name in ("people", "places", "topics", "evidence_refs", "heard_from", "origins", "hops"):
        odd += [(name, ["x"]), (name, None)]
    for name, value in odd:
        bad = dataclasses.replace(good)
        object.__setattr__(bad, name, value)
        assert _as_read(bad) is False, (name, value)


def plain_beliefs(writer: Writer) -> list[Any]:
    return writer.conn.execute("SELECT resident, root FROM beliefs").fetchall()


# --------------------------------------------------------------------------- property

RESIDENTS = ["ana", "ben", "cai", "dot"]
ROOTS = ["r1", "r2", "mut:r3"]
VALUES = ["x", "y", 1, True]
residents = st.sampled_from(RESIDENTS)
roots = st.sampled_from(ROOTS)
values = st.sampled_from(VALUES)


@st.composite
def one_event(draw: st.DrawFn, eid: str, day: float) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["observe", "say", "say", "announce", "tick", "intervene", "trust", "propose"]
        )
    )
    if kind == "observe":
        return observe(day, draw(st.lists(residents, min_size=1, max_size=3, unique=True)),
                       draw(roots), draw(values), eid=eid)  # fmt: skip
    if kind == "say":
        speaker = draw(residents)
        others = [r for r in RESIDENTS if r != speaker]
        listeners = draw(st.lists(st.sampled_from(others), min_size=1, max_size=3, unique=True))
        return say(day, speaker, listeners, draw(roots), draw(values), eid=eid)
    if kind == "announce":
        return announce(day, draw(residents), "*", draw(roots), draw(values), eid=eid)
    if kind == "tick":
        return tick(day, eid=eid)
    if kind == "trust":
        resident, source = draw(st.lists(residents, min_size=2, max_size=2, unique=True))
        return {"event_id": eid, "day": day, "kind": "trust", "resident": resident,
                "source": source, "value": draw(st.sampled_from([0.0, 0.1, 0.5, 0.95, 1]))}  # fmt: skip
    if kind == "propose":
        edit = {"root": draw(roots), "subject": draw(st.sampled_from(["calm", "the same"]))}
        return {"event_id": eid, "day": day, "kind": "propose", "resident": draw(residents),
                "edits": [edit]}  # fmt: skip
    op = draw(st.sampled_from(["implant", "distort", "suppress", "soften"]))
    value = draw(values) if op in ("implant", "distort") else None
    return intervene(day, draw(residents), op, draw(roots), value, eid=eid)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[str, WorldEvent]], list[int], int | None]:
    events: list[tuple[str, WorldEvent]] = []
    days = {"north": 0.0, "south": 0.0}
    for i in range(draw(st.integers(1, 40))):
        world = draw(st.sampled_from(["north", "north", "south"]))
        days[world] = max(0.0, days[world] + draw(st.sampled_from([0, 0, 1, 3, 7, 14, -1])))
        resend = events and draw(st.integers(0, 10)) == 0
        eid = draw(st.sampled_from([e.event_id for _, e in events])) if resend else f"e{i}"
        try:
            events.append((world, parse_event(draw(one_event(eid, days[world])))))
        except InvalidEvent:
            continue
    return (events, *batching(draw, len(events)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.sampled_from([cache_module.CACHE_BUDGET, 1000]))
def test_cached_writer_and_uncached_writer_agree(
    history: tuple[list[tuple[str, WorldEvent]], list[int], int | None], budget: int
) -> None:
    """Any events over two worlds, any batches, a reopen, a budget that evicts or not: the
    same results and the same tables with the cache as without it."""
    events, sizes, reopen = history
    with tempfile.TemporaryDirectory(prefix="credence-cache-") as tmp:
        paths = {True: Path(tmp) / "cached.db", False: Path(tmp) / "plain.db"}
        seen: dict[bool, list[tuple[Any, ...]]] = {}
        for cached, path in paths.items():

            def open_writer() -> Writer:
                return Writer(path, synchronous="OFF", cache=cached, cache_budget=budget)  # noqa: B023

            w, got = apply_history(open_writer, events, sizes, reopen)
            if cached:
                assert_cache_matches_sqlite(w)
            w.close()
            seen[cached] = got
        assert seen[True] == seen[False]
        assert dump(paths[True]) == dump(paths[False])
