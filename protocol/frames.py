"""Frame validation (client → sidecar) and frame builders (sidecar → client).

:func:`parse_client_frame` turns a decoded map into one small frozen frame object, or raises
:class:`~protocol.errors.ProtocolError` with the stable code for what was wrong. Event
fields are checked by the engine's :func:`~sidecar.engine.parse_event`, the single place
where the shape of a world event is defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sidecar.engine import (
    EVIDENCE_REFS_KEPT,
    Belief,
    Change,
    ChangeKind,
    ContractViolation,
    InvalidEvent,
    WorldEvent,
    parse_event,
)
from sidecar.engine.roots import parse_trust_key, trust_key
from sidecar.engine.texts import wire_text

from .codec import integral
from .errors import ErrorCode, ProtocolError
from .worlds import WORLD_FRAMES, DeleteWorld, ForkWorld, WorldsQuery, parse_world_frame

__all__ = [
    "EVIDENCE_REFS_SHOWN",
    "MAX_LIMIT",
    "MAX_RESIDENTS",
    "PROTOCOL_VERSION",
    "TAGS_SHOWN",
    "BeliefsQuery",
    "DistributionQuery",
    "EventFrame",
    "EventsQuery",
    "ExplainQuery",
    "GoalsQuery",
    "GraphQuery",
    "Hello",
    "NarrativeQuery",
    "PromisesQuery",
    "ResidentsQuery",
    "SaidQuery",
    "Subscribe",
    "TrustQuery",
    "Unsubscribe",
    "belief_frame",
    "belief_summary",
    "change_summary",
    "evidence_refs",
    "parse_client_frame",
    "parse_hello",
    "parse_trust_cursor",
    "trust_cursor",
]

PROTOCOL_VERSION = 1
MAX_ID = 200
ALL = "*"
#: Most residents one event may name as witnesses, listeners, overhearers and audience
#: together (advertised as ``welcome.max_residents``); more is ``too_many_residents``.
#: Enforced here, at the edge, not in the engine: a log written before the limit replays.
MAX_RESIDENTS = 256


def _fail(
    message: str, rid: object = None, code: ErrorCode = ErrorCode.INVALID_FRAME
) -> ProtocolError:
    return ProtocolError(code, message, rid=rid)


def _rid(frame: dict[str, Any]) -> object:
    rid = frame.get("rid")
    if rid is not None and not isinstance(rid, str | int | float | bool):
        raise _fail("'rid' must be a scalar (string, number or boolean)")
    if isinstance(rid, str) and len(rid) > MAX_ID:  # echoed in every reply: keep it small
        raise _fail(f"'rid' must be at most {MAX_ID} characters")
    return rid


def _str(frame: dict[str, Any], key: str, rid: object, *, required: bool = True) -> str | None:
    value = frame.get(key)
    if value is None:
        if required:
            raise _fail(f"field '{key}' is required", rid)
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise _fail(f"field '{key}' must be a non-empty string of at most {MAX_ID} characters", rid)
    return value


def _integer(
    frame: dict[str, Any], key: str, rid: object, what: str, minimum: int | None = None
) -> int | None:
    """An integer field; an integral float (``12.0``, from Godot's JSON) counts as the integer."""
    raw = frame.get(key)
    if raw is None:
        return None
    value = integral(raw)
    if value is None:
        why = " (not a whole number)" if isinstance(raw, float) else ""
        raise _fail(f"field '{key}' must be {what}{why}", rid)
    if minimum is not None and value < minimum:
        raise _fail(f"field '{key}' must be {what}", rid)
    return value


def _whole(value: Any) -> Any:
    """``value`` as the integer if it is an integral float (``12.0``), else unchanged."""
    if isinstance(value, float):
        whole = integral(value)
        if whole is not None:
            return whole
    return value


def _whole_claim_values(frame: dict[str, Any]) -> dict[str, Any]:
    """The event frame with every integral float claim value (``12.0``) read as the integer:
    the claim's ``value``, each of a schema's ``roots[].values`` and each ``edits[].value`` of
    a proposal (SPEC §3). Anything malformed is left for :func:`parse_event` to refuse."""
    claim = frame.get("claim")
    if isinstance(claim, dict) and isinstance(claim.get("value"), float):
        frame = {**frame, "claim": {**claim, "value": _whole(claim["value"])}}
    roots = frame.get("roots")
    if isinstance(roots, list):
        frame = {
            **frame,
            "roots": [
                {**r, "values": [_whole(v) for v in r["values"]]}
                if isinstance(r, dict) and isinstance(r.get("values"), list)
                else r
                for r in roots
            ],
        }
    edits = frame.get("edits")
    if isinstance(edits, list):
        frame = {
            **frame,
            "edits": [
                {**e, "value": _whole(e["value"])} if isinstance(e, dict) and "value" in e else e
                for e in edits
            ],
        }
    return frame


def _residents(value: Any, key: str, rid: object) -> tuple[str, ...] | None:
    """A list of resident ids, or ``"*"`` (returned as ``None``: everyone).

    ``"*"`` inside a list (``["*"]``) is refused: ``*`` is never a resident id (SPEC §7.1), so
    such a filter would match nothing, silently; the client meant ``"*"`` without the list.
    """
    if value == ALL:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(f"field '{key}' must be a list of resident ids or \"*\"", rid)
    if ALL in value:
        raise _fail(
            f"field '{key}' lists \"*\", which is never a resident id: "
            f'send "*" itself (not in a list) for every resident',
            rid,
        )
    if len(value) > 10_000:
        raise _fail(f"field '{key}' lists more than 10000 residents", rid)
    return tuple(dict.fromkeys(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class Hello:
    protocol: int
    world: str
    token: str | None = None
    client: str | None = None
    resume: int | None = None
    subscribe: tuple[str, ...] | None = None
    subscribe_all: bool = False
    #: ``"reader"`` asks for a read-only connection whatever the token grants; ``"writer"``
    #: insists on one (refused if the token grants less); None: what the token grants.
    role: str | None = None
    #: Whole filters (SPEC §9): a client that reconnects restores every filter it added with
    #: ``subscribe`` here, so that the backlog of ``resume`` is read through all of them.
    filters: tuple[Subscribe, ...] = ()
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EventFrame:
    event: WorldEvent
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscribe:
    """A notification filter. ``residents=None`` means every resident of the world."""

    residents: tuple[str, ...] | None
    roots: tuple[str, ...] = ()
    changes: frozenset[ChangeKind] = frozenset()
    crossing: float | None = None
    rid: object = None

    def matches(self, change: Change) -> bool:
        if self.residents is not None and change.resident not in self.residents:
            return False
        return self.accepts(change)

    def accepts(self, change: Change) -> bool:
        """Everything :meth:`matches` checks but the resident (a server may hold the
        residents as a set and check them first)."""
        if self.roots and not any(change.root.startswith(p) for p in self.roots):
            return False
        if self.changes and change.kind not in self.changes:
            return False
        if self.crossing is not None:
            before = -1 if change.confidence_before is None else change.confidence_before
            after = change.confidence_after
            return (before < self.crossing) != (after < self.crossing)
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsubscribe:
    residents: tuple[str, ...] | None  # None: drop every subscription
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BeliefsQuery:
    """A resident's beliefs, optionally narrowed (every filter given must match)."""

    resident: str
    after: str | None = None
    root: str | None = None
    prefixes: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    min_confidence: int | None = None
    #: At most this many beliefs (the first in root order); None: every one.
    limit: int | None = None
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExplainQuery:
    """One belief's evidence and history; ``limit`` keeps the latest of each."""

    resident: str
    root: str
    limit: int | None = None
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DistributionQuery:
    root: str
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NarrativeQuery:
    """A narrative request; the focus lists (people and places present, root prefixes,
    free topics) rank what matters now first."""

    resident: str
    budget: int = 2000
    lang: str = "en"
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    rid: object = None


#: Most entries one ``residents`` or ``events`` page may ask for, and the default page sizes.
MAX_PAGE = 1000
RESIDENTS_PAGE = 500
EVENTS_PAGE = 100
SAID_PAGE = 100
TRUST_PAGE = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustQuery:
    """One page of a resident's trust table (of one source's entries with ``source``), in
    (source, topic) order after the entry ``after`` names: ``(source, topic)``, the topic
    ``""`` for general trust (SPEC §10.6)."""

    resident: str
    source: str | None = None
    after: tuple[str, str] | None = None
    limit: int = TRUST_PAGE
    rid: object = None


def trust_cursor(source: str, topic: str | None) -> str:
    """The ``next`` that names a trust entry: the entry's trust root without ``trust:``
    (SPEC §8.1, §10.6), :func:`sidecar.engine.roots.trust_key` — its source, with ``%`` and
    ``:`` escaped, then ``:`` and the topic for a topic entry (``bo``, ``bo:well``; source
    ``a:b`` is ``a%3Ab``): the first ``:`` always ends the source."""
    return trust_key(source, topic)


def parse_trust_cursor(cursor: str) -> tuple[str, str] | None:
    """``(source, topic)`` (topic ``""`` for general trust) of a :func:`trust_cursor`, or
    None when ``cursor`` is not one (a bad escape, an empty source or topic)."""
    entry = parse_trust_key(cursor)
    return None if entry is None else (entry[0], entry[1] or "")


#: Default event nodes (pieces of evidence) of one ``graph`` page; the longest ``after``
#: cursor (an evidence id: an escaped event id, a suffix and a resident id).
GRAPH_PAGE = 100
MAX_CURSOR = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphQuery:
    """One page of a belief graph: one belief, one resident's beliefs or one root across
    residents, at most ``limit`` event nodes after the cursor ``after`` (SPEC §10.5)."""

    resident: str | None = None
    root: str | None = None
    after: str | None = None
    limit: int = GRAPH_PAGE
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidentsQuery:
    """One page of the world's residents in id order, with their registered names."""

    after: str | None = None
    limit: int = RESIDENTS_PAGE
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EventsQuery:
    """One page of the world's event log in seq order, from event seq ``start`` on."""

    start: int = 1
    limit: int = EVENTS_PAGE
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SaidQuery:
    """One page of what a resident said (its own words), in seq order from event seq
    ``start`` on."""

    resident: str
    start: int = 1
    limit: int = SAID_PAGE
    rid: object = None


#: Default page size of the ``promises`` and ``goals`` queries; the states they filter by.
PROMISES_PAGE = 100
PROMISE_STATES = ("pending", "kept", "overdue", "broken")
GOAL_STATES = ("active", "achieved", "abandoned")


@dataclass(frozen=True, slots=True, kw_only=True)
class PromisesQuery:
    """One page of the promises a resident made or was made, in promise id order."""

    resident: str
    state: str | None = None
    after: str | None = None
    limit: int = PROMISES_PAGE
    rid: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GoalsQuery:
    """One page of a resident's goals, in goal id order."""

    resident: str
    state: str | None = None
    after: str | None = None
    limit: int = PROMISES_PAGE
    rid: object = None


#: Frames answered in order with one reply (paged if long); ``worlds``, ``fork`` and
#: ``delete`` are answered like queries (SPEC §10.7). Usable with ``isinstance``.
QueryFrame = (
    BeliefsQuery
    | ExplainQuery
    | DistributionQuery
    | NarrativeQuery
    | GraphQuery
    | TrustQuery
    | ResidentsQuery
    | EventsQuery
    | SaidQuery
    | PromisesQuery
    | GoalsQuery
    | WorldsQuery
    | ForkWorld
    | DeleteWorld
)
ClientFrame = Hello | EventFrame | Subscribe | Unsubscribe | QueryFrame


def parse_hello(frame: dict[str, Any]) -> Hello:
    rid = _rid(frame)
    if frame.get("type") != "hello":
        raise ProtocolError(ErrorCode.HELLO_REQUIRED, "the first frame must be 'hello'", rid=rid)
    version = integral(frame.get("protocol"))
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_PROTOCOL,
            f"protocol {frame.get('protocol')!r} is not supported; this sidecar speaks protocol {PROTOCOL_VERSION}",
            rid=rid,
        )
    world = _str(frame, "world", rid)
    assert world is not None
    token = frame.get("token")
    if token is not None and not isinstance(token, str):
        raise _fail("field 'token' must be a string", rid)
    client = frame.get("client")
    if client is not None and not isinstance(client, str):
        raise _fail("field 'client' must be a string", rid)
    resume = _integer(frame, "resume", rid, "a non-negative integer change seq", 0)
    raw_sub = frame.get("subscribe")
    sub = None if raw_sub is None else _residents(raw_sub, "subscribe", rid)
    role = frame.get("role")
    if role is not None and role not in ("reader", "writer"):
        raise _fail("field 'role' must be 'reader' or 'writer'", rid)
    raw_filters = frame.get("filters")
    if raw_filters is not None and (
        not isinstance(raw_filters, list) or not all(isinstance(f, dict) for f in raw_filters)
    ):
        raise _fail("field 'filters' must be a list of subscription maps", rid)
    filters = tuple(_subscribe(f, rid) for f in raw_filters or ())
    return Hello(
        protocol=version,
        world=world,
        token=token,
        client=client[:200] if client else None,
        resume=resume,
        subscribe=sub,
        subscribe_all=raw_sub == ALL,
        role=role,
        filters=filters,
        rid=rid,
    )


def _subscribe(frame: dict[str, Any], rid: object) -> Subscribe:
    residents = _residents(frame.get("residents"), "residents", rid)
    roots = frame.get("roots") or []
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise _fail("field 'roots' must be a list of root prefixes", rid)
    raw_changes = frame.get("changes") or []
    if not isinstance(raw_changes, list):
        raise _fail("field 'changes' must be a list of change kinds", rid)
    try:
        changes = frozenset(ChangeKind(c) for c in raw_changes)
    except ValueError:
        raise _fail(f"field 'changes' may only hold: {', '.join(ChangeKind)}", rid) from None
    crossing = frame.get("crossing")
    if crossing is not None:
        if (
            isinstance(crossing, bool)
            or not isinstance(crossing, int | float)
            or not 0 <= crossing <= 100
        ):
            raise _fail("field 'crossing' must be a confidence between 0 and 100", rid)
    return Subscribe(
        residents=residents, roots=tuple(roots), changes=changes, crossing=crossing, rid=rid
    )


#: Most entries in one filter or focus list of a query.
MAX_FILTER = 100
_STATE_NAMES = ("influencing", "past", "doubtful", "anomalous", "corrected")


def _strings(value: Any, key: str, rid: object) -> tuple[str, ...]:
    """An optional list of non-empty strings (a lone string counts as a list of one)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or len(value) > MAX_FILTER
        or not all(isinstance(v, str) and v and len(v) <= MAX_ID for v in value)
    ):
        raise _fail(
            f"field '{key}' must be a list of at most {MAX_FILTER} non-empty strings "
            f"of at most {MAX_ID} characters",
            rid,
        )
    return tuple(dict.fromkeys(value))


#: The largest ``limit`` of a ``beliefs`` or ``explain`` query.
MAX_LIMIT = 10_000


def _limit(frame: dict[str, Any], rid: object) -> int | None:
    what = f"an integer between 1 and {MAX_LIMIT}"
    limit = _integer(frame, "limit", rid, what, 1)
    if limit is not None and limit > MAX_LIMIT:
        raise _fail(f"field 'limit' must be {what}", rid)
    return limit


def _beliefs_query(frame: dict[str, Any], rid: object) -> BeliefsQuery:
    resident = _str(frame, "resident", rid)
    assert resident is not None
    states = _strings(frame.get("states"), "states", rid)
    if any(state not in _STATE_NAMES for state in states):
        raise _fail(f"field 'states' may only hold: {', '.join(_STATE_NAMES)}", rid)
    minimum = _integer(frame, "min_confidence", rid, "an integer between 0 and 100", 0)
    if minimum is not None and minimum > 100:
        raise _fail("field 'min_confidence' must be an integer between 0 and 100", rid)
    return BeliefsQuery(
        resident=resident,
        after=_str(frame, "after", rid, required=False),
        root=_str(frame, "root", rid, required=False),
        prefixes=_strings(frame.get("prefix"), "prefix", rid),
        states=states,
        people=_strings(frame.get("people"), "people", rid),
        places=_strings(frame.get("places"), "places", rid),
        min_confidence=minimum,
        limit=_limit(frame, rid),
        rid=rid,
    )


def _narrative_query(frame: dict[str, Any], rid: object) -> NarrativeQuery:
    resident = _str(frame, "resident", rid)
    assert resident is not None
    budget = _integer(frame, "budget", rid, "an integer between 200 and 50000 characters")
    budget = budget or 2000  # absent, nil or 0: the default
    if not 200 <= budget <= 50_000:
        raise _fail("field 'budget' must be an integer between 200 and 50000 characters", rid)
    lang = frame.get("lang") or "en"
    if lang not in ("en", "zh-Hant"):
        raise _fail("field 'lang' must be 'en' or 'zh-Hant'", rid)
    focus = frame.get("focus")
    if focus is None:
        focus = {}
    if not isinstance(focus, dict):
        raise _fail("field 'focus' must be a map of people, places, roots and topics", rid)
    return NarrativeQuery(
        resident=resident,
        budget=budget,
        lang=lang,
        people=_strings(focus.get("people"), "focus.people", rid),
        places=_strings(focus.get("places"), "focus.places", rid),
        roots=_strings(focus.get("roots"), "focus.roots", rid),
        topics=_strings(focus.get("topics"), "focus.topics", rid),
        rid=rid,
    )


def _page_limit(frame: dict[str, Any], rid: object, default: int) -> int:
    what = f"an integer between 1 and {MAX_PAGE}"
    limit = _integer(frame, "limit", rid, what, 1)
    if limit is None:
        return default
    if limit > MAX_PAGE:
        raise _fail(f"field 'limit' must be {what}", rid)
    return limit


def _cursor(frame: dict[str, Any], rid: object) -> str | None:
    """A graph page's ``after``: the ``next`` of the previous page, a non-empty string."""
    value = frame.get("after")
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_CURSOR:
        raise _fail(
            f"field 'after' must be the 'next' of an earlier graph page (a non-empty string "
            f"of at most {MAX_CURSOR} characters)",
            rid,
        )
    return value


def _residents_query(frame: dict[str, Any], rid: object) -> ResidentsQuery:
    after = _str(frame, "after", rid, required=False)
    return ResidentsQuery(after=after, limit=_page_limit(frame, rid, RESIDENTS_PAGE), rid=rid)


def _events_query(frame: dict[str, Any], rid: object) -> EventsQuery:
    start = _integer(frame, "from", rid, "an event seq (an integer of at least 1)", 1)
    limit = _page_limit(frame, rid, EVENTS_PAGE)
    return EventsQuery(start=1 if start is None else start, limit=limit, rid=rid)


def _said_query(frame: dict[str, Any], rid: object) -> SaidQuery:
    resident = _str(frame, "resident", rid)
    assert resident is not None
    start = _integer(frame, "from", rid, "an event seq (an integer of at least 1)", 1)
    limit = _page_limit(frame, rid, SAID_PAGE)
    return SaidQuery(resident=resident, start=1 if start is None else start, limit=limit, rid=rid)


def _promises_query(frame: dict[str, Any], rid: object) -> PromisesQuery | GoalsQuery:
    """``promises`` or ``goals``: a resident, an optional state, an ``after`` id cursor."""
    kind = frame["type"]
    resident = _str(frame, "resident", rid)
    assert resident is not None
    states = PROMISE_STATES if kind == "promises" else GOAL_STATES
    state = frame.get("state")
    if state is not None and state not in states:
        raise _fail(f"field 'state' must be one of {', '.join(states)}", rid)
    after = _str(frame, "after", rid, required=False)
    limit = _page_limit(frame, rid, PROMISES_PAGE)
    cls = PromisesQuery if kind == "promises" else GoalsQuery
    return cls(resident=resident, state=state, after=after, limit=limit, rid=rid)


def _trust_query(frame: dict[str, Any], rid: object) -> TrustQuery:
    """A ``trust`` frame without ``value``: a page of the trust table from an ``after`` cursor
    (the ``next`` of the previous page: :func:`trust_cursor`), of ``source``'s entries if given."""
    resident = _str(frame, "resident", rid)
    assert resident is not None
    source = _str(frame, "source", rid, required=False)
    limit = _page_limit(frame, rid, TRUST_PAGE)
    raw = frame.get("after")
    after = None
    if raw is not None:
        if isinstance(raw, str) and 0 < len(raw) <= MAX_CURSOR:
            after = parse_trust_cursor(raw)
        if after is None or (source is not None and after[0] != source):
            of = f"of source {source!r} " if source is not None else ""
            raise _fail(
                f"field 'after' must be the 'next' of an earlier trust page {of}(a string "
                f"naming a trust entry: its source, '%' and ':' escaped as %25 and %3A, then "
                f"':' and the topic for a topic entry; at most {MAX_CURSOR} characters)",
                rid,
            )
    return TrustQuery(resident=resident, source=source, after=after, limit=limit, rid=rid)


def _event_id(frame: dict[str, Any]) -> str | None:
    """The frame's event_id, echoed in errors only when it is well formed."""
    value = frame.get("event_id")
    return value if isinstance(value, str) and len(value) <= MAX_ID else None


def parse_client_frame(frame: dict[str, Any]) -> ClientFrame:
    """Validate a decoded frame sent after the handshake."""
    kind = frame.get("type")
    rid = _rid(frame)
    if not isinstance(kind, str):
        raise ProtocolError(ErrorCode.BAD_FRAME, "every frame needs a string 'type'", rid=rid)
    if kind == "trust" and frame.get("value") is None:
        return _trust_query(frame, rid)
    if kind in ("event", "trust", "propose", "register", "schema"):
        # ``trust`` with a value, ``propose``, ``register`` and ``schema`` are events of that
        # kind: logged, replayable.
        data = _whole_claim_values(frame if kind == "event" else {**frame, "kind": kind})
        try:
            event = parse_event(data)
        except ContractViolation as exc:
            raise ProtocolError(
                ErrorCode.CONTRACT_VIOLATION,
                str(exc),
                rid=rid,
                event_id=_event_id(frame),
                reason=exc.reason,
            ) from None
        except InvalidEvent as exc:
            raise ProtocolError(
                ErrorCode.INVALID_EVENT, str(exc), rid=rid, event_id=_event_id(frame)
            ) from None
        named = len(event.hearers())
        if named > MAX_RESIDENTS:
            raise ProtocolError(
                ErrorCode.TOO_MANY_RESIDENTS,
                f"the event names {named} witnesses, listeners, overhearers and audience; "
                f"at most {MAX_RESIDENTS} (welcome.max_residents)",
                rid=rid,
                event_id=event.event_id,
            )
        return EventFrame(event=event, rid=rid)
    if kind == "subscribe":
        return _subscribe(frame, rid)
    if kind == "unsubscribe":
        raw = frame.get("residents")
        return Unsubscribe(
            residents=None if raw is None else _residents(raw, "residents", rid), rid=rid
        )
    if kind == "beliefs":
        return _beliefs_query(frame, rid)
    if kind == "explain":
        resident, root = _str(frame, "resident", rid), _str(frame, "root", rid)
        assert resident is not None and root is not None
        return ExplainQuery(resident=resident, root=root, limit=_limit(frame, rid), rid=rid)
    if kind == "distribution":
        root = _str(frame, "root", rid)
        assert root is not None
        return DistributionQuery(root=root, rid=rid)
    if kind == "narrative":
        return _narrative_query(frame, rid)
    if kind == "graph":
        resident = _str(frame, "resident", rid, required=False)
        root = _str(frame, "root", rid, required=False)
        if resident is None and root is None:
            raise _fail("a graph query needs 'resident', 'root' or both", rid)
        return GraphQuery(
            resident=resident, root=root, after=_cursor(frame, rid),
            limit=_page_limit(frame, rid, GRAPH_PAGE), rid=rid,
        )  # fmt: skip
    if kind == "residents":
        return _residents_query(frame, rid)
    if kind == "events":
        return _events_query(frame, rid)
    if kind == "said":
        return _said_query(frame, rid)
    if kind in ("promises", "goals"):
        return _promises_query(frame, rid)
    if kind in WORLD_FRAMES:
        return parse_world_frame(frame, rid)
    if kind == "hello":
        raise _fail("'hello' was already received on this connection", rid)
    raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown frame type {kind!r}", rid=rid)


# --------------------------------------------------------------------------- outbound


def belief_frame(change: Change) -> dict[str, Any]:
    """The ``belief`` notification for one committed change record."""
    return {
        "type": "belief",
        "seq": change.seq,
        "resident": change.resident,
        "root": change.root,
        "value": change.value_after,
        "prev_value": change.value_before,
        "change": str(change.kind),
        "confidence": change.confidence_after,
        "prev_confidence": change.confidence_before,
        "state": str(change.state_after),
        "prev_state": None if change.state_before is None else str(change.state_before),
        "source_kind": str(change.source_kind),
        "source": change.source_resident_id,
        "subject": wire_text(change.subject_after),
        "prev_subject": wire_text(change.subject_before),
        "event_id": change.event_id,
        "evidence_id": change.evidence_id,
        "day": change.day,
        "detail": change.detail,
    }


#: A belief summary lists this many of its first and of its latest evidence refs (all of
#: them when it has at most twice as many); ``evidence_count`` counts every one. These are
#: exactly the refs a belief keeps (``sidecar.engine.EVIDENCE_REFS_KEPT``).
EVIDENCE_REFS_SHOWN = EVIDENCE_REFS_KEPT
#: A belief summary lists at most this many of its people, places and topics (the first
#: gathered); ``people_count`` and the like count every one.
TAGS_SHOWN = 20


def evidence_refs(refs: tuple[str, ...] | list[str]) -> list[str]:
    """The first and the latest refs of a belief: a bounded list however often it was seen
    (``explain`` pages through every one)."""
    if len(refs) <= 2 * EVIDENCE_REFS_SHOWN:
        return list(refs)
    return [*refs[:EVIDENCE_REFS_SHOWN], *refs[-EVIDENCE_REFS_SHOWN:]]


def belief_summary(b: Belief) -> dict[str, Any]:
    """A belief as carried in ``beliefs``/``explanation`` replies."""
    return {
        "resident": b.resident,
        "root": b.root,
        "value": b.value,
        "subject": wire_text(b.subject),
        "interpretation": wire_text(b.interpretation),
        "people": list(b.people[:TAGS_SHOWN]),
        "places": list(b.places[:TAGS_SHOWN]),
        "topics": list(b.topics[:TAGS_SHOWN]),
        "people_count": len(b.people),
        "places_count": len(b.places),
        "topics_count": len(b.topics),
        "confidence": b.confidence,
        "state": str(b.state),
        "source_kind": str(b.source_kind),
        "source": b.source_resident_id,
        "intervention": None if b.intervention is None else str(b.intervention),
        "evidence_refs": evidence_refs(b.evidence_refs),
        "evidence_count": b.evidence_count,
        "formed_day": b.formed_day,
        "updated_day": b.updated_day,
        "importance": b.importance,
        "remembered_day": b.remembered_day,
    }


def change_summary(c: Change) -> dict[str, Any]:
    """A change record as carried in ``explanation`` histories and ``trust`` replies."""
    return {
        "seq": c.seq,
        "change": str(c.kind),
        "confidence": c.confidence_after,
        "prev_confidence": c.confidence_before,
        "state": str(c.state_after),
        "prev_state": None if c.state_before is None else str(c.state_before),
        "value": c.value_after,
        "prev_value": c.value_before,
        "subject": wire_text(c.subject_after),
        "prev_subject": wire_text(c.subject_before),
        "source_kind": str(c.source_kind),
        "source": c.source_resident_id,
        "event_id": c.event_id,
        "evidence_id": c.evidence_id,
        "day": c.day,
        "detail": c.detail,
    }
