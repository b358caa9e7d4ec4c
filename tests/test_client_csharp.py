"""protocol/clients/csharp: the C# client, compiled with mcs and run with mono against real sidecars.

The C# test program (``protocol/clients/csharp/Tests~``) does the checking and exits non-zero
on any failure; this module compiles it, starts ``credence serve`` processes on free
loopback ports, and answers the program's requests to crash and restart the sidecar
(``CONTROL kill`` / ``CONTROL start`` on its stdout, ``ok`` on its stdin).
"""

from __future__ import annotations

import json
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
from tools import unity_meta
from tools import vectors as generate

ROOT = Path(__file__).resolve().parent.parent
CSHARP = ROOT / "protocol" / "clients" / "csharp"
VECTORS = ROOT / "protocol" / "vectors" / "vectors.json"
ASMDEF = json.loads((CSHARP / "Runtime" / "Credence.Client.asmdef").read_text(encoding="utf-8"))
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
    lib = out / f"{ASMDEF['name']}.dll"  # the assembly Unity builds from the asmdef
    exe = out / "CredenceTests.exe"
    common = [str(MCS), "-langversion:7.2", "-warnaserror+", "-nologo"]
    sources = sorted(str(p) for p in (CSHARP / "Runtime").glob("*.cs"))
    tests = sorted(str(p) for p in (CSHARP / "Tests~").glob("*.cs"))
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


def run_against(program: Path, tmp_path: Path, scenario: str, *flags: str) -> None:
    """The program's ``scenario`` against a sidecar of its own started with ``flags``."""
    sc = Sidecar(tmp_path, *flags)
    sc.start()
    try:
        out = run(program, scenario, sc.url)
    finally:
        sc.stop()
    assert "OK:" in out and " 0 failures" in out


def test_misremembered_changes_decode(program: Path, tmp_path: Path) -> None:
    """A sidecar with --misremember 1: the client's misremembered notifications and their detail."""
    run_against(program, tmp_path, "misremember", "--misremember", "1", "--seed", "3")


def test_connect_waits_for_a_full_or_late_sidecar_unless_told_not_to(
    program: Path, tmp_path: Path
) -> None:
    """A sidecar serving its max_connections (1): with ``WaitForSidecar = false`` ConnectAsync
    of a second client throws a CredenceConnectionException without a code (not a raw
    WebSocketException); by default it waits until the first closes, or its cancel gives up,
    or CloseAsync; and it waits through a port where nothing listens yet."""
    run_against(program, tmp_path, "full", "--max-connections", "1")


def test_promise_and_goal_helpers(program: Path, sidecar: Sidecar) -> None:
    """PromiseAsync, GoalAsync, PromisesAsync, GoalsAsync and the promise notifications,
    against a real sidecar."""
    out = run(program, "promises", sidecar.url)
    assert "OK:" in out and " 0 failures" in out


def test_graph_pages(program: Path, sidecar: Sidecar) -> None:
    """GraphAsync with after and limit pages a belief, GraphPagesAsync walks every page (the
    claim on each, next null on the last), limit 1001 is invalid_frame: a real sidecar."""
    out = run(program, "graph", sidecar.url)
    assert "OK:" in out and " 0 failures" in out, out


UNITY_STUB = """
namespace UnityEngine {
    public class Object {}
    public class Component : Object { public T GetComponent<T>() { return default(T); } }
    public class Behaviour : Component {}
    public class MonoBehaviour : Behaviour {}
    public static class Debug {
        public static void Log(object message) { System.Console.WriteLine("LOG " + message); }
        public static void LogWarning(object message) { System.Console.WriteLine("WARN " + message); }
        public static void LogError(object message) { System.Console.WriteLine("ERROR " + message); }
    }
    public class Animator { public void SetBool(string name, bool value) {} }
    public static class Application { public static string persistentDataPath = "."; }
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
    lib = program.parent / f"{ASMDEF['name']}.dll"
    cmd = [str(MCS), "-langversion:7.2", "-nologo", "-target:library", f"-r:{lib}"]
    built = subprocess.run(
        [*cmd, f"-out:{tmp_path / 'Example.dll'}", *map(str, sources)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr


def test_filters_added_after_hello_resume_exactly_once_across_a_kill(
    program: Path, sidecar: Sidecar
) -> None:
    """Filters added with SubscribeAsync (and edited by UnsubscribeAsync) are restored by the
    reconnect's hello after a kill -9 mid-stream: every matching change once, in order."""
    out = run(program, "filters", sidecar.url, sidecar=sidecar)
    assert "CONTROL kill" in out and "CONTROL start" in out
    assert "OK:" in out and " 0 failures" in out


