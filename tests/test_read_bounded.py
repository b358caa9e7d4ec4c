"""The bounded read of a big resident's narrative (issue 17) gives exactly the full read's.

When even the compact lines of a resident's contested, corrected and tampered-with
memories overflow the budget, :func:`sidecar.read.project` reads only the best of those per
section (for a focus too: ranked for it in SQL) and counts the rest
(``sidecar/read/recall.py``, ``recall_bounded``). These seeded towns — hundreds of doubts,
corrections, implants, rumours, facts of every importance, acts and people, many of them on
the same day so that ranks tie — are projected both ways at several budgets in both
languages, with and without a focus: the text, every section and the counts must be the
same, and the bounded read must have answered in most of them.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from read_world import WORLD, build

from sidecar.read import Focus, project
from sidecar.read.narrative import _project_bounded, bounded_limits
from sidecar.store import Reader

TOWNSFOLK = ("bo", "tom", "lena", "kai", "ana")
BUDGETS = (200, 450, 1000, 2000, 4000, 8000, 20000, 50000)
LANGS = ("en", "zh-Hant")


def town(seed: int, steps: int) -> list[dict[str, Any]]:
    """Mira's seeded year: every kind of memory, days drawn from a few values (ties)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"event_id": "r", "day": 0, "kind": "register",
         "residents": [{"resident": r, "names": {"en": r.title(), "zh-Hant": r}}
                       for r in ("mira", *TOWNSFOLK)]}
    ]  # fmt: skip
    n = 0
    facts: list[str] = []

    def add(day: float, kind: str, **fields: Any) -> None:
        nonlocal n
        n += 1
        out.append({"event_id": f"e{n}", "day": day, "kind": kind, **fields})

    day = 1.0
    for i in range(steps):
        day += rng.choice((0, 0, 0, 1))  # runs of equal days: scores tie
        roll = rng.random()
        words = " ".join(
            rng.choice(("old", "red", "big", "the", "far")) for _ in range(rng.randint(1, 9))
        )
        importance = rng.choice((0.0, 0.0, 0.3, 0.5, 0.9))
        if roll < 0.3:
            facts.append(f"fact:{i % 7}:{i}")
            add(day, "observe", witnesses=["mira"], importance=importance,
                claim={"root": f"fact:{i % 7}:{i}", "value": rng.randint(0, 3)},
                subject=f"fact {i} is {words}")  # fmt: skip
        elif roll < 0.5:
            add(day, "say", speaker=rng.choice(TOWNSFOLK), listeners=["mira"],
                claim={"root": f"rumour:{i}", "value": True}, subject=f"rumour {i}: {words}")  # fmt: skip
        elif roll < 0.7:
            a, b = rng.sample(TOWNSFOLK, 2)
            for speaker, value in ((a, "broken"), (b, "fixed")):
                add(day, "say", speaker=speaker, listeners=["mira"], importance=importance,
                    claim={"root": f"doubt:{i}", "value": value},
                    subject={"en": f"cart {i} is {value} {words}", "zh-Hant": f"車{i}{value}"})  # fmt: skip
        elif roll < 0.82:
            add(day, "say", speaker=rng.choice(TOWNSFOLK), listeners=["mira"],
                claim={"root": f"fix:{i}", "value": "bad"}, subject=f"well {i} is bad")  # fmt: skip
            for _ in range(2):
                add(day + 0.25, "observe", witnesses=["mira"], claim={"root": f"fix:{i}", "value": "ok"},
                    subject=f"well {i} is fine {words}")  # fmt: skip
        elif roll < 0.9:
            if facts and rng.random() < 0.3:  # the player twists something she saw
                add(day, "intervene", resident="mira", op="distort",
                    claim={"root": facts.pop(), "value": 9}, subject=f"it was odd {words}")  # fmt: skip
                continue
            add(day, "intervene", resident="mira", op="implant",
                claim={"root": f"odd:{i}", "value": "gold"}, subject=f"gold under stone {i}")  # fmt: skip
            if rng.random() < 0.4:  # her own eyes disagree: an anomaly
                add(day + 0.5, "observe", witnesses=["mira"],
                    claim={"root": f"odd:{i}", "value": "mud"}, subject=f"mud under stone {i}")  # fmt: skip
        elif roll < 0.95:
            other = rng.choice(TOWNSFOLK)
            add(day, "observe", witnesses=["mira"], people=[other],
                claim={"root": f"relation:{other}:{i}", "value": "kind"},
                subject=f"{other} was kind to me")  # fmt: skip
        else:
            add(day, "act", actor=rng.choice(("mira", *TOWNSFOLK)), action=f"chore_{i % 4}",
                status=rng.choice(("completed", "rejected")), witnesses=["mira"])  # fmt: skip
    add(day + 2, "tick")
    return out


