"""``python -m tools.acts_at_size``: its figures add up at a small size."""

from __future__ import annotations

import re

import pytest

from tools import acts_at_size


def test_acts_at_size_counts_every_episode_kai_saw(capsys: pytest.CaptureFixture[str]) -> None:
    """Kai saw every chore Bo did: as many episodes as chores, one act per kind of chore
    done, and both reads of them (which the tool checks agree) and both narratives timed."""
    assert acts_at_size.main(["--days", "4", "--chores", "7", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"Bo did (\d+) chores over 4 days.*?(\d+) acts, (\d+) episodes", out)
    assert found is not None, out
    assert found.groups() == ("28", str(len(acts_at_size.CHORES)), "28")
    for line in (
        "counted on the index",
        "from every episode",
        "narrative of kai",
        "narrative of bo",
    ):
        assert re.search(line + r".*p50 +\d+\.\d+ +p99 +\d+\.\d+ ms", out), out


def test_acts_at_size_refuses_an_empty_year() -> None:
    with pytest.raises(SystemExit) as exc:
        acts_at_size.main(["--days", "0"])
    assert exc.value.code == 2
