"""Explain: one belief's evidence and history, as plain data and as a readable timeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from read_world import WORLD, build, open_reader, story

from sidecar.read import NotFound, explain, render_explain
from sidecar.store import Reader


@pytest.fixture(scope="module")
def village(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small story world."""
    return build(tmp_path_factory.mktemp("village") / "v.db", story())


@pytest.fixture(scope="module")
def reader(village: Path) -> Reader:
    """A reader on the village."""
    return open_reader(village)


def _plain(value: Any) -> bool:
    """Only what JSON and msgpack carry alike: str keys, no tuples, enums or other objects."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def test_explain_data(reader: Reader) -> None:
    """The belief, its evidence (oldest first) and its full history, all plain values."""
    data = explain(reader, WORLD, "alice", "well:water")
    assert _plain(data)
    assert data["belief"]["state"] == "corrected" and data["belief"]["value"] == "clean"
    relations = [
        (e["event_kind"], e["source_kind"], e["source"], e["relation"]) for e in data["evidence"]
    ]
    assert relations == [
        ("say", "hearsay", "bob", "forms"),
        ("observe", "firsthand", None, "contradicts"),
        ("observe", "firsthand", None, "contradicts"),
    ]
    assert [c["change"] for c in data["history"]] == ["formed", "doubted", "corrected"]
    last = data["history"][-1]
    assert (last["prev_value"], last["value"], last["prev_confidence"]) == ("poisoned", "clean", 38)
    assert all({"event_id", "day"} <= set(e) for e in data["evidence"])


def test_render_timeline(reader: Reader) -> None:
    """The timeline shows day, source kind, what happened, relation and the effect."""
    text = render_explain(explain(reader, WORLD, "alice", "well:water"))
    lines = text.splitlines()
    assert lines[0] == "alice on well:water"
    assert "corrected" in lines[1] and "confidence 72" in lines[1]
    assert any(
        ln.startswith("day 1 ") and "hearsay" in ln and "bob said: the well water is poisoned" in ln
        and "(forms)" in ln and "→ formed 58" in ln
        for ln in lines
    )  # fmt: skip
    assert any(
        ln.startswith("day 3 ") and "firsthand" in ln and "saw: the well water is clean" in ln
        and "(contradicts)" in ln and "→ doubted 58→38" in ln
        for ln in lines
    )  # fmt: skip
    assert any("→ corrected 38→72 [doubtful→corrected]" in ln for ln in lines)


def test_render_aging_and_interventions(reader: Reader) -> None:
    """Aging steps appear as time passing; interventions are shown to people for what they are."""
    aged = render_explain(explain(reader, WORLD, "alice", "fair:date"))
    assert "time passed  → decayed 58→50" in aged and "→ faded 42→34 [influencing→past]" in aged
    ring = render_explain(explain(reader, WORLD, "alice", "ring:owner"))
    assert "intervention (implant): dave owns the silver ring" in ring
    assert "→ anomaly 65→35 [influencing→anomalous]" in ring


def test_repeated_source_is_shown_without_effect(tmp_path: Path) -> None:
    """Evidence that changed nothing (a source repeating itself) still appears in the timeline."""
    from read_world import say

    db = build(tmp_path / "r.db", [
        say(1, "bob", ["alice"], "pie:taste", "good", "the pie is good"),
        say(2, "bob", ["alice"], "pie:taste", "good", "the pie is good"),
    ])  # fmt: skip
    data = explain(open_reader(db), WORLD, "alice", "pie:taste")
    assert len(data["evidence"]) == 2 and len(data["history"]) == 1
    assert "→ no change (same source again)" in render_explain(data)


def test_explain_not_found(reader: Reader) -> None:
    """An unknown resident or a root the resident holds no belief on is NotFound."""
    with pytest.raises(NotFound):
        explain(reader, WORLD, "nobody", "well:water")
    with pytest.raises(NotFound):
        explain(reader, WORLD, "alice", "no:such:root")


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, timeout=60
    )


def test_cli_explain(village: Path) -> None:
    """`credence explain` prints the timeline, or JSON with --json; an unknown root exits 2."""
    base = ["explain", "--db", str(village), "--world", WORLD, "--resident", "alice"]
    out = _cli(*base, "--root", "well:water")
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().startswith("alice on well:water")
    js = _cli(*base, "--root", "well:water", "--json")
    assert json.loads(js.stdout)["history"][-1]["change"] == "corrected"
    missing = _cli(*base, "--root", "nope")
    assert missing.returncode == 2 and "holds no belief on 'nope'" in missing.stderr.decode()


def test_cli_explain_names_registered_residents(tmp_path: Path) -> None:
    """`credence explain` on the demo town reads "Old Tom announced", never the raw id."""
    db = tmp_path / "demo.db"
    assert _cli("demo", "--db", str(db)).returncode == 0
    base = ["explain", "--db", str(db), "--world", "demo-town", "--resident", "kai"]
    out = _cli(*base, "--root", "water:well")
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert text.startswith("Kai (kai) on water:well")
    assert (
        "hearsay from Bo" in text and "Old Tom announced:" in text and "tom announced" not in text
    )
    names = json.loads(_cli(*base, "--root", "water:well", "--json").stdout)["names"]
    assert names == {"bo": "Bo", "kai": "Kai", "tom": "Old Tom"}
