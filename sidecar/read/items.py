"""Stage 2 of the narrative: classify what was recalled into section items.

An :class:`Item` is one memory placed in a section, with the records its sentence will draw
on: a belief with its correction or the evidence that contradicts it, an act episode
(:class:`Acts`: per actor and action, how often done and how it last failed) or a trust
line (:class:`Trust`). :func:`classify` takes only :func:`.recall.recall`'s output; no
wording happens here (that is :mod:`.phrasing`), no ranking (:mod:`.ranking`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from protocol import TAGS_SHOWN

from ..engine import Belief, Intervention, SourceKind, State, same_value
from ..engine.model import positional
from ..engine.roots import trust_root
from ..engine.said import SAID_TO_SHOWN
from .own_words import OwnWords, said_beliefs
from .queries import Contradiction, Correction
from .recall import ActHistory, Recall, TrustRecord
from .sources import Sources

__all__ = [
    "NOTABLE_AT",
    "RELATION_PREFIX",
    "SOCIAL_SECTIONS",
    "SURE_AT",
    "THINK_AT",
    "TRUST_HIGH",
    "TRUST_LOW",
    "Acts",
    "Item",
    "Trust",
    "belief_items",
    "classify",
    "classify_belief",
    "group_of",
    "tier_of",
]

#: Confidence bands for firsthand beliefs: sure at or above 85, "I think" from 65.
SURE_AT = 85
THINK_AT = 65
#: Roots of beliefs about people ("how I see the people around me").
RELATION_PREFIX = "relation:"
#: Trust bands of the people section: trust at least 0.7 is high, below 0.45 low.
TRUST_HIGH = 0.7
TRUST_LOW = 0.45
#: Roots the narrative phrases from elsewhere: acts as episodes, and "what I think Bo
#: believes", which repeats what the told/corrected lines already say.
_NOT_PHRASED = ("believes:", "action:")

#: Priority tiers, kept lowest first (see :mod:`.ranking`): contested 0, corrected 1, then
#: told/people/acts about the focus 2, sure/believed about the focus 3, told/people/acts 4,
#: sure/believed 5, faded 6. Items start unranked (as if nothing were in focus).
_TIER = {"doubts": 0, "anomalies": 0, "corrections": 1, "faded": 6}
SOCIAL_SECTIONS = frozenset({"told", "people", "acts", "said"})
#: A firsthand memory whose evidence the game marked this important (a fight, a broken
#: fence: ``importance`` ≥ 0.5) is *notable*: it ranks with what I was told and did (tier 2
#: or 4), not with the routine facts of my surroundings (3 or 5). What I saw happen matters
#: as much as what I heard about.
NOTABLE_AT = 0.5


@dataclass(frozen=True, slots=True)
class Acts:
    """One actor and action the resident did or saw done, and what its episodes come to."""

    history: ActHistory

    @property
    def actor(self) -> str:
        return self.history.first.actor

    @property
    def action(self) -> str:
        return self.history.first.action

    @property
    def done(self) -> int:
        """How many episodes were completed."""
        return self.history.counts.get("completed", 0)


@dataclass(frozen=True, slots=True)
class Trust:
    """A trust line: the general trust in a source (or, with none, the first topic's), its
    band, and the record it comes from."""

    value: float
    band: str  # "high", "mid" or "low"
    topics: tuple[str, ...]  # the topics trusted, when no general trust is set
    record: TrustRecord


@dataclass(frozen=True, slots=True)
class Item:
    """One memory placed in a section, with the records its sentence draws on.

    ``score`` and ``why`` come from :func:`.ranking.rank`; ``acts`` or ``trust`` is set for
    an item not phrased from its belief (an act episode, a trust line, whose ``belief``
    stands in for ranking), and ``extra`` holds an item's own fields for the wire.
    """

    belief: Belief
    section: str
    band: str
    tier: int
    group: str | None
    correction: Correction | None = None
    counter: Contradiction | None = None
    score: float = 0.0
    why: Mapping[str, Any] | None = None
    relevant: bool = False
    acts: Acts | None = None
    trust: Trust | None = None
    extra: dict[str, Any] | None = None
    #: A claim the resident told others (its own words, "said"): phrased from this.
    said: OwnWords | None = None
    #: Every teller by origin and the first contradiction, where the sentence needs them.
    sources: Sources | None = None
    #: Words its own full and compact line (a promise or goal, sidecar/read/promises.py:
    #: given the Words and the day); its tier is its own, not its section's.
    lines: Callable[[Any, float], tuple[str, str]] | None = None
    #: Whether it ranks in the social tier, where that is not its section's default (a
    #: notable firsthand memory, a routine act of someone else): see :func:`tier_of`.
    social: bool | None = None

    @property
    def from_belief(self) -> bool:
        """Whether the line is phrased from the belief (not an act, trust, said or own line)."""
        return self.acts is None and self.trust is None and self.said is None and self.lines is None

    @property
    def key(self) -> tuple[int, float, float, str]:
        """Priority and display order: tier, then score, then most recent, then root."""
        return (self.tier, -self.score, -self.belief.updated_day, self.belief.root)

    @property
    def protected(self) -> bool:
        """Contested and corrected beliefs, and memories the player is still tampering with
        (an active intervention), are shortened under a budget, never dropped."""
        return self.tier <= 1 or self.intervened

    @property
    def intervened(self) -> bool:
        """Whether the memory carries an active intervention (implanted or distorted)."""
        mark = self.belief.intervention
        return mark is not None and mark.active


#: :class:`Item` built positionally (:func:`~sidecar.engine.model.positional`): classify and
#: rank build one per memory, tens of thousands per narrative of a big resident, and the
#: keyword call of a frozen dataclass costs several times more.
new_item = positional(Item, (
    "belief", "section", "band", "tier", "group", "correction", "counter", "score", "why",
    "relevant", "acts", "trust", "extra", "said", "sources", "lines", "social",
))  # fmt: skip


def tier_of(section: str, relevant: bool, social: bool | None = None) -> int:
    """The priority tier of a section's item, given whether it bears on the focus and, where
    the item says so, whether it ranks with the social tier (``social``: a notable firsthand
    memory does, routine acts of others do not); by default a section's own standing."""
    fixed = _TIER.get(section)
    if fixed is not None:
        return fixed
    if social is None:
        social = section in SOCIAL_SECTIONS
    if relevant:
        return 2 if social else 3
    return 4 if social else 5


def _group(belief: Belief, section: str) -> str | None:
    return group_of(section, belief.root, belief.resident, belief.people, belief.places)


def group_of(
    section: str, root: str, resident: str, people: Sequence[str], places: Sequence[str]
) -> str | None:
    """What several lines can be merged under: the place, else the person, a memory of
    ``resident``'s in ``section`` is about."""
    others = [p for p in people if p != resident]
    if section == "people":
        if others:
            return others[0]
        parts = [p for p in root[len(RELATION_PREFIX) :].split(":") if p]
        named = [p for p in parts if p != resident]
        return named[-1] if named else None
    if places:
        return places[0]
    return others[0] if others else None


def _band(belief: Belief, section: str) -> str:
    if section in ("doubts", "anomalies", "corrections", "faded"):
        return {"doubts": "doubt", "anomalies": "anomaly"}.get(section, section)
    if belief.source_kind is SourceKind.HEARSAY:
        return "heard"
    if belief.source_kind is SourceKind.IMPLANTED:
        return "implanted"
    if belief.confidence >= SURE_AT:
        return "sure"
    return "think" if belief.confidence >= THINK_AT else "unsure"


def _section(belief: Belief) -> str:
    state = belief.state
    if state is State.PAST:
        return "faded"
    if state is State.DOUBTFUL:
        return "doubts"
    if state is State.ANOMALOUS:
        return "anomalies"
    if state is State.CORRECTED:
        return "corrections"
    if belief.root.startswith(RELATION_PREFIX):
        return "people"
    if belief.source_kind is SourceKind.HEARSAY:
        return "told"
    # "What I am sure of" holds only sure lines; the rest of what I hold is "believe".
    return "sure" if _band(belief, "sure") == "sure" else "believe"


def classify_belief(
    belief: Belief,
    correction: Correction | None = None,
    counter: Contradiction | None = None,
    sources: Sources | None = None,
) -> Item:
    """Place one belief. A contradiction that agrees with the current value is not one."""
    section = _section(belief)
    if section not in ("doubts", "anomalies") or (
        counter is not None and same_value(counter.value, belief.value)
    ):
        counter = None
    if section != "corrections":
        correction = None
    social = (
        True
        if section in ("sure", "believe") and (belief.importance or 0.0) >= NOTABLE_AT
        else None
    )
    return new_item(
        belief, section, _band(belief, section), tier_of(section, False, social),
        _group(belief, section), correction, counter, 0.0, None, False, None, None, None,
        None, sources, None, social,
    )  # fmt: skip


#: Importance of the resident's own acts (what I did matters more than what I saw done),
#: and what a failure as the latest episode adds ("what did I do last, and why did it fail").
OWN_ACT_IMPORTANCE = 0.5
FAILED_ACT_IMPORTANCE = 0.5


def _act_item(resident: str, belief: Belief, history: ActHistory) -> Item:
    first, counts = history.first, history.counts
    own = first.actor == resident
    if own:
        failed = history.last.status != "completed"
        weight = OWN_ACT_IMPORTANCE + (FAILED_ACT_IMPORTANCE if failed else 0.0)
        belief = replace(belief, importance=min(1.0, max(weight, belief.importance or 0.0)))
    # Someone else doing a chore as usual (every episode completed, nothing marked
    # important) is routine: it ranks with the plain facts of my surroundings.
    routine = not own and history.last_failed is None and (belief.importance or 0.0) < NOTABLE_AT
    social = False if routine else None
    return Item(
        belief=belief,
        section="acts",
        band="act",
        tier=tier_of("acts", False, social),
        group=None,
        social=social,
        acts=Acts(history),
        extra={
            "actor": first.actor,
            "action": first.action,
            "episodes": dict(counts),
            "last_day": history.last.day,
            "_people": (first.actor,),
        },
    )


def _trust_item(resident: str, record: TrustRecord) -> Item:
    rows = record.rows
    general = next((r for r in rows if r["topic"] is None), None)
    value = float((general or rows[0])["value"])
    band = "high" if value >= TRUST_HIGH else "low" if value < TRUST_LOW else "mid"
    topics = () if general is not None else tuple(r["topic"] for r in rows)
    reason, first, last = record.reason, record.first_day, record.last_day
    # Ranked as the important thing it is: lost trust is fully important, other trust as far
    # as it moved from neutral, and the resident is sure of its own trust (never the trust
    # value as its confidence, which ranked lost trust last).
    belief = Belief(
        resident=resident,
        root=trust_root(record.source, None),
        value=round(value * 100),
        subject=(reason or {}).get("told") or "",
        confidence=100,
        importance=1.0 if band == "low" else round(min(1.0, abs(value - 0.5) * 2), 4),
        state=State.INFLUENCING,
        source_kind=SourceKind.FIRSTHAND,
        source_resident_id=None,
        formed_day=first,
        updated_day=last,
        last_evidence_day=last,
        people=(record.source,),
    )
    return Item(
        belief=belief,
        section="people",
        band="trust",
        tier=tier_of("people", False),
        group=None,
        trust=Trust(value, band, topics, record),
        extra={
            "person": record.source,
            "trust": value,
            "topic_trust": _topic_trust(rows, value),
            "topic_trust_count": sum(1 for r in rows if r["topic"]),
            "reason": reason,
            "_people": (record.source,),
        },
    )


def _topic_trust(rows: tuple[Any, ...], general: float) -> dict[str, float]:
    """At most :data:`~protocol.TAGS_SHOWN` topics of a trust entry: those furthest from the
    general trust (a source trusted on hundreds of topics is still one bounded entry)."""
    topics = sorted(
        (r for r in rows if r["topic"]),
        key=lambda r: (-abs(float(r["value"]) - general), r["topic"]),
    )
    return {r["topic"]: r["value"] for r in sorted(topics[:TAGS_SHOWN], key=lambda r: r["topic"])}


def classify(recalled: Recall) -> list[Item]:
    """Every memory of the recalled resident as an unranked item: its beliefs (but acts,
    what it thinks others believe and what the player suppressed), one item per actor and
    action it did or saw done (acts whose belief is gone are left out), one per source in its
    trust table."""
    resident = recalled.resident
    items = belief_items(recalled, recalled.beliefs)
    by_root = {b.root: b for b in recalled.beliefs if b.root.startswith("action:")}
    items += [
        _act_item(resident, by_root[root], history)
        for root, history in recalled.acts.items()
        if root in by_root
    ]
    items += [_trust_item(resident, record) for record in recalled.trust]
    items += _said_items(recalled)
    return items


def belief_items(recalled: Recall, beliefs: Iterable[Belief]) -> list[Item]:
    """The items :func:`classify` makes of ``beliefs`` (the first of its items, in the same
    order), with their records from ``recalled``."""
    resident = recalled.resident
    return [
        classify_belief(
            b,
            recalled.corrections.get((resident, b.root)),
            recalled.contradictions.get((resident, b.root)),
            recalled.sources.get(b.root),
        )
        for b in beliefs
        if not b.root.startswith(_NOT_PHRASED) and b.intervention is not Intervention.SUPPRESSED
    ]


def _said_items(recalled: Recall) -> list[Item]:
    """One item per claim the resident told others (section ``said``), ranked as certain."""
    return [
        Item(
            belief=belief,
            section="said",
            band="said",
            tier=tier_of("said", False),
            group=None,
            said=said,
            extra={
                "to": list(said.to[:SAID_TO_SHOWN]),
                "to_count": len(said.to),
                "everyone": said.everyone,
                "times": said.times,
                "first_day": said.first_day,
                "last_day": said.last_day,
                "_people": said.to,
            },
        )
        for belief, said in said_beliefs(recalled.resident, recalled.said)
    ]
