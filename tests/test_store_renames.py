"""A data directory of the earlier file names is migrated on open: every world ends in its own
file of the current name, nothing lost, and a crash at any step is finished by the next open."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_store_filenames import old_name

from sidecar.engine import parse_event, rules_from_mapping
from sidecar.store import DatabaseInUse, DataDir, SingleFile, WriterLock, rebuild, world_file
from sidecar.store import renames as renames_module
from sidecar.store.renames import MARKER

LONG = "台北" * 40  # hashed by the old scheme
TWIN = "~" + hashlib.sha256(LONG.encode()).hexdigest()  # the old scheme gave it LONG's file


def _events(world: str, n: int) -> list[Any]:
    return [
        parse_event({"event_id": f"{world[:8]}-{i}", "day": i + 1, "kind": "observe",
                     "witnesses": ["mira"], "claim": {"root": f"k{i}", "value": world[:20]},
                     "subject": "seen"})
        for i in range(n)
    ]  # fmt: skip


def old_data_dir(data: Path) -> dict[str, int]:
    """A data dir as the earlier scheme wrote it, including one file shared by two worlds
    and one whose last commits are still in its WAL. Returns world -> event count."""
    data.mkdir()
    counts = {"Town": 3, "town": 2, "~tilde": 2, LONG: 4, TWIN: 3, "con": 1, "plain": 2}
    for world, n in counts.items():
        store = SingleFile(data / (old_name(world) + ".db"))
        try:
            store.import_events(world, rules_from_mapping({}), _events(world, n))
        finally:
            store.close()
    # "wal": committed events left in the WAL (as after a kill -9), copied with the file
    live = SingleFile(data / "scratch.db")
    live.writer.conn.execute("PRAGMA wal_autocheckpoint = 0")
    live.import_events("wal", rules_from_mapping({}), _events("wal", 5))
    for extra in ("", "-wal"):
        shutil.copyfile(f"{data}/scratch.db{extra}", f"{data}/wal.db{extra}")
    live.close()
    for extra in ("", "-wal", "-shm"):
        Path(f"{data}/scratch.db{extra}").unlink(missing_ok=True)
    counts["wal"] = 5
    assert (data / "wal.db-wal").stat().st_size > 0
    return counts


def _check(data: Path, counts: dict[str, int]) -> None:
    d = DataDir(data)
    try:
        listed = {w.world: w.events for w in d.worlds()}
        assert listed == counts
    finally:
        d.close()
    files = sorted(p.name for p in data.glob("*.db") if not p.name.startswith("."))
    assert files == sorted(world_file(data, w).name for w in counts)
    for world in counts:
        path = world_file(data, world)
        assert rebuild(path).ok
        conn = sqlite3.connect(path)
        assert [r[0] for r in conn.execute("SELECT world FROM worlds")] == [world]
        conn.close()
    assert (data / MARKER).is_file()
    assert not [p for p in os.listdir(data) if p.startswith((".deleted-", ".migrating-"))]


def test_old_names_are_migrated_and_a_shared_file_is_split(tmp_path: Path) -> None:
    """Opening an old-scheme data dir renames each world's file, splits the file two worlds
    shared (a `~`+SHA-256 id and the long id it hashes), keeps WAL-only commits."""
    data = tmp_path / "d"
    counts = old_data_dir(data)
    twin = SingleFile(data / (old_name(TWIN) + ".db"))
    assert sorted(twin.reader.worlds()) == sorted([LONG, TWIN])  # the defect: one file
    twin.close()
    _check(data, counts)
    _check(data, counts)  # a second open changes nothing


class _Crash(Exception):
    pass


@pytest.mark.parametrize("at", range(1, 23, 2))
def test_a_migration_interrupted_at_any_step_is_finished_by_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """A crash at the at-th rename or removal leaves a state the next open completes."""
    data = tmp_path / "d"
    counts = old_data_dir(data)
    calls = 0
    real_replace, real_remove = os.replace, os.remove

    def counting(real: Any) -> Any:
        def step(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == at:
                raise _Crash
            return real(*args)

        return step

    monkeypatch.setattr(renames_module.os, "replace", counting(real_replace))
    monkeypatch.setattr(renames_module.os, "remove", counting(real_remove))
    try:
        DataDir(data).close()
    except _Crash:
        pass
    monkeypatch.undo()
    _check(data, counts)


def test_migration_waits_for_a_sidecar_that_serves_the_old_directory(tmp_path: Path) -> None:
    """An old directory served by another process (its lock held) is not renamed under it."""
    data = tmp_path / "d"
    old_data_dir(data)
    lock = WriterLock(data / ".credence")
    lock.acquire()
    try:
        with pytest.raises(DatabaseInUse):
            DataDir(data)
        assert (data / "Town.db").exists()
    finally:
        lock.release()


def test_an_orphaned_wal_is_never_replayed_into_a_new_world(tmp_path: Path) -> None:
    """A WAL whose database was removed (an interrupted delete) is cleared, not replayed."""
    data = tmp_path / "d"
    d = DataDir(data)
    d.import_events("gone", rules_from_mapping({}), _events("gone", 3))
    d.close()
    path = world_file(data, "gone")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE worlds SET day = 99")
    shutil.copyfile(f"{path}-wal", tmp_path / "wal")
    conn.close()
    path.unlink()
    shutil.copyfile(tmp_path / "wal", f"{path}-wal")
    d = DataDir(data)
    try:
        d.import_events("gone", rules_from_mapping({}), _events("gone", 1))
        assert [(w.world, w.events, w.day) for w in d.worlds()] == [("gone", 1, 1.0)]
    finally:
        d.close()
