"""``tools.said_figures`` runs end to end at a small size and prints its figures."""

from __future__ import annotations

import pytest

from tools import said_figures


def test_prints_page_timings_plan_and_row_size(capsys: pytest.CaptureFixture[str]) -> None:
    """At 300 things said: a line per query, the primary-key plan, a full page walk."""
    assert said_figures.main(["--said", "300", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "300 things said by mira" in out and "said page @end" in out
    assert "SEARCH s USING PRIMARY KEY (world=? AND speaker=? AND seq>?)" in out
    assert "3 pages, 300 entries" in out


def test_refuses_sizes_it_cannot_measure() -> None:
    """Fewer than 200 things said (no page at the end) or no rounds is a usage error."""
    with pytest.raises(SystemExit):
        said_figures.main(["--said", "10"])
