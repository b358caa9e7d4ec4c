"""``credence import`` and ``fork`` over the real command line: every malformed export file and
every world id outside the ``hello`` rule is one stderr line, exit status 2, and no database
(or data directory) is created (issue 17, defect 9)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from wsclient import guard

from sidecar.engine import DEFAULT_RULES, parse_event, rules_to_stored
from sidecar.store.export import MAX_EXPORT_LINE, export_lines

ROOT = Path(__file__).resolve().parents[1]

EVENTS = [
    {"event_id": "s1", "day": 1, "kind": "say", "speaker": "bo", "listeners": ["mira"],
     "claim": {"root": "well", "value": "dry"}, "subject": "dry"},
    {"event_id": "t1", "day": 30, "kind": "tick"},
]  # fmt: skip


def export_file(
    path: Path,
    header: Callable[[dict[str, Any]], Any] = lambda h: h,
    events: list[Any] | None = None,
) -> Path:
    """An export file, its header and event lines as given, with a checksum that matches (so
    the checks past the checksum are what is tested: a crafted, not a damaged, file)."""
    lines = list(export_lines("town", DEFAULT_RULES, [parse_event(e) for e in EVENTS]))
    head = header(orjson.loads(lines[0]))
    body = [orjson.dumps(head) + b"\n"]
    for event in EVENTS if events is None else events:
        body.append(event if isinstance(event, bytes) else orjson.dumps(event) + b"\n")
    footer = orjson.dumps({"sha256": hashlib.sha256(b"".join(body)).hexdigest()}) + b"\n"
    path.write_bytes(b"".join(body) + footer)
    return path


def credence(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``credence ARGS`` in ``cwd`` (as typed in a shell there: relative paths)."""
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], cwd=cwd, capture_output=True, text=True,
        timeout=guard(60), env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def refused(cwd: Path, *args: str) -> str:
    """Run ``credence ARGS`` in ``cwd``: exit 2, one stderr line, no new file; that line."""
    before = sorted(cwd.iterdir())
    done = credence(cwd, *args)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr[-2000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"credence {args[0]}: "), done.stderr[-2000:]
    assert sorted(cwd.iterdir()) == before, "a file was left behind"
    return lines[0]


