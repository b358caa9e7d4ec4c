"""End-to-end over the real server: promise and goal events, their notifications (filtered
like belief changes), the paged promises/goals queries, refusals, and the narrative."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from wsclient import WsClient, rebuild_check, running

from sidecar.server import Sidecar


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


def promise(
    pid: str, to: list[str], by: float | None = 12, action: str = "mend_fence"
) -> dict[str, Any]:
    out = {
        "promise": pid,
        "promiser": "bo",
        "to": to,
        "action": action,
        "subject": "mend the fence",
    }
    return out | ({} if by is None else {"by": by})


async def test_promise_notifications_follow_each_partys_evidence(sc: Sidecar) -> None:
    """Kai sees Bo keep his promise (kept, seen), Lena does not and the deadline passes
    (overdue, then a trust change); a subscriber filtering on change kind promise gets the
    promise notifications only."""
    async with (
        WsClient(sc.url) as c,
        WsClient(sc.url, hello_extra={"filters": [{"residents": "*", "changes": ["promise"]}]}) as sub,
    ):  # fmt: skip
        ack = await c.event("promise", day=1, **promise("fence", ["kai", "lena"]))
        assert ack["type"] == "ack" and ack["changes"] == 3
        made = [await sub.next_of("belief", change="promise") for _ in range(3)]
        assert {(f["resident"], f["value"], f["detail"]) for f in made} == {
            ("bo", "pending", "made"), ("kai", "pending", "made"), ("lena", "pending", "made"),
        }  # fmt: skip
        await c.event("act", day=5, actor="bo", action="mend_fence", status="completed",
                      witnesses=["kai"])  # fmt: skip
        kept = await sub.next_of("belief", resident="kai", value="kept")
        assert (kept["prev_value"], kept["detail"], kept["root"]) == (
            "pending",
            "seen",
            "promise:fence",
        )
        await c.event("tick", day=13)
        overdue = await sub.next_of("belief", resident="lena")
        assert (overdue["value"], overdue["detail"], overdue["day"]) == (
            "overdue",
            "deadline",
            12.0,
        )
        assert not [f for f in sub.untaken("belief") if f["change"] != "promise"]
        trust = await c.request({"type": "trust", "resident": "lena", "source": "bo"})
        assert trust["entries"][0]["value"] == pytest.approx(0.45)
    rebuild_check(sc.config.db)


async def test_promises_and_goals_queries_page(sc: Sidecar) -> None:
    """promises pages in id order with its state filter and `next` cursor; goals likewise."""
    async with WsClient(sc.url) as c:
        for i in range(5):
            await c.event("promise", day=1, **promise(f"p{i}", ["kai"], by=2 + i))
        await c.event("tick", day=4.5)  # p0, p1, p2 (by 2, 3, 4) are now overdue
        first = await c.request({"type": "promises", "resident": "kai", "limit": 2})
        assert [p["promise"] for p in first["promises"]] == ["p0", "p1"] and first["next"] == "p1"
        rest = await c.request({"type": "promises", "resident": "kai", "after": "p1"})
        assert [p["promise"] for p in rest["promises"]] == ["p2", "p3", "p4"]
        assert rest["next"] is None
        overdue = await c.request({"type": "promises", "resident": "kai", "state": "overdue"})
        assert [p["promise"] for p in overdue["promises"]] == ["p0", "p1", "p2"]
        one = overdue["promises"][0]
        assert (one["promiser"], one["to"], one["how"], one["since"]) == (
            "bo",
            ["kai"],
            "deadline",
            2.0,
        )
        await c.event("goal", day=5, resident="kai", goal="g1", op="set", subject="build a boat")
        await c.event(
            "goal", day=6, resident="kai", goal="g1", op="changed", subject="build a raft"
        )
        await c.event("goal", day=6, resident="kai", goal="g2", op="set", subject="learn to swim")
        await c.event("goal", day=7, resident="kai", goal="g2", op="abandoned")
        goals = await c.request({"type": "goals", "resident": "kai"})
        assert [
            (g["goal"], g["state"], g["subject"], g["prev_subject"]) for g in goals["goals"]
        ] == [
            ("g1", "active", "build a raft", "build a boat"),
            ("g2", "abandoned", "learn to swim", None),
        ]
        active = await c.request({"type": "goals", "resident": "kai", "state": "active"})
        assert [g["goal"] for g in active["goals"]] == ["g1"]
        history = goals["goals"][0]["history"]
        assert [(h["op"], h["subject_before"], h["subject"], h["day"]) for h in history] == [
            ("changed", "build a boat", "build a raft", 6.0),
            ("set", None, "build a boat", 5.0),
        ]


async def test_bad_promise_input_gets_error_frames_and_the_connection_survives(sc: Sidecar) -> None:
    """A deadline before the day, a report with another value, a goal op that does not fit
    and a bad query state are each refused with their code; nothing of them is stored."""
    async with WsClient(sc.url) as c:
        err = await c.event("promise", day=5, **promise("p", ["kai"], by=3))
        assert (err["type"], err["code"]) == ("error", "invalid_event")
        err = await c.event("say", day=5, speaker="kai", listeners=["lena"],
                            claim={"root": "promise:p", "value": "soon"}, subject="soon")  # fmt: skip
        assert (err["code"], err["reason"]) == ("contract_violation", "promise_report_value")
        err = await c.event("goal", day=5, resident="kai", goal="g", op="achieved")
        assert err["code"] == "invalid_event" and "cannot be achieved" in err["message"]
        err = await c.request({"type": "promises", "resident": "kai", "state": "late"})
        assert err["code"] == "invalid_frame"
        err = await c.request({"type": "goals", "resident": "kai", "limit": 0})
        assert err["code"] == "invalid_frame"
        ok = await c.event("promise", day=5, **promise("p", ["kai"], by=6))
        assert ok["type"] == "ack"
        again = await c.event("promise", day=5, **promise("p", ["lena"], by=6))
        assert again["code"] == "invalid_event" and "already made" in again["message"]
        page = await c.request({"type": "promises", "resident": "lena"})
        assert page["promises"] == []


async def test_the_narrative_tells_what_i_owe_and_what_i_am_trying_to_do(sc: Sidecar) -> None:
    """Names, not ids, whole days, in English and zh-Hant, the overdue promise first."""
    async with WsClient(sc.url) as c:
        await c.send({"type": "register", "event_id": "r", "day": 0, "residents": [
            {"resident": "bo", "names": {"en": "Bo", "zh-Hant": "阿博"}},
            {"resident": "kai", "names": {"en": "Kai", "zh-Hant": "凱"}},
        ]})  # fmt: skip
        await c.ack_of("r")
        await c.event("promise", day=1, **promise("fence", ["kai"], by=12.5))
        await c.event("promise", day=2, **promise("roof", ["kai"], by=40, action="fix_roof")
                      | {"subject": "fix the roof"})  # fmt: skip
        await c.event(
            "goal",
            day=3,
            resident="kai",
            goal="g",
            op="set",
            subject="find out who poisoned the well",
        )
        await c.event("tick", day=14)
        en = await c.request({"type": "narrative", "resident": "kai", "budget": 1000})
        assert "What I owe and am owed:" in en["text"]
        assert "Bo promised me to mend the fence by day 12, and has not done it." in en["text"]
        assert "Bo promised me to fix the roof by day 40." in en["text"]
        assert en["text"].index("mend the fence") < en["text"].index("fix the roof")
        assert "I am trying to find out who poisoned the well (since day 3)." in en["text"]
        assert "bo " not in en["text"] and "12.5" not in en["text"]
        owe = next(s for s in en["sections"] if s["name"] == "owe")
        assert owe["entries"][0]["promise"]["state"] == "overdue"
        zh = await c.request(
            {"type": "narrative", "resident": "kai", "budget": 1000, "lang": "zh-Hant"}
        )
        assert "我欠人的與別人欠我的承諾：" in zh["text"]
        assert "阿博答應了我在第12天前mend the fence，期限已過，還沒做到。" in zh["text"]
        assert "我正在努力find out who poisoned the well（從第3天起）。" in zh["text"]
        bo = await c.request({"type": "narrative", "resident": "bo", "budget": 1000})
        assert "I promised Kai to mend the fence by day 12, and the day has passed" in bo["text"]
