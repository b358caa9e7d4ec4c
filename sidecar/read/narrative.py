"""Narrative projection: what a resident believes, as text a game pastes into an NPC prompt.

Deterministic and template based (no model in the loop): the same beliefs give the same
text, byte for byte, so a game can cache it and a test can pin it. The text is organised in
sections, always in this order (empty ones left out):

=============  ==============================================================
``sure``       what I am sure of (firsthand or implanted, influencing)
``told``       what I was told and by whom (hearsay, unconfirmed)
``doubts``     what I doubt (state ``doubtful``)
``anomalies``  what struck me as wrong (state ``anomalous``)
``corrections`` what I used to believe and what corrected it (state ``corrected``)
``people``     how I see the people around me (roots starting ``relation:``)
``faded``      faded memories (state ``past``), only if room remains
=============  ==============================================================

Wording carries the epistemic state (see :mod:`.wording`): firsthand beliefs are "sure"
(confidence ≥ 85), "think" (65–84) or "not certain"; hearsay always names who said it and is
never phrased as seen; an implanted memory is "I somehow remember", neither seen nor
revealed as implanted; a correction reads "I used to think X, until I saw Y". The budget
rules are in :mod:`.packing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store import Reader
from .items import Item, classify, entry
from .packing import MIN_BUDGET, Layout, pack
from .queries import NotFound, contradictions, corrections, resident_known
from .wording import SECTIONS, Words, words_for

__all__ = ["MIN_BUDGET", "Narrative", "project", "project_items"]


@dataclass(frozen=True, slots=True)
class Narrative:
    """The projected text and, per section, the beliefs it stands for."""

    resident: str
    lang: str
    budget: int
    text: str
    sections: list[dict[str, Any]]
    omitted: int
    compressed: bool

    def to_dict(self) -> dict[str, Any]:
        """The wire form (the server's ``narrative`` reply carries these keys)."""
        return {
            "resident": self.resident,
            "lang": self.lang,
            "budget": self.budget,
            "text": self.text,
            "omitted": self.omitted,
            "compressed": self.compressed,
            "sections": self.sections,
        }


def project_items(reader: Reader, world: str, resident: str) -> list[Item]:
    """Every belief of ``resident``, classified; three queries whatever the count."""
    beliefs = reader.beliefs(world, resident)
    fixes = corrections(reader, world, resident)
    counters = contradictions(reader, world, resident)
    # "What I think Bo believes" repeats what the told/corrected lines already say
    # ("bo told me…", "bo had told me so"); it stays queryable, it is not prompt material.
    return [
        classify(b, fixes.get((resident, b.root)), counters.get((resident, b.root)))
        for b in beliefs
        if not b.root.startswith("believes:")
    ]


def _sections(layout: Layout, items: list[Item], words: Words) -> list[dict[str, Any]]:
    entries: dict[str, list[dict[str, Any]]] = {name: [] for name in SECTIONS}
    for line in sorted(layout.lines, key=lambda ln: ln.key):
        for item in line.items:
            entries[line.section].append(entry(item, line.text, line.merged))
    totals = {name: 0 for name in SECTIONS}
    for item in items:
        totals[item.section] += 1
    return [
        {
            "name": name,
            "title": words.headings[name],
            "entries": entries[name],
            "omitted": totals[name] - len(entries[name]),
        }
        for name in SECTIONS
    ]


def project(
    reader: Reader, world: str, resident: str, *, budget: int = 2000, lang: str = "en"
) -> Narrative:
    """Project ``resident``'s beliefs into at most ``budget`` characters of ``lang`` text.

    Raises :class:`ValueError` for an unknown ``lang`` or a budget below
    :data:`MIN_BUDGET`, and :class:`~sidecar.read.queries.NotFound` for a resident the
    world has never heard of.
    """
    words = words_for(lang)
    if budget < MIN_BUDGET:
        raise ValueError(f"narrative budget must be at least {MIN_BUDGET} characters, not {budget}")
    if not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    items = project_items(reader, world, resident)
    layout, compressed = pack(items, words, budget)
    omitted = len(items) - len(layout.included())
    text = layout.render(omitted)
    assert len(text) <= budget, "packing broke its own budget"
    return Narrative(
        resident=resident,
        lang=lang,
        budget=budget,
        text=text,
        sections=_sections(layout, items, words),
        omitted=omitted,
        compressed=compressed,
    )
