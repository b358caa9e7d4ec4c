"""Frame validation at the edge (protocol/frames.py, protocol/worlds.py): the resident
lists of hello/subscribe/unsubscribe, and every integer field taking an integral float."""

from __future__ import annotations

from typing import Any

import pytest

from protocol import (
    BeliefsQuery,
    ErrorCode,
    EventFrame,
    ForkWorld,
    NarrativeQuery,
    ProtocolError,
    parse_client_frame,
    parse_hello,
)

HELLO = {"type": "hello", "protocol": 1, "world": "town"}


def _refused(frame: dict[str, Any], *, hello: bool = False) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        (parse_hello if hello else parse_client_frame)(frame)
    return caught.value


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "subscribe", "residents": ["*"]},
        {"type": "subscribe", "residents": ["mira", "*"]},
        {"type": "unsubscribe", "residents": ["*"]},
    ],
)
def test_a_star_inside_a_resident_list_is_refused(frame: dict[str, Any]) -> None:
    """["*"] is refused invalid_frame (it would match nothing), naming the fix: "*" alone."""
    error = _refused({**frame, "rid": 7})
    assert error.code is ErrorCode.INVALID_FRAME and error.rid == 7
    assert '"*"' in error.message and "not in a list" in error.message


def test_a_star_inside_the_hello_subscribe_list_is_refused() -> None:
    """hello.subscribe ["*"] is a handshake refusal (invalid_frame), not a silent no-op."""
    error = _refused({**HELLO, "subscribe": ["*"]}, hello=True)
    assert error.code is ErrorCode.INVALID_FRAME and "subscribe" in error.message


def test_a_star_alone_still_means_everyone() -> None:
    """residents "*" (no list) is the every-resident filter, as before."""
    frame = parse_client_frame({"type": "subscribe", "residents": "*"})
    assert getattr(frame, "residents", "missing") is None
    assert parse_hello({**HELLO, "subscribe": "*"}).subscribe_all


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "event", "event_id": "g-1", "day": 1.0, "kind": kind, **fields}


def test_every_integer_field_takes_an_integral_float() -> None:
    """protocol, resume, min_confidence, budget, fork.at and every claim value: 5.0 is 5."""
    hello = parse_hello({**HELLO, "protocol": 1.0, "resume": 12.0})
    assert (hello.protocol, hello.resume) == (1, 12) and type(hello.resume) is int
    beliefs = parse_client_frame({"type": "beliefs", "resident": "mira", "min_confidence": 50.0})
    assert isinstance(beliefs, BeliefsQuery) and beliefs.min_confidence == 50
    narrative = parse_client_frame({"type": "narrative", "resident": "mira", "budget": 600.0})
    assert isinstance(narrative, NarrativeQuery) and narrative.budget == 600
    fork = parse_client_frame({"type": "fork", "into": "slot", "at": 1.0})
    assert isinstance(fork, ForkWorld) and fork.at == 1 and type(fork.at) is int
    observe = parse_client_frame(
        _event("observe", witnesses=["mira"], claim={"root": "r", "value": 12.0}, subject="s")
    )
    assert isinstance(observe, EventFrame)
    assert observe.event.to_dict()["claim"]["value"] == 12
    assert type(observe.event.to_dict()["claim"]["value"]) is int


def test_schema_values_and_edit_values_take_integral_floats() -> None:
    """A schema's declared values and a proposal's edit values are claim values too."""
    schema = parse_client_frame(
        {"type": "schema", "event_id": "s", "day": 1.0,
         "roots": [{"prefix": "festival:", "values": [12.0, 13, "x", True]}]}
    )  # fmt: skip
    assert isinstance(schema, EventFrame)
    values = schema.event.to_dict()["roots"][0]["values"]
    assert values == [12, 13, "x", True] and [type(v) for v in values] == [int, int, str, bool]
    propose = parse_client_frame(
        {"type": "propose", "event_id": "p", "day": 1.0, "resident": "mira",
         "edits": [{"root": "festival:day", "value": 12.0}]}
    )  # fmt: skip
    assert isinstance(propose, EventFrame)
    edit = propose.event.to_dict()["edits"][0]
    assert edit["value"] == 12 and type(edit["value"]) is int


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"type": "fork", "into": "slot", "at": 1.5}, ErrorCode.INVALID_FRAME),
        ({"type": "fork", "into": "slot", "at": -1.0}, ErrorCode.INVALID_FRAME),
        ({"type": "fork", "into": "slot", "at": 2.0**53}, ErrorCode.INVALID_FRAME),
        ({"type": "fork", "into": "slot", "at": True}, ErrorCode.INVALID_FRAME),
        ({"type": "beliefs", "resident": "m", "min_confidence": 50.5}, ErrorCode.INVALID_FRAME),
        (
            {"type": "schema", "event_id": "s", "day": 1, "roots": [
                {"prefix": "f:", "values": [12.5]}]},
            ErrorCode.INVALID_EVENT,
        ),
        (
            {"type": "propose", "event_id": "p", "day": 1, "resident": "m",
             "edits": [{"root": "r", "value": 1.5}]},
            ErrorCode.INVALID_EVENT,
        ),
    ],
)  # fmt: skip
def test_a_fraction_or_a_float_beyond_the_safe_range_is_still_refused(
    frame: dict[str, Any], code: ErrorCode
) -> None:
    """1.5, -1.0, 2^53 and true are no integers: the field's usual error."""
    assert _refused(frame).code is code
