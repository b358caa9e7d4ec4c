"""Promises and goals in SQLite: compact tables keyed by what they are about.

``promises`` holds what was promised, once per promise; ``promise_views`` one row per party
(the promiser and each promisee) with its current state; ``goals`` one row per resident's
goal. A row is rewritten only when the engine moves it, and each move is one change record
in ``changes`` (kinds ``promise`` and ``goal``), which is what notifications, ``explain``
and a goal's history read. Both write paths write an outcome's rows as soon as its event is
folded, inside the batch's transaction (or the event's savepoint), and the engine reads them
back over the same connection: the batched path's next event sees exactly what the
event-by-event path would, with no overlay, and a batch handed back rolls them away with
everything else.

:class:`PromiseReads` is the engine's read access (mixed into the writer's view);
:class:`PromiseQueries` the read side (mixed into :class:`~.store.Reader`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from ..engine.promises import (
    GoalRecord,
    GoalState,
    Learned,
    PromiseRecord,
    PromiseState,
    PromiseView,
)
from ..engine.world import Outcome
from .rows import dump_json_list, load_json

__all__ = [
    "GOAL_STATES",
    "PROMISE_STATES",
    "PromiseQueries",
    "PromiseReads",
    "promise_differences",
    "write_promise_rows",
]

PROMISE_STATES = tuple(str(s) for s in PromiseState)
GOAL_STATES = tuple(str(s) for s in GoalState)

#: The narrative's order of importance: what went wrong first, then what is owed, then kept.
RANKED_STATES = (PromiseState.OVERDUE, PromiseState.BROKEN, PromiseState.PENDING, PromiseState.KEPT)

_VIEW_COLUMNS = "resident, promise, promiser, action, state, how, source, since, due"
_RECORD_COLUMNS = "promise, promiser, to_residents, action, subject, made_day, by_day, event_id"
_GOAL_COLUMNS = "resident, goal, subject, state, set_day, day, prev_subject"


def _view(row: Sequence[Any]) -> PromiseView:
    return PromiseView(
        resident=row[0], promise=row[1], promiser=row[2], action=row[3],
        state=PromiseState(row[4]), how=Learned(row[5]), source=row[6], since=float(row[7]),
        due=None if row[8] is None else float(row[8]),
    )  # fmt: skip


def _record(row: Sequence[Any]) -> PromiseRecord:
    return PromiseRecord(
        promise=row[0], promiser=row[1], to=tuple(load_json(row[2])), action=row[3],
        subject=row[4], made_day=float(row[5]), by=None if row[6] is None else float(row[6]),
        event_id=row[7],
    )  # fmt: skip


def _goal(row: Sequence[Any]) -> GoalRecord:
    return GoalRecord(
        resident=row[0], goal=row[1], subject=row[2], state=GoalState(row[3]),
        set_day=float(row[4]), day=float(row[5]), prev_subject=row[6],
    )  # fmt: skip


class PromiseReads:
    """The engine's :class:`~sidecar.engine.promises.PromiseReader` over the writer's
    connection (``self.conn``, ``self.world``: the view it is mixed into)."""

    conn: sqlite3.Connection
    world: str

    def get_promise(self, promise: str) -> PromiseRecord | None:
        row = self.conn.execute(
            f"SELECT {_RECORD_COLUMNS} FROM promises WHERE world = ? AND promise = ?",
            (self.world, promise),
        ).fetchone()
        return None if row is None else _record(row)

    def get_promise_view(self, resident: str, promise: str) -> PromiseView | None:
        row = self.conn.execute(
            f"SELECT {_VIEW_COLUMNS} FROM promise_views "
            "WHERE world = ? AND resident = ? AND promise = ?",
            (self.world, resident, promise),
        ).fetchone()
        return None if row is None else _view(row)

    def open_promise_views(self, promiser: str, action: str) -> list[PromiseView]:
        rows = self.conn.execute(
            f"SELECT {_VIEW_COLUMNS} FROM promise_views INDEXED BY promise_views_open "
            "WHERE world = ? AND promiser = ? AND action = ? AND state <> 'kept' "
            "AND resident = promiser ORDER BY promise",
            (self.world, promiser, action),
        ).fetchall()
        return [_view(r) for r in rows]

    def due_promise_views(self, day: float) -> list[PromiseView]:
        rows = self.conn.execute(
            f"SELECT {_VIEW_COLUMNS} FROM promise_views INDEXED BY promise_views_due "
            "WHERE world = ? AND due IS NOT NULL AND due < ? ORDER BY due, resident, promise",
            (self.world, day),
        ).fetchall()
        return [_view(r) for r in rows]

    def get_goal(self, resident: str, goal: str) -> GoalRecord | None:
        row = self.conn.execute(
            f"SELECT {_GOAL_COLUMNS} FROM goals WHERE world = ? AND resident = ? AND goal = ?",
            (self.world, resident, goal),
        ).fetchone()
        return None if row is None else _goal(row)


def write_promise_rows(conn: sqlite3.Connection, world: str, out: Outcome) -> None:
    """The outcome's promise, view and goal rows (inside the event's savepoint)."""
    if out.promises:
        conn.executemany(
            f"INSERT INTO promises (world, {_RECORD_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (world, p.promise, p.promiser, dump_json_list(p.to), p.action, p.subject,
                 p.made_day, p.by, p.event_id)
                for p in out.promises.values()
            ],
        )  # fmt: skip
    if out.views:
        conn.executemany(
            f"INSERT OR REPLACE INTO promise_views (world, {_VIEW_COLUMNS}) "
            "VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (world, v.resident, v.promise, v.promiser, v.action, str(v.state), str(v.how),
                 v.source, v.since, v.due)
                for v in out.views.values()
            ],
        )  # fmt: skip
    if out.goals:
        conn.executemany(
            f"INSERT OR REPLACE INTO goals (world, {_GOAL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
            [
                (
                    world,
                    g.resident,
                    g.goal,
                    g.subject,
                    str(g.state),
                    g.set_day,
                    g.day,
                    g.prev_subject,
                )
                for g in out.goals.values()
            ],
        )


class PromiseQueries:
    """The read side's promise and goal queries (mixed into :class:`~.store.Reader`)."""

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError  # (the Reader's)

    def promise_page(
        self, world: str, resident: str, *, state: str | None = None, after: str | None = None,
        limit: int = 100,
    ) -> list[tuple[PromiseView, PromiseRecord]]:  # fmt: skip
        """Up to ``limit`` of the resident's promises (made or received) after ``after`` in
        promise id order, with what was promised: one range scan of the primary key, or of
        ``promise_views_by_state`` given a ``state``."""
        columns = ", ".join(f"v.{c.strip()}" for c in _VIEW_COLUMNS.split(","))
        record = ", ".join(f"p.{c.strip()}" for c in _RECORD_COLUMNS.split(","))
        where, params = (
            "v.world = ? AND v.resident = ? AND v.promise > ?",
            [
                world,
                resident,
                after or "",
            ],
        )
        index = ""
        if state is not None:
            where += " AND v.state = ?"
            params.append(state)
            index = " INDEXED BY promise_views_by_state"
        rows = self._rows(
            f"SELECT {columns}, {record} FROM promise_views AS v{index} "
            "JOIN promises AS p ON p.world = v.world AND p.promise = v.promise "
            f"WHERE {where} ORDER BY v.promise LIMIT ?",
            (*params, limit),
        )
        return [(_view(r[:9]), _record(r[9:])) for r in rows]

    def promises_ranked(
        self, world: str, resident: str, *, per_state: int = 20
    ) -> list[tuple[PromiseView, PromiseRecord]]:
        """The narrative's promises: per state in :data:`RANKED_STATES` order, the latest
        ``per_state`` by day learned; one statement, each branch a bounded range scan of
        ``promise_views_recent``."""
        columns = ", ".join(f"v.{c.strip()}" for c in _VIEW_COLUMNS.split(","))
        record = ", ".join(f"p.{c.strip()}" for c in _RECORD_COLUMNS.split(","))
        branch = (
            f"SELECT * FROM (SELECT {columns}, {record} FROM promise_views AS v "
            "INDEXED BY promise_views_recent "
            "JOIN promises AS p ON p.world = v.world AND p.promise = v.promise "
            "WHERE v.world = ? AND v.resident = ? AND v.state = ? "
            "ORDER BY v.since DESC, v.promise LIMIT ?)"
        )
        sql = " UNION ALL ".join([branch] * len(RANKED_STATES))
        params: list[Any] = []
        for state in RANKED_STATES:
            params += [world, resident, str(state), per_state]
        return [(_view(r[:9]), _record(r[9:])) for r in self._rows(sql, params)]

    def goal_page(
        self, world: str, resident: str, *, state: str | None = None, after: str | None = None,
        limit: int = 100,
    ) -> list[GoalRecord]:  # fmt: skip
        """Up to ``limit`` of the resident's goals after ``after`` in goal id order (a range
        scan of the primary key; a resident's goals are few, ``state`` is a residual filter
        on that range)."""
        where, params = "world = ? AND resident = ? AND goal > ?", [world, resident, after or ""]
        if state is not None:
            where += " AND state = ?"
            params.append(state)
        rows = self._rows(
            f"SELECT {_GOAL_COLUMNS} FROM goals WHERE {where} ORDER BY goal LIMIT ?",
            (*params, limit),
        )
        return [_goal(r) for r in rows]

    def goals_ranked(self, world: str, resident: str, *, per_state: int = 20) -> list[GoalRecord]:
        """The narrative's goals: active ones, then achieved, then abandoned, each the latest
        ``per_state`` by the day of their last change (``goals_recent``)."""
        branch = (
            f"SELECT * FROM (SELECT {_GOAL_COLUMNS} FROM goals INDEXED BY goals_recent "
            "WHERE world = ? AND resident = ? AND state = ? ORDER BY day DESC, goal LIMIT ?)"
        )
        sql = " UNION ALL ".join([branch] * len(GOAL_STATES))
        params: list[Any] = []
        for state in GOAL_STATES:
            params += [world, resident, state, per_state]
        return [_goal(r) for r in self._rows(sql, params)]

    def goal_history(
        self, world: str, resident: str, goal: str, *, limit: int = 20
    ) -> list[tuple[str, str | None, str | None, float]]:
        """A goal's latest changes, newest first: (op, text before, text after, day), from
        its change records (``changes_by_belief``)."""
        rows = self._rows(
            "SELECT detail, subject_before, subject_after, day FROM changes "
            "WHERE world = ? AND resident = ? AND root = ? AND kind = 'goal' "
            "ORDER BY seq DESC LIMIT ?",
            (world, resident, f"goal:{goal}", limit),
        )
        return [(r[0], r[1], r[2], float(r[3])) for r in rows]

    def all_promise_rows(self, world: str) -> list[tuple[Any, ...]]:
        """Every promise, view and goal row of the world (the rebuild's comparison)."""
        out: list[tuple[Any, ...]] = []
        for table, order in (
            ("promises", "promise"),
            ("promise_views", "resident, promise"),
            ("goals", "resident, goal"),
        ):
            out += [
                (table, *r) for r in self._rows(
                    f"SELECT * FROM {table} WHERE world = ? ORDER BY {order}", (world,)
                )
            ]  # fmt: skip
        return out


def promise_differences(world: str, a: PromiseQueries, b: PromiseQueries) -> list[str]:
    """How two stores' promises, views and goals of ``world`` differ (none: the same)."""
    old, new = a.all_promise_rows(world), b.all_promise_rows(world)
    if old == new:
        return []
    out = (
        [f"{len(old)} promise/goal rows stored, {len(new)} rebuilt"] if len(old) != len(new) else []
    )
    for x, y in zip(old, new, strict=False):
        if x != y:
            out.append(f"{x[0]} row stored {tuple(x)} != rebuilt {tuple(y)}")
            break
    return out
