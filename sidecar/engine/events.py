"""World events: what the game says happened, and the evidence each one gives residents.

The event log is the world's history; a belief is one resident's reading of it. There is one
small frozen class per event kind (h11 style): :class:`Observe`, :class:`Say`,
:class:`Announce`, :class:`Act`, :class:`Intervene`, :class:`Tick`, :class:`Trust`,
:class:`Propose` (whose edits are :class:`Edit` values), :class:`Register`,
:class:`Promise` and :class:`Goal`. Each checks and normalizes its own
fields on construction and raises :class:`~.model.InvalidEvent` naming the field, so an event
that exists is well typed: nothing ill-typed reaches the engine. :data:`WorldEvent` is their
union.

:func:`parse_event` builds one from a plain mapping (decoded msgpack or JSON); ``to_dict``
gives its canonical mapping back for the log. Parsing the canonical mapping again gives an
equal event, which is what makes a replay of the log rebuild every belief exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, TypeAlias

from .model import Claim, ContractViolation, InvalidEvent, Value, check_value, unique
from .roots import RootSchema, parse_schema
from .texts import parse_texts, wire_text

__all__ = [
    "ACT_STATUSES",
    "GOAL_OPS",
    "INTERVENTION_OPS",
    "MAX_ID_LEN",
    "MAX_LIST_LEN",
    "MAX_TEXT_LEN",
    "NAME_LANGS",
    "PROMISE_REPORTS",
    "Act",
    "ActStatus",
    "Announce",
    "BaseEvent",
    "ClaimEvent",
    "Edit",
    "EventKind",
    "Goal",
    "GoalOp",
    "Intervene",
    "Observe",
    "Op",
    "Promise",
    "Propose",
    "Register",
    "Say",
    "Schema",
    "Tick",
    "Trust",
    "Utterance",
    "WorldEvent",
    "action_root",
    "goal_root",
    "parse_event",
    "promise_root",
]

MAX_ID_LEN = 200
MAX_TEXT_LEN = 4000
MAX_LIST_LEN = 1000
MAX_EDITS = 200


class EventKind(StrEnum):
    OBSERVE = "observe"
    SAY = "say"
    ANNOUNCE = "announce"
    ACT = "act"
    INTERVENE = "intervene"
    TICK = "tick"
    TRUST = "trust"  # the game sets Trust(resident ← source, topic) explicitly
    PROPOSE = "propose"  # an external memory organizer proposes text edits to beliefs
    SCHEMA = "schema"  # the game declares the world's root schema (sidecar/engine/roots.py)
    REGISTER = "register"  # the game names its residents (and actions) per language
    PROMISE = "promise"  # a resident promises others to do an action (sidecar/engine/promises.py)
    GOAL = "goal"  # the game sets, changes, achieves or abandons a resident's goal


class ActStatus(StrEnum):
    COMPLETED = "completed"
    REJECTED = "rejected"
    INTERRUPTED = "interrupted"
    REPLACED = "replaced"


class Op(StrEnum):
    """A player intervention on one resident's memory."""

    IMPLANT = "implant"
    DISTORT = "distort"
    SUPPRESS = "suppress"
    SOFTEN = "soften"


class GoalOp(StrEnum):
    """What a ``goal`` event does to one of a resident's goals."""

    SET = "set"
    CHANGED = "changed"
    ACHIEVED = "achieved"
    ABANDONED = "abandoned"


ACT_STATUSES = frozenset(ActStatus)
INTERVENTION_OPS = frozenset(Op)
GOAL_OPS = frozenset(GoalOp)
#: The values an utterance on a ``promise:<id>`` root may carry: a report that it was kept
#: or broken (how a resident is told; see sidecar/engine/promises.py).
PROMISE_REPORTS = ("kept", "broken")


def promise_root(promise: str) -> str:
    """The root a promise's change records (and reports about it) bear on."""
    return f"promise:{promise}"


def goal_root(goal: str) -> str:
    """The root a goal's change records bear on."""
    return f"goal:{goal}"


def action_root(actor: str, action: str) -> str:
    """The claim root an ``act`` event bears on; its value is always the action's status."""
    return f"action:{actor}:{action}"


# --------------------------------------------------------------------------- field checks
# Each takes a field's raw value and its wire name, and returns it checked and normalized
# (or raises InvalidEvent naming the field). Absent and nil mean the same thing on the wire.


