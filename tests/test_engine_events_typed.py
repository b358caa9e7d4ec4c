"""Typed events: one frozen class per kind, and nothing ill-typed gets past parsing.

Every field of every kind is replaced by hostile values (lists where strings go, maps, NaN,
huge numbers, nil, bytes); :func:`parse_event` must either build a well-typed event that
replays from its canonical form and folds without a stray exception, or refuse it with
:class:`InvalidEvent`, never anything else.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from belief_builders import act, announce, intervene, observe, say, tick
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.engine import (
    Act,
    Announce,
    Claim,
    Edit,
    EngineError,
    Intervene,
    InvalidEvent,
    MemoryWorld,
    Observe,
    Op,
    Propose,
    Say,
    Tick,
    Trust,
    WorldEvent,
    parse_event,
)


def trust(day: float = 1, **extra: Any) -> dict[str, Any]:
    return {"event_id": "t1", "day": day, "kind": "trust", "resident": "mira",
            "source": "bo", "value": 0.4, "topic": "gossip", **extra}  # fmt: skip


def propose(*edits: dict[str, Any]) -> dict[str, Any]:
    return {"event_id": "p1", "day": 3, "kind": "propose", "resident": "mira",
            "edits": list(edits) or [{"root": "r", "subject": "reworded"}]}  # fmt: skip


FULL_EDIT = {"root": "r", "subject": "s", "interpretation": "i", "value": 1,
             "source_kind": "firsthand", "source": "bo", "state": "influencing",
             "confidence": 80, "merge": ["r"], "people": ["bo"], "places": ["well"],
             "topics": ["water"]}  # fmt: skip

#: One valid event of every kind (and op), each with every optional field it can carry.
SAMPLES: list[dict[str, Any]] = [
    observe(1.5, ["mira", "kai"], "r", "x", interpretations={"kai": "odd"}, importance=2,
            emotion=1, people=["bo"], places=["well"], topics=["water"]),
    say(2, "bo", ["mira"], "r", 7, topic="gossip", overhearers=["kai"], importance=1,
        people=["ann"], topics=["x"]),
    announce(3, "bo", "*", "r", True),
    announce(3, "bo", ["mira", "kai"], "r", False),
    act(4, "kai", "open_door", "interrupted", ["mira"], subject="Kai tries the door"),
    intervene(5, "mira", "implant", "r", "x"),
    intervene(5, "mira", "distort", "r", "y", subject="twisted"),
    intervene(5, "mira", "suppress", "r"),
    intervene(5, "mira", "soften", "r"),
    tick(6),
    trust(),
    propose(FULL_EDIT, {"root": "q", "subject": "other"}),
]  # fmt: skip
SAMPLES[0]["claim"]["mutable"] = True

CLASSES = {"observe": Observe, "say": Say, "announce": Announce, "act": Act,
           "intervene": Intervene, "tick": Tick, "trust": Trust, "propose": Propose}  # fmt: skip


def hostile() -> st.SearchStrategy[Any]:
    """Values a hostile peer can put anywhere: every msgpack type, at its edges."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(["", "*", "\x00", "x" * 5000, "mira", "implant", "completed", "r"]),
        st.text(max_size=8),
        st.binary(max_size=4),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=6,
    )


