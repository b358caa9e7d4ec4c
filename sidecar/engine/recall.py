"""Misremembering (會記錯): recall of a belief's details can drift, replayably.

Off by default. A world whose rules set ``misremember`` (a probability in [0, 1]) lets a
resident's recall of a belief's *details* drift each time the belief is recalled — whenever
evidence touches a belief the resident already holds. What can drift:

* a place it was remembered at becomes another place the recalling event names (one the
  belief did not hold before), so "the key was at the café" can become "at the mill";
* likewise a person it was remembered with becomes another person the event names;
* the day the resident remembers it from (``remembered_day``, first the day it formed)
  moves by 1–3 days either way.

Never the value, the confidence, the state or the provenance: a drift is its own change
record (kind ``misremembered``, ``detail`` a JSON map ``{"field", "before", "after"}``) and
the original stays in that record and in the evidence rows. The draw is a pure function of
the world's ``seed``, the event id, the resident and the root (SHA-256), not of any global
random state, so a replay of the world log drifts exactly the same way and ``rebuild
--check`` stays exact.
"""

from __future__ import annotations

import hashlib
import json

from .model import Belief, Change, ChangeKind, evolve, unique
from .revise import change_between
from .rules import Rules

__all__ = ["draw", "misremember"]


def draw(seed: int, event_id: str, resident: str, root: str) -> bytes:
    """32 deterministic bytes for one recall (the world's seed, the event, the belief)."""
    material = json.dumps([seed, event_id, resident, root], ensure_ascii=False)
    return hashlib.sha256(material.encode()).digest()


def _unit(chunk: bytes) -> float:
    """A number in [0, 1) from 8 bytes."""
    return int.from_bytes(chunk, "big") / 2**64


def misremember(
    belief: Belief,
    before: Belief,
    *,
    event_id: str,
    day: float,
    places: tuple[str, ...],
    people: tuple[str, ...],
    rules: Rules,
) -> tuple[Belief, Change | None]:
    """Maybe drift one detail of ``belief`` (``before`` revised by the recalling event) as
    the event ``event_id`` recalls it.

    ``places`` and ``people`` are what the recalling event names; those ``before`` did not
    hold are what an old place or person may drift to. Returns the belief unchanged and
    ``None`` when nothing drifts.
    """
    if rules.misremember <= 0:
        return belief, None
    bits = draw(rules.seed, event_id, belief.resident, belief.root)
    if _unit(bits[:8]) >= rules.misremember:
        return belief, None
    options: list[str] = []
    old_places = [p for p in before.places if p in belief.places]
    old_people = [p for p in before.people if p in belief.people]
    other_places = [p for p in places if p not in before.places]
    other_people = [p for p in people if p not in before.people and p != belief.resident]
    if old_places and other_places:
        options.append("places")
    if old_people and other_people:
        options.append("people")
    options.append("remembered_day")
    field = options[int(_unit(bits[8:16]) * len(options))]
    pick = int(_unit(bits[16:24]) * 1_000_000)
    after: Belief
    if field == "places":
        gone = old_places[pick % len(old_places)]
        new = other_places[(pick // len(old_places)) % len(other_places)]
        before_v: object = list(belief.places)
        after_v: object
        moved = unique([new if p == gone else p for p in belief.places])
        after, after_v = evolve(belief, places=moved), list(moved)
    elif field == "people":
        gone = old_people[pick % len(old_people)]
        new = other_people[(pick // len(old_people)) % len(other_people)]
        before_v = list(belief.people)
        moved = unique([new if p == gone else p for p in belief.people])
        after, after_v = evolve(belief, people=moved), list(moved)
    else:
        was = belief.formed_day if belief.remembered_day is None else belief.remembered_day
        shift = (pick % 3 + 1) * (1 if bits[24] & 1 else -1)
        now = max(0.0, was + shift)
        if now == was:
            now = was + abs(shift)
        before_v = was
        after, after_v = evolve(belief, remembered_day=now), now
    detail = json.dumps({"field": field, "before": before_v, "after": after_v}, ensure_ascii=False)
    change = change_between(
        belief, after, ChangeKind.MISREMEMBERED, event_id=event_id, day=day, detail=detail
    )
    return after, change
