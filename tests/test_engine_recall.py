"""Misremembering (issue 10): seeded, replayable drift of a belief's details on recall."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sidecar.engine import ChangeKind, MemoryWorld, Rules, parse_event
from sidecar.engine.recall import draw
from sidecar.store import Reader, ResultStatus, Writer, rebuild

RULES = Rules(misremember=0.5, seed=7)


def town() -> list[dict[str, Any]]:
    """Mira keeps seeing the key; each sighting names another place and person around."""
    events: list[dict[str, Any]] = []
    places = ("cafe", "mill", "inn", "dock")
    for day in range(1, 41):
        events.append({
            "event_id": f"o{day}", "day": day, "kind": "observe", "witnesses": ["mira"],
            "claim": {"root": "key:where", "value": "counter"}, "subject": "the key is on the counter",
            "places": [f"{places[day % 4]}{day}"], "people": [f"villager{day}"],
        })  # fmt: skip
    return events


def fold(rules: Rules) -> MemoryWorld:
    world = MemoryWorld(rules)
    for raw in town():
        world.apply(parse_event(raw))
    return world


def test_off_by_default_nothing_drifts() -> None:
    """With the default rules no recall ever drifts."""
    world = fold(Rules())
    assert not [c for c in world.changes if c.kind is ChangeKind.MISREMEMBERED]
    assert world.beliefs[("mira", "key:where")].remembered_day is None


def test_drift_is_its_own_change_and_never_touches_value_confidence_or_provenance() -> None:
    """Some recalls drift a place, a person or the remembered day; the record keeps the
    original, and value, confidence, state and source stay as the rules made them."""
    world = fold(RULES)
    drifts = [c for c in world.changes if c.kind is ChangeKind.MISREMEMBERED]
    assert 5 <= len(drifts) <= 35  # about half of 39 recalls
    fields = {json.loads(c.detail or "{}")["field"] for c in drifts}
    assert fields <= {"places", "people", "remembered_day"} and len(fields) >= 2
    for c in drifts:
        d = json.loads(c.detail or "{}")
        assert d["before"] != d["after"]
        assert c.value_before == c.value_after == "counter"
        assert c.confidence_before == c.confidence_after
        assert c.state_before is c.state_after and c.subject_before == c.subject_after
    plain = fold(Rules())
    b, p = world.beliefs[("mira", "key:where")], plain.beliefs[("mira", "key:where")]
    assert (b.value, b.confidence, b.state, b.source_kind, b.formed_day, b.evidence_refs) == (
        p.value, p.confidence, p.state, p.source_kind, p.formed_day, p.evidence_refs,
    )  # fmt: skip


def test_the_same_seed_drifts_the_same_way_and_another_seed_differently() -> None:
    """Deterministic per (seed, event, resident, root): replaying gives the same drifts."""
    a, b = fold(RULES), fold(RULES)
    assert a.changes == b.changes and a.beliefs == b.beliefs
    other = fold(Rules(misremember=0.5, seed=8))
    assert other.changes != a.changes


def test_store_and_rebuild_check_are_exact(tmp_path: Path) -> None:
    """The SQLite store drifts like the in-memory fold, and rebuild --check finds no difference."""
    path = tmp_path / "m.db"
    writer = Writer(path, rules=RULES, synchronous="OFF")
    try:
        results = writer.apply([("w", parse_event(e)) for e in town()])
        assert all(r.status is ResultStatus.APPLIED for r in results)
    finally:
        writer.close()
    reader = Reader(path)
    stored = [c for c in reader.all_changes("w")]
    memory = fold(RULES).changes
    assert [(c.kind, c.detail) for c in stored] == [(c.kind, c.detail) for c in memory]
    reader.close()
    report = rebuild(path, tmp_path / "rebuilt.db")
    assert report.ok, report.differences


# ------------------------------------------------------------- SPEC §18.2, step by step


def _spec_json_string(text: str) -> str:
    """A JSON string as SPEC §18.2 writes it: quote, backslash and control characters
    escaped (short forms where JSON has one), every other character as itself."""
    short = {
        '"': '\\"',
        "\\": "\\\\",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\b": "\\b",
        "\f": "\\f",
    }
    return '"' + "".join(
        short.get(ch, f"\\u{ord(ch):04x}" if ord(ch) < 0x20 else ch) for ch in text
    ) + '"'  # fmt: skip


def _spec_bytes(seed: int, event_id: str, resident: str, root: str) -> bytes:
    words = ", ".join([str(seed), *(_spec_json_string(x) for x in (event_id, resident, root))])
    return hashlib.sha256(f"[{words}]".encode()).digest()


def _u(h: bytes, a: int, b: int) -> float:
    return int.from_bytes(h[a:b], "big") / 2**64


def test_the_draw_bytes_are_what_the_spec_says() -> None:
    """SHA-256 of `[seed, "id", …]` with ", " separators and unescaped non-ASCII."""
    assert (
        _spec_bytes(7, "e-1", "mira", "water:well")
        == hashlib.sha256(b'[7, "e-1", "mira", "water:well"]').digest()
    )
    for ids in [("e-1", "mira", "water:well"), ("é\u0301", "米拉", "a\"b\\c"),
                ("x\ny\tz\x01", "🙂", "\x7f/\u2028")]:  # fmt: skip
        assert _spec_bytes(-3, *ids) == draw(-3, *ids), ids


def test_every_drift_is_the_one_the_spec_predicts() -> None:
    """Folding the town, each recall drifts exactly when, where and how §18.2 says (the
    prediction reads only the belief as it was before the event, and the event)."""
    rules = Rules(misremember=0.5, seed=11)
    world = MemoryWorld(rules)
    predicted: list[tuple[str, str, object, object]] = []
    for raw in town():
        before = world.beliefs.get(("mira", "key:where"))
        world.apply(parse_event(raw))
        if before is None:
            continue
        h = _spec_bytes(rules.seed, raw["event_id"], "mira", "key:where")
        if _u(h, 0, 8) >= rules.misremember:
            continue
        held_places, held_people = list(before.places), list(before.people)
        revised_places = list(dict.fromkeys([*held_places, *raw["places"]]))
        revised_people = list(dict.fromkeys([*held_people, *raw["people"]]))
        named = [p for p in dict.fromkeys([*raw["people"], *raw["witnesses"]]) if p != "mira"]
        new_places = [p for p in raw["places"] if p not in held_places]
        new_people = [p for p in named if p not in held_people]
        fields = [
            *(["places"] if held_places and new_places else []),
            *(["people"] if held_people and new_people else []),
            "remembered_day",
        ]
        field = fields[int(_u(h, 8, 16) * len(fields))]
        pick = int(_u(h, 16, 24) * 1_000_000)
        if field == "remembered_day":
            was = before.formed_day if before.remembered_day is None else before.remembered_day
            shift = (pick % 3 + 1) * (1 if h[24] & 1 else -1)
            now = max(0.0, was + shift)
            predicted.append((raw["event_id"], field, was, was + abs(shift) if now == was else now))
            continue
        old, new, lst = (
            (held_places, new_places, revised_places)
            if field == "places"
            else (held_people, new_people, revised_people)
        )
        gone, came = old[pick % len(old)], new[(pick // len(old)) % len(new)]
        predicted.append(
            (
                raw["event_id"],
                field,
                lst,
                list(dict.fromkeys(came if p == gone else p for p in lst)),
            )
        )
    seen = [
        (c.event_id, d["field"], d["before"], d["after"])
        for c in world.changes
        if c.kind is ChangeKind.MISREMEMBERED
        for d in [json.loads(c.detail or "{}")]
    ]
    assert len(seen) >= 5 and {f for _, f, _, _ in seen} >= {"places", "remembered_day"}
    assert seen == predicted