def _text(value: object, key: str, *, required: bool, limit: int = MAX_TEXT_LEN) -> str | None:
    if value is None:
        if required:
            raise InvalidEvent(f"field '{key}' is required")
        return None
    if not isinstance(value, str):
        raise InvalidEvent(f"field '{key}' must be a string, not {_type(value)}")
    if required and not value:
        raise InvalidEvent(f"field '{key}' must not be empty")
    if len(value) > limit:
        raise InvalidEvent(f"field '{key}' is longer than {limit} characters")
    if "\x00" in value:
        raise InvalidEvent(f"field '{key}' must not contain NUL characters")
    return value


def _texts(value: object, key: str, *, required: bool) -> str | None:
    """A text the game may give in several languages (see :mod:`.texts`)."""
    if isinstance(value, Mapping):
        return parse_texts(value, key, MAX_TEXT_LEN)
    text = _text(value, key, required=required)
    return parse_texts(text, key, MAX_TEXT_LEN)


def _required_text(value: object, key: str, limit: int = MAX_TEXT_LEN) -> str:
    checked = _text(value, key, required=True, limit=limit)
    assert checked is not None
    return checked


def _ident(value: object, key: str) -> str:
    checked = _required_text(value, key, MAX_ID_LEN)
    if checked == "*":
        raise InvalidEvent(f"field '{key}' must not be '*'")
    return checked


def _optional_ident(value: object, key: str) -> str | None:
    return None if value is None else _ident(value, key)


def _id_list(value: object, key: str, *, required: bool) -> tuple[str, ...]:
    if value is None:
        if required:
            raise InvalidEvent(f"field '{key}' is required")
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidEvent(f"field '{key}' must be a list of strings, not {_type(value)}")
    if len(value) > MAX_LIST_LEN:
        raise InvalidEvent(f"field '{key}' has more than {MAX_LIST_LEN} entries")
    items = unique([_ident(one, key) for one in value])
    if required and not items:
        raise InvalidEvent(f"field '{key}' must not be empty")
    return items


