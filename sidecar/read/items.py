"""Sorting a resident's beliefs into narrative sections, and phrasing each one.

An :class:`Item` is one belief with everything its sentence needs (its correction, the
evidence that contradicts it). :func:`full_line` is the sentence used when there is room;
:func:`compact_line` is the short form used in merged lines and under tight budgets. Both
take ``clip``, the most characters of any one subject to keep, so a budget can shorten
contested beliefs instead of dropping them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol import TAGS_SHOWN

from ..engine import Belief, SourceKind, State, Value, same_value
from .queries import Contradiction, Correction
from .wording import Words

__all__ = [
    "KIND_CLIP",
    "RELATION_PREFIX",
    "SOCIAL_SECTIONS",
    "SURE_AT",
    "THINK_AT",
    "Item",
    "classify",
    "clip_text",
    "compact_line",
    "entry",
    "full_line",
    "tier_of",
]

#: Confidence bands for firsthand beliefs: sure at or above 85, "I think" from 65.
SURE_AT = 85
THINK_AT = 65
#: Roots of beliefs about people ("how I see the people around me").
RELATION_PREFIX = "relation:"
#: Longest a root's declared display text (root schema) is kept where it names a claim.
KIND_CLIP = 60

#: Priority tiers, kept lowest first (see :mod:`.ranking`): contested 0, corrected 1, then
#: told/people/acts about the focus 2, sure/believed about the focus 3, told/people/acts 4,
#: sure/believed 5, faded 6. Items start unranked (as if nothing were in focus).
_TIER = {"doubts": 0, "anomalies": 0, "corrections": 1, "faded": 6}
SOCIAL_SECTIONS = frozenset({"told", "people", "acts"})


@dataclass(frozen=True, slots=True)
class Item:
    """One belief placed in a section, with the records its sentence draws on.

    ``score`` and ``why`` come from :func:`.ranking.rank`; ``prepared`` holds the full and
    compact lines of an item that is not phrased from a belief (an act episode, a trust
    line), and ``extra`` its own fields for the wire.
    """

    belief: Belief
    section: str
    band: str
    tier: int
    group: str | None
    correction: Correction | None = None
    counter: Contradiction | None = None
    score: float = 0.0
    why: dict[str, Any] | None = None
    relevant: bool = False
    prepared: tuple[str, str] | None = None
    extra: dict[str, Any] | None = None

    @property
    def key(self) -> tuple[int, float, float, str]:
        """Priority and display order: tier, then score, then most recent, then root."""
        return (self.tier, -self.score, -self.belief.updated_day, self.belief.root)

    @property
    def protected(self) -> bool:
        """Contested and corrected beliefs are shortened under a budget, never dropped."""
        return self.tier <= 1


def tier_of(section: str, relevant: bool) -> int:
    """The priority tier of a section's item, given whether it bears on the focus."""
    fixed = _TIER.get(section)
    if fixed is not None:
        return fixed
    social = section in SOCIAL_SECTIONS
    if relevant:
        return 2 if social else 3
    return 4 if social else 5


