"""protocol/clients/csharp: the C# client, compiled with mcs and run with mono against real sidecars.

The C# test program (``protocol/clients/csharp/tests``) does the checking and exits non-zero
on any failure; this module compiles it, starts ``credence serve`` processes on free
loopback ports, and answers the program's requests to crash and restart the sidecar
(``CONTROL kill`` / ``CONTROL start`` on its stdout, ``ok`` on its stdin).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from wsclient import guard

from sidecar.commands.serve import URL_PREFIX
from tools import vectors as generate

ROOT = Path(__file__).resolve().parent.parent
CSHARP = ROOT / "protocol" / "clients" / "csharp"
VECTORS = ROOT / "protocol" / "vectors" / "vectors.json"
MCS = shutil.which("mcs")
MONO = shutil.which("mono")

if (MCS is None or MONO is None) and os.environ.get("CREDENCE_REQUIRE_MONO"):
    raise RuntimeError("CREDENCE_REQUIRE_MONO is set (.ci/run) but mcs or mono is missing")

pytestmark = pytest.mark.skipif(
    MCS is None or MONO is None,
    reason="mcs and mono are not installed (apt-get install -y mono-mcs mono-devel; .ci/run does)",
)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client library and the test program, compiled at the C# 7.2 language level."""
    out = tmp_path_factory.mktemp("csharp")
    lib = out / "Credence.Client.dll"
    exe = out / "CredenceTests.exe"
    common = [str(MCS), "-langversion:7.2", "-warnaserror+", "-nologo"]
    sources = sorted(str(p) for p in (CSHARP / "src").glob("*.cs"))
    tests = sorted(str(p) for p in (CSHARP / "tests").glob("*.cs"))
    for cmd in (
        [*common, "-target:library", f"-out:{lib}", *sources],
        [*common, f"-r:{lib}", f"-out:{exe}", *tests],
    ):
        built = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert built.returncode == 0, built.stdout + built.stderr
    return exe


class Sidecar:
    """``credence serve`` as a real process, which a test may kill and restart on the same port.

    The first start asks for ``--port 0`` and reads the bound URL from the ``CREDENCE_URL=``
    line the sidecar prints; a restart binds that port again.
    """

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.port = 0
        self.url = ""
        self.db = tmp_path / "sidecar.db"
        self.log = tmp_path / "serve.log"
        self.args = args
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        cmd = [sys.executable, "-m", "sidecar.cli", "serve", "--port", str(self.port)]
        cmd += ["--db", str(self.db), *self.args]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True, env=env
            )
        assert self.proc.stdout is not None
        ready = threading.Timer(guard(30), self.proc.kill)  # never block on a silent sidecar
        ready.start()
        try:
            line = self.proc.stdout.readline()
        finally:
            ready.cancel()
        assert line.startswith(URL_PREFIX), f"{line!r}: {self.log.read_text()}"
        self.url = line[len(URL_PREFIX) :].strip() + "/"
        self.port = int(self.url.rsplit(":", 1)[1].strip("/"))

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or closed gracefully."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(guard(30))
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[Sidecar]:
    sc = Sidecar(tmp_path)
    sc.start()
    yield sc
    sc.stop()


def run(program: Path, *args: str, sidecar: Sidecar | None = None, seconds: float = 90) -> str:
    """Run the test program; serve its CONTROL requests; fail with its output unless it exits 0."""
    proc = subprocess.Popen(
        [str(MONO), "--debug", str(program), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    timer = threading.Timer(guard(seconds), proc.kill)  # a hang fails, it does not block the suite
    timer.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None and proc.stdin is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("CONTROL ") and sidecar is not None:
                what = line.split()[1]
                if what == "kill":
                    sidecar.kill()
                elif what == "start":
                    sidecar.start()
                elif what == "retoken":  # restart with other tokens: the client's is revoked
                    sidecar.kill()
                    sidecar.args = ("--token", "town=new-w-secret", "--read-token", "town=new-r")
                    sidecar.start()
                proc.stdin.write("ok\n")
                proc.stdin.flush()
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
    output = "".join(lines)
    print(output)  # the program's figures, shown with pytest -s or -rP
    assert code == 0, output
    return output


def test_codec_passes_every_vector(program: Path) -> None:
    """The C# codec decodes every valid vector to its JSON, re-encodes it, refuses bad frames."""
    out = run(program, "vectors", str(VECTORS))
    assert "OK:" in out
    assert " 0 failures" in out


def test_scripted_session_replays_frame_for_frame(program: Path, sidecar: Sidecar) -> None:
    """Replaying the vectors' scripted session over C#'s WebSocket gets exactly the transcript."""
    _, steps = generate.build()
    transcript = sidecar.db.parent / "transcript.msgpack"
    frames = [{"conn": s.conn, "send": s.send.hex(), "expect": s.expect} for s in steps]
    transcript.write_bytes(msgpack.packb({"steps": frames}, use_bin_type=True))
    out = run(program, "session", sidecar.url, str(VECTORS), str(transcript))
    assert f"{len(steps)} steps compared with the transcript" in out


def test_client_against_a_sidecar_that_crashes_and_restarts(program: Path, tmp_path: Path) -> None:
    """Auth, acks, refusals, paging, backpressure, reconnect/resume/resend, a crash, in C#."""
    sc = Sidecar(tmp_path, "--token", "town=w-secret", "--read-token", "town=r-secret")
    sc.start()
    try:
        out = run(program, "client", sc.url, "w-secret", "r-secret", sidecar=sc)
    finally:
        sc.stop()
    assert "CONTROL kill" in out and "CONTROL start" in out and "CONTROL retoken" in out


def test_register_schema_and_world_lifecycle(program: Path, sidecar: Sidecar) -> None:
    """RegisterAsync (names in the narrative), DeclareSchemaAsync (ack Warnings,
    schema_violation), ForkAsync / WorldsAsync / DeleteWorldAsync, against a real sidecar."""
    out = run(program, "lifecycle", sidecar.url, str(VECTORS))
    assert "OK:" in out and " 0 failures" in out


def test_misremembered_changes_decode(program: Path, tmp_path: Path) -> None:
    """A sidecar with --misremember 1: the client's misremembered notifications and their detail."""
    sc = Sidecar(tmp_path, "--misremember", "1", "--seed", "3")
    sc.start()
    try:
        out = run(program, "misremember", sc.url)
    finally:
        sc.stop()
    assert "OK:" in out and " 0 failures" in out


UNITY_STUB = """
namespace UnityEngine {
    public class Object {}
    public class Component : Object { public T GetComponent<T>() { return default(T); } }
    public class MonoBehaviour : Component {}
    public static class Debug { public static void Log(object message) {} }
    public class Animator { public void SetBool(string name, bool value) {} }
}
"""


def test_readme_unity_example_compiles(program: Path, tmp_path: Path) -> None:
    """The README's examples compile against the client (Unity's types stubbed)."""
    readme = (CSHARP / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```csharp\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2
    sources = [tmp_path / "UnityStub.cs"]
    sources[0].write_text(UNITY_STUB, encoding="utf-8")
    for i, block in enumerate(blocks):  # one file each: each block has its own usings
        sources.append(tmp_path / f"Example{i}.cs")
        sources[-1].write_text(block, encoding="utf-8")
    lib = program.parent / "Credence.Client.dll"
    cmd = [str(MCS), "-langversion:7.2", "-nologo", "-target:library", f"-r:{lib}"]
    built = subprocess.run(
        [*cmd, f"-out:{tmp_path / 'Example.dll'}", *map(str, sources)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
