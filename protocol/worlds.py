"""World lifecycle frames: ``worlds`` (list), ``fork`` and ``delete``.

Kept apart from :mod:`protocol.frames` so the save-game frames read as one unit::

    worlds {rid?, after?, limit?}         -> worlds {worlds: [{world, day, events, changes,
                                                               residents, beliefs}], next}
    fork   {rid?, into, at?}  (writer)    -> forked {world: into, source, at, day, events, ...}
    delete {rid?, world}      (writer)    -> deleted {world, events, changes, ...}

``fork`` copies the connection's world: the new world's log is the prefix of events with
``seq <= at`` (all of them without ``at``), its beliefs rebuilt from it. ``delete`` deletes
the world it names (the explicit name is the confirmation), if the token may write it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .codec import integral
from .errors import ErrorCode, ProtocolError

__all__ = [
    "MAX_WORLDS_PAGE",
    "WORLD_FRAMES",
    "DeleteWorld",
    "ForkWorld",
    "WorldsQuery",
    "parse_world_frame",
]

WORLD_FRAMES = frozenset({"worlds", "fork", "delete"})
_MAX_ID = 200
#: The most worlds one ``worlds`` page holds (``limit``): ``frames.MAX_PAGE``, as every paged
#: query (kept here: ``frames`` imports this module).
MAX_WORLDS_PAGE = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldsQuery:
    """A page of the worlds after ``after`` (by id), at most ``limit``; without ``limit``
    every world (a sidecar may hold 10,000: a client that lists them pages)."""

    after: str | None = None
    limit: int | None = None
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkWorld:
    into: str
    at: int | None = None
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteWorld:
    world: str
    rid: object = None


def _world(frame: dict[str, Any], key: str, rid: object) -> str:
    value = frame.get(key)
    if not isinstance(value, str) or not value or len(value) > _MAX_ID:
        raise ProtocolError(
            ErrorCode.INVALID_FRAME,
            f"field '{key}' must be a world id: a non-empty string of at most {_MAX_ID} characters",
            rid=rid,
        )
    return value


def parse_world_frame(frame: dict[str, Any], rid: object) -> WorldsQuery | ForkWorld | DeleteWorld:
    """Validate a ``worlds``, ``fork`` or ``delete`` frame (``type`` already checked)."""
    kind = frame["type"]
    if kind == "worlds":
        after = None if frame.get("after") is None else _world(frame, "after", rid)
        raw = frame.get("limit")
        limit = None if raw is None else integral(raw)
        if raw is not None and (limit is None or not 1 <= limit <= MAX_WORLDS_PAGE):
            raise ProtocolError(
                ErrorCode.INVALID_FRAME,
                f"field 'limit' must be an integer between 1 and {MAX_WORLDS_PAGE}",
                rid=rid,
            )
        return WorldsQuery(after=after, limit=limit, rid=rid)
    if kind == "fork":
        raw = frame.get("at")
        at = None if raw is None else integral(raw)  # 5.0 (Godot's JSON) is 5, SPEC §3
        if raw is not None and (at is None or at < 0):
            why = " (not a whole number)" if isinstance(raw, float) and at is None else ""
            raise ProtocolError(
                ErrorCode.INVALID_FRAME,
                f"field 'at' must be a non-negative event seq{why}",
                rid=rid,
            )
        return ForkWorld(into=_world(frame, "into", rid), at=at, rid=rid)
    return DeleteWorld(world=_world(frame, "world", rid), rid=rid)