@pytest.fixture(scope="module", params=[(3, 500), (11, 900), (29, 1500)], ids=str)
def reader(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Reader:
    seed, steps = request.param
    path = build(tmp_path_factory.mktemp("bounded") / "b.db", town(seed, steps))
    return Reader(path)


def same_both_ways(reader: Reader, budget: int, lang: str, focus: Focus | None = None) -> None:
    """The narrative of mira is the same, text, sections, counts and flags, whether the
    projection may take a fast read or must take the full one."""
    fast = project(reader, WORLD, "mira", budget=budget, lang=lang, focus=focus)
    full = project(reader, WORLD, "mira", budget=budget, lang=lang, focus=focus, bounded=False)
    assert fast.to_dict() == full.to_dict(), (focus, lang, budget)


def test_the_bounded_read_gives_the_full_reads_narrative(reader: Reader) -> None:
    """At every budget and in both languages: the same text, sections, counts and flags;
    and the bounded read answers most of these (else the test would compare nothing)."""
    answered = 0
    for lang in LANGS:
        for budget in BUDGETS:
            fast = project(reader, WORLD, "mira", budget=budget, lang=lang)
            full = project(reader, WORLD, "mira", budget=budget, lang=lang, bounded=False)
            assert fast.to_dict() == full.to_dict(), (lang, budget)
            answered += any(
                _project_bounded(reader, WORLD, "mira", budget, lang, limit) is not None
                for limit in bounded_limits(budget)
            )
    assert answered >= len(LANGS) * len(BUDGETS) // 2, answered


#: Focuses a game sends: who she talks to (a teller of her doubts, by id; one known only by
#: a registered name in her subjects), where (a word of her subjects), what about (topics,
#: root prefixes), and all of it at once.
FOCUSES = (
    Focus(people=("bo",)),
    Focus(people=("lena", "kai"), places=("well",)),
    Focus(topics=("cart", "RED")),
    Focus(roots=("doubt:1", "odd:")),
    Focus(people=("ana",), places=("stone",), roots=("fix:",), topics=("big", "old")),
)
FOCUS_BUDGETS = (200, 450, 1000, 2000, 4000, 8000)


def test_a_focused_bounded_read_gives_the_full_reads_narrative(reader: Reader) -> None:
    """With a focus the bounded read ranks the protected memories for it in SQL and reads
    only the best of each section: at every budget, in both languages and for persons,
    places, topics and root prefixes, the same text, sections, counts and flags as the full
    read; and the bounded read answers many of them (else the test would compare nothing)."""
    answered = 0
    for focus in FOCUSES:
        for lang in LANGS:
            for budget in FOCUS_BUDGETS:
                same_both_ways(reader, budget, lang, focus)
                answered += any(
                    _project_bounded(reader, WORLD, "mira", budget, lang, limit, focus=focus)
                    is not None
                    for limit in bounded_limits(budget)
                )
    assert answered >= len(FOCUSES) * len(LANGS) * 2, answered


def test_a_focused_bounded_read_reads_a_bounded_few(reader: Reader) -> None:
    """A focused narrative at the default budget answers from the first bounded read: at most
    its limit of each section's protected memories (one more is looked at in SQL to bound
    the rest), not every one of them."""
    from sidecar.read.items import classify_belief
    from sidecar.read.recall import recall_bounded, section_sizes

    focus = Focus(people=("bo", "lena"), places=("well",), topics=("cart",))
    limit = bounded_limits(2000)[0]
    assert _project_bounded(reader, WORLD, "mira", 2000, "en", limit, focus=focus) is not None
    sizes, intervened = section_sizes(reader, WORLD, "mira")
    found = recall_bounded(reader, WORLD, "mira", "en", limit, sizes, focus)
    assert found is not None
    recalled, bounded = found
    per_section: dict[str, int] = {}
    for b in recalled.beliefs:
        section = classify_belief(b).section
        per_section[section] = per_section.get(section, 0) + 1
    assert max(per_section.values()) <= limit, per_section
    held = intervened + sum(sizes.get(s, 0) for s in ("doubts", "anomalies", "corrections"))
    assert bounded.cuts and sum(per_section.values()) < held, (per_section, sizes)


def test_every_protected_memory_read_with_a_focus_gives_the_full_reads_narrative(
    reader: Reader,
) -> None:
    """A limit past every protected memory leaves nothing unread: still the same narrative."""
    focus = Focus(people=("bo", "lena"), places=("well",), topics=("cart",))
    for lang in LANGS:
        for budget in (200, 1000, 3000):
            found = _project_bounded(reader, WORLD, "mira", budget, lang, 10_000, focus=focus)
            full = project(
                reader, WORLD, "mira", budget=budget, lang=lang, focus=focus, bounded=False
            )
            assert found is None or found.to_dict() == full.to_dict(), (lang, budget)
    assert _project_bounded(reader, WORLD, "mira", 200, "en", 10_000, focus=focus) is not None


def test_a_bounded_read_of_any_size_answers_only_with_the_full_reads_narrative(
    reader: Reader,
) -> None:
    """However few protected memories per section are read, a bounded read either says it
    cannot tell (None) or gives the full read's narrative, byte for byte; and small reads
    answer too (once some compact lines overflow the budget, all of them do, whatever the
    unread ones hold, so only the round robin must stay within what was read)."""
    answered: set[int] = set()
    for lang in LANGS:
        for budget in BUDGETS:
            full = project(reader, WORLD, "mira", budget=budget, lang=lang, bounded=False)
            for limit in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377):
                found = _project_bounded(reader, WORLD, "mira", budget, lang, limit)
                if found is not None:
                    assert found.to_dict() == full.to_dict(), (lang, budget, limit)
                    answered.add(limit)
    assert len(answered) >= 5, answered


def _full_reads(reader: Reader, budget: int, lang: str) -> int:
    """How many times :func:`project` reads every belief of Mira (the full read's query)."""
    seen: list[str] = []
    reader.conn.set_trace_callback(seen.append)
    try:
        project(reader, WORLD, "mira", budget=budget, lang=lang)
    finally:
        reader.conn.set_trace_callback(None)
    return sum(1 for sql in seen if "ORDER BY root" in sql and "FROM beliefs WHERE" in sql
               and "json_each" not in sql and "LIMIT" not in sql)  # fmt: skip


