"""``credence demo``: the whole loop in one minute, over the real wire.

world → evidence → belief → intent → action → world. An in-process sidecar on a temporary
database; a scripted "game" sends a rumour that the well is poisoned, a second telling, and
then two firsthand sightings that the water is clean; a toy NPC policy for Mira listens to her
belief notifications and decides what she does, and what she does goes back into the world as
an ``act`` event.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect

from .server import ServerConfig, Sidecar

__all__ = ["SCRIPT", "DemoRefused", "mira_policy", "run_demo"]

WELL = "water:well"

#: The game's side of the story: (day, narration, event fields).
SCRIPT: list[tuple[float, str, dict[str, Any]]] = [
    (1, "Bo, who dislikes the miller, tells Mira and Kai the well is poisoned.", {
        "kind": "say", "speaker": "bo", "listeners": ["mira", "kai"],
        "claim": {"root": WELL, "value": "poisoned"}, "subject": "the well water is poisoned",
        "topic": "health",
    }),
    (2, "Old Tom repeats it to the whole square.", {
        "kind": "announce", "speaker": "tom", "audience": ["mira", "kai", "lena"],
        "claim": {"root": WELL, "value": "poisoned"}, "subject": "the well water is poisoned",
    }),
    (3, "Mira watches the doctor drink from the well, unharmed.", {
        "kind": "observe", "witnesses": ["mira"], "claim": {"root": WELL, "value": "clean"},
        "subject": "the doctor drank from the well and was fine", "places": ["well"],
        "interpretations": {"mira": "maybe Bo was wrong"},
    }),
    (4, "Mira draws a bucket herself; the water is clear and sweet.", {
        "kind": "observe", "witnesses": ["mira"], "claim": {"root": WELL, "value": "clean"},
        "subject": "the well water is clean", "places": ["well"],
    }),
]  # fmt: skip


#: The game names its residents and actions once, in both narrative languages.
REGISTRY: dict[str, Any] = {
    "kind": "register",
    "residents": [
        {"resident": r, "names": {"en": en, "zh-Hant": zh}}
        for r, en, zh in (("mira", "Mira", "米拉"), ("kai", "Kai", "阿凱"), ("bo", "Bo", "阿博"),
                          ("tom", "Old Tom", "老湯姆"), ("lena", "Lena", "蕾娜"))
    ],
    "actions": [
        {"action": a, "names": {"en": en, "zh-Hant": zh}}
        for a, en, zh in (("avoid_well", "keep away from the well", "避開水井"),
                          ("inspect_well", "go to look at the well", "去查看水井"),
                          ("fetch_water", "fetch water from the well", "到井邊打水"))
    ],
}  # fmt: skip

INTENT_SUBJECTS = {
    "avoid_well": "I kept away from the well",
    "inspect_well": "I went to look at the well myself",
    "fetch_water": "I fetched water from the well",
}


def mira_policy(belief: dict[str, Any]) -> str | None:
    """A toy behaviour tree leaf: Mira's intent given her belief about the well."""
    if belief["resident"] != "mira" or belief["root"] != WELL:
        return None
    if (
        belief["value"] == "poisoned"
        and belief["state"] == "influencing"
        and belief["confidence"] >= 50
    ):
        return "avoid_well"
    if belief["state"] in ("doubtful", "anomalous"):
        return "inspect_well"
    if belief["value"] == "clean":
        return "fetch_water"
    return None


def _line(n: dict[str, Any]) -> str | None:
    if n["root"].startswith("believes:"):
        return None  # "Mira knows Bo said so": kept, queryable, but not news worth a line here
    if n["change"] == "trust":
        source = n["root"].split(":", 2)[1:]
        about = f"{source[0]}" + (f" on {source[1]}" if len(source) > 1 else "")
        return (
            f"  trust  #{n['seq']:<3} {n['resident']} trusts {about}: "
            f"{n['prev_value']:.2f} → {n['value']:.2f}"
        )
    prev = "—" if n["prev_confidence"] is None else n["prev_confidence"]
    source = f" from {n['source']}" if n["source"] else ""
    return (
        f"  belief #{n['seq']:<3} {n['resident']:<5} {n['root']} = {n['value']!s:<9} "
        f"{n['change']:<10} {prev!s:>3} → {n['confidence']:<3} {n['state']:<11} "
        f"({n['source_kind']}{source})"
    )


