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

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine import Belief
from ..store.rows import load_json
from .items import NOTABLE_AT, Item, new_item, tier_of
from .registry import Registry

__all__ = [
    "CONFIDENCE_WEIGHT",
    "HALF_LIFE_DAYS",
    "RELEVANCE_WEIGHT",
    "WIDE_SQL",
    "Focus",
    "Terms",
    "Why",
    "plain_keys",
    "rank",
    "row_matches",
    "row_prefilter",
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


@dataclass(frozen=True, slots=True)
class Terms:
    """A focus prepared to match many memories: each person's registered names, and each
    place and topic, casefolded once (the rules are :func:`matches`')."""

    people: tuple[tuple[str, tuple[str, ...]], ...]
    places: tuple[tuple[str, str], ...]
    roots: tuple[str, ...]
    topics: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, focus: Focus, registry: Registry) -> Terms:
        return cls(
            people=tuple(
                (p, tuple(n.casefold() for n in registry.all_names(p) if len(n) >= 2))
                for p in focus.people
            ),
            places=tuple((p, p.casefold()) for p in focus.places),
            roots=focus.roots,
            topics=tuple((t, t.casefold()) for t in focus.topics),
        )

    def matched(
        self,
        root: str,
        subject: str,
        related: Collection[str],
        places: Collection[str],
        topics: Collection[str],
    ) -> list[str]:
        """The terms a memory with these fields matches, as ``kind:term`` strings, in focus
        order (``related``: the people it names, who told it, who acted in it)."""
        segments = root.split(":")
        folded = subject.casefold()  # a term occurs in it when its casefold does
        found: list[str] = []
        for person, names in self.people:
            hit = person in related or person in segments
            for name in () if hit else names:
                if name in folded:
                    hit = True
                    break
            if hit:
                found.append(f"person:{person}")
        for place, term in self.places:
            if place in places or place in segments or (place and term in folded):
                found.append(f"place:{place}")
        for prefix in self.roots:
            if root.startswith(prefix):
                found.append(f"root:{prefix}")
        for topic, term in self.topics:
            if topic in topics or topic in segments or (topic and term in folded):
                found.append(f"topic:{topic}")
        return found


def matches(item: Item, focus: Focus | Terms, registry: Registry) -> list[str]:
    """The focus terms ``item`` matches, as ``kind:term`` strings, in focus order."""
    terms = focus if isinstance(focus, Terms) else Terms.of(focus, registry)
    b = item.belief
    related = {*b.people, *b.heard_from, *(item.extra or {}).get("_people", ())}
    return terms.matched(b.root, b.subject or "", related, b.places, b.topics)


def row_matches(focus: Focus, registry: Registry) -> Callable[..., int]:
    """How many of ``focus``'s terms a belief row matches, from its stored ``root, subject,
    people, places, topics, heard_from`` (the lists as stored JSON): the SQL function the
    bounded read ranks a focused narrative with (:func:`.recall.recall_bounded`), by the very
    rules :func:`rank` applies to the belief read from that row."""
    terms = Terms.of(focus, registry)
    named = tuple(f'"{person}"' for person, _ in terms.people)
    listed = tuple(f'"{term}"' for term, _ in (*terms.places, *terms.topics))

    def strings(text: str, wanted: tuple[str, ...]) -> tuple[str, ...]:
        # Without a backslash every element is stored as itself between quotes: a list
        # holding none of the wanted terms so is none of theirs, and is not parsed.
        if text == "[]":
            return ()
        if "\\" not in text:
            for quoted in wanted:
                if quoted in text:
                    break
            else:
                return ()
        return tuple(load_json(text))

    def count(
        root: str, subject: str | None, people: str, places: str, topics: str, heard_from: str
    ) -> int:
        related = strings(people, named) + strings(heard_from, named)
        found = terms.matched(
            root, subject or "", related, strings(places, listed), strings(topics, listed)
        )
        return len(found)

    return count


