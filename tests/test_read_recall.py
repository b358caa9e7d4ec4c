"""The narrative's read stage: what it loads of a resident's beliefs, and what it leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.read.recall import recall
from sidecar.store import Reader
from tests.read_world import WORLD, build, crowd, open_reader, story

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
    assert stored is not None and len(stored.evidence_refs) == 50
    (recalled,) = recall(reader, WORLD, "alice", "en").beliefs
    assert recalled.evidence_refs == () and recalled.subject == stored.subject
