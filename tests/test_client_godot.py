"""The Godot addon (protocol/clients/godot): every script checked by gdtoolkit, and the addon's
scripts run against a real sidecar.

Godot cannot be installed here, so the addon is tested in two ways (its README says exactly
what this covers and what it does not):

* every ``.gd`` file parses (gdtoolkit's Godot 4 grammar), passes ``gdlint`` and is
  ``gdformat``-clean; the scene, plugin and project files are well formed and name files that
  exist; names used across files (classes, CredenceProtocol members, client methods and
  signals) are defined;
* the scripts are *executed* by tests/gdscript.py (an interpreter over gdtoolkit's parse
  tree): ``credence_protocol.gd``'s pure functions on their cases and on every server vector,
  and ``credence_client.gd`` itself as a node in a model of the engine (tests/godot_engine.py:
  Godot's polled WebSocketPeer over a real socket, Godot-style JSON; OS, Thread and pipes for
  ``credence_sidecar.gd``) against a real sidecar, through a kill -9 and a restart. A second harness runs the same scenario with the protocol
  functions and the node's glue written in Python.
"""

from __future__ import annotations

import asyncio
import configparser
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gdscript import GDScript, Runtime
from gdtoolkit.formatter import format_code
from gdtoolkit.linter import DEFAULT_CONFIG, lint_code
from gdtoolkit.parser import parser
from godot_engine import engine
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from wsclient import WsClient, db_rows, guard, observe, rebuild_check, running, say, within

from protocol import parse_hello

