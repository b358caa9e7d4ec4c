"""``credence explain``: why a resident holds a belief, as a timeline of evidence."""

from __future__ import annotations

import argparse
import json

from ..read.explain import explain, render_explain
from ._reading import add_common, emit, with_reader


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="show one belief's evidence and change history")
    add_common(p)
    p.add_argument("--resident", required=True, help="resident id")
    p.add_argument("--root", required=True, help="claim root")
    p.add_argument("--json", action="store_true", help="print the wire form instead of the text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    code, data = with_reader(
        "explain", args, lambda r: explain(r, args.world, args.resident, args.root)
    )
    if data is None:
        return code
    emit(json.dumps(data, ensure_ascii=False, indent=2) if args.json else render_explain(data))
    return 0
