"""``credence demo``: an in-process sidecar and a short town story, printed as it happens."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import anyio
from websockets.exceptions import WebSocketException

from ..engine import Bound
from . import number


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run a short town scenario against an in-process sidecar")
    p.add_argument(
        "--db", type=Path, help="keep the demo's database here (default: a temporary file)"
    )
    p.add_argument(
        "--url", help="play into this running sidecar (ws://host:port) instead, to watch it in "
        "its inspector (/inspect); the world must have no events yet",
    )  # fmt: skip
    p.add_argument("--world", default="demo-town", help="world to play in (default demo-town)")
    p.add_argument("--token", help="a writer token for that world, if the sidecar needs one")
    p.add_argument(
        "--pace", type=number(Bound(float, 0, 60)), default=None,
        help="seconds between story steps (default 1.5 with --url, else 0)",
    )  # fmt: skip
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..demo import DemoRefused, run_demo

    if args.url is not None and args.db is not None:
        print("credence demo: give --db or --url, not both", file=sys.stderr)
        return 2
    if args.url is not None and not args.url.startswith(("ws://", "wss://")):
        print(f"credence demo: --url must be ws://HOST:PORT or wss://…, not {args.url!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.db is not None and args.db.exists():
        print(f"credence demo: {args.db} exists; give a new path", file=sys.stderr)
        return 2
    pace = args.pace if args.pace is not None else (1.5 if args.url else 0.0)
    play = partial(
        run_demo, db=args.db, url=args.url, world=args.world, token=args.token, pace=pace
    )
    try:
        anyio.run(play)
    except DemoRefused as exc:
        print(f"credence demo: {exc}", file=sys.stderr)
        return 2
    except (OSError, WebSocketException) as exc:  # nothing (or no sidecar) listening there
        print(f"credence demo: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 2
    return 0