def row_matched(focus: Focus, registry: Registry) -> Callable[..., bool]:
    """Whether a belief row (the arguments of :func:`row_matches`) matches any of
    ``focus``'s terms: :func:`row_matches` above 0, most rows settled from the stored text
    alone. A focused read of a big resident keeps hundreds of rows that name the person or
    place in focus in a list, and asks only whether each matches.

    In a list stored without a backslash every element is itself between quotes, and every
    quote delimits one; so a term that holds no quote, backslash, comma or control
    character occurs in that text between quotes exactly when it is an element (between
    two elements the text holds only a comma). A row that no such test settles is counted."""
    count = row_matches(focus, registry)
    terms = Terms.of(focus, registry)

    def quoted(term: str) -> str | None:  # the term's stored form, when it is that simple
        plain = term and not any(c in '"\\,' or c < " " for c in term)
        return f'"{term}"' if plain else None

    people = tuple(q for q in (quoted(p) for p, _ in terms.people) if q)
    places = tuple(q for q in (quoted(p) for p, _ in terms.places) if q)
    topics = tuple(q for q in (quoted(t) for t, _ in terms.topics) if q)
    prefixes = terms.roots

    def listed(text: str, wanted: tuple[str, ...]) -> bool:
        return "\\" not in text and any(q in text for q in wanted)

    def matched(
        root: str, subject: str | None, people_text: str, places_text: str, topics_text: str,
        heard_text: str,
    ) -> bool:  # fmt: skip
        if (
            (people and (listed(people_text, people) or listed(heard_text, people)))
            or (places and listed(places_text, places))
            or (topics and listed(topics_text, topics))
            or any(root.startswith(prefix) for prefix in prefixes)
        ):
            return True
        return count(root, subject, people_text, places_text, topics_text, heard_text) > 0

    return matched


#: Whether a row's subject has a character outside ASCII (its length in characters is not
#: its length in bytes): only then can its casefold differ from SQLite's ``lower()`` or
#: ``LIKE``, so only then may :func:`row_prefilter` miss a row that matches.
WIDE_SQL = "length(subject) <> length(CAST(subject AS BLOB))"


def row_prefilter(focus: Focus, registry: Registry) -> tuple[str, dict[str, str]]:
    """A SQL condition on a belief row's ``root, subject, people, places, topics,
    heard_from`` that every row :func:`row_matches` counts a term of satisfies, or else
    :data:`WIDE_SQL` (either may hold for others too), and its named parameters: evaluated
    in SQLite, it spares the Python function the rows that cannot match, as a focused
    narrative of thousands of plain facts asks (:func:`.recall.recall_social`).

    Each rule of :meth:`Terms.matched` widened to a substring test: a term in a stored list
    occurs in its JSON text between quotes (or, for a term JSON may escape, the text has an
    escape); a segment of the root occurs in
    the root; a casefolded name or term in the casefolded subject occurs in it under
    ``LIKE`` (ASCII case-insensitive; ``%``, ``_`` and ``\\`` escaped) unless the subject
    holds a character beyond ASCII (which this condition leaves to :data:`WIDE_SQL`)."""
    terms = Terms.of(focus, registry)
    params: dict[str, str] = {}
    tests: list[str] = []

    def param(value: str) -> str:
        name = f"pre{len(params)}"
        params[name] = value
        return f":{name}"

    escaped: set[str] = set()  # lists whose terms may be stored escaped

    def listed(column: str, term: str) -> None:  # an element, stored between quotes
        quoted = param('"' + term + '"')
        tests.append(f"instr({column}, {quoted}) > 0")
        if not term.isascii() or any(c in '"\\' or c < " " for c in term):
            escaped.add(column)

    def segment(term: str) -> None:
        if term:
            tests.append(f"instr(root, {param(term)}) > 0")
        else:  # an empty segment: the root is empty, or starts, ends or doubles a colon
            tests.append("(root = '' OR root LIKE ':%' OR root LIKE '%:' OR instr(root, '::') > 0)")

    def said(term: str) -> None:
        escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        tests.append(f"subject LIKE {param(f'%{escaped}%')} ESCAPE '\\'")

    for person, names in terms.people:
        listed("people", person)
        listed("heard_from", person)
        segment(person)
        for name in names:
            said(name)
    for column, pairs in (("places", terms.places), ("topics", terms.topics)):
        for term, folded in pairs:
            listed(column, term)
            segment(term)
            if term:
                said(folded)
    for prefix in terms.roots:
        tests.append(f"instr(root, {param(prefix)}) = 1")
    if not tests:
        return "0", params
    tests += [f"instr({c}, '\\') > 0" for c in sorted(escaped)]
    return "(" + " OR ".join(tests) + ")", params


