"""The golden question story (issue 18's Goal): what an NPC can answer from its narrative.

A 30-day town of eight residents is played through the real store; each resident's narrative
is projected at budget 1,000 in English and in zh-Hant, and each question is answered by
checking that the words its answer needs are in the text (and that what must stay hidden is
not). Questions are data: add a :class:`Question` to :data:`QUESTIONS` (and, if the story
needs it, events to :func:`town`) to pin another kind of answer.

``python -m pytest tests/test_read_questions.py -q -s`` prints the score per language.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from read_world import WORLD, build
from wsclient import rebuild_check

from sidecar.read import project
from sidecar.store import Reader

BUDGET = 1000
LANGS = ("en", "zh-Hant")

#: Residents of the town: id, English name, Traditional Chinese name.
RESIDENTS = (
    ("mira", "Mira", "米拉"), ("bo", "Bo", "阿博"), ("tom", "Old Tom", "老湯姆"),
    ("kai", "Kai", "阿凱"), ("ana", "Ana", "安娜"), ("lena", "Lena", "蕾娜"),
    ("doc", "the doctor", "醫生"), ("miller", "the miller", "磨坊主人"),
)  # fmt: skip
ACTIONS = (
    ("fetch_water", "fetch water", "打水"),
    ("mend_fence", "mend the fence", "修籬笆"),
    ("feed_hens", "feed the hens", "餵雞"),
    ("bake_bread", "bake bread", "烤麵包"),
)


def _t(en: str, zh: str) -> dict[str, str]:
    """A subject in both languages."""
    return {"en": en, "zh-Hant": zh}


def town() -> list[dict[str, Any]]:
    """The town's world log, in day order (30 days, 8 residents)."""
    out: list[dict[str, Any]] = []

    def add(day: float, kind: str, **fields: Any) -> None:
        out.append({"event_id": f"q{len(out) + 1}", "day": day, "kind": kind, **fields})

    add(0, "register",
        residents=[{"resident": r, "names": {"en": en, "zh-Hant": zh}} for r, en, zh in RESIDENTS],
        actions=[{"action": a, "names": {"en": en, "zh-Hant": zh}} for a, en, zh in ACTIONS])  # fmt: skip
    # Ordinary life: trees and fence posts Mira passes every day (bulk), hens Kai feeds.
    for day in (1, 2):
        for i in range(30):
            add(day, "observe", witnesses=["mira"], claim={"root": f"tree:{i}", "value": "oak"},
                subject=_t(f"an old oak stands at crossing {i}", f"第{i}個路口有一棵老橡樹"))  # fmt: skip
    # A memory the player hides: Mira saw Ana hide a letter; the player suppresses it.
    add(2, "observe", witnesses=["mira"], claim={"root": "letter:hidden", "value": "mill"},
        subject=_t("Ana hid a letter under the mill", "安娜把一封信藏在磨坊下面"), people=["ana"])  # fmt: skip
    # The rumour: Bo tells Mira and Old Tom; Tom repeats it to Mira; Lena tells her on her own.
    add(3, "say", speaker="bo", listeners=["mira", "tom"], topic="health", importance=0.8,
        claim={"root": "water:well", "value": "poisoned"}, places=["well"],
        subject=_t("The well water is poisoned", "井水有毒"))  # fmt: skip
    add(4, "say", speaker="tom", listeners=["mira"], topic="health", places=["well"],
        claim={"root": "water:well", "value": "poisoned"},
        subject=_t("the well water is poisoned", "井水有毒"))  # fmt: skip
    add(5, "say", speaker="lena", listeners=["mira"], topic="health", places=["well"],
        claim={"root": "water:well", "value": "poisoned"},
        subject=_t("the well water is poisoned", "井水有毒"))  # fmt: skip
    # What first made her doubt it (day 7), and what corrected it (day 9).
    for day in (7, 9):
        add(day, "observe", witnesses=["mira"], claim={"root": "water:well", "value": "clean"},
            places=["well"], subject=_t("the well water is clean", "井水是乾淨的"))  # fmt: skip
    # Own words: Mira tells Kai, then Lena, what she saw (one line: "I told Kai and Lena").
    for day, listener in ((10, "kai"), (11, "lena")):
        add(day, "say", speaker="mira", listeners=[listener], places=["well"],
            claim={"root": "water:well", "value": "clean"},
            subject=_t("the well water is clean", "井水是乾淨的"))  # fmt: skip
    # Old Tom's festival date: an event now past.
    add(10, "say", speaker="tom", listeners=["mira"], claim={"root": "festival:day", "value": 20},
        subject=_t("the harvest festival is on day 20", "豐收節在第20天"))  # fmt: skip
    # Seen with her own eyes, and her reading of it.
    add(12, "observe", witnesses=["mira"], claim={"root": "fence:north", "value": "broken"},
        people=["kai"], importance=0.6, interpretations={"mira": _t("he did it on purpose", "他是故意的")},
        subject=_t("Kai broke the north fence", "阿凱弄壞了北邊的籬笆"))  # fmt: skip
    # The player implants a memory; Mira's own eyes expose and then correct it.
    add(14, "intervene", resident="mira", op="implant",
        claim={"root": "bridge:state", "value": "collapsed"},
        subject=_t("the bridge collapsed", "橋塌了"))  # fmt: skip
    add(15, "intervene", resident="mira", op="suppress", claim={"root": "letter:hidden"})
    for day in (16, 18):
        add(day, "observe", witnesses=["mira"], claim={"root": "bridge:state", "value": "standing"},
            subject=_t("the bridge is still standing", "橋還好好的"))  # fmt: skip
    # Kai hears about the mill wheel from two people independently.
    add(19, "say", speaker="miller", listeners=["kai"], places=["mill"],
        claim={"root": "mill:wheel", "value": "broken"},
        subject=_t("the mill wheel is broken", "磨坊的水車壞了"))  # fmt: skip
    add(20, "say", speaker="doc", listeners=["kai"], places=["mill"],
        claim={"root": "mill:wheel", "value": "broken"},
        subject=_t("the mill wheel is broken", "磨坊的水車壞了"))  # fmt: skip
    # A doubt still open: Lena says the doctor is leaving, the doctor says he is staying.
    add(21, "say", speaker="lena", listeners=["mira"], people=["doc"],
        claim={"root": "doc:leaving", "value": True},
        subject=_t("the doctor is leaving town", "醫生要離開鎮上"))  # fmt: skip
    add(22, "say", speaker="doc", listeners=["mira"], people=["doc"],
        claim={"root": "doc:leaving", "value": False},
        subject=_t("the doctor is staying in town", "醫生會留在鎮上"))  # fmt: skip
    # Someone speaks of Mira: she is never named in her own narrative.
    add(23, "say", speaker="ana", listeners=["mira"], people=["miller"],
        claim={"root": "miller:mood", "value": "angry"},
        subject=_t("the miller is angry with Mira", "磨坊主人在生米拉的氣"))  # fmt: skip
    # Chores: Mira fetches water 25 times, Kai feeds the hens; the last fetch fails.
    for day in range(1, 26):
        add(day, "act", actor="mira", action="fetch_water", status="completed", witnesses=["kai"])
        add(day, "act", actor="kai", action="feed_hens", status="completed", witnesses=["mira"])
    add(26.25, "act", actor="mira", action="fetch_water", status="rejected", witnesses=["kai"],
        reason=_t("the rope snapped", "繩子斷了"))  # fmt: skip
    add(27, "act", actor="kai", action="mend_fence", status="interrupted", witnesses=["mira"],
        reason=_t("it started to rain", "下起雨來了"))  # fmt: skip
    # Promises and goals (issue 18 item 2): Bo promised Kai to fix the roof and never did;
    # Kai promised Ana bread and baked it in front of her; Kai's goal changed on day 24.
    # (Logged late, as a game may: the world accepts events up to LATE_EVENT_DAYS back.)
    add(6, "promise", promise="roof", promiser="bo", to=["kai"], action="fix_roof", by=15,
        subject=_t("fix the roof", "修屋頂"))  # fmt: skip
    add(8, "promise", promise="bread", promiser="kai", to=["ana"], action="bake_bread", by=20,
        subject=_t("bake bread for the feast", "為宴會烤麵包"))  # fmt: skip
    add(2, "goal", resident="kai", goal="mill", op="set",
        subject=_t("find out who broke the mill wheel", "查出是誰弄壞了磨坊的水車"))  # fmt: skip
    add(18, "act", actor="kai", action="bake_bread", status="completed", witnesses=["ana"])
    add(24, "goal", resident="kai", goal="mill", op="changed",
        subject=_t("repair the mill wheel", "修好磨坊的水車"))  # fmt: skip
    add(30, "tick")
    return out


