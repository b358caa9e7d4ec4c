"""``credence graph``: a belief graph as Graphviz DOT or JSON."""

from __future__ import annotations

import argparse

from ..read.graph import spool_graph
from ..store import Reader
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
    def body(r: Reader) -> None:
        # Built into a temporary file (an unknown resident or root fails before anything is
        # written), then written from there while the reader is still open: the DOT labels
        # read the names of holders the graph did not name yet. A whole world's graph is
        # never held (sidecar/read/graph.py, SpooledGraph).
        with spool_graph(r, args.world, resident=args.resident, root=args.root) as spooled:
            write_to(args.out, lambda out: spooled.write(out, args.format))

    code, _ = with_reader("graph", args, body)
    return code
