"""Shared helpers for the social-epistemics tests (test_social_*.py): frames over a real socket.

Every helper talks to a running sidecar through :class:`wsclient.WsClient`; the database
helpers read the sidecar's SQLite file on a fresh read-only connection.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from wsclient import Frame, WsClient, db_rows

__all__ = [
    "REPO",
    "belief_of",
    "beliefs_of",
    "explain",
    "held",
    "history",
    "propose",
    "rebuild_check",
    "send_frame",
    "set_trust",
    "stored_event",
    "trust_entries",
]

REPO = Path(__file__).resolve().parent.parent
_ids = itertools.count(1)


async def send_frame(c: WsClient, frame: Frame) -> Frame:
    """Send a frame carrying an ``event_id`` (trust, propose, event); return its ack or error."""
    frame.setdefault("event_id", f"s{next(_ids)}")
    await c.send(frame)
    return await c.ack_of(frame["event_id"])


async def set_trust(
    c: WsClient,
    resident: str,
    source: str,
    value: float,
    *,
    topic: str | None = None,
    day: float = 0,
) -> Frame:
    """Set Trust(resident ← source[, topic]) with a ``trust`` frame; return the ack."""
    frame: Frame = {
        "type": "trust",
        "day": day,
        "resident": resident,
        "source": source,
        "value": value,
    }
    if topic is not None:
        frame["topic"] = topic
    ack = await send_frame(c, frame)
    assert ack["type"] == "ack", ack
    return ack


async def trust_entries(c: WsClient, resident: str, source: str | None = None) -> list[Frame]:
    """The entries of a ``trust`` query (every part concatenated)."""
    frame: Frame = {"type": "trust", "resident": resident}
    if source is not None:
        frame["source"] = source
    parts = await c.request_all(frame)
    assert parts[0]["type"] == "trust", parts[0]
    return [e for p in parts for e in p["entries"]]


async def beliefs_of(c: WsClient, resident: str) -> dict[str, Frame]:
    """A resident's beliefs by root, via the ``beliefs`` query ({} for an unknown resident)."""
    parts = await c.request_all({"type": "beliefs", "resident": resident})
    if parts[0]["type"] == "error":
        assert parts[0]["code"] == "not_found", parts[0]
        return {}
    return {b["root"]: b for p in parts for b in p["beliefs"]}


async def belief_of(c: WsClient, resident: str, root: str) -> Frame | None:
    """One belief as the ``beliefs`` query gives it, or ``None`` if the resident holds none."""
    return (await beliefs_of(c, resident)).get(root)


async def held(c: WsClient, resident: str, root: str) -> Frame:
    """One belief that must exist."""
    belief = await belief_of(c, resident, root)
    assert belief is not None, f"{resident} holds no belief on {root}"
    return belief


async def explain(c: WsClient, resident: str, root: str) -> Frame:
    """The whole ``explanation`` of one belief: belief, evidence and history lists joined."""
    parts = await c.request_all({"type": "explain", "resident": resident, "root": root})
    assert parts[0]["type"] == "explanation", parts[0]
    return {
        **parts[0],
        "evidence": [e for p in parts for e in p["evidence"]],
        "history": [h for p in parts for h in p["history"]],
    }


async def history(c: WsClient, resident: str, root: str) -> list[str]:
    """The change kinds recorded on one belief, oldest first."""
    return [h["change"] for h in (await explain(c, resident, root))["history"]]


async def propose(c: WsClient, resident: str, edits: list[Frame], day: float = 1) -> Frame:
    """Send a ``propose`` frame; return its ack (with ``results``)."""
    ack = await send_frame(c, {"type": "propose", "day": day, "resident": resident, "edits": edits})
    assert ack["type"] == "ack", ack
    return ack


def stored_event(db: Path, event_id: str) -> list[tuple[Any, ...]]:
    """The world-log rows (kind, body) of one event id: empty if it was never stored."""
    return db_rows(db, "SELECT kind, body FROM events WHERE event_id = ?", (event_id,))


def rebuild_check(db: Path) -> subprocess.CompletedProcess[str]:
    """``credence rebuild --db FILE --check`` as a real subprocess on this checkout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "rebuild", "--db", str(db), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