@dataclass(frozen=True, slots=True)
class Question:
    """One question a resident must answer from its narrative alone."""

    kind: str  # the Goal kind ("who told me X", ...)
    question: str
    resident: str
    lang: str
    #: Every one of these must occur in the text.
    needs: tuple[str, ...]
    #: None of these may occur in it (what stays hidden, or a wrong wording).
    never: tuple[str, ...] = ()


def _q(kind: str, question: str, resident: str, en: tuple[str, ...], zh: tuple[str, ...],
       never_en: tuple[str, ...] = (), never_zh: tuple[str, ...] = ()) -> Iterator[Question]:  # fmt: skip
    yield Question(kind, question, resident, "en", en, never_en)
    yield Question(kind, question, resident, "zh-Hant", zh, never_zh)


QUESTIONS: tuple[Question, ...] = (
    *_q("who told me X", "Who told me the well water is poisoned?", "mira",
        ("Bo", "Old Tom", "Lena", "the well water is poisoned", "repeated"),
        ("阿博", "老湯姆", "蕾娜", "井水有毒", "轉述")),
    *_q("who told me X", "Who told me the mill wheel is broken?", "kai",
        ("miller", "the doctor", "the mill wheel is broken"),
        ("磨坊主人", "醫生", "磨坊的水車壞了")),
    *_q("did I see it myself", "Did I see Kai break the north fence myself?", "mira",
        ("Kai broke the north fence (day 12)",), ("阿凱弄壞了北邊的籬笆（第12天）",),
        ("told me that Kai broke",), ("告訴我阿凱",)),
    *_q("did I see it myself", "Did I see that the mill wheel is broken?", "kai",
        ("told me that the mill wheel is broken",), ("告訴我磨坊的水車壞了",),
        ("I saw the mill wheel",), ("親眼看到磨坊",)),
    *_q("how sure am I", "How sure am I that the doctor is leaving?", "mira",
        ("doubt", "the doctor is leaving town"), ("懷疑", "醫生要離開鎮上")),
    *_q("what did I believe before and what changed it",
        "What did I believe about the well, and what changed my mind?", "mira",
        ("used to think the well water is poisoned", "the well water is clean", "day 9"),
        ("以前以為井水有毒", "井水是乾淨的", "第9天")),
    *_q("what first made me doubt it", "What first made me doubt the well was poisoned?", "mira",
        ("first doubted", "day 7"), ("第7天", "開始懷疑")),
    *_q("did I see it myself", "Did I see the bridge collapse, or only remember it?", "mira",
        ("somehow remembered that the bridge collapsed", "the bridge is still standing"),
        ("不知怎的記得橋塌了", "橋還好好的")),
    *_q("whom do I distrust and why", "Whom do I distrust, and why?", "mira",
        ("I distrust Bo", "poisoned"), ("我不信任阿博", "有毒")),
    *_q("what happened on day N", "What happened on day 12?", "mira",
        ("day 12", "Kai broke the north fence", "he did it on purpose"),
        ("第12天", "阿凱弄壞了北邊的籬笆", "他是故意的")),
    *_q("what happened on day N", "When was the harvest festival?", "mira",
        ("the harvest festival was on day 20",), ("豐收節在第20天",),
        ("the harvest festival is on day 20",), ()),
    *_q("what did I do most recently and why did it fail",
        "What did I do most recently, and why did it fail?", "mira",
        ("fetch water", "refused", "the rope snapped", "day 26"),
        ("打水", "被拒絕", "繩子斷了", "第26天"),
        ("26.25", "day 26.", "Mira"), ("26.25", "米拉")),
    *_q("what did I do most recently and why did it fail",
        "What did Kai last try, and why did it stop?", "mira",
        ("Kai's attempt to mend the fence was interrupted", "it started to rain"),
        ("阿凱想要修籬笆", "被打斷", "下起雨來了")),
    *_q("how often", "How often did I fetch water?", "mira",
        ("I fetched water 25 times",), ("我打了25次水",), (), ("打水了25次",)),
    *_q("what did I tell to whom", "Whom did I tell that the well water is clean?", "mira",
        ("I told Kai and Lena that the well water is clean",), ("我告訴過阿凱和蕾娜井水是乾淨的",)),
    *_q("what did I tell to whom", "Whom did I spread the rumour about the well to?", "bo",
        ("I told Mira and Old Tom that the well water is poisoned",),
        ("我告訴了米拉和老湯姆井水有毒",)),
    *_q("what did I promise and what was I promised", "What did Bo promise me?", "kai",
        ("Bo promised me to fix the roof by day 15, and has not done it",),
        ("阿博答應了我在第15天前修屋頂，期限已過，還沒做到",)),
    *_q("what did I promise and what was I promised", "What did I promise Ana?", "kai",
        ("I kept my promise to Ana to bake bread for the feast",),
        ("我遵守了對安娜的承諾：為宴會烤麵包",)),
    *_q("what did I promise and what was I promised", "What did Kai promise me?", "ana",
        ("Kai kept the promise to bake bread for the feast: I saw it on day 18",),
        ("阿凱遵守了承諾：為宴會烤麵包（我在第18天親眼看到）",)),
    *_q("what am I trying to do", "What am I trying to do?", "kai",
        ("I am trying to repair the mill wheel",
         "before, I wanted to find out who broke the mill wheel"),
        ("我正在努力修好磨坊的水車", "之前我想查出是誰弄壞了磨坊的水車")),
    *_q("what stays hidden", "Is the suppressed letter hidden?", "mira",
        ("the miller is angry with me",), ("磨坊主人在生我的氣",),
        ("letter", "Mira", "The well"), ("一封信", "米拉")),
)  # fmt: skip


