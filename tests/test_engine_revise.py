"""Revision under late events (rules.late_event_days): a belief's days never move back."""

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
