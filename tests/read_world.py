"""Shared builders for the read-side tests: real SQLite worlds written by the real Writer."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sidecar.engine import parse_event
from sidecar.engine.rules import Rules
from sidecar.store import Reader, ResultStatus, Writer

WORLD = "w"
_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}{next(_ids)}"


def observe(
    day: float, witnesses: list[str], root: str, value: Any, subject: str, **extra: Any
) -> dict[str, Any]:
    """An observation event seen by ``witnesses``."""
    return {"event_id": _id("o"), "day": day, "kind": "observe", "witnesses": witnesses,
            "claim": {"root": root, "value": value}, "subject": subject, **extra}  # fmt: skip


def say(
    day: float,
    speaker: str,
    listeners: list[str],
    root: str,
    value: Any,
    subject: str,
    **extra: Any,
) -> dict[str, Any]:
    """An utterance: hearsay for each listener, with the speaker as source."""
    return {"event_id": _id("s"), "day": day, "kind": "say", "speaker": speaker,
            "listeners": listeners, "claim": {"root": root, "value": value}, "subject": subject,
            **extra}  # fmt: skip


def intervene(
    day: float, resident: str, op: str, root: str, value: Any = None, subject: str | None = None
) -> dict[str, Any]:
    """A player intervention on one resident's belief."""
    claim: dict[str, Any] = {"root": root}
    if value is not None:
        claim["value"] = value
    event = {
        "event_id": _id("i"),
        "day": day,
        "kind": "intervene",
        "resident": resident,
        "op": op,
        "claim": claim,
    }
    if subject is not None:
        event["subject"] = subject
    return event


#: The read-side stories are written section by section, not in date order (a section may
#: go back to day 1 after a day-30 tick), so their world accepts late events: this many days.
LATE_EVENT_DAYS = 60.0