@pytest.fixture(scope="module")
def doubtful(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    """The town of 1,500 steps: 632 protected memories, whose compact lines fill 20,000
    characters though at 16 characters a line they would not."""
    return Reader(build(tmp_path_factory.mktemp("doubtful") / "d.db", town(29, 1500)))


def test_a_big_budget_whose_protected_lines_may_overflow_is_read_bounded(doubtful: Reader) -> None:
    """Budget 20,000: the protected memories are too few to surely overflow it
    (``BOUNDED_LINE``) but may (``BOUNDED_LONG``); the bounded read is tried and answers,
    never reading all her beliefs, with the full read's narrative."""
    from sidecar.read.narrative import BOUNDED_LINE, BOUNDED_LONG
    from sidecar.read.recall import section_sizes

    sizes, intervened = section_sizes(doubtful, WORLD, "mira")
    protected = intervened + sizes["doubts"] + sizes["anomalies"] + sizes["corrections"]
    assert protected * BOUNDED_LINE <= 20_000 < protected * BOUNDED_LONG
    for lang in LANGS:
        assert _full_reads(doubtful, 20_000, lang) == 0, lang
        fast = project(doubtful, WORLD, "mira", budget=20_000, lang=lang)
        full = project(doubtful, WORLD, "mira", budget=20_000, lang=lang, bounded=False)
        assert fast.to_dict() == full.to_dict() and fast.compressed, lang
    assert _full_reads(doubtful, 50_000, "en") == 1  # all fit: the full read answers


def test_the_first_read_takes_each_sections_share_of_the_lines() -> None:
    """The layout deals lines to the protected sections in turn: with several big groups
    each reads its share, a small group leaves its unused share to the others, and no
    section ever reads more than a lone one (the read before groups were known); the
    fallback is four times the first."""
    for budget in (200, 2000, 20_000, 50_000):
        lone = bounded_limits(budget)
        assert bounded_limits(budget, (10**6,)) == lone == bounded_limits(budget, (0, 10**6))
        three = bounded_limits(budget, (10**6,) * 3)[0]
        assert three - 16 <= (lone[0] - 16) // 2 + 1, (budget, three, lone)
        # a group of 5, below its share, takes 5 lines: the two big ones share the rest
        small = bounded_limits(budget, (5, 10**6, 10**6))[0]
        assert three <= small, (budget, small)
        if budget // 24 > 3 * 5:
            assert small == 16 + (budget // 24 - 5) // 2, (budget, small)
        for groups in ((), (5,), (10**6,) * 3, (5, 700, 10**6)):
            first, fallback = bounded_limits(budget, groups)
            assert fallback == 4 * first and first > 16
    # a bigger budget never reads fewer
    sizes = (273, 713, 1135)
    firsts = [bounded_limits(b, sizes)[0] for b in range(200, 50_001, 100)]
    assert firsts == sorted(firsts)


def test_a_small_first_read_that_falls_short_is_not_used(reader: Reader) -> None:
    """Reading only two protected memories per section cannot cover a layout of many lines:
    the bounded read says so (None) rather than answering from too little."""
    assert _project_bounded(reader, WORLD, "mira", 4000, "en", 2) is None
    n = project(reader, WORLD, "mira", budget=4000, bounded=False)
    assert n.compressed and len(n.text) <= 4000


def test_the_query_benchmarks_resident_reads_the_same_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The resident ``python -m tools.querybench`` times (facts in families, hearsay, doubts,
    corrections, implants, people, acts), at 1,500 beliefs: the same narrative both ways,
    unfocused and with the benchmark's focus, and the bounded read answers the default
    budget either way."""
    from tools.querybench import FOCUS, story

    path = build(tmp_path_factory.mktemp("bench") / "q.db", list(story(1500, 200)))
    reader = Reader(path)
    focused = Focus(people=tuple(FOCUS["people"]), places=tuple(FOCUS["places"]))
    try:
        for focus in (Focus(), focused):
            for lang in LANGS:
                for budget in (300, 2000, 6000, 20000, 50000):
                    fast = project(reader, WORLD, "mira", budget=budget, lang=lang, focus=focus)
                    full = project(
                        reader, WORLD, "mira", budget=budget, lang=lang, focus=focus, bounded=False
                    )
                    assert fast.to_dict() == full.to_dict(), (focus, lang, budget)
            limit = bounded_limits(2000)[0]
            assert _project_bounded(reader, WORLD, "mira", 2000, "en", limit, focus=focus)
    finally:
        reader.close()


# -- the social read: many plain facts, few doubts (recall.recall_social) -------------------

SOCIAL_BUDGETS = (200, 450, 1000, 2000, 4000, 8000, 20000, 50000)


def calm_town(
    seed: int, steps: int, *, notable: bool = False, implant: bool = False
) -> list[dict[str, Any]]:
    """Mira's seeded year with few doubts: mostly plain facts, many in families of similar
    roots (bulk lines) and at the same places (merged lines), faded ones, rumours (some told
    by several) and people at those places, facts told by several and then seen, acts; a
    handful of doubts and corrections. ``notable``: some facts are
    marked important (they rank with the rumours); ``implant``: one implanted memory."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"event_id": "r", "day": 0, "kind": "register",
         "residents": [{"resident": r, "names": {"en": r.title(), "zh-Hant": r}}
                       for r in ("mira", *TOWNSFOLK)]}
    ]  # fmt: skip
    n = 0

    def add(day: float, kind: str, **fields: Any) -> None:
        nonlocal n
        n += 1
        out.append({"event_id": f"e{n}", "day": day, "kind": kind, **fields})

    day = 1.0
    for i in range(steps):
        day += rng.choice((0, 0, 0, 1))  # runs of equal days: scores tie
        roll = rng.random()
        words = " ".join(rng.choice(("old", "red", "big", "far")) for _ in range(rng.randint(0, 6)))
        place = rng.choice(("mill", "well", "inn", "gate"))
        importance = rng.choice((0.0, 0.0, 0.3, 0.9 if notable else 0.3))
        if roll < 0.55:
            root = f"fact:{i % 9}:{i}" if rng.random() < 0.7 else f"thing{i}"
            places = [place] if rng.random() < 0.5 else []
            add(day, "observe", witnesses=["mira"], importance=importance, places=places,
                claim={"root": root, "value": rng.randint(0, 3)},
                subject=f"{root} is {words}".strip())  # fmt: skip
        elif roll < 0.75:  # a rumour; some told by several (candidates for their sources)
            for speaker in rng.sample(TOWNSFOLK, rng.choice((1, 1, 2, 3))):
                add(day, "say", speaker=speaker, listeners=["mira"],
                    places=[place] if i % 2 else [],
                    claim={"root": f"rumour:{i}", "value": True}, subject=f"rumour {i}: {words}")  # fmt: skip
        elif roll < 0.8:  # told by several, then seen: a plain fact still sourced
            for speaker in rng.sample(TOWNSFOLK, 2):
                add(day, "say", speaker=speaker, listeners=["mira"],
                    claim={"root": f"seen:{i}", "value": 1}, subject=f"the cow {i} is out")  # fmt: skip
            add(day, "observe", witnesses=["mira"], claim={"root": f"seen:{i}", "value": 1},
                subject=f"the cow {i} is out")  # fmt: skip
        elif roll < 0.85:
            other = rng.choice(TOWNSFOLK)
            add(day, "observe", witnesses=["mira"], people=[other],
                claim={"root": f"relation:{other}:{i}", "value": "kind"},
                subject=f"{other} was kind to me")  # fmt: skip
        elif roll < 0.92:
            add(day, "act", actor=rng.choice(("mira", *TOWNSFOLK)), action=f"chore_{i % 4}",
                status=rng.choice(("completed", "rejected")), witnesses=["mira"])  # fmt: skip
        elif roll < 0.93:
            a, b = rng.sample(TOWNSFOLK, 2)
            for speaker, value in ((a, "broken"), (b, "fixed")):
                add(day, "say", speaker=speaker, listeners=["mira"],
                    claim={"root": f"doubt:{i}", "value": value},
                    subject={"en": f"cart {i} is {value}", "zh-Hant": f"車{i}{value}"})  # fmt: skip
        elif roll < 0.935:
            add(day, "say", speaker=rng.choice(TOWNSFOLK), listeners=["mira"],
                claim={"root": f"fix:{i}", "value": "bad"}, subject=f"well {i} is bad")  # fmt: skip
            for _ in range(2):
                add(day + 0.25, "observe", witnesses=["mira"],
                    claim={"root": f"fix:{i}", "value": "ok"}, subject=f"well {i} is fine")  # fmt: skip
        else:  # a fact seen long ago, to fade by the year's end
            add(day, "observe", witnesses=["mira"], claim={"root": f"old:{i % 5}:{i}", "value": 1},
                subject=f"old thing {i} {words}".strip())  # fmt: skip
    if implant:
        add(day, "intervene", resident="mira", op="implant",
            claim={"root": "odd:1", "value": "gold"}, subject="gold under the mill")  # fmt: skip
    add(day + 200, "tick")
    return out


def _social_answers(reader: Reader, budget: int, lang: str, *, told: bool = True) -> bool:
    from sidecar.read.narrative import _project_social
    from sidecar.read.recall import section_sizes

    sizes = section_sizes(reader, WORLD, "mira")[0]
    return _project_social(reader, WORLD, "mira", budget, lang, sizes, told=told) is not None