def test_narrative_focus_and_beliefs_filters(program: Path, sidecar: Sidecar) -> None:
    """NarrativeAsync(focus) and BeliefsAsync(BeliefsFilter) send what SPEC §10.1/§10.4 name."""
    out = run(program, "focus", sidecar.url)
    assert "OK:" in out and " 0 failures" in out


def test_sidecar_process_starts_restarts_after_a_kill_and_stops(
    program: Path, tmp_path: Path
) -> None:
    """SidecarProcess reads CREDENCE_URL, restarts on the same port after SIGKILL, stops on Dispose."""
    out = run(program, "launcher", sys.executable, str(ROOT), str(tmp_path / "launch.db"))
    assert "OK:" in out and " 0 failures" in out


# ---------------------------------------------------------------------------- the Unity package

PACKAGE_JSON = json.loads((CSHARP / "package.json").read_text(encoding="utf-8"))


def test_unity_package_manifest_has_what_the_package_manager_reads() -> None:
    """package.json: a reverse-domain name, semver, a Unity version, and samples that exist."""
    m = PACKAGE_JSON
    assert re.fullmatch(r"com(\.[a-z0-9-]+){2,}", m["name"]), m["name"]
    assert re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?", m["version"]), m["version"]
    assert re.fullmatch(r"20\d\d\.\d", m["unity"]), m["unity"]
    assert m["displayName"] and m["description"] and m["license"] == "MIT"
    assert m["samples"], "a sample"
    for sample in m["samples"]:
        assert sample["displayName"] and sample["description"]
        assert sample["path"].startswith("Samples~/"), sample["path"]
        assert list((CSHARP / sample["path"]).glob("*.cs")), sample["path"]
    # The client's own version follows the package's (what the sidecar's log shows).
    client = (CSHARP / "Runtime" / "CredenceClient.cs").read_text(encoding="utf-8")
    assert f'"credence-csharp/{m["version"].rsplit(".", 1)[0]}"' in client


def test_every_unity_asset_has_a_meta_with_a_stable_unique_guid() -> None:
    """Each file and folder Unity imports has a .meta whose GUID derives from its path, none
    repeats, no meta is orphaned; hidden names and ~ folders have none."""
    assets = unity_meta.assets()
    assert {"package.json", "README.md", "Runtime", "Runtime/Credence.Client.asmdef"} <= {
        a.as_posix() for a in assets
    }
    assert all(not unity_meta.skipped(a) for a in assets)
    guids = []
    for rel in assets:
        meta = CSHARP / f"{rel.as_posix()}.meta"
        assert meta.exists(), f"{rel} has no .meta (run python -m tools.unity_meta)"
        text = meta.read_text(encoding="utf-8")
        found = re.search(r"^guid: ([0-9a-f]{32})$", text, re.M)
        assert found, f"{meta}: no guid"
        guids.append(found.group(1))
        assert found.group(1) == unity_meta.guid(rel, PACKAGE_JSON["name"]), f"{rel}: GUID moved"
        assert ("folderAsset: yes" in text) == (CSHARP / rel).is_dir(), rel
        assert f"\n{unity_meta.importer(rel)}:\n" in text, rel
    assert len(set(guids)) == len(guids), "GUIDs repeat"
    write, orphans = unity_meta.plan()
    assert (list(write), orphans) == ([], []), "metas are stale (run python -m tools.unity_meta)"


