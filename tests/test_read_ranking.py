"""Ranking for a focus: the SQL function the bounded read ranks with matches as rank does."""

from __future__ import annotations

import itertools
import sqlite3

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sidecar.engine import Belief, SourceKind, State
from sidecar.read import Focus
from sidecar.read.items import classify_belief
from sidecar.read.ranking import (
    WIDE_SQL,
    Terms,
    matches,
    rank,
    row_matched,
    row_matches,
    row_prefilter,
)
from sidecar.read.registry import Registry
from sidecar.store.rows import dump_json

REGISTRY = Registry(
    names={
        "bo": {"en": "Bo", "zh-Hant": "波"},
        "kelvin": {"en": "KELVIN"},  # its subjects spell it with the Kelvin sign (K)
        "x": {"en": "X"},  # a one-letter name never matches a subject
        "strasse": {"en": "Straße"},  # casefolds to "strasse"
    }
)

#: Beliefs whose fields exercise every rule: ids in lists (some stored with JSON escapes),
#: root segments, names and terms in subjects under Unicode case folding, empty terms.
BELIEFS = [
    ("rumour:1", "bo said the well is dry", ("bo",), (), (), ()),
    ("rumour:2", "the mill is fine", (), ("mill",), ("water",), ("tom",)),
    ("relation:bo:3", "", (), (), (), ()),
    ("fact:well:4", "THE STRASSE IS WET", (), (), (), ()),
    ("fact:5", "Kelvin was here", (), (), (), ()),
    ("fact:6", "x marks it", ("x",), (), (), ()),
    ("odd:7", "波 saw gold", (), (), (), ()),
    ("fact::8", "nothing", ('a"b', "c\\d"), ('pl"ace',), (), ("bo\\",)),
    ("fact:9", "a ﬁre by the well", (), (), (), ("lena", "bo")),
    ("doubt:10", "Water, Mill and Bo", (), (), ("mill",), ()),
]
FOCUSES = [
    Focus(people=("bo",)),
    Focus(people=("kelvin", "x", "strasse")),
    Focus(people=('a"b', "c\\d", "bo\\"), places=('pl"ace',)),
    Focus(places=("well", "MILL", "")),
    Focus(topics=("fire", "water", "")),
    Focus(roots=("fact:", "rumour:1", "")),
    Focus(people=("tom", "lena"), places=("mill",), roots=("doubt",), topics=("gold",)),
]


def _belief(root: str, subject: str, people: tuple[str, ...], places: tuple[str, ...],
            topics: tuple[str, ...], heard: tuple[str, ...]) -> Belief:  # fmt: skip
    return Belief(
        resident="mira", root=root, value=1, subject=subject, confidence=70,
        state=State.INFLUENCING, source_kind=SourceKind.HEARSAY, source_resident_id="tom",
        formed_day=1.0, updated_day=1.0, last_evidence_day=1.0,
        people=people, places=places, topics=topics, heard_from=heard,
    )  # fmt: skip


def test_a_rows_match_count_is_what_rank_finds_for_its_belief() -> None:
    """For every focus and belief: the SQL function, given the row as stored (lists as
    JSON, escapes and all), counts exactly the terms :func:`matches` finds, and some
    beliefs match each focus (so the agreement is not all zeros)."""
    for focus in FOCUSES:
        count = row_matches(focus, REGISTRY)
        total = 0
        for fields in BELIEFS:
            root, subject, people, places, topics, heard = fields
            expected = matches(classify_belief(_belief(*fields)), focus, REGISTRY)
            stored = (root, subject, dump_json(list(people)), dump_json(list(places)),
                      dump_json(list(topics)), dump_json(list(heard)))  # fmt: skip
            assert count(*stored) == len(expected), (focus, root, expected)
            total += len(expected)
        assert total > 0, focus


def test_whether_a_row_matches_is_whether_its_count_is_above_zero() -> None:
    """The boolean a focused read asks of each row it keeps agrees with the count for every
    focus and belief (escaped ids, quotes and backslashes in terms, empty terms), and says
    yes for some and no for some of them."""
    for focus in FOCUSES:
        count, matched = row_matches(focus, REGISTRY), row_matched(focus, REGISTRY)
        answers = set()
        for fields in BELIEFS:
            stored = _stored(fields)
            assert matched(*stored) == (count(*stored) > 0), (focus, fields)
            answers.add(matched(*stored))
        assert answers == {True, False} or focus == Focus(roots=("fact:", "rumour:1", "")), focus