def _number(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidEvent(f"field '{key}' must be a number, not {_type(value)}")
    return float(value)


def _day(value: object) -> float:
    if value is None:
        raise InvalidEvent("field 'day' is required")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidEvent("field 'day' must be a number of game days")
    day = float(value)
    if not math.isfinite(day) or day < 0 or day > 1e12:
        raise InvalidEvent("field 'day' must be a finite number between 0 and 1e12")
    return day


def _weight(value: object, key: str) -> float | None:
    if value is None:
        return None
    number = _number(value, key)
    if not math.isfinite(number) or not 0 <= number <= 1e6:
        raise InvalidEvent(f"field '{key}' must be a finite number ≥ 0")
    return number


def _flag(value: object, key: str) -> bool:
    if value is not None and not isinstance(value, bool):
        raise InvalidEvent(f"field '{key}' must be a boolean")
    return bool(value)


def _type(value: object) -> str:
    """How a wrong value is named in a message: its wire type, not Python's."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a map"
    return type(value).__name__


def _claim(value: object, *, value_required: bool = True) -> Claim:
    """The wire ``claim`` map; without a value (suppress/soften) the value is ``""``."""
    if not isinstance(value, Mapping):
        raise InvalidEvent("field 'claim' must be a map with 'root' and 'value'")
    root = _required_text(value.get("root"), "claim.root", MAX_ID_LEN)
    raw = value.get("value")
    if raw is None:
        if value_required:
            raise InvalidEvent("field 'claim.value' is required")
        return Claim(root=root, value="")
    if value.get("interpretation") is not None:
        raise ContractViolation(
            "interpretation_as_value",
            "a claim must not carry an interpretation; it is never a fact",
        )
    checked: Value = check_value(raw, "claim.value")
    if isinstance(checked, str) and len(checked) > MAX_TEXT_LEN:
        raise InvalidEvent("field 'claim.value' is too long")
    return Claim(root=root, value=checked)


def _set(obj: object, name: str, value: object) -> None:
    """Store a normalized field value on a frozen instance (inside ``__post_init__`` only)."""
    object.__setattr__(obj, name, value)


# --------------------------------------------------------------------------- event classes


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseEvent:
    """Fields every event has. Never built itself; see :data:`WorldEvent`."""

    kind: ClassVar[EventKind]
    event_id: str
    day: float

    def __post_init__(self) -> None:
        _set(self, "event_id", _required_text(self.event_id, "event_id", MAX_ID_LEN))
        _set(self, "day", _day(self.day))

    def mentioned_residents(self) -> tuple[str, ...]:
        """Every resident this event names, in a stable order (the world learns of them)."""
        return ()

    def hearers(self) -> tuple[str, ...]:
        """The residents this event names as witnesses, listeners, overhearers or audience."""
        return ()

    def to_dict(self) -> dict[str, Any]:
        """The canonical mapping stored in the world log (only fields of this kind)."""
        return {"event_id": self.event_id, "day": self.day, "kind": str(self.kind)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick(BaseEvent):
    """Time passed: hearsay ages up to ``day``."""

    kind: ClassVar[EventKind] = EventKind.TICK


@dataclass(frozen=True, slots=True, kw_only=True)
class Trust(BaseEvent):
    """The game sets Trust(``resident`` ← ``source``, ``topic``) to ``value``."""

    kind: ClassVar[EventKind] = EventKind.TRUST
    resident: str
    source: str
    value: float
    topic: str | None = None

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        resident, source = _ident(self.resident, "resident"), _ident(self.source, "source")
        if resident == source:
            raise InvalidEvent("a resident's trust in itself is not modelled")
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise InvalidEvent("field 'value' must be a trust between 0 and 1")
        _set(self, "resident", resident)
        _set(self, "source", source)
        _set(self, "value", float(value))
        _set(self, "topic", _text(self.topic, "topic", required=False, limit=MAX_ID_LEN))

    def mentioned_residents(self) -> tuple[str, ...]:
        return (self.resident, self.source)

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        out |= {"resident": self.resident, "source": self.source, "value": self.value}
        if self.topic is not None:
            out["topic"] = self.topic
        return out


def _text_list(value: object, key: str) -> tuple[str, ...] | None:
    """An edit's list of roots or tags: kept as given (its order is the log's)."""
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise InvalidEvent(f"field '{key}' must be a list of strings, not {_type(value)}")
    if len(value) > MAX_LIST_LEN:
        raise InvalidEvent(f"field '{key}' has more than {MAX_LIST_LEN} entries")
    return tuple(_required_text(one, key, MAX_ID_LEN) for one in value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """One edit of a ``propose`` event. ``None`` means the edit does not touch that field.

    The guard (:mod:`.guard`) decides whether it is accepted; here only its types are checked,
    so a judgement can never trip over a wrong type.
    """

    root: str
    subject: str | None = None
    interpretation: str | None = None
    value: Value | None = None
    source_kind: str | None = None
    source: str | None = None
    state: str | None = None
    confidence: float | None = None
    merge: tuple[str, ...] | None = None
    people: tuple[str, ...] | None = None
    places: tuple[str, ...] | None = None
    topics: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _set(self, "root", _required_text(self.root, "edits.root", MAX_ID_LEN))
        for name in ("subject", "interpretation"):
            _set(self, name, _text(getattr(self, name), f"edits.{name}", required=False))
        if self.value is not None:
            checked = check_value(self.value, "field 'edits.value'")
            if isinstance(checked, str) and len(checked) > MAX_TEXT_LEN:
                raise InvalidEvent("field 'edits.value' is too long")
        for name in ("source_kind", "source", "state"):
            _text(getattr(self, name), f"edits.{name}", required=False, limit=MAX_ID_LEN)
        if self.confidence is not None:
            if not math.isfinite(_number(self.confidence, "edits.confidence")):
                raise InvalidEvent("field 'edits.confidence' must be a finite number")
        for name in ("merge", "people", "places", "topics"):
            _set(self, name, _text_list(getattr(self, name), f"edits.{name}"))

    @classmethod
    def parse(cls, data: object) -> Edit:
        if not isinstance(data, Mapping):
            raise InvalidEvent("each edit must be a map with at least 'root'")
        fields: dict[str, Any] = {name: data.get(name) for name in _EDIT_FIELDS}
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """The fields this edit sets, sorted by name, lists as lists (the log's form)."""
        out: dict[str, Any] = {}
        for name in sorted(_EDIT_FIELDS):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out


_EDIT_FIELDS = (
    "root", "subject", "interpretation", "value", "source_kind", "source", "state",
    "confidence", "merge", "people", "places", "topics",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Propose(BaseEvent):
    """An external memory organizer proposes text edits to one resident's beliefs."""

    kind: ClassVar[EventKind] = EventKind.PROPOSE
    resident: str
    edits: tuple[Edit, ...]

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        _set(self, "resident", _ident(self.resident, "resident"))
        edits = self.edits
        if not isinstance(edits, list | tuple) or not edits or len(edits) > MAX_EDITS:
            raise InvalidEvent(f"field 'edits' must be a list of 1 to {MAX_EDITS} edits")
        _set(self, "edits", tuple(e if isinstance(e, Edit) else Edit.parse(e) for e in edits))

    def mentioned_residents(self) -> tuple[str, ...]:
        return (self.resident,)

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        out |= {"resident": self.resident, "edits": [e.to_dict() for e in self.edits]}
        return out


#: Languages a registered name may be given in (the narrative's languages).
NAME_LANGS = ("en", "zh-Hant")
Names: TypeAlias = tuple[tuple[str, Mapping[str, str]], ...]


def _names(value: object, key: str, id_key: str) -> Names:
    """``[{<id_key>: id, names: {lang: text}}]`` → ((id, {lang: text}), ...); a later entry
    for the same id replaces an earlier one; languages in sorted order."""
    if value is None:
        return ()
    if isinstance(value, tuple) and all(isinstance(v, tuple) for v in value):
        value = [{id_key: i, "names": n} for i, n in value]  # already parsed (replace())
    if not isinstance(value, list | tuple) or len(value) > MAX_LIST_LEN:
        raise InvalidEvent(f"field '{key}' must be a list of at most {MAX_LIST_LEN} entries")
    out: dict[str, dict[str, str]] = {}
    for entry in value:
        if not isinstance(entry, Mapping):
            raise InvalidEvent(f"each entry of '{key}' must be a map with '{id_key}' and 'names'")
        ident = _ident(entry.get(id_key), id_key)
        names = entry.get("names")
        if not isinstance(names, Mapping) or not names:
            raise InvalidEvent(f"'{key}' entry {ident!r} needs 'names': a map of language to text")
        clean: dict[str, str] = {}
        for lang in sorted(names, key=str):
            if lang not in NAME_LANGS:
                raise InvalidEvent(
                    f"names may be given in {', '.join(NAME_LANGS)}, not {str(lang)!r:.40}"
                )
            clean[lang] = _required_text(names[lang], f"names.{lang}", MAX_ID_LEN)
        out[ident] = clean
    return tuple(out.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Register(BaseEvent):
    """The game names residents (``names``) and labels actions (``labels``) per language."""

    kind: ClassVar[EventKind] = EventKind.REGISTER
    names: Names = ()
    labels: Names = ()

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        _set(self, "names", _names(self.names, "residents", "resident"))
        _set(self, "labels", _names(self.labels, "actions", "action"))
        if not self.names and not self.labels:
            raise InvalidEvent("a register event needs 'residents' or 'actions'")

    def mentioned_residents(self) -> tuple[str, ...]:
        return tuple(resident for resident, _ in self.names)

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        if self.names:
            out["residents"] = [{"resident": r, "names": dict(n)} for r, n in self.names]
        if self.labels:
            out["actions"] = [{"action": a, "names": dict(n)} for a, n in self.labels]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Act(BaseEvent):
    """A resident's action ended with ``status``; its claim is derived, never given."""

    kind: ClassVar[EventKind] = EventKind.ACT
    actor: str
    action: str
    status: ActStatus
    witnesses: tuple[str, ...] = ()
    subject: str | None = None
    #: Why a rejected or interrupted act failed, in the game's words ("the rope snapped").
    reason: str | None = None

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        _set(self, "actor", _ident(self.actor, "actor"))
        _set(self, "action", _ident(self.action, "action"))
        status = self.status
        if not isinstance(status, str) or status not in ACT_STATUSES:
            raise InvalidEvent(
                f"field 'status' must be one of {', '.join(ActStatus)}, not {status!r}"
            )
        _set(self, "status", ActStatus(status))
        _set(self, "witnesses", _id_list(self.witnesses, "witnesses", required=False))
        _set(self, "subject", _texts(self.subject, "subject", required=False))
        _set(self, "reason", _texts(self.reason, "reason", required=False))

    @property
    def claim(self) -> Claim:
        return Claim(root=action_root(self.actor, self.action), value=str(self.status))

    def mentioned_residents(self) -> tuple[str, ...]:
        return unique((self.actor, *self.witnesses))

    def hearers(self) -> tuple[str, ...]:
        return self.witnesses

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        out |= {
            "actor": self.actor,
            "action": self.action,
            "status": str(self.status),
            "witnesses": list(self.witnesses),
        }
        if self.subject is not None:
            out["subject"] = wire_text(self.subject)
        if self.reason is not None:
            out["reason"] = wire_text(self.reason)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Intervene(BaseEvent):
    """The player tampers with one resident's memory of ``claim.root``.

    ``suppress`` and ``soften`` act on the belief whatever its value: their claim keeps the
    root only (its value is ``""``).
    """

    kind: ClassVar[EventKind] = EventKind.INTERVENE
    resident: str
    op: Op
    claim: Claim
    subject: str | None = None

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        _set(self, "resident", _ident(self.resident, "resident"))
        op = self.op
        if not isinstance(op, str) or op not in INTERVENTION_OPS:
            raise InvalidEvent(f"field 'op' must be one of {', '.join(sorted(Op))}")
        op = Op(op)
        _set(self, "op", op)
        if not isinstance(self.claim, Claim):
            raise InvalidEvent("field 'claim' must be a claim")
        needs_value = op in (Op.IMPLANT, Op.DISTORT)
        if not needs_value and self.claim.value != "":
            _set(self, "claim", Claim(root=self.claim.root, value=""))
        _set(self, "subject", _texts(self.subject, "subject", required=needs_value))

    def mentioned_residents(self) -> tuple[str, ...]:
        return (self.resident,)

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        claim: dict[str, Any] = {"root": self.claim.root}
        if self.op in (Op.IMPLANT, Op.DISTORT):
            claim["value"] = self.claim.value
        out |= {"resident": self.resident, "op": str(self.op), "claim": claim}
        if self.subject is not None:
            out["subject"] = wire_text(self.subject)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimEvent(BaseEvent):
    """Fields of the events that carry a claim with its tags: observe, say, announce."""

    claim: Claim
    subject: str
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    importance: float | None = None
    emotion: float | None = None
    mutable: bool = False

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        if not isinstance(self.claim, Claim):
            raise InvalidEvent("field 'claim' must be a claim")
        _set(self, "subject", _texts(self.subject, "subject", required=True))
        for name in ("people", "places", "topics"):
            _set(self, name, _id_list(getattr(self, name), name, required=False))
        _set(self, "importance", _weight(self.importance, "importance"))
        _set(self, "emotion", _weight(self.emotion, "emotion"))
        _set(self, "mutable", _flag(self.mutable, "claim.mutable"))

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        claim: dict[str, Any] = {"root": self.claim.root, "value": self.claim.value}
        if self.mutable:
            claim["mutable"] = True
        out |= {"claim": claim, "subject": wire_text(self.subject)}
        return out

    def _tags(self, out: dict[str, Any]) -> dict[str, Any]:
        if self.importance is not None:
            out["importance"] = self.importance
        if self.emotion is not None:
            out["emotion"] = self.emotion
        for name in ("people", "places", "topics"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Observe(ClaimEvent):
    """Residents saw something: firsthand evidence for every witness."""

    kind: ClassVar[EventKind] = EventKind.OBSERVE
    witnesses: tuple[str, ...]
    interpretations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ClaimEvent.__post_init__(self)
        witnesses = _id_list(self.witnesses, "witnesses", required=True)
        _set(self, "witnesses", witnesses)
        raw = self.interpretations
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise InvalidEvent("field 'interpretations' must be a map of resident to text")
        out: dict[str, str] = {}
        for resident, text in raw.items():
            if not isinstance(resident, str) or resident not in witnesses:
                raise InvalidEvent("interpretations may only be given for witnesses")
            found = _texts(text, "interpretation", required=True)
            assert found is not None  # required
            out[resident] = found
        _set(self, "interpretations", dict(sorted(out.items())))

    def mentioned_residents(self) -> tuple[str, ...]:
        return self.witnesses

    def hearers(self) -> tuple[str, ...]:
        return self.witnesses

    def to_dict(self) -> dict[str, Any]:
        out = ClaimEvent.to_dict(self)
        out["witnesses"] = list(self.witnesses)
        if self.interpretations:
            out["interpretations"] = {r: wire_text(t) for r, t in self.interpretations.items()}
        return self._tags(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Utterance(ClaimEvent):
    """Fields of say and announce: hearsay from ``speaker``, on ``topic`` if given."""

    speaker: str
    topic: str | None = None

    def __post_init__(self) -> None:
        ClaimEvent.__post_init__(self)
        _set(self, "speaker", _ident(self.speaker, "speaker"))
        # "*" is no id: the topic leads `topics`, whose entries must parse again on replay.
        topic = _text(self.topic, "topic", required=False, limit=MAX_ID_LEN)
        if topic == "*":
            raise InvalidEvent("field 'topic' must not be '*'")
        _set(self, "topic", topic)
        if topic:  # first: trust moves on a hearsay belief's first topic, so it must be this one
            _set(self, "topics", (topic, *(t for t in self.topics if t != topic)))

    def _spoken(self, out: dict[str, Any]) -> dict[str, Any]:
        if self.topic is not None:
            out["topic"] = self.topic
        return self._tags(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Say(Utterance):
    """One resident told ``listeners`` (and was overheard by ``overhearers``)."""

    kind: ClassVar[EventKind] = EventKind.SAY
    listeners: tuple[str, ...]
    overhearers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        Utterance.__post_init__(self)
        listeners = _id_list(self.listeners, "listeners", required=True)
        overhearers = tuple(
            o for o in _id_list(self.overhearers, "overhearers", required=False)
            if o not in listeners
        )  # fmt: skip
        if self.speaker in listeners or self.speaker in overhearers:
            raise InvalidEvent("a speaker cannot be its own listener")
        _set(self, "listeners", listeners)
        _set(self, "overhearers", overhearers)

    def mentioned_residents(self) -> tuple[str, ...]:
        return unique((self.speaker, *self.listeners, *self.overhearers))

    def hearers(self) -> tuple[str, ...]:
        return (*self.listeners, *self.overhearers)

    def to_dict(self) -> dict[str, Any]:
        out = ClaimEvent.to_dict(self)
        out |= {"speaker": self.speaker, "listeners": list(self.listeners)}
        if self.overhearers:
            out["overhearers"] = list(self.overhearers)
        return self._spoken(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Announce(Utterance):
    """One resident told ``audience``; ``None`` is everyone the world knows."""

    kind: ClassVar[EventKind] = EventKind.ANNOUNCE
    audience: tuple[str, ...] | None

    def __post_init__(self) -> None:
        Utterance.__post_init__(self)
        raw: object = self.audience
        if raw is None:
            return
        if raw == "*":
            _set(self, "audience", None)
            return
        audience = _id_list(raw, "audience", required=True)
        audience = tuple(a for a in audience if a != self.speaker)
        if not audience:
            # Its canonical form (an empty list) would not parse again, breaking rebuild.
            raise InvalidEvent("an announcement needs an audience besides its speaker")
        _set(self, "audience", audience)

    def mentioned_residents(self) -> tuple[str, ...]:
        return unique((self.speaker, *(self.audience or ())))

    def hearers(self) -> tuple[str, ...]:
        return self.audience or ()

    def to_dict(self) -> dict[str, Any]:
        out = ClaimEvent.to_dict(self)
        out["speaker"] = self.speaker
        out["audience"] = "*" if self.audience is None else list(self.audience)
        return self._spoken(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Promise(BaseEvent):
    """``promiser`` promised ``to`` to do ``action`` (``subject`` says it), by day ``by``.

    Its own event kind, not a field of ``say``: a promise is a commitment that each party
    tracks (pending, kept, overdue, broken), never a claim about the world to believe or
    doubt, so it makes no belief; what the parties learn of its keeping comes later, from
    evidence (sidecar/engine/promises.py).
    """

    kind: ClassVar[EventKind] = EventKind.PROMISE
    promise: str
    promiser: str
    to: tuple[str, ...]
    action: str
    subject: str
    by: float | None = None

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        _set(self, "promise", _ident(self.promise, "promise"))
        _set(self, "promiser", _ident(self.promiser, "promiser"))
        to = _id_list(self.to, "to", required=True)
        if self.promiser in to:
            raise InvalidEvent("a resident cannot promise itself")
        _set(self, "to", to)
        _set(self, "action", _ident(self.action, "action"))
        subject = _texts(self.subject, "subject", required=True)
        if not subject:
            raise InvalidEvent("field 'subject' must not be empty")
        _set(self, "subject", subject)
        if self.by is not None:
            by = self.by
            if isinstance(by, bool) or not isinstance(by, int | float):
                raise InvalidEvent("field 'by' must be a number of game days")
            by = float(by)
            if not math.isfinite(by) or by > 1e12:
                raise InvalidEvent("field 'by' must be a finite number of game days up to 1e12")
            if by < self.day:
                raise InvalidEvent("field 'by' (the deadline) must not be before the event's day")
            _set(self, "by", by)

    def mentioned_residents(self) -> tuple[str, ...]:
        return unique((self.promiser, *self.to))

    def hearers(self) -> tuple[str, ...]:
        return self.to

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        out |= {
            "promise": self.promise, "promiser": self.promiser, "to": list(self.to),
            "action": self.action, "subject": wire_text(self.subject),
        }  # fmt: skip
        if self.by is not None:
            out["by"] = self.by
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Goal(BaseEvent):
    """The game sets, changes, achieves or abandons ``resident``'s goal ``goal``.

    ``subject`` (what the goal is: a string or a language map, as every subject) is required to ``set`` or ``changed``; whether the op
    fits the goal's current state is the engine's to judge (sidecar/engine/promises.py).
    """

    kind: ClassVar[EventKind] = EventKind.GOAL
    resident: str
    goal: str
    op: GoalOp
    subject: str | None = None

    def __post_init__(self) -> None:
        BaseEvent.__post_init__(self)
        _set(self, "resident", _ident(self.resident, "resident"))
        _set(self, "goal", _ident(self.goal, "goal"))
        op = self.op
        if not isinstance(op, str) or op not in GOAL_OPS:
            raise InvalidEvent(f"field 'op' must be one of {', '.join(GoalOp)}")
        _set(self, "op", GoalOp(op))
        needs = self.op in (GoalOp.SET, GoalOp.CHANGED)
        _set(self, "subject", _texts(self.subject, "subject", required=needs))

    def mentioned_residents(self) -> tuple[str, ...]:
        return (self.resident,)

    def to_dict(self) -> dict[str, Any]:
        out = BaseEvent.to_dict(self)
        out |= {"resident": self.resident, "goal": self.goal, "op": str(self.op)}
        if self.subject is not None:
            out["subject"] = wire_text(self.subject)
        return out


#: Any one world event.
@dataclass(frozen=True, slots=True, kw_only=True)
class Schema(BaseEvent):
    """The game declares the world's root schema; it replaces any earlier one."""

    kind: ClassVar[EventKind] = EventKind.SCHEMA
    schema: RootSchema

    def to_dict(self) -> dict[str, Any]:
        return BaseEvent.to_dict(self) | self.schema.to_dict()


WorldEvent: TypeAlias = (
    Observe
    | Say
    | Announce
    | Act
    | Intervene
    | Tick
    | Trust
    | Propose
    | Schema
    | Register
    | Promise
    | Goal
)

# --------------------------------------------------------------------------- parsing

#: Fields that would let an utterance pose as firsthand evidence, or firsthand as hearsay.
_FIRSTHAND_ONLY = ("witnesses", "interpretations")
_SOURCE_FIELDS = ("source", "source_resident_id", "speaker")


def _guard(kind: EventKind, data: Mapping[str, Any]) -> None:
    """The epistemic guard's structural checks; each violation names a reason code."""
    if kind in (EventKind.SAY, EventKind.ANNOUNCE):
        if data.get("source_kind") not in (None, "hearsay") or any(
            data.get(f) is not None for f in _FIRSTHAND_ONLY
        ):
            raise ContractViolation(
                "utterance_as_firsthand",
                "an utterance or announcement only ever makes hearsay, never firsthand evidence",
            )
        if not data.get("speaker"):
            raise ContractViolation("hearsay_without_source", "hearsay must name its speaker")
    if kind in (EventKind.OBSERVE, EventKind.ACT, EventKind.INTERVENE):
        if any(data.get(f) is not None for f in _SOURCE_FIELDS) or data.get("source_kind") not in (
            None,
            "firsthand" if kind is not EventKind.INTERVENE else "implanted",
        ):
            raise ContractViolation(
                "firsthand_with_source",
                "firsthand and implanted evidence never name a source resident",
            )
    claim = data.get("claim")
    root = claim.get("root") if isinstance(claim, Mapping) else None
    if kind is EventKind.ACT and claim is not None:
        raise ContractViolation(
            "act_claim_given",
            "an act event must not carry a claim: it is derived from the status, so a "
            "rejected, interrupted or replaced action can never be recorded as completed",
        )
    if kind is EventKind.OBSERVE and isinstance(root, str) and root.startswith("action:"):
        raise ContractViolation(
            "action_claim_outside_act", "action results enter the world only through 'act' events"
        )
    if isinstance(root, str) and root.startswith("promise:"):
        if kind in (EventKind.OBSERVE, EventKind.INTERVENE):
            raise ContractViolation(
                "promise_claim_outside_report",
                "a promise's keeping is learned by seeing the promised act or by being told "
                "(say/announce on promise:<id> with value kept or broken), never observed "
                "or implanted as a claim",
            )
        value = claim.get("value") if isinstance(claim, Mapping) else None
        if kind in (EventKind.SAY, EventKind.ANNOUNCE) and value not in PROMISE_REPORTS:
            raise ContractViolation(
                "promise_report_value",
                "an utterance on promise:<id> reports it 'kept' or 'broken', nothing else",
            )
    if kind is EventKind.ANNOUNCE and isinstance(root, str) and root.startswith("relation:"):
        raise ContractViolation(
            "public_relationship",
            "a public announcement cannot create a private relationship belief",
        )
    if isinstance(root, str) and root.startswith("relation:"):
        target = root.split(":", 2)[1]
        holders = [data.get("resident")]
        for key in ("witnesses", "listeners", "overhearers"):
            if isinstance(data.get(key), list | tuple):
                holders += data[key]
        if target in holders:
            raise ContractViolation(
                "relation_to_self",
                f"relation:{target}:… would be {target}'s relationship with itself",
            )
    if kind is EventKind.OBSERVE and isinstance(claim, Mapping):
        interpretations = data.get("interpretations")
        value = claim.get("value")
        if isinstance(interpretations, Mapping) and isinstance(value, str):
            if any(value == text for text in interpretations.values() if isinstance(text, str)):
                raise ContractViolation(
                    "interpretation_as_value", "an interpretation never becomes a claim value"
                )


def _mutable(data: Mapping[str, Any]) -> Any:
    claim = data.get("claim")
    return claim.get("mutable") if isinstance(claim, Mapping) else None


def parse_event(data: Mapping[str, Any]) -> WorldEvent:
    """Check a decoded event mapping and build its event.

    Unknown keys are ignored; absent and ``None`` mean the same. Raises
    :class:`InvalidEvent` (or its :class:`ContractViolation`) with a message naming the
    offending field; nothing else, whatever the types of the values.
    """
    if not isinstance(data, Mapping):
        raise InvalidEvent("an event must be a map")
    event_id = _required_text(data.get("event_id"), "event_id", MAX_ID_LEN)
    day = _day(data.get("day"))
    kind_raw = data.get("kind")
    if not isinstance(kind_raw, str) or kind_raw not in _KINDS:
        raise InvalidEvent(
            f"unknown event kind {kind_raw!r:.60}; expected one of {', '.join(EventKind)}"
        )
    kind = EventKind(kind_raw)
    _guard(kind, data)

    def get(key: str) -> Any:  # Any: each event class checks its own fields
        return data.get(key)

    if kind is EventKind.TICK:
        return Tick(event_id=event_id, day=day)
    if kind is EventKind.SCHEMA:
        return Schema(event_id=event_id, day=day, schema=parse_schema(data))
    if kind is EventKind.TRUST:
        return Trust(
            event_id=event_id, day=day, resident=get("resident"), source=get("source"),
            value=get("value"), topic=get("topic"),
        )  # fmt: skip
    if kind is EventKind.PROPOSE:
        return Propose(event_id=event_id, day=day, resident=get("resident"), edits=get("edits"))
    if kind is EventKind.REGISTER:
        return Register(event_id=event_id, day=day, names=get("residents"), labels=get("actions"))
    if kind is EventKind.PROMISE:
        return Promise(
            event_id=event_id, day=day, promise=get("promise"), promiser=get("promiser"),
            to=get("to"), action=get("action"), subject=get("subject"), by=get("by"),
        )  # fmt: skip
    if kind is EventKind.GOAL:
        return Goal(
            event_id=event_id, day=day, resident=get("resident"), goal=get("goal"),
            op=get("op"), subject=get("subject"),
        )  # fmt: skip
    if kind is EventKind.ACT:
        return Act(
            event_id=event_id, day=day, actor=get("actor"), action=get("action"),
            status=get("status"), witnesses=get("witnesses"), subject=get("subject"),
            reason=get("reason"),
        )  # fmt: skip
    if kind is EventKind.INTERVENE:
        op = get("op")
        _ident(get("resident"), "resident")  # the resident's error before the claim's
        if not isinstance(op, str) or op not in INTERVENTION_OPS:
            raise InvalidEvent(f"field 'op' must be one of {', '.join(sorted(Op))}")
        claim = _claim(get("claim"), value_required=op in (Op.IMPLANT, Op.DISTORT))
        return Intervene(
            event_id=event_id, day=day, resident=get("resident"), op=Op(op), claim=claim,
            subject=get("subject"),
        )  # fmt: skip
    common: dict[str, Any] = {
        "event_id": event_id,
        "day": day,
        "claim": _claim(get("claim")),
        "subject": get("subject"),
        "people": get("people"),
        "places": get("places"),
        "topics": get("topics"),
        "importance": get("importance"),
        "emotion": get("emotion"),
        "mutable": _mutable(data),
    }
    if kind is EventKind.OBSERVE:
        return Observe(**common, witnesses=get("witnesses"), interpretations=get("interpretations"))
    if kind is EventKind.SAY:
        return Say(
            **common, speaker=get("speaker"), topic=get("topic"), listeners=get("listeners"),
            overhearers=get("overhearers"),
        )  # fmt: skip
    audience = get("audience")
    if audience is None:  # absent is not "everyone": that takes an explicit "*"
        raise InvalidEvent("field 'audience' is required")
    return Announce(**common, speaker=get("speaker"), topic=get("topic"), audience=audience)


_KINDS = frozenset(EventKind)
