"""Promises and goals: what a resident owes, is owed, and is trying to do.

A ``promise`` event gives each party (the promiser and every promisee in ``to``) a *view*
of the promise. Whether it was kept is learned per party from evidence only, never from the
world's truth: seeing the promiser complete the promised action (an ``act`` the party is
the actor or a witness of; one act keeps one promise, the promiser's own open promise of that
action due first), being told (a ``say``/``announce`` on root ``promise:<id>``
with value ``kept`` or ``broken``), or the deadline passing while the party has not learned
it kept. A promisee's general trust in the promiser moves when it learns the outcome.

Read this table beside the README's rules table; they say the same thing.

=========  ===============================================  =======  ==========================
from       evidence                                         to       promisee's trust in promiser
=========  ===============================================  =======  ==========================
(none)     the ``promise`` event (the resident is a party)  pending  —
pending    sees the promiser complete the action            kept     + promise_kept_step
pending    told it was kept                                 kept     + promise_kept_step
pending    told it was broken                               broken   − promise_broken_step
pending    an event's day passes ``by``, kept not learned   overdue  − promise_broken_step
overdue    sees it kept (late), or told it was kept         kept     + promise_kept_step
overdue    told it was broken                               broken   — (already counted)
broken     sees it kept                                     kept     + promise_kept_step
broken     told it was kept                                 broken   — (a report never
kept       anything                                         kept       overturns what a party
                                                                       learned; only seeing does)
=========  ===============================================  =======  ==========================

Each move is one change record (kind ``promise``, root ``promise:<id>``, value the new
state, ``detail`` how it was learned: ``made``, ``seen``, ``told`` or ``deadline``); the
promiser's trust in itself is never modelled. Deadlines are checked when an event moves the
world clock (like hearsay aging): a view is overdue once an event's day is past ``by``, so
a promise "by day 12" kept on day 12 is on time.

A resident's goals are the game's to set (``goal`` events): ``set`` makes a goal active
(again, after it was achieved or abandoned), ``changed`` replaces an active goal's text,
``achieved`` and ``abandoned`` close it. Each is one change record (kind ``goal``, root
``goal:<id>``, ``subject_before``/``subject_after`` the text), so a goal keeps its history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from .events import (
    Act,
    ActStatus,
    Goal,
    GoalOp,
    Promise,
    Utterance,
    WorldEvent,
    goal_root,
    promise_root,
)
from .model import Change, ChangeKind, InvalidEvent, SourceKind, State

__all__ = [
    "GOAL_TRANSITIONS",
    "PROMISE_TRANSITIONS",
    "GoalRecord",
    "GoalState",
    "Learned",
    "PromiseReader",
    "PromiseRecord",
    "PromiseState",
    "PromiseView",
]


class PromiseState(StrEnum):
    PENDING = "pending"
    KEPT = "kept"
    OVERDUE = "overdue"
    BROKEN = "broken"


class Learned(StrEnum):
    """How a party came to its view of a promise."""

    MADE = "made"
    SEEN = "seen"
    TOLD = "told"
    DEADLINE = "deadline"


class GoalState(StrEnum):
    ACTIVE = "active"
    ACHIEVED = "achieved"
    ABANDONED = "abandoned"


_P = PromiseState
#: (state before or None, how it is learned) → state after; absent: the view stays as it is.
#: "told" carries the report's value: (state, "told kept") / (state, "told broken").
PROMISE_TRANSITIONS: dict[tuple[PromiseState | None, str], PromiseState] = {
    (None, "made"): _P.PENDING,
    (_P.PENDING, "seen"): _P.KEPT,
    (_P.PENDING, "told kept"): _P.KEPT,
    (_P.PENDING, "told broken"): _P.BROKEN,
    (_P.PENDING, "deadline"): _P.OVERDUE,
    (_P.OVERDUE, "seen"): _P.KEPT,
    (_P.OVERDUE, "told kept"): _P.KEPT,
    (_P.OVERDUE, "told broken"): _P.BROKEN,
    (_P.BROKEN, "seen"): _P.KEPT,
}
_G = GoalState
#: (state before or None, op) → state after; absent: the event is refused.
GOAL_TRANSITIONS: dict[tuple[GoalState | None, GoalOp], GoalState] = {
    (None, GoalOp.SET): _G.ACTIVE,
    (_G.ACHIEVED, GoalOp.SET): _G.ACTIVE,
    (_G.ABANDONED, GoalOp.SET): _G.ACTIVE,
    (_G.ACTIVE, GoalOp.CHANGED): _G.ACTIVE,
    (_G.ACTIVE, GoalOp.ACHIEVED): _G.ACHIEVED,
    (_G.ACTIVE, GoalOp.ABANDONED): _G.ABANDONED,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PromiseRecord:
    """What was promised, once per promise (shared by its parties)."""

    promise: str
    promiser: str
    to: tuple[str, ...]
    action: str
    subject: str
    made_day: float
    by: float | None
    event_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PromiseView:
    """One party's view of a promise. ``due`` is the deadline while it is pending (what the
    deadline check reads), else ``None``; ``source`` the teller when it was told."""

    resident: str
    promise: str
    promiser: str
    action: str
    state: PromiseState
    how: Learned
    source: str | None
    since: float
    due: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GoalRecord:
    resident: str
    goal: str
    subject: str
    state: GoalState
    set_day: float
    day: float  # of its last change
    #: The text a ``changed`` replaced (kept until the goal is set anew), for "before, I
    #: wanted to …" without reading the history.
    prev_subject: str | None = None


class PromiseReader(Protocol):
    """Read access to a world's promises and goals, as the fold needs it."""

    def get_promise(self, promise: str) -> PromiseRecord | None: ...

    def get_promise_view(self, resident: str, promise: str) -> PromiseView | None: ...

    def open_promise_views(self, promiser: str, action: str) -> Iterable[PromiseView]:
        """``promiser``'s own views, not yet kept, of its promises to do ``action``
        (index-driven: what an act of the promiser may keep)."""
        ...

    def due_promise_views(self, day: float) -> Iterable[PromiseView]:
        """Pending views whose deadline is before ``day``, by (due, resident, promise)."""
        ...

    def get_goal(self, resident: str, goal: str) -> GoalRecord | None: ...


