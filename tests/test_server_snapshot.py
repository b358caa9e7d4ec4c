"""A reply sees one commit: the statements of one query run in one read transaction.

A narrative is built from about a hundred statements, an ``explain`` from several. Here the
reader thread is held in the middle of building one (right after its first reads) while
another client's event is acked over the wire: the reply must be the one the database gave
before that event, byte for byte, and the next reply must show it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.wsclient import Frame, WsClient, guard, observe, running, say


def _story() -> list[tuple[float, str, dict[str, Any]]]:
    return [
        (1, "observe", observe(["alice"], "well:water", "clean", "the well water is clean")),
        (2, "say", say("bob", ["alice"], "bridge:state", "broken", "the bridge is broken")),
        (3, "observe", observe(["alice"], "key:where", "counter", "the key is on the counter")),
    ]


def _hold_once(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    name: str,
    loop: asyncio.AbstractEventLoop,
    meanwhile: Callable[[], Any],
) -> list[Frame]:
    """Wrap ``module.name`` (a read step, run in the reader thread) so that its first call,
    once it has read, waits until ``meanwhile()`` (a coroutine run on the loop) is done."""
    original = getattr(module, name)
    acks: list[Frame] = []

    def held(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if not acks:
            acks.append(asyncio.run_coroutine_threadsafe(meanwhile(), loop).result(guard(30)))
        return out

    monkeypatch.setattr(module, name, held)
    return acks


def _body(frames: list[Frame]) -> list[Frame]:
    return [{k: v for k, v in f.items() if k != "rid"} for f in frames]


@pytest.mark.parametrize("kind", ["narrative", "explain"])
async def test_a_reply_is_built_from_one_commit_while_events_are_acked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    import sidecar.read.narrative as narrative
    import sidecar.server.queries as queries

    query: Frame = (
        {"type": "narrative", "resident": "alice"}
        if kind == "narrative"
        else {"type": "explain", "resident": "alice", "root": "bridge:state"}
    )
    async with running(tmp_path) as sc, WsClient(sc.url) as game, WsClient(sc.url) as other:
        for day, event_kind, fields in _story():
            assert (await game.event(event_kind, day, **fields))["type"] == "ack"
        before = _body(await game.request_all(dict(query)))

        async def carol_says_it_was_fixed() -> Frame:
            fields = say("carol", ["alice"], "bridge:state", "fixed", "the bridge was fixed")
            return await other.event("say", 4, **fields)

        loop = asyncio.get_running_loop()
        if kind == "narrative":  # (held after the sections are counted, before any is read)
            acks = _hold_once(
                monkeypatch, narrative, "section_sizes", loop, carol_says_it_was_fixed
            )
        else:  # (held after the belief and its evidence are read, before its changes are)
            acks = _hold_once(
                monkeypatch, queries, "evidence_summary", loop, carol_says_it_was_fixed
            )
        during = _body(await game.request_all(dict(query)))
        assert acks and acks[0]["type"] == "ack" and acks[0]["changes"] > 0, acks
        after = _body(await game.request_all(dict(query)))
    assert during == before
    assert after != before  # (the event changed what the reply says: the test can fail)
