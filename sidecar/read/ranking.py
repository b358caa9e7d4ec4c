"""Ranking a resident's memories for the moment at hand: a focus and a documented score.

In the spirit of Generative Agents' retrieval (recency + importance + relevance), but
deterministic and explainable: every line of a narrative carries ``why`` (its score and
the parts it is made of, and the focus terms it matched).

**Focus.** The game may say what is present now: ``people`` and ``places`` (ids), root
``roots`` (prefixes) and free ``topics``. A memory *matches* a term when

* a person is in its ``people``, among those who told it, the actor of an act or the source
  of a trust line, a segment of its root, or one of their registered names occurs in its
  subject;
* a place or topic is in its ``places``/``topics``, a segment of its root, or occurs in its
  subject (case-insensitively);
* a root prefix starts its root.

**Score** (higher first), each part in [0, 1]::

    score = 3 · relevance + recency + importance + 0.5 · confidence
    relevance  = 1 − 0.5^m           m = focus terms matched (0 → 0, 1 → 0.5, 2 → 0.75)
    recency    = 0.5^(age / 7)       age = world day − the memory's last update (days)
    importance = min(1, importance)  the highest ``importance`` its evidence carried
    confidence = confidence / 100

**Tiers** come before the score (see :func:`.items.tier_of`): contested, then corrected,
then told/people/acts that match the focus, then sure/believed memories that match it,
then told/people/acts, then sure/believed, then faded. So under any budget, hearsay, doubts,
anomalies and corrections about the focus come before plain sure facts. A firsthand memory
the game marked important (``importance`` ≥ :data:`.items.NOTABLE_AT`: a broken fence, a
fight) ranks with told/people/acts; someone else's chore done as usual (every episode
completed, nothing marked important) ranks with the plain facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .items import Item, tier_of
from .registry import Registry

__all__ = [
    "CONFIDENCE_WEIGHT",
    "HALF_LIFE_DAYS",
    "RELEVANCE_WEIGHT",
    "Focus",
    "rank",
    "score_parts",
]

RELEVANCE_WEIGHT = 3.0
CONFIDENCE_WEIGHT = 0.5
HALF_LIFE_DAYS = 7.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Focus:
    """What is present now; empty lists mean no focus (ranking by the rest of the score)."""

    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.people or self.places or self.roots or self.topics)

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "people": list(self.people),
            "places": list(self.places),
            "roots": list(self.roots),
            "topics": list(self.topics),
        }


def _occurs(term: str, text: str) -> bool:
    return bool(term) and term.casefold() in text.casefold()


def matches(item: Item, focus: Focus, registry: Registry) -> list[str]:
    """The focus terms ``item`` matches, as ``kind:term`` strings, in focus order."""
    b = item.belief
    segments = set(b.root.split(":"))
    subject = b.subject or ""
    related = {*b.people, *b.heard_from, *(item.extra or {}).get("_people", ())}
    found: list[str] = []
    for person in focus.people:
        names = registry.all_names(person)
        if (
            person in related
            or person in segments
            or any(_occurs(n, subject) for n in names if len(n) >= 2)
        ):
            found.append(f"person:{person}")
    for place in focus.places:
        if place in b.places or place in segments or _occurs(place, subject):
            found.append(f"place:{place}")
    for prefix in focus.roots:
        if b.root.startswith(prefix):
            found.append(f"root:{prefix}")
    for topic in focus.topics:
        if topic in b.topics or topic in segments or _occurs(topic, subject):
            found.append(f"topic:{topic}")
    return found


def score_parts(item: Item, matched: Sequence[str], today: float) -> dict[str, float]:
    """The parts of the score (rounded to 4 places, so the order is stable)."""
    b = item.belief
    relevance = 1 - 0.5 ** len(matched)
    age = max(0.0, today - b.updated_day)
    recency = 0.5 ** (age / HALF_LIFE_DAYS)
    importance = min(1.0, b.importance or 0.0)
    confidence = b.confidence / 100
    score = RELEVANCE_WEIGHT * relevance + recency + importance + CONFIDENCE_WEIGHT * confidence
    return {
        "score": round(score, 4),
        "relevance": round(relevance, 4),
        "recency": round(recency, 4),
        "importance": round(importance, 4),
        "confidence": round(confidence, 4),
    }


def rank(items: Iterable[Item], focus: Focus, today: float, registry: Registry) -> list[Item]:
    """Every item with its tier, score and ``why`` set for ``focus`` on day ``today``."""
    out = []
    for item in items:
        matched = matches(item, focus, registry) if focus else []
        parts = score_parts(item, matched, today)
        tier = (
            tier_of(item.section, bool(matched), item.social) if item.lines is None else item.tier
        )
        why = {**parts, "tier": tier, "matched": matched}
        out.append(_ranked(item, parts["score"], why, bool(matched), tier))
    return out


def _ranked(item: Item, score: float, why: dict[str, Any], relevant: bool, tier: int) -> Item:
    """``item`` with its rank set (spelled out: :func:`dataclasses.replace` costs several
    times more, and a long game ranks tens of thousands of items per narrative)."""
    return Item(
        belief=item.belief,
        section=item.section,
        band=item.band,
        tier=tier,
        group=item.group,
        correction=item.correction,
        counter=item.counter,
        score=score,
        why=why,
        relevant=relevant,
        acts=item.acts,
        trust=item.trust,
        extra=item.extra,
        said=item.said,
        sources=item.sources,
        lines=item.lines,
        social=item.social,
    )
