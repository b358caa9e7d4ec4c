"""The narrative's "What I owe and am owed" and "What I am trying to do" sections
(sidecar/read/promises.py): names not ids, whole days, both languages, ranked so an overdue
or broken promise survives a tight budget and a kept one goes first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.engine import parse_event
from sidecar.read.narrative import project
from sidecar.read.promises import PROTECTED_PROMISES
from sidecar.store import Reader, Writer

NAMES = [
    {"resident": "bo", "names": {"en": "Bo", "zh-Hant": "阿博"}},
    {"resident": "kai", "names": {"en": "Kai", "zh-Hant": "凱"}},
    {"resident": "lena", "names": {"en": "Lena", "zh-Hant": "蕾娜"}},
]


def _promise(eid: str, pid: str, promiser: str, to: list[str], subject: Any, by: float | None,
             day: float = 1, action: str | None = None) -> dict[str, Any]:  # fmt: skip
    out = {"event_id": eid, "day": day, "kind": "promise", "promise": pid, "promiser": promiser,
           "to": to, "action": action or pid, "subject": subject}  # fmt: skip
    return out | ({} if by is None else {"by": by})


@pytest.fixture
def reader(tmp_path: Path) -> Any:
    events = [
        {"event_id": "r", "day": 0, "kind": "register", "residents": NAMES},
        _promise("p1", "fence", "bo", ["kai", "lena"], "Mend the fence", 12.5),
        _promise("p2", "roof", "bo", ["kai"], "fix the roof", 40, day=2),
        _promise("p3", "bread", "kai", ["bo"], "bake bread", None, day=2),
        _promise("p4", "well", "bo", ["kai"], "clean the well", 5, day=2),
        {"event_id": "a", "day": 4, "kind": "act", "actor": "bo", "action": "well",
         "status": "completed", "witnesses": ["kai"]},
        {"event_id": "s", "day": 6, "kind": "say", "speaker": "lena", "listeners": ["kai"],
         "claim": {"root": "promise:roof", "value": "broken"}, "subject": "Bo won't fix it"},
        {"event_id": "g1", "day": 3, "kind": "goal", "resident": "kai", "goal": "g",
         "op": "set", "subject": "win back Lena's trust"},
        {"event_id": "g2", "day": 7, "kind": "goal", "resident": "kai", "goal": "g",
         "op": "changed", "subject": "leave town before winter"},
        {"event_id": "g3", "day": 7, "kind": "goal", "resident": "kai", "goal": "h",
         "op": "set", "subject": "learn to swim"},
        {"event_id": "g4", "day": 8, "kind": "goal", "resident": "kai", "goal": "h",
         "op": "achieved"},
        {"event_id": "t", "day": 14, "kind": "tick"},
    ]  # fmt: skip
    path = tmp_path / "n.db"
    w = Writer(path, synchronous="OFF")
    events.sort(key=lambda e: e["day"])  # (stable: same-day events keep their order)
    assert all(r.error is None for r in w.apply([("w", parse_event(e)) for e in events]))
    w.close()
    r = Reader(path)
    yield r
    r.close()


def _section(text: str, heading: str) -> list[str]:
    lines = text[text.index(heading) :].splitlines()[1:]
    return [ln for ln in lines[: lines.index("") if "" in lines else None]]


def test_english_sections_name_people_and_whole_days(reader: Reader) -> None:
    """Kai's view of each promise, worded from how Kai learned it, ranked wrong-first."""
    text = project(reader, "w", "kai", budget=2000).text
    owe = _section(text, "What I owe and am owed:")
    assert owe[:2] == [  # what went wrong first, the latest first
        "- Bo promised me to mend the fence by day 12, and has not done it.",
        "- Bo promised me to fix the roof by day 40, and broke the promise (Lena told me).",
    ]
    assert "- Bo kept the promise to clean the well: I saw it on day 4." in owe
    assert "- I promised Bo to bake bread." in owe
    goals = _section(text, "What I am trying to do:")
    assert goals == [
        "- I am trying to leave town before winter (since day 3; before, I wanted to win "
        "back Lena's trust).",
        "- I achieved what I set out to do: learn to swim (day 8).",
    ]
    assert "12.5" not in text and "bo " not in text


def test_the_promisers_side(reader: Reader) -> None:
    """Bo's own view: to whom he promised, by name, and that the day has passed."""
    text = project(reader, "w", "bo", budget=2000).text
    assert ("- I promised Kai and Lena to mend the fence by day 12, and the day has passed "
            "without my doing it.") in text  # fmt: skip
    assert "- I kept my promise to Kai to clean the well." in text
    assert "- Kai promised me to bake bread." in text


