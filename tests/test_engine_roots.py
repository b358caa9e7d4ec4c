"""A world's root schema: declared prefixes, allowed values, mutability, importance, and what
happens to undeclared roots — in the engine, over the wire, and through a rebuild."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from wsclient import WsClient, observe, running, say

from sidecar.engine import (
    InvalidEvent,
    MemoryWorld,
    SchemaViolation,
    parse_event,
)
from sidecar.store import Reader, rebuild

SCHEMA: dict[str, Any] = {
    "undeclared": "refuse",
    "roots": [
        {"prefix": "water:well", "values": ["clean", "poisoned"],
         "text": {"en": "the well water", "zh-Hant": "井水"}, "importance": 1},
        {"prefix": "location:", "mutable": True},
        {"prefix": "relation:"},
    ],
}  # fmt: skip


def ev(event_id: str, day: float, kind: str, **fields: Any) -> Any:
    return parse_event({"event_id": event_id, "day": day, "kind": kind, **fields})


def test_schema_parses_and_round_trips_through_the_log() -> None:
    """A schema event's canonical form parses back to an equal event (replay is exact)."""
    event = ev("s", 1, "schema", **SCHEMA)
    again = parse_event(event.to_dict())
    assert again == event
    assert event.to_dict()["format"] == 1
    assert event.schema.find("water:well") is not None
    assert event.schema.find("water:well").text["zh-Hant"] == "井水"  # type: ignore[union-attr]
    assert event.schema.find("weather:today") is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"undeclared": "maybe"}, "undeclared must be"),
        ({"roots": [{"prefix": ""}]}, "prefix must be"),
        ({"roots": [{"prefix": "a:"}, {"prefix": "a:"}]}, "declared twice"),
        ({"roots": [{"prefix": "believes:"}]}, "derives"),
        ({"roots": [{"prefix": "a:", "values": []}]}, "values must be"),
        ({"roots": [{"prefix": "a:", "importance": 2}]}, "importance must be"),
        ({"roots": [{"prefix": "a:", "mutable": "yes"}]}, "mutable must be"),
        ({"roots": [{"prefix": "a:", "colour": "red"}]}, "unknown field"),
        ({"roots": [{"prefix": "a:", "text": {"en": 3}}]}, "text must map"),
    ],
)
def test_bad_schemas_are_invalid_events(fields: dict[str, Any], message: str) -> None:
    """Each mistake in a schema is refused with a message naming it."""
    with pytest.raises(InvalidEvent, match=message):
        ev("s", 1, "schema", **fields)


def test_engine_applies_values_mutability_importance_and_refuses_undeclared() -> None:
    """Declared values are enforced, mutable and importance defaults apply, others refused."""
    w = MemoryWorld()
    w.apply(ev("s", 0, "schema", **SCHEMA))
    with pytest.raises(SchemaViolation) as info:
        w.apply(ev("o1", 1, "observe", witnesses=["mira"],
                   claim={"root": "water:well", "value": "poisond"}, subject="typo"))  # fmt: skip
    assert info.value.reason == "value_not_allowed" and info.value.code == "schema_violation"
    with pytest.raises(SchemaViolation) as info:
        w.apply(ev("o2", 1, "observe", witnesses=["mira"],
                   claim={"root": "water:wel", "value": "clean"}, subject="typo"))  # fmt: skip
    assert info.value.reason == "undeclared_root"
    w.apply(ev("h", 1, "say", speaker="bo", listeners=["mira"],
               claim={"root": "water:well", "value": "poisoned"}, subject="bo says"))  # fmt: skip
    heard = w.beliefs[("mira", "water:well")]
    assert heard.decay_period == 14  # importance 1 from the schema: 7 × (1 + 1)
    w.apply(ev("l1", 2, "observe", witnesses=["kai"],
               claim={"root": "location:bo", "value": "mill"}, subject="bo at the mill"))  # fmt: skip
    out = w.apply(ev("l2", 3, "observe", witnesses=["kai"],
                     claim={"root": "location:bo", "value": "inn"}, subject="bo at the inn"))  # fmt: skip
    assert out is not None and [c.kind.value for c in out.changes] == ["updated"]
    # act roots are derived by the sidecar: never checked against the schema
    w.apply(ev("a", 4, "act", actor="mira", action="fetch", status="completed"))


