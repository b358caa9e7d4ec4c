"""The sidecar's config file (TOML, read with :mod:`tomllib`) and the rules files.

One file holds everything ``credence serve`` needs; command-line flags override it::

    host = "0.0.0.0"
    port = 8765
    db = "credence.db"            # one SQLite file for every world, or:
    data_dir = "worlds"           # one SQLite file per world under this directory
    synchronous = "FULL"
    pipeline = false              # fold the next batch while the last commits (db only)
    log_level = "INFO"
    capture = "frames.capture"    # optional

    [tokens]
    writer = ["town=s3cret"]      # [WORLD=]SECRET, as --token
    reader = ["town=look"]

    [limits]
    max_frame = 262144
    outbox_limit = 1048576
    max_inflight = 1024
    hello_timeout = 10.0
    shutdown_timeout = 10.0
    readers = 2
    max_open_worlds = 64          # data_dir: world files open at once (per thread)

    [rules]                       # rules for worlds created by this process
    file = "rules.toml"           # a rules file, and/or numbers inline
    decay_period_days = 5

    [worlds.town]                 # per world: its own rules (and tokens)
    rules = "town-rules.toml"     # or an inline table [worlds.town.rules]
    writer_token = "s3cret"
    reader_token = "look"

Every problem is a :class:`ConfigError` with one line naming the file and the key.
A rules file is a table of rule names and numbers (``Rules``' fields); see
:func:`sidecar.engine.rules_from_mapping`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import Rules, RulesError, rules_from_mapping

__all__ = ["ConfigError", "FileConfig", "load_config", "load_rules"]

_TOP = {"host", "port", "db", "data_dir", "synchronous", "log_level", "capture", "tokens",
        "limits", "rules", "worlds", "metrics", "pipeline"}  # fmt: skip
_LIMITS: dict[str, type] = {
    "max_frame": int,
    "outbox_limit": int,
    "max_inflight": int,
    "hello_timeout": float,
    "shutdown_timeout": float,
    "readers": int,
    "max_open_worlds": int,
}
_WORLD_KEYS = {"rules", "writer_token", "reader_token"}


class ConfigError(ValueError):
    """A config or rules file that cannot be used; the message is one line."""


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
    metrics: bool | None = None
    pipeline: bool | None = None
    writer_tokens: list[str] = field(default_factory=list)
    reader_tokens: list[str] = field(default_factory=list)
    limits: dict[str, int | float] = field(default_factory=dict)
    rules: Rules | None = None
    world_rules: dict[str, Rules] = field(default_factory=dict)


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {path}: not valid TOML: {exc}") from None


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
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP))})")
    out = FileConfig()
    if "host" in data:
        out.host = _str(data["host"], "host", where)
    if "port" in data:
        port = data["port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ConfigError(f"{where}: port must be an integer from 0 to 65535")
        out.port = port
    for key in ("db", "data_dir", "capture"):
        if key in data:
            setattr(out, key, base / _str(data[key], key, where))
    if out.db is not None and out.data_dir is not None:
        raise ConfigError(f"{where}: set db (one file for every world) or data_dir, not both")
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
    if "pipeline" in data:
        if not isinstance(data["pipeline"], bool):
            raise ConfigError(f"{where}: pipeline must be true or false")
        out.pipeline = data["pipeline"]
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise ConfigError(f"{where}: [tokens] must be a table with writer and reader")
    for key in tokens:
        if key not in ("writer", "reader"):
            raise ConfigError(f"{where}: unknown key tokens.{key} (known: writer, reader)")
    out.writer_tokens = _tokens(tokens.get("writer", []), "tokens.writer", where)
    out.reader_tokens = _tokens(tokens.get("reader", []), "tokens.reader", where)
    limits = data.get("limits", {})
    if not isinstance(limits, dict):
        raise ConfigError(f"{where}: [limits] must be a table")
    for key, value in limits.items():
        kind = _LIMITS.get(key)
        if kind is None:
            raise ConfigError(
                f"{where}: unknown limit {key!r} (known: {', '.join(sorted(_LIMITS))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"{where}: limits.{key} must be a positive number")
        if kind is int and not isinstance(value, int):
            raise ConfigError(f"{where}: limits.{key} must be a whole number")
        out.limits[key] = kind(value)
    if "rules" in data:
        out.rules = _rules_section(data["rules"], "rules", base, where)
    worlds = data.get("worlds", {})
    if not isinstance(worlds, dict):
        raise ConfigError(f"{where}: [worlds] must be a table of worlds")
    for world, section in worlds.items():
        if not isinstance(section, dict):
            raise ConfigError(f"{where}: worlds.{world} must be a table")
        for key in section:
            if key not in _WORLD_KEYS:
                raise ConfigError(
                    f"{where}: unknown key worlds.{world}.{key} "
                    f"(known: {', '.join(sorted(_WORLD_KEYS))})"
                )
        if "rules" in section:
            out.world_rules[world] = _rules_section(
                section["rules"], f"worlds.{world}.rules", base, where
            )
        for key, dest in (("writer_token", out.writer_tokens), ("reader_token", out.reader_tokens)):
            if key in section:
                for secret in _tokens(section[key], f"worlds.{world}.{key}", where):
                    dest.append(f"{world}={secret}")
    return out