ROOT = Path(__file__).resolve().parent.parent
GODOT = ROOT / "protocol" / "clients" / "godot"
ADDON = GODOT / "addons" / "credence"
SCRIPTS = sorted(GODOT.rglob("*.gd"))
VECTORS = json.loads((ROOT / "protocol" / "vectors" / "vectors.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def gd() -> GDScript:
    return GDScript(ADDON / "credence_protocol.gd")


def godot_json(text: str) -> Any:
    """JSON as Godot 4's JSON.parse_string reads it: every number a float."""
    return json.loads(text, parse_int=float)


# ----------------------------------------------------------------------- static checks


def test_the_addon_has_its_scripts() -> None:
    """The addon holds the client, protocol, request, mirror, sidecar and plugin scripts."""
    names = {p.name for p in SCRIPTS}
    assert names >= {
        "credence_client.gd", "credence_protocol.gd", "credence_request.gd",
        "credence_belief_mirror.gd", "credence_sidecar.gd", "plugin.gd", "credence_demo.gd",
    }  # fmt: skip


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_every_script_parses_lints_and_is_formatted(path: Path) -> None:
    """gdparse, gdlint (default rules) and gdformat --check all pass on each script."""
    code = path.read_text(encoding="utf-8")
    parser.parse(code)  # raises on a syntax error
    problems = lint_code(code, DEFAULT_CONFIG)
    assert not problems, "\n".join(
        f"{path.name}:{p.line}: {p.name}: {p.description}" for p in problems
    )
    assert format_code(code, max_line_length=100) == code, f"{path.name} is not gdformat-clean"


def test_the_readme_example_parses() -> None:
    """The GDScript in the addon's README is valid Godot 4 syntax."""
    readme = (GODOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```gdscript\n(.*?)```", readme, re.S)
    assert blocks
    for block in blocks:
        parser.parse(block)


def test_plugin_project_and_scene_name_files_that_exist() -> None:
    """plugin.cfg names its script; project.godot enables the plugin and a scene that exists;
    the scene's ext_resources exist and load_steps counts them."""
    cfg = configparser.ConfigParser()
    cfg.read_string((ADDON / "plugin.cfg").read_text(encoding="utf-8"))
    plugin = {k: v.strip('"') for k, v in cfg["plugin"].items()}
    assert plugin["name"] == "Credence" and plugin["version"]
    assert (ADDON / plugin["script"]).is_file()
    project = (GODOT / "project.godot").read_text(encoding="utf-8")
    for res in re.findall(r'"res://([^"]+)"', project):
        assert (GODOT / res).is_file(), res
    assert "res://addons/credence/plugin.cfg" in project
    for scene in GODOT.rglob("*.tscn"):
        text = scene.read_text(encoding="utf-8")
        resources = re.findall(r'^\[ext_resource [^\]]*path="res://([^"]+)"', text, re.M)
        assert resources and all((GODOT / r).is_file() for r in resources), resources
        steps = int(re.search(r"load_steps=(\d+)", text).group(1))  # type: ignore[union-attr]
        assert steps == len(resources) + 1
        ids = re.findall(r'ExtResource\("([^"]+)"\)', text)
        declared = re.findall(r'^\[ext_resource [^\]]*id="([^"]+)"', text, re.M)
        assert set(ids) <= set(declared)


def _declared(path: Path) -> dict[str, set[str]]:
    code = path.read_text(encoding="utf-8")
    return {
        "func": set(re.findall(r"^(?:static )?func (\w+)", code, re.M)),
        "signal": set(re.findall(r"^signal (\w+)", code, re.M)),
        "var": set(re.findall(r"^(?:@export )?var (\w+)", code, re.M)),
        "const": set(re.findall(r"^const (\w+)", code, re.M)),
        "enum": set(re.findall(r"^enum (\w+)", code, re.M)),
    }


def test_names_used_across_files_are_defined() -> None:
    """Every Credence* class named exists; every CredenceProtocol.x, client method/signal used
    by the demo, mirror/request member used by the client, and emitted signal is declared."""
    classes = {
        m.group(1): p
        for p in SCRIPTS
        for m in [re.search(r"^class_name (\w+)", p.read_text(encoding="utf-8"), re.M)]
        if m
    }
    members = {name: _declared(path) for name, path in classes.items()}
    flat = {name: set().union(*decl.values()) for name, decl in members.items()}
    for path in SCRIPTS:
        code = re.sub(r"#.*", "", path.read_text(encoding="utf-8"))  # code, not comments
        own = set().union(*_declared(path).values())
        for used in set(re.findall(r"\b(Credence[A-Z]\w*)\b", code)):
            assert used in classes, f"{path.name}: unknown class {used}"
        for cls, member in re.findall(r"\b(Credence[A-Z]\w*)\.(\w+)", code):
            assert member in flat[cls] or member == "new", f"{path.name}: {cls}.{member}"
        for member in re.findall(r"\bCredenceProtocol\.Reply\.(\w+)", code):
            assert member in GDScript(ADDON / "credence_protocol.gd").enums["Reply"]
        for sig in re.findall(r"^\s*(\w+)\.emit\b", code, re.M):
            assert sig in own, f"{path.name}: emits undeclared signal {sig}"
    demo = (GODOT / "demo" / "credence_demo.gd").read_text(encoding="utf-8")
    for member in re.findall(r"_client\.(\w+)", demo):
        assert member in flat["CredenceClient"], f"demo: _client.{member}"
    for member in re.findall(r"_sidecar\.(\w+)", demo):
        assert member in flat["CredenceSidecar"], f"demo: _sidecar.{member}"
    client = (ADDON / "credence_client.gd").read_text(encoding="utf-8")
    for member in re.findall(r"\bmirror\.(\w+)", client):
        assert member in flat["CredenceBeliefMirror"], f"client: mirror.{member}"
    for member in re.findall(r"\brequest\.(\w+)", client):
        assert member in flat["CredenceRequest"], f"client: request.{member}"


# ----------------------------------------------------------------------- pure functions


def _same(a: Any, b: Any, path: str = "") -> None:
    """Equal as values and as types (int is not float), recursively."""
    assert type(a) is type(b), f"{path}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for key in a:
            _same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS if v["direction"] == "server"], ids=lambda v: v["name"]
)
def test_whole_numbers_restore_every_server_frame(gd: GDScript, vector: dict[str, Any]) -> None:
    """A server vector read as Godot reads JSON (all floats) and passed through whole_numbers
    is the vector itself, types included: seqs, counts, confidences and claim values are ints,
    days and trust values floats."""
    frame = vector["json"]
    _same(gd.call("whole_numbers", godot_json(json.dumps(frame))), frame, vector["name"])


def test_hello_frames_are_what_the_sidecar_accepts(gd: GDScript) -> None:
    """hello_frame: subscribe "*" or a list, filters restored, resume only with a filter."""
    hello = gd.call("hello_frame", "town", "", "*", [], -1, "credence-godot/0.1.0")
    assert hello == {"type": "hello", "protocol": 1, "world": "town",
                     "client": "credence-godot/0.1.0", "subscribe": "*"}  # fmt: skip
    assert parse_hello(hello).subscribe_all
    resume = gd.call("hello_frame", "town", "secret", ["mira"], [], 12, "g")
    parsed = parse_hello(godot_json(json.dumps(resume)))
    assert (parsed.resume, parsed.subscribe, parsed.token) == (12, ("mira",), "secret")
    assert "resume" not in gd.call("hello_frame", "town", "", None, [], 12, "g")
    filters = [{"residents": ["kai"], "roots": ["water:"]}]
    restoring = gd.call("hello_frame", "town", "", None, filters, 12, "g")
    assert restoring["filters"] == filters and restoring["resume"] == 12
    assert parse_hello(godot_json(json.dumps(restoring))).resume == 12
    vector = next(v for v in VECTORS if v["name"] == "client.hello.resume_filters")["json"]
    built = gd.call("hello_frame", "town", "", vector["subscribe"], vector["filters"], 4, "x")
    assert {k: v for k, v in built.items() if k != "client"} == {
        k: v for k, v in vector.items() if k != "rid"
    }


def test_reply_bookkeeping(gd: GDScript) -> None:
    """reply_key, classify_reply, advance_seq, after_welcome and filters_without."""
    assert gd.call("reply_key", {"type": "ack", "rid": "g3"}, {}) == "g3"
    assert gd.call("reply_key", {"type": "error", "event_id": "e-1"}, {"e-1": "g7"}) == "g7"
    assert gd.call("reply_key", {"type": "error", "code": "x"}, {}) == ""
    reply = gd.enums["Reply"]
    assert gd.call("classify_reply", {"type": "beliefs", "more": True}, False) == reply["PART"]
    assert gd.call("classify_reply", {"type": "beliefs", "more": False}, False) == reply["DONE"]
    shutting = {"type": "error", "code": "shutting_down"}
    assert gd.call("classify_reply", shutting, True) == reply["HELD"]
    assert gd.call("classify_reply", shutting, False) == reply["FAILED"]
    assert gd.call("advance_seq", -1, {"type": "welcome", "seq": 7}) == 7
    assert gd.call("advance_seq", 9, {"type": "welcome", "seq": 7}) == 9
    assert gd.call("advance_seq", 9, {"type": "belief", "seq": 12}) == 12
    assert gd.call("advance_seq", 12, {"type": "resumed", "seq": 10, "sent": 0}) == 12
    assert gd.call("advance_seq", 12, {"type": "ack", "seq": 30}) == 12
    unanswered = [{"type": "event", "rid": "g1"}, {"type": "beliefs", "rid": "g2"}]
    assert gd.call("after_welcome", unanswered) == unanswered
    filters = [{"residents": ["a", "b"]}, {"residents": "*"}, {"residents": ["a"]}]
    assert gd.call("filters_without", filters, ["a"]) == [{"residents": ["b"]}, {"residents": "*"}]
    assert gd.call("filters_without", filters, "*") == []
    assert gd.call("sidecar_url", "CREDENCE_URL=ws://127.0.0.1:5\n") == "ws://127.0.0.1:5"
    assert gd.call("sidecar_url", "INFO listening") == ""
    assert gd.call("backoff", 0, 0.2, 5.0) == 0.2 and gd.call("backoff", 10, 0.2, 5.0) == 5.0
    assert gd.call("is_fatal_close", 4001) and not gd.call("is_fatal_close", 1001)


# ----------------------------------------------------------------------- against a sidecar


class GodotModel:
    """What credence_client.gd does, step for step (its `_receive`, `_on_welcome`, `_answer`,
    `_request`, `_on_closed`), with every protocol decision made by the interpreted
    credence_protocol.gd, over a real WebSocket with JSON text frames parsed as Godot parses
    them. The glue itself is this Python, not the GDScript (see the addon's README)."""

    def __init__(self, gd: GDScript, world: str = "town") -> None:
        self.gd = gd
        self.world = world
        self.last_seq = -1
        self.pending: dict[str, dict[str, Any]] = {}  # rid -> {"frame", "event_id", "parts"}
        self.rid_of_event: dict[str, str] = {}
        self.results: dict[str, list[tuple[bool, dict[str, Any]]]] = {}  # rid -> settlements
        self.notes: list[dict[str, Any]] = []
        self.resumed: list[dict[str, Any]] = []
        self.mirror = gd.call("mirror_new")
        self.filters: list[dict[str, Any]] = []
        self.ws: ClientConnection | None = None
        self.next_rid = 1
        self.welcomes = 0

    async def open(self, url: str) -> None:
        self.ws = await within(connect(url, proxy=None, compression=None, max_size=None))
        hello = self.gd.call(
            "hello_frame", self.world, "", "*", self.filters, self.last_seq, "godot-model"
        )
        await self.ws.send(json.dumps(hello))

    async def pump(self, until: Any, seconds: float = 60.0) -> None:
        """Read frames until ``until()`` holds (raises ConnectionClosed if the socket drops)."""
        assert self.ws is not None
        while not until():
            text = await within(self.ws.recv(), seconds)
            assert isinstance(text, str), "a JSON hello gets JSON text frames only"
            await self.receive(text)

    async def receive(self, text: str) -> None:
        frame = self.gd.call("whole_numbers", godot_json(text))
        self.last_seq = self.gd.call("advance_seq", self.last_seq, frame)
        kind = frame.get("type")
        if kind == "welcome":
            self.welcomes += 1
            unanswered = []
            for entry in self.pending.values():
                entry["parts"] = []
                unanswered.append(entry["frame"])
            assert self.ws is not None
            for sent in self.gd.call("after_welcome", unanswered):
                await self.ws.send(json.dumps(sent))
        elif kind == "belief":
            self.gd.call("mirror_apply", self.mirror, frame)
            self.notes.append(frame)
        elif kind == "resumed":
            self.resumed.append(frame)
        else:
            self.answer(frame)

    def answer(self, frame: dict[str, Any]) -> None:
        key = self.gd.call("reply_key", frame, self.rid_of_event)
        entry = self.pending.get(key)
        if entry is None:
            return
        verdict = self.gd.call("classify_reply", frame, entry["event_id"] != "")
        reply = self.gd.enums["Reply"]
        if verdict == reply["HELD"]:
            entry["parts"] = []
        elif verdict == reply["PART"]:
            entry["parts"].append(frame)
        else:
            ok = verdict == reply["DONE"]
            joined = frame
            if ok:
                entry["parts"].append(frame)
                joined = self.gd.call("join_parts", entry["parts"])
            del self.pending[key]
            self.rid_of_event.pop(entry["event_id"], None)
            self.results.setdefault(key, []).append((ok, joined))

    async def request(self, frame: dict[str, Any]) -> str:
        event_id = self.gd.call("event_id_of", frame)
        self.pending[frame["rid"]] = {"frame": frame, "event_id": event_id, "parts": []}
        if event_id:
            self.rid_of_event[event_id] = frame["rid"]
        assert self.ws is not None
        try:
            await self.ws.send(json.dumps(frame))
        except ConnectionClosed:
            pass  # stays pending: resent after the welcome
        return str(frame["rid"])

    def rid(self) -> str:
        self.next_rid += 1
        return f"g{self.next_rid - 1}"

    async def send_event(self, event: dict[str, Any]) -> str:
        return await self.request(self.gd.call("event_frame", event, self.rid()))

    async def query(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        rid = await self.request(self.gd.call("request_frame", kind, fields, self.rid()))
        await self.pump(lambda: rid in self.results)
        ok, reply = self.results[rid][0]
        assert ok, reply
        return reply


def _rules(folder: Path) -> Path:
    """Rules accepting late events (``late_event_days``), so another writer may move the
    clock while a client's events wait to be resent."""
    rules = folder / "rules.toml"
    rules.write_text("late_event_days = 1000000\n", encoding="utf-8")
    return rules


def _start(db: Path, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """`credence serve --port PORT` on ``db``, and the URL read from its stdout by the addon's
    sidecar_url (CredenceSidecar's way)."""
    rules = _rules(db.parent)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar.cli", "serve", "--db", str(db), "--port", str(port),
         "--rules", str(rules), "--log-level", "WARNING"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    gd = GDScript(ADDON / "credence_protocol.gd")
    for line in proc.stdout:
        url = gd.call("sidecar_url", line)
        if url:
            return proc, url
    raise AssertionError("the sidecar printed no CREDENCE_URL line")


def _story(n: int) -> list[dict[str, Any]]:
    """n events of a small town: rumours and sightings that contradict them, several changes
    each (formed, doubted, corrected, trust, believes:)."""
    events = []
    for i in range(n):
        if i % 3 == 0:
            kind, fields = "say", say("bo", ["mira", "kai", "ann"], f"rumour:{i % 7}", "yes")
        else:
            kind, fields = "observe", observe(["mira", "kai"], f"rumour:{(i - 1) % 7}", i % 2 == 0)
        events.append({"event_id": f"gd-{i}", "day": 1.0 + i * 0.5, "kind": kind, **fields})
    return events


async def test_kill_9_and_restart_resumes_and_resends_exactly_once(
    gd: GDScript, tmp_path: Path
) -> None:
    """The addon's protocol logic through a kill -9 of `credence serve --port 0` mid-stream and
    a restart on the same database and port: every event applied once, every change
    notified once, the mirror equal to the beliefs, and rebuild --check passes."""
    db = tmp_path / "godot.db"
    proc, url = _start(db)
    port = int(url.rsplit(":", 1)[1])
    model = GodotModel(gd)
    events = _story(90)
    others = [{**e, "event_id": f"other-{i}", "day": 50.0 + i} for i, e in enumerate(_story(6))]
    try:
        await model.open(url)
        await model.pump(lambda: model.welcomes == 1)
        for event in events[:40]:
            await model.send_event(event)
        await model.pump(lambda: len(model.results) >= 20)
        for event in events[40:60]:  # in flight when the sidecar dies
            await model.send_event(event)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=guard(30))
        for event in events[60:]:  # sent into a dead socket, or not at all
            await model.send_event(event)
        with pytest.raises(ConnectionClosed):
            await model.pump(lambda: False)
        unanswered_at_kill = len(model.pending)
        seq_at_kill = model.last_seq
        proc, url2 = _start(db, port)
        assert url2 == url
        # Another writer goes on while this client is away: its changes come in the backlog.
        async with WsClient(url) as other:
            for event in others:
                ack = await other.event(**event)
                assert ack["type"] == "ack" and ack["changes"] > 0, ack
        await model.open(url)
        await model.pump(lambda: model.resumed and not model.pending)
        for event in events[-3:]:  # a resend the game makes itself: acked as duplicates
            event_id = event["event_id"]
            rid = await model.send_event(event)
            await model.pump(lambda rid=rid: rid in model.results)
            ok, ack = model.results[rid][0]
            assert ok and ack["duplicate"] is True and ack["event_id"] == event_id
        beliefs = {r: await model.query("beliefs", {"resident": r}) for r in ("mira", "kai", "ann")}
        worlds = await model.query("worlds", {})
    finally:
        if model.ws is not None:
            await model.ws.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=guard(30))
    assert unanswered_at_kill >= 30, "the kill must leave events in flight"
    acks = [r for results in model.results.values() for ok, r in results if r.get("type") == "ack"]
    assert all(len(results) == 1 for results in model.results.values())  # each settles once
    first = [a for a in acks if a["event_id"] in {e["event_id"] for e in events}]
    assert sorted({a["event_id"] for a in first}) == sorted(e["event_id"] for e in events)
    stored = db_rows(db, "SELECT event_id FROM events WHERE world = 'town'")
    assert sorted(r[0] for r in stored) == sorted(e["event_id"] for e in events + others)
    assert model.resumed[0]["sent"] > 0, "the other writer's changes came in the backlog"
    latest = db_rows(db, "SELECT max(seq) FROM changes WHERE world = 'town'")[0][0]
    seqs = [n["seq"] for n in model.notes]
    assert seqs == list(range(1, latest + 1)), "every change notified once, in order, none lost"
    assert all(type(s) is int for s in seqs) and model.last_seq == latest > seq_at_kill
    assert worlds["worlds"][0]["changes"] == latest
    for resident, reply in beliefs.items():
        mirrored = gd.call("mirror_beliefs", model.mirror, resident)
        assert [(b["root"], b["value"], b["confidence"], b["state"]) for b in mirrored] == [
            (b["root"], b["value"], b["confidence"], b["state"]) for b in reply["beliefs"]
        ]
    await asyncio.to_thread(rebuild_check, db)


async def test_paged_replies_are_joined(gd: GDScript, tmp_path: Path) -> None:
    """A beliefs reply and an explanation long enough to come in several JSON parts are
    joined by join_parts into exactly what the parts held, in order."""
    async with running(tmp_path) as sc:
        model = GodotModel(gd)
        await model.open(sc.url)
        await model.pump(lambda: model.welcomes == 1)
        subject = "a long subject " * 30
        for i in range(300):
            fields = observe(["mira"], f"thing:{i:04d}", "here", subject)
            await model.send_event({"event_id": f"p-{i}", "day": 1.0, "kind": "observe", **fields})
        for i in range(150):
            fields = observe(["mira"], "thing:0000", "here", f"seen again {i} " + subject)
            await model.send_event({"event_id": f"q-{i}", "day": 2.0, "kind": "observe", **fields})
        await model.pump(lambda: not model.pending)
        parts_seen: list[dict[str, Any]] = []
        original = model.answer

        def spy(frame: dict[str, Any]) -> None:
            parts_seen.append(frame)
            original(frame)

        model.answer = spy  # type: ignore[method-assign]
        beliefs = await model.query("beliefs", {"resident": "mira"})
        assert len(parts_seen) > 2 and parts_seen[-1]["more"] is False
        assert [b["root"] for b in beliefs["beliefs"]] == [f"thing:{i:04d}" for i in range(300)]
        assert "part" in beliefs and beliefs["more"] is False
        parts_seen.clear()
        explanation = await model.query("explain", {"resident": "mira", "root": "thing:0000"})
        assert len(parts_seen) > 1
        assert len(explanation["evidence"]) == 151
        assert [h["seq"] for h in explanation["history"]] == sorted(
            h["seq"] for p in parts_seen for h in p.get("history", [])
        )
        assert model.ws is not None
        await model.ws.close()


# ----------------------------------------------------- the client node itself, in a model engine


class Node:
    """The addon's CredenceClient (credence_client.gd itself, interpreted) in a model of the
    engine (tests/godot_engine.py): `_process` called in a loop as Godot calls it."""

    def __init__(self, url: str, runtime: Runtime | None = None, **exports: Any) -> None:
        self.runtime = runtime or Runtime(ADDON, engine())
        self.client = self.runtime.new("CredenceClient")
        self.others: list[Any] = []  # more nodes of the scene, processed each frame too
        for key, value in {"url": url, "min_delay": 0.05, "max_delay": 0.3, **exports}.items():
            self.client.set(key, value)
        self.seen: dict[str, list[Any]] = {}
        for signal_name in ("welcomed", "belief_changed", "resumed", "acked", "refused",
                            "error_received", "disconnected", "state_changed"):  # fmt: skip
            self.seen[signal_name] = []
            self.client.get(signal_name).connect(
                lambda *args, _n=signal_name: self.seen[_n].append(
                    args[0] if len(args) == 1 else args
                )
            )
        self.client.call("_ready")

    def frame(self) -> None:
        for other in self.others:
            other.call("_process", 0.016)
        self.client.call("_process", 0.016)
        deferred = self.runtime.engine["__deferred__"]
        while deferred:
            target, args = deferred.pop(0)
            target(*args)

    async def run_until(self, done: Any, seconds: float = 60.0) -> None:
        async def loop() -> None:
            while not done():
                self.frame()
                await asyncio.sleep(0.002)

        await within(loop(), seconds)

    def request(self, method: str, *args: Any) -> Any:
        return self.client.call(method, *args)


def _done(requests: list[Any]) -> bool:
    return all(r.get("done") for r in requests)


async def test_the_client_node_through_kill_9_and_restart(tmp_path: Path) -> None:
    """credence_client.gd itself (interpreted, in a model engine): 90 events streamed, the
    sidecar killed with SIGKILL mid-stream and restarted on the same database and port while
    another writer goes on; the node reconnects, resumes (through its hello subscription, mira,
    and a filter added with subscribe(), kai: restored in hello.filters) and resends: every
    request completes once and ok, every change of mira and kai arrives once in seq order, the
    mirror equals the beliefs."""
    db = tmp_path / "node.db"
    proc, url = _start(db)
    port = int(url.rsplit(":", 1)[1])
    node = Node(url, subscribe_all=False, subscribe_residents=["mira"])
    events = _story(90)
    others = [{**e, "event_id": f"other-{i}", "day": 50.0 + i} for i, e in enumerate(_story(6))]
    try:
        node.request("connect_to_sidecar")
        kai = node.request("subscribe", {"residents": ["kai"]})
        await node.run_until(lambda: kai.get("done"))
        assert kai.get("ok")
        first = [node.request("send_event", e) for e in events[:40]]
        await node.run_until(lambda: sum(r.get("done") for r in first) >= 20)
        middle = [node.request("send_event", e) for e in events[40:60]]
        node.frame()  # written to the socket
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=guard(30))
        last = [node.request("send_event", e) for e in events[60:]]
        await node.run_until(lambda: node.seen["disconnected"])
        requests = first + middle + last
        unanswered_at_kill = sum(not r.get("done") for r in requests)
        proc, url2 = _start(db, port)
        assert url2 == url
        async with WsClient(url) as other:
            for event in others:
                assert (await other.event(**event))["type"] == "ack"
        await node.run_until(lambda: _done(requests) and node.seen["resumed"])
        again = node.request("send_event", events[0])  # the game resends one itself
        replies = {r: node.request("beliefs", r) for r in ("mira", "kai")}
        await node.run_until(lambda: _done([again, *replies.values()]))
        node.request("close")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=guard(30))
    assert unanswered_at_kill >= 30
    assert all(r.get("ok") for r in requests), [
        r.get("result") for r in requests if not r.get("ok")
    ]
    assert sorted(r.get("result")["event_id"] for r in requests) == sorted(
        e["event_id"] for e in events
    )
    assert again.get("ok") and again.get("result")["duplicate"] is True
    assert node.client.get("state") == 0 and node.client.get("in_flight") == 0  # CLOSED
    assert len(node.seen["welcomed"]) == 2 and node.seen["resumed"][0]["sent"] > 0
    followed = db_rows(
        db, "SELECT seq FROM changes WHERE world = 'town' AND resident IN ('mira', 'kai') "
        "ORDER BY seq",
    )  # fmt: skip
    seqs = [n["seq"] for n in node.seen["belief_changed"]]
    assert seqs == [r[0] for r in followed] and all(type(s) is int for s in seqs)
    away = db_rows(db, "SELECT min(seq) FROM changes WHERE world = 'town' AND event_id LIKE "
                       "'other-%' AND resident = 'kai'")[0][0]  # fmt: skip
    assert away in seqs, "kai's changes while away came through the restored filter"
    assert node.client.get("last_seq") == seqs[-1]
    mirror = node.client.get("mirror")
    for resident, reply in replies.items():
        assert [(b["root"], b["value"], b["confidence"], b["state"])
                for b in mirror.call("beliefs", resident)] == [
            (b["root"], b["value"], b["confidence"], b["state"])
            for b in reply.get("result")["beliefs"]
        ]  # fmt: skip
    await asyncio.to_thread(rebuild_check, db)


