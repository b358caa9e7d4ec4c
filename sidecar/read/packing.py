"""Stage 5 of the narrative: fit the worded items into a character budget without losing
what matters most. It lays out :mod:`.phrasing`'s output only.

The budget is a hard ceiling on ``len(text)`` for any budget of at least :data:`MIN_BUDGET`.
When everything does not fit, the text is laid out in three passes:

1. **Breadth.** Every open doubt and anomaly, every correction, and every memory with an
   active player intervention (the *protected* items) gets a line in its compact form; so
   does every other memory of the tiers that matter (:data:`BREADTH_TIER`: what I was told,
   said, did and saw that bears on the focus or is notable), in rank order (:mod:`.ranking`)
   while room lasts. Protected items are never dropped: when even their compact lines
   cannot fit they go under short headings, and only then are whole lines left out and the
   rest counted per section ("(and 12 more things I doubt)"), and at the very last one
   sentence counts them ("I doubt 400 things; ..."): a line is never cut inside, the fact
   that beliefs are contested or were corrected always survives, and the budget holds;
2. **Detail.** Shortened lines get their full sentence as room allows, one section at a
   time (each section's best line, then each one's second, ...): every kind of knowledge
   gets its detail before any kind gets more of it;
3. **Background.** Routine facts and faded memories, in rank order, full if they fit,
   else compact, as room remains.

Beliefs about the same place or person, within one section, share one merged line ("About
cafe: key on counter; door closed; and 4 more.") rather than being dropped. Headings are
overhead: a compressed text is also laid out under short headings, and that layout is kept
when it holds more memories (or as many, more of them in full).

Bulk similar facts —
at least :data:`BULK_AT` sure, believed or faded memories of one section whose roots share
everything before their last ``:`` (``tree:0`` … ``tree:39``), none of them matching the
focus — always collapse into one line ("I know of 40 things of this kind (tree), for
example: an oak by the mill."), budget or not. The kind is named by the world's root schema
when it declares display text for a prefix of ``tree:`` (see :meth:`.Words.kind`), else by
the family itself.

Whatever is not represented is counted in a closing note ("(12 more memories left out)").
Costs are counted conservatively (each section as if it were joined to another), so the
rendered text is never longer than the plan.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, NamedTuple

from .phrasing import KIND_CLIP, Phrased, clip_text
from .wording import SECTIONS, Words

__all__ = [
    "BULK_AT",
    "BULK_SAMPLE",
    "MERGE_MAX_ITEMS",
    "MIN_BUDGET",
    "Horizon",
    "Key",
    "Layout",
    "Line",
    "Pending",
    "Trace",
    "Unread",
    "Unworded",
    "family_of",
    "least_line",
    "loose",
    "pack",
    "pack_bounded",
    "pack_social",
    "pending_units",
]

#: Smallest budget the projection accepts (the wire's lower bound too).
MIN_BUDGET = 200
#: Longest subject kept for an unprotected line when compressing.
MAX_SUBJECT = 160
#: Longest subject of one item inside a merged line.
MERGE_ITEM_SUBJECT = 60
#: Most items spelled out in one merged line; the rest are counted on it.
MERGE_MAX_ITEMS = 6
#: Fewest similar facts (same section, same root family) collapsed into one bulk line.
BULK_AT = 5
#: Most members of a bulk line listed as entries of its section (the best ranked); the
#: line's ``members`` counts them all, so a reply stays bounded however many there are.
BULK_SAMPLE = 3
_BULK_SECTIONS = frozenset({"sure", "believe", "faded"})
#: Tiers (see :func:`.items.tier_of`) whose memories each get a line, short if need be,
#: before any line gets its full sentence: contested, corrected, and what I was told, said,
#: did and saw that matters. Routine facts and faded memories come after, as room remains.
BREADTH_TIER = 4


class Unworded(NamedTuple):
    """The memories of one section a read left unbuilt (all bear on the focus): the tier
    they rank from, how many there are, and the fewest characters the text of any line one
    of them leads can have (:func:`least_line`; :func:`pack_social`): ``floor`` whatever
    their subjects, ``least`` (called only where ``floor`` cannot tell, once) with them
    worded."""

    tier: int
    number: int
    floor: int
    least: Callable[[], int]


#: Per plain section asked (those holding none left out), the fewest characters any of the
#: unread memories' subjects has in a line, cut as a merged line cuts it (see
#: :func:`pack_social`).
Fewest = Callable[[Collection[str]], Mapping[str, int]]


#: An item's place in rank order (:attr:`.items.Item.key`).
Key = tuple[int, float, float, str]


class Pending(NamedTuple):
    """One line's worth of memories a read left unbuilt (a big resident's plain facts and
    faded memories, :func:`pending_units`): what :func:`_units` would make of them — its
    kind (``bulk``, ``merge`` or ``single``), section, the key of its best memory and how
    many it holds — and the keys of the few a line of it can list (a bulk line's
    :data:`BULK_SAMPLE`, a merged line's :data:`MERGE_MAX_ITEMS`), in rank order, the
    roots last. Built only when the background pass reaches it and a line might fit."""

    kind: str
    section: str
    key: Key
    total: int
    listed: tuple[Key, ...]


#: Builds pending memories: the worded items of these keys' roots, in the same order, or
#: None when it cannot tell they are worded as a full read words them.
Build = Callable[[Sequence[Key]], "list[Phrased] | None"]


#: How many groups' merged lines :meth:`Unread.joins` completes apart: each is a pass over
#: the resident's rows (those that name it), where all the units cost a few; beyond, they
#: are all keyed once.
APART_GROUPS = 2


#: Those of the unread memories that share the merged line of a read unit, by its section
#: and group: what :func:`pending_units` gives that group (:attr:`Unread.joining`).
Joins = Callable[[str, str], Sequence[Key]]


class Unread:
    """The memories a read left unbuilt, as the packer takes them (:func:`pending_units`,
    from ``whole`` when first asked): the units of their own, those that would share the
    merged line of a read unit (by section and group, in rank order), and how to build
    them. ``joins`` gives those of one such line without them all (the packer asks for the
    line of a read unit long before, and often instead of, the units), for the first
    :data:`APART_GROUPS` groups asked."""

    __slots__ = ("_asked", "_found", "_joins", "_whole", "build")

    def __init__(
        self,
        whole: Callable[[], tuple[Sequence[Pending], Mapping[tuple[str, str], Sequence[Key]]]],
        build: Build,
        joins: Joins | None = None,
    ) -> None:
        self._whole, self.build, self._joins = whole, build, joins
        self._asked: set[str] = set()
        self._found: tuple[Sequence[Pending], Mapping[tuple[str, str], Sequence[Key]]] | None
        self._found = None

    def _all(self) -> tuple[Sequence[Pending], Mapping[tuple[str, str], Sequence[Key]]]:
        if self._found is None:
            self._found = self._whole()
        return self._found

    @property
    def units(self) -> Sequence[Pending]:
        return self._all()[0]

    @property
    def joining(self) -> Mapping[tuple[str, str], Sequence[Key]]:
        return self._all()[1]

    def joins(self, section: str, group: str) -> Sequence[Key]:
        """:attr:`joining` of one line (read apart while the units are not yet, for a few
        groups)."""
        if self._found is None and self._joins is not None:
            self._asked.add(group)
            if len(self._asked) <= APART_GROUPS:
                return self._joins(section, group)
        return self.joining.get((section, group), ())

    def counts(self) -> dict[str, int]:
        """How many memories they are per section (checked against the counts of the unread
        before the packer trusts them)."""
        counts: dict[str, int] = {}
        for unit in self.units:
            counts[unit.section] = counts.get(unit.section, 0) + unit.total
        for (section, _), keys in self.joining.items():
            counts[section] = counts.get(section, 0) + len(keys)
        return counts


@dataclass(slots=True)
class Line:
    """One bullet of the text, and the beliefs it stands for."""

    section: str
    text: str
    items: list[Phrased]
    key: tuple[int, float, float, str]
    merged: str | None = None
    bulk: bool = False
    #: Members of a bulk line that were counted, not built (:class:`Pending`).
    counted: int = 0

    @property
    def listed(self) -> list[Phrased]:
        """The items this line lists as section entries: a bulk line's first few."""
        return self.items[:BULK_SAMPLE] if self.bulk else self.items

    @property
    def members(self) -> int:
        """How many memories the line stands for."""
        return len(self.items) + self.counted


@dataclass(slots=True)
class Layout:
    """The lines chosen so far, their cost, and any count-only parts."""

    words: Words
    short: bool = False  # short headings, when even contested beliefs had to be shortened
    lines: list[Line] = field(default_factory=list)
    counts: dict[str, str] = field(default_factory=dict)  # section -> "(and N more ...)"
    summary: str | None = None
    used: int = 0
    _sections: set[str] = field(default_factory=set)

    def heading(self, section: str) -> str:
        return (self.words.short_headings if self.short else self.words.headings)[section]

    def line_cost(self, section: str, text: str) -> int:
        """What adding one bullet costs: "- " + text + newline, plus the heading if new."""
        heading = 0 if section in self._sections else len(self.heading(section)) + 2
        return heading + len(text) + 3

    def fits(self, section: str, text: str, room: int) -> bool:
        return self.used + self.line_cost(section, text) <= room

    def left(self, section: str, room: int) -> int:
        """How many characters the text of one more line of ``section`` may have within
        ``room`` (negative: not even an empty one fits)."""
        return room - self.used - self.line_cost(section, "")

    def add(self, line: Line) -> None:
        self.used += self.line_cost(line.section, line.text)
        self._sections.add(line.section)
        self.lines.append(line)

    def add_count(self, section: str, text: str) -> None:
        self.used += self.line_cost(section, text)
        self._sections.add(section)
        self.counts[section] = text

    def included(self) -> list[Phrased]:
        return [item for line in self.lines for item in line.items]

    def represented(self) -> int:
        """How many memories the lines stand for (a bulk line's counted members too)."""
        return sum(line.members for line in self.lines)

    def render(self, omitted: int) -> str:
        """The text: sections in fixed order, bullets by priority, then the note."""
        blocks: list[str] = []
        if self.summary:
            blocks.append(self.summary)
        ordered = sorted(self.lines, key=lambda ln: ln.key)
        for name in SECTIONS:
            bullets = [ln.text for ln in ordered if ln.section == name]
            if name in self.counts:
                bullets.append(self.counts[name])
            if bullets:
                blocks.append(self.heading(name) + "\n" + "\n".join(f"- {b}" for b in bullets))
        if omitted:
            blocks.append(self.words.omitted(omitted))
        return "\n\n".join(blocks) if blocks else self.words.empty


def _single(item: Phrased, text: str) -> Line:
    return Line(item.section, text, [item], item.key)


def _laid(words: Words, lines: list[Line], *, short: bool = False) -> Layout:
    layout = Layout(words, short=short)
    for line in lines:
        layout.add(line)
    return layout


@dataclass(slots=True)
class Trace:
    """How far the protected layout's round robin looked (a bounded read checks it covered
    that much): the turns it tried, and whether it ran out of items rather than stopping at a
    line that did not fit. The passes before it need no trace: they only ask whether every
    compact line fits, and once some of them overflow, all of them do."""

    turns: int = 0
    exhausted: bool = False


def _protected(
    items: list[Phrased],
    words: Words,
    room: int,
    *,
    short: bool = False,
    extra: Mapping[str, int] | None = None,
    trace: Trace | None = None,
) -> Layout:
    """Lay out contested and corrected beliefs in their compact form (the detail pass of
    :func:`pack` gives them their full sentence as room allows), shortening further as needed.

    Tried in order until one fits: compact lines (under short headings if ``short``);
    compact lines under short headings; then whole compact lines, each section in turn, up
    to the first that does not fit, the rest counted per section; one counting sentence. A
    line is never cut inside (issue 18: no stubs cut mid-word). ``extra`` counts the items
    of each section a bounded read left out (:func:`pack_bounded`).
    """
    trace = trace or Trace()
    texts: dict[int, str] = {}  # each compact line worded once, whichever layout tries it

    def compact(item: Phrased) -> str:
        text = texts.get(id(item))
        if text is None:
            text = texts[id(item)] = item.compact()
        return text

    def fitting(make: Callable[[Phrased], str], short: bool) -> Layout | None:
        # Costs only grow: the first line past the room settles it, and the lines after it
        # are never worded (hundreds of contested beliefs cost what fits, not what is held).
        layout = Layout(words, short=short)
        for item in items:
            layout.add(_single(item, make(item)))
            if layout.used > room:
                return None
        return layout

    for heads in dict.fromkeys((short, True)):
        found = fitting(compact, heads)
        if found is not None:
            return found
    return _counted(items, words, room, extra or {}, trace, compact)


_COUNTED = ("doubts", "anomalies", "corrections")


def _count_line(words: Words, section: str, n: int, shown: int) -> str:
    """ "(and 3 more things I doubt)" after some lines, "(12 things I doubt, ...)" alone."""
    forms = {
        "doubts": (words.more_doubts, words.all_doubts),
        "anomalies": (words.more_anomalies, words.all_anomalies),
        "corrections": (words.more_corrections, words.all_corrections),
    }[section]
    return words.count(forms[0] if shown else forms[1], n)


def _round_robin(items: list[Phrased]) -> list[tuple[int, Phrased]]:
    """Interleave sections (first doubt, first anomaly, first correction, second doubt, ...)
    so that when only a few lines fit, each kind of protected belief gets some; each item
    with its turn (0 for each section's first)."""
    rank: dict[str, int] = {}
    keyed = []
    for item in items:  # already in priority order
        rank[item.section] = rank.get(item.section, -1) + 1
        keyed.append((rank[item.section], item.key, item))
    return [(turn, item) for turn, _, item in sorted(keyed, key=lambda k: (k[0], k[1]))]


def _counted(
    items: list[Phrased],
    words: Words,
    room: int,
    extra: Mapping[str, int],
    trace: Trace,
    compact: Callable[[Phrased], str] = Phrased.compact,
) -> Layout:
    """Spell out whole lines in turn while they fit; count the rest of each section.

    The first line that does not fit ends the list: a lower-ranked line never takes the
    place of a higher-ranked one (and the layout depends only on the lines up to it, which
    lets a bounded read stop there: :func:`pack_bounded`).
    """
    totals = {s: sum(1 for i in items if i.section == s) + extra.get(s, 0) for s in _COUNTED}
    layout = Layout(words, short=True)
    for section, n in totals.items():
        if n:  # reserve the longest count line this section could end with
            longest = max(
                (_count_line(words, section, k, shown) for k in {1, n} for shown in (0, 1)),
                key=len,
            )
            layout.add_count(section, longest)
    if layout.used > room:
        return _summary(totals, words)
    trace.exhausted = True
    for turn, item in _round_robin(items):
        trace.turns = max(trace.turns, turn + 1)
        text = compact(item)
        if not layout.fits(item.section, text, room):
            trace.exhausted = False
            break
        layout.add(_single(item, text))
    shown = {s: sum(1 for i in layout.included() if i.section == s) for s in _COUNTED}
    for section, n in totals.items():
        if section in layout.counts:
            if shown[section] == n:
                del layout.counts[section]
            else:
                layout.counts[section] = _count_line(
                    words, section, n - shown[section], shown[section]
                )
    return layout


def _summary(totals: Mapping[str, int], words: Words) -> Layout:
    """The last resort: one sentence counting contested and corrected beliefs."""
    parts = []
    for section, forms in (
        ("doubts", words.summary_doubts),
        ("anomalies", words.summary_anomalies),
        ("corrections", words.summary_corrections),
    ):
        n = totals.get(section, 0)
        if n:
            parts.append(words.count(forms, n))
    layout = Layout(words, short=True)
    layout.summary = words.summary_join.join(parts) + words.summary_end
    layout.used = len(layout.summary) + 2
    return layout


def family_of(root: str) -> str | None:
    """The family a root is in (a bulk line's): all of it before its last colon; None
    without one."""
    return root.rsplit(":", 1)[0] if ":" in root else None


def _bulk(items: list[Phrased]) -> tuple[list[list[Phrased]], list[Phrased]]:
    """Split off bulk families (see the module doc); the rest keep their order."""
    families: dict[tuple[str, str], list[Phrased]] = {}
    for item in items:
        family = family_of(item.item.belief.root)
        if (
            family is not None
            and item.section in _BULK_SECTIONS
            and not item.item.relevant
            and item.item.from_belief
        ):
            families.setdefault((item.section, family), []).append(item)
    bulk = [unit for unit in families.values() if len(unit) >= BULK_AT]
    taken = {id(i) for unit in bulk for i in unit}
    return bulk, [i for i in items if id(i) not in taken]


def _bulk_texts(words: Words, unit: list[Phrased], n: int | None = None) -> tuple[str, str]:
    """The full and compact bulk line of one family of ``n`` (all of ``unit`` by default;
    the best-ranked item as example)."""
    first = unit[0]
    family = family_of(first.item.belief.root) or first.item.belief.root
    kind = words.kind(family + ":")  # the schema's text for the prefix every root shares
    label = (
        family.replace("_", " ") if kind is None else clip_text(" ".join(kind.split()), KIND_CLIP)
    )
    s = first.compact(MERGE_ITEM_SUBJECT)
    n = len(unit) if n is None else n
    return words.bulk.format(n=n, k=label, s=s), words.c_bulk.format(n=n, k=label, s=s)


def _bulk_line(text: str, unit: list[Phrased], counted: int = 0) -> Line:
    first = unit[0]
    family = family_of(first.item.belief.root)
    return Line(first.section, text, unit, first.key, merged=family, bulk=True, counted=counted)


def loose(rows: Iterable[tuple[str, str]]) -> set[str]:
    """The roots of those unread memories (``rows`` of ``(root, section)``) that
    :func:`pending_units` takes into no bulk family: each merges under its group or stands
    alone (those that share a read unit's merged line are among them)."""
    families: dict[tuple[str, str], list[str]] = {}
    out: set[str] = set()
    for root, section in rows:
        family = family_of(root)
        if family is None:
            out.add(root)
        else:
            families.setdefault((section, family), []).append(root)
    for members in families.values():
        if len(members) < BULK_AT:
            out.update(members)
    return out


def pending_units(
    rows: Iterable[tuple[Key, str, Any]],
    group: Callable[[Any], str | None],
    taken: Collection[tuple[str, str]] = (),
) -> tuple[list[Pending], dict[tuple[str, str], list[Key]]]:
    """What :func:`_units` makes of memories that are only keyed so far, in priority order:
    ``rows`` of ``(key, section, row)``, each a sure, believed or faded memory neither
    protected nor bearing on the focus (:func:`_bulk` takes every such one into its
    family), and the place or person a ``row`` can merge under (``group``: asked only of
    those no bulk family takes). Those whose section and group are ``taken`` (by a unit of
    memories already built) join that unit instead: returned apart, per group, in rank
    order."""
    families: dict[tuple[str, str], list[tuple[Key, Any]]] = {}
    rest: list[tuple[Key, str, Any]] = []
    for key, section, row in rows:
        family, colon, _ = key[3].rpartition(":")  # (family_of, inline: once per memory)
        if colon:
            families.setdefault((section, family), []).append((key, row))
        else:
            rest.append((key, section, row))
    out: list[Pending] = []
    for (section, _), members in families.items():
        if len(members) >= BULK_AT:
            keys = sorted(k for k, _ in members)[:BULK_SAMPLE]
            out.append(Pending("bulk", section, keys[0], len(members), tuple(keys)))
        else:
            rest += [(key, section, row) for key, row in members]
    groups: dict[tuple[str, str], list[Key]] = {}
    joining: dict[tuple[str, str], list[Key]] = {}
    for key, section, row in rest:
        name = group(row)
        if name is None:
            out.append(Pending("single", section, key, 1, (key,)))
        else:
            (joining if (section, name) in taken else groups).setdefault(
                (section, name), []
            ).append(key)
    for (section, _), keys in groups.items():
        keys.sort()
        kind = "merge" if len(keys) > 1 else "single"
        out.append(Pending(kind, section, keys[0], len(keys), tuple(keys[:MERGE_MAX_ITEMS])))
    out.sort(key=lambda p: p.key)
    for keys in joining.values():
        keys.sort()
    return out, joining


def _units(items: list[Phrased]) -> list[tuple[str, list[Phrased]]]:
    """Unprotected items as bulk families, merge groups (same section and place/person)
    or singletons, in priority order of their best item."""
    bulk, rest = _bulk(items)
    groups: dict[tuple[str, str], list[Phrased]] = {}
    units: list[list[Phrased]] = []
    for item in rest:
        if item.group is None:
            units.append([item])
            continue
        key = (item.section, item.group)
        if key not in groups:
            groups[key] = []
            units.append(groups[key])
        groups[key].append(item)
    tagged = [("bulk", unit) for unit in bulk]
    tagged += [("single", [i]) for unit in units if len(unit) == 1 for i in unit]
    tagged += [("merge", unit) for unit in units if len(unit) > 1]
    return sorted(tagged, key=lambda t: t[1][0].key)


def _merged_text(words: Words, group: str, n: int, shown: int, parts: list[str]) -> str:
    """The merged line of the first ``shown`` of ``n`` items, whose compact forms start
    ``parts`` (worded once for every ``shown`` tried)."""
    body = words.merge_sep.join(parts[:shown])
    if shown < n:
        body += words.merge_more.format(n=n - shown)
    return words.merged.format(k=words.name(group), items=body)


@dataclass(slots=True)
class _Placed:
    """A line laid out in a compressed text, and its fuller form if it has one."""

    line: Line
    fuller: str | None = None


def _cheapest(
    layout: Layout, kind: str, unit: list[Phrased], room: int, total: int | None = None
) -> _Placed | None:
    """Lay out ``unit`` in its shortest form that fits (a merged line with as many items as
    fit), remembering its full form for the detail pass; None when nothing fits. A unit of
    ``total`` memories may hold only the first of them (a bulk line's :data:`BULK_SAMPLE`,
    a merged line's :data:`MERGE_MAX_ITEMS`: all it can list)."""
    words = layout.words
    first = unit[0]
    total = len(unit) if total is None else total
    if layout.left(first.section, room) < 0:
        return None  # not even an empty line fits: the unit is never worded
    if kind == "merge":
        assert first.group is not None
        most = min(total, MERGE_MAX_ITEMS)
        parts = [first.compact(MERGE_ITEM_SUBJECT)]
        # Every merged line of the unit starts with its first item: when that one alone
        # does not fit, none does, and the others are never worded.
        least = words.merged.format(k=words.name(first.group), items=parts[0])
        if not layout.fits(first.section, least, room):
            return None
        parts += [i.compact(MERGE_ITEM_SUBJECT) for i in unit[1:most]]
        for shown in range(most, 0, -1):
            text = _merged_text(words, first.group, total, shown, parts)
            if layout.fits(first.section, text, room):
                line = Line(first.section, text, unit[:shown], first.key, merged=first.group)
                layout.add(line)
                return _Placed(line)
        return None
    if kind == "bulk":
        full, short = _bulk_texts(words, unit, total)
        counted = total - len(unit)
        make: Callable[[str], Line] = lambda text: _bulk_line(text, unit, counted)  # noqa: E731
    elif first.protected:
        full, short = first.full(), first.compact()
        make = lambda text: _single(first, text)  # noqa: E731
    else:
        full, short = first.full(MAX_SUBJECT), first.compact(MAX_SUBJECT)
        make = lambda text: _single(first, text)  # noqa: E731
    if len(full) <= len(short):
        short = full
    if not layout.fits(first.section, short, room):
        return None
    line = make(short)
    layout.add(line)
    return _Placed(line, None if short == full else full)


def _detail(layout: Layout, placed: list[_Placed], room: int) -> None:
    """Give the shortened lines their full sentence while room lasts: what bears on the
    focus first, then the rest; within each, one per section in turn (each section's best
    line, then each one's second, ...), best first within a turn: every kind of knowledge
    gets its detail before any kind gets more of it."""
    turn: dict[tuple[bool, str], int] = {}
    queue = []
    for p in sorted(placed, key=lambda p: p.line.key):
        aside = not _relevant(p.line)
        at = (aside, p.line.section)
        turn[at] = turn.get(at, -1) + 1
        if p.fuller is not None:
            queue.append((aside, turn[at], p.line.key, p))
    for *_, p in sorted(queue, key=lambda q: q[:3]):
        assert p.fuller is not None
        grow = len(p.fuller) - len(p.line.text)
        if layout.used + grow <= room:
            layout.used += grow
            p.line.text = p.fuller
            p.fuller = None


def _compressed(
    protected: list[Phrased],
    units: list[tuple[str, list[Phrased]]],
    words: Words,
    room: int,
    short: bool,
    unread: Mapping[str, int] | None = None,
    ahead: tuple[int, float] | None = None,
    uncertain: Collection[int] = (),
    unworded: Mapping[str, Unworded] | None = None,
    fewest: Fewest | None = None,
    pending: Callable[[], Unread | None] | None = None,
    *,
    held: Callable[[Words], int] | None = None,
) -> Layout | None:
    """The compressed layout: breadth, then detail, then background (see :func:`pack`), of
    the ``protected`` items and the other items' ``units`` (:func:`_units`; both in priority
    order, computed once for both tries of :func:`pack`).

    ``unread`` counts, per section, background memories a bounded read left out
    (:func:`pack_social`), and rumours when ``ahead`` bounds their rank (tier, highest
    rounded score): None when one of them might have had a line; so does a unit of an
    ``uncertain`` item (by ``id``: one whose merged line may list unread ones too) whose
    shortest form might fit; and so do the ``unworded`` memories of a section (its tier, how
    many, the fewest characters of their subjects: see :func:`pack_social`) when the line
    of the shortest might fit where the breadth pass reaches their tier. ``fewest`` gives,
    when first needed, per section the least number of characters an unread memory's
    subject has in a merged line (see :func:`pack_social`). Where one of them may still get
    a line, ``pending`` (called only then) gives them as units and builds those the
    background pass reaches, and those an ``uncertain`` unit's line would list (None: it
    cannot). ``held`` (called only where the emptiest line of an unread rumour might fit)
    gives the fewest characters the text of a line one of them leads can have."""
    layout = _protected(protected, words, room, short=short)
    if layout.summary is not None or layout.counts:
        return layout  # even the contested and corrected beliefs had to be counted
    placed = [_Placed(line, line.items[0].full()) for line in layout.lines]
    for p in placed:
        if p.fuller == p.line.text:
            p.fuller = None
    focused = [u for u in units if u[1][0].item.relevant]
    general = [u for u in units if not u[1][0].item.relevant and u[1][0].key[0] <= BREADTH_TIER]
    background = [u for u in units if not u[1][0].item.relevant and u[1][0].key[0] > BREADTH_TIER]
    # 1. breadth and detail for what bears on the focus (with a focus), then 2. for the rest
    # of what matters: every memory in its short form, then full sentences section by section
    unread = unread or {}
    social = {s: n for s, n in unread.items() if n and s not in _BULK_SECTIONS}
    waiting = dict(unworded or {})  # reached by the breadth pass with what bears on the focus
    for band in (focused, general):
        for kind, unit in band:
            if waiting and band is focused and not _passed(layout, waiting, unit[0].key[0], room):
                return None
            if band is general and ahead is not None and not _before(unit[0], ahead):
                # The unread rumours would be tried from here on: only when
                # not even their emptiest line fits do none of them ever get one.
                if _closed(layout, social, room) is None and not _held_out(
                    layout, social, room, held
                ):
                    return None
                ahead = None
            total = None
            if uncertain and id(unit[0]) in uncertain:
                if not _may_fit(layout, unit[0], room):
                    continue  # no line of it fits, whatever else it would list
                rows = pending() if pending is not None else None
                if rows is None:
                    return None  # its line might list unread memories too
                first = unit[0]
                assert first.group is not None  # (only a unit with a group is uncertain)
                joining = rows.joins(first.section, first.group)
                if joining:  # the unread ones that share its line: it lists the first few
                    built = rows.build(joining[: max(0, MERGE_MAX_ITEMS - len(unit))])
                    if built is None or [i.key for i in built] != list(joining[: len(built)]):
                        return None
                    kind, total = "merge", len(unit) + len(joining)
                    unit = sorted([*unit, *built], key=lambda i: i.key)
            found = _cheapest(layout, kind, unit, room, total)
            if found is not None:
                placed.append(found)
        if band is focused:
            if waiting and not _passed(layout, waiting, None, room):
                return None
            _detail(layout, [p for p in placed if _relevant(p.line)], room)
    if ahead is not None and _closed(layout, social, room) is None:
        return None  # they come last, and one might still fit
    _detail(layout, placed, room)
    closed = _closed(layout, unread, room)
    if closed is None and fewest is not None:
        # Every line of a plain memory holds its subject, cut as a merged line cuts it: with
        # the fewest characters any of theirs has there, none may fit after all.
        # (asked only of the sections where a line with no subject would still fit)
        opened = [s for s, n in unread.items() if n and _emptiest_fits(layout, s, room)]
        closed = _closed(layout, unread, room, fewest(opened))
    later: Unread | None = None
    if closed is None:
        later = pending() if pending is not None else None
        if later is None:
            return None
        if later.counts() != {s: n for s, n in unread.items() if n}:
            return None  # never happens: they are the unread memories
    # (the emptiest line of an unread memory per section: its template's words and the
    # shortest subject, as _emptiest_fits counts them)
    least = fewest(unread) if later is not None and fewest is not None else {}
    emptiest = {s: _least(words, s) + least.get(s, 0) for s in unread}
    for kind, unit, due in _background(background, later.units if later else ()):
        # 3. background, in rank order, as room remains
        if due is not None:  # unread memories: built when the emptiest line of theirs fits
            if emptiest[due.section] > layout.left(due.section, room):
                continue
            assert later is not None
            built = later.build(due.listed)
            if built is None or [i.key for i in built] != list(due.listed):
                return None  # not worded as the full read words them: it answers
            unit = built
        found = _cheapest(layout, kind, unit, room, None if due is None else due.total)
        if found is not None and found.fuller is not None:
            _detail(layout, [found], room)
    if closed is not None and closed != {s for s in unread if unread[s] and s in layout._sections}:
        return None  # never happens: only an unread memory could open their sections
    return layout


def _background(
    units: Sequence[tuple[str, list[Phrased]]], pending: Sequence[Pending]
) -> Iterator[tuple[str, list[Phrased], Pending | None]]:
    """The background units in rank order: those built, and the ``pending`` ones (their
    list empty until built)."""
    Entry = tuple[Key, str, list[Phrased], Pending | None]
    built: Iterator[Entry] = ((unit[0].key, kind, unit, None) for kind, unit in units)
    due: Iterator[Entry] = ((p.key, p.kind, [], p) for p in pending)
    for _, kind, unit, p in heapq.merge(built, due, key=lambda t: t[0]):
        yield kind, unit, p


def _passed(layout: Layout, waiting: dict[str, Unworded], tier: int | None, room: int) -> bool:
    """Whether the unworded memories of each ``waiting`` section whose tier the breadth pass
    has reached (every one at ``tier`` None) never get a line: not even the shortest line
    one of them can lead (:func:`least_line`: first whatever their subjects, then with
    them worded) fits what is left. Where it first reaches their tier, what is left is the
    most they would ever find: the layout only grows. Each section shown so is no longer
    waiting; False when one might fit."""
    for section, unbuilt in list(waiting.items()):
        if tier is not None and tier < unbuilt.tier:
            continue
        left = layout.left(section, room)
        if unbuilt.number and unbuilt.floor <= left and unbuilt.least() <= left:
            return False
        del waiting[section]
    return True


def _may_fit(layout: Layout, first: Phrased, room: int) -> bool:
    """Whether any line :func:`_cheapest` may make of a unit led by ``first`` fits: its
    full or compact sentence, or the shortest merged line (``first`` alone, whatever else
    the line lists or counts after it)."""
    words = layout.words
    forms = [first.full(MAX_SUBJECT), first.compact(MAX_SUBJECT)]
    if first.group is not None:
        least = first.compact(MERGE_ITEM_SUBJECT)
        forms.append(words.merged.format(k=words.name(first.group), items=least))
    return any(layout.fits(first.section, text, room) for text in forms)


def _before(item: Phrased, ahead: tuple[int, float]) -> bool:
    """Whether ``item`` ranks before every item of tier ``ahead[0]`` scoring at most
    ``ahead[1]`` (so it is laid out before any of them)."""
    tier, score = ahead
    return item.key[0] < tier or (item.key[0] == tier and -item.key[1] > score)


def _closed(
    layout: Layout, unread: Mapping[str, int], room: int, fewest: Mapping[str, int] | None = None
) -> set[str] | None:
    """Which sections of the ``unread`` memories already have a heading, when not even the
    emptiest line of any of them ("- ", a newline, its heading if new, the words of its
    templates, :func:`_least`, and a subject of at least ``fewest[section]`` characters)
    fits what is left; None when one might. The background pass only adds to what is used,
    so then none of them ever gets a line, whatever it says."""
    opened = {s for s in unread if unread[s] and s in layout._sections}
    fewest = fewest or {}
    for section, n in unread.items():
        if n and _emptiest_fits(layout, section, room, fewest.get(section, 0)):
            return None
    return opened


def _held_out(
    layout: Layout, unread: Mapping[str, int], room: int, held: Callable[[Words], int] | None
) -> bool:
    """Whether no line of the unread rumours (the only ``unread`` left) fits what is left,
    not even the shortest ``held`` bounds: False without it."""
    if held is None or set(unread) != {"told"}:
        return False
    return held(layout.words) > layout.left("told", room)


def _emptiest_fits(layout: Layout, section: str, room: int, subject: int = 0) -> bool:
    """Whether the emptiest line an unread memory of ``section`` could make fits what is
    left: "- ", a newline, its heading if new, the words of its templates (:func:`_least`)
    and a subject of at least ``subject`` characters."""
    return _least(layout.words, section) + subject <= layout.left(section, room)


class _Blank(dict[str, str]):
    """Every field of a template empty."""

    def __missing__(self, key: str) -> str:
        return ""


def _bare(template: str) -> int:
    """How long ``template`` is with every field empty."""
    return len(template.format_map(_Blank()))


def _least(words: Words, section: str) -> int:
    """The fewest characters the text of a line of an unprotected sure, believed or faded
    memory, or a rumour, of ``section`` can have (0 for any other): what its templates say
    around the subject, whatever the subject, in each form :func:`_cheapest` may choose —
    its full sentence (with its day and full stop) or its compact form, a merged line, a
    bulk line."""
    dated = min(_bare(words.dated), _bare(words.dated_unconfirmed)) + len(words.stop)
    singles = {
        "sure": [_bare(words.sure) + dated, 0],  # the compact form is the bare subject
        "believe": [
            n
            for full, compact in (
                (words.think, words.c_think),
                (words.unsure, words.c_unsure),
                (words.implanted, words.c_implanted),
            )
            for n in (_bare(full) + dated, _bare(compact))
        ],
        "faded": [
            _bare(t) for t in (words.faded, words.faded_told, words.c_faded, words.c_faded_told)
        ],
        "told": [
            _bare(words.told) + dated,
            _bare(words.c_told),
            _bare(words.c_told_unconfirmed),
        ],
    }.get(section)
    if singles is None:
        return 0
    least = min(*singles, _bare(words.merged))
    if section in _BULK_SECTIONS:
        least = min(least, _bare(words.bulk), _bare(words.c_bulk))
    return least


def _least_compact(words: Words, section: str) -> int:
    """The fewest characters the compact form of a sure, believed or faded memory, or a
    rumour, of ``section`` has around its subject (what a merged line lists of each: 0 for
    any other section)."""
    forms = {
        "sure": (),  # the compact form is the bare subject
        "believe": (words.c_think, words.c_unsure, words.c_implanted),
        "faded": (words.c_faded, words.c_faded_told),
        "told": (words.c_told, words.c_told_unconfirmed),
    }.get(section, ())
    return min((_bare(t) for t in forms), default=0)


def least_line(
    words: Words, section: str, subject: int, group: str | None = None, members: int = 1
) -> int:
    """The fewest characters the text of a line led by a memory of ``section`` whose
    subject has ``subject`` characters (cut as a merged line cuts it) can have: alone, any
    form :func:`_cheapest` may choose (:func:`_least` around the subject). In a unit of at
    least ``members`` (2 or more) merged under ``group``, where :func:`_cheapest` lays out
    only merged lines: the merged template and the group's name around the leader's compact
    form, then either another listed member (its compact form, whatever its subject) or the
    count of those it leaves out, at least ``members`` less the most it lists."""
    if group is None or members < 2:
        return _least(words, section) + subject
    compact = _least_compact(words, section)
    more = len(words.merge_more.format(n=max(1, members - MERGE_MAX_ITEMS)))
    if members <= MERGE_MAX_ITEMS:  # every member listed: one more item at least
        more = min(more, len(words.merge_sep) + compact)
    return _bare(words.merged) + len(words.name(group)) + compact + subject + more


def _relevant(line: Line) -> bool:
    """Whether a line stands for a memory that bears on the focus."""
    return any(i.item.relevant for i in line.items)


def _fuller(layout: Layout) -> int:
    """How many lines of ``layout`` are in their full form (a tie-break between layouts)."""
    return sum(
        1
        for ln in layout.lines
        if not ln.bulk and ln.merged is None and ln.text == ln.items[0].full()
    )


def _everything(ordered: list[Phrased], words: Words, budget: int) -> Layout | None:
    """Every item in its full sentence (bulk families on their line), if that fits.

    Each bullet renders at least "- " and its text, so once those alone pass the budget the
    answer is no, and the rest are never worded.
    """
    bulk, rest = _bulk(ordered)
    lines: list[Line] = []
    least = 0
    for line in chain(
        (_single(i, i.full()) for i in rest),
        (_bulk_line(_bulk_texts(words, unit)[0], unit) for unit in bulk),
    ):
        least += len(line.text) + 2
        if least > budget:
            return None
        lines.append(line)
    full = _laid(words, lines)
    return full if len(full.render(0)) <= budget else None


@dataclass(frozen=True, slots=True)
class Horizon:
    """How far a bounded read reaches in the round robin of the protected layout: every
    section's first ``turns`` protected items were read (None: nothing was left unread)."""

    turns: int | None = None


def pack_bounded(
    items: list[Phrased],
    words: Words,
    budget: int,
    extra: Mapping[str, int],
    horizon: Horizon,
) -> Layout | None:
    """What :func:`pack` gives for ``items`` plus ``extra`` unread ones per section, when that
    can be told from them: when even the compact lines of the protected items cannot all
    fit, the layout is those that do (the rest, protected or not, are only counted), and it
    depends only on the protected items up to where the layout stopped. None when not
    everything is known to overflow, when the protected lines fit (the rest would be laid
    out), or when the layout looked past ``horizon``.
    """
    if budget < MIN_BUDGET:
        raise ValueError(f"narrative budget must be at least {MIN_BUDGET} characters, not {budget}")
    total = len(items) + sum(extra.values())
    # Each bullet renders at least "- ", one character and a newline: more lines outside the
    # bulk sections than a third of the budget, and not everything fits (pack's first try).
    # So do the full sentences of the protected items outside them, when longer than it.
    lines = sum(1 for i in items if i.section not in _BULK_SECTIONS)
    lines += sum(n for section, n in extra.items() if section not in _BULK_SECTIONS)
    protected = sorted((i for i in items if i.protected), key=lambda i: i.key)
    if 3 * lines <= budget and not _longer(protected, budget):
        return None
    room = budget - (len(words.omitted(max(total, 2))) + 2)
    trace = Trace()
    layout = _protected(protected, words, room, extra=extra, trace=trace)
    if layout.summary is None and not layout.counts:
        return None  # every read compact line fits: pack lays out more (the full read answers)
    if layout.summary is None and horizon.turns is not None:
        if trace.exhausted or trace.turns > horizon.turns:
            return None
    return layout


def _longer(items: list[Phrased], budget: int) -> bool:
    """Whether the bullets of ``items`` outside the bulk sections (each a line of its own in
    :func:`_everything`) alone pass ``budget``."""
    least = 0
    for item in items:
        if item.section not in _BULK_SECTIONS:
            least += len(item.full()) + 2
            if least > budget:
                return True
    return False


def _overflowing(
    items: list[Phrased],
    words: Words,
    budget: int,
    unread: Mapping[str, int],
    fewest: Fewest | None,
    pending: Callable[[], Unread | None] | None,
) -> bool:
    """Whether the bullets :func:`_everything` would lay out for the read ``items`` and the
    ``unread`` plain memories alone pass ``budget`` (so not everything fits), told from the
    units of the unread ones (``pending``: a bulk family is one line, every other memory a
    line of its own) and the least each line of theirs holds ("- ", a newline, its
    section's emptiest template, and the shortest subject, ``fewest``). Only when no read
    item could join a bulk family there (else the count of lines is not known)."""
    if fewest is None or pending is None:
        return False
    if any(
        i.section in _BULK_SECTIONS and not i.item.relevant and i.item.from_belief for i in items
    ):
        return False  # (a tampered-with plain memory: _everything may bulk it with unread ones)
    found = pending()
    if found is None or found.counts() != {s: n for s, n in unread.items() if n}:
        return False  # (the second never happens: they are the unread memories)
    lines: dict[str, int] = {}
    for unit in found.units:
        lines[unit.section] = lines.get(unit.section, 0) + (
            1 if unit.kind == "bulk" else unit.total
        )
    for (section, _), keys in found.joining.items():
        lines[section] = lines.get(section, 0) + len(keys)
    least = sum(len(i.full()) + 2 for i in items)
    shortest = fewest(lines)
    for section, n in lines.items():
        least += n * (2 + _least(words, section) + shortest.get(section, 0))
        if least > budget:
            return True
    return least > budget


def pack(items: list[Phrased], words: Words, budget: int) -> tuple[Layout, bool]:
    """Choose and phrase the lines for ``budget``; return the layout and whether it had to
    compress. ``items`` may be in any order."""
    if budget < MIN_BUDGET:
        raise ValueError(f"narrative budget must be at least {MIN_BUDGET} characters, not {budget}")
    ordered = sorted(items, key=lambda i: i.key)
    # The lines outside the bulk sections are lines of their own in _everything: when their
    # bullets alone pass the budget, not everything fits, and no family need be sorted out.
    if not _longer(ordered, budget):
        full = _everything(ordered, words, budget)
        if full is not None:
            return full, False
    room = budget - (len(words.omitted(max(len(items), 2))) + 2)
    protected = [i for i in ordered if i.protected]
    units = _units([i for i in ordered if not i.protected])
    best = _compressed(protected, units, words, room, short=False)
    assert best is not None
    if best.represented() < len(items) and not best.short:
        # Something is left out: headings are overhead, so short ones are tried too and kept
        # when they let more memories in (or as many, more of them in full).
        short = _compressed(protected, units, words, room, short=True)
        assert short is not None
        if (short.represented(), _fuller(short)) > (best.represented(), _fuller(best)):
            best = short
    return best, True


def pack_social(
    items: list[Phrased],
    words: Words,
    budget: int,
    unread: Mapping[str, int],
    ahead: tuple[int, float] | None = None,
    unworded: Mapping[str, Unworded] | None = None,
    fewest: Fewest | None = None,
    pending: Callable[[], Unread | None] | None = None,
    *,
    held: Callable[[Words], int] | None = None,
) -> Layout | None:
    """What :func:`pack` gives for ``items`` plus ``unread`` background memories per section
    (faded ones, plain sure and believed facts: :func:`.recall.recall_social`), when that can
    be told from them: when not everything fits in full (the bullets outside the bulk
    sections alone pass the budget), the unread memories are all background, never in a
    family or merged line with a read one, and no room is left for even the emptiest line
    of theirs when the background pass starts (:func:`_closed`); then they are only counted.
    None otherwise.

    With ``ahead`` (the tier and highest rounded score of any of them), unread rumours
    (section ``told``) are counted too, when no read one could share a line with them and no
    room is left for even the emptiest line of theirs where the breadth pass reaches their
    rank; ``held`` (called only where that emptiest line might fit) gives the fewest
    characters the text of a line one of them leads can have (:func:`least_line` of their
    groups, worded in ``words``), which may still tell that none fits.

    With a focus, the read memories of those sections are the ones that bear on it (every
    one of them: the unread ones do not, so no family holds a read one), and one may share
    a merged line (its place or person) with unread ones: such a line is left out when not
    even its shortest form fits where the breadth pass reaches it, whatever else it would
    list; else the unread ones it would list are built (``pending``, below), or None
    without it. Those that bear on it may be left unread as well
    (``unworded``, part of ``unread``: per section, their tier, how many, and the fewest
    characters the text of a line one of them leads can have, :func:`least_line`): every
    line of one holds its subject, cut at :data:`MERGE_ITEM_SUBJECT` or more, and the words
    of a template around it (a merged line also its group's name, and another member or a
    count), so they are counted when not even the shortest such line fits where the breadth
    pass reaches their tier.

    Where the emptiest line of an unread memory might still fit when the background pass
    starts, ``fewest`` (called only then, and asked only of those sections) gives per section
    a number of characters no unread memory's subject has fewer of, cut as a merged line cuts
    it: every line of one holds that much besides its template, so they are counted when not
    even that line fits. Where one
    might still fit, ``pending`` (called only then, at most once: every rumour read and
    every memory that bears on the focus built) gives the unread ones as the units
    :func:`_units` would make of them (:func:`pending_units`; those sharing a read unit's
    merged line apart) and builds the few each line reached would list: the background pass
    goes on with them in rank order, building a unit only when the emptiest line of its
    section, with that shortest subject, fits what is left (:func:`_cheapest` could lay out
    no other), and the rest are only counted."""
    if budget < MIN_BUDGET:
        raise ValueError(f"narrative budget must be at least {MIN_BUDGET} characters, not {budget}")
    counted = _BULK_SECTIONS if ahead is None else _BULK_SECTIONS | {"told"}
    if any(n and s not in counted for s, n in unread.items()):
        return None
    ordered = sorted(items, key=lambda i: i.key)
    shared = [
        i
        for i in ordered
        if i.section in counted and not i.protected and i.item.from_belief and unread.get(i.section)
    ]
    if any(not i.item.relevant for i in shared):
        return None  # a read memory that could share a family or a line with unread ones
    uncertain = {id(i) for i in shared if i.group is not None}
    if not _longer(ordered, budget) and not _overflowing(
        ordered, words, budget, unread, fewest, pending
    ):
        return None
    total = len(items) + sum(unread.values())
    room = budget - (len(words.omitted(max(total, 2))) + 2)
    protected = [i for i in ordered if i.protected]
    units = _units([i for i in ordered if not i.protected])
    best = _compressed(
        protected, units, words, room, False, unread, ahead, uncertain, unworded, fewest, pending,
        held=held,
    )  # fmt: skip
    if best is None:
        return None
    if best.represented() < total and not best.short:
        short = _compressed(
            protected, units, words, room, True, unread, ahead, uncertain, unworded, fewest,
            pending, held=held,
        )  # fmt: skip
        if short is None:
            return None
        if (short.represented(), _fuller(short)) > (best.represented(), _fuller(best)):
            best = short
    return best
