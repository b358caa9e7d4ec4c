"""Replies to the world lifecycle frames (``worlds``, ``fork``, ``delete``).

:func:`world_reply` answers each of them at once, on the writer's thread (between batches: a
delete removes rows or a file the writer owns). The vector generator's sidecar mirror calls
it for every frame, so the vectors show exactly what the server sends; the server calls it
for ``worlds``.

The server answers a ``fork`` with :func:`fork_reply` instead: the new world is replayed in
a worker process and switched in by the writer service between other worlds' batches
(:meth:`~sidecar.server.writer.WriterService.save`), so a long fork stalls no other world;
its reply comes once the new world is whole. It answers a ``delete`` with
:func:`delete_reply`: the writer service runs it like a save, answered once its first commit
has removed the world, its rows then removed in steps. The same checks and the same reply
frames as :func:`world_reply`'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from protocol import DeleteWorld, ErrorCode, ForkWorld, ProtocolError, WorldsQuery

from ..store import (
    Build,
    DataDir,
    SingleFile,
    StoreError,
    WorldInfo,
    WorldNotFound,
    WorldsError,
)
from .auth import Role
from .queries import paginate
from .writer import NotStored, busy_message

__all__ = ["delete_reply", "fork_reply", "world_reply"]

RoleFor = Callable[[str], Role | None]


def world_reply(
    store: SingleFile | DataDir,
    world: str,
    frame: WorldsQuery | ForkWorld | DeleteWorld,
    *,
    role: Role,
    role_for: RoleFor,
    saving: set[str] | frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """The reply frames for ``frame`` on a connection to ``world`` with ``role``.

    ``role_for(w)`` is the role this connection's token has in world ``w`` (``None``: none);
    ``saving``: the worlds a save is building (a delete of one is ``world_busy``).
    Raises :class:`ProtocolError` for a refusal.
    """
    rid = frame.rid
    if isinstance(frame, WorldsQuery):
        return worlds_reply(frame, store.worlds_page(frame.after, frame.limit), role_for)
    _check_writer(role, rid)
    if isinstance(frame, ForkWorld):
        _check_fork(world, frame, role_for, saving)
        info = _run(lambda: store.fork(world, frame.into, frame.at), rid)
        return [_forked(world, frame, info)]
    _check_delete(frame, role_for, saving)
    info = _run(lambda: store.delete(frame.world), rid)
    return [_deleted(frame, info)]


def worlds_reply(
    frame: WorldsQuery, page: tuple[list[WorldInfo], str | None], role_for: RoleFor
) -> list[dict[str, Any]]:
    """The ``worlds`` reply to ``frame``: the page's worlds this token may open (a page may
    so hold fewer than ``limit``) and ``next``, where the next page starts (SPEC §10.7)."""
    infos, after = page
    visible = [i.to_dict() for i in infos if role_for(i.world) is not None]
    head = {"type": "worlds", "rid": frame.rid, "next": after}
    return paginate(head, {"worlds": visible})  # (SPEC §11)


async def fork_reply(
    store: SingleFile | DataDir,
    world: str,
    frame: ForkWorld,
    *,
    role: Role,
    role_for: RoleFor,
    save: Callable[[str, Callable[[], Build]], Awaitable[WorldInfo]],
    saving: set[str],
    removing: set[str] | frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """The server's answer to ``fork``: the checks of :func:`world_reply`, then the new world
    built by ``save`` (the writer service): replayed in a worker process, switched in on the
    writer's thread (see :meth:`~sidecar.store.SingleFile.begin_fork`)."""
    rid = frame.rid
    _check_writer(role, rid)
    _check_fork(world, frame, role_for, saving, removing)
    try:
        info = await save(frame.into, lambda: store.begin_fork(world, frame.into, frame.at))
    except NotStored as exc:
        raise ProtocolError(exc.code, exc.message, rid=rid) from None
    except WorldNotFound as exc:
        raise ProtocolError(ErrorCode.NOT_FOUND, str(exc), rid=rid) from None
    except WorldsError as exc:
        raise ProtocolError(ErrorCode.INVALID_FRAME, str(exc), rid=rid) from None
    except (StoreError, BrokenProcessPool) as exc:  # (a full disk, a killed worker)
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR,
            f"the fork was not made, nothing of it is left: {exc}",
            rid=rid,
        ) from None
    return [_forked(world, frame, info)]