class _Client:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.count = 0

    async def send_event(self, day: float, fields: dict[str, Any]) -> None:
        self.count += 1
        await self.ws.send(
            msgpack.packb({"type": "event", "event_id": f"demo-{self.count}", "day": day, **fields})
        )


class DemoRefused(Exception):
    """The target sidecar cannot take the demo (refused hello, a world already played)."""


async def run_demo(
    out: Callable[[str], None] = print,
    db: Path | None = None,
    *,
    url: str | None = None,
    world: str = "demo-town",
    token: str | None = None,
    pace: float = 0.0,
) -> list[str]:
    """Run the scenario; return Mira's intents in order (the demo's observable outcome).

    Without ``url`` an in-process sidecar on ``db`` (or a temporary file) plays it; with
    ``url`` the story goes into that running sidecar's ``world`` (which must have no events
    yet: the story starts on day 0), ``pace`` seconds apart, to be watched in its inspector.
    """
    if url is not None:
        return await _play(url, out, world=world, token=token, pace=pace, fresh_world=True)
    with tempfile.TemporaryDirectory(prefix="credence-demo-") as tmp:
        sidecar = Sidecar(ServerConfig(port=0, db=db or Path(tmp) / "demo.db"))
        await sidecar.start()
        try:
            return await _play(sidecar.url, out, world=world, token=token, pace=pace)
        finally:
            await sidecar.stop()


async def _reply(ws: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        frame: dict[str, Any] = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))
        if frame["type"] in (kind, "error"):
            return frame


async def _play(
    url: str,
    out: Callable[[str], None],
    *,
    world: str,
    token: str | None,
    pace: float,
    fresh_world: bool = False,
) -> list[str]:
    intents: list[str] = []
    async with connect(url) as ws:
        hello: dict[str, Any] = {"type": "hello", "protocol": 1, "world": world,
                                 "client": "credence-demo", "subscribe": "*"}  # fmt: skip
        if token:
            hello["token"] = token
        await ws.send(msgpack.packb(hello))
        welcome = await _reply(ws, "welcome")
        if welcome["type"] == "error":
            raise DemoRefused(f"{url} refused the hello: {welcome['code']}: {welcome['message']}")
        if welcome["role"] != "writer":
            raise DemoRefused(f"the token may only read world {world!r}; the demo writes")
        if fresh_world:
            await ws.send(msgpack.packb({"type": "worlds", "rid": "w"}))
            listed = await _reply(ws, "worlds")
            played = [w for w in listed.get("worlds", []) if w["world"] == world]
            if played and played[0]["events"]:
                raise DemoRefused(
                    f"world {world!r} at {url} already has {played[0]['events']} events; "
                    "give a new --world"
                )
        out(f"connected to {url} ({welcome['server']}, world {welcome['world']})\n")
        game = _Client(ws)
        await game.send_event(0, REGISTRY)
        while msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))["type"] != "ack":
            pass
        for step, (day, narration, fields) in enumerate(SCRIPT):
            if pace and step:
                await asyncio.sleep(pace)
            out(f"day {day:g}: {narration}")
            await game.send_event(day, fields)
            pending_acks = 1
            while pending_acks:
                frame = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 10))
                if frame["type"] == "ack":
                    pending_acks -= 1
                elif frame["type"] == "belief":
                    line = _line(frame)
                    if line:
                        out(line)
                    intent = mira_policy(frame)
                    if intent and (not intents or intents[-1] != intent):
                        intents.append(intent)
                        out(f"  → Mira decides: {intent.replace('_', ' ')}")
                        # Her action is a world event too: the loop closes here.
                        await game.send_event(day, {
                            "kind": "act", "actor": "mira", "action": intent,
                            "status": "completed", "witnesses": [],
                            "subject": INTENT_SUBJECTS[intent],
                        })  # fmt: skip
                        pending_acks += 1
                elif frame["type"] == "error":
                    out(f"  error {frame['code']}: {frame['message']}")
            out("")
        await ws.send(
            msgpack.packb({"type": "explain", "resident": "mira", "root": WELL, "rid": 1})
        )
        explanation = await _reply(ws, "explanation")
        out("Why does Mira believe what she believes about the well?")
        for ev in explanation["evidence"]:
            source = f" (told by {ev['source']})" if ev["source"] else ""
            out(
                f"  day {ev['day']:g}: {ev['source_kind']}{source}: {ev['subject']} [{ev['relation']}]"
            )
        b = explanation["belief"]
        out(f"  now: {b['subject']!r}, confidence {b['confidence']}, {b['state']}")
    return intents