def test_zh_hant_sections(reader: Reader) -> None:
    """The same sections in zh-Hant, by template, with registered names."""
    text = project(reader, "w", "kai", budget=2000, lang="zh-Hant").text
    owe = _section(text, "我欠人的與別人欠我的承諾：")
    assert owe[:2] == [
        "- 阿博答應了我在第12天前mend the fence，期限已過，還沒做到。",
        "- 阿博答應了我在第40天前fix the roof，卻食言了（蕾娜告訴我的）。",
    ]
    assert "- 阿博遵守了承諾：clean the well（我在第4天親眼看到）。" in owe
    assert "- 我答應了阿博bake bread。" in owe
    goals = _section(text, "我正在努力做的事：")
    assert (
        goals[0]
        == "- 我正在努力leave town before winter（從第3天起；之前我想win back Lena's trust）。"
    )


def test_a_tight_budget_keeps_the_broken_promise_and_drops_the_kept_one(
    reader: Reader, tmp_path: Path
) -> None:
    """Under a budget that cannot hold everything, an overdue or broken promise stays and
    a kept one is what goes; the section entries carry the promise."""
    n = project(reader, "w", "kai", budget=300)
    assert "fix the roof" in n.text and "mend the fence" in n.text
    assert "clean the well" not in n.text
    owe = next(s for s in n.sections if s["name"] == "owe")
    assert {e["promise"]["state"] for e in owe["entries"][:2]} == {"overdue", "broken"}
    assert owe["entries"][0]["why"]["tier"] == 0


def test_only_the_latest_overdue_promises_are_never_dropped(tmp_path: Path) -> None:
    """Hundreds of broken promises do not crowd the text: the latest few are protected."""
    events: list[dict[str, Any]] = [
        {"event_id": "r", "day": 0, "kind": "register", "residents": NAMES}
    ]
    events += [_promise(f"p{i}", f"job{i:03}", "bo", ["kai"], f"do job {i}", 2 + i / 100)
               for i in range(60)]  # fmt: skip
    events.append({"event_id": "t", "day": 10, "kind": "tick"})
    path = tmp_path / "many.db"
    w = Writer(path, synchronous="OFF")
    w.apply([("w", parse_event(e)) for e in events])
    w.close()
    r = Reader(path)
    try:
        n = project(r, "w", "kai", budget=600)
        owe = next(s for s in n.sections if s["name"] == "owe")
        tiers = [e["why"]["tier"] for e in owe["entries"]]
        assert tiers.count(0) == PROTECTED_PROMISES
        assert owe["omitted"] > 0 and len(n.text) <= 600
    finally:
        r.close()


def test_a_subject_in_both_languages_is_told_in_the_narratives_language(tmp_path: Path) -> None:
    """A promise's and a goal's subject may be a language map: each narrative takes its
    own, the replies give the map back as sent."""
    events = [
        {"event_id": "r", "day": 0, "kind": "register", "residents": NAMES},
        _promise("p", "roof", "bo", ["kai"], {"en": "fix the roof", "zh-Hant": "修屋頂"}, 9),
        {"event_id": "g", "day": 1, "kind": "goal", "resident": "kai", "goal": "g", "op": "set",
         "subject": {"en": "build a raft", "zh-Hant": "造一艘木筏"}},
    ]  # fmt: skip
    path = tmp_path / "maps.db"
    w = Writer(path, synchronous="OFF")
    assert all(r.error is None for r in w.apply([("w", parse_event(e)) for e in events]))
    w.close()
    r = Reader(path)
    try:
        en = project(r, "w", "kai", budget=1000).text
        zh = project(r, "w", "kai", budget=1000, lang="zh-Hant").text
        assert "Bo promised me to fix the roof by day 9." in en
        assert "I am trying to build a raft (since day 1)." in en
        assert "阿博答應了我在第9天前修屋頂。" in zh and "我正在努力造一艘木筏（從第1天起）。" in zh
        page = r.promise_page("w", "kai")
        assert parse_event(events[1]).to_dict()["subject"] == {
            "en": "fix the roof",
            "zh-Hant": "修屋頂",
        }
        assert page[0][1].subject.startswith("{")  # stored as the canonical JSON of the map
    finally:
        r.close()
