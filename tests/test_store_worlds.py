"""Worlds as save games: list, fork, export/import, delete — over the wire, in one file and
in a data directory with one SQLite file per world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wsclient import WsClient, db_rows, observe, running, say

from sidecar.engine import rules_from_mapping
from sidecar.store import (
    DataDir,
    Reader,
    SingleFile,
    WorldNotFound,
    WorldsError,
    export_world,
    import_world,
    rebuild,
    world_file,
)
from sidecar.store.worlds import read_export


async def fill(c: WsClient) -> None:
    """Five events over days 1-20: hearsay that ages, a contradiction, a tick."""
    await c.event("say", 1, event_id="s1", **say("bo", ["mira", "kai"], "water:well", "poisoned"))
    await c.event("observe", 2, event_id="o1", **observe(["kai"], "water:well", "clean"))
    await c.event("observe", 3, event_id="o2", **observe(["mira"], "door:mill", "open"))
    await c.event("tick", 20, event_id="t1")
    await c.event("observe", 21, event_id="o3", **observe(["mira", "kai"], "door:mill", "shut"))


async def test_worlds_fork_and_delete_over_the_wire(tmp_path: Path) -> None:
    """worlds lists counts; fork at a seq rebuilds the prefix; delete needs the world named."""
    strict = rules_from_mapping({"late_event_days": 0})
    async with running(tmp_path, rules=strict) as sc, WsClient(sc.url, "town") as c:
        await fill(c)
        late = await c.event("observe", 3, event_id="late", **observe(["mira"], "k", 1))
        assert late["code"] == "clock_backwards" and late["event_id"] == "late"
        listed = await c.request({"type": "worlds"})
        (town,) = listed["worlds"]
        assert town["world"] == "town" and town["events"] == 5 and town["day"] == 21
        assert town["residents"] == 3 and town["beliefs"] > 0 and town["changes"] > 0
        forked = await c.request({"type": "fork", "into": "town-save", "at": 2})
        assert forked["type"] == "forked" and forked["source"] == "town" and forked["at"] == 2
        assert (forked["world"], forked["events"], forked["day"]) == ("town-save", 2, 2)
        bad = await c.request({"type": "fork", "into": "town-save"})
        assert bad["code"] == "invalid_frame" and "already exists" in bad["message"]
        async with WsClient(sc.url, "town-save") as save:
            # the fork goes on from day 2: no clock_backwards, and its beliefs are its own
            ack = await save.event("observe", 3, event_id="o9", **observe(["mira"], "k", 1))
            assert ack["type"] == "ack"
            mira = await save.request({"type": "beliefs", "resident": "mira"})
            assert {b["root"] for b in mira["beliefs"]} == {
                "water:well", "believes:bo:water:well", "k",
            }  # fmt: skip
        async with WsClient(sc.url, "town-save") as save:
            gone = await c.request({"type": "delete", "world": "town-save"})  # named: confirmed
            assert gone["type"] == "deleted" and gone["events"] == 3
            assert await save.wait_closed() == 1001  # its connections are closed
        missing = await c.request({"type": "delete", "world": "town-save"})
        assert missing["code"] == "not_found"
        names = [w["world"] for w in (await c.request({"type": "worlds"}))["worlds"]]
        assert names == ["town"]
    assert db_rows(tmp_path / "x.db", "SELECT count(*) FROM events WHERE world='town-save'") == [
        (0,)
    ]
    assert rebuild(tmp_path / "x.db").ok


async def test_lifecycle_needs_a_writer_token_and_lists_only_visible_worlds(
    tmp_path: Path,
) -> None:
    """A reader cannot fork or delete; a world token sees only its world in `worlds`."""
    async with running(tmp_path, writer_tokens=["a=wa", "b=wb"], reader_tokens=["a=ra"]) as sc:
        async with WsClient(sc.url, "a", token="wa") as a:
            await a.event("tick", 1, event_id="t")
            no = await a.request({"type": "fork", "into": "b"})
            assert no["code"] == "forbidden"  # the token cannot write world b
        async with WsClient(sc.url, "b", token="wb") as b:
            await b.event("tick", 1, event_id="t")
            assert [w["world"] for w in (await b.request({"type": "worlds"}))["worlds"]] == ["b"]
        async with WsClient(sc.url, "a", token="ra") as r:
            assert (await r.request({"type": "fork", "into": "a2"}))["code"] == "forbidden"
            assert (await r.request({"type": "delete", "world": "a"}))["code"] == "forbidden"
            bad = await r.request({"type": "fork", "into": "a2", "at": -1})
            assert bad["code"] == "invalid_frame"
        async with WsClient(sc.url, "a", token="wa") as a2:
            assert (await a2.request({"type": "delete", "world": "b"}))["code"] == "forbidden"


async def test_data_dir_serves_each_world_from_its_own_file(tmp_path: Path) -> None:
    """--data-dir: one SQLite file per world, readable and rebuildable on its own."""
    data = tmp_path / "worlds"
    async with (
        running(tmp_path, data_dir=data) as sc,
        WsClient(sc.url, "north", subscribe="*") as n,
        WsClient(sc.url, "south/2") as s,
    ):
        await fill(n)
        await s.event("observe", 1, event_id="x", **observe(["ann"], "k", 1))
        await n.next_of("belief")
        beliefs = await n.request({"type": "beliefs", "resident": "mira"})
        assert len(beliefs["beliefs"]) == 3
        async with WsClient(sc.url, "empty") as e:  # no file yet: reads as empty
            assert e.welcome["seq"] == 0
            assert (await e.request({"type": "beliefs", "resident": "x"}))["type"] in (
                "beliefs", "error",
            )  # fmt: skip
        listed = [w["world"] for w in (await n.request({"type": "worlds"}))["worlds"]]
        assert listed == ["north", "south/2"]
        await n.request({"type": "fork", "into": "north-1", "at": 3})
        async with WsClient(sc.url, "south/2") as s2:
            assert (await s2.request({"type": "delete", "world": "south/2"}))["events"] == 1
        assert not world_file(data, "south/2").exists()
        # a deleted world can start again from nothing
        async with WsClient(sc.url, "south/2") as s3:
            assert s3.welcome["seq"] == 0
            await s3.event("observe", 1, event_id="x", **observe(["ann"], "k", 2))
    files = sorted(p.name for p in data.glob("*.db") if not p.name.startswith("."))
    assert files == ["north-1.db", "north.db", "south%2F2.db"]
    for name in files:
        assert rebuild(data / name).ok
    reader = Reader(data / "north-1.db")
    try:
        assert reader.worlds() == ["north-1"]
        assert reader.latest_seq("north-1") > 0
    finally:
        reader.close()


def test_export_import_round_trip_keeps_rules_and_rebuilds(tmp_path: Path) -> None:
    """An export replays into an identical world (own rules kept), in either store kind."""
    rules = rules_from_mapping({"reinforce_step": 3, "decay_period_days": 2})
    src = SingleFile(tmp_path / "a.db")
    try:
        events = _story()
        src.import_events("town", rules, events)
        out = tmp_path / "town.credence"
        assert export_world(src, "town", out) == len(events)
        info = import_world(src, out, "town-copy")
        assert info.events == len(events)
        with pytest.raises(WorldsError, match="already exists"):
            import_world(src, out)
        a = [(b.resident, b.root, b.confidence, b.state) for b in src.reader.all_beliefs("town")]
        b = [
            (x.resident, x.root, x.confidence, x.state) for x in src.reader.all_beliefs("town-copy")
        ]
        assert a == b and src.rules("town-copy") == rules
    finally:
        src.close()
    assert rebuild(tmp_path / "a.db").ok
    d = DataDir(tmp_path / "dir")
    try:
        import_world(d, out)
        assert [w.world for w in d.worlds()] == ["town"]
        assert d._existing("town").rules("town") == rules
    finally:
        d.close()
    assert rebuild(world_file(tmp_path / "dir", "town")).ok


def test_export_checksum_and_format_are_checked(tmp_path: Path) -> None:
    """A damaged, truncated or foreign export file is refused with a clear message."""
    src = SingleFile(tmp_path / "a.db")
    try:
        src.import_events("town", rules_from_mapping({}), _story())
        out = tmp_path / "t.credence"
        export_world(src, "town", out)
    finally:
        src.close()
    text = out.read_text()
    (tmp_path / "edited").write_text(text.replace('"poisoned"', '"sweet"', 1))
    with pytest.raises(WorldsError, match="checksum does not match"):
        read_export(tmp_path / "edited")
    lines = text.splitlines(keepends=True)
    (tmp_path / "cut").write_text("".join(lines[:2] + lines[-1:]))
    with pytest.raises(WorldsError, match=r"checksum|events"):
        read_export(tmp_path / "cut")
    (tmp_path / "other").write_text('{"hello": 1}\n{"sha256": "x"}\n')
    with pytest.raises(WorldsError, match="not a Credence world export"):
        read_export(tmp_path / "other")


def test_fork_and_delete_of_a_missing_world_say_not_found(tmp_path: Path) -> None:
    """Lifecycle calls on an unknown world raise WorldNotFound."""
    store = SingleFile(tmp_path / "a.db")
    try:
        with pytest.raises(WorldNotFound):
            store.fork("nope", "x")
        with pytest.raises(WorldNotFound):
            store.delete("nope")
    finally:
        store.close()


def _story() -> list[Any]:
    from sidecar.engine import parse_event

    raw = [
        {"event_id": "s1", "day": 1, "kind": "say", "speaker": "bo", "listeners": ["mira"],
         "claim": {"root": "water:well", "value": "poisoned"}, "subject": "poisoned"},
        {"event_id": "o1", "day": 2, "kind": "observe", "witnesses": ["mira"],
         "claim": {"root": "water:well", "value": "poisoned"}, "subject": "dead fish"},
        {"event_id": "t1", "day": 30, "kind": "tick"},
        {"event_id": "o2", "day": 31, "kind": "observe", "witnesses": ["mira"],
         "claim": {"root": "water:well", "value": "clean"}, "subject": "clear"},
    ]  # fmt: skip
    return [parse_event(r) for r in raw]


def cli(*args: str) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_worlds_fork_export_import_delete_backup(tmp_path: Path) -> None:
    """The CLI commands list, fork, export, import, back up and (with --yes) delete worlds."""
    db = tmp_path / "c.db"
    store = SingleFile(db)
    try:
        store.import_events("town", rules_from_mapping({"doubt_step": 5}), _story())
    finally:
        store.close()
    out = cli("worlds", "--db", str(db), "--json")
    assert out.returncode == 0 and '"world":"town"' in out.stdout and '"events":4' in out.stdout
    assert (
        cli("fork", "--db", str(db), "--world", "town", "--into", "t2", "--at", "2").returncode == 0
    )
    exp = tmp_path / "town.credence"
    assert cli("export", "--db", str(db), "--world", "town", "--out", str(exp)).returncode == 0
    data = tmp_path / "dir"
    done = cli("import", "--data-dir", str(data), str(exp), "--world", "moved")
    assert done.returncode == 0, done.stderr
    assert "moved" in cli("worlds", "--data-dir", str(data)).stdout
    no = cli("delete", "--db", str(db), "--world", "t2")
    assert no.returncode == 2 and "without --yes" in no.stderr
    assert cli("delete", "--db", str(db), "--world", "t2", "--yes").returncode == 0
    assert cli("delete", "--db", str(db), "--world", "t2", "--yes").returncode == 2
    names = [line.split()[0] for line in cli("worlds", "--db", str(db)).stdout.splitlines()]
    assert names == ["town"]
    copy = tmp_path / "copy.db"
    assert cli("backup", "--db", str(db), "--out", str(copy)).returncode == 0
    assert cli("rebuild", "--db", str(copy), "--check").returncode == 0
    assert cli("rebuild", "--db", str(world_file(data, "moved")), "--check").returncode == 0
    whole = cli("rebuild", "--data-dir", str(data), "--check")
    assert whole.returncode == 0 and "1 world file(s), 0 with differences" in whole.stdout
    missing = cli("worlds", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and "no database" in missing.stderr


def test_lifecycle_figures_tool_runs_and_prints_every_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """python -m tools.lifecycle_figures prints each figure (no speed is asserted)."""
    from tools.lifecycle_figures import main

    assert main(["120"]) == 0
    out = capsys.readouterr().out
    for label in ("replay", "export", "import", "fork", "worlds", "delete", "rebuild", "metrics"):
        assert label in out


def test_data_dir_names_any_world_id_safely(tmp_path: Path) -> None:
    """Dots, slashes and long non-ASCII ids all get a file of their own and list back."""
    ids = [".hidden", "a/b", "台北" * 40, "x" * 200]
    d = DataDir(tmp_path / "d")
    try:
        for world in ids:
            d.import_events(world, rules_from_mapping({}), _story())
        assert sorted(w.world for w in d.worlds()) == sorted(ids)
        names = [world_file(tmp_path / "d", w).name for w in ids]
        assert all(len(n) < 255 and not n.startswith(".") for n in names)
        d.delete("台北" * 40)
        assert sorted(w.world for w in d.worlds()) == sorted(set(ids) - {"台北" * 40})
    finally:
        d.close()


def test_data_dir_refuses_only_the_events_of_a_world_whose_file_cannot_open(
    tmp_path: Path,
) -> None:
    """A broken world file refuses that world's events; the other worlds of the batch commit."""
    d = DataDir(tmp_path / "d")
    try:
        world_file(tmp_path / "d", "broken").write_bytes(b"not a database" * 100)
        events = _story()
        results = d.apply([("ok", events[0]), ("broken", events[0]), ("ok", events[1])])
        assert [r.status.value for r in results] == ["applied", "rejected", "applied"]
        assert results[1].error is not None and "cannot be opened" in str(results[1].error)
    finally:
        d.close()
