"""``credence demo``: an in-process sidecar and a short town story, printed as it happens."""

from __future__ import annotations

import argparse
import asyncio


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run a short town scenario against an in-process sidecar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    asyncio.run(run_demo())
    return 0
