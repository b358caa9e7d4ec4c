"""Replies to the world lifecycle frames (``worlds``, ``fork``, ``delete``).

:func:`world_reply` runs on the writer's thread (between batches: a fork replays through the
writer, a delete removes rows or a file the writer owns). The server and the vector
generator's sidecar mirror both call it, so the vectors show exactly what the server sends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol import DeleteWorld, ErrorCode, ForkWorld, ProtocolError, WorldsQuery

from ..store import DataDir, SingleFile, WorldInfo, WorldNotFound, WorldsError
from .auth import Role
from .queries import paginate

__all__ = ["world_reply"]


def world_reply(
    store: SingleFile | DataDir,
    world: str,
    frame: WorldsQuery | ForkWorld | DeleteWorld,
    *,
    role: Role,
    role_for: Callable[[str], Role | None],
) -> list[dict[str, Any]]:
    """The reply frames for ``frame`` on a connection to ``world`` with ``role``.

    ``role_for(w)`` is the role this connection's token has in world ``w`` (``None``: none).
    Raises :class:`ProtocolError` for a refusal.
    """
    rid = frame.rid
    if isinstance(frame, WorldsQuery):
        visible = [i.to_dict() for i in store.worlds() if role_for(i.world) is not None]
        return paginate({"type": "worlds", "rid": rid}, {"worlds": visible})  # (SPEC §11)
    if role is not Role.WRITER:
        raise ProtocolError(ErrorCode.FORBIDDEN, "a read-only token cannot change worlds", rid=rid)
    if isinstance(frame, ForkWorld):
        if role_for(frame.into) is not Role.WRITER:
            raise ProtocolError(
                ErrorCode.FORBIDDEN, f"this token cannot write world {frame.into!r}", rid=rid
            )
        info = _run(lambda: store.fork(world, frame.into, frame.at), rid)
        return [{"type": "forked", "rid": rid, "source": world, "at": frame.at, **info.to_dict()}]
    if role_for(frame.world) is not Role.WRITER:
        raise ProtocolError(
            ErrorCode.FORBIDDEN, f"this token cannot write world {frame.world!r}", rid=rid
        )
    info = _run(lambda: store.delete(frame.world), rid)
    return [{"type": "deleted", "rid": rid, **info.to_dict()}]


def _run(fn: Callable[[], WorldInfo], rid: object) -> WorldInfo:
    try:
        return fn()
    except WorldNotFound as exc:
        raise ProtocolError(ErrorCode.NOT_FOUND, str(exc), rid=rid) from None
    except WorldsError as exc:
        raise ProtocolError(ErrorCode.INVALID_FRAME, str(exc), rid=rid) from None
