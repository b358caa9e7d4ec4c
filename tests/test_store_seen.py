"""An import's check of repeated event ids holds a bounded number of them (sidecar/store/seen.py)
and tells the same first repeat as a check that held every id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.store import WorldsError
from sidecar.store import seen as seen_module
from sidecar.store.export import read_export
from sidecar.store.seen import SeenIds
from tests.test_commands_worlds import export_file


def _naive(ids: list[str]) -> tuple[int, str, int] | None:
    first: dict[str, int] = {}
    for line, event_id in enumerate(ids, start=2):
        if first.setdefault(event_id, line) != line:
            return line, event_id, first[event_id]
    return None


@settings(max_examples=300, deadline=None)
@given(
    ids=st.lists(st.sampled_from("abcdefghij") | st.text(min_size=1, max_size=4), max_size=40),
    held=st.integers(1, 6),
)
def test_the_first_repeat_is_the_one_a_check_holding_every_id_finds(
    ids: list[str], held: int
) -> None:
    """Whatever the ids and however few are held at a time (each full dict moved into the
    temporary file), the earliest line repeating an id and the line it was first on."""
    with SeenIds(held) as seen:
        for line, event_id in enumerate(ids, start=2):
            seen.add(event_id, line)
        assert seen.first_repeat() == _naive(ids)


def _event(i: int) -> dict[str, Any]:
    return {"event_id": f"e{i}", "day": i, "kind": "tick"}


@pytest.mark.parametrize(
    ("events", "message"),
    [
        # 'e0' is moved out with the first two ids, repeated on line 6
        ([_event(0), _event(1), _event(2), _event(3), _event(0)],
         "line 6: event id 'e0' is already on line 2"),
        # a repeat told only when the last ids are moved, before a later line that is no JSON
        ([_event(0), _event(1), _event(0), b"{oops\n"],
         "line 4: event id 'e0' is already on line 2"),
        # a line that is no JSON before the repeat: the earlier problem is said
        ([_event(0), _event(1), b"{oops\n", _event(0)], "line 4 is not JSON"),
        ([_event(0), _event(1), _event(2), _event(2)], "line 5: event id 'e2' is already on line 4"),
    ],
)  # fmt: skip
def test_an_import_file_repeating_an_id_past_the_held_ids_is_refused_at_the_first_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: list[Any], message: str
) -> None:
    monkeypatch.setattr(seen_module, "SEEN_HELD", 2)
    path = export_file(tmp_path / "f.credence", lambda h: {**h, "events": len(events)}, events)
    with pytest.raises(WorldsError) as info:
        read_export(path)
    assert str(info.value) == f"{path}: {message}"


def test_an_import_file_of_distinct_ids_past_the_held_ids_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seen_module, "SEEN_HELD", 3)
    events = [_event(i) for i in range(20)]
    path = export_file(tmp_path / "f.credence", lambda h: {**h, "events": len(events)}, events)
    world, _, read = read_export(path)
    assert world == "town"
    assert [e.event_id for e in read] == [e["event_id"] for e in events]
