"""World lifecycle commands: ``worlds``, ``fork``, ``export``, ``import``, ``delete``, ``backup``,
``vacuum``.

Each works on one SQLite file (``--db``) or a data directory of one file per world
(``--data-dir``). ``fork``, ``import`` and ``backup`` are safe while a sidecar serves the
same files; ``delete`` is not (use the ``delete`` frame then), and asks for ``--yes``;
``vacuum`` refuses while a sidecar serves them.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ..engine import MAX_SAFE_INTEGER, Bound
from . import fail, number

if TYPE_CHECKING:
    from ..store import DataDir, SingleFile

_HELP = {
    "worlds": "list the worlds with their counts",
    "fork": "copy a world's log up to an event seq into a new world (a save slot, a rewind)",
    "export": "write a world to one portable file (its event log and a checksum)",
    "import": "replay an exported world into a new world",
    "delete": "delete a world and everything in it (needs --yes)",
    "backup": "copy a database file consistently while it is being served (SQLite backup API)",
    "vacuum": "give the free pages of a database (or of every world file) back to the disk",
}


def _where(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--db", type=Path, help="one SQLite file for every world (default ./credence.db)"
    )
    g.add_argument("--data-dir", type=Path, help="a directory of one SQLite file per world")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("worlds", help=_HELP["worlds"])
    _where(p)
    p.add_argument("--json", action="store_true", help="one JSON object per world")
    p.set_defaults(run=run_worlds)

    p = sub.add_parser("fork", help=_HELP["fork"])
    _where(p)
    p.add_argument("--world", required=True, help="the world to copy")
    p.add_argument("--into", required=True, help="the new world's id")
    p.add_argument(
        "--at", type=number(Bound(int, 0, MAX_SAFE_INTEGER)),
        help="keep events with seq <= AT (default: all of them)",
    )  # fmt: skip
    p.set_defaults(run=run_fork)

    p = sub.add_parser("export", help=_HELP["export"])
    _where(p)
    p.add_argument("--world", required=True)
    p.add_argument("--out", type=Path, required=True, help="the file to write")
    p.set_defaults(run=run_export)

    p = sub.add_parser("import", help=_HELP["import"])
    _where(p)
    p.add_argument("file", type=Path, help="a file written by credence export")
    p.add_argument("--world", help="import under this id (default: the exported world's id)")
    p.set_defaults(run=run_import)

    p = sub.add_parser("delete", help=_HELP["delete"])
    _where(p)
    p.add_argument("--world", required=True)
    p.add_argument("--yes", action="store_true", help="confirm: the world cannot be recovered")
    p.set_defaults(run=run_delete)

    p = sub.add_parser("backup", help=_HELP["backup"])
    _where(p)
    p.add_argument("--world", help="with --data-dir: the world whose file to copy")
    p.add_argument("--out", type=Path, required=True, help="the copy to write")
    p.set_defaults(run=run_backup)

    p = sub.add_parser("vacuum", help=_HELP["vacuum"])
    _where(p)
    p.add_argument("--world", help="with --data-dir: only this world's file (default: all)")
    p.set_defaults(run=run_vacuum)


def _fail(command: str, message: str) -> int:
    return fail(command, message)


def _open(args: argparse.Namespace, *, create: bool = False) -> SingleFile | DataDir:
    from ..store import DataDir, SingleFile

    if args.data_dir is not None:
        if not create and not args.data_dir.is_dir():
            raise FileNotFoundError(f"no data directory at {args.data_dir}")
        return DataDir(args.data_dir)
    db = args.db or Path("./credence.db")
    if not create and not db.exists():
        raise FileNotFoundError(f"no database at {db}")
    return SingleFile(db)


def _run(
    command: str,
    args: argparse.Namespace,
    create: bool,
    body: Callable[[SingleFile | DataDir], int],
) -> int:
    from ..store import StoreError

    try:
        store = _open(args, create=create)
    except (FileNotFoundError, StoreError) as exc:
        return _fail(command, str(exc))
    try:
        return body(store)
    except (StoreError, OSError) as exc:
        return _fail(command, str(exc))
    finally:
        store.close()


def run_worlds(args: argparse.Namespace) -> int:
    def body(store: SingleFile | DataDir) -> int:
        infos = store.worlds()
        for i in infos:
            if args.json:
                print(orjson.dumps(i.to_dict()).decode())
            else:
                print(
                    f"{i.world}  day {i.day:g}  {i.events} events  {i.changes} changes  "
                    f"{i.residents} residents  {i.beliefs} beliefs"
                )
        if not infos and not args.json:
            print("no worlds")
        return 0

    return _run("worlds", args, False, body)


def run_fork(args: argparse.Namespace) -> int:
    from ..store import WorldsError, check_world_id

    try:
        check_world_id(args.into, "--into")
    except WorldsError as exc:
        return _fail("fork", str(exc))

    def body(store: SingleFile | DataDir) -> int:
        i = store.fork(args.world, args.into, args.at)
        print(f"forked {args.world!r} into {i.world!r}: {i.events} events replayed, day {i.day:g}")
        return 0

    return _run("fork", args, False, body)


def run_export(args: argparse.Namespace) -> int:
    from ..store import export_world

    def body(store: SingleFile | DataDir) -> int:
        n = export_world(store, args.world, args.out)
        print(f"exported {args.world!r}: {n} events to {args.out}")
        return 0

    return _run("export", args, False, body)


def run_import(args: argparse.Namespace) -> int:
    from ..store import WorldsError, check_world_id
    from ..store.export import read_export

    # The id and the whole file are checked before any database is opened (or created).
    try:
        if args.world is not None:
            check_world_id(args.world, "--world")
        original, rules, events = read_export(args.file)
    except WorldsError as exc:
        return _fail("import", str(exc))

    def body(store: SingleFile | DataDir) -> int:
        i = store.import_events(args.world or original, rules, events)
        print(f"imported {i.world!r}: {i.events} events replayed, {i.beliefs} beliefs")
        return 0

    return _run("import", args, True, body)


def run_delete(args: argparse.Namespace) -> int:
    if not args.yes:
        return _fail("delete", f"refusing to delete world {args.world!r} without --yes")

    def body(store: SingleFile | DataDir) -> int:
        i = store.delete(args.world)
        print(f"deleted {i.world!r}: {i.events} events, {i.beliefs} beliefs")
        return 0

    return _run("delete", args, False, body)


def run_backup(args: argparse.Namespace) -> int:
    from ..store import StoreError, backup, world_file

    if args.data_dir is not None:
        if not args.world:
            return _fail("backup", "with --data-dir, name the world to copy (--world)")
        source = world_file(args.data_dir, args.world)
    else:
        source = args.db or Path("./credence.db")
    if not source.exists():
        return _fail("backup", f"no database at {source}")
    try:
        backup(source, args.out)
    except (StoreError, OSError, sqlite3.Error) as exc:
        return _fail("backup", str(exc))
    print(f"backed up {source} to {args.out}")
    return 0


def run_vacuum(args: argparse.Namespace) -> int:
    from ..store import StoreError, vacuum

    if args.world is not None and args.data_dir is None:
        return _fail("vacuum", "--world names a world file of a --data-dir")
    try:
        if args.data_dir is not None:
            done = vacuum(data_dir=args.data_dir, world=args.world)
        else:
            done = vacuum(db=args.db or Path("./credence.db"))
    except (StoreError, OSError, sqlite3.Error) as exc:
        return _fail("vacuum", str(exc))
    mib = 1 << 20
    for v in done:
        print(f"{v.path}: {v.before / mib:.2f} -> {v.after / mib:.2f} MiB")
    before, after = sum(v.before for v in done), sum(v.after for v in done)
    print(f"vacuumed {len(done)} file(s): {before / mib:.2f} -> {after / mib:.2f} MiB")
    return 0
