"""Saves are atomic (issue 17, defect 5): a fork, an import or a delete takes effect whole or
not at all, in one file (``--db``) and in a data directory (``--data-dir``). After an event
refused midway, a full disk, or a process killed with SIGKILL midway, nothing of the new
world is left (no rows, no file, not listed) and the same save, tried again, works."""

from __future__ import annotations

import itertools
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wsclient import guard

from sidecar.engine import DEFAULT_RULES, WorldEvent, parse_event
from sidecar.store import (
    DataDir,
    SingleFile,
    StoreError,
    WorldNotFound,
    WorldsError,
    rebuild,
    run_build,
    world_file,
)
from sidecar.store.export import export_lines
from sidecar.store.worlds import _world_tables
from tools.town import Town

MODES = ["db", "data_dir"]


def town(n: int) -> list[WorldEvent]:
    """The first ``n`` events of the synthetic town (valid under the default rules)."""
    return [parse_event(e) for _, e in itertools.islice(Town(50, seed=1), n)]


def open_store(tmp_path: Path, mode: str) -> SingleFile | DataDir:
    return SingleFile(tmp_path / "w.db") if mode == "db" else DataDir(tmp_path / "worlds")


def where(tmp_path: Path, mode: str) -> list[str]:
    """The CLI's ``--db``/``--data-dir`` arguments for ``mode``."""
    return ["--db", str(tmp_path / "w.db")] if mode == "db" else [
        "--data-dir", str(tmp_path / "worlds")
    ]  # fmt: skip


def leftovers(tmp_path: Path, mode: str, world: str) -> dict[str, Any]:
    """Everything of ``world`` on disk: its rows in every table and its save mark (one
    file), or its file and any temporary save file (a data directory)."""
    if mode == "db":
        conn = sqlite3.connect(tmp_path / "w.db")
        try:
            rows = {
                t: conn.execute(f"SELECT count(*) FROM {t} WHERE world = ?", (world,)).fetchone()[0]
                for t in [*_world_tables(conn), "_saves"]
            }
        finally:
            conn.close()
        return {t: n for t, n in rows.items() if n}
    data_dir = tmp_path / "worlds"
    files = sorted(p.name for p in data_dir.glob(".save-*"))
    if world_file(data_dir, world).exists():
        files.append(world_file(data_dir, world).name)
    return {"files": files} if files else {}


@pytest.fixture
def story() -> Iterator[list[WorldEvent]]:
    yield town(700)


# --------------------------------------------------------------------------- refused midway


@pytest.mark.parametrize("mode", MODES)
def test_an_import_whose_event_601_is_refused_leaves_nothing_and_a_retry_works(
    tmp_path: Path, mode: str, story: list[WorldEvent]
) -> None:
    """Event 601 refused (dated before the clock): no world, no rows or file; a retry works."""
    day_500 = story[499].day
    late = parse_event({"event_id": "late-601", "day": day_500 - 5, "kind": "tick"})
    bad = [*story[:600], late, *story[600:]]
    store = open_store(tmp_path, mode)
    try:
        store.import_events("keep", DEFAULT_RULES, story[:50])
        with pytest.raises(WorldsError, match="late-601"):
            store.import_events("copy", DEFAULT_RULES, bad)
        assert [w.world for w in store.worlds()] == ["keep"]
        assert leftovers(tmp_path, mode, "copy") == {}
        info = store.import_events("copy", DEFAULT_RULES, story)  # no "already exists"
        assert info.events == 700
        assert [w.world for w in store.worlds()] == ["copy", "keep"]
        assert store.worlds()[1].events == 50  # the other world is untouched
    finally:
        store.close()
    path = tmp_path / "w.db" if mode == "db" else world_file(tmp_path / "worlds", "copy")
    assert rebuild(path).ok


