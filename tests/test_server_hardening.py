"""End-to-end hardening (issue 9, engine side): ill-typed fields, a failing event, topic "*",
and the per-event resident limit, each over a real connection to a real sidecar.

Each test pins one defect the issue reproduced: the bad frame gets an error frame with a
code, everything pipelined around it is answered, other worlds keep being served, and what
was acknowledged replays (`credence rebuild --check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from wsclient import Frame, WsClient, db_rows, observe, rebuild_check, running, say

from protocol.frames import MAX_RESIDENTS
from sidecar.engine import Rules


def stored(db: Path) -> set[str]:
    return {row[0] for row in db_rows(db, "SELECT event_id FROM events")}


async def test_propose_with_merge_5_is_refused_and_every_world_goes_on(tmp_path: Path) -> None:
    """Issue 9 item 1: a propose edit with `merge: 5` is `invalid_event`; the next event on
    this connection and on another world's connection are acked (the writer lives)."""
    db = tmp_path / "x.db"
    async with (
        running(tmp_path, db=db) as sc,
        WsClient(sc.url) as c,
        WsClient(sc.url, world="other") as other,
    ):
        assert (await c.event("observe", **observe(["ann"], "mill", "burnt")))["type"] == "ack"
        for bad in (5, "mill", {"mill": 1}, [5]):
            await c.send({"type": "propose", "event_id": f"p-{bad!s}", "day": 2,
                          "resident": "ann", "edits": [{"root": "mill", "merge": bad}]})  # fmt: skip
            error = await c.ack_of(f"p-{bad!s}")
            assert error["type"] == "error" and error["code"] == "invalid_event", error
            assert "edits.merge" in error["message"]
        assert (await other.event("tick", day=3))["type"] == "ack"
        assert (await c.event("tick", day=3))["type"] == "ack"
        fine = await c.request({"type": "propose", "event_id": "p-ok", "day": 4,
                                "resident": "ann",
                                "edits": [{"root": "mill", "merge": ["mill"], "subject": "ash"}]})  # fmt: skip
        assert fine["type"] == "ack" and fine["results"][0]["accepted"], fine
    assert not any(e.startswith("p-") and e != "p-ok" for e in stored(db))
    rebuild_check(db)


@pytest.mark.parametrize("op", [["implant"], {"implant": True}, 7])
async def test_intervene_op_as_list_or_map_is_refused_and_pipelined_acks_arrive(
    tmp_path: Path, op: Any
) -> None:
    """Issue 9 item 2: `op` as a list or map gets an `invalid_event` error frame (no 1011
    close), and the acks of events pipelined before and after it all arrive."""
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        before = [
            await c.send_event("observe", i, **observe(["ann"], f"r{i}", i)) for i in range(5)
        ]
        bad = await c.send_event("intervene", 6, resident="ann", op=op,
                                 claim={"root": "r1", "value": 9}, subject="s")  # fmt: skip
        after = [await c.send_event("tick", 7 + i) for i in range(3)]
        for event_id in before + after:
            assert (await c.ack_of(event_id))["type"] == "ack"
        error = await c.ack_of(bad)
        assert error["type"] == "error" and error["code"] == "invalid_event", error
        assert "'op'" in error["message"]
        assert c.close_code is None


async def test_topic_star_is_refused_and_the_log_replays(tmp_path: Path) -> None:
    """Issue 9 item 7: `topic: "*"` on say/announce is `invalid_event` (it was acked and then
    broke `rebuild --check`); what is acked around it replays."""
    db = tmp_path / "x.db"
    async with running(tmp_path, db=db) as sc, WsClient(sc.url) as c:
        ok = await c.event("say", 1, **say("bo", ["ann"], "well", "dry", topic="water"))
        assert ok["type"] == "ack"
        star = await c.event("say", 2, **say("bo", ["ann"], "well", "wet", topic="*"))
        assert star["type"] == "error" and star["code"] == "invalid_event", star
        loud = await c.event("announce", 3, speaker="bo", audience="*", topic="*",
                             claim={"root": "well", "value": "wet"}, subject="s")  # fmt: skip
        assert loud["type"] == "error" and loud["code"] == "invalid_event", loud
    assert stored(db) == {ok["event_id"]}
    rebuild_check(db)


async def test_residents_per_event_are_bounded_and_advertised(tmp_path: Path) -> None:
    """An event naming more than `welcome.max_residents` witnesses/listeners/overhearers/
    audience together is `too_many_residents` with its event_id; exactly the limit is fine."""
    names = [f"r{i}" for i in range(MAX_RESIDENTS + 1)]
    async with running(tmp_path) as sc, WsClient(sc.url) as c:
        assert c.welcome["max_residents"] == MAX_RESIDENTS == 256
        cases: list[tuple[str, dict[str, Any]]] = [
            ("observe", observe(names, "a", 1)),
            ("say", say("bo", names[:200], "b", 1, overhearers=names[200:])),
            ("announce", {"speaker": "bo", "audience": names,
                          "claim": {"root": "c", "value": 1}, "subject": "s"}),
            ("act", {"actor": "bo", "action": "wave", "status": "completed", "witnesses": names}),
        ]  # fmt: skip
        for kind, fields in cases:
            error = await c.event(kind, 1, event_id=f"many-{kind}", **fields)
            assert error["type"] == "error" and error["code"] == "too_many_residents", error
            assert error["event_id"] == f"many-{kind}"
        dupes = observe(names[:MAX_RESIDENTS] * 2, "d", 1)  # duplicates are dropped first
        assert (await c.event("observe", 1, **dupes))["type"] == "ack"
        told = say("bo", names[:100], "e", 1, overhearers=names[:MAX_RESIDENTS])
        assert (await c.event("say", 1, **told))["type"] == "ack"


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokenRules(Rules):
    """A rule with a bug: asking whether the root "boom" is mutable raises (test only)."""

    def is_mutable(self, root: str) -> bool:
        if root == "boom":
            raise RuntimeError("a bug in a rule")
        return Rules.is_mutable(self, root)


async def test_an_event_that_makes_the_engine_raise_is_refused_alone(tmp_path: Path) -> None:
    """Per-event isolation: an event whose application raises an unexpected exception gets
    `internal_error` with its event_id; the events pipelined with it (same commit) are acked
    and stored, other worlds are served, and the log replays."""
    db = tmp_path / "x.db"
    async with running(tmp_path, db=db, rules=BrokenRules()) as sc, WsClient(sc.url) as c:
        sent = []
        for i in range(6):
            root = "boom" if i == 3 else f"fine{i}"
            sent.append(await c.send_event("observe", i, **observe(["ann"], root, i)))
        replies: list[Frame] = [await c.ack_of(e) for e in sent]
        assert [r["type"] for r in replies] == ["ack"] * 3 + ["error"] + ["ack"] * 2, replies
        assert replies[3]["code"] == "internal_error" and replies[3]["event_id"] == sent[3]
        async with WsClient(sc.url, world="other") as other:
            assert (await other.event("tick", 9))["type"] == "ack"
        assert (await c.event("observe", 10, **observe(["bo"], "fine", 1)))["type"] == "ack"
        health = await c.request({"type": "beliefs", "resident": "ann"})
        assert health["type"] == "beliefs"
    assert sent[3] not in stored(db) and set(sent) - {sent[3]} <= stored(db)
    rebuild_check(db)
