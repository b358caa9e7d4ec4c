"""The narrative's "What I told others" (issue 18 item 1): a resident's own words, in English
and zh-Hant — names not ids, "I" for itself, listeners of one claim merged, whole days, the
latest first under a budget, a lie shown as what was said."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from read_world import open_reader

from sidecar.engine import parse_event
from sidecar.read import project
from sidecar.read.own_words import SAID_RECALLED
from sidecar.read.wording import NAMES_SHOWN
from sidecar.store import Reader, ResultStatus, Writer

W = "town"
NAMES = {"mira": ("Mira", "米拉"), "kai": ("Kai", "阿凱"), "lena": ("Lena", "莉娜"),
         "bo": ("Bo", "阿波")}  # fmt: skip


def _register() -> dict[str, Any]:
    residents = [
        {"resident": r, "names": {"en": en, "zh-Hant": zh}} for r, (en, zh) in NAMES.items()
    ]
    return {"event_id": "reg", "day": 0, "kind": "register", "residents": residents}


def _say(
    eid: str, day: float, to: list[str], root: str, value: Any, subject: str
) -> dict[str, Any]:
    return {"event_id": eid, "day": day, "kind": "say", "speaker": "mira", "listeners": to,
            "claim": {"root": root, "value": value}, "subject": subject}  # fmt: skip


def _world(path: Path, events: list[dict[str, Any]]) -> Reader:
    writer = Writer(path, synchronous="OFF")
    try:
        results = writer.apply([(W, parse_event(e)) for e in events])
        assert all(r.status is ResultStatus.APPLIED for r in results), results
    finally:
        writer.close()
    return open_reader(path)


def _story(subject_well: str, subject_fest: str) -> list[dict[str, Any]]:
    return [
        _register(),
        {"event_id": "o", "day": 1, "kind": "observe", "witnesses": ["mira"],
         "claim": {"root": "water:well", "value": "dry"}, "subject": "the well is dry"},
        _say("s1", 2.5, ["kai"], "water:well", "fine", subject_well),
        _say("s2", 2.75, ["lena", "kai"], "water:well", "fine", subject_well),
        {"event_id": "a", "day": 9.5, "kind": "announce", "speaker": "mira", "audience": "*",
         "claim": {"root": "festival:day", "value": 12}, "subject": subject_fest},
        {"event_id": "t", "day": 10.25, "kind": "tick"},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def town(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    return _world(
        tmp_path_factory.mktemp("said") / "en.db",
        _story("the well is fine", "the festival is on day 12"),
    )


def test_english_lines_name_listeners_merge_them_and_show_whole_days(town: Reader) -> None:
    """Mira told Kai, then Lena and Kai: one line naming both (first told first), by their
    names, the latest telling's whole day; the announcement to everyone comes first (latest)."""
    n = project(town, W, "mira")
    section = next(s for s in n.sections if s["name"] == "said")
    assert section["title"] == "What I told others:"
    assert [e["text"] for e in section["entries"]] == [
        "I announced to everyone that the festival is on day 12 (yesterday).",
        "I told Kai and Lena that the well is fine (2 times, last on day 2).",
    ]
    assert "What I told others:\n- I announced" in n.text
    well = section["entries"][1]
    assert (well["to"], well["to_count"], well["times"]) == (["kai", "lena"], 2, 2)
    assert well["value"] == "fine" and well["band"] == "said"


def test_a_lie_is_shown_as_said_beside_what_i_saw(town: Reader) -> None:
    """Mira saw the well dry and said it was fine: both lines stand, nothing flags the lie."""
    text = project(town, W, "mira").text
    assert "I think the well is dry" in text and "that the well is fine" in text
    assert "lie" not in text.lower() and "false" not in text.lower()


def test_zh_hant_lines_read_naturally(tmp_path: Path) -> None:
    """In zh-Hant: 「…我告訴了阿凱和莉娜井沒事。」-style lines, registered names, whole days."""
    reader = _world(tmp_path / "zh.db", _story("井沒事", "豐收節在第12天"))
    n = project(reader, W, "mira", lang="zh-Hant")
    section = next(s for s in n.sections if s["name"] == "said")
    assert section["title"] == "我告訴別人的事："
    assert [e["text"] for e in section["entries"]] == [
        "昨天我向大家宣布了豐收節在第12天。",
        "我告訴過阿凱和莉娜井沒事（2次，最近一次是第2天）。",
    ]
    one = _world(
        tmp_path / "zh1.db", [_register(), _say("s", 3, ["kai", "lena"], "w", 1, "井沒事")]
    )
    assert "今天我告訴了阿凱和莉娜井沒事。" in project(one, W, "mira", lang="zh-Hant").text


def test_the_resident_is_i_and_many_listeners_are_counted(tmp_path: Path) -> None:
    """A subject naming the speaker reads in the first person; a line names at most
    NAMES_SHOWN listeners and counts the rest."""
    crowd = [f"r{i}" for i in range(NAMES_SHOWN + 3)]
    reader = _world(tmp_path / "many.db", [_register(), _say("s", 1, crowd, "mill", "shut",
                                                             "Mira shut the mill")])  # fmt: skip
    text = project(reader, W, "mira").text
    assert "I told r0, r1, r2, r3, r4 and 3 others that I shut the mill (today)." in text