async def test_the_client_node_pages_queries_and_refuses_locally(tmp_path: Path) -> None:
    """The node joins paged replies (a beliefs listing; a 50,000-character narrative, whose
    text pieces and section runs are joined), answers a refused event through its request and
    the `refused` signal, and completes requests after close() with code "closed"."""
    async with running(tmp_path) as sc:
        node = Node(sc.url)
        node.request("connect_to_sidecar")
        subject = "a long subject " * 60
        sent = [
            node.request("send_event", {"event_id": f"p-{i}", "day": 1.0, "kind": "observe",
                                        **observe(["mira"], f"thing{i:04d}:where", "here", subject)})
            for i in range(150)
        ]  # fmt: skip
        bad = node.request("send_event", {"event_id": "bad", "day": 1.0, "kind": "observe",
                                          **observe(["mira"], "x", 1.5)})  # fmt: skip
        listing = node.request("beliefs", "mira")
        await node.run_until(lambda: _done([*sent, bad, listing]))
        assert all(r.get("ok") for r in sent)
        assert not bad.get("ok") and bad.get("result")["code"] == "invalid_event"
        assert node.seen["refused"][0]["event_id"] == "bad"
        reply = listing.get("result")
        assert [b["root"] for b in reply["beliefs"]] == [f"thing{i:04d}:where" for i in range(150)]
        assert reply["part"] >= 2 and reply["more"] is False  # it came in several parts
        pages, after = [], ""  # a page at a time: limit, then after the last root received
        while True:
            filters = {"limit": 64, **({"after": after} if after else {})}
            page = node.request("beliefs", "mira", filters)
            await node.run_until(lambda page=page: page.get("done"))
            pages.append([b["root"] for b in page.get("result")["beliefs"]])
            if len(pages[-1]) < 64:
                break
            after = pages[-1][-1]
        assert [len(p) for p in pages] == [64, 64, 22]
        assert [r for p in pages for r in p] == [b["root"] for b in reply["beliefs"]]
        again = [
            node.request("send_event", {"event_id": f"a-{i}", "day": 2.0, "kind": "observe",
                                        **observe(["mira"], "thing0000:where", "gone")})
            for i in range(3)
        ]  # fmt: skip
        latest = node.request("explain", "mira", "thing0000:where", 1)
        await node.run_until(lambda: _done([*again, latest]))
        explained = latest.get("result")
        assert [len(explained["evidence"]), explained["evidence_total"]] == [1, 4]
        assert explained["evidence"][0]["event_id"] == "a-2"
        narrative = node.request("narrative", "mira", 50000)
        await node.run_until(lambda: narrative.get("done"))
        async with WsClient(sc.url) as reference:  # the same narrative, joined as SPEC §11 says
            parts = await reference.request_all(
                {"type": "narrative", "resident": "mira", "budget": 50000}
            )
        joined = narrative.get("result")
        assert len(parts) > 1 and joined["part"] == len(parts) - 1
        assert joined["text"] == "".join(p["text"] for p in parts) and len(joined["text"]) > 20000
        runs = [s for p in parts for s in p["sections"]]
        names = [s["name"] for s in joined["sections"]]
        assert names == list(dict.fromkeys(s["name"] for s in runs)) and len(names) == 12
        for section in joined["sections"]:
            assert section["entries"] == [
                e for r in runs if r["name"] == section["name"] for e in r["entries"]
            ]
        node.request("close")
        late = node.request("worlds")
        node.frame()
        assert late.get("done") and late.get("result")["code"] == "closed"


