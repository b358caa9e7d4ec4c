"""One rules validation for every source (issue 17, defect 7): a rules table (a rules file, a
config's inline rules), an import header, a command-line flag and the rules stored with a world
all go through each field's one check, agree on every value, and whatever they accept the
writer can apply: every event is applied or refused with a documented code, never a failure.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sidecar.config import ConfigError, load_rules
from sidecar.engine import (
    DEFAULT_RULES,
    Bound,
    EngineError,
    Rules,
    RulesError,
    parse_event,
    rule_check,
    rules_from_mapping,
    rules_from_stored,
    rules_to_stored,
    rules_with,
)
from sidecar.store import ResultStatus, WorldRulesInvalid, Writer

FIELDS = [f.name for f in dataclasses.fields(Rules)]
NUMBERS = [name for name in FIELDS if isinstance(rule_check(name), Bound)]
#: Examples of the hypothesis test (more with CREDENCE_FUZZ_FRAMES set, as .ci/run does).
EXAMPLES = 400 if os.environ.get("CREDENCE_FUZZ_FRAMES") else 100

#: The values that broke a source before (issue 17) and the edges of every range.
EDGES: list[Any] = [
    0, 1, -1, 2, 7, 8, 30, 99, 100, 101, 1000, 1001, 2**31, 2**53 - 1, 2**53, 2**63, 2**64,
    18446744073709551616, -(2**63), 0.0, -0.0, 0.5, 1.0, 1.5, 7.5, 1e-300, 1e-3, 1e12, 1e13,
    1e300, math.inf, -math.inf, math.nan, "8", "", "0.5", [20], [], ["location:"], [""],
    {"a": 1}, True, False, None,
]  # fmt: skip


@st.composite
def field_value(draw: st.DrawFn) -> tuple[str, Any]:
    """One rule and a value for it: an edge, anything JSON holds, or one inside its range."""
    name = draw(st.sampled_from(FIELDS))
    check = rule_check(name)
    inside: st.SearchStrategy[Any]
    if isinstance(check, Bound) and check.kind is int:
        inside = st.integers(int(check.low), int(check.high))
    elif isinstance(check, Bound):
        inside = st.floats(check.low, check.high)
    else:
        inside = st.lists(st.text(min_size=1, max_size=8), max_size=3)
    anything = st.one_of(
        st.integers(), st.floats(), st.text(max_size=12), st.booleans(), st.none(),
        st.lists(st.integers(0, 100), max_size=2),
    )  # fmt: skip
    return name, draw(st.one_of(st.sampled_from(EDGES), anything, inside, inside))


def outcome(make: Any) -> Rules | str:
    """The rules a source made, or the one line it refused them with."""
    try:
        rules: Rules = make()
    except (RulesError, ConfigError) as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 400, message
        return "refused"
    return rules


def from_flag(name: str, value: Any) -> Rules:
    """As ``credence serve --seed TEXT`` does: the field's bound parses the text."""
    check = rule_check(name)
    assert isinstance(check, Bound)
    try:
        parsed = check.parse(str(value))
    except ValueError as exc:
        raise RulesError(f"--flag: {name} {exc}") from None
    return rules_with(DEFAULT_RULES, "--flag", **{name: parsed})


def store_rules(db: Path, world: str, name: str, value: Any) -> None:
    """Store ``world`` with one rule changed in its row, as a damaged or hand-edited database
    would hold it (the table's CHECK only asks for valid JSON)."""
    body = {**rules_to_stored(DEFAULT_RULES), name: value}
    conn = sqlite3.connect(db)
    with conn:
        text = json.dumps(body)  # (stdlib: writes integers past 2^64, as a damaged file may)
        conn.execute("INSERT INTO worlds (world, rules) VALUES (?, ?)", (world, text))
    conn.close()


def opens(writer: Writer, world: str) -> bool:
    """Whether the writer opens ``world`` (a tick applies), or it refuses it (its rules)."""
    event = parse_event({"event_id": "t0", "kind": "tick", "day": 0})
    (result,) = writer.apply([(world, event)])
    assert result.error is None or isinstance(result.error, WorldRulesInvalid), result.error
    return result.error is None


