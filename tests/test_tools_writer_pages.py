"""``python -m tools.writer_pages``: the pages each commit writes add up, and do not vary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.writer_pages import main, measure, wal_pages


def test_every_commits_pages_are_counted_once_by_kind_and_b_tree(tmp_path: Path) -> None:
    """Each measured event is one commit: it appends its log row (the ``events`` B-tree) and
    moves the world's counters (``worlds``), so both show on every commit; each kind's pages
    are the sum of its B-trees'; the kinds add up to ``all``; and the same events give the
    same pages (what makes the figure steady where time is not)."""
    kinds, page_size = measure(60, 200, tmp_path / "a.db")
    again, _ = measure(60, 200, tmp_path / "b.db")
    assert page_size >= 512
    every = kinds.pop("all")
    assert every.events == 60 == sum(k.events for k in kinds.values())
    assert every.pages == sum(k.pages for k in kinds.values()) > 0
    assert every.most == max(k.most for k in kinds.values())
    for kind in [*kinds.values(), every]:
        assert sum(kind.by_tree.values()) == kind.pages
        assert kind.by_tree["events"] >= kind.events
        assert kind.by_tree["worlds"] == kind.events
    assert {"observe", "say"} <= set(kinds)
    assert kinds["say"].by_tree["evidence_by_seq"] > 0  # a hearer's evidence, by belief
    assert "evidence_by_belief" not in every.by_tree  # (dropped by migration 0025)
    assert {k: (v.pages, dict(v.by_tree)) for k, v in again.items()} == {
        **{k: (v.pages, dict(v.by_tree)) for k, v in kinds.items()},
        "all": (every.pages, dict(every.by_tree)),
    }


def test_a_missing_or_empty_wal_has_no_pages(tmp_path: Path) -> None:
    assert wal_pages(tmp_path / "none-wal") == []
    (tmp_path / "empty-wal").write_bytes(b"")
    assert wal_pages(tmp_path / "empty-wal") == []


def test_the_tool_prints_a_row_per_kind_and_refuses_no_events(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--events", "20", "--warm", "40"]) == 0
    out = capsys.readouterr().out
    assert "bench events 41-60" in out
    rows = [line.split()[0] for line in out.splitlines()[2:]]
    assert rows[-1] == "all" and len(rows) >= 2
    with pytest.raises(SystemExit):
        main(["--events", "0"])