@pytest.mark.parametrize("mode", MODES)
def test_a_save_abandoned_midway_leaves_nothing_and_a_fork_then_works(
    tmp_path: Path, mode: str, story: list[WorldEvent]
) -> None:
    """A save stopped after two chunks (as a shutdown stops one) is removed whole; the fork
    into the same id then works and rebuilds the prefix."""
    store = open_store(tmp_path, mode)
    try:
        store.import_events("town", DEFAULT_RULES, story)
        build = store.begin_import("slot", DEFAULT_RULES, story[:400])
        assert not build.step() and not build.step()
        assert "slot" not in [w.world for w in store.worlds()]  # half built: not seen
        build.abort()
        assert leftovers(tmp_path, mode, "slot") == {}
        info = store.fork("town", "slot", 400)
        assert (info.world, info.events) == ("slot", 400)
    finally:
        store.close()


# --------------------------------------------------------------------------- full disk


def _limit_file_size(limit: int) -> None:
    """In the child: no file may grow past ``limit`` bytes (EFBIG, as a full disk would)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def cli(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, text=True,
        timeout=guard(120), preexec_fn=None if limit is None else lambda: _limit_file_size(limit),
    )  # fmt: skip


def export_file(path: Path, events: list[WorldEvent], world: str = "town") -> Path:
    with path.open("wb") as fh:
        fh.writelines(export_lines(world, DEFAULT_RULES, events))
    return path


@pytest.mark.parametrize("mode", MODES)
def test_an_import_onto_a_full_disk_leaves_nothing_and_a_retry_works(
    tmp_path: Path, mode: str
) -> None:
    """`credence import` whose files cannot grow past 400 KB midway (EFBIG, what a full disk
    gives) fails with one line; nothing is left once the store is next opened; a retry with
    room works."""
    events = town(3000)
    source = export_file(tmp_path / "town.credence", events)
    store = open_store(tmp_path, mode)  # the store exists, as on a server's disk
    store.import_events("keep", DEFAULT_RULES, events[:20])
    store.close()
    done = cli("import", str(source), "--world", "copy", *where(tmp_path, mode), limit=400_000)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("credence import: ") and done.stderr.count("\n") == 1
    store = open_store(tmp_path, mode)  # (removes what the failed save could not)
    try:
        assert [w.world for w in store.worlds()] == ["keep"]
        assert leftovers(tmp_path, mode, "copy") == {}
    finally:
        store.close()
    again = cli("import", str(source), "--world", "copy", *where(tmp_path, mode))
    assert again.returncode == 0, again.stderr
    assert "3000 events replayed" in again.stdout


def test_a_full_database_midway_leaves_nothing_in_one_file(tmp_path: Path) -> None:
    """One file at its `max_page_count` midway through an import: StorageFailure, no rows of
    the new world (removing them needs no new page); with room again the import works."""
    events = town(2000)
    store = SingleFile(tmp_path / "w.db")
    try:
        conn = store.writer.conn
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 60}")
        with pytest.raises(StoreError):  # (the batch could not commit: the disk is full)
            store.import_events("copy", DEFAULT_RULES, events)
        assert store.worlds() == [] and leftovers(tmp_path, "db", "copy") == {}
        conn.execute("PRAGMA max_page_count = 1073741823")
        assert store.import_events("copy", DEFAULT_RULES, events).events == 2000
    finally:
        store.close()


# --------------------------------------------------------------------------- kill -9


def _progress(tmp_path: Path, mode: str, world: str) -> int:
    """Events of ``world`` committed so far by a save under way (0 if none is seen yet)."""
    saves = list((tmp_path / "worlds").glob(".save-*.db"))
    paths = [tmp_path / "w.db"] if mode == "db" else saves
    total = 0
    for path in paths:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
            try:
                total += conn.execute(
                    "SELECT count(*) FROM events WHERE world = ?", (world,)
                ).fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            continue  # (not created, or not migrated yet)
    return total


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["fork", "import"])
def test_kill_9_midway_through_a_save_leaves_nothing_and_a_retry_works(
    tmp_path: Path, mode: str, op: str
) -> None:
    """SIGKILL a `credence fork`/`import` of 2,500 events once some are committed: after the
    next open nothing of the new world is left, it is not listed, and the same command then
    makes the whole world."""
    events = town(2500)
    source = export_file(tmp_path / "town.credence", events)
    store = open_store(tmp_path, mode)
    try:
        store.import_events("town", DEFAULT_RULES, events)
    finally:
        store.close()
    args = (
        ["fork", "--world", "town", "--into", "copy"]
        if op == "fork"
        else ["import", str(source), "--world", "copy"]
    )
    command = [sys.executable, "-m", "sidecar.cli", *args, *where(tmp_path, mode)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + guard(60)
    seen = 0
    while time.monotonic() < deadline and child.poll() is None:
        seen = _progress(tmp_path, mode, "copy")
        if seen >= 300:
            break
        time.sleep(0.01)
    assert child.poll() is None, "the save ended before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(guard(10))
    child.stdout.close()  # type: ignore[union-attr]
    child.stderr.close()  # type: ignore[union-attr]
    assert 300 <= seen < 2500
    store = open_store(tmp_path, mode)
    try:
        assert [w.world for w in store.worlds()] == ["town"]
        with pytest.raises(WorldNotFound):
            store.log("copy") if isinstance(store, SingleFile) else store._existing("copy")
    finally:
        store.close()
    assert leftovers(tmp_path, mode, "copy") == {}
    again = subprocess.run(command, capture_output=True, text=True, timeout=guard(120))
    assert again.returncode == 0, again.stderr
    assert "2500 events replayed" in again.stdout


# --------------------------------------------------------------------------- visibility


@pytest.mark.parametrize("mode", MODES)
def test_a_world_being_built_is_seen_only_once_whole(
    tmp_path: Path, mode: str, story: list[WorldEvent]
) -> None:
    """Midway through a save the new world is not listed, cannot be read or forked, and a
    second save into it is refused; its commit makes it appear with every event."""
    store = open_store(tmp_path, mode)
    try:
        build = store.begin_import("slot", DEFAULT_RULES, story)
        assert not build.step()
        assert store.worlds() == []
        with pytest.raises(WorldNotFound):
            store.fork("slot", "other")
        while not build.step():
            pass
        assert store.worlds() == []
        info = build.commit()
        assert (info.world, info.events) == ("slot", 700)
        assert [w.world for w in store.worlds()] == ["slot"]
        with pytest.raises(WorldsError, match="already exists"):
            store.import_events("slot", DEFAULT_RULES, story)
    finally:
        store.close()


def test_a_store_opening_beside_a_live_save_leaves_it_alone(
    tmp_path: Path, story: list[WorldEvent]
) -> None:
    """A store opened while this process builds a world (another handle on the same file)
    does not take that save for a killed one's leftovers."""
    store = SingleFile(tmp_path / "w.db")
    try:
        build = store.begin_import("slot", DEFAULT_RULES, story[:300])
        assert not build.step()
        SingleFile(tmp_path / "w.db").close()  # opens, looks for leftovers, closes
        while not build.step():
            pass
        assert build.commit().events == 300
    finally:
        store.close()