def _parts(b: Belief, matched: int, today: float) -> tuple[float, float, float, float, float]:
    """The score of a memory matching ``matched`` focus terms and its parts, unrounded (one
    expression for :func:`rank`'s order, for every ``why`` and for :func:`plain_keys`)."""
    return _scored(b.updated_day, b.importance, b.confidence, matched, today)


def _scored(
    updated_day: float, importance: float | None, confidence: int, matched: int, today: float
) -> tuple[float, float, float, float, float]:
    relevance = 1 - 0.5**matched
    recency = 0.5 ** (max(0.0, today - updated_day) / HALF_LIFE_DAYS)
    weight = min(1.0, importance or 0.0)
    sure = confidence / 100
    score = RELEVANCE_WEIGHT * relevance + recency + weight + CONFIDENCE_WEIGHT * sure
    return score, relevance, recency, weight, sure


def plain_keys(
    rows: Iterable[Sequence[Any]],
) -> Iterator[tuple[tuple[int, float, float, str], str, Sequence[Any]]]:
    """The rank key each plain memory's item gets without a focus (:attr:`.items.Item.key`:
    its tier as :func:`.items.classify_belief` gives it, its rounded score), from rows of
    :data:`.recall.PLAIN_COLUMNS` (a big resident's are keyed without building one), each
    as ``(key, section, row)``. The row's score is :func:`_scored`'s, computed in SQL by the
    same float operations in the same order (``tests/test_read_bounded.py`` compares every
    key with the pipe's); only its rounding is done here (SQLite's ``round()`` is not
    Python's)."""
    tiers: dict[tuple[str, bool], int] = {}  # (tens of thousands of rows, a few tiers)
    for row in rows:
        section, importance = row[1], row[3]
        notable = section != "faded" and (importance or 0.0) >= NOTABLE_AT
        tier = tiers.get((section, notable))
        if tier is None:
            tier = tiers[section, notable] = tier_of(section, False, True if notable else None)
        yield (tier, -round(row[7], 4), -row[2], row[0]), section, row


def score_parts(item: Item, matched: Sequence[str], today: float) -> dict[str, float]:
    """The parts of the score (rounded to 4 places, so the order is stable)."""
    return _rounded(item.belief, len(matched), today)


_PART_NAMES = ("score", "relevance", "recency", "importance", "confidence")


def _rounded(b: Belief, matched: int, today: float) -> dict[str, Any]:
    return {k: round(p, 4) for k, p in zip(_PART_NAMES, _parts(b, matched, today), strict=True)}


class Why(Mapping[str, Any]):
    """Why an item ranks where it does: :func:`score_parts`, its ``tier`` and the focus terms
    it ``matched``. Worked out when first read: a narrative ranks every memory a resident
    holds and sends this for the few it shows."""

    __slots__ = ("_belief", "_dict", "_matched", "_tier", "_today")

    def __init__(self, belief: Belief, matched: list[str], today: float, tier: int) -> None:
        self._belief, self._matched, self._today, self._tier = belief, matched, today, tier
        self._dict: dict[str, Any] | None = None

    def _whole(self) -> dict[str, Any]:
        if self._dict is None:
            whole = _rounded(self._belief, len(self._matched), self._today)
            whole["tier"], whole["matched"] = self._tier, self._matched
            self._dict = whole
        return self._dict

    def __getitem__(self, key: str) -> Any:
        return self._whole()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())

    def __repr__(self) -> str:
        return f"Why({self._whole()!r})"


def rank(items: Iterable[Item], focus: Focus, today: float, registry: Registry) -> list[Item]:
    """Every item with its tier, score and ``why`` set for ``focus`` on day ``today``."""
    out = []
    terms = Terms.of(focus, registry)
    for item in items:
        matched = matches(item, terms, registry) if focus else []
        score = round(_parts(item.belief, len(matched), today)[0], 4)
        tier = (
            tier_of(item.section, bool(matched), item.social) if item.lines is None else item.tier
        )
        # (built positionally: a long game ranks tens of thousands of items per narrative)
        out.append(new_item(
            item.belief, item.section, item.band, tier, item.group, item.correction,
            item.counter, score, Why(item.belief, matched, today, tier), bool(matched),
            item.acts, item.trust, item.extra, item.said, item.sources, item.lines,
            item.social,
        ))  # fmt: skip
    return out
