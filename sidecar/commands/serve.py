"""``credence serve``: run the sidecar until SIGINT/SIGTERM.

Settings come from, lowest first: the built-in defaults, the ``--config`` file, the flags.
A bad config or rules file is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server import Sidecar

URL_PREFIX = "CREDENCE_URL="


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the WebSocket sidecar")
    p.add_argument("--config", type=Path, help="TOML config file (flags override it)")
    p.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="TCP port (default 8765; 0 picks one)")
    p.add_argument("--db", type=Path, help="SQLite file for every world (default ./credence.db)")
    p.add_argument(
        "--data-dir", type=Path,
        help="serve each world from its own SQLite file under this directory (instead of --db)",
    )  # fmt: skip
    p.add_argument(
        "--max-open-worlds", type=int, metavar="N",
        help="with --data-dir: world files kept open at once, least recently used closed "
        "first (default 64)",
    )  # fmt: skip
    p.add_argument(
        "--rules", type=Path, metavar="RULES.toml",
        help="rules for worlds created by this process (a table of Rules numbers)",
    )  # fmt: skip
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
        "--max-frame", type=int, help="largest inbound frame in bytes (close 1009 above)"
    )
    p.add_argument(
        "--synchronous", choices=["FULL", "NORMAL"],
        help="SQLite fsync policy: FULL (default) survives power loss, NORMAL only process crashes",
    )  # fmt: skip
    p.add_argument(
        "--mutable-prefix", action="append", default=[], metavar="PREFIX",
        help="claim roots whose truth the world changes (e.g. location:), for worlds created now",
    )  # fmt: skip
    p.add_argument(
        "--pipeline", action=argparse.BooleanOptionalAction, default=None,
        help="fold the next batch of events while the last one commits (--db only; "
        "default off: not faster yet on a busy 2-core machine)",
    )  # fmt: skip
    p.add_argument("--no-metrics", action="store_true", help="do not serve GET /metrics")
    p.add_argument(
        "--misremember", type=float, default=None, metavar="P",
        help="chance (0-1) that a recall drifts a detail (place, person, day), for worlds "
        "created now; off by default",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=None, help="the seed of those draws (default 0)")
    p.add_argument("--log-level", help="logging level (default INFO)")
    p.set_defaults(run=run)


def server_config(args: argparse.Namespace) -> tuple[Any, str]:
    """The :class:`ServerConfig` for these flags over the config file, and the log level.

    Raises :class:`~sidecar.config.ConfigError` with a one-line message.
    """
    import dataclasses

    from ..config import ConfigError, FileConfig, load_config, load_rules
    from ..engine import DEFAULT_RULES
    from ..server import ServerConfig

    file = load_config(args.config) if args.config else FileConfig()
    rules = load_rules(args.rules) if args.rules else (file.rules or DEFAULT_RULES)
    if args.mutable_prefix:
        rules = dataclasses.replace(rules, mutable_prefixes=tuple(args.mutable_prefix))
    if args.misremember is not None:
        rules = dataclasses.replace(rules, misremember=args.misremember)
    if args.seed is not None:
        rules = dataclasses.replace(rules, seed=args.seed)
    if args.db is not None and args.data_dir is not None:
        raise ConfigError("pass --db (one file for every world) or --data-dir, not both")
    db, data_dir = file.db, file.data_dir
    if args.db is not None:
        db, data_dir = args.db, None
    if args.data_dir is not None:
        db, data_dir = None, args.data_dir
    kwargs: dict[str, Any] = dict(file.limits)
    if args.max_frame is not None:
        kwargs["max_frame"] = args.max_frame
    if args.max_open_worlds is not None:
        if args.max_open_worlds < 1:
            raise ConfigError("--max-open-worlds must be a positive whole number")
        kwargs["max_open_worlds"] = args.max_open_worlds
    config = ServerConfig(
        host=args.host or file.host or "127.0.0.1",
        port=args.port if args.port is not None else (file.port if file.port is not None else 8765),
        db=db or Path("./credence.db"),
        writer_tokens=[*file.writer_tokens, *args.token],
        reader_tokens=[*file.reader_tokens, *args.read_token],
        capture=args.capture or file.capture,
        synchronous=args.synchronous or file.synchronous or "FULL",
        rules=rules,
        world_rules=file.world_rules,
        metrics=not args.no_metrics and file.metrics is not False,
        pipelined=args.pipeline if args.pipeline is not None else file.pipeline is True,
        **kwargs,
    )
    if data_dir is not None:
        config.data_dir = data_dir
    return config, (args.log_level or file.log_level or "INFO").upper()


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..server import Sidecar
    from ..store import StoreError

    try:
        config, level = server_config(args)
        if level not in logging.getLevelNamesMapping():
            raise ConfigError(f"unknown log level {level!r}")
    except ConfigError as exc:
        print(f"credence serve: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
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
