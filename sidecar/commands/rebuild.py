"""``credence rebuild --db FILE --check``: replay the world log and compare."""

from __future__ import annotations

import argparse
import sys

from ..store import StoreError, rebuild


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "rebuild",
        help="replay the event log into a fresh database and compare every belief and change",
    )
    p.add_argument("--db", default="./credence.db", help="database file (default ./credence.db)")
    p.add_argument("--check", action="store_true", help="exit non-zero on any difference")
    p.add_argument("--out", help="keep the rebuilt database at this path")
    p.add_argument(
        "--data-dir", help="check every world file of this directory instead (one per world)"
    )
    p.set_defaults(run=run)


def _run_dir(args: argparse.Namespace) -> int:
    """Rebuild each world file of a data directory; fail if any one differs."""
    from pathlib import Path

    data = Path(args.data_dir)
    if not data.is_dir():
        print(f"credence rebuild: no data directory at {data}", file=sys.stderr)
        return 2
    files = sorted(p for p in data.glob("*.db") if not p.name.startswith("."))
    failed = 0
    for path in files:
        try:
            report = rebuild(path)
        except StoreError as exc:
            print(f"credence rebuild: {path}: {exc}", file=sys.stderr)
            return 2
        status = "matches" if report.ok else "DIFFERS"
        print(f"{path.name}: {report.events} events, {report.changes} changes: {status}")
        for line in report.differences:
            print(f"DIFFERENT {line}")
        failed += not report.ok
    print(f"{len(files)} world file(s), {failed} with differences")
    return 1 if (args.check and failed) else 0


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.data_dir is not None:
        return _run_dir(args)
    if not Path(args.db).exists():
        print(f"credence rebuild: no database at {args.db}", file=sys.stderr)
        return 2
    try:
        report = rebuild(args.db, args.out)
    except StoreError as exc:
        print(f"credence rebuild: {exc}", file=sys.stderr)
        return 2
    print(
        f"replayed {report.events} events in {report.worlds} world(s): "
        f"{report.beliefs} beliefs, {report.changes} changes"
    )
    for line in report.differences:
        print(f"DIFFERENT {line}")
    if report.ok:
        print("rebuild matches the stored beliefs and changes exactly")
    return 1 if (args.check and not report.ok) else 0