@pytest.mark.parametrize(
    ("seed", "steps", "implant"), [(5, 1200, False), (13, 2500, False), (21, 1500, True)], ids=str
)
def test_the_social_read_gives_the_full_reads_narrative(
    tmp_path_factory: pytest.TempPathFactory, seed: int, steps: int, implant: bool
) -> None:
    """A big resident with few doubts, at every budget and in both languages: the same
    text, sections, counts and flags both ways; and (without an implant opening a plain
    facts' section) the social read answers several of them, so the test compares it."""
    path = build(
        tmp_path_factory.mktemp("social") / "s.db", calm_town(seed, steps, implant=implant)
    )
    reader = Reader(path)
    try:
        answered = unread = 0
        for lang in LANGS:
            for budget in SOCIAL_BUDGETS:
                fast = project(reader, WORLD, "mira", budget=budget, lang=lang)
                full = project(reader, WORLD, "mira", budget=budget, lang=lang, bounded=False)
                assert fast.to_dict() == full.to_dict(), (lang, budget)
                answered += _social_answers(reader, budget, lang)
                unread += _social_answers(reader, budget, lang, told=False)
        if not implant:
            # and some of them with her rumours left unread too (recall_social told=False)
            assert answered >= 4 and unread >= 2, (answered, unread)
        # what it reads: a part of the full read's beliefs, leaving out only plain facts and
        # faded memories, with the very sources the full read finds (the same candidates)
        # for every belief it may word (a plain fact's, never worded, are not looked up)
        from sidecar.read.items import classify_belief
        from sidecar.read.recall import recall, recall_social

        whole, social = (
            recall(reader, WORLD, "mira", "en"),
            recall_social(reader, WORLD, "mira", "en"),
        )
        assert social is not None and set(social.beliefs) < set(whole.beliefs)
        assert len(whole.sources) == 100
        assert social.sources == {r: s for r, s in whole.sources.items() if r in social.sources}
        left = set(whole.beliefs) - set(social.beliefs)
        unsourced = set(whole.sources) - set(social.sources)
        assert unsourced and all(b.root not in unsourced for b in social.beliefs)
        assert {classify_belief(b).section for b in left if b.root in unsourced} <= {
            "sure",
            "believe",
            "faded",
        }
        assert {classify_belief(b).section for b in left if not b.root.startswith("action:")} <= {
            "sure",
            "believe",
            "faded",
        }
        # told=False holds her rumours back from the same read: together, the read above,
        # the held ones in root order, each a rumour the told section would word
        few = recall_social(reader, WORLD, "mira", "en", told=False)
        assert few is not None and few.held and not social.held
        held = [b.root for b in few.held]
        assert held == sorted(held) and not set(few.beliefs) & set(few.held)
        assert set(few.beliefs) | set(few.held) == set(social.beliefs)
        assert {classify_belief(b).section for b in few.held} == {"told"}
        # and what bounds their lines, read apart: the group each one's line merges under
        from sidecar.read.recall import told_groups

        assert sorted(told_groups(reader, WORLD, "mira"), key=str) == sorted(
            (classify_belief(b).group for b in few.held), key=str
        )
    finally:
        reader.close()


#: Focuses on a calm resident: a place many facts are at, a teller, a word of many subjects
#: (so facts at every place match, each sharing its merged line with unread ones), a root
#: prefix, and all of it at once.
SOCIAL_FOCUSES = (
    Focus(places=("mill",)),
    Focus(people=(TOWNSFOLK[0],)),
    Focus(topics=("red",)),
    Focus(roots=("fact:3",)),
    Focus(people=(TOWNSFOLK[1],), places=("inn",), topics=("cow", "old")),
)
FOCUSED_SOCIAL_BUDGETS = (200, 450, 2000, 4000, 20000)


@pytest.mark.parametrize(("seed", "steps"), [(5, 1200), (13, 2500)], ids=str)
def test_a_focused_social_read_gives_the_full_reads_narrative(
    tmp_path_factory: pytest.TempPathFactory, seed: int, steps: int
) -> None:
    """A big resident with few doubts and a focus: the social read also reads the plain
    facts and faded memories that match it (a SQL prefilter, then the focus function), and
    answers only when no line could list an unread one. At every budget, in both languages
    and for each focus, the same text, sections, counts and flags both ways; the social
    read answers many of them, and leaves out only plain facts and faded memories that do
    not match the focus."""
    from sidecar.read.items import classify_belief
    from sidecar.read.narrative import _project_social
    from sidecar.read.ranking import rank
    from sidecar.read.recall import (
        recall,
        recall_social,
        section_sizes,
        unworded_beliefs,
        unworded_subjects,
    )

    path = build(tmp_path_factory.mktemp("focused") / "f.db", calm_town(seed, steps))
    reader = Reader(path)
    try:
        sizes = section_sizes(reader, WORLD, "mira")[0]
        answered = 0
        unbuilt: dict[bool, int] = {True: 0, False: 0}  # answered with them unbuilt, or not
        for focus in SOCIAL_FOCUSES:
            for lang in LANGS:
                for budget in FOCUSED_SOCIAL_BUDGETS:
                    same_both_ways(reader, budget, lang, focus)
                    answered += (
                        _project_social(reader, WORLD, "mira", budget, lang, sizes, focus=focus)
                        is not None
                    )
                    first = _unworded_answers(reader, budget, lang, sizes, focus)
                    if first is not None:
                        unbuilt[first] += 1
            # what it leaves out: plain facts and faded memories, none of which the focus matches
            read = recall_social(reader, WORLD, "mira", "en", focus=focus)
            whole = recall(reader, WORLD, "mira", "en")
            assert read is not None and set(read.beliefs) < set(whole.beliefs)
            left = [classify_belief(b) for b in set(whole.beliefs) - set(read.beliefs)]
            assert {i.section for i in left if not i.belief.root.startswith("action:")} <= {
                "sure", "believe", "faded",
            }  # fmt: skip
            assert not any(i.relevant for i in rank(left, focus, whole.day, whole.registry))
            # unworded=False: those that match it are read as rows, not built, and are
            # exactly the plain facts and faded memories a worded read adds for it
            bare = recall_social(reader, WORLD, "mira", "en", focus=focus, worded=False)
            assert bare is not None and bare.unworded
            assert set(bare.beliefs) | set(unworded_beliefs(bare)) == set(read.beliefs)
            assert not set(bare.beliefs) & set(unworded_beliefs(bare))
            few = recall_social(reader, WORLD, "mira", "en", focus=focus, worded=False, told=False)
            assert few is not None
            assert [r[1] for r in few.unworded] == [r[1] for r in bare.unworded]
            assert set(few.beliefs) | set(few.held) == set(bare.beliefs)
            # each with the section and tier the pipe gives its belief, and its subject
            ranked = {
                i.belief.root: i
                for i in rank([classify_belief(b) for b in read.beliefs], focus, whole.day,
                              whole.registry)
            }  # fmt: skip
            assert {
                (section, tier, subject, root, value, group)
                for section, tier, subject, root, value, group in unworded_subjects(bare)
            } == {
                (ranked[r].section, ranked[r].tier, ranked[r].belief.subject, r,
                 ranked[r].belief.value, ranked[r].group)
                for r in (b.root for b in unworded_beliefs(bare))
            }  # fmt: skip
        assert answered >= len(SOCIAL_FOCUSES) * len(LANGS) * 2, answered
        # both ways are compared above: with the matching plain memories unbuilt (counted
        # from their shortest subject) and, where one might have had a line, built
        assert unbuilt[True] >= 10 and unbuilt[False] >= 10, unbuilt
    finally:
        reader.close()