#: How the fold moves trust: (resident, source, new value, why, event id, day).
TrustMove = Callable[[str, str, float, str, str, float], None]
TrustRead = Callable[[str, str], float]


class PromiseFold:
    """The promise and goal side of one event's outcome (called by ``ingest``)."""

    def __init__(
        self,
        reader: PromiseReader,
        promises: dict[str, PromiseRecord],
        views: dict[tuple[str, str], PromiseView],
        goals: dict[tuple[str, str], GoalRecord],
        changes: list[Change],
        trust: tuple[TrustRead, TrustMove],
        steps: tuple[float, float],
    ) -> None:
        self.reader, self.promises, self.views, self.goals = reader, promises, views, goals
        self.changes = changes
        self.read_trust, self.move_trust = trust
        self.kept_step, self.broken_step = steps

    # ------------------------------------------------------------------ reads
    def record(self, promise: str) -> PromiseRecord | None:
        found = self.promises.get(promise)
        return found if found is not None else self.reader.get_promise(promise)

    def view(self, resident: str, promise: str) -> PromiseView | None:
        found = self.views.get((resident, promise))
        return found if found is not None else self.reader.get_promise_view(resident, promise)

    # ------------------------------------------------------------------ moves
    def _move(
        self, before: PromiseView | None, record: PromiseRecord, resident: str, how: str,
        source: str | None, event_id: str, day: float, evidence_id: str | None,
    ) -> None:  # fmt: skip
        old = None if before is None else before.state
        new = PROMISE_TRANSITIONS.get((old, how))
        if new is None:
            return
        learned = Learned(how.split(" ", 1)[0])
        view = PromiseView(
            resident=resident, promise=record.promise, promiser=record.promiser,
            action=record.action, state=new, how=learned,
            source=source if learned is Learned.TOLD else None, since=day,
            due=record.by if new is PromiseState.PENDING else None,
        )  # fmt: skip
        self.views[(resident, record.promise)] = view
        told = learned is Learned.TOLD
        self.changes.append(
            Change(
                resident=resident, root=promise_root(record.promise), kind=ChangeKind.PROMISE,
                confidence_before=None if before is None else 100, confidence_after=100,
                state_before=State.INFLUENCING, state_after=State.INFLUENCING,
                value_before=None if old is None else str(old), value_after=str(new),
                source_kind=SourceKind.HEARSAY if told else SourceKind.FIRSTHAND,
                source_resident_id=source if told else None, event_id=event_id,
                evidence_id=evidence_id, day=day, subject_before=None,
                subject_after=record.subject, detail=str(learned),
            )
        )  # fmt: skip
        if resident == record.promiser or old is None:
            return
        if new is PromiseState.KEPT:
            step, why = self.kept_step, "promise_kept"
        elif old is PromiseState.PENDING:  # overdue or broken: learned once per promise
            step, why = -self.broken_step, "promise_broken"
        else:
            return
        current = self.read_trust(resident, record.promiser)
        self.move_trust(resident, record.promiser, current + step, why, event_id, day)

    def sweep(self, day: float, event_id: str) -> None:
        """Views whose deadline passed before ``day`` become overdue (on the deadline)."""
        for due in self.reader.due_promise_views(day):
            current = self.view(due.resident, due.promise)
            if current is None or current.state is not PromiseState.PENDING:
                continue
            record = self.record(due.promise)
            assert record is not None and record.by is not None
            self._move(current, record, due.resident, "deadline", None, event_id, record.by, None)

    def make(self, event: Promise) -> None:
        if self.record(event.promise) is not None:
            raise InvalidEvent(f"promise {event.promise!r} was already made")
        record = PromiseRecord(
            promise=event.promise, promiser=event.promiser, to=event.to, action=event.action,
            subject=event.subject, made_day=event.day, by=event.by, event_id=event.event_id,
        )  # fmt: skip
        self.promises[event.promise] = record
        for party in (event.promiser, *event.to):
            self._move(None, record, party, "made", None, event.event_id, event.day, None)

    def seen(self, event: Act, evidence_ids: dict[str, str]) -> None:
        """A completed act keeps one promise: the promiser's own open promise of that action
        that is due first (no deadline last, then the earliest made, then by id). Every party
        of it who saw the act (the actor and the act's witnesses) learns it kept."""
        if event.status is not ActStatus.COMPLETED:
            return
        first: tuple[tuple[bool, float, float, str], PromiseRecord] | None = None
        for stored in self.reader.open_promise_views(event.actor, event.action):
            current = self.view(stored.resident, stored.promise)
            record = self.record(stored.promise)
            if current is None or record is None or current.state is PromiseState.KEPT:
                continue
            key = (record.by is None, record.by or 0.0, record.made_day, record.promise)
            if first is None or key < first[0]:
                first = (key, record)
        if first is None:
            return
        record = first[1]
        seers = {event.actor, *event.witnesses}
        for party in (record.promiser, *record.to):
            current = self.view(party, record.promise)
            if party not in seers or current is None:
                continue
            self._move(
                current, record, party, "seen", None, event.event_id, event.day,
                evidence_ids.get(party),
            )  # fmt: skip

    def told(self, event: Utterance, hearers: Iterable[str], evidence_ids: dict[str, str]) -> None:
        """An utterance on ``promise:<id>`` reports it kept or broken to each hearer."""
        promise = event.claim.root.removeprefix("promise:")
        record = self.record(promise)
        if record is None:
            return  # a rumour about no promise the world knows: a belief only
        how = f"told {event.claim.value}"
        for who in hearers:
            current = self.view(who, promise)
            if current is None:
                continue  # only the parties hold a view of a promise
            self._move(
                current, record, who, how, event.speaker, event.event_id, event.day,
                evidence_ids.get(who),
            )  # fmt: skip

    def goal(self, event: Goal) -> None:
        key = (event.resident, event.goal)
        before = self.goals.get(key) or self.reader.get_goal(*key)
        old = None if before is None else before.state
        new = GOAL_TRANSITIONS.get((old, event.op))
        if new is None:
            state = "no such goal" if old is None else f"the goal is {old}"
            raise InvalidEvent(
                f"goal {event.goal!r} of {event.resident!r}: cannot be {event.op} ({state})"
            )
        if before is None or event.op is GoalOp.SET:  # a new goal, or one set anew
            assert event.subject is not None  # (required for set: checked on parsing)
            subject, set_day, prev_subject = event.subject, event.day, None
        else:
            if event.day < before.set_day:  # (a late event: no change before the goal was set)
                raise InvalidEvent(
                    f"goal {event.goal!r} of {event.resident!r}: cannot be {event.op} on day "
                    f"{event.day:g}, before it was set (day {before.set_day:g})"
                )
            subject = before.subject if event.subject is None else event.subject
            set_day = before.set_day
            changed = event.op is GoalOp.CHANGED
            prev_subject = before.subject if changed else before.prev_subject
        after = GoalRecord(
            resident=event.resident, goal=event.goal, subject=subject, state=new,
            set_day=set_day, day=event.day, prev_subject=prev_subject,
        )  # fmt: skip
        self.goals[key] = after
        self.changes.append(
            Change(
                resident=event.resident, root=goal_root(event.goal), kind=ChangeKind.GOAL,
                confidence_before=None if before is None else 100, confidence_after=100,
                state_before=State.INFLUENCING, state_after=State.INFLUENCING,
                value_before=None if old is None else str(old), value_after=str(new),
                source_kind=SourceKind.FIRSTHAND, source_resident_id=None,
                event_id=event.event_id, day=event.day,
                subject_before=None if before is None else before.subject,
                subject_after=subject, detail=str(event.op),
            )
        )  # fmt: skip


def is_promise_report(event: WorldEvent) -> bool:
    """An utterance that tells its hearers a promise was kept or broken."""
    return isinstance(event, Utterance) and event.claim.root.startswith("promise:")
