"""End-to-end: every event kind over the wire, acks after commit and in order, duplicates."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from wsclient import Frame, WsClient, db_rows, observe, running, say

from sidecar.server import Sidecar


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


async def beliefs_of(c: WsClient, resident: str) -> dict[str, Frame]:
    """A resident's beliefs by root, via the beliefs query."""
    parts = await c.request_all({"type": "beliefs", "resident": resident})
    assert parts[0]["type"] == "beliefs", parts[0]
    return {b["root"]: b for p in parts for b in p["beliefs"]}


def counts(db: Path) -> tuple[Any, ...]:
    """Row counts of every table the writer fills, to show that nothing was stored."""
    return tuple(
        db_rows(db, f"SELECT count(*) FROM {table}")[0][0]
        for table in ("events", "evidence", "beliefs", "changes", "residents", "trust", "facts")
    )


async def test_observe_forms_firsthand_beliefs_for_each_witness(sc: Sidecar) -> None:
    """observe gives every witness a firsthand belief at 78 and a formed notification."""
    async with WsClient(sc.url, subscribe="*") as c:
        ack = await c.event("observe", **observe(["mira", "kai"], "water:well", "clean"))
        assert ack["type"] == "ack" and ack["changes"] == 2 and ack["duplicate"] is False
        notes = [await c.next_of("belief"), await c.next_of("belief")]
        assert {n["resident"] for n in notes} == {"mira", "kai"}
        for n in notes:
            assert (n["change"], n["confidence"], n["prev_confidence"]) == ("formed", 78, None)
            assert (n["state"], n["source_kind"], n["source"]) == ("influencing", "firsthand", None)
            assert n["event_id"] == ack["event_id"]
        b = (await beliefs_of(c, "kai"))["water:well"]
        assert (b["value"], b["confidence"], b["source_kind"]) == ("clean", 78, "firsthand")


async def test_say_is_hearsay_for_listeners_only(sc: Sidecar) -> None:
    """say gives each listener hearsay at 58 with the speaker as source; the speaker gets none."""
    async with WsClient(sc.url) as c:
        ack = await c.event("say", **say("bo", ["mira"], "water:well", "poisoned"))
        assert ack["changes"] == 2  # the claim, and mira's firsthand belief that bo claimed it
        mira = await beliefs_of(c, "mira")
        assert set(mira) == {"water:well", "believes:bo:water:well"}
        b = mira["water:well"]
        assert (b["value"], b["confidence"], b["source_kind"], b["source"]) == (
            "poisoned",
            58,
            "hearsay",
            "bo",
        )
        b = mira["believes:bo:water:well"]
        assert (b["value"], b["confidence"], b["source_kind"], b["source"]) == (
            "poisoned",
            78,
            "firsthand",
            None,
        )
        assert await beliefs_of(c, "bo") == {}


async def test_announce_to_a_list_and_to_everyone(sc: Sidecar) -> None:
    """announce reaches its listed audience; "*" reaches every known resident but the speaker."""
    async with WsClient(sc.url) as c:
        await c.event("observe", **observe(["mira", "kai", "tom"], "weather", "rain"))
        listed = await c.event(
            "announce", speaker="bo", audience=["mira", "bo"], claim={"root": "fair", "value": 1},
            subject="fair on day 1",
        )  # fmt: skip
        assert listed["changes"] == 2  # bo is dropped from his own audience: mira's two beliefs
        everyone = await c.event(
            "announce", speaker="mayor", audience="*", claim={"root": "tax", "value": "up"},
            subject="taxes go up",
        )  # fmt: skip
        # mira, kai, tom and bo, each tax and believes:mayor:tax; not the mayor
        assert everyone["changes"] == 8
        for who in ("mira", "kai", "tom", "bo"):
            b = (await beliefs_of(c, who))["tax"]
            assert (b["source_kind"], b["source"], b["confidence"]) == ("hearsay", "mayor", 58)
            assert (await beliefs_of(c, who))["believes:mayor:tax"]["value"] == "up"
        assert not {"fair", "believes:bo:fair"} & set(await beliefs_of(c, "kai"))
        assert not {"tax", "believes:mayor:tax"} & set(await beliefs_of(c, "mayor"))