def crowded_rumours(seed: int) -> list[dict[str, Any]]:
    """Mira hears many rumours at three places from the townsfolk, amid many plain facts
    and a few people lines, within a few days (none fades): every place's merged group holds
    far more than a merged line lists, so a focus on one teller leads each group's line
    with that teller's rumours and the line counts the others."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    day = 1.0
    for i in range(900):
        day += rng.choice((0, 0, 0.02))  # runs of equal days: scores tie
        if i % 3 == 0:
            place = ("mill", "well", "inn")[i % 9 // 3]
            out.append({"event_id": f"e{i}", "day": day, "kind": "say",
                        "speaker": rng.choice(TOWNSFOLK), "listeners": ["mira"],
                        "places": [place], "importance": rng.choice((0.0, 0.3)),
                        "claim": {"root": f"rumour:{i}", "value": True},
                        "subject": f"rumour {i} at the {place}"})  # fmt: skip
        elif i % 29 == 1:
            other = rng.choice(TOWNSFOLK)
            out.append({"event_id": f"e{i}", "day": day, "kind": "observe",
                        "witnesses": ["mira"], "people": [other],
                        "claim": {"root": f"relation:{other}:{i}", "value": "kind"},
                        "subject": f"{other} was kind to me"})  # fmt: skip
        else:
            out.append({"event_id": f"e{i}", "day": day, "kind": "observe",
                        "witnesses": ["mira"], "claim": {"root": f"fact:{i}", "value": i % 4},
                        "subject": f"fact {i} holds"})  # fmt: skip
    return out


def test_a_focused_social_read_of_crowded_merged_groups_gives_the_full_reads_narrative(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Merged groups far larger than a line lists, led by the rumours of the teller in
    focus: at every budget, in both languages, the same narrative as the full read, and the
    social read answers many of them with a merged line that counts more members than it
    shows."""
    from sidecar.read.narrative import _project_social
    from sidecar.read.recall import section_sizes

    reader = Reader(build(tmp_path_factory.mktemp("crowded") / "c.db", crowded_rumours(3)))
    try:
        sizes = section_sizes(reader, WORLD, "mira")[0]
        answered = 0
        for teller in TOWNSFOLK[:3]:
            focus = Focus(people=(teller,))
            for lang in LANGS:
                for budget in SOCIAL_BUDGETS:
                    same_both_ways(reader, budget, lang, focus)
                    found = _project_social(reader, WORLD, "mira", budget, lang, sizes, focus=focus)
                    # answered by the social read with a merged line (at most six of a
                    # group of ~100: it counts the rest)
                    answered += found is not None and any(
                        e["merged"] is not None
                        for section in found.sections
                        for e in section["entries"]
                    )
        assert answered >= 5, answered
    finally:
        reader.close()


def _unworded_answers(
    reader: Reader, budget: int, lang: str, sizes: dict[str, int], focus: Focus
) -> bool | None:
    """Whether a focused social read answers with the plain memories that match the focus
    left unbuilt (None: none were)."""
    from sidecar.read.items import classify
    from sidecar.read.narrative import _Later, _social
    from sidecar.read.promises import own_items
    from sidecar.read.ranking import rank
    from sidecar.read.recall import recall_social

    recalled = recall_social(reader, WORLD, "mira", lang, focus=focus, worded=False)
    if recalled is None or not recalled.unworded:
        return None
    items = classify(recalled) + own_items("mira", recalled.own)
    items = rank(items, focus, recalled.day, recalled.registry)
    later = _Later.of(reader, WORLD, "mira")
    return _social("mira", budget, lang, sizes, recalled, items, later, focus=focus) is not None


