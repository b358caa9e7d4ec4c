"""``credence serve --port 0``: the bound URL is one machine-readable stdout line."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
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


async def test_a_data_dir_by_a_relative_path_is_served_listed_and_logged(tmp_path: Path) -> None:
    """``--data-dir worlds`` from the directory that holds it: events are stored in a file
    under it, the ``worlds`` query lists the world (each file's listing is read by its URI,
    which a relative path could not be written as: the query failed ``internal_error``), and
    the log's first line names the data directory, not the default ``--db``."""
    cmd = [sys.executable, "-m", "sidecar.cli", "serve", "--port", "0", "--data-dir", "worlds"]
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline()[len(URL_PREFIX) :].strip()
        async with WsClient(url, world="town") as c:
            await c.event("observe", **observe(["mira"], "water:well", "clean"))
            listed = await c.request({"type": "worlds"})
        assert [w["world"] for w in listed["worlds"]] == ["town"], listed
        assert list((tmp_path / "worlds").glob("town*")), "no world file under the data dir"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(guard(30)) == 0
        first = log.read_text().splitlines()[0]
        assert "(data dir worlds, " in first and "credence.db" not in first, first
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


def serve_refused(cwd: Path, *args: str) -> str:
    """Run ``credence serve ARGS`` in ``cwd``; assert it exits 2 with one stderr line and leaves
    no file behind (no database, lock or data directory); return that line."""
    before = sorted(cwd.iterdir())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "sidecar.cli", "serve", *args],
        cwd=cwd, capture_output=True, text=True, timeout=guard(60), env=env,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("credence"), done.stderr
    assert done.stdout == ""
    assert sorted(cwd.iterdir()) == before, "a file was left behind"
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "--port must be an integer from 0 to 65535, not 70000"),
        (["--port", "x"], "--port must be an integer from 0 to 65535, not 'x'"),
        (["--max-frame", "0"], "--max-frame must be an integer from 1024 to 67108864, not 0"),
        (["--capture-max-bytes", "10"], "--capture-max-bytes must be an integer from 1024 to"),
        (["--misremember", "2"], "--misremember: misremember must be a number from 0 to 1"),
        (["--misremember", "nan"], "--misremember: misremember must be a number from 0 to 1"),
        (["--seed", "18446744073709551616"], "--seed: seed must be an integer from 0 to"),
        (["--mutable-prefix", ""], "--mutable-prefix: mutable_prefixes must be a list"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--port"], "argument --port: expected one argument"),
    ],
)
def test_a_bad_flag_is_one_line_exit_2_and_no_file(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Every out-of-range or malformed number on the command line is one line, exit 2, and
    nothing (no credence.db) is created."""
    assert message in serve_refused(tmp_path, *args)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[limits]\nhello_timeout = nan\n", "limits.hello_timeout must be a number from 0.1"),
        ("[limits]\nmax_frame = 0\n", "limits.max_frame must be an integer from 1024"),
        ("port = 70000\n", "port must be an integer from 0 to 65535, not 70000"),
        ("capture_max_bytes = 0\n", "capture_max_bytes must be an integer from 1024 to"),
        ("[rules]\nmisremember = 2\n", "rules: misremember must be a number from 0 to 1"),
        ("[rules]\ndecay_step = 0\n", "rules: decay_step must be an integer from 1 to 100"),
        ("[rules]\nreinforce_step = 1e300\n", "rules: reinforce_step must be an integer"),
        ("[" + ".".join(["a"] * 5000) + "]\nx = 1\n", "nested deeper than 32"),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 32"),
    ],
)
def test_a_bad_config_value_is_one_line_exit_2_and_no_file(
    tmp_path: Path, text: str, message: str
) -> None:
    """A config value out of range (NaN timeouts, a frame limit of 0, a port past 65535, a
    rule that would spin the writer) or a 5,000-deep table is one line, exit 2, no file."""
    (tmp_path / "c.toml").write_text(text)
    assert message in serve_refused(tmp_path, "--config", "c.toml")


def test_a_port_in_use_is_one_line_exit_2_and_no_database(tmp_path: Path) -> None:
    """A port another socket holds is one line (which port, why), exit 2, and neither the
    database nor a data directory is created."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        line = serve_refused(tmp_path, "--port", port, "--db", "new.db")
        assert line == f"credence serve: cannot listen on 127.0.0.1:{port}: Address already in use"
        serve_refused(tmp_path, "--port", port, "--data-dir", "worlds")
