"""The long-game soak tool: it plays its town end to end and prints consistent figures."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tools.longgame import (
    GROWING_KINDS,
    QUERY_KINDS,
    TARGET_GROWTH,
    SoakConfig,
    register_frame,
)
from tools.town import Town

NUMBER = r"(-?\d+(?:\.\d+)?)"


def test_register_names_every_resident_once() -> None:
    """The soak's register event names each of the town's residents, in English, once."""
    town = Town(50, seed=1)
    frame = register_frame(town)
    named = [r["resident"] for r in frame["residents"]]
    assert named == town.residents
    names = [r["names"]["en"] for r in frame["residents"]]
    assert len(set(names)) == len(names) and names[0] == "Mira"


def test_quick_soak_prints_consistent_figures() -> None:
    """python -m tools.longgame --quick: each checkpoint's events add up to the log, nothing is
    refused, sizes and memory are positive, percentiles ordered, rebuild matches, every query
    kind has its samples and no error, and each printed ratio is its two p99s' quotient (the
    ``trust table``, which grows with the table, labelled so instead of judged)."""
    config = SoakConfig.quick_config()
    config.repeats = 3  # (--repeats: every kind has sample × repeats samples)
    done = subprocess.run(
        [sys.executable, "-m", "tools.longgame", "--quick", "--repeats", "3"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Traceback" not in done.stderr
    blocks = re.split(r"\n(?=day \d)", out)
    header, checkpoints, tail = blocks[0], blocks[1:], ""
    checkpoints[-1], _, tail = checkpoints[-1].partition("\np99 at day")
    assert f"{config.residents} residents" in header
    assert len(checkpoints) == len(config.checkpoints)

    total = 1  # the register event that names the residents
    p99s: list[dict[str, float]] = []
    db_sizes: list[float] = []
    for block, day in zip(checkpoints, config.checkpoints, strict=True):
        assert block.startswith(f"day {day:g}\n"), block
        (events,) = figure(block, rf"events in the log\s+{NUMBER}")
        acked, sent, seconds = figure(
            block, rf"events since last\s+{NUMBER} acked of {NUMBER} in {NUMBER} s \(none refused\)"
        )
        assert acked == sent > 0 and seconds > 0
        total += int(acked)
        assert events == total
        (db,) = figure(block, rf"database \(file \+ WAL\)\s+{NUMBER} MiB")
        db_sizes.append(db)
        rss, peak = figure(block, rf"sidecar RSS\s+{NUMBER} MiB \(peak {NUMBER} MiB\)")
        assert 0 < rss <= peak
        p50, p99 = figure(block, rf"ack p50 / p99\s+{NUMBER} / {NUMBER} ms")
        assert 0 < p50 <= p99
        (rebuild,) = figure(block, rf"rebuild --check\s+{NUMBER} s \(matches\)")
        assert rebuild > 0
        (asked,) = figure(block, rf"\(all took {NUMBER} s\)")
        assert asked > 0
        row: dict[str, float] = {}
        for kind in QUERY_KINDS:
            q50, q99, n, late = figure(
                block, rf"\n  {kind}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\n"
            )
            assert 0 < q50 <= q99, kind
            assert n == config.sample * config.repeats and late == 0, kind
            row[kind] = q99
        p99s.append(row)
        (beliefs,) = figure(block, rf"most beliefs in the sample\s+{NUMBER}")
        assert beliefs > 0
        assert re.search(r"query errors\s+none\n?$", block), block
    assert db_sizes == sorted(db_sizes) and db_sizes[0] > 0

    first, last = config.checkpoints[0], config.checkpoints[-1]
    assert tail.startswith(f" {last:g} / day {first:g} (goal ≤ {TARGET_GROWTH:g})")
    for kind in QUERY_KINDS:
        a, b, ratio = figure(tail, rf"\n  {kind}\s+{NUMBER} →\s+{NUMBER} ms  ratio\s+{NUMBER}  ")
        assert a == pytest.approx(p99s[0][kind], abs=0.006)
        assert b == pytest.approx(p99s[-1][kind], abs=0.006)
        # (a and b are printed to 0.01 ms: each may be 0.005 off, so b / a may be that much
        # of each off too, and the ratio is printed to 0.01)
        assert ratio == pytest.approx(b / a, abs=0.006 + ratio * (0.005 / a + 0.005 / b))
        verdict = (
            r"grows with the table \(not a page" if kind in GROWING_KINDS
            else "ok" if ratio <= TARGET_GROWTH
            else "missed"
        )  # fmt: skip
        assert re.search(rf"\n  {kind}\s.*ratio\s+{NUMBER}  {verdict}", tail), kind
    assert re.search(r"\(longgame took \d+ s\)", tail)


def figure(text: str, pattern: str) -> list[float]:
    """The numbers captured by ``pattern`` (one match required) in ``text``."""
    found = re.search(pattern, text)
    assert found, f"no match for {pattern!r} in:\n{text}"
    return [float(x) for x in found.groups()]