# --------------------------------------------------------------------------- delete


def test_a_delete_refused_before_its_first_commit_removes_nothing_and_a_retry_works(
    tmp_path: Path, story: list[WorldEvent]
) -> None:
    """One file: a delete whose first commit SQLite refuses (a trigger on `_saves`, as a
    failing disk would) keeps the whole world; once it can, the retry removes all of it."""
    store = SingleFile(tmp_path / "w.db")
    try:
        store.import_events("town", DEFAULT_RULES, story)
        before = leftovers(tmp_path, "db", "town")
        conn = sqlite3.connect(tmp_path / "w.db")
        conn.execute(
            "CREATE TRIGGER refuse_delete BEFORE INSERT ON _saves "
            "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
        conn.commit()
        with pytest.raises(sqlite3.Error, match="disk says no"):
            store.delete("town")
        assert leftovers(tmp_path, "db", "town") == before
        assert [w.world for w in store.worlds()] == ["town"]
        conn.execute("DROP TRIGGER refuse_delete")
        conn.commit()
        conn.close()
        assert store.delete("town").events == 700
        assert leftovers(tmp_path, "db", "town") == {} and store.worlds() == []
    finally:
        store.close()


def test_a_delete_that_fails_after_its_first_commit_is_whole_and_its_rows_go_later(
    tmp_path: Path, story: list[WorldEvent]
) -> None:
    """One file: once a delete's first commit is made the world is gone, whole, even if
    removing its rows then fails (a trigger on `changes`): it is neither listed nor found,
    a new world of that id starts empty, and the next open removes the rows left."""
    store = SingleFile(tmp_path / "w.db")
    try:
        store.import_events("town", DEFAULT_RULES, story)
        conn = sqlite3.connect(tmp_path / "w.db")
        conn.execute(
            "CREATE TRIGGER refuse_delete BEFORE DELETE ON changes "
            "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
        conn.commit()
        with pytest.raises(sqlite3.Error, match="disk says no"):
            store.delete("town")
        assert store.worlds() == [] and not store.exists("town")
        with pytest.raises(WorldNotFound):
            store.delete("town")
        assert leftovers(tmp_path, "db", "town")  # (hidden rows, not a world)
        conn.execute("DROP TRIGGER refuse_delete")
        conn.commit()
        conn.close()
    finally:
        store.close()
    store = SingleFile(tmp_path / "w.db")  # the next open removes them
    try:
        assert leftovers(tmp_path, "db", "town") == {} and store.worlds() == []
        assert store.import_events("town", DEFAULT_RULES, story[:50]).events == 50
    finally:
        store.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_replayed_by_a_worker_process_is_seen_only_once_whole(
    tmp_path: Path, mode: str, story: list[WorldEvent]
) -> None:
    """The server's fork (replayed in a worker process, then switched in): unseen while its
    rows are copied in, nothing left after an abort, whole and rebuildable after a commit."""
    store = open_store(tmp_path, mode)
    try:
        store.import_events("town", DEFAULT_RULES, story)
        with pytest.raises(WorldNotFound):
            run_build(store.begin_fork("nowhere", "slot"))
        build = store.begin_fork("town", "slot", 500)
        pending = build.elsewhere  # type: ignore[attr-defined]
        while not pending.done():  # (the worker replays the 500 events)
            time.sleep(0.01)
        build.step()  # (one file: the first table's rows copied in)
        assert [w.world for w in store.worlds()] == ["town"]
        build.abort()
        assert leftovers(tmp_path, mode, "slot") == {}
        assert list(tmp_path.rglob("*.save-*")) == []
        info = run_build(store.begin_fork("town", "slot", 500))
        assert (info.world, info.events) == ("slot", 500)
        assert [w.world for w in store.worlds()] == ["slot", "town"]
        assert list(tmp_path.rglob("*.save-*")) == []
    finally:
        store.close()
    path = tmp_path / "w.db" if mode == "db" else world_file(tmp_path / "worlds", "slot")
    assert rebuild(path).ok


# --------------------------------------------------------------------------- listing counters


def _counted(path: Path, world: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``world``'s stored counters and its rows, counted."""
    conn = sqlite3.connect(path)
    try:
        stored = conn.execute(
            "SELECT resident_count, belief_count FROM worlds WHERE world = ?", (world,)
        ).fetchone()
        rows = tuple(
            conn.execute(f"SELECT count(*) FROM {t} WHERE world = ?", (world,)).fetchone()[0]
            for t in ("residents", "beliefs")
        )
    finally:
        conn.close()
    return tuple(stored), rows  # type: ignore[return-value]


@pytest.mark.parametrize("mode", MODES)
def test_the_listing_counters_stay_exact_through_writes_saves_and_deletes(
    tmp_path: Path, mode: str, story: list[WorldEvent]
) -> None:
    """The ``worlds`` listing reads each world's resident and belief counts from its row
    (migration 0015's triggers keep them): after batches (beliefs upserted again and again),
    an import, the server's fork (rows copied in from a worker's file), a delete of the
    fork, they equal the rows, and every listing says what the rows say."""
    store = open_store(tmp_path, mode)
    try:
        store.apply([("town", e) for e in story[:300]])
        store.apply([("town", e) for e in story[300:]])
        store.import_events("copy", DEFAULT_RULES, story[:400])
        run_build(store.begin_fork("town", "slot", 500))
        listed = {w.world: w for w in store.worlds()}
        files = {
            w: tmp_path / "w.db" if mode == "db" else world_file(tmp_path / "worlds", w)
            for w in ("town", "copy", "slot")
        }
        for world, path in files.items():
            stored, rows = _counted(path, world)
            assert stored == rows and rows[1] > 100, world
            assert (listed[world].residents, listed[world].beliefs) == rows
        store.delete("slot")
        assert [w.world for w in store.worlds()] == ["copy", "town"]
    finally:
        store.close()
    if mode == "db":
        assert _counted(tmp_path / "w.db", "town")[0] == _counted(tmp_path / "w.db", "town")[1]
    for world in ("town", "copy"):
        path = tmp_path / "w.db" if mode == "db" else world_file(tmp_path / "worlds", world)
        assert rebuild(path).ok


def test_an_update_of_an_existing_belief_counts_nothing_and_rebuild_checks_the_counters(
    tmp_path: Path, story: list[WorldEvent]
) -> None:
    """The writer's upsert of a belief that is there updates it and counts nothing; a counter
    that drifted from the rows is a difference ``rebuild --check`` reports."""
    from sidecar.store.writer import _UPSERT_BELIEF

    store = SingleFile(tmp_path / "w.db")
    try:
        store.apply([("town", e) for e in story[:200]])
    finally:
        store.close()
    path = tmp_path / "w.db"
    before = _counted(path, "town")
    assert before[0] == before[1]
    conn = sqlite3.connect(path, isolation_level=None)
    rows = conn.execute(
        "SELECT * FROM beliefs WHERE world = 'town' ORDER BY resident, root LIMIT 5"
    ).fetchall()
    conn.executemany(_UPSERT_BELIEF, rows)
    assert _counted(path, "town") == before
    conn.execute("UPDATE worlds SET belief_count = belief_count + 1 WHERE world = 'town'")
    conn.close()
    report = rebuild(path)
    assert not report.ok
    assert any("stored counters say" in d for d in report.differences), report.differences


def test_a_database_from_before_the_counters_is_counted_once_when_migrated(
    tmp_path: Path, story: list[WorldEvent]
) -> None:
    """Migration 0015 fills the counters from the rows; a listing of a file not migrated yet
    (a data directory lists files it has not opened) counts the rows instead."""
    from sidecar.store import Reader
    from sidecar.store.worlds import _info

    store = SingleFile(tmp_path / "w.db")
    try:
        store.apply([("town", e) for e in story[:200]])
    finally:
        store.close()
    path = tmp_path / "w.db"
    rows = _counted(path, "town")[1]
    conn = sqlite3.connect(path, isolation_level=None)
    for trigger in ("residents_counted", "residents_uncounted", "beliefs_counted",
                    "beliefs_uncounted"):  # fmt: skip
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("ALTER TABLE worlds DROP COLUMN resident_count")
    conn.execute("ALTER TABLE worlds DROP COLUMN belief_count")
    conn.execute("DELETE FROM _migrations WHERE name = '0016_i17_world_counters'")
    conn.close()
    reader = Reader(path)
    try:
        old = _info(reader, "town")
    finally:
        reader.close()
    assert (old.residents, old.beliefs) == rows
    store = SingleFile(path)
    try:
        assert store.writer.migrations_applied == ["0016_i17_world_counters"]
        (info,) = store.worlds()
        assert (info.residents, info.beliefs) == rows
        store.apply([("town", e) for e in story[200:400]])
    finally:
        store.close()
    stored, now = _counted(path, "town")
    assert stored == now and now[1] > rows[1]


_KILLED_MIDWAY = """
import os, signal, sys
from sidecar.store import SingleFile
store = SingleFile(sys.argv[1])
build = store.begin_delete("town")
build.step()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_kill_9_midway_through_a_delete_leaves_the_world_gone(
    tmp_path: Path, story: list[WorldEvent]
) -> None:
    """One file: a process killed after a delete's first commit and one step of its rows
    leaves the world gone, whole: the next open lists no world and removes every row left,
    and a new world of that id starts empty."""
    store = SingleFile(tmp_path / "w.db")
    try:
        store.import_events("town", DEFAULT_RULES, story)
    finally:
        store.close()
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_MIDWAY, str(tmp_path / "w.db")],
        capture_output=True, timeout=guard(60),
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert leftovers(tmp_path, "db", "town")  # (killed before every row was gone)
    store = SingleFile(tmp_path / "w.db")
    try:
        assert store.worlds() == [] and leftovers(tmp_path, "db", "town") == {}
        assert store.import_events("town", DEFAULT_RULES, story[:50]).events == 50
    finally:
        store.close()


# --------------------------------------------------------------------- saves read as they go


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_and_an_export_read_the_log_a_page_at_a_time(
    tmp_path: Path, mode: str, story: list[WorldEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pages of 64 events, a fork (whole and at a seq inside a page) and an export of a
    700-event world hold the same events as the log, read page by page as it is iterated."""
    from sidecar.store import worlds as module
    from sidecar.store.export import export_world, read_export
    from sidecar.store.worlds import StoredLog

    monkeypatch.setattr(module, "LOG_PAGE", 64)
    store = open_store(tmp_path, mode)
    try:
        store.import_events("town", DEFAULT_RULES, story)

        def log(world: str, at: int | None = None) -> StoredLog:  # (a data dir's is per file)
            one = store._existing(world) if isinstance(store, DataDir) else store
            return one.log(world, at)

        assert isinstance(log("town"), StoredLog) and len(log("town")) == 700
        assert [e.event_id for e in log("town")] == [e.event_id for e in story]
        assert [e.event_id for e in log("town", 130)] == [e.event_id for e in story[:130]]
        assert store.fork("town", "copy").events == 700
        assert store.fork("town", "early", at=130).events == 130
        assert [e.event_id for e in log("copy")] == [e.event_id for e in story]
        assert export_world(store, "town", tmp_path / "town.credence") == 700
    finally:
        store.close()
    world, _, events = read_export(tmp_path / "town.credence")
    assert world == "town" and len(events) == 700
    assert [e.event_id for e in events] == [e.event_id for e in story]


def test_a_log_whose_world_is_deleted_while_it_is_read_ends_in_an_error_not_early(
    tmp_path: Path, story: list[WorldEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The world goes between two pages of its log: reading on raises WorldNotFound, so a
    fork of it fails (whole) instead of making a world of the first pages."""
    from sidecar.store import worlds as module

    monkeypatch.setattr(module, "LOG_PAGE", 100)
    store = SingleFile(tmp_path / "w.db")
    try:
        store.import_events("town", DEFAULT_RULES, story)
        pages = iter(store.log("town"))
        first = [next(pages) for _ in range(150)]
        store.delete("town")
        with pytest.raises(WorldNotFound, match="deleted while it was being read"):
            list(pages)
        assert len(first) == 150
    finally:
        store.close()


@pytest.mark.parametrize("mode", MODES)
def test_an_export_file_changed_after_its_check_imports_nothing(
    tmp_path: Path, mode: str, story: list[WorldEvent]
) -> None:
    """An import reads the file twice, checking it whole and then replaying it as it reads:
    a file edited in between (one event's day, still a valid event) makes the import fail
    whole, with one line, and a retry of the original file works."""
    from sidecar.store.export import import_world, read_export

    source = export_file(tmp_path / "town.credence", story)
    original = source.read_bytes()
    _, rules, events = read_export(source)
    source.write_bytes(original.replace(b'"day":0.08,', b'"day":0.09,', 1))
    assert source.read_bytes() != original
    store = open_store(tmp_path, mode)
    try:
        with pytest.raises(WorldsError, match="changed while it was being imported"):
            store.import_events("town", rules, events)
        assert store.worlds() == [] and leftovers(tmp_path, mode, "town") == {}
        source.write_bytes(original)
        assert import_world(store, source).events == 700
    finally:
        store.close()