def with_rules(**changes: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda h: {**h, "rules": {**rules_to_stored(DEFAULT_RULES), **changes}}


def without(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda h: {k: v for k, v in h.items() if k != key}


@pytest.mark.parametrize(
    ("header", "events", "message"),
    [
        (without("world"), None, "header world must be a string of 1 to 200 characters"),
        (lambda h: {**h, "world": ""}, None, "header world must be a string of 1 to 200"),
        (lambda h: {**h, "world": 123}, None, "not 123"),
        (lambda h: {**h, "world": "w" * 5000}, None, "header world must be a string of 1 to"),
        (without("rules"), None, "the header has no rules"),
        (with_rules(reinforce_step="8"), None,
         "header rules: reinforce_step must be an integer from 0 to 100, not str '8'"),
        (with_rules(doubt_step=[20]), None, "header rules: doubt_step must be an integer"),
        (with_rules(decay_step=0), None, "header rules: decay_step must be an integer from 1"),
        (with_rules(seed=2**63), None, "header rules: seed must be an integer from 0 to"),
        (with_rules(version="2"), None, "header rules: version must be a positive integer"),
        (lambda h: "header", None, "not a Credence world export"),
        (lambda h: {**h, "version": True}, None, "export version True is not supported"),
        (lambda h: {**h, "events": "2"}, None, "header says '2' events, file holds 2"),
        (lambda h: h, [{**EVENTS[0], "kind": "teleport"}, EVENTS[1]],
         "line 2: unknown event kind 'teleport'"),
        (lambda h: h, [EVENTS[0], {**EVENTS[1], "day": "30"}],
         "line 3: field 'day' must be a number of game days"),
        (lambda h: h, [EVENTS[0], b"{not json\n"], "line 3 is not JSON"),
        (lambda h: h, [EVENTS[0], EVENTS[0]], "line 3: event id 's1' is already on line 2"),
        (lambda h: h, [EVENTS[0], b'{"x": "' + b"y" * (MAX_EXPORT_LINE + 10) + b'"}\n'],
         f"line 3 is longer than {MAX_EXPORT_LINE} bytes"),
    ],
)  # fmt: skip
def test_a_malformed_import_file_is_one_line_exit_2_and_no_database(
    tmp_path: Path, header: Callable[[dict[str, Any]], Any], events: Any, message: str
) -> None:
    """A header without a world (or with "", 123 or 5,000 characters), rules a source may
    not hold, an unknown event kind, a string day, a line that is no JSON or longer than
    the bound: one line naming the file and what is wrong, exit 2, no database created."""
    export_file(tmp_path / "bad.credence", header, events)
    line = refused(tmp_path, "import", "bad.credence")
    assert message in line and "bad.credence" in line, line
    refused(tmp_path, "import", "bad.credence", "--data-dir", "worlds")


def test_a_20_mb_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    """A 20 MB single-line file (no checksum, no header) is one line, exit 2."""
    (tmp_path / "big.credence").write_bytes(b"x" * (20 * 2**20))
    line = refused(tmp_path, "import", "big.credence")
    assert f"line 1 is longer than {MAX_EXPORT_LINE} bytes" in line


@pytest.mark.parametrize("world", ["", "w" * 201, "w" * 5000])
def test_an_import_or_fork_id_outside_the_hello_rule_is_refused(tmp_path: Path, world: str) -> None:
    """``import --world`` and ``fork --into`` take only ids a hello can name (1-200
    characters): anything else is one line, exit 2, and nothing is created."""
    export_file(tmp_path / "ok.credence")
    line = refused(tmp_path, "import", "ok.credence", "--world", world)
    assert "--world must be a string of 1 to 200 characters" in line
    line = refused(tmp_path, "fork", "--world", "town", "--into", world)
    assert "--into must be a string of 1 to 200 characters" in line


def test_a_valid_crafted_file_imports(tmp_path: Path) -> None:
    """The crafted file these tests start from imports (so each refusal is the change made)."""
    export_file(tmp_path / "ok.credence")
    done = credence(tmp_path, "import", "ok.credence", "--db", "n.db")
    assert done.returncode == 0, done.stderr
    assert "imported 'town': 2 events replayed" in done.stdout


def test_a_data_dir_named_by_a_relative_path_is_listed(tmp_path: Path) -> None:
    """``--data-dir worlds`` (relative, as typed in a shell): the listing reads each world's
    file as an immutable file by its URI, which a relative path cannot be written as (a
    traceback, exit 1, before this was made absolute); twice, the second from the listing
    kept between runs."""
    export_file(tmp_path / "ok.credence")

    assert credence(tmp_path, "import", "ok.credence", "--data-dir", "worlds").returncode == 0
    for _ in range(2):
        done = credence(tmp_path, "worlds", "--data-dir", "worlds", "--json")
        assert done.returncode == 0, done.stderr
        assert [orjson.loads(line)["world"] for line in done.stdout.splitlines()] == ["town"]


def test_the_read_commands_read_a_world_of_a_data_dir_by_its_id(tmp_path: Path) -> None:
    """``log``, ``narrative``, ``beliefs``, ``explain`` and ``graph`` take ``--data-dir`` and
    the world id, and read the world's own file (whose name encodes the id: nobody should
    have to work it out); an unknown world, a missing directory, or both ``--db`` and
    ``--data-dir`` are one line, exit 2, nothing created."""
    world = "Mira's Town/1"
    export_file(tmp_path / "ok.credence")

    done = credence(tmp_path, "import", "ok.credence", "--data-dir", "worlds", "--world", world)
    assert done.returncode == 0, done.stderr
    at = ["--data-dir", "worlds", "--world", world]
    for args, shown in (
        (["log"], "s1"),
        (["narrative", "--resident", "mira"], "told me that dry"),
        (["beliefs", "--resident", "mira"], "well = 'dry'"),
        (["explain", "--resident", "mira", "--root", "well"], "now: 'dry'"),
        (["graph", "--format", "json"], '"claim:mira:well"'),
    ):
        done = credence(tmp_path, *args, *at)
        assert done.returncode == 0 and shown in done.stdout, (args, done.stdout, done.stderr)
    assert "no world 'town' in worlds" in refused(
        tmp_path, "log", "--data-dir", "worlds", "--world", "town"
    )
    assert "no directory at nowhere" in refused(
        tmp_path, "log", "--data-dir", "nowhere", "--world", world
    )
    both = refused(tmp_path, "log", "--data-dir", "worlds", "--db", "x.db", "--world", world)
    assert "not allowed with argument" in both


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fork", "--world", "town", "--into", "t2", "--at", "-5"],
         "argument --at: must be an integer from 0 to 9007199254740991, not -5"),
        (["fork", "--world", "town", "--into", "t2", "--at", "99999999999999999999999"],
         "argument --at: must be an integer from 0 to 9007199254740991"),
        (["narrative", "--world", "town", "--resident", "mira", "--budget", "5"],
         "argument --budget: must be an integer from 200 to 50000, not 5"),
        (["narrative", "--world", "town", "--resident", "mira", "--budget", "50001"],
         "argument --budget: must be an integer from 200 to 50000, not 50001"),
        (["beliefs", "--world", "town", "--resident", "mira", "--min-confidence", "nan"],
         "argument --min-confidence: must be an integer from 0 to 100, not nan"),
        (["graph", "--world", "town", "--format", "dot", "--out", "no/such/dir/g.dot"],
         "cannot write no/such/dir/g.dot: No such file or directory"),
    ],
)  # fmt: skip
def test_a_number_or_output_flag_out_of_range_is_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """fork --at, narrative --budget (200-50000, as the frame) and beliefs --min-confidence go
    through the same checks as a frame's fields; an output file that cannot be written is one
    line: exit 2, no traceback, nothing created."""
    export_file(tmp_path / "ok.credence")
    done = credence(tmp_path, "import", "ok.credence", "--db", "n.db")
    assert done.returncode == 0, done.stderr
    before = sorted(tmp_path.iterdir())
    done = credence(tmp_path, *args, "--db", "n.db")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr
    assert sorted(tmp_path.iterdir()) == before
