"""Worlds as save games: list, fork, export/import, delete — over the wire, in one file and
in a data directory with one SQLite file per world."""

from __future__ import annotations

import asyncio
import os
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
from sidecar.store.export import read_export


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


def _health(sc: Any) -> tuple[int, dict[str, Any]]:
    import json
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(sc.url.replace("ws://", "http://") + "/", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def test_deleting_a_world_named_like_another_worlds_old_hash_leaves_that_world_whole(
    tmp_path: Path,
) -> None:
    """Issue 17 defect 3: `~` + SHA-256 of a long id is its own world; deleting it closes only
    its file, the long world keeps acking, and after a restart every acked event is there."""
    import hashlib

    data = tmp_path / "worlds"
    long = "台北" * 40
    twin = "~" + hashlib.sha256(long.encode()).hexdigest()
    assert world_file(data, long) != world_file(data, twin)
    async with running(tmp_path, data_dir=data) as sc, WsClient(sc.url, long) as a:
        async with WsClient(sc.url, twin) as b:
            await b.event("observe", 1, event_id="b1", **observe(["bo"], "k", 1))
            await a.event("observe", 1, event_id="a0", **observe(["ann"], "k", 0))
            gone = await b.request({"type": "delete", "world": twin})
            assert gone["type"] == "deleted" and gone["events"] == 1
        for i in range(1, 16):
            ack = await a.event("observe", i, event_id=f"a{i}", **observe(["ann"], "k", i))
            assert ack["type"] == "ack"
        assert not world_file(data, twin).exists()
    async with running(tmp_path, data_dir=data) as sc, WsClient(sc.url, long) as a:
        listed = (await a.request({"type": "worlds"}))["worlds"]
        assert [(w["world"], w["events"]) for w in listed] == [(long, 16)]
    assert sorted(os.listdir(data)) == sorted(
        [
            world_file(data, long).name,
            ".credence.lock",
            ".credence-names",
            ".credence-worlds",
            ".empty.db",
        ]
    )
    assert rebuild(world_file(data, long)).ok


def test_delete_removes_the_file_through_a_tombstone_and_only_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete interrupted after its first step (the rename to a tombstone) has deleted the
    world; the next open clears the tombstone; no other world's file is touched."""
    from sidecar.store import worlds as worlds_module

    d = DataDir(tmp_path / "d")
    for world in ("keep", "Keep", "drop"):
        d.import_events(world, rules_from_mapping({}), _story())
    real = os.replace
    steps: list[str] = []

    def once(src: Any, dst: Any) -> None:
        steps.append(Path(dst).name)
        real(src, dst)
        raise KeyboardInterrupt  # the process dies right after the atomic step

    monkeypatch.setattr(worlds_module.os, "replace", once)
    with pytest.raises(KeyboardInterrupt):
        d.delete("drop")
    monkeypatch.undo()
    assert steps == [".deleted-drop.db"]
    d.close()
    d = DataDir(tmp_path / "d")
    try:
        assert [w.world for w in d.worlds()] == ["Keep", "keep"]
        assert not [n for n in os.listdir(tmp_path / "d") if "drop" in n]
        d.import_events("drop", rules_from_mapping({}), _story()[:1])  # starts from nothing
        assert [w.events for w in d.worlds() if w.world == "drop"] == [1]
    finally:
        d.close()


def test_the_pool_keeps_at_most_max_open_worlds_open_and_never_closes_a_pinned_one(
    tmp_path: Path,
) -> None:
    """Many worlds through a pool of 3: every event applied, never more than 3 files open,
    a pinned world stays open while others come and go, and each file rebuilds."""
    d = DataDir(tmp_path / "d", max_open_worlds=3)
    events = _story()
    try:
        with d.pinned("held") as held:
            for i in range(40):
                results = d.apply([(f"w{i % 20}", events[i // 20]), ("held", events[0])])
                assert results[0].status.value == "applied"
                assert d.open_worlds <= 3 and d._pool.peek("held") is held
        assert d._pool.evictions > 0
        assert {w.world: w.events for w in d.worlds()} == {
            **{f"w{i}": 2 for i in range(20)}, "held": 1,
        }  # fmt: skip
        assert d.open_worlds <= 3  # listing leaves the pool as it was
    finally:
        d.close()
    assert all(rebuild(world_file(tmp_path / "d", f"w{i}")).ok for i in range(20))


async def test_a_world_that_cannot_open_gets_a_clear_error_and_health_says_degraded(
    tmp_path: Path,
) -> None:
    """A world whose file is damaged: its hello is an error frame (code, message) and close
    1013, the health check answers 503 `degraded`; other worlds go on; fixed, it is ok again."""
    data = tmp_path / "worlds"
    async with running(tmp_path, data_dir=data) as sc, WsClient(sc.url, "fine") as fine:
        assert (await asyncio.to_thread(_health, sc))[1]["status"] == "ok"
        world_file(data, "broken").write_bytes(b"not a database" * 100)
        async with WsClient(sc.url, "broken") as bad:
            assert bad.hello_error is not None
            assert bad.hello_error["code"] == "internal_error"
            assert "world 'broken' cannot be opened" in bad.hello_error["message"]
            assert await bad.wait_closed() == 1013  # try again later
        status, body = await asyncio.to_thread(_health, sc)
        assert (status, body["status"], body["unavailable_worlds"]) == (503, "degraded", 1)
        assert (await fine.event("tick", 1, event_id="t"))["type"] == "ack"
        world_file(data, "broken").unlink()
        async with WsClient(sc.url, "broken") as again:
            assert again.welcome is not None
            assert (await again.event("tick", 1, event_id="t"))["type"] == "ack"
        assert (await asyncio.to_thread(_health, sc))[0] == 200


async def test_backup_refuses_a_database_a_sidecar_serves(tmp_path: Path) -> None:
    """Issue 17 defect 8: `backup --out` onto a served --db file or a served data dir's
    world file is one line on stderr, exit 2, and the live database is untouched."""
    other = tmp_path / "other.db"
    SingleFile(other).close()
    live, data = tmp_path / "live.db", tmp_path / "worlds"
    async with running(tmp_path, db=live) as sc, WsClient(sc.url, "town") as c:
        await fill(c)
        async with running(tmp_path / "dd", data_dir=data) as sd, WsClient(sd.url, "town") as d:
            await fill(d)
            for target in (live, world_file(data, "town")):
                before = sorted(os.listdir(target.parent))
                done = await asyncio.to_thread(
                    cli, "backup", "--db", str(other), "--out", str(target)
                )
                assert done.returncode == 2 and done.stdout == ""
                assert done.stderr.count("\n") == 1 and "a sidecar is serving" in done.stderr
                assert sorted(os.listdir(target.parent)) == before
            assert (await c.event("tick", 30, event_id="t9"))["type"] == "ack"
            assert (await d.event("tick", 30, event_id="t9"))["type"] == "ack"
    assert rebuild(live).ok and rebuild(world_file(data, "town")).ok
    assert db_rows(live, "SELECT count(*) FROM events") == [(6,)]


def test_backup_refuses_to_write_onto_its_own_source(tmp_path: Path) -> None:
    """`backup --out` naming the source itself, a symlink to it or a hard link of it is one
    line on stderr and exit 2; the source is unchanged and nothing is left behind."""
    db = tmp_path / "c.db"
    store = SingleFile(db)
    try:
        store.import_events("town", rules_from_mapping({}), _story())
    finally:
        store.close()
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    before = sorted(os.listdir(tmp_path))
    content = db.read_bytes()
    for out in ("c.db", "link.db", "hard.db"):
        done = cli("backup", "--db", str(db), "--out", str(tmp_path / out))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "is the database being copied" in done.stderr
        assert sorted(os.listdir(tmp_path)) == before and db.read_bytes() == content
    copy = cli("backup", "--db", str(db), "--out", str(tmp_path / "copy.db"))
    assert copy.returncode == 0 and rebuild(tmp_path / "copy.db").ok


def test_the_worlds_listing_is_remembered_across_opens_until_a_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second DataDir lists from `.credence-worlds` without reading unchanged files, and
    a world written since is read again (its new counts, never the remembered ones)."""
    from sidecar.store import worlds as worlds_module

    d = DataDir(tmp_path / "d")
    for world in ("a", "b"):
        d.import_events(world, rules_from_mapping({}), _story()[:2])
    d.close()
    d = DataDir(tmp_path / "d")
    assert [w.events for w in d.worlds()] == [2, 2]
    d.apply([("b", e) for e in _story()[2:]])
    d.close()
    read: list[str] = []
    real = worlds_module._info

    def counting(reader: Any, world: str) -> Any:
        read.append(world)
        return real(reader, world)

    monkeypatch.setattr(worlds_module, "_info", counting)
    d = DataDir(tmp_path / "d")
    try:
        assert [(w.world, w.events) for w in d.worlds()] == [("a", 2), ("b", 4)]
        assert read == ["b"]
    finally:
        d.close()


def _chatter(n: int) -> list[Any]:
    """``n`` rumours told to three residents: a world big enough to leave pages behind."""
    from sidecar.engine import parse_event

    return [
        parse_event({"event_id": f"c{i}", "day": 1 + i / 100, "kind": "say", "speaker": "bo",
                     "listeners": ["mira", "kai", "ida"], "claim": {"root": f"rumour:{i}",
                     "value": "yes"}, "subject": f"the {i}th rumour, told at some length"})
        for i in range(n)
    ]  # fmt: skip


def test_vacuum_gives_a_deleted_worlds_pages_back_and_keeps_the_others(tmp_path: Path) -> None:
    """``credence vacuum --db``: after a world is deleted the file keeps its size; vacuum
    shrinks it, the remaining world's rows are unchanged and still rebuild exactly, and no
    lock file is left. Without ``--data-dir``, ``--world`` is one line and exit 2."""
    db = tmp_path / "c.db"
    store = SingleFile(db)
    try:
        store.import_events("town", rules_from_mapping({}), _story())
        store.import_events("chatter", rules_from_mapping({}), _chatter(1500))
        store.delete("chatter")
    finally:
        store.close()
    tables = ("events", "evidence", "beliefs", "changes")
    before = {t: db_rows(db, f"SELECT * FROM {t} ORDER BY 1, 2, 3") for t in tables}
    size = db.stat().st_size
    done = cli("vacuum", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert f"{db}: " in done.stdout and "vacuumed 1 file(s)" in done.stdout
    assert db.stat().st_size < size / 3
    assert {t: db_rows(db, f"SELECT * FROM {t} ORDER BY 1, 2, 3") for t in tables} == before
    assert rebuild(db).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]
    wrong = cli("vacuum", "--db", str(db), "--world", "town")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr


def test_vacuum_of_a_data_dir_compacts_each_world_file_or_the_one_named(tmp_path: Path) -> None:
    """``credence vacuum --data-dir`` compacts every world file (not the directory's own
    files, such as the empty world every new one reads as), or only ``--world``'s; a world
    without a file is one line and exit 2, the directory left as it was."""
    data = tmp_path / "worlds"
    store = DataDir(data)
    try:
        store.import_events("town", rules_from_mapping({}), _story())
        store.import_events("chatter", rules_from_mapping({}), _chatter(300))
    finally:
        store.close()
    every = cli("vacuum", "--data-dir", str(data))
    assert every.returncode == 0, every.stderr
    assert "vacuumed 2 file(s)" in every.stdout and ".empty.db" not in every.stdout
    for world in ("town", "chatter"):
        assert f"{world_file(data, world)}: " in every.stdout
    one = cli("vacuum", "--data-dir", str(data), "--world", "town")
    assert one.returncode == 0 and "vacuumed 1 file(s)" in one.stdout, one.stderr
    assert f"{world_file(data, 'chatter')}" not in one.stdout
    assert rebuild(world_file(data, "town")).ok
    listed = sorted(os.listdir(data))
    missing = cli("vacuum", "--data-dir", str(data), "--world", "nowhere")
    assert missing.returncode == 2 and "no world 'nowhere'" in missing.stderr
    assert missing.stderr.count("\n") == 1 and sorted(os.listdir(data)) == listed


async def test_vacuum_refuses_a_database_a_sidecar_serves(tmp_path: Path) -> None:
    """While a sidecar serves a file or a data directory, ``credence vacuum`` on it (or on one
    of the directory's world files as a ``--db``) is one line, exit 2, and the files are
    untouched; the sidecar acks on, and after it stops the vacuum runs and the world
    rebuilds exactly."""
    live, data = tmp_path / "live.db", tmp_path / "worlds"
    async with running(tmp_path, db=live) as sc, WsClient(sc.url, "town") as c:
        await fill(c)
        async with running(tmp_path / "dd", data_dir=data) as sd, WsClient(sd.url, "town") as d:
            await fill(d)
            served = ("--db", str(world_file(data, "town")))  # (a served directory's world)
            for where in (("--db", str(live)), ("--data-dir", str(data)), served):
                files = sorted(os.listdir(live.parent if where[1] == str(live) else data))
                done = await asyncio.to_thread(cli, "vacuum", *where)
                assert done.returncode == 2 and done.stdout == ""
                assert done.stderr.count("\n") == 1 and "in use" in done.stderr, done.stderr
                assert sorted(os.listdir(live.parent if where[1] == str(live) else data)) == files
            assert (await c.event("tick", 30, event_id="t9"))["type"] == "ack"
            assert (await d.event("tick", 30, event_id="t9"))["type"] == "ack"
    for where in (("--db", str(live)), ("--data-dir", str(data))):
        assert cli("vacuum", *where).returncode == 0
    assert rebuild(live).ok and rebuild(world_file(data, "town")).ok
    assert db_rows(live, "SELECT count(*) FROM events") == [(6,)]


@pytest.mark.parametrize("mode", ["db", "data_dir"])
async def test_worlds_page_by_id_with_limit_and_after(tmp_path: Path, mode: str) -> None:
    """Seven worlds, pages of 3: `next` is the `after` of the next page and null on the last;
    without `limit` every world comes, `next` null; a token that opens some worlds gets the
    others left out of each page (a page may so hold fewer); a bad limit or after is
    `invalid_frame`."""
    names = [f"w{n}" for n in range(7)]
    where: dict[str, Any] = (
        {"db": tmp_path / "x.db"} if mode == "db" else {"data_dir": tmp_path / "worlds"}
    )
    tokens = ["w1=one", "w4=four", "w5=four", *(f"{w}=all" for w in names)]
    async with running(tmp_path, writer_tokens=tokens, **where) as sc:
        for w in names:
            async with WsClient(sc.url, w, token="all") as c:
                assert (await c.event("tick", 1, event_id="t"))["type"] == "ack"
        async with WsClient(sc.url, "w0", token="all") as c:
            pages, after = [], None
            while True:
                frame: dict[str, Any] = {"type": "worlds", "limit": 3}
                if after is not None:
                    frame["after"] = after
                reply = await c.request(frame)
                pages.append([w["world"] for w in reply["worlds"]])
                after = reply["next"]
                if after is None:
                    break
            assert pages == [names[0:3], names[3:6], names[6:]]
            whole = await c.request({"type": "worlds"})
            assert [w["world"] for w in whole["worlds"]] == names and whole["next"] is None
            for bad in ({"limit": 0}, {"limit": 1001}, {"limit": 2.5}, {"after": ""}):
                refused = await c.request({"type": "worlds", **bad})
                assert refused["code"] == "invalid_frame", (bad, refused)
        async with WsClient(sc.url, "w4", token="four") as c:
            first = await c.request({"type": "worlds", "limit": 5})
            assert [w["world"] for w in first["worlds"]] == ["w4"] and first["next"] == "w4"
            rest = await c.request({"type": "worlds", "limit": 5, "after": "w4"})
            assert [w["world"] for w in rest["worlds"]] == ["w5"] and rest["next"] is None