def test_most_recent_first_under_a_tight_budget(tmp_path: Path) -> None:
    """40 different things said, budget 400: the text keeps the latest, drops the oldest, and
    stays within the budget."""
    events = [_register()] + [
        _say(f"s{i}", i, ["kai"], f"rumour:{i}", "yes", f"rumour {i} is true") for i in range(40)
    ]
    text = project(_world(tmp_path / "tight.db", events), W, "mira", budget=400).text
    assert len(text) <= 400
    assert "rumour 39 is true" in text and "rumour 0 is true" not in text


def test_the_narrative_reads_a_bounded_number_of_utterances(tmp_path: Path) -> None:
    """However much was said, a narrative reads the latest SAID_RECALLED utterances only (the
    said query pages through the rest)."""
    events = [_register()] + [
        _say(f"s{i}", i, ["kai"], f"r:{i}", i, f"thing {i}") for i in range(SAID_RECALLED + 30)
    ]
    reader = _world(tmp_path / "big.db", events)
    n = project(reader, W, "mira", budget=50_000)
    section = next(s for s in n.sections if s["name"] == "said")
    assert len(section["entries"]) == SAID_RECALLED
    assert f"thing {SAID_RECALLED + 29}" in n.text and "thing 29 " not in n.text


# ------------------------------------------------------------- questions at budget 1,000

#: Mira's own words over the crowded town's 30 days, in each language: (day, listeners,
#: root, value, subject per language). Day 27's telling repeats day 12's claim to Lena.
_TOLD = [
    (12, ["kai"], "water:well", "fine", {"en": "the well is fine", "zh-Hant": "井沒事"}),
    (27, ["lena"], "water:well", "fine", {"en": "the well is fine", "zh-Hant": "井沒事"}),
    (29, ["bo"], "bridge:state", "safe", {"en": "the bridge is safe", "zh-Hant": "橋很安全"}),
]
#: Question → the words its answer needs in the text, per language.
_QUESTIONS = {
    "en": {
        "whom did I tell that the well is fine?": "I told Kai and Lena that the well is fine",
        "what did I tell Bo?": "I told Bo that the bridge is safe",
    },
    "zh-Hant": {
        "whom did I tell that the well is fine?": "我告訴過阿凱和蕾娜井沒事",
        "what did I tell Bo?": "我告訴了阿博橋很安全",
    },
}


@pytest.mark.parametrize("lang", ["en", "zh-Hant"])
def test_what_did_i_tell_to_whom_is_answerable_at_budget_1000(tmp_path: Path, lang: str) -> None:
    """In the crowded town (30 days, 400 memories), Mira's narrative at budget 1,000 still
    says whom she told what, in each language (the golden questions' kind)."""
    from tools.crowded_town import WORLD as TOWN
    from tools.crowded_town import events

    told = [
        {"event_id": f"told-{n}", "day": day, "kind": "say", "speaker": "mira",
         "listeners": to, "claim": {"root": root, "value": value}, "subject": subject[lang]}
        for n, (day, to, root, value, subject) in enumerate(_TOLD)
    ]  # fmt: skip
    story = sorted([*events(), *told], key=lambda e: e["day"])  # (a stable sort: log order)
    writer = Writer(tmp_path / "q.db", synchronous="OFF")
    try:
        results = writer.apply([(TOWN, parse_event(e)) for e in story])
        assert all(r.status is ResultStatus.APPLIED for r in results)
    finally:
        writer.close()
    text = project(open_reader(tmp_path / "q.db"), TOWN, "mira", budget=1000, lang=lang).text
    assert len(text) <= 1000
    for question, answer in _QUESTIONS[lang].items():
        assert answer in text, (question, text)


def test_a_claim_told_is_ranked_as_a_certain_firsthand_memory_of_its_latest_telling() -> None:
    """The belief-shaped record a claim told is ranked by (built positionally, for speed) is
    the one the keyword constructor builds: certain, firsthand, formed at the first telling,
    as recent as the latest, about everyone told (first told first), every other field its
    default."""
    from sidecar.engine import Belief, SourceKind, State
    from sidecar.read.own_words import said_beliefs

    latest_first = [
        {"root": "well", "value": "clean", "subject": {"en": "the well is clean", "zh-Hant": "井水乾淨"},
         "to": ["kai", "lena"], "day": 7.5, "everyone": False},
        {"root": "well", "value": "clean", "subject": "the well is clean", "to": ["bo"],
         "day": 2.0, "everyone": False},
    ]  # fmt: skip
    ((belief, said),) = said_beliefs("mira", latest_first)
    assert belief == Belief(
        resident="mira", root="well", value="clean", subject="the well is clean",
        confidence=100, state=State.INFLUENCING, source_kind=SourceKind.FIRSTHAND,
        source_resident_id=None, formed_day=2.0, updated_day=7.5, last_evidence_day=7.5,
        people=("bo", "kai", "lena"),
    )  # fmt: skip
    assert said.times == 2 and said.to == ("bo", "kai", "lena")