def paths(event: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a sample (maps and list entries), to replace one of them."""
    out = [prefix] if prefix else []
    if isinstance(event, dict):
        for key, value in event.items():
            out.extend(paths(value, (*prefix, key)))
    elif isinstance(event, list):
        for i, value in enumerate(event):
            out.extend(paths(value, (*prefix, i)))
    return out


def patched(event: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(event, dict):
        return {**event, head: patched(event[head], rest, value)}
    copy = list(event)
    copy[head] = patched(copy[head], rest, value)
    return copy


def check_well_typed(event: WorldEvent) -> None:
    """What the engine relies on, field by field, whatever the input was."""
    assert isinstance(event.event_id, str) and event.event_id
    assert type(event.day) is float and math.isfinite(event.day)
    for name in ("witnesses", "listeners", "overhearers", "people", "places", "topics"):
        value = getattr(event, name, ())
        assert isinstance(value, tuple) and all(isinstance(v, str) and v for v in value)
    if isinstance(event, Propose):
        for edit in event.edits:
            assert isinstance(edit, Edit) and isinstance(edit.root, str)
            for name in ("merge", "people", "places", "topics"):
                tags = getattr(edit, name)
                assert tags is None or all(isinstance(t, str) for t in tags)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_value_in_any_field_is_typed_or_refused(data: st.DataObject) -> None:
    """One field of a valid event replaced by anything: InvalidEvent, or a well-typed event
    that replays equal from its canonical form and folds without a non-engine error."""
    sample = data.draw(st.sampled_from(SAMPLES))
    path = data.draw(st.sampled_from(paths(sample)))
    value = data.draw(hostile())
    try:
        event = parse_event(patched(sample, path, value))
    except InvalidEvent:
        return
    check_well_typed(event)
    assert parse_event(event.to_dict()) == event
    world = MemoryWorld()
    world.apply(parse_event(observe(0, ["mira"], "r", "held")))
    try:
        world.apply(event)
    except EngineError:
        pass


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda e: f"{e['kind']}:{e.get('op', '')}")
def test_each_kind_parses_to_its_own_class_and_round_trips(sample: dict[str, Any]) -> None:
    """observe → Observe, …; the canonical form parses back to an equal event."""
    event = parse_event(sample)
    assert type(event) is CLASSES[sample["kind"]]
    assert isinstance(event, WorldEvent)
    assert parse_event(event.to_dict()) == event
    assert parse_event(event.to_dict()).to_dict() == event.to_dict()


@pytest.mark.parametrize("field", ["merge", "people", "places", "topics"])
@pytest.mark.parametrize("value", [5, "r", {"r": 1}, [5], [["r"]], True])
def test_edit_lists_must_be_lists_of_strings(field: str, value: Any) -> None:
    """Issue 9 item 1: `merge: 5` (or any non-list-of-strings tag list) is refused at parse."""
    with pytest.raises(InvalidEvent, match=f"edits.{field}"):
        parse_event(propose({"root": "r", field: value}))


@pytest.mark.parametrize(
    ("field", "value"),
    [("subject", 5), ("interpretation", ["x"]), ("value", 1.5), ("value", [1]),
     ("source_kind", 1), ("source", {"a": 1}), ("state", False), ("confidence", "high"),
     ("confidence", float("nan")), ("root", 5), ("root", None)],
)  # fmt: skip
def test_every_edit_field_is_typed(field: str, value: Any) -> None:
    """Each field of an edit has one type; anything else is refused before the guard runs."""
    with pytest.raises(InvalidEvent):
        parse_event(propose({"root": "r", "subject": "s", field: value}))


def test_edits_keep_their_log_form() -> None:
    """An edit's canonical form is the fields it sets, sorted, lists as lists, as before."""
    event = parse_event(propose({**FULL_EDIT, "ignored": 1, "value": None}))
    assert isinstance(event, Propose)
    expected = {k: v for k, v in sorted(FULL_EDIT.items()) if k != "value"}
    assert event.to_dict()["edits"] == [expected]


@pytest.mark.parametrize("op", [["implant"], {"implant": 1}, 5, None, "erase"])
def test_intervene_op_of_any_other_type_is_invalid(op: Any) -> None:
    """Issue 9 item 2: `op` as a list or map is an InvalidEvent, not `unhashable type`."""
    with pytest.raises(InvalidEvent, match="field 'op'"):
        parse_event({**intervene(1, "mira", "implant", "r", "x"), "op": op})


@pytest.mark.parametrize("status", [["completed"], {"a": 1}, 1])
def test_act_status_of_any_other_type_is_invalid(status: Any) -> None:
    """`status` must be one of the status strings, whatever else is sent."""
    with pytest.raises(InvalidEvent, match="field 'status'"):
        parse_event({**act(1, "kai", "go", "completed"), "status": status})


@pytest.mark.parametrize("kind", [["observe"], {"k": 1}, 7])
def test_kind_of_any_other_type_is_invalid(kind: Any) -> None:
    """An unhashable or non-string kind is an unknown kind."""
    with pytest.raises(InvalidEvent, match="unknown event kind"):
        parse_event({**tick(1), "kind": kind})


@pytest.mark.parametrize(
    "event",
    [say(1, "bo", ["mira"], "r", 1, topic="*"), {**announce(1, "bo", "*", "r", 1), "topic": "*"}],
    ids=["say", "announce"],
)
def test_topic_star_is_refused(event: dict[str, Any]) -> None:
    """Issue 9 item 7: `topic: "*"` is refused (it led `topics`, which cannot hold "*")."""
    with pytest.raises(InvalidEvent, match="field 'topic' must not be"):
        parse_event(event)


def test_classes_check_their_fields_when_built_directly() -> None:
    """Built in code, not parsed, an event still refuses wrong types: once built, valid."""
    claim = Claim(root="r", value=1)
    with pytest.raises(InvalidEvent, match="witnesses"):
        Observe(event_id="e", day=1, claim=claim, subject="s", witnesses=("a", 5))  # type: ignore[arg-type]
    with pytest.raises(InvalidEvent, match="op"):
        Intervene(event_id="e", day=1, resident="a", op="erase", claim=claim)  # type: ignore[arg-type]
    with pytest.raises(InvalidEvent, match="day"):
        Tick(event_id="e", day=math.inf)
    built = Say(event_id="e", day=1, claim=claim, subject="s", speaker="bo",
                listeners=["a", "a"], topic="t")  # type: ignore[arg-type]  # fmt: skip
    assert built.listeners == ("a",) and built.topics == ("t",)
    soft = Intervene(event_id="e", day=1, resident="a", op=Op.SOFTEN, claim=claim)
    assert soft.claim == Claim(root="r", value="")
