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
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

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
