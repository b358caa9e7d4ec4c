"""``credence beliefs``: list a resident's beliefs, narrowed like the ``beliefs`` query."""

from __future__ import annotations

import argparse
import json

from protocol import belief_summary

from ..engine import Bound
from ..read.queries import NotFound
from ..store import BeliefFilter, Reader
from . import number
from ._reading import add_common, emit, with_reader

_STATES = ("influencing", "past", "doubtful", "anomalous", "corrected")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("beliefs", help="list a resident's beliefs, with the beliefs query filters")
    add_common(p)
    p.add_argument("--resident", required=True, help="resident id")
    p.add_argument("--root", help="one root exactly (a single-root lookup)")
    p.add_argument("--prefix", action="append", default=[], help="root prefix (repeatable)")
    p.add_argument("--state", action="append", default=[], choices=_STATES, help="(repeatable)")
    p.add_argument("--person", action="append", default=[], help="person involved (repeatable)")
    p.add_argument("--place", action="append", default=[], help="place (repeatable)")
    p.add_argument(
        "--min-confidence", type=number(Bound(int, 0, 100)),
        help="at least this confidence (0-100)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the wire form (one JSON list)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    where = BeliefFilter(
        root=args.root, prefixes=tuple(args.prefix), states=tuple(args.state),
        people=tuple(args.person), places=tuple(args.place), min_confidence=args.min_confidence,
    )  # fmt: skip

    def body(reader: Reader) -> list[dict[str, object]]:
        if not reader.is_resident(args.world, args.resident):
            raise NotFound(f"resident {args.resident!r} is unknown in world {args.world!r}")
        return [belief_summary(b) for b in reader.beliefs(args.world, args.resident, where=where)]

    code, found = with_reader("beliefs", args, body)
    if found is None:
        return code
    if args.json:
        emit(json.dumps(found, ensure_ascii=False, indent=2))
        return 0
    lines = [
        f"{b['root']} = {b['value']!r}  {b['confidence']} {b['state']} {b['source_kind']}"
        + (f" from {b['source']}" if b["source"] else "")
        + f"  — {b['subject']}"
        for b in found
    ]
    emit("\n".join(lines) if lines else "(no beliefs match)")
    return 0
