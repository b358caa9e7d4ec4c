"""World events: what the game says happened, and the evidence each one gives residents.

The event log is the world's history; a belief is one resident's reading of it. Events are
parsed from plain mappings (decoded msgpack or JSON) by :func:`parse_event`, which is the
single place where event fields are checked, and turned back into their canonical mapping by
:meth:`WorldEvent.to_dict` for the log. Parsing the canonical mapping again gives an equal
event, which is what makes a replay of the log rebuild every belief exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .model import Claim, ContractViolation, InvalidEvent, Value, check_value, unique

__all__ = [
    "ACT_STATUSES",
    "INTERVENTION_OPS",
    "MAX_ID_LEN",
    "MAX_LIST_LEN",
    "MAX_TEXT_LEN",
    "NAME_LANGS",
    "ActStatus",
    "EventKind",
    "WorldEvent",
    "action_root",
    "parse_event",
]

MAX_ID_LEN = 200
MAX_TEXT_LEN = 4000
MAX_LIST_LEN = 1000


class EventKind(StrEnum):
    OBSERVE = "observe"
    SAY = "say"
    ANNOUNCE = "announce"
    ACT = "act"
    INTERVENE = "intervene"
    TICK = "tick"
    TRUST = "trust"  # the game sets Trust(resident ← source, topic) explicitly
    PROPOSE = "propose"  # an external memory organizer proposes text edits to beliefs
    REGISTER = "register"  # the game names its residents (and actions) per language


class ActStatus(StrEnum):
    COMPLETED = "completed"
    REJECTED = "rejected"
    INTERRUPTED = "interrupted"
    REPLACED = "replaced"


ACT_STATUSES = frozenset(ActStatus)
INTERVENTION_OPS = frozenset({"implant", "distort", "suppress", "soften"})


def action_root(actor: str, action: str) -> str:
    """The claim root an ``act`` event bears on; its value is always the action's status."""
    return f"action:{actor}:{action}"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldEvent:
    """One entry of the world log. Kind-specific fields are ``None``/empty when unused.

    Only the fields of its kind are meaningful; :func:`parse_event` guarantees that the
    required ones are present and well typed.
    """

    event_id: str
    day: float
    kind: EventKind
    claim: Claim | None = None
    subject: str | None = None
    witnesses: tuple[str, ...] = ()
    interpretations: Mapping[str, str] = field(default_factory=dict)
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    importance: float | None = None
    speaker: str | None = None
    listeners: tuple[str, ...] = ()
    audience: tuple[str, ...] | None = None  # None with kind announce means "everyone"
    actor: str | None = None
    action: str | None = None
    status: ActStatus | None = None
    resident: str | None = None
    op: str | None = None
    overhearers: tuple[str, ...] = ()
    topic: str | None = None
    emotion: float | None = None
    mutable: bool = False
    source: str | None = None  # kind trust: whom the resident trusts
    trust: float | None = None  # kind trust: the value set
    edits: tuple[Mapping[str, Any], ...] = ()  # kind propose
    #: kind register: (resident, {lang: display name}) and (action, {lang: label}) pairs
    names: tuple[tuple[str, Mapping[str, str]], ...] = ()
    labels: tuple[tuple[str, Mapping[str, str]], ...] = ()

    def mentioned_residents(self) -> tuple[str, ...]:
        """Every resident this event names, in a stable order (the world learns of them)."""
        names: list[str] = []
        for one in (self.speaker, self.actor, self.resident):
            if one:
                names.append(one)
        names.extend(self.witnesses)
        names.extend(self.listeners)
        names.extend(self.overhearers)
        if self.source:
            names.append(self.source)
        if self.audience:
            names.extend(self.audience)
        names.extend(resident for resident, _ in self.names)
        return unique(names)

    def to_dict(self) -> dict[str, Any]:
        """The canonical mapping stored in the world log (only fields of this kind)."""
        out: dict[str, Any] = {"event_id": self.event_id, "day": self.day, "kind": str(self.kind)}
        kind = self.kind
        if kind is EventKind.TICK:
            return out
        if kind is EventKind.TRUST:
            out |= {"resident": self.resident, "source": self.source, "value": self.trust}
            if self.topic is not None:
                out["topic"] = self.topic
            return out
        if kind is EventKind.PROPOSE:
            out |= {"resident": self.resident, "edits": [dict(e) for e in self.edits]}
            return out
        if kind is EventKind.REGISTER:
            if self.names:
                out["residents"] = [{"resident": r, "names": dict(n)} for r, n in self.names]
            if self.labels:
                out["actions"] = [{"action": a, "names": dict(n)} for a, n in self.labels]
            return out
        if kind is EventKind.ACT:
            out |= {
                "actor": self.actor,
                "action": self.action,
                "status": str(self.status),
                "witnesses": list(self.witnesses),
            }
            if self.subject is not None:
                out["subject"] = self.subject
            return out
        assert self.claim is not None
        claim: dict[str, Any] = {"root": self.claim.root, "value": self.claim.value}
        if self.mutable:
            claim["mutable"] = True
        if kind is EventKind.INTERVENE:
            if self.op in ("suppress", "soften"):
                claim = {"root": self.claim.root}
            out |= {"resident": self.resident, "op": self.op, "claim": claim}
            if self.subject is not None:
                out["subject"] = self.subject
            return out
        out |= {"claim": claim, "subject": self.subject}
        if kind is EventKind.OBSERVE:
            out["witnesses"] = list(self.witnesses)
            if self.interpretations:
                out["interpretations"] = dict(self.interpretations)
        elif kind is EventKind.SAY:
            out |= {"speaker": self.speaker, "listeners": list(self.listeners)}
            if self.overhearers:
                out["overhearers"] = list(self.overhearers)
        elif kind is EventKind.ANNOUNCE:
            out["speaker"] = self.speaker
            out["audience"] = "*" if self.audience is None else list(self.audience)
        if self.topic is not None:
            out["topic"] = self.topic
        if self.importance is not None:
            out["importance"] = self.importance
        if self.emotion is not None:
            out["emotion"] = self.emotion
        for name in ("people", "places", "topics"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        return out


# --------------------------------------------------------------------------- parsing


def _get(data: Mapping[str, Any], key: str) -> Any:
    """Absent and nil mean the same thing on the wire."""
    return data.get(key)


def _text(
    data: Mapping[str, Any], key: str, *, required: bool, limit: int = MAX_TEXT_LEN
) -> str | None:
    value = _get(data, key)
    if value is None:
        if required:
            raise InvalidEvent(f"field '{key}' is required")
        return None
    if not isinstance(value, str):
        raise InvalidEvent(f"field '{key}' must be a string")
    if required and not value:
        raise InvalidEvent(f"field '{key}' must not be empty")
    if len(value) > limit:
        raise InvalidEvent(f"field '{key}' is longer than {limit} characters")
    if "\x00" in value:
        raise InvalidEvent(f"field '{key}' must not contain NUL characters")
    return value


def _ident(data: Mapping[str, Any], key: str) -> str:
    value = _text(data, key, required=True, limit=MAX_ID_LEN)
    assert value is not None
    if value == "*":
        raise InvalidEvent(f"field '{key}' must not be '*'")
    return value


def _id_list(data: Mapping[str, Any], key: str, *, required: bool) -> tuple[str, ...]:
    value = _get(data, key)
    if value is None:
        if required:
            raise InvalidEvent(f"field '{key}' is required")
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidEvent(f"field '{key}' must be a list of strings")
    if len(value) > MAX_LIST_LEN:
        raise InvalidEvent(f"field '{key}' has more than {MAX_LIST_LEN} entries")
    items = [_ident({key: one}, key) for one in value]
    if required and not items:
        raise InvalidEvent(f"field '{key}' must not be empty")
    return unique(items)


def _day(data: Mapping[str, Any]) -> float:
    value = _get(data, "day")
    if value is None:
        raise InvalidEvent("field 'day' is required")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidEvent("field 'day' must be a number of game days")
    day = float(value)
    if not math.isfinite(day) or day < 0 or day > 1e12:
        raise InvalidEvent("field 'day' must be a finite number between 0 and 1e12")
    return day


def _claim(data: Mapping[str, Any], *, value_required: bool = True) -> Claim | tuple[str, None]:
    raw = _get(data, "claim")
    if not isinstance(raw, Mapping):
        raise InvalidEvent("field 'claim' must be a map with 'root' and 'value'")
    root = _text(raw, "root", required=True, limit=MAX_ID_LEN)
    assert root is not None
    value = raw.get("value")
    if value is None:
        if value_required:
            raise InvalidEvent("field 'claim.value' is required")
        return (root, None)
    if raw.get("interpretation") is not None:
        raise ContractViolation(
            "interpretation_as_value",
            "a claim must not carry an interpretation; it is never a fact",
        )
    checked: Value = check_value(value, "claim.value")
    if isinstance(checked, str) and len(checked) > MAX_TEXT_LEN:
        raise InvalidEvent("field 'claim.value' is too long")
    return Claim(root=root, value=checked)


def _interpretations(data: Mapping[str, Any], witnesses: tuple[str, ...]) -> dict[str, str]:
    raw = _get(data, "interpretations")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidEvent("field 'interpretations' must be a map of resident to text")
    out: dict[str, str] = {}
    for resident, text in raw.items():
        if not isinstance(resident, str) or resident not in witnesses:
            raise InvalidEvent("interpretations may only be given for witnesses")
        checked = _text({"interpretation": text}, "interpretation", required=True)
        assert checked is not None
        out[resident] = checked
    return dict(sorted(out.items()))


def _weight(data: Mapping[str, Any], key: str) -> float | None:
    value = _get(data, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidEvent(f"field '{key}' must be a number")
    if not math.isfinite(value) or not 0 <= value <= 1e6:
        raise InvalidEvent(f"field '{key}' must be a finite number ≥ 0")
    return float(value)


def _mutable(data: Mapping[str, Any]) -> bool:
    raw = _get(data, "claim")
    flag = raw.get("mutable") if isinstance(raw, Mapping) else None
    if flag is not None and not isinstance(flag, bool):
        raise InvalidEvent("field 'claim.mutable' must be a boolean")
    return bool(flag)


#: Fields that would let an utterance pose as firsthand evidence, or firsthand as hearsay.
_FIRSTHAND_ONLY = ("witnesses", "interpretations")
_SOURCE_FIELDS = ("source", "source_resident_id", "speaker")
_EDIT_FIELDS = frozenset(
    {"root", "subject", "interpretation", "value", "source_kind", "source", "state",
     "confidence", "merge", "people", "places", "topics"}
)  # fmt: skip


def _guard(kind: EventKind, data: Mapping[str, Any]) -> None:
    """The epistemic guard's structural checks; each violation names a reason code."""
    if kind in (EventKind.SAY, EventKind.ANNOUNCE):
        if _get(data, "source_kind") not in (None, "hearsay") or any(
            _get(data, f) is not None for f in _FIRSTHAND_ONLY
        ):
            raise ContractViolation(
                "utterance_as_firsthand",
                "an utterance or announcement only ever makes hearsay, never firsthand evidence",
            )
        if not _get(data, "speaker"):
            raise ContractViolation("hearsay_without_source", "hearsay must name its speaker")
    if kind in (EventKind.OBSERVE, EventKind.ACT, EventKind.INTERVENE):
        if any(_get(data, f) is not None for f in _SOURCE_FIELDS) or _get(
            data, "source_kind"
        ) not in (
            None,
            "firsthand" if kind is not EventKind.INTERVENE else "implanted",
        ):
            raise ContractViolation(
                "firsthand_with_source",
                "firsthand and implanted evidence never name a source resident",
            )
    claim = _get(data, "claim")
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
    if kind is EventKind.ANNOUNCE and isinstance(root, str) and root.startswith("relation:"):
        raise ContractViolation(
            "public_relationship",
            "a public announcement cannot create a private relationship belief",
        )
    if kind is EventKind.OBSERVE and isinstance(claim, Mapping):
        interpretations = _get(data, "interpretations")
        value = claim.get("value")
        if (
            isinstance(interpretations, Mapping)
            and isinstance(value, str)
            and value in interpretations.values()
        ):
            raise ContractViolation(
                "interpretation_as_value", "an interpretation never becomes a claim value"
            )


#: Languages a registered name may be given in (the narrative's languages).
NAME_LANGS = ("en", "zh-Hant")


def _registered(
    data: Mapping[str, Any], key: str, id_key: str
) -> tuple[tuple[str, Mapping[str, str]], ...]:
    """``[{<id_key>: id, names: {lang: text}}]`` → ((id, {lang: text}), ...), ids unique."""
    raw = _get(data, key)
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple) or len(raw) > MAX_LIST_LEN:
        raise InvalidEvent(f"field '{key}' must be a list of at most {MAX_LIST_LEN} entries")
    out: dict[str, dict[str, str]] = {}
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise InvalidEvent(f"each entry of '{key}' must be a map with '{id_key}' and 'names'")
        ident = _ident(entry, id_key)
        names = _get(entry, "names")
        if not isinstance(names, Mapping) or not names:
            raise InvalidEvent(f"'{key}' entry {ident!r} needs 'names': a map of language to text")
        clean: dict[str, str] = {}
        for lang in sorted(names, key=str):
            if lang not in NAME_LANGS:
                raise InvalidEvent(f"names may be given in {', '.join(NAME_LANGS)}, not {lang!r}")
            text = _text(names, lang, required=True, limit=MAX_ID_LEN)
            assert text is not None
            clean[lang] = text
        out[ident] = clean
    return tuple(out.items())


def parse_event(data: Mapping[str, Any]) -> WorldEvent:
    """Check a decoded event mapping and build the :class:`WorldEvent`.

    Unknown keys are ignored; absent and ``None`` mean the same. Raises
    :class:`InvalidEvent` with a message naming the offending field.
    """
    if not isinstance(data, Mapping):
        raise InvalidEvent("an event must be a map")
    event_id = _text(data, "event_id", required=True, limit=MAX_ID_LEN)
    assert event_id is not None
    day = _day(data)
    kind_raw = _get(data, "kind")
    try:
        kind = EventKind(kind_raw)
    except ValueError:
        raise InvalidEvent(
            f"unknown event kind {kind_raw!r}; expected one of {', '.join(EventKind)}"
        ) from None
    common: dict[str, Any] = {"event_id": event_id, "day": day, "kind": kind}
    _guard(kind, data)

    if kind is EventKind.TICK:
        return WorldEvent(**common)

    if kind is EventKind.TRUST:
        resident, source = _ident(data, "resident"), _ident(data, "source")
        if resident == source:
            raise InvalidEvent("a resident's trust in itself is not modelled")
        value = _get(data, "value")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise InvalidEvent("field 'value' must be a trust between 0 and 1")
        return WorldEvent(
            **common, resident=resident, source=source, trust=float(value),
            topic=_text(data, "topic", required=False, limit=MAX_ID_LEN),
        )  # fmt: skip

    if kind is EventKind.REGISTER:
        names = _registered(data, "residents", "resident")
        labels = _registered(data, "actions", "action")
        if not names and not labels:
            raise InvalidEvent("a register event needs 'residents' or 'actions'")
        return WorldEvent(**common, names=names, labels=labels)

    if kind is EventKind.PROPOSE:
        resident = _ident(data, "resident")
        edits = _get(data, "edits")
        if not isinstance(edits, list | tuple) or not edits or len(edits) > 200:
            raise InvalidEvent("field 'edits' must be a list of 1 to 200 edits")
        clean: list[dict[str, Any]] = []
        for edit in edits:
            if not isinstance(edit, Mapping):
                raise InvalidEvent("each edit must be a map with at least 'root'")
            _text(edit, "root", required=True, limit=MAX_ID_LEN)
            kept = {k: v for k, v in edit.items() if k in _EDIT_FIELDS and v is not None}
            for text_field in ("subject", "interpretation"):
                _text(kept, text_field, required=False)
            clean.append(dict(sorted(kept.items())))
        return WorldEvent(**common, resident=resident, edits=tuple(clean))

    if kind is EventKind.ACT:
        actor = _ident(data, "actor")
        action = _ident(data, "action")
        status_raw = _get(data, "status")
        try:
            status = ActStatus(status_raw)
        except ValueError:
            raise InvalidEvent(
                f"field 'status' must be one of {', '.join(ActStatus)}, not {status_raw!r}"
            ) from None
        return WorldEvent(
            **common,
            actor=actor,
            action=action,
            status=status,
            claim=Claim(root=action_root(actor, action), value=str(status)),
            witnesses=_id_list(data, "witnesses", required=False),
            subject=_text(data, "subject", required=False),
        )

    if kind is EventKind.INTERVENE:
        resident = _ident(data, "resident")
        op = _get(data, "op")
        if op not in INTERVENTION_OPS:
            raise InvalidEvent(f"field 'op' must be one of {', '.join(sorted(INTERVENTION_OPS))}")
        needs_value = op in ("implant", "distort")
        claim = _claim(data, value_required=needs_value)
        subject = _text(data, "subject", required=needs_value)
        if isinstance(claim, tuple):
            root = claim[0]
            # suppress/soften act on the belief, whatever its value: keep the root only.
            claim_obj = Claim(root=root, value="")
        else:
            claim_obj = claim
            if not needs_value:
                claim_obj = Claim(root=claim.root, value="")
        return WorldEvent(**common, resident=resident, op=str(op), claim=claim_obj, subject=subject)

    claim = _claim(data)
    assert isinstance(claim, Claim)
    subject = _text(data, "subject", required=True)
    lists = {
        "people": _id_list(data, "people", required=False),
        "places": _id_list(data, "places", required=False),
        "topics": _id_list(data, "topics", required=False),
    }
    if kind is EventKind.OBSERVE:
        witnesses = _id_list(data, "witnesses", required=True)
        importance = _get(data, "importance")
        if importance is not None:
            if isinstance(importance, bool) or not isinstance(importance, int | float):
                raise InvalidEvent("field 'importance' must be a number")
            if not math.isfinite(importance) or not 0 <= importance <= 1e6:
                raise InvalidEvent("field 'importance' must be a finite number ≥ 0")
            importance = float(importance)
        return WorldEvent(
            **common,
            claim=claim,
            subject=subject,
            witnesses=witnesses,
            interpretations=_interpretations(data, witnesses),
            importance=importance,
            emotion=_weight(data, "emotion"),
            mutable=_mutable(data),
            **lists,
        )
    speaker = _ident(data, "speaker")
    topic = _text(data, "topic", required=False, limit=MAX_ID_LEN)
    if topic:  # first: trust moves on a hearsay belief's first topic, so it must be this one
        lists["topics"] = (topic, *(t for t in lists["topics"] if t != topic))
    spoken = {
        "topic": topic,
        "importance": _weight(data, "importance"),
        "emotion": _weight(data, "emotion"),
        "mutable": _mutable(data),
    }
    if kind is EventKind.SAY:
        listeners = _id_list(data, "listeners", required=True)
        overhearers = tuple(
            o for o in _id_list(data, "overhearers", required=False) if o not in listeners
        )
        if speaker in listeners or speaker in overhearers:
            raise InvalidEvent("a speaker cannot be its own listener")
        return WorldEvent(
            **common, claim=claim, subject=subject, speaker=speaker, listeners=listeners,
            overhearers=overhearers, **spoken, **lists,
        )  # fmt: skip
    # announce
    raw_audience = _get(data, "audience")
    audience: tuple[str, ...] | None
    if raw_audience == "*":
        audience = None
    else:
        audience = tuple(a for a in _id_list(data, "audience", required=True) if a != speaker)
        if not audience:
            # Its canonical form (an empty list) would not parse again, breaking rebuild.
            raise InvalidEvent("an announcement needs an audience besides its speaker")
    return WorldEvent(
        **common,
        claim=claim,
        subject=subject,
        speaker=speaker,
        audience=audience,
        **spoken,
        **lists,
    )