async def test_rejected_act_is_never_recorded_as_completed(sc: Sidecar) -> None:
    """A rejected act is believed rejected by actor and witnesses; a completed claim is refused."""
    async with WsClient(sc.url, subscribe="*") as c:
        ack = await c.event(
            "act", actor="mira", action="fetch_water", status="rejected", witnesses=["kai"]
        )
        assert ack["changes"] == 2  # the actor always witnesses its own act
        for who in ("mira", "kai"):
            b = (await beliefs_of(c, who))["action:mira:fetch_water"]
            assert (b["value"], b["source_kind"]) == ("rejected", "firsthand")
        forged = await c.event(
            "act", actor="mira", action="fetch_water", status="rejected", witnesses=["kai"],
            claim={"root": "action:mira:fetch_water", "value": "completed"},
        )  # fmt: skip
        assert forged["type"] == "error" and forged["code"] == "contract_violation"
        assert forged["reason"] == "act_claim_given"
        bad_status = await c.event("act", actor="mira", action="fetch_water", status="done")
        assert bad_status["type"] == "error" and bad_status["code"] == "invalid_event"
        await c.sync()
        notes = c.untaken("belief")
        assert notes and all(n["value"] == "rejected" for n in notes)
    values = db_rows(sc.config.db, "SELECT DISTINCT value FROM beliefs")
    assert values == [('"rejected"',)]
    assert db_rows(
        sc.config.db, "SELECT count(*) FROM changes WHERE value_after LIKE '%completed%'"
    ) == [(0,)]


async def test_intervene_implant_distort_suppress_soften(sc: Sidecar) -> None:
    """Each intervention op revises the belief as the rules say, with an intervened record."""
    async with WsClient(sc.url, subscribe="*") as c:
        ack = await c.event(
            "intervene", resident="mira", op="implant", claim={"root": "secret", "value": "gold"},
            subject="gold under the mill",
        )  # fmt: skip
        assert ack["changes"] == 1
        n = await c.next_of("belief")
        assert (n["change"], n["confidence"], n["source_kind"]) == ("formed", 65, "implanted")
        b = (await beliefs_of(c, "mira"))["secret"]
        assert (b["value"], b["intervention"]) == ("gold", "implanted")

        await c.event("observe", **observe(["kai"], "well", "clean", subject="the well is clean"))
        await c.next_of("belief")
        await c.event(
            "intervene", resident="kai", op="distort", claim={"root": "well", "value": "cursed"},
            subject="the well is cursed",
        )  # fmt: skip
        n = await c.next_of("belief", resident="kai")
        assert (n["change"], n["value"], n["prev_value"]) == ("intervened", "cursed", "clean")
        b = (await beliefs_of(c, "kai"))["well"]
        assert (b["subject"], b["intervention"]) == ("the well is cursed", "distorted")

        await c.event("intervene", resident="kai", op="suppress", claim={"root": "well"})
        n = await c.next_of("belief", resident="kai")
        assert (n["change"], n["state"]) == ("intervened", "past")

        await c.event("observe", **observe(["tom"], "bridge", "safe"))
        await c.next_of("belief", resident="tom")
        await c.event("intervene", resident="tom", op="soften", claim={"root": "bridge"})
        n = await c.next_of("belief", resident="tom")
        assert (n["change"], n["prev_confidence"], n["confidence"]) == ("intervened", 78, 53)
        assert n["state"] == "influencing"
        await c.event("intervene", resident="tom", op="soften", claim={"root": "bridge"})
        n = await c.next_of("belief", resident="tom")
        assert (n["confidence"], n["state"]) == (28, "doubtful")


async def test_soften_without_belief_is_refused_and_stores_nothing(sc: Sidecar) -> None:
    """soften on a root the resident holds no belief on is invalid_event; the DB is unchanged."""
    async with WsClient(sc.url) as c:
        await c.event("observe", **observe(["mira"], "well", "clean"))
        before = counts(sc.config.db)
        error = await c.event(
            "intervene", event_id="soft-1", resident="stranger", op="soften",
            claim={"root": "well"},
        )  # fmt: skip
        assert (error["type"], error["code"], error["event_id"]) == (
            "error",
            "invalid_event",
            "soft-1",
        )
        assert counts(sc.config.db) == before
        assert db_rows(
            sc.config.db, "SELECT count(*) FROM residents WHERE resident = 'stranger'"
        ) == [(0,)]


async def test_tick_of_21_days_applies_three_aging_steps(sc: Sidecar) -> None:
    """A hearsay belief at 58 ages 58→50→42→34 (faded, past) when the clock jumps 21 days."""
    async with WsClient(sc.url, subscribe=["mira"]) as c:
        await c.event("say", day=1, **say("bo", ["mira"], "water:well", "poisoned"))
        formed = [await c.next_of("belief") for _ in range(2)]
        assert [(n["root"], n["change"]) for n in formed] == [
            ("water:well", "formed"),
            ("believes:bo:water:well", "formed"),  # firsthand: it never ages
        ]
        ack = await c.event("tick", day=22)
        assert ack["changes"] == 3
        steps = [await c.next_of("belief") for _ in range(3)]
        assert [(s["change"], s["confidence"]) for s in steps] == [
            ("decayed", 50),
            ("decayed", 42),
            ("faded", 34),
        ]
        assert steps[-1]["state"] == "past"
        assert [s["seq"] for s in steps] == list(range(steps[0]["seq"], steps[0]["seq"] + 3))
        assert ack["seq"] == steps[-1]["seq"]
        b = (await beliefs_of(c, "mira"))["water:well"]
        assert (b["confidence"], b["state"]) == (34, "past")


