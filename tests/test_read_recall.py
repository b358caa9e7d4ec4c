"""The narrative's read stage: what it loads of a resident's beliefs, and what it leaves out."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sidecar.read.recall import recall
from sidecar.store import Reader
from tests.read_world import WORLD, build, crowd, intervene, observe, open_reader, say, story
from tools.graphpages import sqlite_steps

#: The fields of a belief the narrative classifies, ranks, words or sends.
_USED = (
    "resident", "root", "value", "subject", "confidence", "state", "source_kind",
    "source_resident_id", "people", "places", "topics", "heard_from", "formed_day",
    "updated_day", "last_evidence_day", "importance",
)  # fmt: skip


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    """A world where alice holds hearsay (so ``believes:`` roots), doubts, corrections."""
    return open_reader(build(tmp_path_factory.mktemp("recall") / "r.db", story() + crowd()))


def test_recall_reads_every_phrased_belief_and_no_believes_root(reader: Reader) -> None:
    """Every belief but ``believes:`` ones is recalled, in root order, and none of those."""
    stored = reader.beliefs(WORLD, "alice")
    assert any(b.root.startswith("believes:") for b in stored), "the story has none?"
    recalled = recall(reader, WORLD, "alice", "en").beliefs
    assert [b.root for b in recalled] == [
        b.root for b in stored if not b.root.startswith("believes:")
    ]


def test_recalled_beliefs_carry_what_the_narrative_uses(reader: Reader) -> None:
    """Each recalled belief equals the stored one in every field the narrative reads."""
    stored = {b.root: b for b in reader.beliefs(WORLD, "alice")}
    for b in recall(reader, WORLD, "alice", "en").beliefs:
        full = stored[b.root]
        assert [getattr(b, f) for f in _USED] == [getattr(full, f) for f in _USED], b.root


def test_recall_leaves_provenance_lists_unread(tmp_path: Path) -> None:
    """A belief seen many times is recalled without its evidence refs (they grow unbounded)."""
    events = [
        {"event_id": f"s{i}", "day": 1 + i, "kind": "observe", "witnesses": ["alice"],
         "claim": {"root": "well:water", "value": "clean"}, "subject": "the well is clean"}
        for i in range(50)
    ]  # fmt: skip
    reader = open_reader(build(tmp_path / "many.db", events))
    stored = reader.belief(WORLD, "alice", "well:water")
    assert stored is not None and stored.evidence_count == 50
    (recalled,) = recall(reader, WORLD, "alice", "en").beliefs
    assert recalled.evidence_refs == () and recalled.subject == stored.subject


def _trust_story(moves: int) -> list[dict[str, Any]]:
    """Bo lies to Kai about the well and Kai sees otherwise (a move with a reason), then the
    game sets Kai's trust in Bo ``moves`` times, in general and on one topic."""
    events: list[dict[str, Any]] = [
        say(1, "bo", ["kai"], "well:state", "poisoned", "the well is poisoned"),
        observe(2, ["kai"], "well:state", "fine", "the well is fine"),
    ]
    for i in range(moves):
        events.append(
            {"event_id": f"trust{i}", "day": 3 + i / 10, "kind": "trust", "resident": "kai",
             "source": "bo", "value": 0.3 + (i % 5) / 10, **({"topic": "well"} if i % 2 else {})}
        )  # fmt: skip
    return events


def test_trust_recall_reads_by_key_not_the_whole_history(tmp_path: Path) -> None:
    """A source whose trust moved thousands of times costs the narrative what one that moved
    a few dozen times costs: its first and latest days and the latest move with a reason are
    read by key (they equal what the whole history says)."""
    steps = {}
    for moves in (40, 2000):
        reader = open_reader(build(tmp_path / f"t{moves}.db", _trust_story(moves)))
        try:
            (record,) = recall(reader, WORLD, "kai", "en").trust
            history = sorted(
                (c for root in ("trust:bo", "trust:bo:well") for c in reader.history(WORLD, "kai", root)),
                key=lambda c: c.seq,
            )  # fmt: skip
            assert (record.first_day, record.last_day) == (history[0].day, history[-1].day)
            assert record.reason is not None and record.reason["change"] == "contradicted"
            assert record.reason["root"] == "well:state" and record.reason["day"] == 2
            assert {r["topic"] for r in record.rows} == {None, "well"}
            steps[moves] = sqlite_steps(reader, lambda: recall(reader, WORLD, "kai", "en"))  # noqa: B023
        finally:
            reader.close()
    assert steps[2000] < 1.5 * steps[40], steps


def _many_acts(seed: int, count: int) -> list[dict[str, Any]]:
    """A long game's chores: alice's and bo's acts (alice sees bo's), every status, some
    failures with a reason (plain or per language), and talk about an act and a player's
    implant of one (hearsay and implanted evidence on an ``action:`` root: no episodes)."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for i in range(count):
        status = rng.choice(("completed", "completed", "rejected", "interrupted", "replaced"))
        act: dict[str, Any] = {
            "event_id": f"act{seed}-{i}", "day": 1 + i / 10, "kind": "act",
            "actor": rng.choice(("alice", "bo")), "action": rng.choice(("fetch", "chop", "mend")),
            "status": status, "witnesses": ["alice"],
        }  # fmt: skip
        if status != "completed" and rng.random() < 0.5:
            act["reason"] = rng.choice(
                (f"the rope snapped {i}", {"en": f"it rained {i}", "zh-Hant": f"下雨了{i}"})
            )
        events.append(act)
        if i % 50 == 7:
            events.append(say(1 + i / 10, "cy", ["alice"], "action:bo:chop", "rejected",
                              "bo's chopping was refused"))  # fmt: skip
        if i % 100 == 42:  # a player's implant on an act: no episode either
            events.append(intervene(1 + i / 10, "alice", "implant", "action:bo:mend",
                                    "completed", "bo mended the fence"))  # fmt: skip
    return events


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_acts_history_is_counted_without_reading_every_episode(
    tmp_path: Path, seed: int
) -> None:
    """What each act comes to (counts per status in the order first seen, the first, latest,
    latest completed and latest failed episode) is the same counted in SQL from the log
    positions as summed up from every episode; the narrative is the same either way, and
    only the episodes a line names (at most four per act) are read from the log."""
    from sidecar.read import recall as recall_module
    from sidecar.read.narrative import project

    reader = open_reader(build(tmp_path / "acts.db", _many_acts(seed, 400)))
    assert reader.has_act_index()
    counted = recall_module.act_histories(reader, WORLD, "alice")
    every = recall_module.act_histories_by_episode(reader, WORLD, "alice")
    assert counted == every and list(counted) == list(every)
    assert sum(sum(h.counts.values()) for h in counted.values()) == 400  # the talk is no act
    assert any(h.last_failed is not None and h.last_failed.reason for h in counted.values())
    bodies: list[str] = []
    reader.conn.set_trace_callback(bodies.append)
    try:
        recall_module.act_histories(reader, WORLD, "alice")
    finally:
        reader.conn.set_trace_callback(None)
    (read,) = [s for s in bodies if "SELECT seq, body FROM events" in s]
    assert read.count(",") + 1 <= 4 * len(counted)
    texts = {}
    for by_episode in (False, True):
        fresh = open_reader(tmp_path / "acts.db")
        if by_episode:
            fresh._schema["index", "evidence_acts"] = False  # read as an unmigrated file
        texts[by_episode] = project(fresh, WORLD, "alice", budget=4000).to_dict()
        fresh.close()
    reader.close()
    assert texts[False] == texts[True]
    assert "acts" in {s["name"] for s in texts[False]["sections"] if s["entries"]}