def build(path: Path, events: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``events`` into a fresh database at ``path`` and check every one applied."""
    writer = Writer(path, rules=Rules(late_event_days=LATE_EVENT_DAYS), synchronous="OFF")
    try:
        batch = [(WORLD, parse_event(e)) for e in events]
        for start in range(0, len(batch), 500):
            results = writer.apply(batch[start : start + 500])
            bad = [r for r in results if r.status is not ResultStatus.APPLIED]
            assert not bad, bad
    finally:
        writer.close()
    return path


def open_reader(path: Path) -> Reader:
    return Reader(path)


def story() -> list[dict[str, Any]]:
    """A small village: every section of a narrative gets at least one belief for alice."""
    return [
        # sure / think: firsthand, reinforced to 86 and plain 78
        observe(1, ["alice"], "key:where", "counter", "the key is on the counter", places=["cafe"]),
        observe(2, ["alice"], "key:where", "counter", "the key is on the counter", places=["cafe"]),
        observe(1, ["alice"], "door:cafe", "closed", "the café door is closed", places=["cafe"]),
        # faded: hearsay that ages past (three 7-day steps take 58 down to 34)
        say(1, "frank", ["alice"], "fair:date", "spring", "the fair is in spring"),
        {"event_id": _id("t"), "day": 30, "kind": "tick"},
        # told: hearsay from bob and gina, never seen
        say(30, "bob", ["alice"], "mayor:mood", "angry", "the mayor is angry"),
        say(30, "gina", ["alice"], "mayor:mood", "angry", "the mayor is angry"),
        # doubt: hearsay contradicted by hearsay from carol
        say(2, "bob", ["alice"], "bridge:state", "broken", "the bridge is broken"),
        say(3, "carol", ["alice"], "bridge:state", "fixed", "the bridge was fixed"),
        # correction: hearsay, doubted by a firsthand look, corrected by a second one
        say(1, "bob", ["alice"], "well:water", "poisoned", "the well water is poisoned"),
        observe(3, ["alice"], "well:water", "clean", "the well water is clean"),
        observe(4, ["alice"], "well:water", "clean", "the well water is clean"),
        # anomaly: implanted, then contradicted by what she saw
        intervene(4, "alice", "implant", "ring:owner", "dave", "dave owns the silver ring"),
        observe(5, ["alice"], "ring:owner", "erin", "erin owns the silver ring"),
        # implanted, untouched
        intervene(5, "alice", "implant", "cellar:contents", "gold", "there is gold in the cellar"),
        # people
        observe(
            5, ["alice"], "relation:bob:alice", "friend", "bob is a good friend", people=["bob"]
        ),
        say(
            31,
            "carol",
            ["alice"],
            "relation:dave:alice",
            "rival",
            "dave resents me",
            people=["dave"],
        ),
    ]


PLACES = ("cafe", "market", "inn", "mill", "forge", "chapel", "dock", "farm")


def crowd(resident: str = "alice", *, subject_pad: str = "") -> list[dict[str, Any]]:
    """About 400 beliefs for one resident: every kind, most of them about a few places.

    12 doubts, 8 corrections and 5 anomalies are the protected ones a budget must keep;
    ``subject_pad`` lengthens their subjects to force shortening.
    """
    events: list[dict[str, Any]] = []
    for i in range(5):  # faded: heard on day 0, aged past by the day-30 tick
        events.append(say(0, "frank", [resident], f"old{i}:news", "yes", f"old news number {i}"))
    events.append({"event_id": _id("t"), "day": 30, "kind": "tick"})
    for i in range(300):
        place = PLACES[i % len(PLACES)]
        events.append(observe(31 + i / 10, [resident], f"item{i}:where", place,
                              f"item {i} lies at the {place}", places=[place]))  # fmt: skip
        if i % 7 == 0:  # reinforced: the confident ones
            events.append(observe(32 + i / 10, [resident], f"item{i}:where", place,
                                  f"item {i} lies at the {place}", places=[place]))  # fmt: skip
    for i in range(60):
        speaker = ("bob", "carol")[i % 2]
        place = PLACES[i % 3]
        events.append(say(40 + i / 10, speaker, [resident], f"rumour{i}:true", True,
                          f"rumour {i} about the {place} is true", places=[place]))  # fmt: skip
    for i in range(10):
        other = f"villager{i}"
        events.append(observe(45, [resident], f"relation:{other}:{resident}", "friendly",
                              f"{other} is friendly to me", people=[other]))  # fmt: skip
    for i in range(12):
        root, place = f"doubt{i}:state", PLACES[i % 2]
        events.append(say(50, "bob", [resident], root, "broken",
                          f"the thing {i} is broken{subject_pad}", places=[place]))  # fmt: skip
        events.append(say(51, "carol", [resident], root, "fine",
                          f"the thing {i} is fine{subject_pad}", places=[place]))  # fmt: skip
    for i in range(8):
        root = f"fix{i}:state"
        events.append(
            say(52, "bob", [resident], root, "poisoned", f"well {i} is poisoned{subject_pad}")
        )
        events.append(observe(53, [resident], root, "clean", f"well {i} is clean{subject_pad}"))
        events.append(observe(54, [resident], root, "clean", f"well {i} is clean{subject_pad}"))
    for i in range(5):
        root = f"odd{i}:owner"
        events.append(
            intervene(55, resident, "implant", root, "dave", f"dave owns relic {i}{subject_pad}")
        )
        events.append(observe(56, [resident], root, "erin", f"erin owns relic {i}{subject_pad}"))
    return events


def zh_story() -> list[dict[str, Any]]:
    """A small world with Traditional Chinese subjects, for the zh-Hant example."""
    return [
        observe(1, ["阿美"], "key:where", "counter", "鑰匙在櫃檯上", places=["咖啡館"]),
        observe(2, ["阿美"], "key:where", "counter", "鑰匙在櫃檯上", places=["咖啡館"]),
        observe(1, ["阿美"], "door:cafe", "closed", "咖啡館的門關著", places=["咖啡館"]),
        say(2, "阿明", ["阿美"], "mayor:mood", "angry", "鎮長在生氣"),
        say(2, "阿明", ["阿美"], "bridge:state", "broken", "橋斷了"),
        say(3, "小芳", ["阿美"], "bridge:state", "fixed", "橋已經修好了"),
        say(1, "阿明", ["阿美"], "well:water", "poisoned", "井水有毒"),
        observe(3, ["阿美"], "well:water", "clean", "井水是乾淨的"),
        observe(4, ["阿美"], "well:water", "clean", "井水是乾淨的"),
        intervene(4, "阿美", "implant", "ring:owner", "dave", "銀戒指是大衛的"),
        observe(5, ["阿美"], "ring:owner", "erin", "銀戒指是艾琳的"),
        observe(5, ["阿美"], "relation:阿明:阿美", "friend", "阿明是我的好朋友", people=["阿明"]),
        say(
            5, "小芳", ["阿美"], "relation:大衛:阿美", "rival", "大衛對我懷恨在心", people=["大衛"]
        ),
    ]
