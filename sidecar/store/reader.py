"""Read-only queries, on a connection of their own: WAL lets them read while the writer
writes. Raw ``sqlite3`` errors become :class:`~sidecar.store.errors.StoreError`."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from sqlite_utils import Database

from ..engine import (
    DEFAULT_RULES,
    Belief,
    Change,
    RootSchema,
    Rules,
    WorldEvent,
    parse_event,
    parse_schema,
    trust_root,
)
from .connection import _open
from .errors import CannotOpen, SchemaTooNew, StoreError
from .promises import PromiseQueries
from .rows import (
    CHANGE_SUMMARY_COLUMNS,
    belief_from_row,
    change_from_row,
    change_summary_from_row,
    dump_json,
    load_json,
    stored_rules,
)
from .schema import unknown_migrations

__all__ = ["BeliefFilter", "Reader"]

_SUMMARY_COLUMNS = ", ".join(f"c.{c}" for c in CHANGE_SUMMARY_COLUMNS)


@dataclass(frozen=True, slots=True, kw_only=True)
class BeliefFilter:
    """What a ``beliefs`` query may narrow to; every field given must match (AND).

    ``root`` is one exact root; ``prefixes`` match the start of the root (any of them);
    ``states`` any of these states; ``people`` any of these ids in the belief's ``people``,
    or as the actor of an ``action:<id>:`` root or the other of a ``relation:<id>:`` root;
    ``places`` any of these in its ``places``; ``min_confidence`` at least this confidence.
    """

    root: str | None = None
    prefixes: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    min_confidence: int | None = None

    def sql(self) -> tuple[str, list[Any]]:
        """The ``AND ...`` clauses (on table ``beliefs``) and their parameters."""
        parts: list[str] = []
        params: list[Any] = []
        if self.root is not None:
            parts.append("root = ?")
            params.append(self.root)
        if self.prefixes:
            parts.append(
                "(" + " OR ".join("substr(root, 1, length(?)) = ?" for _ in self.prefixes) + ")"
            )
            params.extend(x for p in self.prefixes for x in (p, p))
        if self.states:
            parts.append(f"state IN ({', '.join('?' * len(self.states))})")
            params.extend(self.states)
        if self.people:
            marks = ", ".join("?" * len(self.people))
            roots = [f"{kind}:{p}:" for p in self.people for kind in ("action", "relation")]
            parts.append(
                f"(EXISTS (SELECT 1 FROM json_each(beliefs.people) WHERE value IN ({marks}))"
                + "".join(" OR substr(root, 1, length(?)) = ?" for _ in roots)
                + ")"
            )
            params.extend(self.people)
            params.extend(x for r in roots for x in (r, r))
        if self.places:
            marks = ", ".join("?" * len(self.places))
            parts.append(
                f"EXISTS (SELECT 1 FROM json_each(beliefs.places) WHERE value IN ({marks}))"
            )
            params.extend(self.places)
        if self.min_confidence is not None:
            parts.append("confidence >= ?")
            params.append(self.min_confidence)
        return "".join(f" AND {p}" for p in parts), params


def _trust_root_sql(source: str, topic: str | None) -> str:
    return trust_root(source, topic or None)


def add_trust_root_function(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the SQL function ``trust_root(source, topic)``: :func:`~sidecar.engine.
    trust_root` (topic ``''``: general trust, as the ``trust`` table stores it), so a query
    joining the trust table to a root uses the one encoding, never a second one in SQL. Every
    :class:`Reader` has it; so must a connection that plans a reader's statements."""
    conn.create_function("trust_root", 2, _trust_root_sql, deterministic=True)


#: A piece of evidence (``ev``) with its event (``e``, joined by
#: :meth:`Reader.evidence_join`): the piece's own columns, and those the log gives (event id,
#: day, log position, kind) from the joined row. ``ev.*`` would read them again through the
#: view ``evidence`` (migration 0026), one more search of the log per column and piece.
EVIDENCE_WITH_EVENT = (
    "ev.world, ev.evidence_id, ev.resident, ev.root, ev.value, e.event_id AS event_id, "
    "e.day AS day, ev.source_kind, ev.source_resident, ev.relation, ev.op, ev.subject, "
    "ev.origin, ev.hops, ev.trust, e.seq AS event_seq, e.kind AS event_kind"
)


