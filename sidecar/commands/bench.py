"""``credence bench``: transport, storage, sidecar, latency, growth, stalls (``tools/bench.py``)."""

from __future__ import annotations

import argparse

from ..engine import Bound
from . import number

#: Events per run, client connections, rounds: at least one, and small enough to finish.
_COUNT = number(Bound(int, 1, 10_000_000))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="measure transport, storage and sidecar throughput, latency and cost growth",
        description="Interleaved rounds of (a) a bare websockets+msgpack server, (b) plain "
        "sqlite3 writing the sidecar's rows, (c) the sidecar, under the same client load; "
        "ack latency at half peak; cost per event and per tick at 10k vs 1M stored beliefs; "
        "memory with a stalled subscriber. Figures are printed with their targets.",
    )
    p.add_argument("--events", type=_COUNT, help="events per run (default 5000; quick 800)")
    p.add_argument("--clients", type=_COUNT, help="client connections (default 4)")
    p.add_argument("--rounds", type=_COUNT, help="interleaved rounds (default 5; quick 3)")
    p.add_argument(
        "--quick", action="store_true", help="small and fast: 10k vs 100k beliefs, fewer events"
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tools.bench import BenchConfig, main

    config = BenchConfig.for_args(quick=args.quick, events=args.events, clients=args.clients)
    if args.rounds:
        config.rounds = args.rounds
    return main(config, as_json=args.json)
