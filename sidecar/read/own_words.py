"""The narrative's "What I told others": a resident's own words, merged by claim.

What a resident said is a record of its own (:mod:`sidecar.store.said`), not a belief: it is
read by :func:`.recall.recall` (the latest :data:`SAID_RECALLED` utterances, one bounded read
of the ``said`` primary key), placed in the ``said`` section here (one item per claim told,
its listeners merged in the order first told: "I told Kai and Lena that the well is fine"),
and worded here in each language, with whole days. A lie reads like any other telling: the
sidecar states what was said and never judges it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine import Belief, SourceKind, State, Value
from ..engine.model import new_belief
from ..engine.texts import encode_texts, text_in
from .wording import Words

__all__ = ["SAID_RECALLED", "OwnWords", "said_beliefs", "said_lines"]

#: Most utterances a narrative reads (the latest): the section is bounded however much a
#: resident has said; the ``said`` query pages through all of it.
SAID_RECALLED = 200


@dataclass(frozen=True, slots=True)
class OwnWords:
    """One claim the resident told, however often: to whom (first told first), how often,
    when last, and whether it was ever announced to everyone."""

    root: str
    value: Value
    #: As the game gave it: text, or (a subject per language) a map of language to text.
    subject: object
    to: tuple[str, ...]
    times: int
    first_day: float
    last_day: float
    everyone: bool


@dataclass(frozen=True, slots=True)
class _Templates:
    told_one: str
    told_many: str
    everyone_one: str
    everyone_many: str
    c_told: str
    c_everyone: str


_TEMPLATES = {
    "en": _Templates(
        told_one="I told {who} that {s} ({when}).",
        told_many="I told {who} that {s} ({n} times, last {when}).",
        everyone_one="I announced to everyone that {s} ({when}).",
        everyone_many="I announced to everyone that {s} ({n} times, last {when}).",
        c_told="I told {who} that {s}.",
        c_everyone="I announced to everyone that {s}.",
    ),
    "zh-Hant": _Templates(
        told_one="{when}我告訴了{who}{s}。",
        told_many="我告訴過{who}{s}（{n}次，最近一次是{when}）。",
        everyone_one="{when}我向大家宣布了{s}。",
        everyone_many="我向大家宣布過{s}（{n}次，最近一次是{when}）。",
        c_told="對{who}說：{s}",
        c_everyone="對大家說：{s}",
    ),
}


def _subject(raw: object, lang: str) -> str:
    """The subject as told: text, or (a subject given per language) the narrative's language,
    else English, else any other."""
    if isinstance(raw, Mapping):
        return text_in(encode_texts(raw), lang)
    return raw if isinstance(raw, str) else ""


def merge(entries: Sequence[Mapping[str, Any]]) -> list[OwnWords]:
    """Utterances (latest first, as recalled) merged per claim told (root and value): the
    listeners of every telling, in the order first told; the latest telling's subject."""
    by_claim: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for e in entries:
        key = (str(e["root"]), f"{type(e['value']).__name__}:{e['value']}")
        by_claim.setdefault(key, []).append(e)
    out = []
    for tellings in by_claim.values():
        latest, oldest = tellings[0], tellings[-1]
        to: dict[str, None] = {}
        for e in reversed(tellings):  # oldest first: "Kai and Lena", as they were told
            to.update(dict.fromkeys(e["to"]))
        out.append(
            OwnWords(
                root=str(latest["root"]),
                value=latest["value"],
                subject=latest["subject"],
                to=tuple(to),
                times=len(tellings),
                first_day=float(oldest["day"]),
                last_day=float(latest["day"]),
                everyone=any(e["everyone"] for e in tellings),
            )
        )
    return out


def said_beliefs(
    resident: str, entries: Sequence[Mapping[str, Any]]
) -> list[tuple[Belief, OwnWords]]:
    """Each claim told, with the belief-shaped record it is ranked by: certain (the resident
    knows what it said), as recent as its latest telling, about the people told."""
    # (built positionally, every other field its default: a long game's narrative ranks a
    # couple of hundred of these per reply)
    return [
        (
            new_belief(
                resident, said.root, said.value, _subject(said.subject, "en"), 100,
                State.INFLUENCING, SourceKind.FIRSTHAND, None, said.first_day, said.last_day,
                said.last_day, None, said.to, (), (), None, (), 0, (), None, (), (), None,
                0.0, None, None, 0,
            ),
            said,
        )
        for said in merge(entries)
    ]  # fmt: skip


def said_lines(said: OwnWords, words: Words, today: float) -> tuple[str, str]:
    """The full line ("I told Kai and Lena that the well is fine (yesterday).") and the
    compact one ("to Kai and Lena: the well is fine"), in ``words``' language."""
    from .phrasing import subject_text  # (phrasing calls this module: imported when used)

    t = _TEMPLATES.get(words.lang, _TEMPLATES["en"])
    raw = said.subject
    stored = encode_texts(raw) if isinstance(raw, Mapping) else raw if isinstance(raw, str) else ""
    # As every subject is embedded: its language, "I", no stray capital, a past event past.
    s = subject_text(stored, said.root, said.value, words, today=today)
    when = words.when(float(math.floor(said.last_day)), today)  # whole days
    who = words.who(said.to)
    if said.everyone:
        full = (t.everyone_one if said.times == 1 else t.everyone_many).format(
            s=s, when=when, n=said.times
        )
        return full, t.c_everyone.format(s=s)
    full = (t.told_one if said.times == 1 else t.told_many).format(
        s=s, who=who, when=when, n=said.times
    )
    return full, t.c_told.format(s=s, who=who)
