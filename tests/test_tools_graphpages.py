"""The graph-pages tool runs end to end over the wire and prints consistent figures."""

from __future__ import annotations

import re
import subprocess
import sys

NUMBER = r"(\d+(?:\.\d+)?)"


def test_quick_graphpages_prints_consistent_figures() -> None:
    """--quick walks every page of a 1,000-evidence belief and of a resident's graph over a
    real sidecar, times the first, middle and last full page (p50 <= p99, 100 event nodes
    each) and counts their SQLite steps; the ratio line agrees with the rows above it."""
    run = subprocess.run(
        [sys.executable, "-m", "tools.graphpages", "--quick", "--samples", "3"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^well:water +all +10 pages walked", out, re.M), out
    for name in ("well:water", "all of mira"):
        rows = {}
        for page in ("first", "middle", "last"):
            row = re.search(rf"^{name} +{page} +(\d+) +{NUMBER} +{NUMBER} +(\d+)$", out, re.M)
            assert row, f"no {page} row for {name}:\n{out}"
            events, p50, p99, steps = int(row[1]), float(row[2]), float(row[3]), int(row[4])
            assert events == 100 and 0 < p50 <= p99 and steps > 0
            rows[page] = (p50, steps)
        ratio = re.search(rf"^{name} +last/first: p50 {NUMBER}x, steps {NUMBER}x  (ok|MISSED)$",
                          out, re.M)  # fmt: skip
        assert ratio, out
        steps = rows["last"][1] / rows["first"][1]
        assert abs(float(ratio[2]) - steps) <= 0.01
        assert steps <= 1.5  # instruction counts are not noisy: a deep page reads no more
    whole = re.search(r"^well:water +the whole graph in one reply: (\d+) SQLite steps", out, re.M)
    assert whole and int(whole[1]) > 5 * rows_first_steps(out)


def rows_first_steps(out: str) -> int:
    """The SQLite steps of the first page of well:water."""
    row = re.search(rf"^well:water +first +\d+ +{NUMBER} +{NUMBER} +(\d+)$", out, re.M)
    assert row
    return int(row[3])
