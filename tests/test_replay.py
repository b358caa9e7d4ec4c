"""Capture and replay: a recorded session, or a scenario, must reproduce its notifications.

Everything runs for real: sidecars on ephemeral loopback ports, WebSocket + msgpack/JSON,
SQLite files, and the CLI as a subprocess. Online replays are compared with offline ones
(engine only) and with the golden files shipped in ``tools/scenarios``.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect

from sidecar.server import ServerConfig, Sidecar
from sidecar.server.capture import DEFAULT_MAX_BYTES, REDACTED, read_capture, rotated
from tools.replay import (
    Refusal,
    ReplayError,
    ScriptError,
    compare,
    load,
    load_scenario,
    notification_lines,
    replay_offline,
    replay_online,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tools" / "scenarios"
NAMES = ["rumour", "lie_and_correction", "action_rejected", "implant_anomaly"]
SECRET = "s3cret-token"
WAIT = 20  # seconds: a safety net against hangs, never an assertion


# --------------------------------------------------------------------------- helpers


def _decode(message: bytes | str) -> dict[str, Any]:
    value = orjson.loads(message) if isinstance(message, str) else msgpack.unpackb(message)
    assert isinstance(value, dict)
    return value


async def _open(url: str, hello: dict[str, Any], *, text: bool = False) -> ClientConnection:
    """Connect, send ``hello`` (as JSON text or msgpack) and read the welcome."""
    ws = await connect(url)
    await ws.send(orjson.dumps(hello).decode() if text else msgpack.packb(hello))
    welcome = _decode(await asyncio.wait_for(ws.recv(), WAIT))
    assert welcome["type"] == "welcome", welcome
    return ws


async def _request(
    ws: ClientConnection, frame: dict[str, Any], *, text: bool = False
) -> dict[str, Any]:
    """Send one frame and return its reply (ack, error or query reply), skipping notifications."""
    await ws.send(orjson.dumps(frame).decode() if text else msgpack.packb(frame))
    while True:
        reply = _decode(await asyncio.wait_for(ws.recv(), WAIT))
        if reply["type"] != "belief":
            return reply


async def _notifications_until(ws: ClientConnection, seq: int) -> list[dict[str, Any]]:
    """Every notification up to and including change ``seq``."""
    got: list[dict[str, Any]] = []
    while not got or got[-1]["seq"] < seq:
        frame = _decode(await asyncio.wait_for(ws.recv(), WAIT))
        if frame["type"] == "belief":
            got.append(frame)
    return got


def _event(event_id: str, day: float, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "event", "event_id": event_id, "day": day, "kind": kind, **fields}


WELL = {"root": "water:well", "value": "poisoned"}
CLEAN = {"root": "water:well", "value": "clean"}

#: A session of two writers taking turns on the same beliefs (conn "a" msgpack, "b" JSON):
#: the order across connections decides every confidence, so a replay that reordered them
#: would differ. One event is invalid and one frame is a query.
SESSION: list[tuple[str, dict[str, Any]]] = [
    (
        "a",
        _event(
            "s1", 1, "say", speaker="bo", listeners=["mira", "kai"], claim=WELL, subject="poison"
        ),
    ),
    (
        "b",
        _event("s2", 2, "observe", witnesses=["mira"], claim=CLEAN, subject="the doctor was fine"),
    ),
    (
        "a",
        _event("s3", 3, "observe", witnesses=["mira"], claim=CLEAN, subject="the water is clean"),
    ),
    ("b", _event("s4", 12, "tick")),
    (
        "a",
        _event("s5", 12, "intervene", resident="lena", op="soften", claim={"root": "water:well"}),
    ),
    ("b", {"type": "beliefs", "resident": "mira", "rid": 7}),
    (
        "a",
        _event(
            "s6", 13, "act", actor="kai", action="draw", status="interrupted", witnesses=["mira"]
        ),
    ),
]


async def record_session(url: str) -> list[dict[str, Any]]:
    """Drive :data:`SESSION` against ``url`` with a live observer; return what it saw."""
    observer = await _open(
        url, {"type": "hello", "protocol": 1, "world": "town", "token": SECRET, "subscribe": "*"}
    )
    clients = {
        "a": await _open(url, {"type": "hello", "protocol": 1, "world": "town", "token": SECRET}),
        "b": await _open(
            url, {"type": "hello", "protocol": 1, "world": "town", "token": SECRET}, text=True
        ),
    }
    last_seq = 0
    for who, frame in SESSION:
        reply = await _request(clients[who], frame, text=who == "b")
        last_seq = reply.get("seq", last_seq) if reply["type"] == "ack" else last_seq
    live = await _notifications_until(observer, last_seq)
    for ws in (*clients.values(), observer):
        await ws.close()
    return live


async def captured_session(
    tmp_path: Path, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[Path, list[str]]:
    """A capture of :data:`SESSION` from a token-protected sidecar, and the live notifications."""
    capture = tmp_path / "session.capture"
    sidecar = Sidecar(
        ServerConfig(
            port=0, db=tmp_path / "live.db", writer_tokens=[f"town={SECRET}"], capture=capture,
            capture_max_bytes=max_bytes,
        )
    )  # fmt: skip
    await sidecar.start()
    try:
        live = await record_session(sidecar.url)
    finally:
        await sidecar.stop()
    return capture, notification_lines(live)


def golden(name: str) -> list[str]:
    return (SCENARIOS / f"{name}.golden.jsonl").read_text().splitlines()


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "replay", *map(str, args)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


# --------------------------------------------------------------------------- capture


async def test_capture_records_every_inbound_frame_with_connection_and_time(tmp_path: Path) -> None:
    """The capture holds every inbound message verbatim, in order, with connection and time."""
    capture = tmp_path / "c.capture"
    sidecar = Sidecar(
        ServerConfig(
            port=0, db=tmp_path / "x.db", writer_tokens=[f"town={SECRET}"], capture=capture
        )
    )
    await sidecar.start()
    before = time.time()
    try:
        hello_a = {"type": "hello", "protocol": 1, "world": "town", "token": SECRET, "client": "a"}
        hello_b = {"type": "hello", "protocol": 1, "world": "town", "token": SECRET, "client": "b"}
        a = await _open(sidecar.url, hello_a)
        b = await _open(sidecar.url, hello_b, text=True)
        e1 = _event(
            "c1", 1, "say", speaker="bo", listeners=["mira"], claim=WELL, subject="poisoned"
        )
        e2 = _event("c2", 2, "observe", witnesses=["mira"], claim=CLEAN, subject="clean")
        query = {"type": "explain", "resident": "mira", "root": "water:well", "rid": "q"}
        assert (await _request(a, e1))["type"] == "ack"
        assert (await _request(b, e2, text=True))["type"] == "ack"
        assert (await _request(a, query))["type"] == "explanation"
        intruder = await connect(sidecar.url)  # wrong token: refused, but its hello is captured
        await intruder.send(
            msgpack.packb({"type": "hello", "protocol": 1, "world": "town", "token": "guess"})
        )
        assert _decode(await asyncio.wait_for(intruder.recv(), WAIT))["code"] == "unauthorized"
        for ws in (a, b, intruder):
            await ws.close()
    finally:
        await sidecar.stop()
    after = time.time()

    records = list(read_capture(capture))
    decoded = [(r["conn"], r["text"], _decode(r["data"])) for r in records]
    conn_a, conn_b, conn_x = decoded[0][0], decoded[1][0], decoded[-1][0]
    assert len({conn_a, conn_b, conn_x}) == 3
    assert decoded == [
        (conn_a, False, {**hello_a, "token": REDACTED}),
        (conn_b, True, {**hello_b, "token": REDACTED}),
        (conn_a, False, e1),
        (conn_b, True, e2),
        (conn_a, False, query),
        (conn_x, False, {"type": "hello", "protocol": 1, "world": "town", "token": REDACTED}),
    ]
    assert records[2]["data"] == msgpack.packb(e1)  # byte for byte, not re-encoded
    times = [r["t"] for r in records]
    assert times == sorted(times) and before <= times[0] and times[-1] <= after
    raw = capture.read_bytes()
    assert SECRET.encode() not in raw and b"guess" not in raw


async def test_capture_replays_to_the_live_notifications_online_and_offline(tmp_path: Path) -> None:
    """Replaying a capture gives exactly what a live observer saw, online and offline."""
    capture, live = await captured_session(tmp_path)
    assert len(live) >= 6 and any('"change":"corrected"' in line for line in live)
    script = load(capture)
    assert script.kind == "capture" and len(script.connections()) == 3  # observer, a, b
    online = await replay_online(script, token=SECRET)
    assert notification_lines(online.notifications) == live
    offline = replay_offline(script)
    assert notification_lines(offline.notifications) == live
    expected = [
        Refusal(
            2,
            "record 8",
            "invalid_event",
            "soften: resident 'lena' holds no belief on 'water:well'",
        )
    ]
    assert online.refusals == offline.refusals == expected


async def test_a_capture_rotated_at_its_limit_replays_as_the_pair_in_order(tmp_path: Path) -> None:
    """The session captured under a limit of 60% of its size rotates once: FILE.1 holds its
    start, FILE the rest, and replaying FILE (the pair, FILE.1 first) gives what the live
    observer saw, as the unrotated capture does; each file alone is not the session."""
    for sub in ("whole", "rotated"):
        (tmp_path / sub).mkdir()
    whole, live = await captured_session(tmp_path / "whole")
    size = whole.stat().st_size
    capture, live_again = await captured_session(tmp_path / "rotated", (size * 3) // 5)
    assert live_again == live
    assert rotated(capture).is_file() and not rotated(rotated(capture)).exists()
    assert rotated(capture).stat().st_size + capture.stat().st_size == size
    script = load(capture)
    assert [r.data for r in script.records] == [r["data"] for r in read_capture(whole)]
    assert notification_lines((await replay_online(script, token=SECRET)).notifications) == live
    assert notification_lines(replay_offline(script).notifications) == live
    assert load(rotated(capture)).frames < script.frames


async def test_replaying_the_same_capture_twice_gives_identical_output(tmp_path: Path) -> None:
    """Two online replays into fresh databases write byte-identical notification streams."""
    capture, _ = await captured_session(tmp_path)
    script = load(capture)
    first = notification_lines((await replay_online(script, token=SECRET)).notifications)
    second = notification_lines((await replay_online(script, token=SECRET)).notifications)
    assert first == second and first


async def test_paced_replay_keeps_the_output(tmp_path: Path) -> None:
    """Pacing by recorded receive times changes when frames go out, not what comes back."""
    capture, live = await captured_session(tmp_path)
    paced = await replay_online(load(capture), token=SECRET, speed=1000)
    assert notification_lines(paced.notifications) == live


async def test_serve_capture_cli_then_replay_cli_reproduce_the_session(tmp_path: Path) -> None:
    """`credence serve --capture` records a session that `credence replay` reproduces."""
    capture, db = tmp_path / "cli.capture", tmp_path / "x.db"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sidecar.cli", "serve", "--port", "0", "--db", str(db),
        "--capture", str(capture), "--token", f"town={SECRET}",
        cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        url = None
        while url is None:
            line = await asyncio.wait_for(proc.stderr.readline(), WAIT)
            assert line, "credence serve exited before serving"
            found = re.search(rb"serving (ws://\S+)", line)
            url = found.group(1).decode() if found else None
        live = notification_lines(await record_session(url))
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 0
    assert SECRET.encode() not in capture.read_bytes()

    out_offline, out_online = tmp_path / "offline.jsonl", tmp_path / "online.jsonl"
    offline = await asyncio.to_thread(run_cli, capture, "--offline", "--out", out_offline)
    online = await asyncio.to_thread(run_cli, capture, "--token", SECRET, "--out", out_online)
    assert offline.returncode == 0 and online.returncode == 0, offline.stderr + online.stderr
    assert out_offline.read_text().splitlines() == live
    assert out_online.read_text().splitlines() == live
    assert "1 refusal(s)" in online.stderr and "invalid_event" in online.stderr


# --------------------------------------------------------------------------- scenarios


def test_every_scenario_has_a_golden_file() -> None:
    """The shipped scenarios are exactly the four documented ones, each with its golden file."""
    assert sorted(p.name for p in SCENARIOS.glob("*.jsonl") if ".golden." not in p.name) == sorted(
        f"{n}.jsonl" for n in NAMES
    )
    for name in NAMES:
        assert golden(name), name
        assert f"`{name}.jsonl`" in (SCENARIOS / "README.md").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_scenario_offline_matches_golden(name: str) -> None:
    """The engine alone produces the golden notifications."""
    result = replay_offline(load(SCENARIOS / f"{name}.jsonl"))
    assert compare(golden(name), notification_lines(result.notifications)) == []


@pytest.mark.parametrize("name", NAMES)
async def test_scenario_online_matches_golden(name: str) -> None:
    """A real sidecar (WebSocket, msgpack, SQLite) produces the golden notifications."""
    result = await replay_online(load(SCENARIOS / f"{name}.jsonl"))
    assert compare(golden(name), notification_lines(result.notifications)) == []


def test_goldens_say_what_the_rules_say() -> None:
    """Spot checks of the reviewed goldens against the rules table catch a bad regeneration."""

    def rows(name: str, root: str | None = None) -> list[tuple[Any, ...]]:
        """(resident, change, prev, confidence, state, value) of the notifications on ``root``."""
        lines = [orjson.loads(line) for line in golden(name)]
        return [
            (
                n["resident"],
                n["change"],
                n["prev_confidence"],
                n["confidence"],
                n["state"],
                n["value"],
            )
            for n in lines
            if root is None or n["root"] == root
        ]

    rumour = rows("rumour", "theft:ana:ring")
    assert [r[1:4] for r in rumour if r[0] == "dara"] == [
        ("formed", None, 58), ("decayed", 58, 50), ("decayed", 50, 42), ("faded", 42, 34),
    ]  # fmt: skip
    # ana repeating herself (day 3) is no change record on the claim: ben's clock runs from day 1
    assert [r[1:4] for r in rumour if r[0] == "ben"] == [
        ("formed", None, 58), ("decayed", 58, 50), ("decayed", 50, 42), ("faded", 42, 34),
    ]  # fmt: skip
    assert rumour[-1] == ("ben", "faded", 42, 34, "past", "cyd")
    # each hearer knows, firsthand, who claimed it; that belief never ages
    assert rows("rumour", "believes:ben:theft:ana:ring") == [
        ("dara", "formed", None, 78, "influencing", "cyd"),
        ("eli", "formed", None, 78, "influencing", "cyd"),
    ]
    lie = rows("lie_and_correction", "water:well")
    assert ("mira", "doubted", 58, 38, "doubtful", "poisoned") in lie
    assert ("mira", "corrected", 38, 72, "corrected", "clean") in lie
    assert ("kai", "doubted", 58, 38, "doubtful", "poisoned") in lie  # hearsay never corrects
    # mira's own eyes judge bo, on his topic and in general: doubt −0.10, correction −0.15
    for root in ("trust:bo", "trust:bo:health"):
        assert rows("lie_and_correction", root) == [
            ("mira", "trust", 60, 50, "influencing", 0.5),
            ("mira", "trust", 50, 35, "influencing", 0.35),
        ]
    # hearsay against hearsay judges no one: kai's trust never moves
    assert ("kai", "trust") not in {r[:2] for r in rows("lie_and_correction")}
    acts = rows("action_rejected")
    assert {r[5] for r in acts} == {"rejected", "interrupted", "replaced"}
    implant = rows("implant_anomaly", "past:mira:childhood_home")
    assert implant[:3] == [
        ("mira", "formed", None, 65, "influencing", "burned_down"),
        ("mira", "anomaly", 65, 35, "anomalous", "burned_down"),
        ("mira", "corrected", 35, 72, "corrected", "standing"),
    ]


async def test_refused_frames_are_reported_the_same_online_and_offline() -> None:
    """The smuggled 'completed' claim is refused by the sidecar and by the engine alike."""
    script = load(SCENARIOS / "action_rejected.jsonl")
    online, offline = await replay_online(script), replay_offline(script)
    assert online.refusals == offline.refusals
    assert [(r.where, r.code) for r in online.refusals] == [("line 11", "contract_violation")]


async def test_replay_into_a_running_sidecar_needs_its_token(tmp_path: Path) -> None:
    """With a URL the given token goes into every hello; without it the observer is refused."""
    sidecar = Sidecar(ServerConfig(port=0, db=tmp_path / "x.db", writer_tokens=[SECRET]))
    await sidecar.start()
    try:
        script = load(SCENARIOS / "lie_and_correction.jsonl")
        with pytest.raises(
            ReplayError, match=r"refused the observer of world 'town': unauthorized.*--token"
        ):
            await replay_online(script, sidecar.url)
        result = await replay_online(script, sidecar.url, token=SECRET)
    finally:
        await sidecar.stop()
    assert compare(golden("lie_and_correction"), notification_lines(result.notifications)) == []


async def test_connections_of_several_worlds_are_observed_separately(tmp_path: Path) -> None:
    """With more than one world each line names its world; online and offline agree."""
    path = tmp_path / "two.jsonl"
    farm = _event("f1", 1, "observe", witnesses=["ivy"], claim=CLEAN, subject="ok")
    town = _event("t1", 1, "say", speaker="bo", listeners=["mira"], claim=WELL, subject="bad")
    lines = [{"world": "town"}, {"type": "hello", "protocol": 1, "world": "farm", "conn": 2}]
    lines += [{**farm, "conn": 2}, town]
    path.write_text("".join(orjson.dumps(line).decode() + "\n" for line in lines))
    script = load(path)
    online, offline = await replay_online(script), replay_offline(script)
    assert notification_lines(online.notifications) == notification_lines(offline.notifications)
    assert [(n["world"], n["seq"], n["resident"], n["root"]) for n in online.notifications] == [
        ("farm", 1, "ivy", "water:well"),
        ("town", 1, "mira", "water:well"),
        ("town", 2, "mira", "believes:bo:water:well"),
    ]


# --------------------------------------------------------------------------- scenario parse errors


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('# c\n{"type": "event", "day": 1\n', 2, "not valid JSON"),
        ('[1, 2]\n', 1, "expected a JSON object (one frame per line), got an array"),
        ('{"type": "tick"}\n{"event_id": "x", "day": 1}\n', 2, "a frame needs a string 'type'"),
        ('{"type": "event", "conn": 0}\n', 1, "'conn' must be a positive integer"),
        ('{"type": "event", "conn": "2"}\n', 1, "'conn' must be a positive integer"),
        ('{"type": "event"}\n{"type": "hello", "protocol": 1, "world": "w"}\n', 2,
         "the hello of connection 1 must be its first frame"),
        ('\n# town\n{"world": "town", "speed": 2}\n', 3,
         "directive line may only set 'world', not speed"),
        ('{"world": ""}\n', 1, "'world' must be a non-empty string"),
    ],
)  # fmt: skip
def test_scenario_mistakes_name_file_line_and_problem(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    """A malformed scenario is refused with FILE:LINE and what is wrong there."""
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ScriptError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "the file is empty"), ("# nothing\n\n", "the scenario holds no frames")],
)
def test_empty_inputs_are_refused(tmp_path: Path, text: str, message: str) -> None:
    """A file with no frames is an error, not an empty (and vacuously passing) replay."""
    path = tmp_path / "empty.jsonl"
    path.write_text(text)
    with pytest.raises(ScriptError, match=message):
        load(path)


def test_a_directive_applies_to_connections_without_hello() -> None:
    """The first-line world directive names the world of every connection that sends no hello."""
    script = load(SCENARIOS / "rumour.jsonl")
    assert script.default_world == "town"
    assert script.worlds() == ["town"]
    assert script.hello(1) is not None and script.hello(2) is None  # conn 2 gets a default hello


# --------------------------------------------------------------------------- CLI


def test_cli_expect_identical_exits_0(tmp_path: Path) -> None:
    """`--expect` against the shipped golden exits 0, and `--out` writes the same lines."""
    out = tmp_path / "out.jsonl"
    name = "implant_anomaly"
    done = run_cli(
        SCENARIOS / f"{name}.jsonl", "--expect", SCENARIOS / f"{name}.golden.jsonl", "--out", out
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: 6 notification(s) match" in done.stdout
    assert out.read_text().splitlines() == golden(name)


def test_cli_expect_mismatch_exits_1_with_a_diff(tmp_path: Path) -> None:
    """A golden off by one field and one line: exit 1, a per-seq field diff and a unified diff."""
    lines = golden("rumour")
    changed = orjson.loads(lines[7])
    assert (changed["seq"], changed["change"], changed["confidence"]) == (8, "decayed", 50)
    changed["confidence"] = 51
    tampered = tmp_path / "tampered.golden.jsonl"
    tampered.write_text(
        "\n".join([*lines[:7], orjson.dumps(changed).decode(), *lines[8:-1]]) + "\n"
    )
    done = run_cli(SCENARIOS / "rumour.jsonl", "--offline", "--expect", tampered)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "seq 8 ben theft:ana:ring decayed → 51: confidence: " in out
    assert "seq 16: only in replay: ben theft:ana:ring faded → 34" in out
    assert f"--- {tampered}" in out and "+++ replay" in out
    assert re.search(r'^-\{.*"confidence":51', out, re.M) and re.search(
        r'^\+\{.*"confidence":50', out, re.M
    )
    assert "MISMATCH" in out


def test_cli_prints_notifications_without_out_or_expect() -> None:
    """Without --out or --expect the notifications go to stdout and the summary to stderr."""
    done = run_cli(SCENARIOS / "action_rejected.jsonl", "--offline")
    assert done.returncode == 0
    assert done.stdout.splitlines() == golden("action_rejected")
    assert (
        "refused conn 1 line 11: contract_violation: an act event must not carry a claim"
        in done.stderr
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--offline", "--url", "ws://127.0.0.1:9"], "--offline uses no sidecar"),
        (["--speed", "0"], "argument --speed: must be a number from 0.001 to 1e06, not 0"),
        (["--expect", "/nonexistent/golden.jsonl"], "cannot read the golden file"),
        (["--url", "ws://127.0.0.1:9"], "cannot replay into ws://127.0.0.1:9"),
    ],
)
def test_cli_usage_and_connection_errors_exit_2(args: list[str], message: str) -> None:
    """Bad options, a missing golden or an unreachable sidecar: exit 2, a message, no traceback."""
    done = run_cli(SCENARIOS / "rumour.jsonl", *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_cli_bad_scenario_exits_2_naming_the_line(tmp_path: Path) -> None:
    """A broken scenario file is reported as FILE:LINE on stderr with exit 2."""
    bad = tmp_path / "bad.jsonl"
    shutil.copy(SCENARIOS / "rumour.jsonl", bad)
    with bad.open("a") as f:
        f.write('{"type": "event", "conn": -1}\n')
    done = run_cli(bad, "--offline")
    assert done.returncode == 2
    assert re.search(rf"{re.escape(str(bad))}:\d+: 'conn' must be a positive integer", done.stderr)


# --------------------------------------------------------------------------- at size


async def test_a_capture_is_read_again_not_held_and_its_notifications_spill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture's records are not kept by load() (each connection's first only), and
    notifications that spill to the temporary file many times over read back as the live
    observer saw them, online and offline; a connection is synced every SYNC_EVERY frames
    and its refusal still names its record."""
    import tools.replay as replay

    capture, live = await captured_session(tmp_path)
    script = load(capture)
    assert script.held is None and list(script.firsts) == script.connections() == [1, 2, 3]
    assert [r.where for r in script.records][-1] == f"record {script.frames}"
    monkeypatch.setattr(replay, "SPOOL_BYTES", 600)  # a few notifications a chunk
    monkeypatch.setattr(replay, "SYNC_EVERY", 2)
    online = await replay_online(script, token=SECRET)
    offline = replay_offline(script)
    assert sum(len(c) for c in online.spool._chunks.values()) > 3  # it spilled, often
    assert list(online.lines()) == list(offline.lines()) == live
    assert online.refusals == offline.refusals and [r.where for r in online.refusals] == [
        "record 8"
    ]


