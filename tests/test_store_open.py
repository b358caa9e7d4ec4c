"""Unusable database files and the writer lock: one clear line and exit code 2, never a traceback.

Covers issue 9 items 3 (two ``credence serve`` on one file) and 9 (a corrupted, newer-schema,
read-only or directory ``--db``), for ``serve``, ``rebuild`` and the read commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from wsclient import guard, within

from sidecar.cli import main
from sidecar.server import ServerConfig, Sidecar
from sidecar.store import (
    CannotOpen,
    DatabaseInUse,
    Reader,
    SchemaTooNew,
    Writer,
    WriterLock,
    lock_path,
)

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [
    ["serve", "--port", "0"],
    ["rebuild", "--check"],
    ["narrative", "--world", "town", "--resident", "mira"],
    ["explain", "--world", "town", "--resident", "mira", "--root", "water:well"],
]


def _corrupt(tmp: Path) -> Path:
    path = tmp / "corrupt.db"
    path.write_bytes(b"this is not an SQLite database at all " * 200)
    return path


def _newer(tmp: Path) -> Path:
    path = tmp / "newer.db"
    w = Writer(path)
    w.conn.execute("INSERT INTO _migrations (name) VALUES ('9999_from_the_future')")
    w.close()
    return path


def _directory(tmp: Path) -> Path:
    path = tmp / "dir.db"
    path.mkdir()
    return path


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` unwritable for this process (root ignores modes: use the immutable flag)."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr: cannot make a file read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("make", [_corrupt, _newer, _directory], ids=["corrupt", "newer", "dir"])
@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_unusable_db_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, command: list[str]
) -> None:
    """A corrupted, newer-schema or directory --db: every command prints one line, exits 2."""
    assert callable(make)
    db = make(tmp_path)
    line = _one_line_exit_2([*command, "--db", str(db)], capsys)
    assert f"credence {command[0]}:" in line
    assert str(db.name) in line


def test_read_only_db_refused_by_serve_but_readable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only --db: serve refuses it in one line (exit 2); rebuild --check still reads it."""
    db = tmp_path / "ro.db"
    Writer(db).close()
    with read_only(db):
        line = _one_line_exit_2(["serve", "--port", "0", "--db", str(db)], capsys)
        assert "not writable" in line
        assert main(["rebuild", "--check", "--db", str(db)]) == 0
        with pytest.raises(CannotOpen):
            Writer(db)


def test_store_errors_name_the_problem(tmp_path: Path) -> None:
    """Writer and Reader raise the store's own errors, never a raw sqlite3 one."""
    with pytest.raises(CannotOpen, match="not a usable SQLite database"):
        Writer(_corrupt(tmp_path))
    with pytest.raises(CannotOpen, match="is a directory"):
        Reader(_directory(tmp_path))
    newer = _newer(tmp_path)
    with pytest.raises(SchemaTooNew, match="newer Credence"):
        Reader(newer)
    with pytest.raises(SchemaTooNew, match="newer Credence"):
        Writer(newer)


def test_a_reader_never_makes_a_database_file(tmp_path: Path) -> None:
    """A reader of a file that is not there (a world deleted as a reader thread opens it)
    raises CannotOpen and leaves no empty database, WAL or shared-memory file behind."""
    with pytest.raises(CannotOpen, match="no such database file"):
        Reader(tmp_path / "gone.db")
    assert list(tmp_path.iterdir()) == []


def test_writer_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    """A second lock on the same database is refused while the first is held, and free after."""
    db = tmp_path / "x.db"
    first = WriterLock(db)
    first.acquire()
    assert lock_path(db).read_text().strip() == str(os.getpid())
    with pytest.raises(DatabaseInUse, match="in use by another credence serve"):
        WriterLock(db).acquire()
    first.release()
    again = WriterLock(db)
    again.acquire()
    again.release()


async def test_second_sidecar_on_one_db_refused_until_first_stops(tmp_path: Path) -> None:
    """In one process too: a second Sidecar on a running one's database cannot be built."""
    config = ServerConfig(port=0, db=tmp_path / "x.db", ping_interval=None)
    sc = Sidecar(config)
    await sc.start()
    try:
        with pytest.raises(DatabaseInUse):
            Sidecar(config)
    finally:
        await within(sc.stop(), 30)
    second = Sidecar(config)  # released at stop
    await second.start()
    await within(second.stop(), 30)


async def test_second_credence_serve_process_exits_2_with_one_line(tmp_path: Path) -> None:
    """Two `credence serve` on one file: the second exits 2 with one line; the first serves on."""
    db = tmp_path / "x.db"
    cmd = [sys.executable, "-m", "sidecar.cli", "serve", "--port", "0", "--db", str(db)]
    first = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:

        async def wait_serving() -> None:
            assert first.stderr is not None
            while "serving" not in await asyncio.to_thread(first.stderr.readline):
                assert first.poll() is None, "the first credence serve died"

        await within(wait_serving(), 30)
        second = await asyncio.to_thread(
            subprocess.run, cmd, cwd=ROOT, capture_output=True, text=True, timeout=guard(30)
        )
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "in use by another credence serve" in lines[0], second.stderr
        assert first.poll() is None
    finally:
        first.terminate()
        first.wait(guard(30))
    assert first.returncode == 0
