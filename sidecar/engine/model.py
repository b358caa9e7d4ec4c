"""Value types of the belief engine: claims, evidence, beliefs and change records.

Every type here is a frozen, slotted, keyword-only dataclass that validates itself on
construction, so a value that exists is a value that obeys the rules (h11 style). Nothing
here touches a socket, a database, the wall clock or a random number generator: the game's
clock (``day``) always arrives from outside.

Exception tree::

    EngineError                      (base; never raised directly)
     ├── InvalidEvidence             a peer sent evidence that breaks a data rule
     └── InvalidEvent                a world event is malformed or cannot apply
          ├── ContractViolation      it breaks the epistemic guard (with a reason)
          └── ClockBackwards         it is dated before the world's clock
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, TypeAlias, TypeVar

__all__ = [
    "EVIDENCE_REFS_KEPT",
    "MAX_SAFE_INT",
    "Belief",
    "Change",
    "ChangeKind",
    "Claim",
    "ClockBackwards",
    "ContractViolation",
    "EngineError",
    "Evidence",
    "Intervention",
    "InvalidEvent",
    "InvalidEvidence",
    "Relation",
    "SourceKind",
    "State",
    "Value",
    "evolve",
    "new_belief",
    "same_value",
    "with_ref",
]

#: Claim values are one of these. ``bool`` is kept distinct from ``int``.
Value: TypeAlias = str | int | bool

#: Largest integer every client language can carry exactly (JavaScript's Number).
MAX_SAFE_INT = 2**53 - 1


class EngineError(Exception):
    """Base of every error the engine raises about its input."""

    code = "invalid_event"


class InvalidEvidence(EngineError):
    """Evidence that breaks a data rule (e.g. hearsay without a source)."""


class InvalidEvent(EngineError):
    """A world event that is malformed or cannot apply to the current beliefs."""


class ContractViolation(InvalidEvent):
    """An event that breaks the epistemic guard; ``reason`` is a stable reason code."""

    code = "contract_violation"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ClockBackwards(InvalidEvent):
    """An event dated before the world's clock: time in a world only moves forward.

    (To go back in time, fork the world at an earlier seq: the fork's clock is that day.)
    """

    code = "clock_backwards"

    def __init__(self, day: float, clock: float) -> None:
        super().__init__(
            f"event day {day:g} is before the world's clock (day {clock:g}) by more than this "
            "world's late_event_days; time in a world only moves forward (fork the world at "
            "an earlier seq to go back)"
        )
        self.day, self.clock = day, clock


class SourceKind(StrEnum):
    """How a resident came by a piece of evidence."""

    FIRSTHAND = "firsthand"
    HEARSAY = "hearsay"
    IMPLANTED = "implanted"


class State(StrEnum):
    """Lifecycle state of a belief."""

    INFLUENCING = "influencing"
    PAST = "past"
    DOUBTFUL = "doubtful"
    ANOMALOUS = "anomalous"
    CORRECTED = "corrected"


class ChangeKind(StrEnum):
    """What a revision did; each change record (and notification) carries one."""

    FORMED = "formed"
    REINFORCED = "reinforced"
    DOUBTED = "doubted"
    ANOMALY = "anomaly"
    CORRECTED = "corrected"
    DECAYED = "decayed"
    FADED = "faded"
    INTERVENED = "intervened"
    UPDATED = "updated"  # a mutable root's value changed in the world, seen firsthand
    TRUST = "trust"  # a resident's trust in a source moved (root: ``roots.trust_root``)
    MISREMEMBERED = "misremembered"  # a detail drifted in recall (place, person, day)
    PROMISE = "promise"  # a party's view of a promise moved (root ``promise:<id>``)
    GOAL = "goal"  # a resident's goal was set, changed, achieved or abandoned (``goal:<id>``)


class Intervention(StrEnum):
    """What a player's tampering left on a belief, through its lifecycle.

    ``implanted`` and ``distorted`` are *active*: the tampered memory resists contradiction
    (an anomaly, not a doubt). The first anomaly exposes it: ``discovered``, after which a
    contradiction is a plain doubt and firsthand evidence corrects it. ``suppressed`` hides a
    memory (state past) until the resident's own eyes bring it back. A correction, or
    firsthand evidence on a suppressed memory, clears the mark (the history keeps it).
    """

    IMPLANTED = "implanted"
    DISTORTED = "distorted"
    DISCOVERED = "discovered"
    SUPPRESSED = "suppressed"

    @property
    def active(self) -> bool:
        """Whether the tampering still resists contradiction (anomaly, not doubt)."""
        return self in _ACTIVE


#: (a module constant: an enum member read costs ~90 ns on Python 3.11, see revise.py)
_ACTIVE = (Intervention.IMPLANTED, Intervention.DISTORTED)


class Relation(StrEnum):
    """How one piece of evidence bears on the belief it touched."""

    FORMS = "forms"
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    INTERVENES = "intervenes"


_new = object.__new__


def same_value(a: Value, b: Value) -> bool:
    """Claim values are equal only if their types match too: ``True`` is not ``1``."""
    return type(a) is type(b) and a == b


def check_value(value: object, what: str = "claim value") -> Value:
    """Return ``value`` if it is a legal claim value, else raise :class:`InvalidEvent`."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            return value
        raise InvalidEvent(f"{what} {value} is outside ±(2^53−1)")
    raise InvalidEvent(f"{what} must be a string, integer or boolean, not {type(value).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A proposition slot (``root``) and the value asserted for it.

    Identity is structural: same root and same value supports, same root and another value
    contradicts, another root is unrelated. Text similarity never enters into it.
    """

    root: str
    value: Value

    def __post_init__(self) -> None:
        if not isinstance(self.root, str) or not self.root:
            raise InvalidEvent("claim root must be a non-empty string")
        check_value(self.value)

    def supports(self, other: Claim) -> bool:
        return self.root == other.root and same_value(self.value, other.value)

    def contradicts(self, other: Claim) -> bool:
        return self.root == other.root and not same_value(self.value, other.value)

    @classmethod
    def checked_parts(cls, root: str, value: Value) -> Claim:
        """A claim from a non-empty root and a value that already passed as a claim's (a
        derived root around a checked claim's value): built without checking them again,
        once per hearer of every utterance."""
        claim = _new(cls)
        _set_root(claim, root)
        _set_value(claim, value)
        return claim


_set_root = Claim.__dict__["root"].__set__
_set_value = Claim.__dict__["value"].__set__


# (module constants: an enum member read costs ~90 ns on Python 3.11, see revise.py)
_HEARSAY, _IMPLANTED = SourceKind.HEARSAY, SourceKind.IMPLANTED


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """One resident's contact with one world event, bearing on one claim."""

    evidence_id: str
    resident: str
    event_id: str
    day: float
    source_kind: SourceKind
    claim: Claim
    subject: str
    source_resident_id: str | None = None
    interpretation: str | None = None
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    #: For implanted evidence, the player's intervention op (implant/distort/suppress/soften).
    op: str | None = None
    #: Provenance: where the claim entered the world (an evidence id or an utterance) and
    #: the residents it passed through on the way here (A → B → C).
    origin: str | None = None
    hops: tuple[str, ...] = ()
    #: Hearsay only: the listener's trust in the source, as weighted for this hearing.
    trust: float | None = None
    topic: str | None = None
    mutable: bool = False
    importance: float | None = None
    emotion: float | None = None

    def __post_init__(self) -> None:
        if (self.source_kind is _IMPLANTED) != (self.op is not None):
            raise InvalidEvidence("implanted evidence, and only it, carries an intervention op")
        if self.source_kind is _HEARSAY:
            if not self.source_resident_id:
                raise InvalidEvidence("hearsay evidence must name its source resident")
            if self.source_resident_id == self.resident:
                raise InvalidEvidence("a resident cannot be its own hearsay source")
        elif self.source_resident_id is not None:
            raise InvalidEvidence(f"{self.source_kind} evidence must not name a source resident")


#: A belief keeps this many of its first and of its latest evidence refs (the protocol shows
#: exactly these: ``protocol.frames.EVIDENCE_REFS_SHOWN``).
EVIDENCE_REFS_KEPT = 5
_REFS_KEPT_AT_MOST = 2 * EVIDENCE_REFS_KEPT


def with_ref(refs: tuple[str, ...], evidence_id: str) -> tuple[str, ...]:
    """``refs`` with one more piece of evidence: the first and the latest
    :data:`EVIDENCE_REFS_KEPT` kept, the oldest of the latest dropped once it is full."""
    if len(refs) < _REFS_KEPT_AT_MOST:
        return (*refs, evidence_id)
    return (*refs[:EVIDENCE_REFS_KEPT], *refs[EVIDENCE_REFS_KEPT + 1 :], evidence_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Belief:
    """One resident's formal memory entry about one claim root.

    ``interpretation`` is the resident's own reading and is never treated as a fact;
    ``evidence_refs`` lists the first and the latest :data:`EVIDENCE_REFS_KEPT` evidence ids
    that touched the belief, in order (all of them until there are twice as many), and
    ``evidence_count`` counts every piece: the list stays bounded, so a belief seen 10,000
    times costs no more to revise than one seen 10 times. Every piece stays in the store's
    evidence table (``explain`` pages through it).
    ``heard_from`` lists the hearsay sources that already counted for the current value,
    so the same source repeating itself does not raise confidence again.
    ``next_decay_day`` is the game day of the next hearsay-aging step, or ``None`` when the
    belief does not age; the store indexes it so a clock advance only reads what is due.
    """

    resident: str
    root: str
    value: Value
    subject: str
    confidence: int
    state: State
    source_kind: SourceKind
    source_resident_id: str | None
    formed_day: float
    updated_day: float
    last_evidence_day: float
    interpretation: str | None = None
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    intervention: Intervention | None = None
    evidence_refs: tuple[str, ...] = ()
    evidence_count: int = 0
    heard_from: tuple[str, ...] = ()
    next_decay_day: float | None = None
    #: Independent origins that counted for the current value, and the chain of the first.
    origins: tuple[str, ...] = ()
    hops: tuple[str, ...] = ()
    #: Days per aging step for this belief (importance, emotion and trust adjust it).
    decay_period: float | None = None
    #: Game day since which the current value has been held.
    value_since: float = 0.0
    #: The highest ``importance`` any of its evidence carried (``None``: never given); the
    #: narrative ranks by it.
    importance: float | None = None
    #: The day the resident remembers the belief from, once misremembering has moved it
    #: (``None``: the day it formed). Never provenance: ``formed_day`` keeps the truth.
    remembered_day: float | None = None
    #: Further origins of the current value that are the resident's own (each sighting or
    #: implant after the first origin), counted rather than listed in ``origins``: a rumour's
    #: origin is always some belief's *first* origin, so none of these can come back as one
    #: (nothing to check an echo against), and a belief seen 10,000 times keeps a short list.
    own_origins: int = 0

    def __post_init__(self) -> None:
        confidence = self.confidence
        if type(confidence) is not int and (
            isinstance(confidence, bool) or not isinstance(confidence, int)
        ):
            raise TypeError("confidence must be an int")
        if not 0 <= confidence <= 100:
            raise ValueError(f"confidence {confidence} outside 0..100")
        if (self.source_kind is _HEARSAY) != (self.source_resident_id is not None):
            raise ValueError("hearsay beliefs, and only they, name a source resident")
        kept = len(self.evidence_refs)
        if kept > self.evidence_count or kept > _REFS_KEPT_AT_MOST:
            raise ValueError(
                f"{len(self.evidence_refs)} evidence refs kept for a count of "
                f"{self.evidence_count} (at most {2 * EVIDENCE_REFS_KEPT})"
            )

    @property
    def claim(self) -> Claim:
        return Claim(root=self.root, value=self.value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One revision of one belief. The store numbers it (``seq``) when it commits."""

    resident: str
    root: str
    kind: ChangeKind
    confidence_before: int | None
    confidence_after: int
    state_before: State | None
    state_after: State
    value_before: Value | float | None
    value_after: Value | float
    source_kind: SourceKind
    source_resident_id: str | None
    event_id: str
    day: float
    evidence_id: str | None = None
    subject_before: str | None = None
    subject_after: str | None = None
    detail: str | None = None
    seq: int | None = field(default=None, compare=False)


def unique(items: Sequence[str]) -> tuple[str, ...]:
    """Order-preserving de-duplication, for people/places/topics lists."""
    return tuple(dict.fromkeys(items))


_T = TypeVar("_T")


def _draft(cls: type) -> type | None:
    """A plain class with ``cls``'s slots, in the same layout, or ``None`` if there is none.

    The engine's value types are frozen: their ``__setattr__`` refuses, so CPython cannot
    store an attribute of theirs directly, and every field set through the slot's descriptor
    is a call (~100 ns on Python 3.11). A *draft* of the class is the same memory layout
    without the refusal: a value is filled in it with plain attribute stores (specialized to
    a slot write, a few ns), then becomes the frozen class by assigning its ``__class__``,
    which CPython allows between classes of the same layout — the mutable working state of
    one construction, frozen at the boundary before anyone else sees it. A class whose
    layout differs (a slotted base, a weakref slot) has no draft: tried here, once.
    """
    names = tuple(f.name for f in fields(cls))
    draft = type(f"_{cls.__name__}Draft", (), {"__slots__": names, "__module__": cls.__module__})
    probe = draft()
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return draft


def _compiled(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    exec(compile(source, f"<engine builder {name}>", "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


#: Per class: a copy of a value into a new draft of the class (``None``: the class has no
#: draft), its fields' slot setters by name, its check.
_Plan: TypeAlias = tuple[
    Callable[[Any], Any] | None,
    dict[str, Callable[[Any, Any], None]],
    Callable[[Any], None] | None,
]
_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    names = tuple(f.name for f in fields(cls))
    draft = _draft(cls)
    copy = None
    if draft is not None:
        body = "".join(f"    o.{n} = src.{n}\n" for n in names)
        copy = _compiled(f"def copy(src):\n    o = _draft()\n{body}    return o\n", "copy",
                         {"_draft": draft})  # fmt: skip
    setters = {n: cls.__dict__[n].__set__ for n in names}  # the slots' own descriptors
    plan = (copy, setters, getattr(cls, "__post_init__", None))
    _PLANS[cls] = plan
    return plan


def evolve(obj: _T, /, **changes: Any) -> _T:
    """``dataclasses.replace`` for the engine's frozen, slotted value types, at a fraction of
    the cost.

    The fold copies a belief with a few fields changed several times per event, and
    ``replace`` spends most of its time on a Python loop over the fields and on the frozen
    ``__init__`` (one ``object.__setattr__`` per field). Here every field is copied into a
    draft of the class (:func:`_draft`: plain attribute stores, generated once per class),
    the changed ones set after, and the draft becomes the frozen class; the class's
    ``__post_init__`` check runs as the constructor would run it, so a copy is as valid as a
    constructed value. The result is equal, field for field, to what ``replace`` returns.
    """
    cls = type(obj)
    copy, setters, check = _PLANS.get(cls) or _plan(cls)
    for name in changes:
        if name not in setters:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
    if copy is None:  # no draft: copied slot by slot through the descriptors
        new = _new(cls)
        for name, put in setters.items():
            put(new, changes[name] if name in changes else getattr(obj, name))
    else:
        new = copy(obj)
        for name, value in changes.items():
            setattr(new, name, value)
        new.__class__ = cls
    if check is not None:
        check(new)
    return new


def positional(cls: type[_T], names: tuple[str, ...]) -> Callable[..., _T]:
    """A constructor of a frozen, slotted ``cls`` that takes every field positionally, in
    ``names`` order — which must be the class's declaration order (checked here, once).

    For the fold's hottest constructions (a formed belief, a change record, a piece of
    evidence): a keyword call of the frozen ``__init__`` spends most of its time parsing ~20
    keywords and calling ``object.__setattr__`` per field. This fills a draft of the class
    (:func:`_draft`) with plain attribute stores, in a function generated once, makes it the
    frozen class and runs the class's ``__post_init__`` check, so the value is the one the
    keyword call builds. (A class without a draft is filled through its slots' descriptors.)
    """
    if names != tuple(f.name for f in fields(cls)):  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}'s fields are {[f.name for f in fields(cls)]}")  # type: ignore[arg-type]
    check = getattr(cls, "__post_init__", None)
    draft = _draft(cls)
    params = ", ".join(f"_{i}" for i in range(len(names)))
    checked = "    _check(o)\n" if check is not None else ""
    if draft is not None:
        body = "".join(f"    o.{n} = _{i}\n" for i, n in enumerate(names))
        source = (f"def build({params}):\n    o = _draft()\n{body}"
                  f"    o.__class__ = _cls\n{checked}    return o\n")  # fmt: skip
        namespace: dict[str, Any] = {"_draft": draft, "_cls": cls, "_check": check}
    else:
        body = "".join(f"    _s{i}(o, _{i})\n" for i in range(len(names)))
        source = f"def build({params}):\n    o = _new(_cls)\n{body}{checked}    return o\n"
        namespace = {"_new": _new, "_cls": cls, "_check": check}
        namespace.update({f"_s{i}": vars(cls)[n].__set__ for i, n in enumerate(names)})
    build = _compiled(source, "build", namespace)
    build.__qualname__ = f"positional({cls.__name__})"
    return build


#: :class:`Belief` built positionally (:func:`positional`), every field in declaration
#: order: the fold forms one per revision, and a narrative reads thousands per reply.
new_belief = positional(Belief, (
    "resident", "root", "value", "subject", "confidence", "state", "source_kind",
    "source_resident_id", "formed_day", "updated_day", "last_evidence_day", "interpretation",
    "people", "places", "topics", "intervention", "evidence_refs", "evidence_count",
    "heard_from",
    "next_decay_day", "origins", "hops", "decay_period", "value_since", "importance",
    "remembered_day", "own_origins",
))  # fmt: skip
