"""``credence serve``: run the sidecar until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server import Sidecar

URL_PREFIX = "CREDENCE_URL="


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the WebSocket sidecar")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (default 8765; 0 picks one)")
    p.add_argument(
        "--db", type=Path, default=Path("./credence.db"), help="SQLite file (default ./credence.db)"
    )
    p.add_argument(
        "--token", action="append", default=[], metavar="[WORLD=]SECRET",
        help="writer token, for one world or (bare) every world; repeatable",
    )  # fmt: skip
    p.add_argument(
        "--read-token", action="append", default=[], metavar="[WORLD=]SECRET",
        help="read-only token (queries and notifications, no events); repeatable",
    )  # fmt: skip
    p.add_argument("--capture", type=Path, help="append every inbound frame to this capture file")
    p.add_argument(
        "--max-frame",
        type=int,
        default=256 * 1024,
        help="largest inbound frame in bytes (close 1009 above)",
    )
    p.add_argument(
        "--synchronous", choices=["FULL", "NORMAL"], default="FULL",
        help="SQLite fsync policy: FULL survives power loss, NORMAL only process crashes",
    )  # fmt: skip
    p.add_argument(
        "--mutable-prefix", action="append", default=[], metavar="PREFIX",
        help="claim roots whose truth the world changes (e.g. location:), for worlds created now",
    )  # fmt: skip
    p.add_argument(
        "--misremember", type=float, default=0.0, metavar="P",
        help="chance (0-1) that a recall drifts a detail (place, person, day), for worlds "
        "created now; off by default",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="the seed of those draws (default 0)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..engine import Rules
    from ..server import ServerConfig, Sidecar
    from ..store import StoreError

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("websockets").setLevel(logging.WARNING)
    config = ServerConfig(
        host=args.host, port=args.port, db=args.db, writer_tokens=args.token,
        reader_tokens=args.read_token, capture=args.capture, max_frame=args.max_frame,
        synchronous=args.synchronous,
        rules=Rules(
            mutable_prefixes=tuple(args.mutable_prefix), misremember=args.misremember,
            seed=args.seed,
        ),
    )  # fmt: skip
    try:
        sidecar = Sidecar(config)
    except (ValueError, StoreError) as exc:
        print(f"credence serve: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(sidecar.run_forever(ready=announce))


def announce(sidecar: Sidecar) -> None:
    """Print the bound URL as the one machine-readable stdout line (``--port 0`` picks a port).

    The format is exactly ``CREDENCE_URL=ws://HOST:PORT`` (an IPv6 host in brackets), so a game
    that launches the sidecar reads stdout until a line starts with ``CREDENCE_URL=``.
    """
    print(f"{URL_PREFIX}{sidecar.url}", flush=True)
