"""``credence graph``: a belief graph as Graphviz DOT or JSON."""

from __future__ import annotations

import argparse

from ..read.graph import spool_graph
from ._reading import add_common, with_reader, write_to


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
    # The graph is built into a temporary file while the reader is open (an unknown
    # resident or root fails before anything is written), then written from there: a whole
    # world's graph is never held (sidecar/read/graph.py, SpooledGraph).
    code, spooled = with_reader(
        "graph", args, lambda r: spool_graph(r, args.world, resident=args.resident, root=args.root)
    )
    if spooled is None:
        return code
    with spooled:
        write_to(args.out, lambda out: spooled.write(out, args.format))
    return 0