async def test_ack_means_committed(sc: Sidecar) -> None:
    """Once the ack arrives, the event row, its evidence and its changes are in the SQLite file."""
    db = sc.config.db
    async with WsClient(sc.url) as c:
        await c.event("observe", **observe(["mira"], "well", "clean"))
        for i, fields in enumerate(
            [
                ("say", say("bo", ["mira", "kai"], "well", "poisoned")),
                ("observe", observe(["mira", "kai", "tom"], "well", "clean")),
                ("tick", {}),
            ]
        ):
            kind, extra = fields
            ack = await c.event(kind, day=2 + i * 10, **extra)
            eid = ack["event_id"]
            assert ack["type"] == "ack"
            assert db_rows(db, "SELECT kind FROM events WHERE event_id = ?", (eid,)) == [(kind,)]
            evidence = db_rows(db, "SELECT resident FROM evidence WHERE event_id = ?", (eid,))
            # a say gives each listener the claim and the knowledge that bo claimed it
            expected = {"say": ["kai", "kai", "mira", "mira"], "observe": ["kai", "mira", "tom"],
                        "tick": []}[kind]  # fmt: skip
            assert sorted(r for (r,) in evidence) == expected
            changes = db_rows(db, "SELECT seq FROM changes WHERE event_id = ? ORDER BY seq", (eid,))
            assert len(changes) == ack["changes"]
            if changes:
                assert changes[-1][0] == ack["seq"]
                assert db_rows(db, "SELECT change_seq FROM worlds WHERE world = 'town'") == [
                    (ack["seq"],)
                ]


async def test_burst_of_200_events_is_acked_in_send_order(sc: Sidecar) -> None:
    """200 events sent without waiting are acknowledged in exactly the order they were sent."""
    async with WsClient(sc.url) as c:
        sent = []
        for i in range(200):
            who = f"r{i % 7}"
            sent.append(
                await c.send_event(
                    "observe", day=1 + i // 50, **observe([who], f"k{i % 13}", i % 3)
                )
            )
        acks = [await c.next_of("ack") for _ in sent]
        assert [a["event_id"] for a in acks] == sent
        seqs = [a["seq"] for a in acks if "seq" in a]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        assert not c.untaken("error")
    assert db_rows(sc.config.db, "SELECT count(*) FROM events") == [(200,)]
    order = [r[0] for r in db_rows(sc.config.db, "SELECT event_id FROM events ORDER BY seq")]
    assert order == sent


async def test_duplicate_event_id_is_acked_as_duplicate_and_changes_nothing(sc: Sidecar) -> None:
    """A resent event id gets ack duplicate true, no changes or notification; DB unchanged."""
    async with WsClient(sc.url, subscribe="*") as c:
        first = await c.event("observe", event_id="dup", **observe(["mira"], "well", "clean"))
        assert (first["duplicate"], first["changes"]) == (False, 1)
        await c.next_of("belief")
        before = counts(sc.config.db)
        beliefs_before = db_rows(sc.config.db, "SELECT * FROM beliefs")
        again = await c.event("observe", event_id="dup", **observe(["mira"], "well", "clean"))
        other = await c.event("say", event_id="dup", **say("bo", ["mira"], "well", "poisoned"))
        for ack in (again, other):
            assert (ack["type"], ack["duplicate"], ack["changes"]) == ("ack", True, 0)
            assert "seq" not in ack
        await c.sync()
        assert c.untaken("belief") == []
        assert counts(sc.config.db) == before
        assert db_rows(sc.config.db, "SELECT * FROM beliefs") == beliefs_before


async def test_invalid_event_stores_nothing_and_connection_survives(sc: Sidecar) -> None:
    """A malformed event is refused whole (invalid_event, DB unchanged); the next one is acked."""
    async with WsClient(sc.url) as c:
        await c.event("observe", **observe(["mira"], "well", "clean"))
        before = counts(sc.config.db)
        bad = [
            {
                "kind": "observe",
                "claim": {"root": "well", "value": "x"},
                "subject": "s",
            },  # no witnesses
            {
                "kind": "say",
                "speaker": "bo",
                "listeners": ["bo"],
                "claim": {"root": "w", "value": 1},
                "subject": "s",
            },
            {
                "kind": "observe",
                "witnesses": ["new"],
                "claim": {"root": "w", "value": 1.5},
                "subject": "s",
            },
            {"kind": "teleport"},
            {"kind": "tick", "day": -1},
        ]
        for i, fields in enumerate(bad):
            error = await c.event(event_id=f"bad{i}", **{"day": 3, **fields})
            assert (error["type"], error["code"], error["event_id"]) == (
                "error",
                "invalid_event",
                f"bad{i}",
            )
        assert counts(sc.config.db) == before
        ack = await c.event("observe", **observe(["mira"], "well", "clean"))
        assert ack["type"] == "ack" and ack["changes"] == 1