async def test_the_client_node_pages_a_graph(tmp_path: Path) -> None:
    """graph(resident, root, after, limit): a page of `limit` event nodes with the claim node,
    and its `next` passed back as `after` gives the next page, to the last (next null); and
    worlds(after, limit), a page of the worlds."""
    async with running(tmp_path) as sc:
        node = Node(sc.url)
        node.request("connect_to_sidecar")
        sent = [
            node.request("send_event", {"event_id": f"g-{n}", "day": float(n), "kind": "say",
                                        **say(f"teller{n}", ["mira"], "water:well", "poisoned")})
            for n in range(1, 6)
        ]  # fmt: skip
        await node.run_until(lambda: _done(sent))
        events, after, pages = [], "", 0
        while True:
            page = node.request("graph", "mira", "water:well", after, 2)
            await node.run_until(lambda page=page: page.get("done"))
            reply = page.get("result")
            assert reply["type"] == "graph", reply
            assert [n["resident"] for n in reply["nodes"] if n["type"] == "claim"] == ["mira"]
            events.append([n["event_id"] for n in reply["nodes"] if n["type"] == "event"])
            pages += 1
            if reply["next"] is None:
                break
            after = reply["next"]
            assert pages < 10
        assert events == [["g-1", "g-2"], ["g-3", "g-4"], ["g-5"]]
        listed = node.request("worlds", "", 1)  # worlds(after, limit): a page of one
        await node.run_until(lambda: listed.get("done"))
        page = listed.get("result")
        assert [w["world"] for w in page["worlds"]] == ["town"] and page["next"] is None
        bad = node.request("graph", "mira", "", "", 1001)
        await node.run_until(lambda: bad.get("done"))
        assert bad.get("result")["code"] == "invalid_frame"
        node.request("close")


