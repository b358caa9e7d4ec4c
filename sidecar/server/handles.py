"""The process's file handles: world files first, connections with what is left.

Every open world file and every connection holds file handles, and the process may hold only
so many (``RLIMIT_NOFILE``, ``ulimit -n``; often 1,024 by default). Past that, ``accept``
fails and so does opening a world's file, for whichever comes next: a town of clients could
leave a world that opens later no handle at all. So the budget is fixed at start:

* the soft limit is raised to the hard one (what a process may do for itself), or as near
  as the system allows (macOS: 10,240 of an "unlimited" hard limit), so a system that allows
  more gets it without a ``ulimit`` line;
* the world files' share comes first: :data:`PER_WORLD` handles for each world a pool may
  keep open (the writer's and each reader thread's; one pool of one file with ``--db``), and
  :data:`RESERVE` for everything else (the listening socket, logs, the capture, the lock,
  a save's temporary file and worker);
* connections get the rest, at most :data:`DEFAULT_MAX_CONNECTIONS` unless configured
  (``max_connections``): a WebSocket upgrade beyond it is answered ``503`` before its
  handshake (SPEC §2), while the connections already open, and every world's file, keep
  their handles.

A ``max_connections`` the limit cannot hold, or a limit that leaves no connection at all,
is refused at start with one line saying which numbers to change.
"""

from __future__ import annotations

from dataclasses import dataclass

try:
    import resource
except ImportError:  # (not POSIX: no limit to read or raise; the budget is the default)
    resource = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MAX_CONNECTIONS", "PER_WORLD", "RESERVE", "Budget", "budget"]

#: Handles of one open world file in one pool: the database, its WAL and its shared memory.
PER_WORLD = 3
#: Handles for everything but world files and connections.
RESERVE = 64
#: Connections at most when the handle limit allows more and none is configured: each may
#: hold up to its outbox bound (1 MiB by default) of replies and notifications.
DEFAULT_MAX_CONNECTIONS = 10_000
#: How far the soft limit is raised when the hard one is unlimited.
_UNLIMITED = 1 << 20


@dataclass(frozen=True, slots=True)
class Budget:
    """The handle limit (after raising it), the world files' share, and the connections."""

    limit: int
    worlds: int
    max_connections: int


#: What the soft limit is raised to when the hard one cannot be reached: macOS says its hard
#: limit is unlimited but refuses more than ``kern.maxfilesperproc`` (10,240 by default), and
#: its soft limit is 256, too few for the default world files of ``--data-dir``.
_FALLBACKS = (65_536, 10_240, 4_096, 1_024)


def raise_limit() -> int | None:
    """Raise the soft handle limit to the hard one (or as near as the system allows); the
    soft limit now (None: no limit known on this system)."""
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _UNLIMITED
    top = _UNLIMITED if hard == resource.RLIM_INFINITY else hard
    for target in (top, *(f for f in _FALLBACKS if f < top)):
        if target <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue
        return target
    return soft


def budget(
    *, pools: int, per_pool: int, configured: int | None, limit: int | None = None
) -> Budget:
    """The budget for ``pools`` pools of at most ``per_pool`` open world files each, with the
    process's handle ``limit`` (default: :func:`raise_limit`). Raises :class:`ValueError`
    with one line when ``configured`` connections do not fit, or none does."""
    if limit is None:
        limit = raise_limit()
    worlds = PER_WORLD * pools * per_pool
    if limit is None:
        return Budget(0, worlds, configured or DEFAULT_MAX_CONNECTIONS)
    room = limit - worlds - RESERVE
    shares = (
        f"{worlds} for world files ({PER_WORLD} × {per_pool} open at once × {pools} "
        f"pools: the writer and each reader thread) and {RESERVE} for the rest"
    )
    if room < 1:
        raise ValueError(
            f"the file-handle limit ({limit}, ulimit -n) leaves no room for a connection beside "
            f"{shares}: raise the limit, or lower max_open_worlds or readers"
        )
    if configured is not None and configured > room:
        raise ValueError(
            f"max_connections {configured} does not fit the file-handle limit ({limit}, "
            f"ulimit -n) beside {shares}: at most {room}; raise the limit or lower it"
        )
    return Budget(limit, worlds, configured or min(room, DEFAULT_MAX_CONNECTIONS))
