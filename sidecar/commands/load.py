"""``credence load``: simulated game clients driving a synthetic town (see ``tools/load.py``)."""

from __future__ import annotations

import argparse
import sys

from ..engine import MAX_SAFE_INTEGER, Bound
from . import number, numbers

_COUNT = number(Bound(int, 1, 10_000_000))  # clients, residents, events, window
_SECONDS = number(Bound(float, 0.001, 86_400))  # --duration, --timeout
_RATE = number(Bound(float, 0.001, 10_000_000))  # events per second
_RESIDENTS = number(Bound(int, 4, 100_000))  # a town small enough to talk
_SEED = number(Bound(int, 0, MAX_SAFE_INTEGER))
_DAY_STEP = number(Bound(float, 1e-6, 10))  # game days between two town events


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "load",
        help="drive a sidecar with simulated game clients and report throughput and latency",
        description="Simulated game clients send a synthetic town's events (sightings, "
        "conversations, contradictions, lies, ticks); one more connection subscribed to '*' "
        "receives the notifications. Without --url a sidecar is started on a temporary database.",
    )
    p.add_argument("--url", help="sidecar to drive (default: start one on a temporary database)")
    p.add_argument("--token", help="token for hello (and for the sidecar this tool starts)")
    p.add_argument("--world", default="load", help="world to write to (default load)")
    p.add_argument("--clients", type=_COUNT, default=4, help="client connections (default 4)")
    p.add_argument(
        "--residents", type=_RESIDENTS, default=50, help="residents of the town (default 50)"
    )
    bound = p.add_mutually_exclusive_group()
    bound.add_argument("--events", type=_COUNT, help="events to send in all (default 2000)")
    bound.add_argument("--duration", type=_SECONDS, help="send for this many seconds instead")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--rate", type=_RATE, help="events per second in all (default unlimited)")
    pace.add_argument(
        "--curve", type=numbers(Bound(float, 0.001, 10_000_000)), metavar="R1,R2,…",
        help="run once per rate (each for --duration seconds, default 8) and print the rate → "
        "ack p50/p99 curve, e.g. 50,100,200,400,800,1600",
    )  # fmt: skip
    p.add_argument("--seed", type=_SEED, default=1, help="seed of the town's events (default 1)")
    p.add_argument(
        "--window",
        type=_COUNT,
        default=64,
        help="unacknowledged events per client (default 64)",
    )
    p.add_argument("--timeout", type=_SECONDS, help="give up waiting after this many seconds")
    p.add_argument(
        "--day-step", type=_DAY_STEP, metavar="DAYS",
        help="game days between two town events, its ticks in proportion (default 0.02: a "
        "game year in ~18,000 events, so hearsay ages within a short run; a game's own clock "
        "is slower, e.g. 0.0005)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tools.load import LoadConfig, main
    from tools.town import DAY_STEP

    if args.curve and args.events:
        print("credence load: --curve runs each rate for --duration seconds, not --events",
              file=sys.stderr)  # fmt: skip
        return 2
    duration = args.duration or (8.0 if args.curve else None)
    config = LoadConfig(
        url=args.url, token=args.token, world=args.world, clients=args.clients,
        residents=args.residents, events=None if duration else (args.events or 2000),
        duration=duration, rate=args.rate, seed=args.seed, window=args.window,
        timeout=args.timeout, day_step=DAY_STEP if args.day_step is None else args.day_step,
    )  # fmt: skip
    return main(config, as_json=args.json, curve=args.curve)