STORY = [
    {"kind": "observe", "witnesses": ["mira"], "claim": {"root": "well", "value": "dry"},
     "subject": "dry", "importance": 5, "emotion": 1e6},
    {"kind": "say", "speaker": "bo", "listeners": ["mira", "ann"],
     "claim": {"root": "mill", "value": "shut"}, "subject": "shut", "overhearers": ["cai"]},
    {"kind": "say", "speaker": "cai", "listeners": ["ann"],
     "claim": {"root": "mill", "value": "shut"}, "subject": "shut"},
    {"kind": "observe", "witnesses": ["mira"], "claim": {"root": "well", "value": "wet"},
     "subject": "wet"},
    {"kind": "intervene", "resident": "ann", "op": "implant",
     "claim": {"root": "door", "value": "open"}, "subject": "open"},
    {"kind": "observe", "witnesses": ["ann"], "claim": {"root": "door", "value": "shut"},
     "subject": "shut"},
    {"kind": "intervene", "resident": "mira", "op": "soften",
     "claim": {"root": "well", "value": "wet"}, "subject": "wet"},
    {"kind": "trust", "resident": "ann", "source": "bo", "value": 0.1},
    {"kind": "say", "speaker": "bo", "listeners": ["ann"],
     "claim": {"root": "square", "value": "busy"}, "subject": "busy"},
    {"kind": "observe", "witnesses": ["ann", "mira"], "claim": {"root": "mill", "value": "open"},
     "subject": "open"},
    {"kind": "tick", "day_offset": 40},
    {"kind": "tick", "day_offset": 1e12},  # the far tick that spun the writer at decay_step 0
]  # fmt: skip


def play(writer: Writer, world: str) -> list[str]:
    """Apply the story; return each event's outcome (``applied`` or its documented code)."""
    out = []
    for i, raw in enumerate(STORY):
        frame = {k: v for k, v in raw.items() if k != "day_offset"}
        day = min(1e12, raw.get("day_offset", i))
        event = parse_event({**frame, "event_id": f"e{i}", "day": day})
        (result,) = writer.apply([(world, event)])
        if result.status is ResultStatus.APPLIED:
            out.append("applied")
        else:
            assert isinstance(result.error, EngineError), (raw, result.error)
            out.append(str(getattr(result.error, "code", "?")))
    return out


def test_every_source_agrees_and_the_writer_applies_what_they_accept(tmp_path: Path) -> None:
    """Arbitrary values for every rule through every source: the sources refuse or accept the
    same values (and make the same rules); the writer applies the story under any accepted
    rules (a far tick included) without a failure; stored rules that fail refuse their world
    alone, with one line, while the other worlds of the file go on."""
    db = tmp_path / "rules.db"
    writer = Writer(db)
    worlds = iter(range(10**9))

    @settings(
        max_examples=EXAMPLES, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )  # fmt: skip
    @given(st.lists(field_value(), min_size=1, max_size=3))
    def sources(changes: list[tuple[str, Any]]) -> None:
        table = dict(changes)
        header = {**rules_to_stored(DEFAULT_RULES), **table}
        results = {
            "rules table": outcome(lambda: rules_from_mapping(table, "r.toml")),
            "config inline": outcome(lambda: load_rules(inline=table, where="c.toml: rules")),
            "import header": outcome(lambda: rules_from_stored(header, "x.credence: header")),
        }
        if len(table) == 1 and next(iter(table)) in NUMBERS:
            (name, value), = table.items()  # fmt: skip
            if isinstance(value, int | float) and not isinstance(value, bool):
                results["flag"] = outcome(lambda: from_flag(name, value))
        first = next(iter(results.values()))
        assert all(r == first for r in results.values()), results
        n = next(worlds)
        name, value = changes[-1]
        if not (isinstance(value, float) and not math.isfinite(value)):  # (JSON holds no NaN)
            store_rules(db, f"stored{n}", name, value)
            alone = outcome(lambda: rules_from_mapping({name: value}, "r.toml"))
            assert opens(writer, f"stored{n}") == (alone != "refused"), (name, value, alone)
        if isinstance(first, Rules):
            writer.ensure_world(f"w{n}", first)
            assert len(play(writer, f"w{n}")) == len(STORY)
        assert play(writer, f"other{n}")[-1] == "applied"  # every other world goes on

    try:
        sources()
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("name", "value"),
    [("reinforce_step", "8"), ("doubt_step", [20]), ("decay_step", 0), ("reinforce_step", 1e300),
     ("seed", 18446744073709551616), ("decay_period_days", math.inf), ("misremember", 2)],
)  # fmt: skip
def test_the_values_of_the_issue_are_refused_by_every_source(name: str, value: Any) -> None:
    """The values issue 17 found accepted somewhere (text, a list, a step of 0, 1e300, a seed
    past 2^64, inf, a chance of 2) are refused by every source, each with one line naming
    the source and the rule."""
    header = {**rules_to_stored(DEFAULT_RULES), name: value}
    for where, make in (
        ("r.toml", lambda: rules_from_mapping({name: value}, "r.toml")),
        ("x.credence: header rules", lambda: rules_from_stored(header, "x.credence: header rules")),
    ):
        with pytest.raises(RulesError) as info:
            make()
        assert str(info.value).startswith(f"{where}: {name} must be "), str(info.value)


