"""Revision details the SPEC states: late events keep a belief's later days (§7.1), the default
act subject (§7.5)."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.engine import MemoryWorld, Rules, parse_event

LATE = Rules(late_event_days=30.0)


def _observe(event_id: str, day: float, value: str = "clean") -> dict[str, Any]:
    return {"event_id": event_id, "day": day, "kind": "observe", "witnesses": ["mira"],
            "claim": {"root": "water:well", "value": value}, "subject": f"it is {value}"}  # fmt: skip


def _implant(event_id: str, day: float) -> dict[str, Any]:
    return {"event_id": event_id, "day": day, "kind": "intervene", "resident": "mira",
            "op": "implant", "claim": {"root": "water:well", "value": "poisoned"},
            "subject": "the well is poisoned"}  # fmt: skip


@pytest.mark.parametrize(
    "late", [_observe("late", 3.0), _observe("late", 3.0, "dirty"), _implant("late", 3.0)]
)
def test_a_late_event_keeps_the_belief_s_later_days(late: dict[str, Any]) -> None:
    """A support, a contradiction or an implant dated before the belief's last update leaves
    updated_day at the later day, and the change record carries the event's own day."""
    world = MemoryWorld(LATE)
    world.apply(parse_event(_observe("first", 10.0)))
    world.apply(parse_event(late))
    belief = world.beliefs[("mira", "water:well")]
    assert belief.formed_day == 10.0 and belief.updated_day == 10.0
    assert world.changes[-1].event_id == "late" and world.changes[-1].day == 3.0
    assert world.day == 10.0  # a late event never moves the clock back


@pytest.mark.parametrize(
    ("status", "subject", "expected"),
    [
        ("completed", None, "mira did fetch water"),
        ("completed", "", "mira did fetch water"),
        ("rejected", None, "mira's fetch water was rejected"),
        ("interrupted", None, "mira's fetch water was interrupted"),
        ("replaced", "Mira gave up", "Mira gave up"),
    ],
)
def test_the_default_act_subject_is_the_spec_s(
    status: str, subject: str | None, expected: str
) -> None:
    """SPEC §7.5: without a subject (or an empty one) an act reads "<actor> did <action>" or
    "<actor>'s <action> was <status>", underscores read as spaces."""
    world = MemoryWorld(Rules())
    event = {"event_id": "a-1", "day": 1.0, "kind": "act", "actor": "mira",
             "action": "fetch_water", "status": status, "subject": subject}  # fmt: skip
    world.apply(parse_event(event))
    assert world.beliefs[("mira", "action:mira:fetch_water")].subject == expected