def test_asmdef_names_the_runtime_assembly_with_every_runtime_script() -> None:
    """The asmdef builds Credence.Client from Runtime/ without UnityEngine; every script Unity
    would import is under it (the tests and the sample live in ~ folders)."""
    assert ASMDEF["name"] == "Credence.Client"
    assert ASMDEF["rootNamespace"] == "Credence"
    assert ASMDEF["noEngineReferences"] is True and ASMDEF["autoReferenced"] is True
    assert ASMDEF["references"] == [] and ASMDEF["includePlatforms"] == []
    scripts = [a for a in unity_meta.assets() if a.suffix == ".cs"]
    assert scripts and all(a.parts[0] == "Runtime" for a in scripts), scripts
    asmdefs = [a for a in unity_meta.assets() if a.suffix == ".asmdef"]
    assert [a.as_posix() for a in asmdefs] == ["Runtime/Credence.Client.asmdef"]
    for script in scripts:
        text = (CSHARP / script).read_text(encoding="utf-8")
        assert "using UnityEngine" not in text, script
        assert "namespace Credence" in text, script


SAMPLE_DRIVER = """
using System;
using System.Reflection;
using System.Threading;
using Credence.Samples;

public static class Driver
{
    static void Call(object o, string name, params object[] args)
    {
        var m = o.GetType().GetMethod(name, BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic);
        m.Invoke(o, args);
    }

    // Unity's part: Start once, then Update every frame on this (the main) thread.
    static bool Frames(CredenceGameLoop loop, Func<bool> until)
    {
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (!until())
        {
            if (DateTime.UtcNow > deadline) return false;
            Call(loop, "Update");
            Thread.Sleep(16);
        }
        return true;
    }

    public static int Main(string[] args)
    {
        var main = Thread.CurrentThread.ManagedThreadId;
        var loop = new CredenceGameLoop { url = args[0], world = "sample" };
        Call(loop, "Start");
        bool poisoned = Frames(loop, () => loop.avoidsWell);
        Console.WriteLine("POISONED " + poisoned + " " + (loop.lastChange == null ? "-" : loop.lastChange.Change));
        loop.SawTheWell(true);
        bool clean = Frames(loop, () => !loop.avoidsWell);
        Console.WriteLine("CLEAN " + clean);
        Call(loop, "OnDestroy");
        return poisoned && clean ? 0 : 1;
    }
}
"""


def test_sample_game_loop_compiles_against_the_runtime_and_runs(
    program: Path, sidecar: Sidecar, tmp_path: Path
) -> None:
    """The Samples~ MonoBehaviour compiles against Credence.Client with a stub UnityEngine and,
    driven like Unity (Start, then Update each frame), reacts to its beliefs from a real sidecar."""
    lib = program.parent / f"{ASMDEF['name']}.dll"
    stub = tmp_path / "UnityStub.cs"
    stub.write_text(UNITY_STUB, encoding="utf-8")
    driver = tmp_path / "Driver.cs"
    driver.write_text(SAMPLE_DRIVER, encoding="utf-8")
    sample = sorted(str(p) for p in (CSHARP / PACKAGE_JSON["samples"][0]["path"]).glob("*.cs"))
    exe = tmp_path / "Sample.exe"
    cmd = [str(MCS), "-langversion:7.2", "-warnaserror+", "-nologo", f"-r:{lib}", f"-out:{exe}"]
    built = subprocess.run(
        [*cmd, str(stub), str(driver), *sample], capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stdout + built.stderr
    shutil.copy(lib, tmp_path / lib.name)
    ran = subprocess.run(
        [str(MONO), str(exe), sidecar.url], capture_output=True, text=True, timeout=guard(90)
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "LOG Credence: connected to sample as writer at seq 0" in ran.stdout
    assert "POISONED True formed" in ran.stdout
    # Seeing the well clear makes her doubt the hearsay (38 < 50): she stops avoiding it.
    assert "LOG Credence: mira doubted water:well = poisoned (38)" in ran.stdout
    assert "CLEAN True" in ran.stdout
    assert "ERROR" not in ran.stdout, ran.stdout