async def test_the_client_node_pages_a_trust_table(tmp_path: Path) -> None:
    """trust(resident, source, after, limit): a page of `limit` entries in (source, topic)
    order, its `next` passed back as `after` gives the next page, to the last (next null); a
    bad cursor is invalid_frame."""
    async with running(tmp_path) as sc:
        node = Node(sc.url)
        node.request("connect_to_sidecar")
        sent = [
            node.request("send_event", {"event_id": f"t-{n}", "day": float(n), "kind": "trust",
                                        "resident": "mira", "source": source, "value": 0.5,
                                        **({"topic": topic} if topic else {})})
            for n, (source, topic) in enumerate(
                [("bo", ""), ("bo", "well"), ("kai", ""), ("a:b", "")], start=1
            )
        ]  # fmt: skip
        await node.run_until(lambda: _done(sent))
        entries, after, pages = [], "", 0
        while True:
            page = node.request("trust", "mira", "", after, 3)
            await node.run_until(lambda page=page: page.get("done"))
            reply = page.get("result")
            assert reply["type"] == "trust", reply
            entries.append([(e["source"], e["topic"]) for e in reply["entries"]])
            pages += 1
            if reply["next"] is None:
                break
            after = reply["next"]
            assert pages < 10
        assert entries == [[("a:b", None), ("bo", None), ("bo", "well")], [("kai", None)]]
        bad = node.request("trust", "mira", "kai", "bo:well", 0)
        await node.run_until(lambda: bad.get("done"))
        assert bad.get("result")["code"] == "invalid_frame"
        node.request("close")


