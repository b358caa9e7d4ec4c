"""The packer's lower bounds on lines it has not worded: sound for any subject.

A focused social read leaves a big resident's matching plain facts and faded memories
unbuilt and counts them when not even the shortest line their subjects could make fits
(``packing._passed``). That is only right if no line the packer can make of such a memory
is ever shorter than ``_least(words, section)`` plus its subject cut for a merged line.
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
