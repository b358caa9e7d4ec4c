"""Narrative projection: what a resident believes, as text a game pastes into an NPC prompt.

Deterministic and template based (no model in the loop): the same beliefs give the same
text, byte for byte, so a game can cache it and a test can pin it. The text is organised in
sections, always in this order (empty ones left out):

=============  ==============================================================
``sure``       what I am sure of (firsthand, influencing, confidence ≥ 85)
``believe``    what I think without being sure (firsthand below 85, implanted)
``told``       what I was told and by whom (hearsay, unconfirmed)
``said``       what I told others, to whom and when (own words, :mod:`.own_words`)
``acts``       what I did and saw others do, as episodes (``act`` events)
``doubts``     what I doubt (state ``doubtful``)
``anomalies``  what struck me as wrong (state ``anomalous``)
``corrections`` what I used to believe and what corrected it (state ``corrected``)
``owe``        what I owe and am owed: promises made and received (sidecar/read/promises.py)
``goals``      what I am trying to do: the goals the game set, and how they ended
``people``     whom I trust or distrust and why (the trust table), and how I see the
               people around me (roots starting ``relation:``)
``faded``      faded memories (state ``past``), only if room remains
=============  ==============================================================

Residents are named by their registered display names (ids only where none is known), and
the resident itself is "I". Where a line would name a claim by its root (no ``subject``
from the game, or a bulk line's kind), the world's root schema's display text for the
longest declared prefix, in ``lang`` else English, stands in for the raw root. Lines are
ranked for an optional focus (:mod:`.ranking`); each entry's ``why`` says why it was chosen.

The projection is one straight pipe, each stage a module that only takes the earlier
stages' outputs: :func:`.recall.recall` reads the store once (promises and goals
included); :func:`.items.classify` and :func:`.promises.own_items` place each memory in a
section; :func:`.ranking.rank` scores it for the focus; :func:`.phrasing.phrase` words it;
:func:`.packing.pack` fits the lines into the budget; this module assembles the text and the
wire form of each entry. For a big resident the same pipe may run on a bounded read
(:func:`.recall.recall_bounded` → … → :func:`.packing.pack_bounded`; with a focus, ranked for
it in SQL by :func:`.ranking.row_matches`), which answers only when it can tell it gives the
same narrative as the full read; so may one of a big resident
with few doubts, whose plain facts and faded memories are only counted
(:func:`.recall.recall_social` → … → :func:`.packing.pack_social`), or, where some of
them get lines, keyed and grouped from their rows and built only as the packer reaches
them (:func:`.recall.plain_rows` → :func:`.ranking.plain_keys` →
:func:`.packing.pending_units`).

Wording carries the epistemic state (see :mod:`.wording`): firsthand beliefs are "sure"
(confidence ≥ 85), "think" (65–84) or "not certain"; hearsay always names who said it and is
never phrased as seen; an implanted memory is "I somehow remember", neither seen nor
revealed as implanted; a correction reads "I used to think X, until I saw Y". The budget
rules are in :mod:`.packing`.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import Any

from protocol import TAGS_SHOWN

from ..engine import Belief
from ..engine.texts import wire_text
from ..store import Reader
from .items import Item, belief_items, classify, group_of
from .packing import (
    MERGE_ITEM_SUBJECT,
    MIN_BUDGET,
    Horizon,
    Key,
    Layout,
    Pending,
    Unread,
    Unworded,
    family_of,
    least_line,
    loose,
    pack,
    pack_bounded,
    pack_social,
    pending_units,
)
from .phrasing import Phrased, narrative_words, phrase, subject_text
from .promises import own_items
from .queries import NotFound, resident_known
from .ranking import Focus, plain_keys, rank
from .recall import (
    PLAIN_SECTIONS,
    Cut,
    PlainSubjects,
    Recall,
    beliefs_of,
    plain_families,
    plain_rows,
    plain_subjects,
    recall,
    recall_bounded,
    recall_social,
    section_sizes,
    stored_ids,
    told_ceiling,
    told_groups,
    unworded_beliefs,
    unworded_subjects,
)
from .sources import Sources, load_sources
from .wording import SECTIONS, Words, words_for

__all__ = ["MIN_BUDGET", "Focus", "Narrative", "entry", "project", "ranked_items"]


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


def ranked_items(
    reader: Reader, world: str, resident: str, *, lang: str = "en", focus: Focus | None = None
) -> list[Item]:
    """Every memory of ``resident``, classified and ranked (the pipe up to wording)."""
    recalled = recall(reader, world, resident, lang)
    items = classify(recalled) + own_items(resident, recalled.own)
    return rank(items, focus or Focus(), recalled.day, recalled.registry)


def entry(item: Item, line: str, merged: str | None) -> dict[str, Any]:
    """The wire form of one belief in a narrative section (plain JSON/msgpack types)."""
    b = item.belief
    out: dict[str, Any] = {
        "root": b.root,
        "value": b.value,
        "subject": wire_text(b.subject),
        "confidence": b.confidence,
        "state": str(b.state),
        "source_kind": str(b.source_kind),
        "source": b.source_resident_id,
        "sources": list(b.heard_from[:TAGS_SHOWN]),
        "band": item.band,
        "updated_day": b.updated_day,
        "text": line,
        "merged": merged,
        "why": None if item.why is None else dict(item.why),
    }
    if item.extra:
        out.update({k: v for k, v in item.extra.items() if not k.startswith("_")})
    if item.correction is not None:
        out["value_before"] = item.correction.value_before
        out["subject_before"] = wire_text(item.correction.subject_before)
        out["corrected_day"] = item.correction.day
    if item.counter is not None:
        c = item.counter
        out["contradicted_by"] = {
            "event_id": c.event_id,
            "day": c.day,
            "value": c.value,
            "subject": wire_text(c.subject),
            "source_kind": c.source_kind,
            "source": c.source,
        }
    return out


def _sections(
    layout: Layout, items: list[Item], words: Words, extra: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    entries: dict[str, list[dict[str, Any]]] = {name: [] for name in SECTIONS}
    represented = dict.fromkeys(SECTIONS, 0)
    for line in sorted(layout.lines, key=lambda ln: ln.key):
        represented[line.section] += line.members
        for phrased in line.listed:
            one = entry(phrased.item, line.text, line.merged)
            if line.bulk:
                one["members"] = line.members
            entries[line.section].append(one)
    totals = dict.fromkeys(SECTIONS, 0)
    for item in items:
        totals[item.section] += 1
    for name, n in (extra or {}).items():
        totals[name] += n
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
    bounded: bool = True,
) -> Narrative:
    """Project ``resident``'s memories into at most ``budget`` characters of ``lang`` text,
    ranked for ``focus``.

    For a resident with many protected memories a bounded read is tried first
    (:func:`_project_bounded`); it gives the same narrative, byte for byte, or none.
    ``bounded=False`` skips it (the equivalence test compares the two).

    Raises :class:`ValueError` for an unknown ``lang`` or a budget below
    :data:`MIN_BUDGET`, and :class:`~sidecar.read.queries.NotFound` for a resident the
    world has never heard of (a registered resident is known from its registration).
    """
    focus = focus or Focus()
    words_for(lang)  # an unknown language is refused before anything is read
    if budget < MIN_BUDGET:
        raise ValueError(f"narrative budget must be at least {MIN_BUDGET} characters, not {budget}")
    if not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    if bounded:
        sizes, intervened = section_sizes(reader, world, resident)
        groups = (intervened, *(sizes.get(s, 0) for s in ("doubts", "anomalies", "corrections")))
        protected = sum(groups)
        likely = protected * BOUNDED_LINE > budget  # else they will likely fit
        if likely or protected * BOUNDED_LONG > budget:  # or they may not
            # (a focus too: SQL ranks the protected memories for it, recall_bounded)
            for limit in bounded_limits(budget, groups):
                found = _project_bounded(reader, world, resident, budget, lang, limit, sizes, focus)
                if found is not None:
                    return found
        if (
            not likely
            and not intervened
            and (
                budget <= SOCIAL_BUDGET
                or social(sizes) * BOUNDED_LONG > budget
                or plain(sizes) * BOUNDED_LINE > SOCIAL_PLAIN * budget
            )
            and plain(sizes) * BOUNDED_LINE > budget
        ):
            # Many plain facts, few doubts: read all but the plain facts (with a focus, but
            # those that match it), which are counted (a tampered-with plain fact would open
            # their section: then it rarely answers).
            found = _project_social(reader, world, resident, budget, lang, sizes, focus=focus)
            if found is not None:
                return found
    recalled = recall(reader, world, resident, lang)  # 1. read once
    items = classify(recalled)  # 2. classify
    items += own_items(resident, recalled.own)  # promises and goals
    items = rank(items, focus, recalled.day, recalled.registry)  # 3. rank
    words = narrative_words(lang, recalled)
    phrased = phrase(items, words, recalled.day)  # 4. word
    layout, compressed = pack(phrased, words, budget)  # 5. pack
    return _narrative(resident, lang, budget, layout, items, words, {}, focus, recalled.day,
                      compressed=compressed)  # fmt: skip


#: Fewest characters a compact protected line is taken to cost when deciding whether a
#: bounded read is worth trying (only a guess: the read checks itself either way).
BOUNDED_LINE = 16


#: Most characters a protected line, or a social one, is taken to cost at most when deciding
#: whether theirs might overflow the budget (only a guess: the read checks itself either way):
#: up to it, a bounded read is tried even where :data:`BOUNDED_LINE` says they will likely
#: fit, and a social read at budgets above :data:`SOCIAL_BUDGET` (a reply of 50,000
#: characters from a resident whose doubts or rumours alone fill it costs what it shows).
BOUNDED_LONG = 64


#: Largest budget a social read (:func:`_project_social`) is always tried for: beyond it the
#: plain facts are likely to get lines unless the other memories alone might fill the budget
#: (:data:`BOUNDED_LONG`; only a guess: the read checks itself either way).
SOCIAL_BUDGET = 8000


#: Beyond :data:`SOCIAL_BUDGET`, a social read is tried when her plain memories would fill
#: this many budgets at :data:`BOUNDED_LINE` characters each: then the lines they get are a
#: small part of them, which it builds alone (:func:`_pending`), where the full read would
#: build them all; for fewer, the full read costs about as much and answers at once.
SOCIAL_PLAIN = 3


#: Plain sections holding at most one in this many of her plain memories are read on
#: their own ranges of ``beliefs_shown`` (:meth:`_Later.fewest`): a lookup per row costs
#: about four times a row of her primary-key range (measured on the calm ``querybench``
#: resident: her 3,119 faded memories 9.8 ms against 13.5, one sure fact 0.02 ms).
FEW_ROWS = 4


def plain(sizes: Mapping[str, int]) -> int:
    """How many faded memories and sure or believed facts a resident holds."""
    return sum(sizes.get(s, 0) for s in ("sure", "believe", "faded"))


def social(sizes: Mapping[str, int]) -> int:
    """How many memories a social read (:func:`_project_social`) words: all but the plain."""
    return sum(sizes.values()) - plain(sizes)


def _project_social(
    reader: Reader, world: str, resident: str, budget: int, lang: str, sizes: Mapping[str, int],
    *, told: bool = True, focus: Focus | None = None,
) -> Narrative | None:  # fmt: skip
    """The narrative of a big resident whose contested memories fit the budget, from a read
    of all but its plain facts and faded memories (:func:`.recall.recall_social`; with a
    ``focus``, but those that match it), which are only counted: the same pipe, and
    :func:`.packing.pack_social` answers only when none of them could have had a line.
    None otherwise (then the full read answers). Unfocused, it first leaves the rumours
    unread too; ``told=False``: only that."""
    focus = focus or Focus()
    subjects = _Later.of(reader, world, resident)
    if focus:  # rumours that match the focus rank two tiers up: always read
        recalled = recall_social(reader, world, resident, lang, focus=focus, worded=False)
        if recalled is None:
            return None
        items = classify(recalled) + own_items(resident, recalled.own)
        items = rank(items, focus, recalled.day, recalled.registry)
        if recalled.unworded:
            # First with the plain facts and faded memories that match it unbuilt (a big
            # resident's rank below what she was told and did, which often fills the
            # budget first), then, when a line of theirs might fit, with them built.
            found = _social(resident, budget, lang, sizes, recalled, items, subjects, focus=focus)
            if found is not None:
                return found
            added = unworded_beliefs(recalled)
            beliefs, items = _adding(recalled, items, added, focus)
            recalled = replace(recalled, beliefs=beliefs, unworded=())
        return _social(resident, budget, lang, sizes, recalled, items, subjects, focus=focus)
    recalled = recall_social(reader, world, resident, lang, told=False)
    if recalled is None:
        return None
    items = classify(recalled)
    items += own_items(resident, recalled.own)
    items = rank(items, Focus(), recalled.day, recalled.registry)
    unread = told_ceiling(reader, world, resident, recalled.day)
    if unread is not None:
        # First with the rumours unread too (often the acts, people and doubts already
        # fill the budget before their rank), then with them read.
        ahead = (unread.tier, round(unread.score, 4) + 1e-4)  # every one ranks at most here
        found = _social(
            resident, budget, lang, sizes, recalled, items, subjects, ahead, unread.read,
            held=_held(reader, world, resident),
        )  # fmt: skip
        if found is not None or not told:
            return found
        recalled, items = _with_told(recalled, items)
    return _social(resident, budget, lang, sizes, recalled, items, subjects)


def _held(reader: Reader, world: str, resident: str) -> Callable[[Words], int]:
    """The fewest characters the text of a line led by a rumour a social read held back can
    have (:func:`.packing.least_line` of each group they merge under, with no subject):
    their groups are read once, and only if the packer asks."""

    groups = cache(lambda: Counter(told_groups(reader, world, resident)))

    def least(words: Words) -> int:
        found = (least_line(words, "told", 0, g, n) for g, n in groups().items())
        return min(found, default=0)  # (none: what was counted has gone since; bound nothing)

    return least


def _with_told(recalled: Recall, items: list[Item]) -> tuple[Recall, list[Item]]:
    """``recalled`` and its ranked ``items`` with the rumours it held back added."""
    beliefs, items = _adding(recalled, items, recalled.held, Focus())
    return replace(recalled, beliefs=beliefs, held=()), items


def _adding(
    recalled: Recall, items: list[Item], added: tuple[Belief, ...], focus: Focus
) -> tuple[tuple[Belief, ...], list[Item]]:
    """The beliefs of ``recalled`` and its ranked ``items`` with the ``added`` beliefs (in
    root order): what the read and the pipe up to wording give with them, only the added
    ones classified and ranked (the items of beliefs come first, in root order; each is
    ranked on its own)."""
    n = sum(1 for i in items if i.from_belief)  # the items of beliefs come first
    ranked = rank(belief_items(recalled, added), focus, recalled.day, recalled.registry)
    merged = list(heapq.merge(items[:n], ranked, key=lambda i: i.belief.root))
    beliefs = tuple(heapq.merge(recalled.beliefs, added, key=lambda b: b.root))
    return beliefs, merged + items[n:]


@dataclass(frozen=True, slots=True)
class _Later:
    """What a social read reads of a resident's plain memories only if the packer asks:
    their subjects for her own names (:func:`.recall.plain_subjects`), their rows
    (:func:`.recall.plain_rows`) and the beliefs of some of them
    (:func:`.recall.beliefs_of`) and their tellers (:func:`.sources.load_sources`)."""

    #: :func:`.recall.plain_subjects`: ``(names, sections, few=…)``.
    subjects: Callable[..., PlainSubjects]
    rows: Callable[[float], Sequence[Sequence[Any]]]
    beliefs: Callable[[Sequence[str]], tuple[Belief, ...]]
    #: :func:`.sources.load_sources`: ``(candidates, corrections, wanted)``.
    sources: Callable[..., dict[str, Sources]]
    #: :func:`.recall.plain_rows` ``naming`` a group, and :func:`.recall.plain_families`:
    #: the merged line of a read unit is completed from the rows that name its group, once
    #: the families they are in tell which no bulk family takes.
    naming: Callable[[str, float], Sequence[Sequence[Any]]]
    families: Callable[[Sequence[str]], Sequence[Sequence[Any]]]
    #: What :meth:`fewest` found, per language, names, day and section (a section none of
    #: her plain memories is in: None), shared by the social reads of one narrative.
    known: dict[tuple[str, tuple[str, ...], float, str], int | None] = field(default_factory=dict)

    def fewest(
        self, words: Words, today: float, sizes: Mapping[str, int]
    ) -> Callable[[Collection[str]], dict[str, int]]:
        """Per plain section asked, the fewest characters any of her plain memories'
        subjects has as a merged line cuts it (:func:`_fewest`), each section found once:
        the packer often asks only of a section or two, whose lines might still fit. A
        section of few of her plain rows (:data:`FEW_ROWS`) is read on its own range of
        ``beliefs_shown``, else on her primary-key range."""
        key = (words.lang, words.self_names, today)

        def fewest(sections: Collection[str]) -> dict[str, int]:
            missing = [s for s in PLAIN_SECTIONS if s in sections and (*key, s) not in self.known]
            if missing:
                few = sum(sizes.get(s, 0) for s in missing) * FEW_ROWS <= plain(sizes)
                found = self.subjects(words.self_names, missing, few=few)
                shortest = _fewest(found, words, today)
                self.known.update(((*key, s), shortest.get(s)) for s in missing)
            return {s: n for s in sections if (n := self.known.get((*key, s))) is not None}

        return fewest

    @classmethod
    def of(cls, reader: Reader, world: str, resident: str) -> _Later:
        return cls(
            partial(plain_subjects, reader, world, resident, MERGE_ITEM_SUBJECT),
            partial(plain_rows, reader, world, resident),
            partial(beliefs_of, reader, world, resident),
            partial(load_sources, reader, world, resident),
            lambda name, today: plain_rows(reader, world, resident, today, naming=name),
            partial(plain_families, reader, world, resident),
        )


def _social(
    resident: str, budget: int, lang: str, sizes: Mapping[str, int], recalled: Recall,
    items: list[Item], subjects: _Later, ahead: tuple[int, float] | None = None,
    told: int = 0, focus: Focus | None = None, held: Callable[[Words], int] | None = None,
) -> Narrative | None:  # fmt: skip
    """The pipe of :func:`_project_social` from the ``items`` of one read, ranked for
    ``focus``; ``told`` rumours were left unread, ranking at most ``ahead`` (``held``
    bounds their lines: :func:`_held`); ``subjects`` reads the plain ones if the packer
    needs them. With every rumour read and every
    memory that bears on the focus built, the plain memories may be laid out after all
    (:func:`_pending`)."""
    read = dict.fromkeys(SECTIONS, 0)
    for item in items:
        if item.from_belief:
            read[item.section] += 1
    unread = {s: n - read[s] for s, n in sizes.items() if n != read[s]}
    if any(n < 0 for n in unread.values()):
        return None  # the counts and the read disagree: never answer from them
    if ahead is not None and unread.get("told", 0) != told:
        return None  # nor when they disagree on the rumours left unread
    words = narrative_words(lang, recalled)
    phrased = phrase(items, words, recalled.day)
    unworded = _unworded(recalled, words, items)
    if any(u.number > unread.get(section, 0) for section, u in unworded.items()):
        return None  # never happens: the unbuilt ones are part of the unread
    fewest = subjects.fewest(words, recalled.day, sizes)
    later = None
    if ahead is None and not recalled.unworded:  # (with every rumour and match read)
        # the groups of the read plain memories' units (those that bear on the focus)
        taken = {
            (i.section, i.group)
            for i in items
            if i.section in PLAIN_SECTIONS and i.group and i.from_belief and not i.protected
        }
        # (beyond SOCIAL_BUDGET her plain memories likely get lines: all their units are
        # needed, and no merged line is read apart first)
        apart = budget <= SOCIAL_BUDGET
        later = cache(
            lambda: _pending(subjects, recalled, words, focus or Focus(), taken, apart=apart)
        )
    layout = pack_social(phrased, words, budget, unread, ahead, unworded, fewest, later, held=held)
    if layout is None:
        return None
    return _narrative(
        resident, lang, budget, layout, items, words, unread, focus or Focus(), recalled.day
    )


def _unworded(recalled: Recall, words: Words, items: Iterable[Item]) -> dict[str, Unworded]:
    """Per section, the memories a social read left unbuilt (all match the focus): the
    earliest tier they rank in, how many there are, and the fewest characters the text of a
    line one of them leads can have (:func:`.packing.least_line`:
    :func:`.packing.pack_social` bounds their lines from below with it), first whatever
    their subjects, then (only if the packer asks) with each subject worded. Each place or
    person they merge under is bounded on its own: its merged line names it, and counts
    what it leaves out of its members, those unbuilt and the ranked ``items`` that bear on
    the focus there too (never in a bulk line: each is in that unit)."""
    rows: dict[str, list[tuple[str | None, str, Any, str | None]]] = defaultdict(list)
    tiers: dict[str, int] = {}
    members: dict[tuple[str, str | None], int] = defaultdict(int)
    for section, tier, subject, root, value, group in unworded_subjects(recalled):
        rows[section].append((subject, root, value, group))
        tiers[section] = min(tiers.get(section, tier), tier)
        members[(section, group)] += 1
    for i in items:
        at = (i.section, i.group)
        if i.relevant and i.group is not None and at in members and not i.protected:
            members[at] += 1

    def least(section: str, subjects: Mapping[str | None, int]) -> int:
        return min(
            least_line(words, section, chars, group, members[(section, group)])
            for group, chars in subjects.items()
        )

    @cache
    def worded(section: str) -> int:
        fewest: dict[str | None, int] = {}
        for subject, root, value, group in rows[section]:
            text = subject_text(subject, root, value, words, MERGE_ITEM_SUBJECT, recalled.day)
            fewest[group] = min(fewest.get(group, len(text)), len(text))
        return least(section, fewest)

    out = {}
    for section, found in rows.items():
        floor = least(section, dict.fromkeys((r[3] for r in found), 0))
        out[section] = Unworded(tiers[section], len(found), floor, partial(worded, section))
    return out


def _fewest(found: PlainSubjects, words: Words, today: float) -> dict[str, int]:
    """Per plain section, the fewest characters any of her plain memories' subjects has as a
    merged line cuts it (so no unread one's has fewer): of those worded as stored, found in
    SQL (their length); of the others, worded here."""
    fewest, others = found
    fewest = dict(fewest)
    for section, subject, root, value in others:
        chars = len(subject_text(subject, root, value, words, MERGE_ITEM_SUBJECT, today))
        fewest[section] = min(fewest.get(section, chars), chars)
    return fewest


def _pending(
    later: _Later, recalled: Recall, words: Words, focus: Focus,
    taken: Collection[tuple[str, str]], *, apart: bool = True,
) -> Unread:  # fmt: skip
    """A social read's unread plain memories (none bears on the ``focus``) as the packer's
    units, keyed and grouped from their rows alone (:func:`.ranking.plain_keys`,
    :func:`.items.group_of`; those of a group ``taken`` by a read unit join it), and how to
    build those a line lists: read by root, then the same pipe (classify, rank, word) as the
    full read; the tellers of one told by several people are looked up among the same
    candidates as the full read's (:attr:`.recall.Recall.candidates`). ``apart``: those
    that join a read unit's merged line may be read on their own, group by group
    (:meth:`.packing.Unread.joins`), until the units are needed."""
    resident, today = recalled.resident, recalled.day
    read = {b.root for b in recalled.beliefs}

    def group(row: Sequence[Any]) -> str | None:
        return group_of(row[1], row[0], resident, stored_ids(row[5]), stored_ids(row[6]))

    def whole() -> tuple[list[Pending], dict[tuple[str, str], list[Key]]]:
        rows = (row for row in later.rows(today) if row[0] not in read)
        return pending_units(plain_keys(rows), group, taken)

    @cache
    def named(name: str) -> dict[str, list[Key]]:
        # Those of whole()'s joining under the group ``name``, per section, in rank order:
        # the rows that merge under it, but those a bulk family takes (told from the unread
        # rows of the families they are in: each family's range holds all its members).
        rows = [r for r in later.naming(name, today) if r[0] not in read and group(r) == name]
        families = sorted({f for r in rows if (f := family_of(r[0])) is not None})
        members = {r[0]: r[1] for r in later.families(families)} if families else {}
        members.update((r[0], r[1]) for r in rows)  # (and those in no family)
        alone = loose((root, s) for root, s in members.items() if root not in read)
        joining: dict[str, list[Key]] = {}
        for key, section, row in plain_keys(rows):
            if row[0] in alone and (section, name) in taken:
                joining.setdefault(section, []).append(key)
        for keys in joining.values():
            keys.sort()
        return joining

    def joins(section: str, name: str) -> Sequence[Key]:
        return named(name).get(section, ())

    built: dict[str, Phrased] = {}

    def build(keys: Sequence[Key]) -> list[Phrased] | None:
        roots = [k[3] for k in keys if k[3] not in built]
        if roots:
            beliefs = later.beliefs(roots)
            if len(beliefs) != len(roots):
                return None
            several = {b.root for b in beliefs if len(b.heard_from) > 1}
            found = recalled
            if several:
                told = later.sources(recalled.candidates, recalled.corrections, several)
                found = replace(recalled, sources={**recalled.sources, **told})
            items = belief_items(found, beliefs)
            if len(items) != len(beliefs):
                return None
            ranked = rank(items, focus, today, recalled.registry)
            if any(i.relevant for i in ranked):
                return None  # never happens: those that bear on it were read
            built.update((p.item.belief.root, p) for p in phrase(ranked, words, today))
        return [built[k[3]] for k in keys]

    return Unread(whole, build, joins if apart else None)


def bounded_limits(budget: int, protected: Iterable[int] = ()) -> tuple[int, ...]:
    """How many protected memories per section :func:`_project_bounded` reads: at first
    about as many compact lines as ``budget`` holds (each costs tens of characters) and a
    margin for the rank's rounding, then four times that if the layout looked further.

    The layout deals its lines to the sections in turn, so given the sizes of the
    ``protected`` groups (the contested and corrected sections, and those tampered with),
    a section needs only its share of them: a group too small for an equal share leaves the
    rest to the others. The share is counted at 24 characters a line, a margin for the
    memories that tie at the cut (their rank among themselves is not known until all are
    read), and never more than a lone section's, at 32."""
    lines = budget // 24
    share = lines
    groups = sorted(n for n in protected if n > 0)
    for i, n in enumerate(groups):
        share = lines // (len(groups) - i)
        if n >= share:
            break
        lines -= n
    first = 16 + min(share, budget // 32)
    return (first, 4 * first)


def _kept(items: list[Item], cuts: Mapping[str, Cut]) -> tuple[list[Item], Horizon] | None:
    """Drop the read items of a cut section that an unread one might outrank (the last read
    bounds every unread one: no better tier, no higher score), and say how many turns of the
    round robin what is kept covers; None when a cut section keeps nothing."""
    by_section: dict[str, list[Item]] = {}
    for item in items:
        if item.section in cuts and item.from_belief and item.protected:
            by_section.setdefault(item.section, []).append(item)
    dropped: set[int] = set()
    turns: list[int] = []
    for section, cut in cuts.items():
        ranked = sorted(by_section.get(section, []), key=lambda i: i.key)
        ceiling = round(cut.score + 1e-9, 4)  # what an unread one may score, at most
        keep = 0
        for item in ranked:
            if not (cut.tier > item.tier or (cut.tier == item.tier and ceiling < item.score)):
                break
            keep += 1
        if keep == 0:
            return None
        dropped.update(id(i) for i in ranked[keep:])
        turns.append(keep)
    kept = [i for i in items if id(i) not in dropped]
    return kept, Horizon(min(turns) if turns else None)


def _project_bounded(
    reader: Reader,
    world: str,
    resident: str,
    budget: int,
    lang: str,
    limit: int,
    sizes: Mapping[str, int] | None = None,
    focus: Focus | None = None,
) -> Narrative | None:
    """The narrative of a resident whose protected memories alone overflow the budget, from
    a bounded read (:func:`.recall.recall_bounded`): the same pipe on the best ``limit``
    protected memories of each section for ``focus`` (ranked in SQL), every other memory
    only counted. None when the layout would need more than was read (then the full read
    answers)."""
    focus = focus or Focus()
    if sizes is None:
        sizes = section_sizes(reader, world, resident)[0]
    found = recall_bounded(reader, world, resident, lang, limit, sizes, focus)
    if found is None:
        return None
    recalled, bounded = found
    items = classify(recalled)
    items += own_items(resident, recalled.own)
    items = rank(items, focus, recalled.day, recalled.registry)
    kept = _kept(items, bounded.cuts)
    if kept is None:
        return None
    items, horizon = kept
    read = dict.fromkeys(SECTIONS, 0)
    for item in items:
        if item.from_belief:
            read[item.section] += 1
    extra = {s: n - read[s] for s, n in bounded.sizes.items() if n > read[s]}
    words = narrative_words(lang, recalled)
    phrased = phrase(items, words, recalled.day)
    layout = pack_bounded(phrased, words, budget, extra, horizon)
    if layout is None:
        return None
    return _narrative(resident, lang, budget, layout, items, words, extra, focus, recalled.day)


def _narrative(
    resident: str, lang: str, budget: int, layout: Layout, items: list[Item],
    words: Words, unread: Mapping[str, int], focus: Focus, day: float, *,
    compressed: bool = True,
) -> Narrative:  # fmt: skip
    """The narrative of a packed layout. A bounded read's ``unread`` memories per section are
    counted with the omitted ones, never worded (its layout is always compressed)."""
    omitted = len(items) + sum(unread.values()) - layout.represented()
    text = layout.render(omitted)
    assert len(text) <= budget, "packing broke its own budget"
    return Narrative(
        resident=resident,
        lang=lang,
        budget=budget,
        text=text,
        sections=_sections(layout, items, words, unread),
        omitted=omitted,
        compressed=compressed,
        focus=focus,
        day=day,
    )
