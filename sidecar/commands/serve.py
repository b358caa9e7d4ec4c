"""``credence serve``: run the sidecar until SIGINT/SIGTERM.

Settings come from, lowest first: the built-in defaults, the ``--config`` file, the flags.
A bad config or rules file is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server import Sidecar

URL_PREFIX = "CREDENCE_URL="


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the WebSocket sidecar")
    p.add_argument("--config", type=Path, help="TOML config file (flags override it)")
    p.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", help="TCP port (default 8765; 0 picks one)")
    p.add_argument("--db", type=Path, help="SQLite file for every world (default ./credence.db)")
    p.add_argument(
        "--data-dir", type=Path,
        help="serve each world from its own SQLite file under this directory (instead of --db)",
    )  # fmt: skip
    p.add_argument(
        "--max-open-worlds", metavar="N",
        help="with --data-dir: world files kept open at once, least recently used closed "
        "first (default 64)",
    )  # fmt: skip
    p.add_argument(
        "--max-connections", metavar="N",
        help="WebSocket connections at once, more answered 503 (default: what the file-handle "
        "limit leaves beside the world files, at most 10000)",
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
        "--capture-max-bytes", metavar="BYTES",
        help="rotate the capture file to FILE.1 (one kept) when it would pass this size, "
        "1024 to 2^40 (default 256 MiB)",
    )  # fmt: skip
    p.add_argument(
        "--max-frame",
        metavar="BYTES",
        help="largest inbound frame in bytes, 1024 to 64 MiB (close 1009 above)",
    )
    p.add_argument(
        "--synchronous", choices=["FULL", "NORMAL"],
        help="SQLite fsync policy: FULL (default) survives power loss, NORMAL only process crashes",
    )  # fmt: skip
    p.add_argument(
        "--mutable-prefix", action="append", default=[], metavar="PREFIX",
        help="claim roots whose truth the world changes (e.g. location:), for worlds created now",
    )  # fmt: skip
    p.add_argument("--no-metrics", action="store_true", help="do not serve GET /metrics")
    p.add_argument(
        "--misremember", default=None, metavar="P",
        help="chance (0-1) that a recall drifts a detail (place, person, day), for worlds "
        "created now; off by default",
    )  # fmt: skip
    p.add_argument("--seed", default=None, metavar="N", help="the seed of those draws (default 0)")
    p.add_argument("--log-level", help="logging level (default INFO)")
    p.set_defaults(run=run)


def server_config(args: argparse.Namespace) -> tuple[Any, str]:
    """The :class:`ServerConfig` for these flags over the config file, and the log level.

    Raises :class:`~sidecar.config.ConfigError` with a one-line message.
    """
    from ..config import ConfigError, FileConfig, load_config, load_rules, setting
    from ..engine import DEFAULT_RULES, Bound, RulesError, rule_check, rules_with
    from ..server import ServerConfig

    file = load_config(args.config) if args.config else FileConfig()
    rules = load_rules(args.rules) if args.rules else (file.rules or DEFAULT_RULES)
    # Each rule flag goes through its rule's own check (as a rules file's number does).
    flags: list[tuple[str, str, object]] = []
    if args.mutable_prefix:
        flags.append(("--mutable-prefix", "mutable_prefixes", args.mutable_prefix))
    for flag, name in (("--misremember", "misremember"), ("--seed", "seed")):
        text = getattr(args, name)
        if text is not None:
            bound = rule_check(name)
            assert isinstance(bound, Bound)  # (a number rule)
            try:
                flags.append((flag, name, bound.parse(text)))
            except ValueError as exc:
                raise ConfigError(f"{flag}: {name} {exc}") from None
    try:
        for flag, name, value in flags:
            rules = rules_with(rules, flag, **{name: value})
    except RulesError as exc:
        raise ConfigError(str(exc)) from None
    if args.db is not None and args.data_dir is not None:
        raise ConfigError("pass --db (one file for every world) or --data-dir, not both")
    db, data_dir = file.db, file.data_dir
    if args.db is not None:
        db, data_dir = args.db, None
    if args.data_dir is not None:
        db, data_dir = None, args.data_dir
    kwargs: dict[str, Any] = dict(file.limits)
    if args.max_frame is not None:
        kwargs["max_frame"] = setting("max_frame", args.max_frame, "--max-frame", text=True)
    if args.max_open_worlds is not None:
        kwargs["max_open_worlds"] = setting(
            "max_open_worlds", args.max_open_worlds, "--max-open-worlds", text=True
        )
    if args.max_connections is not None:
        kwargs["max_connections"] = setting(
            "max_connections", args.max_connections, "--max-connections", text=True
        )
    if file.capture_max_bytes is not None:
        kwargs["capture_max_bytes"] = file.capture_max_bytes
    if args.capture_max_bytes is not None:
        kwargs["capture_max_bytes"] = setting(
            "capture_max_bytes", args.capture_max_bytes, "--capture-max-bytes", text=True
        )
    port = file.port if file.port is not None else 8765
    if args.port is not None:
        port = int(setting("port", args.port, "--port", text=True))
    config = ServerConfig(
        host=args.host or file.host or "127.0.0.1",
        port=port,
        db=db or Path("./credence.db"),
        writer_tokens=[*file.writer_tokens, *args.token],
        reader_tokens=[*file.reader_tokens, *args.read_token],
        capture=args.capture or file.capture,
        synchronous=args.synchronous or file.synchronous or "FULL",
        rules=rules,
        world_rules=file.world_rules,
        metrics=not args.no_metrics and file.metrics is not False,
        **kwargs,
    )
    if data_dir is not None:
        config.data_dir = data_dir
    return config, (args.log_level or file.log_level or "INFO").upper()


def port_free(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (``None``: it can), tried before any database file or
    directory is created, so a port in use leaves nothing behind. Binds as the server will
    (every address the host resolves to, address reuse on) and lets go at once."""
    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        return f"cannot resolve host {host!r:.60}: {exc}"
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..server import Sidecar
    from ..store import StoreError
    from . import fail

    try:
        config, level = server_config(args)
        if level not in logging.getLevelNamesMapping():
            raise ConfigError(f"unknown log level {level!r:.40}")
    except ConfigError as exc:
        return fail("serve", str(exc))
    busy = port_free(config.host, config.port)
    if busy is not None:
        return fail("serve", busy)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
    try:
        sidecar = Sidecar(config)
    except (ValueError, StoreError, OSError) as exc:
        return fail("serve", str(exc))
    try:
        return asyncio.run(sidecar.run_forever(ready=announce))
    except OSError as exc:  # (the port was taken between the check and the bind)
        return fail("serve", f"cannot listen on {config.host}:{config.port}: {exc}")


def announce(sidecar: Sidecar) -> None:
    """Print the bound URL as the one machine-readable stdout line (``--port 0`` picks a port).

    The format is exactly ``CREDENCE_URL=ws://HOST:PORT`` (an IPv6 host in brackets), so a game
    that launches the sidecar reads stdout until a line starts with ``CREDENCE_URL=``.
    """
    print(f"{URL_PREFIX}{sidecar.url}", flush=True)
