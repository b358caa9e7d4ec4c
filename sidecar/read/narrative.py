"""Narrative projection: what a resident believes, as text a game pastes into an NPC prompt.

Deterministic and template based (no model in the loop): the same beliefs give the same
text, byte for byte, so a game can cache it and a test can pin it. The text is organised in
sections, always in this order (empty ones left out):

=============  ==============================================================
``sure``       what I am sure of (firsthand, influencing, confidence ≥ 85)
``believe``    what I think without being sure (firsthand below 85, implanted)
``told``       what I was told and by whom (hearsay, unconfirmed)
``acts``       what I did and saw others do, as episodes (``act`` events)
``doubts``     what I doubt (state ``doubtful``)
``anomalies``  what struck me as wrong (state ``anomalous``)
``corrections`` what I used to believe and what corrected it (state ``corrected``)
``people``     whom I trust or distrust and why (the trust table), and how I see the
               people around me (roots starting ``relation:``)
``faded``      faded memories (state ``past``), only if room remains
=============  ==============================================================

Residents are named by their registered display names (ids only where none is known), and
the resident itself is "I". Where a line would name a claim by its root (no ``subject``
from the game, or a bulk line's kind), the world's root schema's display text for the
longest declared prefix, in ``lang`` else English, stands in for the raw root. Lines are ranked for an optional focus (:mod:`.ranking`); each
entry's ``why`` says why it was chosen.

Wording carries the epistemic state (see :mod:`.wording`): firsthand beliefs are "sure"
(confidence ≥ 85), "think" (65–84) or "not certain"; hearsay always names who said it and is
never phrased as seen; an implanted memory is "I somehow remember", neither seen nor
revealed as implanted; a correction reads "I used to think X, until I saw Y". The budget
rules are in :mod:`.packing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..store import Reader
from .items import Item, classify, entry
from .memories import act_items, trust_items
from .packing import MIN_BUDGET, Layout, pack
from .queries import NotFound, contradictions, corrections, resident_known
from .ranking import Focus, rank
from .registry import Registry, load_registry, load_root_texts
from .wording import SECTIONS, Words, words_for

__all__ = ["MIN_BUDGET", "Focus", "Narrative", "project", "project_items"]

#: Roots the narrative phrases from elsewhere: acts as episodes, and "what I think Bo
#: believes", which repeats what the told/corrected lines already say.
_NOT_PHRASED = ("believes:", "action:")


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
    focus: Focus = field(default_factory=Focus)
    day: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The wire form (the server's ``narrative`` reply carries these keys)."""
        return {
            "resident": self.resident,
            "lang": self.lang,
            "budget": self.budget,
            "text": self.text,
            "omitted": self.omitted,
            "compressed": self.compressed,
            "day": self.day,
            "focus": self.focus.to_dict(),
            "sections": self.sections,
        }


def _words(
    words: Words, registry: Registry, resident: str, root_texts: tuple[tuple[str, str], ...] = ()
) -> Words:
    """``words`` with the registry's names in its language, the resident as "I", and the
    root schema's display text in its language."""
    names = {r: registry.name(r, words.lang) for r in registry.names}
    names[resident] = words.self_name
    own = sorted(registry.all_names(resident), key=lambda n: (-len(n), n))
    return replace(words, names=names, self_names=tuple(n for n in own if n), root_texts=root_texts)


def project_items(
    reader: Reader,
    world: str,
    resident: str,
    *,
    words: Words | None = None,
    registry: Registry | None = None,
    focus: Focus | None = None,
) -> list[Item]:
    """Every memory of ``resident``, classified and ranked; a handful of queries whatever
    the count."""
    registry = registry if registry is not None else load_registry(reader, world)
    if words is None:
        words = _words(words_for("en"), registry, resident, load_root_texts(reader, world, "en"))
    beliefs = reader.beliefs(world, resident)
    fixes = corrections(reader, world, resident)
    counters = contradictions(reader, world, resident)
    items = [
        classify(b, fixes.get((resident, b.root)), counters.get((resident, b.root)))
        for b in beliefs
        if not b.root.startswith(_NOT_PHRASED)
    ]
    today = reader.world_day(world)
    by_root = {b.root: b for b in beliefs if b.root.startswith("action:")}
    label = partial(registry.action, lang=words.lang)
    items += act_items(reader, world, resident, by_root, words, label, today)
    items += trust_items(reader, world, resident, words)
    return rank(items, focus or Focus(), today, registry)


def _sections(layout: Layout, items: list[Item], words: Words) -> list[dict[str, Any]]:
    entries: dict[str, list[dict[str, Any]]] = {name: [] for name in SECTIONS}
    represented = dict.fromkeys(SECTIONS, 0)
    for line in sorted(layout.lines, key=lambda ln: ln.key):
        represented[line.section] += len(line.items)
        for item in line.listed:
            one = entry(item, line.text, line.merged)
            if line.bulk:
                one["members"] = len(line.items)
            entries[line.section].append(one)
    totals = dict.fromkeys(SECTIONS, 0)
    for item in items:
        totals[item.section] += 1
    return [
        {
            "name": name,
            "title": words.headings[name],
            "entries": entries[name],
            "omitted": totals[name] - represented[name],
        }
        for name in SECTIONS
    ]


def project(
    reader: Reader,
    world: str,
    resident: str,
    *,
    budget: int = 2000,
    lang: str = "en",
    focus: Focus | None = None,
) -> Narrative:
    """Project ``resident``'s memories into at most ``budget`` characters of ``lang`` text,
    ranked for ``focus``.

    Raises :class:`ValueError` for an unknown ``lang`` or a budget below
    :data:`MIN_BUDGET`, and :class:`~sidecar.read.queries.NotFound` for a resident the
    world has never heard of (a registered resident is known from its registration).
    """
    focus = focus or Focus()
    base = words_for(lang)
    if budget < MIN_BUDGET:
        raise ValueError(f"narrative budget must be at least {MIN_BUDGET} characters, not {budget}")
    if not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    registry = load_registry(reader, world)
    words = _words(base, registry, resident, load_root_texts(reader, world, lang))
    items = project_items(reader, world, resident, words=words, registry=registry, focus=focus)
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
        focus=focus,
        day=reader.world_day(world),
    )
