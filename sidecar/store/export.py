"""A world as one portable file: export, the file's checks, import.

An export file is JSON lines: a header ``{"format": "credence-world", "version": 1, "world",
"rules", "events"}``, one canonical event per line (the world log, in order), and a last line
``{"sha256": ...}``, the SHA-256 of every byte before that line. An export reads the log a
page at a time (:class:`~sidecar.store.worlds.StoredLog`) and writes it to a ``.part`` file
renamed into place. An import checks the whole file first (:func:`read_export`: line sizes,
format, checksum, count, the header's world id and rules, every event, no id twice, holding
one line and a bounded number of ids, :class:`~sidecar.store.seen.SeenIds`), then replays it
into a new world as a save (whole or not at all, :mod:`.worlds`), reading the file again as
it goes (:class:`ExportEvents`: a file changed in between fails the import whole).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import orjson

from ..engine import (
    EngineError,
    Rules,
    RulesError,
    WorldEvent,
    parse_event,
    rules_from_stored,
    rules_to_stored,
)
from .seen import SeenIds
from .worlds import DataDir, Log, SingleFile, WorldInfo, WorldsError, check_world_id

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MAX_EXPORT_LINE",
    "ExportEvents",
    "export_lines",
    "export_world",
    "import_world",
    "read_export",
]

EXPORT_FORMAT = "credence-world"
EXPORT_VERSION = 1


def export_lines(world: str, rules: Rules, events: Log) -> Iterator[bytes]:
    """The export file's lines (each ending in a newline), the checksum line last."""
    digest = hashlib.sha256()
    header = {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "world": world,
        "rules": rules_to_stored(rules), "events": len(events),
    }  # fmt: skip
    items = itertools.chain([header], (e.to_dict() for e in events))  # (one at a time)
    for item in items:
        line = orjson.dumps(item, option=orjson.OPT_SORT_KEYS) + b"\n"
        digest.update(line)
        yield line
    yield orjson.dumps({"sha256": digest.hexdigest()}) + b"\n"


def export_world(store: SingleFile | DataDir, world: str, out: Path) -> int:
    """Write ``world`` to ``out`` as one portable file; return the number of events."""
    one = store._existing(world) if isinstance(store, DataDir) else store
    events = one.log(world)
    tmp = out.with_name(out.name + ".part")
    try:
        with tmp.open("wb") as fh:
            for line in export_lines(world, one.rules(world), events):
                fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(out)
    except BaseException:  # (a full disk, or the world deleted while its log was read)
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    return len(events)


#: Longest record of an export file (its header, or one event: a frame is at most 64 MiB and
#: a sidecar's default 256 KiB; its canonical JSON a few times that at most).
MAX_EXPORT_LINE = 4 * 1024 * 1024


