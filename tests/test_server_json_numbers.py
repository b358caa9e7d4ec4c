"""Integral floats where integers are expected (Godot's JSON): accepted over the wire, JSON text."""

from __future__ import annotations

from pathlib import Path

import pytest
from wsclient import WsClient, running

from protocol import integral

GODOT_OBSERVE = {
    "kind": "observe",
    "witnesses": ["mira"],
    "claim": {"root": "festival:day", "value": 12.0},
    "subject": "The festival is on day 12",
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(12, 12), (12.0, 12), (-3.0, -3), (0.0, 0), (2.0**53 - 1, 2**53 - 1)],
)
def test_integral_takes_whole_numbers(value: object, expected: int) -> None:
    """integral() gives the integer for an int or a float without a fraction."""
    got = integral(value)
    assert got == expected and type(got) is int


@pytest.mark.parametrize("value", [3.5, True, False, "3", None, 2.0**53, float("inf"), [1]])
def test_integral_refuses_the_rest(value: object) -> None:
    """integral() gives None for fractions, booleans, strings and floats beyond ±(2^53−1)."""
    assert integral(value) is None


async def test_godot_json_session_with_float_integers(tmp_path: Path) -> None:
    """A JSON client whose numbers are all floats says hello, sends, resumes and queries."""
    async with running(tmp_path) as sc:
        hello = {"protocol": 1.0}
        async with WsClient(sc.url, json=True, subscribe="*", hello_extra=hello) as c:
            assert c.welcome is not None and c.welcome["protocol"] == 1
            ack = await c.event(day=1.0, event_id="g-1", **GODOT_OBSERVE)
            assert ack["type"] == "ack" and ack["changes"] == 1
            note = await c.next_of("belief")
            assert note["value"] == 12 and type(note["value"]) is int
            # 12.0 and 12 are one value: the same claim as an integer only reinforces.
            ack = await c.event(day=2.0, event_id="g-2", **{**GODOT_OBSERVE, "claim": {
                "root": "festival:day", "value": 12}})  # fmt: skip
            assert ack["changes"] == 1
            assert (await c.next_of("belief"))["change"] == "reinforced"
            reply = await c.request({"type": "narrative", "resident": "mira", "budget": 600.0})
            assert reply["type"] == "narrative" and reply["budget"] == 600
        # Echo the first seq back as Godot would: 1.0. The backlog holds seq 2 only.
        resume = {"protocol": 1.0, "resume": 1.0}
        async with WsClient(sc.url, json=True, subscribe=["mira"], hello_extra=resume) as c:
            assert c.welcome is not None, c.hello_error
            note = await c.next_of("belief")
            assert note["seq"] == 2
            resumed = await c.next_of("resumed")
            assert resumed["sent"] == 1


async def test_non_integral_floats_are_refused_clearly(tmp_path: Path) -> None:
    """3.5 where an integer is expected is refused with a message saying why."""
    async with running(tmp_path) as sc:
        async with WsClient(sc.url, json=True, hello_extra={"resume": 3.5}) as c:
            assert c.hello_error is not None
            assert c.hello_error["code"] == "invalid_frame"
            assert "not a whole number" in c.hello_error["message"]
            assert await c.wait_closed() == 4011
        async with WsClient(sc.url, json=True) as c:
            reply = await c.request({"type": "narrative", "resident": "mira", "budget": 600.5})
            assert reply["code"] == "invalid_frame" and "not a whole number" in reply["message"]
            claim = {"root": "festival:day", "value": 12.5}
            error = await c.event(day=1.0, event_id="g-3", **{**GODOT_OBSERVE, "claim": claim})
            assert error["type"] == "error" and error["code"] == "invalid_event"
            # The connection survives both refusals.
            ack = await c.event(day=1.0, event_id="g-3", **GODOT_OBSERVE)
            assert ack["type"] == "ack" and ack["changes"] == 1


async def test_godot_json_fork_at_an_integral_float(tmp_path: Path) -> None:
    """fork.at 1.0 over JSON text forks at event seq 1 (it was refused before)."""
    async with running(tmp_path) as sc, WsClient(sc.url, json=True) as c:
        for day in (1.0, 2.0):
            ack = await c.event(day=day, **GODOT_OBSERVE)
            assert ack["type"] == "ack", ack
        reply = await c.request({"type": "fork", "into": "slot", "at": 1.0})
        assert reply["type"] == "forked", reply
        assert reply["events"] == 1 and reply["day"] == 1.0


async def test_a_star_in_a_resident_list_is_refused_over_the_wire(tmp_path: Path) -> None:
    """subscribe ["*"] is answered invalid_frame and the connection stays open."""
    async with running(tmp_path) as sc:
        async with WsClient(sc.url, json=True) as c:
            reply = await c.request({"type": "subscribe", "residents": ["*"]})
            assert reply["type"] == "error" and reply["code"] == "invalid_frame"
            reply = await c.request({"type": "subscribe", "residents": "*"})
            assert reply["type"] == "subscribed"
        async with WsClient(sc.url, json=True, subscribe=["*"]) as c:
            assert c.hello_error is not None and c.hello_error["code"] == "invalid_frame"
            assert await c.wait_closed() == 4011