class Holding(NamedTuple):
    """One resident's belief on a root, as ``distribution`` lists and sums it (its state and
    source kind as stored text, its origins as a list)."""

    resident: str
    value: Any
    confidence: int
    state: str
    source_kind: str
    source: str | None
    origins: list[str]
    own_origins: int


class Reader(PromiseQueries):
    """Read-only queries on a connection of its own. One thread at a time may use it."""

    def __init__(self, path: str | Path) -> None:
        self.conn = _open(Path(path), synchronous="NORMAL", create=False)
        add_trust_root_function(self.conn)  # (the trust page's join on its counter)
        self.db = Database(self.conn)
        self._schema: dict[tuple[str, str], bool] = {}  # (see _in_schema)
        self._schema_version: int | None = None
        self._labels = False  # (see _has_labels)
        try:
            unknown = unknown_migrations(self.conn)
        except sqlite3.Error as exc:
            self.conn.close()
            raise CannotOpen(f"{path}: not a readable Credence database: {exc}") from exc
        if unknown:
            self.conn.close()
            raise SchemaTooNew(
                f"{path}: database has migrations this version does not know: {unknown}; "
                "it was written by a newer Credence"
            )

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction around the statements of one reply: a reply built from many
        queries (a narrative runs about a hundred, an ``explain`` reads the belief, then its
        evidence and changes) sees the database as one commit left it, however many the
        writer makes meanwhile (in WAL mode a reader never blocks the writer, nor the writer
        it). Nested, the outer one holds."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            try:
                self.conn.execute("COMMIT")  # (nothing was written: it only ends the read)
            except sqlite3.Error:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self.conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc

    def iterate(self, sql: str, params: Iterable[Any] = ()) -> Iterator[sqlite3.Row]:
        """:meth:`_rows` one row at a time, for a read of a size no reply bounds (a command
        writing a whole world's graph): its rows are never held together (SQLite sorts what
        it must in its own bounded memory, spilling to a temporary file)."""
        try:
            cursor = self.conn.execute(sql, tuple(params))
            yield from cursor
        except sqlite3.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc

    def tuples(
        self, sql: str, params: Iterable[Any] | Mapping[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        """:meth:`_rows` as plain tuples: no :class:`sqlite3.Row` per row, for the reads that
        turn hundreds of rows straight into reply dicts (or key thousands of them). Named
        parameters come as a mapping."""
        cursor = self.conn.cursor()
        cursor.row_factory = None
        found = params if isinstance(params, Mapping) else tuple(params)
        try:
            return cursor.execute(sql, found).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc
        finally:
            cursor.close()

    def worlds(self) -> list[str]:
        return [r[0] for r in self._rows("SELECT world FROM worlds ORDER BY world")]

    def latest_seq(self, world: str) -> int:
        rows = self._rows("SELECT change_seq FROM worlds WHERE world = ?", (world,))
        return int(rows[0][0]) if rows else 0

    def world_day(self, world: str) -> float:
        rows = self._rows("SELECT day FROM worlds WHERE world = ?", (world,))
        return float(rows[0][0]) if rows else 0.0

    def is_resident(self, world: str, resident: str) -> bool:
        return bool(
            self._rows(
                "SELECT 1 FROM residents WHERE world = ? AND resident = ?", (world, resident)
            )
        )

    def belief(self, world: str, resident: str, root: str) -> Belief | None:
        rows = self._rows(
            "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root = ?",
            (world, resident, root),
        )
        return belief_from_row(rows[0]) if rows else None

    def beliefs(
        self,
        world: str,
        resident: str,
        *,
        after_root: str | None = None,
        limit: int = -1,
        where: BeliefFilter | None = None,
    ) -> list[Belief]:
        """A resident's beliefs in root order; page with ``after_root``; narrow with ``where``."""
        sql = "SELECT * FROM beliefs WHERE world = ? AND resident = ? AND root > ?"
        params: list[Any] = [world, resident, after_root or ""]
        if where is not None:
            clause, more = where.sql()
            sql += clause
            params.extend(more)
        rows = self._rows(sql + " ORDER BY root LIMIT ?", (*params, limit))
        return [belief_from_row(r) for r in rows]

    def all_beliefs(self, world: str) -> list[Belief]:
        rows = self._rows("SELECT * FROM beliefs WHERE world = ? ORDER BY resident, root", (world,))
        return [belief_from_row(r) for r in rows]

    def belief_page(self, world: str, after: tuple[str, str] | None, limit: int) -> list[Belief]:
        """At most ``limit`` beliefs of ``world`` after ``(resident, root)`` (from the first
        if None), in that order: one range of the primary key."""
        if after is None:
            sql = "SELECT * FROM beliefs WHERE world = ? ORDER BY resident, root LIMIT ?"
            return [belief_from_row(r) for r in self._rows(sql, (world, limit))]
        sql = (
            "SELECT * FROM beliefs WHERE world = ? AND (resident, root) > (?, ?) "
            "ORDER BY resident, root LIMIT ?"
        )
        return [belief_from_row(r) for r in self._rows(sql, (world, *after, limit))]

    def holders(self, world: str, root: str) -> list[Holding]:
        """Every resident's belief on one root, as a ``distribution`` reads it: only the
        columns it needs (a root the whole town holds is 10,000 rows; building each belief
        whole, its lists parsed, took three quarters of that query's time)."""
        rows = self._rows(
            "SELECT resident, value, confidence, state, source_kind, source_resident, origins, "
            "own_origins FROM beliefs WHERE world = ? AND root = ? ORDER BY resident",
            (world, root),
        )
        return [
            Holding(r[0], load_json(r[1]), r[2], r[3], r[4], r[5], load_json(r[6]), r[7])
            for r in rows
        ]

    def on_root(self, world: str, root: str) -> list[Belief]:
        """Every resident's belief on one root (for ``distribution``)."""
        rows = self._rows(
            "SELECT * FROM beliefs WHERE world = ? AND root = ? ORDER BY resident", (world, root)
        )
        return [belief_from_row(r) for r in rows]

    def evidence(
        self, world: str, resident: str, root: str, *, latest: int | None = None
    ) -> list[dict[str, Any]]:
        """The evidence behind one belief, in log order: every piece, or the ``latest`` ones.

        One range of index ``evidence_by_seq`` (migration 0023: the belief's evidence in log
        order), read backwards and stopped after ``latest`` pieces: a page of the latest costs
        what it returns, however many pieces the belief has and whatever their days. On a
        file from before 0023 (read, not yet migrated by a writer) the pieces dated within
        ``late_event_days`` of the ``latest``-th latest are sorted instead.
        """
        if not self.has_evidence_seq():
            return self._evidence_by_day(world, resident, root, latest)
        # (No index is named: since 0026 ``evidence`` is a view, which takes none, and a
        # reader's file may be migrated under it. The planner's fixed statistics choose
        # ``evidence_by_seq`` for this ORDER BY, on a file from before 0025 too.)
        rows = self._rows(
            f"SELECT {EVIDENCE_WITH_EVENT} FROM evidence ev "
            "CROSS JOIN events e ON e.world = ev.world AND e.seq = ev.event_seq "
            "WHERE ev.world = ? AND ev.resident = ? AND ev.root = ? "
            "ORDER BY ev.event_seq DESC LIMIT ?",
            (world, resident, root, -1 if latest is None else latest),
        )
        return self._evidence_dicts(rows)

    def _evidence_dicts(self, rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
        out = []
        for r in reversed(rows):
            item = dict(r)
            item["value"] = load_json(item["value"])
            out.append(item)
        return out

    def _evidence_by_day(
        self, world: str, resident: str, root: str, latest: int | None
    ) -> list[dict[str, Any]]:
        # A piece among the ``latest`` last logged was logged after at least one of the
        # ``latest`` pieces dated D (the latest-th latest by day) or later, when the world
        # clock was at least D, so it is dated at least D - late_event_days (the writer
        # refuses anything older; a world's rules never change): only those are sorted.
        select = (
            "SELECT ev.*, e.kind AS event_kind, e.seq AS event_seq FROM evidence ev "
            "CROSS JOIN events e ON e.world = ev.world AND e.event_id = ev.event_id "
            "WHERE ev.world = ? AND ev.resident = ? AND ev.root = ? "
        )
        key: tuple[Any, ...] = (world, resident, root)
        since: list[Any] = []
        if latest is not None:
            nth = self._rows(
                "SELECT day FROM evidence WHERE world = ? AND resident = ? AND root = ? "
                "ORDER BY day DESC LIMIT 1 OFFSET ?",
                (*key, latest - 1),
            )
            if nth:
                select += "AND ev.day >= ? "
                since = [float(nth[0][0]) - self.rules(world).late_event_days]
        rows = self._rows(
            select + "ORDER BY e.seq DESC LIMIT ?",
            (*key, *since, -1 if latest is None else latest),
        )
        return self._evidence_dicts(rows)

    def evidence_join(self) -> str:
        """How a piece of evidence (``ev``) finds its event (``e``) in the same world: by its
        place in the log (migration 0023), else, on a file no writer has opened since, by
        event id."""
        return "e.seq = ev.event_seq" if self.has_evidence_seq() else "e.event_id = ev.event_id"

    def has_evidence_seq(self) -> bool:
        """Whether the file's evidence keeps its log position (migration 0023; a file a
        writer has not opened since may not)."""
        return self._in_schema("index", "evidence_by_seq")

    def has_act_index(self) -> bool:
        """Whether the file indexes the episodes of acts (migration 0024)."""
        return self._in_schema("index", "evidence_acts")

    def _in_schema(self, kind: str, name: str) -> bool:
        """Whether the file has this table or index (a later migration's); asked once per
        version of the schema: a writer may migrate the file under an open reader (a data
        directory's world file read before its writer opened it), which SQLite's schema
        cookie tells."""
        version = self._rows("PRAGMA schema_version", ())[0][0]
        if version != self._schema_version:
            self._schema.clear()
            self._schema_version = version
        found = self._schema.get((kind, name))
        if found is None:
            found = self._schema[kind, name] = bool(self._rows(
                "SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?", (kind, name)
            ))  # fmt: skip
        return found

    def evidence_count(self, world: str, resident: str, root: str) -> int:
        """How many pieces of evidence bear on one belief (an index count, no row read)."""
        sql = "SELECT count(*) FROM evidence WHERE world = ? AND resident = ? AND root = ?"
        return int(self._rows(sql, (world, resident, root))[0][0])

    def history(
        self, world: str, resident: str, root: str, *, latest: int | None = None
    ) -> list[Change]:
        """One belief's change records, oldest first: every one, or the ``latest`` ones."""
        rows = self._rows(
            "SELECT * FROM changes WHERE world = ? AND resident = ? AND root = ? "
            "ORDER BY seq DESC LIMIT ?",
            (world, resident, root, -1 if latest is None else latest),
        )
        return [change_from_row(r) for r in reversed(rows)]

    def latest_histories(
        self,
        world: str,
        resident: str,
        roots: list[str],
        *,
        latest: int | None = None,
        wire: bool = False,
    ) -> list[list[Any]]:
        """:meth:`history` of each of ``roots`` (in their order), in one query: a trust page's
        entries' records. With ``wire`` each record is its wire dict (the one
        ``protocol.change_summary`` gives, built by :func:`change_summary_from_row` from the
        columns it needs, with no :class:`Change` in between), else a :class:`Change`.

        Each root's ``latest`` records are one range of ``changes_by_belief``: from the seq of
        its ``latest``-th latest record (a walk of ``latest`` entries back on the same index)
        on. A query per root cost a statement per entry; a window over the roots' records
        would read every one of them (thousands per root over a long game).
        """
        if not roots or (latest is not None and latest < 1):
            return [[] for _ in roots]
        bound = (
            "AND c.seq >= IFNULL((SELECT l.seq FROM changes l WHERE l.world = ? "
            "AND l.resident = ? AND l.root = json_each.value ORDER BY l.seq DESC "
            "LIMIT 1 OFFSET ?), -1) "
            if latest is not None
            else ""
        )
        params: list[Any] = [dump_json(roots), world, resident]
        if latest is not None:
            params += [world, resident, latest - 1]
        sql = (
            f"SELECT json_each.key, {_SUMMARY_COLUMNS if wire else 'c.*'} FROM json_each(?) "
            "CROSS JOIN changes c ON c.world = ? AND c.resident = ? "
            f"AND c.root = json_each.value {bound}ORDER BY json_each.key, c.seq"
        )
        out: list[list[Any]] = [[] for _ in roots]
        if wire:
            for row in self.tuples(sql, params):
                out[row[0]].append(change_summary_from_row(row[1:]))
        else:
            for full in self._rows(sql, params):
                out[full[0]].append(change_from_row(full))
        return out

    def history_count(self, world: str, resident: str, root: str) -> int:
        """How many change records one belief has (an index count)."""
        sql = "SELECT count(*) FROM changes WHERE world = ? AND resident = ? AND root = ?"
        return int(self._rows(sql, (world, resident, root))[0][0])

    def changes_after(
        self,
        world: str,
        seq: int,
        *,
        limit: int = 500,
        upto: int | None = None,
        residents: Collection[str] | None = None,
    ) -> list[Change]:
        """At most ``limit`` change records after ``seq`` (and up to ``upto``), in seq order:
        one range of the primary key. ``residents``: only theirs, told apart in SQL as the
        range is walked (a subscriber of one resident catching up on a long gap builds her
        changes, not the whole town's)."""
        sql, params = "SELECT * FROM changes WHERE world = ? AND seq > ?", [world, seq]
        if upto is not None:
            sql += " AND seq <= ?"
            params.append(upto)
        if residents is not None:
            sql += " AND +resident IN (SELECT value FROM json_each(?))"  # (+: not its index)
            params.append(orjson.dumps(sorted(residents)).decode())
        rows = self._rows(sql + " ORDER BY seq LIMIT ?", (*params, limit))
        return [change_from_row(r) for r in rows]

    def all_changes(self, world: str) -> list[Change]:
        return self.changes_after(world, 0, limit=-1)

    def events(self, world: str) -> Iterator[WorldEvent]:
        """The world log in order, parsed back into events (what a rebuild replays)."""
        cursor = self.conn.execute("SELECT body FROM events WHERE world = ? ORDER BY seq", (world,))
        for (body,) in cursor:
            yield parse_event(load_json(body))

    def event_ids(self, world: str) -> set[str]:
        return {r[0] for r in self._rows("SELECT event_id FROM events WHERE world = ?", (world,))}

    def trust(
        self, world: str, resident: str, source: str | None = None, *, latest: int | None = None
    ) -> list[dict[str, Any]]:
        """A resident's whole trust table, each entry with the change records that moved it
        (every one, or the ``latest`` ones and ``history_total``, how many there are)."""
        return self.trust_page(world, resident, source, limit=-1, latest=latest)

    def trust_page(
        self,
        world: str,
        resident: str,
        source: str | None = None,
        *,
        after: tuple[str, str] | None = None,
        limit: int = 100,
        latest: int | None = None,
        wire: bool = False,
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` entries of a resident's trust table (of ``source``'s, if given) in
        (source, topic) order after ``after`` (topic ``""``: general trust): one range of the
        trust primary key, whatever the size of the table (the ``trust`` query, SPEC §10.6).

        Each entry carries its change records (the ``latest`` ones), all the page's in one
        query (:meth:`latest_histories`): :class:`Change` objects, or with ``wire`` each
        record's wire dict (what the reply sends). With ``latest``, its
        ``history_total`` too: the counter of migration 0018, read with the page in the same
        query (one key lookup per entry), used only when there are more records than were
        read; on a file from before 0018, counted on the index for those entries only.
        """
        counted = latest is not None and self._has_trust_history()
        where, args = "WHERE t.world = ? AND t.resident = ? ", [world, resident]
        if source is not None:
            where += "AND t.source = ? "
            args.append(source)
            if after is not None:  # the range within the source's entries (no row value:
                if after[0] != source:  # SQLite would then walk the source's from its first)
                    raise ValueError(f"trust cursor {after!r} is not of source {source!r}")
                where += "AND t.topic > ? "
                args.append(after[1])
        elif after is not None:
            where += "AND (t.source, t.topic) > (?, ?) "
            args += after
        totals = (
            "h.total FROM trust t LEFT JOIN trust_history h ON h.world = t.world "
            "AND h.resident = t.resident AND h.root = trust_root(t.source, t.topic) "
            if counted
            else "NULL FROM trust t "
        )
        rows = self._rows(
            f"SELECT t.source, t.topic, t.value, {totals}{where}ORDER BY t.source, t.topic LIMIT ?",
            (*args, limit),
        )
        roots = [trust_root(src, topic) for src, topic, _, _ in rows]
        histories = self.latest_histories(world, resident, roots, latest=latest, wire=wire)
        out = []
        for (src, topic, value, total), root, history in zip(rows, roots, histories, strict=True):
            entry = {"source": src, "topic": topic or None, "value": value, "history": history}
            if latest is not None:
                entry["history_total"] = (
                    len(history) if len(history) < latest
                    else (total or 0) if counted
                    else self.history_count(world, resident, root)
                )  # fmt: skip
            out.append(entry)
        return out

    def _has_trust_history(self) -> bool:
        """Whether the file has the ``trust_history`` counter (migration 0018)."""
        return self._in_schema("table", "trust_history")

    def registry(self, world: str) -> dict[str, dict[str, Any]]:
        """The world's registry: ``{"residents": {id: {lang: name}}, "actions": {...}}``
        (empty on a database a writer has not yet brought to schema 0005_i10_memory)."""
        if not self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'"):
            return {"residents": {}, "actions": {}}
        residents = self._rows(
            "SELECT resident, names FROM residents WHERE world = ? AND names IS NOT NULL "
            "ORDER BY resident",
            (world,),
        )
        labels = self._rows(
            "SELECT key, names FROM labels WHERE world = ? AND kind = 'action' ORDER BY key",
            (world,),
        )
        return {
            "residents": {r[0]: load_json(r[1]) for r in residents},
            "actions": {r[0]: load_json(r[1]) for r in labels},
        }

    def names_of(self, world: str, resident: str) -> dict[str, str] | None:
        """One resident's registered names (``{lang: name}``), None when it has none: one
        primary-key read (a read names the residents it shows, not the world's)."""
        if not self._has_labels():
            return None
        rows = self._rows(
            "SELECT names FROM residents WHERE world = ? AND resident = ?", (world, resident)
        )
        return load_json(rows[0][0]) if rows and rows[0][0] is not None else None

    def action_labels(self, world: str) -> dict[str, dict[str, str]]:
        """The world's action labels (``{action: {lang: label}}``), what the game declared."""
        if not self._has_labels():
            return {}
        rows = self._rows(
            "SELECT key, names FROM labels WHERE world = ? AND kind = 'action' ORDER BY key",
            (world,),
        )
        return {r[0]: load_json(r[1]) for r in rows}

    def _has_labels(self) -> bool:
        # residents.names and labels came with 0005_i10_memory (once there, they stay).
        if not self._labels:
            self._labels = bool(
                self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'")
            )
        return self._labels

    def resident_page(
        self, world: str, *, after: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, str]]]:
        """Up to ``limit`` residents after ``after`` in id order, each with its registered
        names (``{}`` when none): the ``residents`` query, one primary-key range scan."""
        # residents.names came with 0005_i10_memory (as the labels table did).
        named = self._rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'")
        rows = self._rows(
            f"SELECT resident, {'names' if named else 'NULL'} FROM residents "
            "WHERE world = ? AND resident > ? ORDER BY resident LIMIT ?",
            (world, after or "", limit),
        )
        return [(r[0], load_json(r[1]) if r[1] else {}) for r in rows]

    def event_page(self, world: str, *, start: int = 1, limit: int = 100) -> list[dict[str, Any]]:
        """Up to ``limit`` events of the log from seq ``start`` on: seq, id, day, kind, and
        who spoke or acted and the game's subject (clipped to 200 characters), read from
        the stored body; one primary-key range scan (the ``events`` query, ``credence log``)."""
        rows = self._rows(
            "SELECT seq, event_id, day, kind, "
            "coalesce(json_extract(body, '$.speaker'), json_extract(body, '$.actor')), "
            "substr(json_extract(body, '$.subject'), 1, 200) "
            "FROM events WHERE world = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (world, start, limit),
        )
        return [
            {"seq": r[0], "event_id": r[1], "day": float(r[2]), "kind": r[3], "by": r[4],
             "subject": r[5]}
            for r in rows
        ]  # fmt: skip

    def event_count(self, world: str) -> int:
        """The world's last event seq (the length of its log)."""
        rows = self._rows("SELECT event_seq FROM worlds WHERE world = ?", (world,))
        return int(rows[0][0]) if rows else 0

    def fact(self, world: str, root: str) -> tuple[bool, Any]:
        """What the world itself observed on ``root`` (found, value)."""
        rows = self._rows("SELECT value FROM facts WHERE world = ? AND root = ?", (world, root))
        return (True, load_json(rows[0][0])) if rows else (False, None)

    def schema(self, world: str) -> tuple[int, RootSchema | None]:
        """The world's root schema and its version (0, None: no schema declared, or a
        database a writer has not yet brought to schema 0005_i12_schema_events)."""
        if not self._rows(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'world_schema'"
        ):
            return 0, None
        rows = self._rows("SELECT version, body FROM world_schema WHERE world = ?", (world,))
        if not rows:
            return 0, None
        return int(rows[0][0]), parse_schema(load_json(rows[0][1]))

    def rules(self, world: str) -> Rules:
        rows = self._rows("SELECT rules FROM worlds WHERE world = ?", (world,))
        return stored_rules(world, rows[0][0]) if rows else DEFAULT_RULES
