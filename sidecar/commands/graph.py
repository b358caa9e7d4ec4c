"""``credence graph``: a belief graph as Graphviz DOT or JSON."""

from __future__ import annotations

import argparse
import json

from ..read.graph import graph, to_dot
from ..read.registry import load_registry
from ..store import Reader
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
    def render(r: Reader) -> str:
        # (rendered while the reader is open: the names are read as the graph names them)
        g = graph(r, args.world, resident=args.resident, root=args.root)
        if args.format == "dot":
            return to_dot(g, load_registry(r, args.world))
        return json.dumps(g, ensure_ascii=False, indent=2)

    code, text = with_reader("graph", args, render)
    if text is None:
        return code
    emit(text, args.out)
    return 0