def _export_file_lines(path: Path) -> Iterator[bytes]:
    """The file's lines (newline kept), read one at a time, each at most
    :data:`MAX_EXPORT_LINE` bytes."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise WorldsError(f"{path}: {exc.strerror or exc}") from None
    with fh:
        number = 0
        while line := fh.readline(MAX_EXPORT_LINE + 1):
            number += 1
            if len(line) > MAX_EXPORT_LINE:
                raise WorldsError(
                    f"{path}: line {number} is longer than {MAX_EXPORT_LINE} bytes: "
                    "not a Credence world export, or a damaged one"
                )
            yield line


class _ExportBody:
    """An export file read in one pass, one line at a time: its header line, then (when
    iterated) the event lines, each added with the header to :attr:`digest`, and its last
    line, the checksum, in :attr:`footer` once they are read. What the check and the replay
    of an import both read, the same way."""

    def __init__(self, path: Path) -> None:
        self._lines = _export_file_lines(path)
        self.header = next(self._lines, None)
        self._ahead = next(self._lines, None)
        #: Whether the file has fewer than two lines (no header and checksum line).
        self.short = self.header is None or self._ahead is None
        self.digest = hashlib.sha256(self.header or b"")
        self.footer: bytes | None = None

    def __iter__(self) -> Iterator[bytes]:
        ahead = self._ahead
        while ahead is not None:
            line, ahead = ahead, next(self._lines, None)
            if ahead is None:
                self.footer = line
                return
            self.digest.update(line)
            yield line


class ExportEvents:
    """The events of an export file :func:`read_export` checked, parsed again from the file
    each time they are iterated (an import replays them as it reads them: a world of
    millions of events is never held). Should the file change after the check, the
    iteration raises :class:`WorldsError` (at a line that no longer parses, or at the end,
    where the checksum no longer matches), so the import fails whole."""

    def __init__(self, path: Path, count: int, checksum: str) -> None:
        self.path, self.count, self.checksum = path, count, checksum

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[WorldEvent]:
        changed = f"{self.path}: the file changed while it was being imported"
        body = _ExportBody(self.path)
        n = 0
        for line in body:
            try:
                event = parse_event(orjson.loads(line))
            except (orjson.JSONDecodeError, EngineError):
                raise WorldsError(changed) from None
            n += 1
            yield event
        if n != self.count or body.digest.hexdigest() != self.checksum:
            raise WorldsError(changed)


def read_export(path: Path) -> tuple[str, Rules, ExportEvents]:
    """Check an export file (format, checksum, count, header, every event, no event id
    twice) in one pass that holds one line at a time and a bounded number of its ids
    (:class:`~sidecar.store.seen.SeenIds`), and return its world, rules and events (read
    again when replayed: :class:`ExportEvents`).

    Every problem is one :class:`WorldsError` line naming the file (and the line, for an
    event): nothing is imported from a file that fails any check.
    """
    body = _ExportBody(path)
    if body.short:
        raise WorldsError(f"{path}: not a Credence world export (too short)")
    try:
        header = orjson.loads(body.header or b"")
    except orjson.JSONDecodeError:
        raise WorldsError(f"{path}: not a Credence world export") from None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise WorldsError(f"{path}: not a Credence world export")
    # The first event line that does not parse, said after the checks of the whole file,
    # as they come first; a repeated id is told at a later line at times (SeenIds), so the
    # earliest of the two is said.
    problem: tuple[int, str] | None = None
    number = 1
    with SeenIds() as seen:
        for line in body:
            number += 1
            if problem is not None:
                continue
            try:
                seen.add(parse_event(orjson.loads(line)).event_id, number)
            except orjson.JSONDecodeError:
                problem = (number, f"{path}: line {number} is not JSON")
            except EngineError as exc:
                problem = (number, f"{path}: line {number}: {exc}")
        repeat = seen.first_repeat()
    if repeat is not None and (problem is None or repeat[0] < problem[0]):
        at, event_id, first = repeat
        problem = (at, f"{path}: line {at}: event id {event_id!r:.60} is already on line {first}")
    try:
        footer = orjson.loads(body.footer or b"")
    except orjson.JSONDecodeError:
        raise WorldsError(f"{path}: not a Credence world export") from None
    version = header.get("version")
    if isinstance(version, bool) or version != EXPORT_VERSION:
        raise WorldsError(f"{path}: export version {version!r:.40} is not supported")
    checksum = footer.get("sha256") if isinstance(footer, dict) else None
    if body.digest.hexdigest() != checksum:
        raise WorldsError(f"{path}: checksum does not match: the file is damaged or was edited")
    count = header.get("events")
    if isinstance(count, bool) or count != number - 1:
        raise WorldsError(f"{path}: header says {count!r:.40} events, file holds {number - 1}")
    world = check_world_id(header.get("world"), f"{path}: header world")
    if "rules" not in header:
        raise WorldsError(f"{path}: the header has no rules")
    try:
        rules = rules_from_stored(header["rules"], f"{path}: header rules")
    except RulesError as exc:
        raise WorldsError(str(exc)) from None
    if problem is not None:
        raise WorldsError(problem[1])
    return world, rules, ExportEvents(path, count, checksum)


def import_world(store: SingleFile | DataDir, path: Path, world: str | None = None) -> WorldInfo:
    """Replay an export file into a new world (its own id, or ``world``)."""
    if world is not None:
        check_world_id(world)
    original, rules, events = read_export(path)
    return store.import_events(world or original, rules, events)
