"""The query benchmark runs end to end over the wire and prints consistent figures."""

from __future__ import annotations

import re
import subprocess
import sys

from protocol import MAX_OUTBOUND

NUMBER = r"(\d+(?:\.\d+)?)"


def test_quick_querybench_prints_consistent_figures() -> None:
    """--quick builds both worlds, times every query over a real sidecar and prints, per
    query, p50 ≤ p99 at each size and the growth p50@large / p50@small; the largest replies
    come in parts whose frames are under the limit."""
    run = subprocess.run(
        [sys.executable, "-m", "tools.querybench", "--quick", "--samples", "5"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    worlds = re.findall(rf"world (\d+): {NUMBER} beliefs of mira, {NUMBER} refs", out)
    assert [w[0] for w in worlds] == ["200", "2000"]
    for size, beliefs, refs in worlds:
        assert 0.8 * int(size) <= float(beliefs) <= 1.25 * int(size)
        assert float(refs) == 1000
    for name in (
        "narrative",
        "narrative, focused",
        "beliefs page",
        "explain page",
        "distribution",
        "graph page",
    ):
        row = re.search(
            rf"^{name} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}x +(\d+)  (ok|MISSED)$",
            out,
            re.M,
        )
        assert row, f"no row for {name}:\n{out}"
        p50a, p99a, p50b, p99b, growth = (float(x) for x in row.groups()[:5])
        assert 0 < p50a <= p99a and 0 < p50b <= p99b
        assert abs(growth - p50b / p50a) <= 0.01 + 0.01 * growth
        assert int(row[6]) >= 1
        assert row[7] == ("ok" if p99b <= 50 and growth <= 10 else "MISSED")
    big = re.search(rf"^narrative 50k zh-Hant +{NUMBER} +{NUMBER} +(\d+)  once; "
                    r"largest frame (\d+) bytes$", out, re.M)  # fmt: skip
    assert big, out
    assert int(big[3]) > 1 and 0 < int(big[4]) <= MAX_OUTBOUND
    every = re.search(rf"^explain, every ref +{NUMBER} +{NUMBER} +(\d+)  once", out, re.M)
    assert every and int(every[3]) > 1
    # the narrative across budgets: a row per focus and language, p50 <= slowest per budget
    from tools.querybench import SWEEP, SWEEP_BUDGETS

    for name in ("narrative en", "narrative zh-Hant", "focused en", "focused zh-Hant"):
        row = re.search(rf"^{name} +((?:{NUMBER} +/ *{NUMBER} *)+)$", out, re.M)
        assert row, f"no sweep row for {name}:\n{out}"
        cells = re.findall(rf"{NUMBER} +/ *{NUMBER}", row[1])
        assert len(cells) == len(SWEEP_BUDGETS)
        for p50, slowest in cells:
            assert 0 < float(p50) <= float(slowest) + 1  # (the slowest printed whole)
    swept = re.search(r"^sweep: (\d+) of (\d+) budgets had a sample over 50 ms$", out, re.M)
    assert swept and int(swept[1]) <= int(swept[2]) == len(SWEEP), out
