"""The packer's lower bounds on lines it has not worded: sound for any subject.

A focused social read leaves a big resident's matching plain facts and faded memories
unbuilt and counts them when not even the shortest line their subjects could make fits
(``packing._passed``). That is only right if no line the packer can make of such a memory
is ever shorter than ``_least(words, section)`` plus its subject cut for a merged line, nor
a merged line it leads shorter than ``least_line`` for its group.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.engine import Belief, SourceKind, State
from sidecar.read.items import classify_belief
from sidecar.read.packing import MAX_SUBJECT, MERGE_ITEM_SUBJECT, _least
from sidecar.read.phrasing import Phrased, subject_text
from sidecar.read.wording import words_for

#: Pieces a subject is made of: the resident's own names (worded in the first person),
#: tense words an event now past changes, long words a cut cannot split, spaces and stops
#: the cleaning drops, and text without spaces.
PIECES = st.sampled_from(
    ["Mira", "Mira's", "mira", "米拉", "Bo", "is", "will be", "are", "the", "a", "I",
     "x" * 70, "longwordwithoutanyspaceatall" * 3, " ", "  ", ".", "。", "水井乾了",
     "on day 3", ",", ";", "well"]
)  # fmt: skip
SUBJECTS = st.one_of(
    st.lists(PIECES, max_size=30).map(" ".join),
    st.lists(PIECES, max_size=30).map("".join),
    st.text(max_size=200),
    st.just(""),
)


@settings(max_examples=400, deadline=None)
@given(
    subject=SUBJECTS,
    lang=st.sampled_from(["en", "zh-Hant"]),
    root=st.sampled_from(["fact:well", "festival:day", "fact:a:when", "tree:3"]),
    value=st.one_of(st.integers(-5, 40), st.booleans(), st.text(max_size=12)),
    kind=st.sampled_from(list(SourceKind)),
    state=st.sampled_from([State.INFLUENCING, State.PAST]),
    confidence=st.integers(0, 100),
    place=st.sampled_from([(), ("mill",)]),
    today=st.sampled_from([0.0, 10.0, 50.0]),
)
def test_no_line_of_a_plain_memory_is_shorter_than_its_bound(
    subject: str,
    lang: str,
    root: str,
    value: object,
    kind: SourceKind,
    state: State,
    confidence: int,
    place: tuple[str, ...],
    today: float,
) -> None:
    """Every form the packer may choose for a sure, believed or faded memory (its full or
    compact sentence cut at :data:`MAX_SUBJECT`, a merged line that starts with it cut at
    :data:`MERGE_ITEM_SUBJECT`) is at least the words of its section's emptiest template
    plus its subject as the merged line cuts it."""
    if kind is SourceKind.HEARSAY and state is State.INFLUENCING:
        state = State.PAST  # a rumour still held is told, not plain
    belief = Belief(
        resident="mira", root=root, value=value, subject=subject, confidence=confidence,
        state=state, source_kind=kind,
        source_resident_id="bo" if kind is SourceKind.HEARSAY else None,
        formed_day=2.0, updated_day=3.0, last_evidence_day=3.0, places=place,
        heard_from=("bo",) if kind is SourceKind.HEARSAY else (),
    )  # fmt: skip
    item = classify_belief(belief)
    assert item.section in ("sure", "believe", "faded")
    words = replace(
        words_for(lang),
        names={"bo": "Bo"},
        self_names=("Mira", "米拉"),
        root_texts=(("tree:", "trees of the wood"),),
    )
    phrased = Phrased(item, words, None, today)
    shortest = subject_text(subject, root, value, words, MERGE_ITEM_SUBJECT, today)
    bound = _least(words, item.section) + len(shortest)
    forms = [phrased.full(MAX_SUBJECT), phrased.compact(MAX_SUBJECT)]
    if item.group is not None:
        forms.append(words.merged.format(k=words.name(item.group), items=phrased.compact(
            MERGE_ITEM_SUBJECT
        )))  # fmt: skip
    for form in forms:
        assert len(form) >= bound, (form, shortest, bound)


#: Each kind of memory a merged line lists that a read may leave unbuilt (state, source,
#: confidence): sure, believed (thought, unsure, implanted), faded (seen, told), a rumour.
PLAIN = st.sampled_from([
    (State.INFLUENCING, SourceKind.FIRSTHAND, 90), (State.INFLUENCING, SourceKind.FIRSTHAND, 70),
    (State.INFLUENCING, SourceKind.FIRSTHAND, 30), (State.INFLUENCING, SourceKind.IMPLANTED, 90),
    (State.PAST, SourceKind.FIRSTHAND, 50), (State.PAST, SourceKind.HEARSAY, 40),
    (State.INFLUENCING, SourceKind.HEARSAY, 60),
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    subjects=st.lists(st.one_of(SUBJECTS, st.sampled_from(["", "I", "Bo", "a well"])),
                      min_size=2, max_size=9),
    extra=st.one_of(st.just(0), st.integers(0, 30)),
    lang=st.sampled_from(["en", "zh-Hant"]),
    plain=PLAIN,
    place=st.sampled_from(["mill", "the old mill by the river", "磨坊"]),
    today=st.sampled_from([0.0, 10.0, 50.0]),
)  # fmt: skip
def test_no_merged_line_led_by_a_plain_memory_is_shorter_than_its_groups_bound(
    subjects: list[str],
    extra: int,
    lang: str,
    plain: tuple[State, SourceKind, int],
    place: str,
    today: float,
) -> None:
    """A unit of plain memories or rumours merged under one place (``subjects`` of them,
    and ``extra`` more the line may count): every merged line :func:`packing._cheapest` may
    make of it, led by its first, listing any number of them and counting the rest, is at
    least :func:`packing.least_line` for the group with the leader's subject as a merged
    line cuts it (the other members' subjects may be as short as any)."""
    from sidecar.read.packing import MERGE_MAX_ITEMS, _merged_text, least_line

    state, kind, confidence = plain
    words = replace(words_for(lang), names={"bo": "Bo", "mill": place}, self_names=("Mira", "米拉"))
    phrased = []
    for n, subject in enumerate(subjects):
        belief = Belief(
            resident="mira", root=f"fact:{n}", value=n, subject=subject,
            confidence=confidence, state=state, source_kind=kind,
            source_resident_id="bo" if kind is SourceKind.HEARSAY else None,
            formed_day=2.0, updated_day=3.0, last_evidence_day=3.0, places=("mill",),
            heard_from=("bo",) if kind is SourceKind.HEARSAY else (),
        )  # fmt: skip
        item = classify_belief(belief)
        assert item.section in ("sure", "believe", "faded", "told") and item.group == "mill"
        phrased.append(Phrased(item, words, None, today))
    section = phrased[0].section
    leader = subject_text(subjects[0], "fact:0", 0, words, MERGE_ITEM_SUBJECT, today)
    total = len(subjects) + extra
    bound = least_line(words, section, len(leader), "mill", total)
    parts = [p.compact(MERGE_ITEM_SUBJECT) for p in phrased]
    for shown in range(1, min(total, MERGE_MAX_ITEMS, len(parts)) + 1):
        text = _merged_text(words, "mill", total, shown, parts)
        assert len(text) >= bound, (text, bound)