#: Questions the narrative cannot answer yet (``lang:resident:question``), expected to fail
#: until the wording that answers them lands; an answered one must leave this set. (The
#: English ones answered since: tighter English, notable firsthand memories ranked with what
#: I was told, and a packer that gives every memory that matters a line before any line
#: its detail: sidecar/read/packing.py.)
PENDING: frozenset[str] = frozenset()


@pytest.fixture(scope="module")
def story_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("questions") / "q.db", town())


@pytest.fixture(scope="module")
def reader(story_db: Path) -> Iterator[Reader]:
    found = Reader(story_db)
    yield found
    found.close()


def _text(reader: Reader, resident: str, lang: str) -> str:
    return project(reader, WORLD, resident, budget=BUDGET, lang=lang).text


def _answered(text: str, q: Question) -> bool:
    return all(n in text for n in q.needs) and not any(n in text for n in q.never)


def _id(q: Question) -> str:
    return f"{q.lang}:{q.resident}:{q.question}"


def _params() -> list[Any]:
    pending = pytest.mark.xfail(reason="not answerable yet", strict=True)
    return [
        pytest.param(q, id=_id(q), marks=[pending] if _id(q) in PENDING else []) for q in QUESTIONS
    ]


@pytest.mark.parametrize("q", _params())
def test_question_is_answered_by_the_narrative(reader: Reader, q: Question) -> None:
    """The resident's budget-1,000 narrative holds every word the answer needs, and none that
    must stay out."""
    text = _text(reader, q.resident, q.lang)
    missing = [n for n in q.needs if n not in text]
    wrong = [n for n in q.never if n in text]
    assert not missing and not wrong, f"{q.question}\nmissing {missing}, present {wrong}\n{text}"


def test_every_narrative_keeps_its_budget_and_the_score_is_printed(reader: Reader) -> None:
    """Each narrative of the story fits budget 1,000; the score per language is printed."""
    for lang in LANGS:
        asked = [q for q in QUESTIONS if q.lang == lang]
        texts = {r: _text(reader, r, lang) for r in {q.resident for q in asked}}
        assert all(len(t) <= BUDGET for t in texts.values())
        score = sum(_answered(texts[q.resident], q) for q in asked)
        print(f"\n{lang}: {score}/{len(asked)} questions answered at budget {BUDGET}")


def test_the_story_rebuilds_exactly(story_db: Path) -> None:
    """Replaying the story's log (subject maps, reasons, interventions) rebuilds every belief."""
    rebuild_check(story_db)
