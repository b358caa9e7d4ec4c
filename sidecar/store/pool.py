"""Bounded pools of open world files, and which worlds cannot be opened.

A data directory may hold 10,000 worlds; each open world costs file handles (a SQLite
connection holds the database, its WAL and its shared-memory file) and memory (page cache,
prepared statements, the writer's belief cache). So open worlds are kept in a
least-recently-used pool of at most ``limit`` entries: opening one more closes the one used
longest ago. An entry in use is *pinned* (:meth:`HandlePool.pinned`) and is never closed
under its user; if every entry is pinned the pool goes over its limit rather than close one.

A pool is not thread-safe: each belongs to one thread (the writer's, or one reader thread's),
so an entry is only ever closed by the thread that uses it, between two uses.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["Availability", "HandlePool", "open_failure"]

K = TypeVar("K")
V = TypeVar("V")


class HandlePool(Generic[K, V]):
    """At most ``limit`` open values, least recently used closed first (unless pinned)."""

    def __init__(
        self, limit: int, open_: Callable[[K], V], close: Callable[[V], None],
        evict: Callable[[V], None] | None = None,
    ) -> None:  # fmt: skip
        """``evict``: how an entry closed to make room is closed (``close`` by default;
        e.g. handed to another thread); :meth:`discard` always closes at once."""
        if limit < 1:
            raise ValueError("a pool holds at least one entry")
        self.limit = limit
        self._open = open_
        self._close = close
        self._evict = evict or close
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._pins: dict[K, int] = {}
        #: Entries closed to make room (for the figures and the tests).
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def peek(self, key: K) -> V | None:
        """The open value of ``key``, if it is open (without counting it as a use)."""
        return self._entries.get(key)

    def get(self, key: K) -> V:
        """The open value of ``key``: the pooled one, or newly opened (room made first)."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
            return value
        self.shrink(self.limit - 1)
        value = self._open(key)
        self._entries[key] = value
        return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value``, opened elsewhere, as ``key``'s open value (room made first, as
        :meth:`get` makes it; one already open for ``key`` is closed)."""
        self.discard(key)
        self.shrink(self.limit - 1)
        self._entries[key] = value

    def shrink(self, size: int) -> None:
        """Close least recently used entries, not pinned, until at most ``size`` are open."""
        while len(self._entries) > max(size, 0):
            victim = next((k for k in self._entries if not self._pins.get(k)), None)
            if victim is None:
                return  # everything open is in use: over the limit until a pin is released
            self._evict(self._entries.pop(victim))
            self.evictions += 1

    def discard(self, key: K) -> None:
        """Close ``key``'s value now, if it is open."""
        value = self._entries.pop(key, None)
        if value is not None:
            self._close(value)

    def clear(self) -> None:
        while self._entries:
            self.discard(next(iter(self._entries)))

    @contextlib.contextmanager
    def pinned(self, key: K) -> Iterator[V]:
        """``key``'s value, kept open until the block ends (other gets cannot close it)."""
        self._pins[key] = self._pins.get(key, 0) + 1
        try:
            yield self.get(key)
        finally:
            left = self._pins[key] - 1
            if left:
                self._pins[key] = left
            else:
                del self._pins[key]


class Availability:
    """Worlds whose file could not be opened, with why (thread-safe: writer and readers report).

    A world leaves the set when its file opens again, or when it is deleted; while it is not
    empty the health check says ``degraded``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: dict[str, str] = {}

    def failed(self, world: str, reason: str) -> None:
        with self._lock:
            self._failed[world] = reason

    def opened(self, world: str) -> None:
        if world in self._failed:  # (a dict lookup is atomic; the common case takes no lock)
            with self._lock:
                self._failed.pop(world, None)

    def reason(self, world: str) -> str | None:
        with self._lock:
            return self._failed.get(world)

    def __len__(self) -> int:
        with self._lock:
            return len(self._failed)


def open_failure(exc: BaseException) -> str:
    """An open failure in a few words (``too many open files`` rather than SQLite's
    ``unable to open database file``, when that is the cause)."""
    if isinstance(exc, OSError) and exc.errno == errno.EMFILE:
        return "too many open files"
    text = str(exc)
    try:
        probe = os.open(os.devnull, os.O_RDONLY)
    except OSError as probe_exc:
        if probe_exc.errno == errno.EMFILE:
            return f"too many open files ({text})"
    else:
        os.close(probe)
    return text
