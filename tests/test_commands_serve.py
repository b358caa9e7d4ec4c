"""``credence serve --port 0``: the bound URL is one machine-readable stdout line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from wsclient import WsClient, guard, observe

from sidecar.commands.serve import URL_PREFIX

ROOT = Path(__file__).resolve().parents[1]


def start_serve(db: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``credence serve --port 0`` and return the process and the URL it printed."""
    cmd = [sys.executable, "-m", "sidecar.cli", "serve", "--port", "0", "--db", str(db), *extra]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the sidecar is bound (or exits: "")
    return proc, line


async def test_port_0_prints_the_bound_url_on_one_stdout_line(tmp_path: Path) -> None:
    """The first stdout line is exactly CREDENCE_URL=ws://127.0.0.1:<port>, and it serves there."""
    proc, line = start_serve(tmp_path / "x.db")
    try:
        match = re.fullmatch(r"CREDENCE_URL=ws://127\.0\.0\.1:(\d+)\n", line)
        assert match is not None, repr(line)
        assert line.startswith(URL_PREFIX) and int(match[1]) > 0
        url = line[len(URL_PREFIX) :].strip()
        async with WsClient(url) as c:
            assert c.welcome is not None
            ack = await c.event("observe", **observe(["mira"], "water:well", "clean"))
            assert ack["changes"] == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(guard(30)) == 0
        assert proc.stdout is not None and proc.stdout.read() == ""  # nothing else on stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(guard(10))


async def test_misremember_flag_sets_the_rules_of_new_worlds(tmp_path: Path) -> None:
    """--misremember 1 --seed 3: every recall drifts a detail, as misremembered changes."""
    proc, line = start_serve(tmp_path / "m.db", "--misremember", "1", "--seed", "3")
    try:
        url = line[len(URL_PREFIX) :].strip()
        async with WsClient(url) as c:
            for day in (1, 2, 3):
                await c.event(
                    "observe", day=day,
                    **observe(["mira"], "key:where", "counter", places=[f"spot{day}"]),
                )  # fmt: skip
            reply = await c.request({"type": "explain", "resident": "mira", "root": "key:where"})
            kinds = [h["change"] for h in reply["history"]]
            assert kinds.count("misremembered") == 2, kinds  # the two recalls
            assert reply["belief"]["value"] == "counter"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(guard(30)) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(guard(10))
