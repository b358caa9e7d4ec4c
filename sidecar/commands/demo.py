"""``credence demo``: an in-process sidecar and a short town story, printed as it happens."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import anyio


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run a short town scenario against an in-process sidecar")
    p.add_argument(
        "--db", type=Path, help="keep the demo's database here (default: a temporary file)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    if args.db is not None and args.db.exists():
        print(f"credence demo: {args.db} exists; give a new path", file=sys.stderr)
        return 2
    anyio.run(partial(run_demo, db=args.db))
    return 0
