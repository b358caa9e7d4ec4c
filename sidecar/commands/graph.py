"""``credence graph``: a belief graph as Graphviz DOT or JSON."""

from __future__ import annotations

import argparse
import json

from ..read.graph import graph, to_dot
from ..read.registry import load_registry
from ._reading import add_common, emit, with_reader


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "graph",
        help="a resident's belief graph, one root across residents, or the whole world",
    )
    add_common(p)
    p.add_argument("--resident", help="only this resident's beliefs")
    p.add_argument("--root", help="only beliefs on this claim root")
    p.add_argument("--format", choices=("dot", "json"), default="dot", help="default dot")
    p.add_argument("--out", help="write to this file instead of stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    code, found = with_reader(
        "graph",
        args,
        lambda r: (
            graph(r, args.world, resident=args.resident, root=args.root),
            load_registry(r, args.world),
        ),
    )
    if found is None:
        return code
    g, names = found
    text = to_dot(g, names) if args.format == "dot" else json.dumps(g, ensure_ascii=False, indent=2)
    emit(text, args.out)
    return 0