async def delete_reply(
    store: SingleFile | DataDir,
    frame: DeleteWorld,
    *,
    role: Role,
    role_for: RoleFor,
    save: Callable[[str, Callable[[], Build]], Awaitable[WorldInfo]],
    saving: set[str],
    removing: set[str],
) -> list[dict[str, Any]]:
    """The server's answer to ``delete``: the checks of :func:`world_reply`, then the delete
    run by ``save`` (the writer service) as a settled build: one commit removes the world
    (the reply), and its rows go in steps between other worlds' batches (in one file; a
    data directory's delete is one rename), its id busy until they are gone."""
    _check_writer(role, frame.rid)
    if frame.world in removing:  # (deleted already: only its rows are still going)
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no world {frame.world!r}", rid=frame.rid)
    _check_delete(frame, role_for, saving)
    try:
        info = await save(frame.world, lambda: store.begin_delete(frame.world))
    except NotStored as exc:
        raise ProtocolError(exc.code, exc.message, rid=frame.rid) from None
    except WorldNotFound as exc:
        raise ProtocolError(ErrorCode.NOT_FOUND, str(exc), rid=frame.rid) from None
    except WorldsError as exc:
        raise ProtocolError(ErrorCode.INVALID_FRAME, str(exc), rid=frame.rid) from None
    except StoreError as exc:  # (a full disk: the first commit did not happen)
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR, f"the world was not deleted: {exc}", rid=frame.rid
        ) from None
    return [_deleted(frame, info)]


def _check_delete(frame: DeleteWorld, role_for: RoleFor, saving: set[str] | frozenset[str]) -> None:
    if role_for(frame.world) is not Role.WRITER:
        raise ProtocolError(
            ErrorCode.FORBIDDEN, f"this token cannot write world {frame.world!r}", rid=frame.rid
        )
    if frame.world in saving:
        raise _busy(frame.world, frame.rid)


def _deleted(frame: DeleteWorld, info: WorldInfo) -> dict[str, Any]:
    return {"type": "deleted", "rid": frame.rid, **info.to_dict()}


def _check_writer(role: Role, rid: object) -> None:
    if role is not Role.WRITER:
        raise ProtocolError(ErrorCode.FORBIDDEN, "a read-only token cannot change worlds", rid=rid)


def _check_fork(
    world: str,
    frame: ForkWorld,
    role_for: RoleFor,
    saving: set[str] | frozenset[str],
    removing: set[str] | frozenset[str] = frozenset(),
) -> None:
    if role_for(frame.into) is not Role.WRITER:
        raise ProtocolError(
            ErrorCode.FORBIDDEN, f"this token cannot write world {frame.into!r}", rid=frame.rid
        )
    for busy in (world, frame.into):
        # A fork into a deleted world's id (a save slot overwritten) waits for its rows to go.
        if busy in saving and not (busy == frame.into and busy in removing):
            raise _busy(busy, frame.rid)


def _busy(world: str, rid: object) -> ProtocolError:
    return ProtocolError(ErrorCode.WORLD_BUSY, busy_message(world), rid=rid)


def _forked(world: str, frame: ForkWorld, info: WorldInfo) -> dict[str, Any]:
    return {"type": "forked", "rid": frame.rid, "source": world, "at": frame.at, **info.to_dict()}


def _run(fn: Callable[[], WorldInfo], rid: object) -> WorldInfo:
    try:
        return fn()
    except WorldNotFound as exc:
        raise ProtocolError(ErrorCode.NOT_FOUND, str(exc), rid=rid) from None
    except WorldsError as exc:
        raise ProtocolError(ErrorCode.INVALID_FRAME, str(exc), rid=rid) from None