def test_notifications_read_back_by_world_then_seq_across_chunks() -> None:
    """Lines held and spilled per world come back world by world, each in seq order (one
    that arrived out of order is put back in order), with the world named on each."""
    from tools.replay import Notifications

    notes = Notifications(["farm", "town"], budget=200)
    arrivals = [("town", 1), ("farm", 1), ("town", 2), ("farm", 3), ("farm", 2), ("town", 3)]
    for world, seq in arrivals:
        notes.add(world, {"type": "belief", "seq": seq, "subject": "x" * 40})
    got = [(n["world"], n["seq"]) for n in map(orjson.loads, notes.lines())]
    assert got == [("farm", 1), ("farm", 2), ("farm", 3), ("town", 1), ("town", 2), ("town", 3)]
    assert notes.count == 6 and notes._file is not None
    notes.close()


async def test_a_capture_rotated_during_its_replay_is_an_error_not_other_records(
    tmp_path: Path,
) -> None:
    """The sidecar rotates the capture after it was loaded: the replay says so (the records
    it would send now are not those it checked) instead of sending something else."""
    capture, _ = await captured_session(tmp_path)
    script = load(capture)
    capture.rename(rotated(capture))
    capture.write_bytes(b"")
    with pytest.raises(ReplayError, match="rotated or replaced meanwhile"):
        replay_offline(script)
    assert load(capture).frames == script.frames  # loaded anew: the pair, the same session