def test_a_notable_plain_fact_sends_the_narrative_to_the_full_read(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A fact marked important ranks with the rumours, in a family or merged line with the
    unread ones: the social read declines and the full read answers, the same both ways."""
    path = build(tmp_path_factory.mktemp("notable") / "n.db", calm_town(7, 1200, notable=True))
    reader = Reader(path)
    try:
        assert not _social_answers(reader, 2000, "en")
        for lang in LANGS:
            fast = project(reader, WORLD, "mira", budget=2000, lang=lang)
            assert (
                fast.to_dict()
                == project(reader, WORLD, "mira", budget=2000, lang=lang, bounded=False).to_dict()
            )
    finally:
        reader.close()


def test_the_calm_benchmark_resident_reads_the_same_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The resident ``python -m tools.querybench --calm`` times, at 3,000 beliefs: the same
    narrative both ways at ordinary budgets in both languages, unfocused and focused."""
    from tools.querybench import FOCUS, story

    focus = Focus(people=tuple(FOCUS["people"]), places=tuple(FOCUS["places"]))
    path = build(tmp_path_factory.mktemp("calm") / "c.db", list(story(3000, 100, calm=True)))
    reader = Reader(path)
    try:
        answered = 0
        for lang in LANGS:
            for budget in SOCIAL_BUDGETS:
                fast = project(reader, WORLD, "mira", budget=budget, lang=lang)
                full = project(reader, WORLD, "mira", budget=budget, lang=lang, bounded=False)
                assert fast.to_dict() == full.to_dict(), (lang, budget)
                answered += _social_answers(reader, budget, lang)
                # and focused as the benchmark asks (a teller and one of her places)
                same_both_ways(reader, budget, lang, focus)
        assert answered >= 4, answered
    finally:
        reader.close()


#: Roots a drawn history is about: people, plain facts, rumours.
_DRAWN_ROOTS = (
    *("relation:bo", "relation:tom:x", "relation:lena"),
    *("fact:a", "fact:b", "fact:c"),
    *("rumour:c", "rumour:d", "rumour:e", "rumour:f"),
)
_DRAWN_KINDS = ("observe", "say", "implant", "distort", "suppress", "soften", "tick", "act")


def _drawn_history(data: st.DataObject, path: Any, min_size: int = 1, max_size: int = 40) -> Reader:
    """A database of a drawn history of mira's: sightings, rumours from any of the
    townsfolk (the same value from several: told by several), implants, distortions,
    suppressions, acts and ticks, on ``relation:`` roots and others, with confidences on
    both sides of "sure" (the events the engine refuses are left out)."""
    from read_world import LATE_EVENT_DAYS

    from sidecar.engine import parse_event
    from sidecar.engine.rules import Rules
    from sidecar.store import Writer

    steps = data.draw(st.lists(st.tuples(
        st.sampled_from(_DRAWN_KINDS), st.sampled_from(_DRAWN_ROOTS), st.integers(0, 2),
        st.sampled_from((0.0, 0.5, 1.0)), st.sampled_from(TOWNSFOLK[:3]),
    ), min_size=min_size, max_size=max_size))  # fmt: skip
    events: list[dict[str, Any]] = [
        {"event_id": "r", "day": 0, "kind": "register",
         "residents": [{"resident": r, "names": {"en": r.title()}} for r in ("mira", *TOWNSFOLK)]}
    ]  # fmt: skip
    day = 1.0
    for n, (op, root, value, dt, who) in enumerate(steps):
        day += dt
        e: dict[str, Any] = {"event_id": f"e{n}", "day": day}
        claim = {"root": root, "value": value}
        if op == "observe":  # (subjects long enough that a few lines fill a small budget)
            e |= {"kind": "observe", "witnesses": ["mira"], "claim": claim,
                  "subject": f"what I saw of {root} by the mill at dusk"}  # fmt: skip
        elif op == "say":
            e |= {"kind": "say", "speaker": who, "listeners": ["mira"], "claim": claim,
                  "subject": f"what {who} said of {root} at the inn"}  # fmt: skip
        elif op == "tick":
            e |= {"kind": "tick", "day": day + 30 * value}
            day += 30 * value
        elif op == "act":
            e |= {"kind": "act", "actor": who, "action": "mend", "status": "completed",
                  "witnesses": ["mira"]}  # fmt: skip
        else:
            e |= {"kind": "intervene", "resident": "mira", "op": op, "claim": claim,
                  "subject": "odd"}  # fmt: skip
            if op == "suppress":
                e.pop("subject")
                e["claim"] = {"root": root}
        events.append(e)
    writer = Writer(path, rules=Rules(late_event_days=LATE_EVENT_DAYS), synchronous="OFF")
    try:
        writer.apply([(WORLD, parse_event(e)) for e in events])  # refused ones are left out
    finally:
        writer.close()
    return Reader(path)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_section_sizes_count_what_classify_places(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """The section sizes a bounded or social read starts from (counted on indexes, no row
    read) are, section by section, what :func:`classify` makes of the full read, over any
    drawn history (:func:`_drawn_history`)."""
    from collections import Counter

    from sidecar.read.items import belief_items
    from sidecar.read.recall import recall, section_sizes

    reader = _drawn_history(data, tmp_path_factory.mktemp("sizes") / "s.db")
    try:
        whole = recall(reader, WORLD, "mira", "en")
        placed = Counter(i.section for i in belief_items(whole, whole.beliefs))
        assert section_sizes(reader, WORLD, "mira")[0] == dict(placed)
    finally:
        reader.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_social_read_answers_only_with_the_full_reads_narrative(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Whenever the social read answers (its rumours read or held back; each part of what
    it keeps found on an index, the suppressed and those told by several on
    ``beliefs_sourced``), it gives the full read's narrative, over any drawn history."""
    from sidecar.read.narrative import _project_social
    from sidecar.read.recall import section_sizes

    path = tmp_path_factory.mktemp("social") / "s.db"
    reader = _drawn_history(data, path, min_size=30, max_size=80)
    try:
        sizes = section_sizes(reader, WORLD, "mira")[0]
        for budget in (200, 450, 1200):
            full = project(reader, WORLD, "mira", budget=budget, bounded=False).to_dict()
            for told in (True, False):
                found = _project_social(reader, WORLD, "mira", budget, "en", sizes, told=told)
                event(f"told={told}: {'answered' if found else 'full read'}")
                assert found is None or found.to_dict() == full, (budget, told)
    finally:
        reader.close()


# -- plain memories laid out from their rows (narrative._pending) -------------------------


def _watch_builds(monkeypatch: pytest.MonkeyPatch, seen: Any, joins: Any = None) -> None:
    """Call ``seen(unread, keys)`` each time a social read builds unread plain memories
    (``narrative._pending``'s ``Unread.build``), and ``joins(unread, section, group,
    found)`` each time it reads those that join one read unit's merged line."""
    import sidecar.read.narrative as narrative

    original = narrative._pending

    def watched(*args: Any, **kwargs: Any) -> Any:
        unread = original(*args, **kwargs)
        build, apart = unread.build, unread._joins

        def building(keys: Any) -> Any:
            seen(unread, keys)
            return build(keys)

        def joining(section: str, group: str) -> Any:
            found = apart(section, group)
            if joins is not None:
                joins(unread, section, group, found)
            return found

        unread.build = building
        if apart is not None:
            unread._joins = joining
        return unread

    monkeypatch.setattr(narrative, "_pending", watched)


def test_the_social_read_lays_out_plain_memories_from_their_rows(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where room is left for plain facts and faded memories once everything else is laid
    out, the social read goes on with them keyed and grouped from their rows alone and
    builds only what each line it reaches lists: the full read's narrative, byte for byte,
    at every budget it does so, in both languages, with plain lines shown, building a small
    part of what it counts; also where what it read would fit in full, when the lines of the
    unread ones alone tell that not everything does (``packing._overflowing``)."""
    import sidecar.read.narrative as narrative
    import sidecar.read.packing as packing
    from sidecar.read.recall import PLAIN_SECTIONS, plain_rows, section_sizes

    built: list[int] = []
    _watch_builds(monkeypatch, lambda unread, keys: built.append(len(keys)))
    overflowing: list[bool] = []  # what _overflowing told, each time it was asked
    told = packing._overflowing
    monkeypatch.setattr(
        packing, "_overflowing", lambda *args: overflowing.append(told(*args)) or overflowing[-1]
    )
    reader = Reader(build(tmp_path_factory.mktemp("rows") / "r.db", calm_town(13, 2500)))
    try:
        plain = len(plain_rows(reader, WORLD, "mira", reader.world_day(WORLD)))
        sizes = section_sizes(reader, WORLD, "mira")[0]
        answered: dict[str, int] = {}
        shown = 0
        for lang in LANGS:
            # (up to where everything of hers fits in full: there it must decline)
            for budget in (*range(6000, 23000, 2000), 30000, 40000):
                full = project(reader, WORLD, "mira", budget=budget, lang=lang, bounded=False)
                fast = project(reader, WORLD, "mira", budget=budget, lang=lang)
                assert fast.to_dict() == full.to_dict(), (lang, budget)
                built.clear()
                found = narrative._project_social(reader, WORLD, "mira", budget, lang, sizes)
                if found is not None and built:
                    answered[lang] = answered.get(lang, 0) + 1
                    assert found.to_dict() == full.to_dict(), (lang, budget)
                    assert sum(built) < plain / 3, (sum(built), plain)
                    shown += sum(
                        len(s["entries"]) for s in found.sections if s["name"] in PLAIN_SECTIONS
                    )
        assert min(answered.get(lang, 0) for lang in LANGS) >= 2 and shown >= 20, (answered, shown)
        assert True in overflowing and False in overflowing, overflowing
    finally:
        reader.close()


def test_a_focused_social_read_completes_merged_lines_from_unread_rows(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a focus, a plain fact that bears on it is read and may share its merged line
    (its place) with facts that do not, unread: the social read builds the first few of
    those from their rows (``Unread.joining``) and lays out the line the full read would,
    counting the rest; at every budget, in both languages, the full read's narrative, and
    so answered in several (focused on a few roots: a place's line lists some of each)."""
    import sidecar.read.narrative as narrative
    from sidecar.read.packing import APART_GROUPS
    from sidecar.read.recall import section_sizes

    joined: list[int] = []
    asked: list[int] = []
    alive: list[Any] = []  # (each one kept: no later one is given the same id)
    wholes: dict[int, Any] = {}  # each read's whole grouping, worked out once per read

    def whole(unread: Any) -> Any:
        if id(unread) not in wholes:
            alive.append(unread)
            grouped = unread._whole()[1]
            wholes[id(unread)] = grouped, {k for listed in grouped.values() for k in listed}
        return wholes[id(unread)]

    def joining(unread: Any, keys: Any) -> None:
        sharing = whole(unread)[1]
        if all(k in sharing for k in keys):  # (the first few of those sharing a read line)
            joined.append(len(keys))

    apart: dict[int, set[str]] = {}

    def joins(unread: Any, section: str, group: str, found: Any) -> None:
        # what it read of that line alone: what all the unread units would have given it
        assert list(found) == list(whole(unread)[0].get((section, group), ()))
        asked.append(len(found))
        # (each group read apart is a pass over her rows: beyond a few, all are keyed once)
        apart.setdefault(id(unread), set()).add(group)
        assert len(apart[id(unread)]) <= APART_GROUPS

    _watch_builds(monkeypatch, joining, joins)
    reader = Reader(build(tmp_path_factory.mktemp("join") / "j.db", calm_town(13, 2500)))
    try:
        sizes = section_sizes(reader, WORLD, "mira")[0]
        answered = 0
        for focus in (Focus(roots=("thing77",)), Focus(roots=("thing7",))):
            for lang in LANGS:
                for budget in (600, 2000, 4000, 8000, 14000):
                    same_both_ways(reader, budget, lang, focus)
                    joined.clear()
                    found = narrative._project_social(
                        reader, WORLD, "mira", budget, lang, sizes, focus=focus
                    )
                    if found is not None and any(joined):
                        answered += 1
                        full = project(
                            reader, WORLD, "mira", budget=budget, lang=lang, focus=focus,
                            bounded=False,
                        )  # fmt: skip
                        assert found.to_dict() == full.to_dict(), (focus, lang, budget)
        assert answered >= 8, answered
        assert sum(1 for n in asked if n) >= 8, asked
    finally:
        reader.close()


@pytest.mark.parametrize("kind", ["town", "calm"])
def test_plain_rows_are_keyed_and_grouped_as_the_pipe_ranks_and_groups_their_items(
    tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    """Every plain memory a social read leaves unread (``recall.plain_rows``: sure, believed
    and faded ones no player is still tampering with) gets from its row alone the section,
    rank key and merge group its item gets from the full pipe (``classify``, ``rank``), so
    the packer can order and group them without building one."""
    from sidecar.read.items import classify, group_of
    from sidecar.read.ranking import plain_keys, rank
    from sidecar.read.recall import PLAIN_SECTIONS, plain_rows, recall, stored_ids

    events = town(17, 900) if kind == "town" else calm_town(9, 1500)
    reader = Reader(build(tmp_path_factory.mktemp("keys") / "k.db", events))
    try:
        whole = recall(reader, WORLD, "mira", "en")
        items = rank(classify(whole), Focus(), whole.day, whole.registry)
        expected = {
            i.belief.root: (i.key, i.section, i.group)
            for i in items
            if i.from_belief and i.section in PLAIN_SECTIONS and not i.intervened
        }
        rows = plain_rows(reader, WORLD, "mira", whole.day)
        got = {
            key[3]: (
                key,
                section,
                group_of(section, row[0], "mira", stored_ids(row[5]), stored_ids(row[6])),
            )
            for key, section, row in plain_keys(rows)
        }
        assert got == expected
        assert len(got) > 200 and len({s for _, s, _ in got.values()}) >= 2
    finally:
        reader.close()


# -- what bounds a plain memory's line (recall.plain_subjects) -----------------------------

#: Subjects that a line words as stored and subjects it does not: runs and ends of spaces,
#: full stops, tabs and newlines, characters beyond ASCII (an ideographic space among
#: them), her own names in any case, a language map, and lengths about the merged line's
#: cut (60).
_SUBJECT_PARTS = st.sampled_from((
    "the mill", "a", "  ", " ", ".", "。", "\t", "\n", "é", "波", "\u3000", "\xa0", "Mira",
    "MIRA's", "mira", "x" * 25, "old red cart", "{", "Bo",
))  # fmt: skip
_PLAIN_ROOTS = st.sampled_from(("fact:a", "fact:b:day", "fair:date", "thing", "x:when", "y:days"))
#: A subject a line words as stored (lower-case words, one space apart), or one made of the
#: parts above: most examples hold both, so the SQL minimum and the worded rows compete.
_SUBJECTS = st.one_of(
    st.from_regex(r"[a-z]{1,9}( [a-z]{1,9}){0,5}", fullmatch=True),
    st.lists(_SUBJECT_PARTS, max_size=5).map("".join),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_plain_subjects_bound_is_the_shortest_line_subject_exactly(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Per plain section, the fewest characters a merged line gives any plain memory's
    subject, found as :func:`recall.plain_subjects` finds them (SQL for the subjects worded
    as stored, the rest worded) is exactly the least over every such memory the full read
    holds, in both languages, whatever the subjects (and some are worded as stored, some
    not, so both halves are compared); asked of some sections only, on her primary-key
    range or on each section's range of ``beliefs_shown``, it finds the same for those."""
    from sidecar.read.items import belief_items
    from sidecar.read.narrative import _fewest
    from sidecar.read.packing import MERGE_ITEM_SUBJECT
    from sidecar.read.phrasing import narrative_words, subject_text
    from sidecar.read.recall import PLAIN_SECTIONS, plain_subjects, recall

    drawn = data.draw(st.lists(st.tuples(
        _SUBJECTS, _PLAIN_ROOTS, st.integers(0, 30),
        st.booleans(), st.booleans(), st.sampled_from((60, 90)), st.booleans(),
    ), min_size=1, max_size=25))  # fmt: skip
    events: list[dict[str, Any]] = [
        {"event_id": "r", "day": 0, "kind": "register",
         "residents": [{"resident": "mira", "names": {"en": "Mira", "zh-Hant": "米拉"}}]}
    ]  # fmt: skip
    for n, (subject, root, value, mapped, old, confidence, again) in enumerate(drawn):
        subject = subject or "."  # (required: cleaned of its full stop, the root is named)
        text: Any = {"en": subject, "zh-Hant": subject[:3] or "."} if mapped else subject
        events.append({"event_id": f"e{n}", "day": 1 + n % 3, "kind": "observe",
                       "witnesses": ["mira"], "claim": {"root": f"{root}{n}", "value": value},
                       "subject": text, "confidence": confidence})  # fmt: skip
        if old:  # a rumour Bo told her, never heard again: it fades by the last day
            events[-1].update(kind="say", speaker="bo", listeners=["mira"])
            del events[-1]["witnesses"]
        elif again:  # seen twice: she is sure of it
            events.append({**events[-1], "event_id": f"again{n}", "day": 30})
    events.append({"event_id": "t", "day": 40, "kind": "tick"})
    reader = Reader(build(tmp_path_factory.mktemp("plain") / "p.db", events))
    try:
        whole = recall(reader, WORLD, "mira", "en")
        plain = [i for i in belief_items(whole, whole.beliefs) if i.section in PLAIN_SECTIONS]
        found = plain_subjects(reader, WORLD, "mira", MERGE_ITEM_SUBJECT, ("Mira", "米拉"))
        event(f"as stored: {bool(found[0])}, worded: {bool(found[1])}")
        event(f"sections: {sorted({i.section for i in plain})}")
        for lang in LANGS:
            words = narrative_words(lang, whole)
            expected: dict[str, int] = {}
            for item in plain:
                b = item.belief
                n = len(
                    subject_text(b.subject, b.root, b.value, words, MERGE_ITEM_SUBJECT, whole.day)
                )
                expected[item.section] = min(expected.get(item.section, n), n)
            assert _fewest(found, words, whole.day) == expected, lang
            for n in range(len(PLAIN_SECTIONS)):
                for some in itertools.combinations(PLAIN_SECTIONS, n):
                    for few in (False, True):
                        names = ("Mira", "米拉")
                        part = plain_subjects(
                            reader, WORLD, "mira", MERGE_ITEM_SUBJECT, names, some, few=few
                        )
                        wanted = {s: expected[s] for s in some if s in expected}
                        assert _fewest(part, words, whole.day) == wanted, (lang, some, few)
    finally:
        reader.close()


def test_the_plain_subjects_bound_lets_the_social_read_answer_where_a_line_only_might_fit(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where room is left at the end for the emptiest line of a plain memory but not for
    one with the shortest subject she has, the social read now answers (the full read
    gives the same narrative: ``test_the_social_read_gives_the_full_reads_narrative``):
    more budgets answered than with no subject counted, and each the full read's text
    (without the plain memories laid out from their rows, which would answer the rest)."""
    import sidecar.read.narrative as narrative

    monkeypatch.setattr(narrative, "_pending", lambda *args, **kwargs: None)
    reader = Reader(build(tmp_path_factory.mktemp("bound") / "b.db", calm_town(5, 1200)))
    try:
        cases = [(budget, lang) for budget in range(300, 8000, 250) for lang in LANGS]
        bounded = [c for c in cases if _social_answers(reader, *c)]
        for budget, lang in bounded:
            fast = project(reader, WORLD, "mira", budget=budget, lang=lang)
            full = project(reader, WORLD, "mira", budget=budget, lang=lang, bounded=False)
            assert fast.to_dict() == full.to_dict(), (budget, lang)
        monkeypatch.setattr(narrative, "plain_subjects", lambda *args, **kwargs: ({}, []))
        unbounded = [c for c in cases if _social_answers(reader, *c)]
    finally:
        reader.close()
    assert set(unbounded) < set(bounded), (len(unbounded), len(bounded))


#: Subjects a line words shorter (or longer) than stored, each beside a plain one of about
#: its stored length: it must be worded, not counted as stored.
_UNSTORED = (
    "ab  cd efgh",  # a run of spaces
    " abcdefghij",  # a space first
    "abcdefghij ",  # a space last
    "abcdefghij.",  # a full stop
    "ab\n\ncdefgh",  # whitespace JSON escapes
    "ab\t cdefghi",
    "Mira hid it",  # her own name, first person
    "I saw MIRA x",
    '{"en": "ab", "zh-Hant": "c"}',  # a language map
    "x" * 59 + " yz",  # past the merged line's cut
    "the fair is on day 2",  # an event's day, put in the past (longer)
)


@pytest.mark.parametrize("odd", _UNSTORED)
def test_the_plain_subjects_bound_words_every_subject_not_worded_as_stored(
    tmp_path_factory: pytest.TempPathFactory, odd: str
) -> None:
    """A resident with two plain facts, one worded as stored and one that is not (a run of
    spaces, a space or full stop at an end, escaped whitespace, her own name, a language
    map, a subject past the cut, an event's day): the bound is the least a line words
    either, in both languages."""
    from sidecar.read.narrative import _fewest
    from sidecar.read.packing import MERGE_ITEM_SUBJECT
    from sidecar.read.phrasing import narrative_words, subject_text
    from sidecar.read.recall import plain_subjects, recall

    texts = orjson.loads(odd) if odd.startswith("{") else odd
    root = "fair:day" if "day" in odd else "fact:odd"
    plain = "z" * min(len(odd), 60)
    events = [
        {"event_id": "r", "day": 0, "kind": "register",
         "residents": [{"resident": "mira", "names": {"en": "Mira"}}]},
        {"event_id": "e1", "day": 5, "kind": "observe", "witnesses": ["mira"],
         "claim": {"root": root, "value": 2}, "subject": texts},
        {"event_id": "e2", "day": 5, "kind": "observe", "witnesses": ["mira"],
         "claim": {"root": "fact:plain", "value": 1}, "subject": plain},
    ]  # fmt: skip
    reader = Reader(build(tmp_path_factory.mktemp("odd") / "o.db", events))
    try:
        whole = recall(reader, WORLD, "mira", "en")
        found = plain_subjects(reader, WORLD, "mira", MERGE_ITEM_SUBJECT, ("Mira",))
        assert [r[2] for r in found[1]] == [root]  # worded, not counted as stored
        for lang in LANGS:
            words = narrative_words(lang, whole)
            least = min(
                len(subject_text(b.subject, b.root, b.value, words, MERGE_ITEM_SUBJECT, whole.day))
                for b in whole.beliefs
            )
            assert _fewest(found, words, whole.day) == {"believe": least}, lang
    finally:
        reader.close()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(("a", "a:b", "b", "a::", ":")),
            st.integers(0, 7),
            st.sampled_from(("sure", "faded")),
        ),
        max_size=40,
    )
)
@example([("a", n, "sure") for n in range(1, 6)] + [("a:b", n, "faded") for n in range(1, 5)])
@example([("a:b", n, "sure") for n in range(7)])
def test_the_rows_that_merge_or_stand_alone_are_those_no_bulk_family_takes(
    found: list[tuple[str, int, str]],
) -> None:
    """``packing.loose`` (which completes a read unit's merged line without keying every
    unread memory) names exactly the memories ``pending_units`` leaves out of bulk families:
    families of every size around ``BULK_AT`` (four, five, six of one section), roots with
    empty segments and without a colon."""
    from sidecar.read.packing import BULK_AT, loose, pending_units

    sections = {f"{stem}:{n}" if n else stem: section for stem, n, section in found}
    keyed = [((5, 0.0, 0.0, root), section, root) for root, section in sections.items()]
    every = {(section, root) for root, section in sections.items()}  # all join a read line
    units, joining = pending_units(keyed, lambda root: root, every)
    alone = {k[3] for keys in joining.values() for k in keys}
    assert loose(sections.items()) == alone
    assert all(u.kind == "bulk" and u.total >= BULK_AT for u in units)
    assert sum(u.total for u in units) + len(alone) == len(sections)


@given(
    st.floats(0, 1e6),
    st.one_of(st.none(), st.floats(0, 10)),
    st.integers(0, 100),
    st.floats(0, 1e6),
)
@example(5.0, None, 78, 5.0)  # (no time passed: the recency is exactly one)
@example(2.0, 0.0, 0, 1.0)  # (a day after the asked one: the recency is still one)
def test_a_plain_rows_score_in_sql_is_the_rankings_double(
    updated_day: float, importance: float | None, confidence: int, today: float
) -> None:
    """``recall.plain_rows`` computes each plain memory's score in SQL (``_SCORE_SQL``) and
    ``ranking.plain_keys`` only rounds it: the same double as ``ranking._scored`` gives,
    bit for bit, for any day, importance and confidence, so the keys are the pipe's."""
    import sqlite3

    from sidecar.read.ranking import _scored
    from sidecar.read.recall import _SCORE_SQL

    conn = sqlite3.connect(":memory:")
    try:
        ((found,),) = conn.execute(
            "WITH t(updated_day, importance, confidence) AS (VALUES (:d, :i, :c)) "
            f"SELECT {_SCORE_SQL} FROM t",
            {"d": updated_day, "i": importance, "c": confidence, "today": today},
        ).fetchall()
    finally:
        conn.close()
    expected = _scored(updated_day, importance, confidence, 0, today)[0]
    assert found.hex() == expected.hex()
    assert round(found, 4) == round(expected, 4)
