"""``credence narrative``: print what a resident believes, as an NPC prompt would get it."""

from __future__ import annotations

import argparse
import json

from ..engine import Bound
from ..read.narrative import MIN_BUDGET, Focus, project
from ..read.wording import LANGUAGES
from . import number
from ._reading import add_common, emit, with_reader

#: The budgets a ``narrative`` frame accepts (SPEC §10.4), the same on the command line.
MAX_BUDGET = 50_000
BUDGET = Bound(int, MIN_BUDGET, MAX_BUDGET)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "narrative", help="project a resident's beliefs into prompt text within a budget"
    )
    add_common(p)
    p.add_argument("--resident", required=True, help="resident id")
    p.add_argument(
        "--budget",
        type=number(BUDGET),
        default=2000,
        help=f"characters, {MIN_BUDGET} to {MAX_BUDGET} as over the wire (default 2000)",
    )
    p.add_argument("--lang", choices=sorted(LANGUAGES), default="en", help="language (default en)")
    p.add_argument("--json", action="store_true", help="print the wire form instead of the text")
    focus = p.add_argument_group("focus (what is present now; ranks what bears on it first)")
    for flag, what in (
        ("--person", "a person present (repeatable)"),
        ("--place", "a place present (repeatable)"),
        ("--root", "a root prefix in focus (repeatable)"),
        ("--topic", "a free topic (repeatable)"),
    ):
        focus.add_argument(flag, action="append", default=[], help=what)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    focus = Focus(
        people=tuple(args.person), places=tuple(args.place), roots=tuple(args.root),
        topics=tuple(args.topic),
    )  # fmt: skip
    code, result = with_reader(
        "narrative",
        args,
        lambda r: project(
            r, args.world, args.resident, budget=args.budget, lang=args.lang, focus=focus
        ),
    )
    if result is None:
        return code
    if args.json:
        emit(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        emit(result.text)
    return 0