async def test_the_client_node_stops_on_a_fatal_close(tmp_path: Path) -> None:
    """A wrong token: the node gets the unauthorized error frame (read before the 4001 close),
    stops reconnecting, and fails its waiting requests with that code."""
    async with running(tmp_path, writer_tokens=["right"]) as sc:
        node = Node(sc.url, token="wrong")
        node.request("connect_to_sidecar")
        waiting = node.request("worlds")
        await node.run_until(lambda: waiting.get("done"))
        assert node.seen["error_received"][0]["code"] == "unauthorized"
        assert node.seen["disconnected"][0][0] == 4001
        assert waiting.get("result")["code"] == "unauthorized"
        assert node.client.get("state") == 0  # CLOSED, no reconnect


async def test_the_sidecar_node_launches_supervises_and_the_client_follows(tmp_path: Path) -> None:
    """credence_sidecar.gd (interpreted; OS and threads modelled over real processes) starts
    `credence serve --port 0` and reads its URL; the client connects to it. The sidecar is
    killed: the node restarts it on the same database (a new port), `started` gives the new
    URL, and the client reconnects there, resumes and resends: every event once."""
    credence = Path(sys.executable).with_name("credence")
    runtime = Runtime(ADDON, engine(str(tmp_path)))
    sidecar = runtime.new("CredenceSidecar")
    for key, value in {"command": str(credence), "database": "user://scene.db",
                       "restart_delay": 0.2,
                       "extra_arguments": ["--rules", str(_rules(tmp_path))]}.items():  # fmt: skip
        sidecar.set(key, value)
    node = Node("ws://127.0.0.1:1", runtime)
    node.others.append(sidecar)
    urls: list[str] = []
    stops: list[str] = []

    def started(url: str) -> None:
        urls.append(url)
        node.client.set("url", url)
        if node.client.get("state") == 0:
            node.request("connect_to_sidecar")

    sidecar.get("started").connect(started)
    sidecar.get("stopped").connect(stops.append)
    events = _story(60)
    try:
        sidecar.call("_ready")  # auto_start
        await node.run_until(lambda: node.seen["welcomed"])
        first = [node.request("send_event", e) for e in events[:30]]
        await node.run_until(lambda: sum(r.get("done") for r in first) >= 10)
        os.kill(sidecar.get("pid"), signal.SIGKILL)
        rest = [node.request("send_event", e) for e in events[30:]]
        await node.run_until(lambda: _done(first + rest) and len(node.seen["welcomed"]) == 2)
    finally:
        sidecar.call("stop")
    requests = first + rest
    assert stops and len(urls) == 2 and urls[0] != urls[1]
    assert all(r.get("ok") for r in requests)
    assert sorted(r.get("result")["event_id"] for r in requests) == sorted(
        e["event_id"] for e in events
    )
    db = tmp_path / "scene.db"
    latest = db_rows(db, "SELECT max(seq) FROM changes WHERE world = 'town'")[0][0]
    assert [n["seq"] for n in node.seen["belief_changed"]] == list(range(1, latest + 1))
    assert not runtime.engine["OS"].is_process_running(sidecar.get("pid"))
    await asyncio.to_thread(rebuild_check, db)
