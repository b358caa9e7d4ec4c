"""What the read-side commands share: opening the database and failing clearly.

A missing database, an unknown world, resident or root is a usage error: the command prints
one line naming it and exits 2, like argparse does for a bad flag. The database is never
created by a read command (``sqlite3`` would happily make an empty file).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TextIO, TypeVar

from ..read.queries import NotFound, world_exists
from ..store import Reader, StoreError, world_file
from . import fail

__all__ = ["add_common", "emit", "with_reader", "write_to"]

T = TypeVar("T")


def add_common(p: argparse.ArgumentParser) -> None:
    """The ``--db`` (or ``--data-dir``) and ``--world`` flags every read command takes."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--db", help="database file (default ./credence.db)")
    where.add_argument(
        "--data-dir",
        help="a directory of one SQLite file per world (credence serve --data-dir): read the "
        "world's own file, whatever its name",
    )
    p.add_argument("--world", required=True, help="world id")


def with_reader(
    prog: str, args: argparse.Namespace, body: Callable[[Reader], T]
) -> tuple[int, T | None]:
    """Run ``body`` on a reader of ``args.db`` (or of the world's file in ``args.data_dir``);
    ``(2, None)`` after printing any failure."""
    if args.data_dir is not None:
        db = world_file(Path(args.data_dir), args.world)
        if not Path(args.data_dir).is_dir():
            return fail(prog, f"no directory at {args.data_dir}"), None
        if not db.is_file():
            return fail(prog, f"no world {args.world!r} in {args.data_dir}"), None
    else:
        db = Path(args.db or "./credence.db")
        if not db.is_file():
            return fail(prog, f"no database at {db}"), None
    try:
        reader = Reader(db)
    except StoreError as exc:
        return fail(prog, str(exc)), None
    except sqlite3.Error as exc:
        return fail(prog, f"cannot open {db}: {exc}"), None
    try:
        if not world_exists(reader, args.world):
            return fail(prog, f"no world {args.world!r} in {db}"), None
        return 0, body(reader)
    except NotFound as exc:
        return fail(prog, str(exc.args[0] if exc.args else exc)), None
    except ValueError as exc:
        return fail(prog, str(exc)), None
    except (sqlite3.Error, StoreError) as exc:
        return fail(prog, f"cannot read {db}: {exc}"), None
    finally:
        reader.close()


def write_to(out: str | None, write: Callable[[TextIO], object]) -> None:
    """Run ``write`` on ``out`` (a file, replaced) or on stdout, as UTF-8: a text too large to
    build first is written as it comes. A file that cannot be written is one line and exit 2
    (and what was written of it is removed)."""
    if not out:
        _utf8_stdout()
        write(sys.stdout)
        return
    try:
        fh = open(out, "w", encoding="utf-8")  # noqa: SIM115 (closed below, or removed)
    except OSError as exc:
        _cannot_write(out, exc)
    try:
        with fh:
            write(fh)
    except OSError as exc:  # (a full disk)
        Path(out).unlink(missing_ok=True)
        _cannot_write(out, exc)


def _cannot_write(out: str, exc: OSError) -> NoReturn:
    # (one line and exit 2, as every other bad input)
    print(f"credence: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
    raise SystemExit(2) from None


def _utf8_stdout() -> None:
    stream = sys.stdout
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None and (stream.encoding or "").lower().replace("-", "") != "utf8":
        reconfigure(encoding="utf-8")


def emit(text: str, out: str | None = None) -> None:
    """Write ``text`` (with a final newline) to ``out`` or stdout, always as UTF-8
    (:func:`write_to`)."""
    if not text.endswith("\n"):
        text += "\n"
    write_to(out, lambda stream: stream.write(text))
