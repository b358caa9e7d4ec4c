"""``credence log`` as a real subprocess: a world's events with seq, day and kind, paged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.commands.log import day_text
from sidecar.engine import parse_event
from sidecar.store import Writer


def credence(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A world of 250 events, one a quarter day apart, through the real writer."""
    path = tmp_path / "log.db"
    writer = Writer(path)
    for n in range(1, 251):
        event = {
            "event_id": f"e-{n}", "day": n / 4, "kind": "say", "speaker": "bo",
            "listeners": ["mira"], "claim": {"root": f"rumour:{n}", "value": n},
            "subject": f"rumour number {n}",
        }  # fmt: skip
        writer.apply([("town", parse_event(event))])
    writer.close()
    return path


def test_log_lists_seq_day_kind_and_id_and_says_how_to_go_on(db: Path) -> None:
    """Text lines carry seq, a readable day, kind, id, speaker and subject; a hint names --from."""
    done = credence("log", "--db", str(db), "--world", "town", "--from", "9", "--limit", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["seq", "day", "kind", "event"]
    assert lines[1].split() == [
        "9",
        "day",
        "2",
        "06:00",
        "say",
        "e-9",
        "bo",
        "rumour",
        "number",
        "9",
    ]
    assert lines[3].split()[:3] == ["11", "day", "2"] and "18:00" in lines[3]
    assert lines[-1] == "(239 more: credence log --world town --from 12)"
    assert len(lines) == 5


def test_log_json_pages_exactly_and_is_bounded(db: Path) -> None:
    """--json gives the events reply's fields; following next visits every event once."""
    seqs: list[int] = []
    start: int | None = 1
    while start is not None:
        done = credence("log", "--db", str(db), "--world", "town", "--json",
                        "--from", str(start), "--limit", "100")  # fmt: skip
        assert done.returncode == 0, done.stderr
        page = json.loads(done.stdout)
        assert len(page["events"]) <= 100 and page["last"] == 250
        seqs += [e["seq"] for e in page["events"]]
        start = page["next"]
    assert seqs == list(range(1, 251))
    default = json.loads(credence("log", "--db", str(db), "--world", "town", "--json").stdout)
    assert len(default["events"]) == 100 and default["events"][0] == {
        "seq": 1, "event_id": "e-1", "day": 0.25, "kind": "say", "by": "bo",
        "subject": "rumour number 1",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--from", "0"], "--from: must be an integer from 1 to 9007199254740991, not 0"),
        (["--limit", "1001"], "--limit: must be an integer from 1 to 1000, not 1001"),
        (["--limit", "x"], "--limit: must be an integer from 1 to 1000, not 'x'"),
        (["--world", "nowhere"], "no world 'nowhere'"),
    ],
)
def test_log_refuses_bad_input_with_one_line_and_exit_2(
    db: Path, args: list[str], needle: str
) -> None:
    """A bad --from/--limit or an unknown world is exit 2 with a line saying which."""
    base = ["log", "--db", str(db)] + ([] if "--world" in args else ["--world", "town"])
    done = credence(*base, *args)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr


def test_day_text_reads_whole_and_fractional_days() -> None:
    """Whole days read 'day N'; a fraction reads as the time of day, never 25.3093…"""
    assert day_text(25.0) == "day 25"
    assert day_text(25.3093) == "day 25 07:25"
    assert day_text(0.5) == "day 0 12:00"
    assert day_text(3.99999) == "day 4"