async def test_schema_over_the_wire_warns_refuses_and_rebuilds(tmp_path: Path) -> None:
    """schema frame → ack; warn mode acks undeclared roots with warnings; values refused."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        warn = {**SCHEMA, "undeclared": "warn"}
        ack = await c.request({"type": "schema", "event_id": "sc-1", "day": 1, **warn})
        assert ack["type"] == "ack" and ack["changes"] == 0
        ok = await c.event(
            "observe", 1, event_id="o1", **observe(["mira"], "weather:today", "rain")
        )
        assert ok["type"] == "ack" and ok["warnings"] == [
            "root 'weather:today' is not declared in this world's schema"
        ]
        bad = await c.event(
            "say", 1, event_id="s1", **say("bo", ["mira"], "water:well", "posioned")
        )
        assert bad["code"] == "schema_violation" and bad["reason"] == "value_not_allowed"
        good = await c.event("say", 1, event_id="s2", **say("bo", ["mira"], "water:well", "clean"))
        assert good["type"] == "ack" and "warnings" not in good
        again = await c.request({"type": "schema", "event_id": "sc-2", "day": 2, "roots": []})
        assert again["type"] == "ack"
        free = await c.event("say", 2, event_id="s3", **say("bo", ["mira"], "water:well", "x"))
        assert free["type"] == "ack"  # the new schema declares nothing and accepts anything
    reader = Reader(tmp_path / "x.db")
    try:
        version, schema = reader.schema("town")
        assert version == 2 and schema is not None and schema.roots == ()
    finally:
        reader.close()
    assert rebuild(tmp_path / "x.db").ok


def test_a_schema_in_the_middle_of_a_batch_applies_to_the_rest_of_it(tmp_path: Path) -> None:
    """One group-commit batch: the schema event, then a typo (refused), then a good event."""
    from sidecar.store import ResultStatus, Writer

    w = Writer(tmp_path / "b.db")
    try:
        batch = [
            ("town", ev("s", 1, "schema", **SCHEMA)),
            ("town", ev("o1", 1, "observe", witnesses=["mira"],
                        claim={"root": "water:well", "value": "poisond"}, subject="typo")),
            ("town", ev("o2", 1, "observe", witnesses=["mira"],
                        claim={"root": "water:well", "value": "clean"}, subject="clear")),
        ]  # fmt: skip
        results = w.apply(batch)
        assert [r.status for r in results] == [
            ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED,
        ]  # fmt: skip
        assert isinstance(results[1].error, SchemaViolation)
        later = w.apply([("town", ev("o3", 2, "observe", witnesses=["kai"],
                                     claim={"root": "weather", "value": 1}, subject="s"))])  # fmt: skip
        assert later[0].status is ResultStatus.REJECTED  # undeclared, and the schema refuses
    finally:
        w.close()


async def test_narrative_names_declared_roots_by_their_display_text(tmp_path: Path) -> None:
    """Bulk lines name their kind by the schema's text (longest prefix, the narrative's
    language, else English), over the wire in both languages; the raw prefix never shows."""
    schema = {
        "roots": [
            {"prefix": "flora:", "text": {"en": "plants", "zh-Hant": "植物"}},
            {"prefix": "flora:oak", "text": {"en": "oaks by the mill", "zh-Hant": "磨坊邊的橡樹"}},
            {"prefix": "stone:", "text": {"en": "old marker stones"}},
        ]
    }
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        ack = await c.request({"type": "schema", "event_id": "sc-1", "day": 1, **schema})
        assert ack["type"] == "ack"
        for i in range(6):
            for family, subject in (("flora:oak", "a tall one"), ("stone", "a rock")):
                fields = observe(["mira"], f"{family}:{i}", "here", subject=f"{subject} {i}")
                reply = await c.event("observe", 1, event_id=f"{family}-{i}", **fields)
                assert reply["type"] == "ack"
        en = await c.request({"type": "narrative", "resident": "mira", "budget": 2000})
        zh = await c.request(
            {"type": "narrative", "resident": "mira", "budget": 2000, "lang": "zh-Hant"}
        )
    assert "I know of 6 things of this kind (oaks by the mill)" in en["text"]
    assert "I know of 6 things of this kind (old marker stones)" in en["text"]
    assert "磨坊邊的橡樹" in zh["text"] and "old marker stones" in zh["text"]  # en fallback
    for text in (en["text"], zh["text"]):
        assert "flora" not in text and "stone" not in text.replace("marker stones", "")
        assert "plants" not in text and "植物" not in text  # the longest prefix wins
    cli = [sys.executable, "-m", "sidecar.cli", "narrative", "--db", str(tmp_path / "x.db"),
           "--world", "town", "--resident", "mira", "--lang", "zh-Hant"]  # fmt: skip
    out = subprocess.run(cli, capture_output=True, text=True, check=True).stdout
    assert "磨坊邊的橡樹" in out and "flora" not in out  # the CLI reads the same schema