def _value_text(value: Value | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def clip_text(text: str, clip: int | None) -> str:
    """``text`` cut to ``clip`` characters, an ellipsis marking the cut."""
    if clip is None or len(text) <= clip:
        return text
    return text[: max(1, clip - 1)].rstrip() + "…"


def _clean(subject: str | None, root: str, value: Value | None, words: Words) -> str:
    """One line of text, without the sentence's own full stop (the template adds one).

    Without a subject, the root is named by the schema's display text when one is declared.
    """
    text = " ".join((subject or "").split()).rstrip(".。")
    if text:
        return text
    kind = words.kind(root)
    named = root if kind is None else clip_text(" ".join(kind.split()), KIND_CLIP)
    return f"{named}: {_value_text(value)}"


def _group(belief: Belief, section: str) -> str | None:
    """What several lines can be merged under: the place, else the person, it is about."""
    people = [p for p in belief.people if p != belief.resident]
    if section == "people":
        if people:
            return people[0]
        parts = [p for p in belief.root[len(RELATION_PREFIX) :].split(":") if p]
        others = [p for p in parts if p != belief.resident]
        return others[-1] if others else None
    if belief.places:
        return belief.places[0]
    return people[0] if people else None


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


def classify(
    belief: Belief, correction: Correction | None = None, counter: Contradiction | None = None
) -> Item:
    """Place one belief. A contradiction that agrees with the current value is not one."""
    section = _section(belief)
    if section not in ("doubts", "anomalies") or (
        counter is not None and same_value(counter.value, belief.value)
    ):
        counter = None
    if section != "corrections":
        correction = None
    tier = tier_of(section, False)
    return Item(
        belief=belief,
        section=section,
        band=_band(belief, section),
        tier=tier,
        group=_group(belief, section),
        correction=correction,
        counter=counter,
    )


def _who(item: Item, words: Words) -> str:
    b = item.belief
    names = list(b.heard_from) or ([b.source_resident_id] if b.source_resident_id else [])
    return words.who(names)


def _influencing(item: Item, words: Words, s: str) -> str:
    template = {
        "sure": words.sure,
        "think": words.think,
        "unsure": words.unsure,
        "implanted": words.implanted,
        "heard": words.told,
    }[item.band]
    return template.format(s=s, who=_who(item, words))


def _contested(item: Item, words: Words, s: str, clip: int | None) -> str:
    b, counter = item.belief, item.counter
    c = (
        ""
        if counter is None
        else clip_text(
            words.first_person(_clean(counter.subject, b.root, counter.value, words)), clip
        )
    )
    seen = counter is not None and counter.source_kind == SourceKind.FIRSTHAND
    c_who = words.who([counter.source]) if counter is not None and counter.source else ""
    if item.section == "anomalies":
        if counter is None:
            return words.anomaly.format(s=s)
        template = words.anomaly_seen if seen else words.anomaly_told
        return template.format(s=s, c=c, who=c_who)
    if b.source_kind is SourceKind.HEARSAY:
        head = words.doubt_told.format(s=s, who=_who(item, words))
    elif b.source_kind is SourceKind.IMPLANTED:
        head = words.doubt_implanted.format(s=s)
    else:
        head = words.doubt.format(s=s)
    if counter is None:
        return head + words.stop
    tail = words.otherwise_seen if seen else words.otherwise_told
    return head + tail.format(c=c, who=c_who)


def _before(item: Item, words: Words, clip: int | None) -> str | None:
    corr = item.correction
    if corr is None or (corr.subject_before is None and corr.value_before is None):
        return None
    text = _clean(corr.subject_before, item.belief.root, corr.value_before, words)
    return clip_text(words.first_person(text), clip)


def _prior_told(item: Item, words: Words) -> str | None:
    corr = item.correction
    if corr is None or corr.prior_source_kind != SourceKind.HEARSAY or not corr.prior_source:
        return None
    return words.who([corr.prior_source])


def full_line(item: Item, words: Words, clip: int | None = None) -> str:
    """The sentence for one belief, its subject (and quoted ones) cut to ``clip``."""
    if item.prepared is not None:
        return item.prepared[0]
    b = item.belief
    s = clip_text(words.first_person(_clean(b.subject, b.root, b.value, words)), clip)
    if item.section in ("doubts", "anomalies"):
        return _contested(item, words, s, clip)
    if item.section == "corrections":
        x = _before(item, words, clip)
        if x is None:
            return words.corrected_unknown.format(s=s)
        who = _prior_told(item, words)
        did = words.own(s)  # "until I drew a bucket", not "until I saw I drew a bucket"
        if who:
            return (words.corrected_told_did if did else words.corrected_told).format(
                x=x, y=s, who=who
            )
        return (words.corrected_did if did else words.corrected).format(x=x, y=s)
    if item.section == "faded":
        told = b.source_kind is SourceKind.HEARSAY
        return (words.faded_told if told else words.faded).format(s=s)
    return _influencing(item, words, s)


def compact_line(item: Item, words: Words, clip: int | None = None) -> str:
    """The short form: the section heading (or merge line) carries the rest of the meaning.

    Hearsay keeps its source in every form, so even the shortest line never reads as seen.
    """
    if item.prepared is not None:
        return item.prepared[1]
    b = item.belief
    s = clip_text(words.first_person(_clean(b.subject, b.root, b.value, words)), clip)
    section, band = item.section, item.band
    told = b.source_kind is SourceKind.HEARSAY
    if section == "corrections":
        x = _before(item, words, clip)
        return s if x is None else words.c_corrected.format(x=x, y=s)
    if section == "faded":
        return (words.c_faded_told if told else words.c_faded).format(s=s)
    if told:
        plain = section in ("told", "doubts", "anomalies")  # the heading already says so
        template = words.c_told if plain else words.c_told_unconfirmed
        return template.format(s=s, who=_who(item, words))
    if section in ("doubts", "anomalies"):
        return s
    return {
        "sure": "{s}",
        "think": words.c_think,
        "unsure": words.c_unsure,
        "implanted": words.c_implanted,
    }[band].format(s=s)


def entry(item: Item, line: str, merged: str | None) -> dict[str, Any]:
    """The wire form of one belief in a narrative section (plain JSON/msgpack types)."""
    b = item.belief
    out: dict[str, Any] = {
        "root": b.root,
        "value": b.value,
        "subject": b.subject,
        "confidence": b.confidence,
        "state": str(b.state),
        "source_kind": str(b.source_kind),
        "source": b.source_resident_id,
        "sources": list(b.heard_from[:TAGS_SHOWN]),
        "band": item.band,
        "updated_day": b.updated_day,
        "text": line,
        "merged": merged,
        "why": item.why,
    }
    if item.extra:
        out.update({k: v for k, v in item.extra.items() if not k.startswith("_")})
    if item.correction is not None:
        out["value_before"] = item.correction.value_before
        out["subject_before"] = item.correction.subject_before
        out["corrected_day"] = item.correction.day
    if item.counter is not None:
        c = item.counter
        out["contradicted_by"] = {
            "event_id": c.event_id,
            "day": c.day,
            "value": c.value,
            "subject": c.subject,
            "source_kind": c.source_kind,
            "source": c.source,
        }
    return out