def test_a_world_with_invalid_stored_rules_refuses_alone(tmp_path: Path) -> None:
    """A world whose stored rules fail (decay_step 0) refuses to open: each of its events is
    refused with one line naming the world and the rule, nothing of it is stored, and other
    worlds of the same file are served."""
    db = tmp_path / "s.db"
    writer = Writer(db)
    try:
        store_rules(db, "w", "decay_step", 0)
        assert not opens(writer, "w")
        (result,) = writer.apply([("w", parse_event({"event_id": "x", "kind": "tick", "day": 1}))])
        error = result.error
        assert isinstance(error, WorldRulesInvalid)
        assert str(error) == (
            "world 'w': stored rules: decay_step must be an integer from 1 to 100, not 0; "
            "the world cannot be opened"
        )
        assert error.code == "internal_error"
        assert play(writer, "other") == ["applied"] * len(STORY)
    finally:
        writer.close()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM events WHERE world = 'w'").fetchone() == (0,)
    conn.close()


async def test_over_the_wire_a_world_with_bad_stored_rules_is_refused_and_others_go_on(
    tmp_path: Path,
) -> None:
    """A served database holding a world whose stored rules are null (what NaN became) and
    another whose decay_step is 0: their events are answered internal_error naming the world
    and the rule, every other world is acked; `credence rebuild` of that file exits 2 with
    one line instead of failing."""
    import subprocess
    import sys

    from wsclient import WsClient, guard, running

    db = tmp_path / "x.db"
    Writer(db).close()
    store_rules(db, "nulled", "trust_default", None)
    store_rules(db, "spinning", "decay_step", 0)
    async with running(tmp_path, db=db) as sc:
        for world, rule in (("nulled", "trust_default"), ("spinning", "decay_step")):
            async with WsClient(sc.url, world=world) as c:
                reply = await c.event("tick", 1e12)
                assert reply["type"] == "error" and reply["code"] == "internal_error", reply
                assert f"world {world!r}: stored rules: {rule} must be" in reply["message"]
        async with WsClient(sc.url, world="fine") as c:
            assert (await c.event("tick", 5))["type"] == "ack"
    done = subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "rebuild", "--db", str(db), "--check"],
        capture_output=True, text=True, timeout=guard(60),
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "stored rules" in done.stderr and "the world cannot be opened" in done.stderr


def test_the_readme_lists_every_rule_with_the_range_its_check_enforces() -> None:
    """README's "each must be" table names every rule once, in a row that states exactly the
    range the rule's check enforces (the docs cannot drift from the one definition)."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = readme.index("| rules | each must be |")
    rows = readme[start:].split("\n\n", 1)[0].splitlines()[2:]
    named: dict[str, str] = {}
    for row in rows:
        names, must = row.strip("|").split("|")
        for name in re.findall(r"`([a-z_]+)`", names):
            assert name not in named, name
            named[name] = must.strip()
    assert set(named) == set(FIELDS)
    for name, must in named.items():
        assert must.startswith(rule_check(name).describe()), (name, must)