#: Ids and terms from the characters that can make a list's text lie about its elements:
#: quotes, backslashes, commas and brackets (JSON's own), a control character, a space.
_LISTED = st.text(alphabet=st.sampled_from('ab",\\[] \x01'), max_size=4)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_LISTED, max_size=3), st.lists(_LISTED, max_size=3), st.lists(_LISTED, max_size=3),
    st.lists(_LISTED, max_size=3), st.lists(_LISTED, max_size=2), st.lists(_LISTED, max_size=2),
    st.lists(_LISTED, max_size=2),
)  # fmt: skip
@example([], [], [], ["a", "b"], [","], [], [])  # between two quotes, but no element
@example(["a\\"], [], [], [], ["a"], [], [])  # a's own quotes, but stored escaped
def test_a_row_matches_exactly_when_its_count_says_so_whatever_its_lists_hold(
    people: list[str], places: list[str], topics: list[str], heard: list[str],
    focus_people: list[str], focus_places: list[str], focus_topics: list[str],
) -> None:  # fmt: skip
    """Stored lists and focus terms holding JSON's own characters (a focus on ``","`` is
    in the text between any two elements, yet names no element): the boolean never
    disagrees with the count."""
    focus = Focus(people=tuple(focus_people), places=tuple(focus_places),
                  topics=tuple(focus_topics))  # fmt: skip
    stored = _stored(("fact:1", "ab", people, places, topics, heard))
    assert row_matched(focus, REGISTRY)(*stored) == (row_matches(focus, REGISTRY)(*stored) > 0)


def _kept(focus: Focus, stored: tuple[str, ...]) -> bool:
    """Whether :func:`row_prefilter`'s condition, run by SQLite, keeps the stored row (or
    leaves it to the function: a subject beyond ASCII, :data:`WIDE_SQL`)."""
    where, params = row_prefilter(focus, REGISTRY)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE beliefs (root, subject, people, places, topics, heard_from)")
    conn.execute("INSERT INTO beliefs VALUES (?, ?, ?, ?, ?, ?)", stored)
    sql = f"SELECT count(*) FROM beliefs WHERE {where} OR {WIDE_SQL}"
    ((kept,),) = conn.execute(sql, params).fetchall()
    conn.close()
    return bool(kept)


def _stored(fields: tuple[object, ...]) -> tuple[str, ...]:
    root, subject, *lists = fields
    return (root, subject, *(dump_json(list(x)) for x in lists))  # type: ignore[arg-type]


def test_the_sql_prefilter_keeps_every_row_that_matches_and_drops_some_that_do_not() -> None:
    """Every belief a focus matches passes the SQL prefilter (escapes, case folding beyond
    ASCII and all); for each focus some that do not match are dropped by it (so it spares
    the function calls it is there to spare)."""
    for focus in FOCUSES:
        count = row_matches(focus, REGISTRY)
        dropped = 0
        for fields in BELIEFS:
            stored = _stored(fields)
            kept = _kept(focus, stored)
            assert kept or count(*stored) == 0, (focus, fields)
            dropped += not kept
        assert dropped > 0 or focus == Focus(roots=("fact:", "rumour:1", "")), focus


_TEXT = st.text(alphabet=st.sampled_from('aAbB_%\\"KKkßsS:波ﬁ fi\n'), max_size=8)


@settings(max_examples=300, deadline=None)
@given(
    st.tuples(
        _TEXT, _TEXT, st.lists(_TEXT, max_size=2), st.lists(_TEXT, max_size=2),
        st.lists(_TEXT, max_size=2), st.lists(_TEXT, max_size=2),
    ),
    st.lists(_TEXT, max_size=2), st.lists(_TEXT, max_size=2),
    st.lists(_TEXT, max_size=2), st.lists(_TEXT, max_size=1),
)  # fmt: skip
def test_the_sql_prefilter_never_drops_a_row_the_focus_matches(
    fields: tuple[object, ...], people: list[str], places: list[str], topics: list[str],
    roots: list[str],
) -> None:  # fmt: skip
    """Arbitrary ids, subjects and focus terms from an alphabet of LIKE wildcards, escapes,
    quotes, colons and characters whose casefold is not their ASCII lower case: a row the
    function counts a term of is never dropped by the prefilter."""
    focus = Focus(people=tuple(people), places=tuple(places), topics=tuple(topics),
                  roots=tuple(roots))  # fmt: skip
    stored = _stored(fields)
    if row_matches(focus, REGISTRY)(*stored):
        assert _kept(focus, stored), (focus, stored)


def test_the_matching_rules_hold_under_case_folding() -> None:
    """A registered name or a place occurs in a subject whatever its case (Unicode case
    folding: the Kelvin sign, ß); a one-letter name never does; an empty place or topic
    matches only a root with an empty segment."""
    terms = Terms.of(Focus(people=("kelvin", "strasse", "x"), places=("",)), REGISTRY)
    assert terms.matched("fact:5", "\u212aelvin was here", (), (), ()) == ["person:kelvin"]
    assert terms.matched("fact:4", "the strasse", (), (), ()) == ["person:strasse"]
    assert terms.matched("fact:6", "x marks it", (), (), ()) == []
    assert terms.matched("fact::8", "", (), (), ()) == ["place:"]


def test_ranking_with_a_prepared_focus_is_ranking_with_the_focus() -> None:
    """:func:`rank` prepares the focus once; each item's ``why`` lists what it matched, in
    focus order, and a matching item ranks in the tier above its section's."""
    items = [classify_belief(_belief(*fields)) for fields in BELIEFS]
    focus = FOCUSES[-1]
    ranked = rank(items, focus, 2.0, REGISTRY)
    for item, was in itertools.zip_longest(ranked, items):
        assert item.why is not None and item.why["matched"] == matches(was, focus, REGISTRY)
        assert item.tier == (2 if item.why["matched"] else 4)
