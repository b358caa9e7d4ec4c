"""Promises and goals on the read side: reply entries and the narrative's two sections.

``owe`` ("What I owe and am owed") has one line per promise the resident made or was made,
worded from its own view of it (sidecar/engine/promises.py): pending, kept (seen or told),
overdue (the deadline passed unseen) or broken (told). ``goals`` ("What I am trying to do")
has one line per goal: active ones (with the text a change replaced), then achieved and
abandoned ones. The latest five overdue or broken promises rank with the contested beliefs
(never dropped under a budget), further ones with the pending; pending promises and active goals next; kept promises and closed goals
like any other memory. Names, not ids; whole days; both languages by template.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..engine.model import Belief, SourceKind, State
from ..engine.promises import GoalRecord, GoalState, PromiseRecord, PromiseState, PromiseView
from ..engine.texts import text_in, wire_text
from ..store import Reader
from .items import Item
from .recall import GOALS_RECALLED, PROMISES_RECALLED, OwnRecall, recall_own
from .wording import Words

__all__ = [
    "GOALS_RECALLED",
    "GOAL_HISTORY_SHOWN",
    "PROMISES_RECALLED",
    "OwnRecall",
    "goal_entry",
    "goal_history",
    "own_items",
    "promise_entry",
    "recall_own",
]


def promise_entry(view: PromiseView, record: PromiseRecord) -> dict[str, Any]:
    """One promise of a ``promises`` reply (and of a narrative entry's ``promise``)."""
    return {
        "promise": record.promise,
        "promiser": record.promiser,
        "to": list(record.to),
        "action": record.action,
        "subject": wire_text(record.subject),
        "made_day": record.made_day,
        "by": record.by,
        "state": str(view.state),
        "how": str(view.how),
        "source": view.source,
        "since": view.since,
    }


def goal_entry(goal: GoalRecord) -> dict[str, Any]:
    """One goal of a ``goals`` reply."""
    return {
        "goal": goal.goal,
        "subject": wire_text(goal.subject),
        "state": str(goal.state),
        "set_day": goal.set_day,
        "day": goal.day,
        "prev_subject": wire_text(goal.prev_subject),
    }


#: A ``goals`` entry lists at most this many of its latest changes (newest first).
GOAL_HISTORY_SHOWN = 10


def goal_history(reader: Reader, world: str, resident: str, goal: str) -> list[dict[str, Any]]:
    """A goal's latest changes, newest first: what the game did to it and when."""
    return [
        {"op": op, "subject_before": wire_text(before), "subject": wire_text(after), "day": day}
        for op, before, after, day in reader.goal_history(
            world, resident, goal, limit=GOAL_HISTORY_SHOWN
        )
    ]


# ---------------------------------------------------------------------------- wording

_EN = {
    "by": " by day {d}",
    "mine.pending": "I promised {to} to {s}{by}.",
    "mine.overdue": "I promised {to} to {s}{by}, and the day has passed without my doing it.",
    "mine.broken": "I promised {to} to {s}{by}; {teller} says I broke my word.",
    "mine.kept": "I kept my promise to {to} to {s}{late}.",
    "theirs.pending": "{p} promised me to {s}{by}.",
    "theirs.overdue": "{p} promised me to {s}{by}, and has not done it.",
    "theirs.broken": "{p} promised me to {s}{by}, and broke the promise ({teller} told me).",
    "theirs.kept.seen": "{p} kept the promise to {s}: I saw it on day {d}{late}.",
    "theirs.kept.told": "{p} kept the promise to {s}{late} ({teller} told me).",
    "late": ", late",
    "c.pending": "{who}: {s}{by}.",
    "c.overdue": "{who}: {s}{by} (overdue).",
    "c.broken": "{who}: {s} (broken).",
    "c.kept": "{who}: {s} (kept).",
    "goal.active": "I am trying to {s} (since day {d}).",
    "goal.active.changed": "I am trying to {s} (since day {d}; before, I wanted to {old}).",
    "goal.achieved": "I achieved what I set out to do: {s} (day {d}).",
    "goal.abandoned": "I gave up trying to {s} (day {d}).",
    "c.goal.active": "Trying to {s}.",
    "c.goal.achieved": "Done: {s}.",
    "c.goal.abandoned": "Gave up: {s}.",
    "me_to": "I → {to}",
}
_ZH = {
    "by": "在第{d}天前",
    "mine.pending": "我答應了{to}{by}{s}。",
    "mine.overdue": "我答應了{to}{by}{s}，期限已過，我還沒做到。",
    "mine.broken": "我答應了{to}{by}{s}，{teller}卻說我食言了。",
    "mine.kept": "我遵守了對{to}的承諾：{s}{late}。",
    "theirs.pending": "{p}答應了我{by}{s}。",
    "theirs.overdue": "{p}答應了我{by}{s}，期限已過，還沒做到。",
    "theirs.broken": "{p}答應了我{by}{s}，卻食言了（{teller}告訴我的）。",
    "theirs.kept.seen": "{p}遵守了承諾：{s}（我在第{d}天親眼看到{late}）。",
    "theirs.kept.told": "{p}遵守了承諾：{s}{late}（{teller}告訴我的）。",
    "late": "，但晚了",
    "c.pending": "{who}：{s}{by}。",
    "c.overdue": "{who}：{s}{by}（逾期）。",
    "c.broken": "{who}：{s}（食言）。",
    "c.kept": "{who}：{s}（已遵守）。",
    "goal.active": "我正在努力{s}（從第{d}天起）。",
    "goal.active.changed": "我正在努力{s}（從第{d}天起；之前我想{old}）。",
    "goal.achieved": "我在第{d}天達成了目標：{s}。",
    "goal.abandoned": "我在第{d}天放棄了：{s}。",
    "c.goal.active": "努力{s}。",
    "c.goal.achieved": "已達成：{s}。",
    "c.goal.abandoned": "已放棄：{s}。",
    "me_to": "我→{to}",
}
_TEMPLATES = {"en": _EN, "zh-Hant": _ZH}


def _day(day: float) -> str:
    """A whole game day, as the text names days."""
    return str(math.floor(day))


def _clean(text: str) -> str:
    """The game's verb phrase as it goes inside a sentence: no trailing stop, and no stray
    capital (``Mend the fence`` → ``mend the fence``, but ``Kai's fence`` stays)."""
    text = " ".join(text.split()).rstrip(".。")
    if len(text) > 1 and text[0].isupper() and text[1].islower() and " " in text:
        return text[0].lower() + text[1:]
    return text


Lines = Callable[[Words, float], tuple[str, str]]


def _promise_lines(resident: str, view: PromiseView, record: PromiseRecord) -> Lines:
    def lines(words: Words, today: float) -> tuple[str, str]:
        t = _TEMPLATES.get(words.lang, _EN)
        s = _clean(text_in(record.subject, words.lang))
        if words.lang != "en":
            s = s.rstrip(".")
        by = "" if record.by is None else t["by"].format(d=_day(record.by))
        late = t["late"] if (record.by is not None and view.since > record.by) else ""
        teller = words.name(view.source) if view.source else ""
        mine = record.promiser == resident
        state = str(view.state)
        if mine:
            to = words.who([r for r in record.to])
            key = f"mine.{state}"
            full = t[key].format(to=to, s=s, by=by, teller=teller, late=late)
            who = t["me_to"].format(to=to)
        else:
            p = words.name(record.promiser)
            key = f"theirs.{state}"
            if view.state is PromiseState.KEPT:
                key += ".told" if view.source else ".seen"
            full = t[key].format(p=p, s=s, by=by, teller=teller, late=late, d=_day(view.since))
            who = p
        compact = t[f"c.{state}"].format(who=who, s=s, by=by)
        return full, compact

    return lines


def _goal_lines(goal: GoalRecord) -> Lines:
    def lines(words: Words, today: float) -> tuple[str, str]:
        t = _TEMPLATES.get(words.lang, _EN)
        s, state = _clean(text_in(goal.subject, words.lang)), str(goal.state)
        if goal.state is GoalState.ACTIVE:
            key = "goal.active.changed" if goal.prev_subject else "goal.active"
            day = goal.set_day
        else:
            key, day = f"goal.{state}", goal.day
        old = _clean(text_in(goal.prev_subject, words.lang))
        full = t[key].format(s=s, d=_day(day), old=old)
        return full, t[f"c.goal.{state}"].format(s=s)

    return lines


#: Priority tiers (see :func:`.items.tier_of`): 0 and 1 are never dropped under a budget.
_PROMISE_TIER = {
    PromiseState.OVERDUE: 0,
    PromiseState.BROKEN: 0,
    PromiseState.PENDING: 2,
    PromiseState.KEPT: 4,
}
_GOAL_TIER = {GoalState.ACTIVE: 1, GoalState.ACHIEVED: 4, GoalState.ABANDONED: 4}


def _stand_in(
    resident: str, root: str, subject: str, day: float, people: tuple[str, ...]
) -> Belief:
    """The belief an item ranks by (recency from its day; full confidence)."""
    return Belief(
        resident=resident, root=root, value=subject, subject=subject, confidence=100,
        state=State.INFLUENCING, source_kind=SourceKind.FIRSTHAND, source_resident_id=None,
        formed_day=day, updated_day=day, last_evidence_day=day, people=people,
    )  # fmt: skip


#: At most this many overdue or broken promises (the latest) are never dropped; the rest rank
#: as pending ones, so a resident with hundreds of broken promises still has room for more.
PROTECTED_PROMISES = 5


def own_items(resident: str, recalled: OwnRecall) -> list[Item]:
    """One item per recalled promise and goal, tiered by state (kept by the ranking)."""
    items: list[Item] = []
    protected = 0
    for view, record in recalled.promises:  # (latest first within each state)
        tier = _PROMISE_TIER[view.state]
        if tier == 0:
            protected += 1
            if protected > PROTECTED_PROMISES:
                tier = _PROMISE_TIER[PromiseState.PENDING]
        people = tuple(p for p in (record.promiser, *record.to) if p != resident)
        items.append(
            Item(
                belief=_stand_in(
                    resident, f"promise:{record.promise}", record.subject, view.since, people
                ),
                section="owe",
                band=str(view.state),
                tier=tier,
                group=None,
                lines=_promise_lines(resident, view, record),
                extra={"promise": promise_entry(view, record), "_people": people},
            )
        )
    for goal in recalled.goals:
        items.append(
            Item(
                belief=_stand_in(resident, f"goal:{goal.goal}", goal.subject, goal.day, ()),
                section="goals",
                band=str(goal.state),
                tier=_GOAL_TIER[goal.state],
                group=None,
                lines=_goal_lines(goal),
                extra={"goal": goal_entry(goal)},
            )
        )
    return items
