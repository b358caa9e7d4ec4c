"""The sidecar's config file (TOML, read with :mod:`tomllib`) and the rules files.

One file holds everything ``credence serve`` needs; command-line flags override it::

    host = "0.0.0.0"
    port = 8765
    db = "credence.db"            # one SQLite file for every world, or:
    data_dir = "worlds"           # one SQLite file per world under this directory
    synchronous = "FULL"
    log_level = "INFO"
    capture = "frames.capture"    # optional
    capture_max_bytes = 268435456 # rotate the capture to frames.capture.1 at this size

    [tokens]
    writer = ["town=s3cret"]      # [WORLD=]SECRET, as --token
    reader = ["town=look"]

    [limits]
    max_frame = 262144
    outbox_limit = 1048576
    max_inflight = 1024
    hello_timeout = 10.0
    shutdown_timeout = 10.0
    backlog_stall = 30.0          # seconds a peer may leave a resume's backlog unread
    readers = 2
    max_open_worlds = 64          # data_dir: world files open at once (per thread)
    max_connections = 500         # default: what the file-handle limit leaves (at most 10,000)

    [rules]                       # rules for worlds created by this process
    file = "rules.toml"           # a rules file, and/or numbers inline
    decay_period_days = 5

    [worlds.town]                 # per world: its own rules (and tokens)
    rules = "town-rules.toml"     # or an inline table [worlds.town.rules]
    writer_token = "s3cret"
    reader_token = "look"

Every problem is a :class:`ConfigError` with one line naming the file and the key. Every
number goes through one check (:data:`SETTINGS`, and each rule's own :class:`Bound`), the
same for a config key and the ``credence serve`` flag that sets it.
A rules file is a table of rule names and numbers (``Rules``' fields); see
:func:`sidecar.engine.rules_from_mapping`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import Bound, Rules, RulesError, rules_from_mapping
from .engine.events import MAX_ID_LEN

__all__ = ["SETTINGS", "ConfigError", "FileConfig", "load_config", "load_rules", "setting"]

_TOP = {"host", "port", "db", "data_dir", "synchronous", "log_level", "capture",
        "capture_max_bytes", "tokens", "limits", "rules", "worlds", "metrics"}  # fmt: skip
#: Every number of the server's settings, its type and range: a config key and the flag that
#: sets the same number (``port`` / ``--port``, ``limits.max_frame`` / ``--max-frame``) both
#: go through :func:`setting`. A frame must hold at least a ``hello``; a timeout of NaN or 0
#: would close every connection before its hello.
SETTINGS: dict[str, Bound] = {
    "port": Bound(int, 0, 65535),
    "max_frame": Bound(int, 1024, 64 * 2**20),
    "outbox_limit": Bound(int, 64 * 1024, 2**30),
    "max_inflight": Bound(int, 1, 1_000_000),
    "hello_timeout": Bound(float, 0.1, 3600),
    "shutdown_timeout": Bound(float, 0.1, 3600),
    # how long a peer may leave a resume's (or an overflow's) backlog unread before it is
    # closed 4008 slow_consumer (sidecar/server/connection.py)
    "backlog_stall": Bound(float, 0.1, 3600),
    "readers": Bound(int, 1, 64),
    "max_open_worlds": Bound(int, 1, 100_000),
    "max_connections": Bound(int, 1, 1_000_000),
    # a capture file's size before it is rotated to FILE.1 (sidecar/server/capture.py)
    "capture_max_bytes": Bound(int, 1024, 2**40),
}
_LIMITS = ("max_frame", "outbox_limit", "max_inflight", "hello_timeout", "shutdown_timeout",
           "backlog_stall", "readers", "max_open_worlds", "max_connections")  # fmt: skip
#: Deepest nesting of tables and arrays a config or rules file may have (tomllib itself
#: recurses: a 5,000-deep table would be a RecursionError).
MAX_DEPTH = 32
_WORLD_KEYS = {"rules", "writer_token", "reader_token"}


class ConfigError(ValueError):
    """A config or rules file that cannot be used; the message is one line."""


def setting(name: str, value: object, where: str, *, text: bool = False) -> int | float:
    """One server setting checked against :data:`SETTINGS`: a TOML value, or (``text``) a
    flag's text. ``where`` names the source (``c.toml: limits.max_frame``, ``--max-frame``).
    """
    bound = SETTINGS[name]
    try:
        return bound.parse(str(value)) if text else bound.check(value)
    except ValueError as exc:
        raise ConfigError(f"{where} {exc}") from None


@dataclass(slots=True)
class FileConfig:
    """What a config file says. ``None`` (or empty) means "not set here"."""

    host: str | None = None
    port: int | None = None
    db: Path | None = None
    data_dir: Path | None = None
    synchronous: str | None = None
    log_level: str | None = None
    capture: Path | None = None
    capture_max_bytes: int | None = None
    metrics: bool | None = None
    writer_tokens: list[str] = field(default_factory=list)
    reader_tokens: list[str] = field(default_factory=list)
    limits: dict[str, int | float] = field(default_factory=dict)
    rules: Rules | None = None
    world_rules: dict[str, Rules] = field(default_factory=dict)


#: Largest config or rules file read (a config is a screen or two of text).
MAX_FILE = 1024 * 1024


def _depth(data: object) -> int:
    """How deeply tables and arrays nest in ``data`` (walked without recursion: a file of
    ``[a.a.a…]`` headers parses into a dict as deep as it likes)."""
    deepest, stack = 0, [(data, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:
            if isinstance(item, dict):
                stack.extend((v, depth + 1) for v in item.values())
            elif isinstance(item, list):
                stack.extend((v, depth + 1) for v in item)
    return deepest


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE:
        raise ConfigError(f"{what} {path}: larger than {MAX_FILE} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {path}: not valid TOML: not UTF-8 text") from None
    deep = f"{what} {path}: tables or arrays nested deeper than {MAX_DEPTH}"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = " ".join(str(exc).split())
        raise ConfigError(f"{what} {path}: not valid TOML: {message}") from None
    except RecursionError:  # (tomllib recurses into inline tables and arrays)
        raise ConfigError(deep) from None
    if _depth(data) > MAX_DEPTH:
        raise ConfigError(deep)
    return data


def load_rules(
    path: Path | None = None, inline: Mapping[str, Any] | None = None, *, where: str = ""
) -> Rules:
    """Rules from a rules file, overridden by ``inline`` numbers; defaults for the rest."""
    data: dict[str, Any] = {}
    if path is not None:
        data.update(_read_toml(path, "rules file"))
        where = where or str(path)
    if inline:
        data.update(inline)
    try:
        return rules_from_mapping(data, where or "rules")
    except RulesError as exc:
        raise ConfigError(str(exc)) from None


def _key(key: str) -> str:
    """A TOML key as a message names it: bare if it is a plain name, else quoted and cut (a
    quoted key may hold a newline or 5,000 characters; the message stays one short line)."""
    if key and len(key) <= 60 and all(c.isalnum() or c in "-_" for c in key):
        return key
    return repr(key) if len(key) <= 60 else repr(key[:57]) + "..."


def _str(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _tokens(value: Any, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key} must be a token or a list of tokens")
    return list(value)


def _rules_section(value: Any, key: str, base: Path, where: str) -> Rules:
    """``rules = "file.toml"`` or a table ``{file = "...", <rule> = <number>, ...}``."""
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key} must be a rules file name or a table of rules")
    inline = dict(value)
    file = inline.pop("file", None)
    if file is not None and not isinstance(file, str):
        raise ConfigError(f"{where}: {key}.file must be a file name")
    try:
        return load_rules(base / file if file else None, inline, where=f"{where}: {key}")
    except ConfigError as exc:
        if str(exc).startswith(where):
            raise
        raise ConfigError(f"{where}: {key}: {exc}") from None


def load_config(path: Path) -> FileConfig:
    """Read and check a config file. Relative paths in it are relative to the file."""
    data = _read_toml(path, "config file")
    where = str(path)
    base = path.parent
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r:.60} (known: {', '.join(sorted(_TOP))})"
        )
    out = FileConfig()
    if "host" in data:
        out.host = _str(data["host"], "host", where)
    if "port" in data:
        out.port = int(setting("port", data["port"], f"{where}: port"))
    for key in ("db", "data_dir", "capture"):
        if key in data:
            setattr(out, key, base / _str(data[key], key, where))
    if out.db is not None and out.data_dir is not None:
        raise ConfigError(f"{where}: set db (one file for every world) or data_dir, not both")
    if "capture_max_bytes" in data:
        out.capture_max_bytes = int(
            setting("capture_max_bytes", data["capture_max_bytes"], f"{where}: capture_max_bytes")
        )
    if "synchronous" in data:
        sync = _str(data["synchronous"], "synchronous", where).upper()
        if sync not in ("FULL", "NORMAL"):
            raise ConfigError(f"{where}: synchronous must be FULL or NORMAL")
        out.synchronous = sync
    if "log_level" in data:
        out.log_level = _str(data["log_level"], "log_level", where).upper()
    if "metrics" in data:
        if not isinstance(data["metrics"], bool):
            raise ConfigError(f"{where}: metrics must be true or false")
        out.metrics = data["metrics"]
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise ConfigError(f"{where}: [tokens] must be a table with writer and reader")
    for key in tokens:
        if key not in ("writer", "reader"):
            raise ConfigError(f"{where}: unknown key tokens.{_key(key)} (known: writer, reader)")
    out.writer_tokens = _tokens(tokens.get("writer", []), "tokens.writer", where)
    out.reader_tokens = _tokens(tokens.get("reader", []), "tokens.reader", where)
    limits = data.get("limits", {})
    if not isinstance(limits, dict):
        raise ConfigError(f"{where}: [limits] must be a table")
    for key, value in limits.items():
        if key not in _LIMITS:
            raise ConfigError(
                f"{where}: unknown limit {key!r:.60} (known: {', '.join(sorted(_LIMITS))})"
            )
        out.limits[key] = setting(key, value, f"{where}: limits.{key}")
    if "rules" in data:
        out.rules = _rules_section(data["rules"], "rules", base, where)
    worlds = data.get("worlds", {})
    if not isinstance(worlds, dict):
        raise ConfigError(f"{where}: [worlds] must be a table of worlds")
    for world, section in worlds.items():
        if not 0 < len(world) <= MAX_ID_LEN:
            raise ConfigError(
                f"{where}: worlds.{_key(world)}: a world id is 1 to {MAX_ID_LEN} characters "
                "(what hello accepts)"
            )
        world_key = _key(world)
        if not isinstance(section, dict):
            raise ConfigError(f"{where}: worlds.{world_key} must be a table")
        for key in section:
            if key not in _WORLD_KEYS:
                raise ConfigError(
                    f"{where}: unknown key worlds.{world_key}.{_key(key)} "
                    f"(known: {', '.join(sorted(_WORLD_KEYS))})"
                )
        if "rules" in section:
            out.world_rules[world] = _rules_section(
                section["rules"], f"worlds.{world_key}.rules", base, where
            )
        for key, dest in (("writer_token", out.writer_tokens), ("reader_token", out.reader_tokens)):
            if key in section:
                for secret in _tokens(section[key], f"worlds.{world_key}.{key}", where):
                    dest.append(f"{world}={secret}")
    return out
