"""The TypeScript client (protocol/clients/js): its ``node --test`` suite, run by pytest.

The suite builds the client with tsc and runs it against real ``credence serve --port 0``
processes started with this interpreter (vectors, the scripted session, acks, paging,
backpressure, reconnect with resume). Skipped only when node or npm is not installed.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import chromium
from wsclient import running

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "protocol" / "clients" / "js"


def node_missing() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (.ci/run installs them)"
    return None


@functools.cache
def npm_ready() -> None:
    """``npm ci`` unless node_modules already matches package-lock.json, then build with tsc.

    Once per test process (the build takes seconds; this module's tests share one worker).
    """
    lock = (JS / "package-lock.json").read_text()
    installed = JS / "node_modules" / ".package-lock.json"
    if not installed.exists() or _packages(installed.read_text()) != _packages(lock):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True)
    subprocess.run(["npm", "run", "--silent", "build"], cwd=JS, check=True)


def _packages(lock_text: str) -> object:
    packages = json.loads(lock_text).get("packages", {})
    return {k: v.get("version") for k, v in packages.items() if k}


def _concurrency() -> list[str]:
    """Files three at a time (each test starts its own sidecar and mostly waits on it: about
    half the time of one at a time on two cores; tests within a file still run in order),
    where node has the flag (20.10 and later; the package supports node 18, whose
    ``--test`` runs them one at a time)."""
    found = re.match(r"v(\d+)\.(\d+)", subprocess.run(
        ["node", "--version"], capture_output=True, text=True, check=True, timeout=30
    ).stdout)  # fmt: skip
    return ["--test-concurrency=3"] if found and (int(found[1]), int(found[2])) >= (20, 10) else []


def test_js_client_node_suite() -> None:
    """The client's node --test suite passes against real sidecars."""
    chromium.need(node_missing())
    npm_ready()
    tests = sorted(str(p.relative_to(JS)) for p in (JS / "test").glob("*.test.js"))
    env = {**os.environ, "CREDENCE_PYTHON": sys.executable}
    result = subprocess.run(
        ["node", "--test", *_concurrency(), *tests],
        cwd=JS, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "# fail 0" in result.stdout and "# pass" in result.stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript", ".js": "text/javascript"}  # fmt: skip

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_js_client_in_headless_chromium(tmp_path: Path) -> None:
    """A page using the client with the browser's native WebSocket: hello, event, ack, query."""
    chromium.need(node_missing() or chromium.available())
    npm_ready()
    handler = functools.partial(_Quiet, directory=str(JS))
    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=files.serve_forever, daemon=True)
    thread.start()
    try:
        async with running(tmp_path) as sc:
            page = f"http://127.0.0.1:{files.server_address[1]}/test/browser.html?url={sc.url}"

            def drive() -> dict[str, object]:
                with chromium.browser() as b:
                    b.get(page)
                    text = b.wait_for(
                        "const t = document.getElementById('result').textContent;"
                        "return t !== 'running' && t;",
                        "the page's result",
                    )
                    result: dict[str, object] = json.loads(text)
                    return result

            result = await asyncio.to_thread(drive)
    finally:
        files.shutdown()
        files.server_close()
    assert result["ok"] is True, result
    assert result["native"] is True and result["role"] == "writer"
    assert result["ack"] == {"type": "ack", "event_id": "web-1", "duplicate": False, "changes": 1, "seq": 1, "rid": "c1"}  # fmt: skip
    assert result["notes"] == [["mira", "lamp:square", "formed", 78]]
    assert result["beliefs"] == ["lamp:square"]
    mirror = result["mirror"]
    assert isinstance(mirror, dict) and mirror["value"] == "lit" and mirror["seq"] == 1


APP_MAIN = """\
import { CredenceClient } from "@credence/client";
import { launchSidecar } from "@credence/client/launch";

const [python, root, db] = process.argv.slice(2);
const sidecar = await launchSidecar({
  command: [python, "-m", "sidecar.cli"], cwd: root, args: ["--db", db, "--log-level", "WARNING"],
});
const client = new CredenceClient({ url: () => sidecar.url, world: "town", subscribe: ["mira"] });
const notes = [];
client.on("belief", (b) => notes.push([b.resident, b.root, b.change]));
try {
  await client.connect();
  const ack = await client.send({
    kind: "observe", event_id: "pkg-1", day: 1, witnesses: ["mira"],
    claim: { root: "water:well", value: "clean" }, subject: "the well is clean",
  });
  const beliefs = await client.beliefs("mira", { prefix: "water:" });
  const story = await client.narrative("mira", { focus: { roots: ["water:"] } });
  await client.sync();
  console.log(JSON.stringify({
    ack: [ack.type, ack.changes], roots: beliefs.beliefs.map((b) => b.root), notes,
    focus: story.focus.roots, url: sidecar.url,
  }));
} finally {
  client.close();
  await sidecar.stop();
}
"""

APP_CJS = """\
// A CommonJS module reaches the ESM-only package through import().
import("@credence/client").then((m) => console.log(typeof m.CredenceClient, typeof m.joinParts));
"""

APP_TYPES = """\
import { CredenceClient, type NarrativeOptions, type BeliefsFilter } from "@credence/client";
import { launchSidecar, type SidecarProcess } from "@credence/client/launch";

const focus: NarrativeOptions = { budget: 600, lang: "zh-Hant", focus: { people: ["bo"] } };
const filter: BeliefsFilter = { prefix: ["water:"], min_confidence: 50, states: ["doubtful"] };
export async function use(sidecar: SidecarProcess): Promise<number> {
  const c = new CredenceClient({ url: () => sidecar.url, world: "w" });
  const reply = await c.narrative("mira", focus);
  const listed = await c.beliefs("mira", filter);
  return reply.text.length + listed.beliefs.length + (await launchSidecar()).restarts;
}
"""


def test_js_package_packs_installs_from_the_tarball_and_talks_to_a_sidecar(tmp_path: Path) -> None:
    """npm pack builds dist/ (prepare); a fresh project installs the tarball, type-checks
    against its exports and talks to a real sidecar through it (ESM, and import() from CJS)."""
    chromium.need(node_missing())
    npm_ready()
    packed = subprocess.run(
        ["npm", "pack", "--json", "--pack-destination", str(tmp_path)],
        cwd=JS, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    info = json.loads(packed.stdout[packed.stdout.index("[") :])[0]
    files = {f["path"] for f in info["files"]}
    for needed in ("dist/index.js", "dist/index.d.ts", "dist/launch.js", "dist/launch.d.ts",
                   "package.json", "README.md"):  # fmt: skip
        assert needed in files, sorted(files)
    assert not any(f.startswith(("test/", "node_modules/")) for f in files), sorted(files)
    tarball = tmp_path / info["filename"]
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "game", "private": true, "type": "module"}\n')
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", str(tarball)],
        cwd=app, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    installed = json.loads((app / "node_modules/@credence/client/package.json").read_text())
    assert installed["exports"]["./launch"]["types"] == "./dist/launch.d.ts"
    (app / "main.js").write_text(APP_MAIN)
    (app / "old.cjs").write_text(APP_CJS)
    (app / "check.ts").write_text(APP_TYPES)
    tsc = [str(JS / "node_modules/.bin/tsc"), "--noEmit", "--strict", "--module", "node16",
           "--moduleResolution", "node16", "--target", "es2022", "--lib", "es2022,dom",
           "--types", "node", "--typeRoots", str(JS / "node_modules/@types"), "check.ts"]  # fmt: skip
    checked = subprocess.run(tsc, cwd=app, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    cjs = subprocess.run(["node", "old.cjs"], cwd=app, capture_output=True, text=True, timeout=60)
    assert cjs.stdout.split() == ["function", "function"], cjs.stderr
    db = tmp_path / "pkg.db"
    run = subprocess.run(
        ["node", "main.js", sys.executable, str(ROOT), str(db)],
        cwd=app, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["ack"] == ["ack", 1]
    assert result["roots"] == ["water:well"]
    assert result["notes"] == [["mira", "water:well", "formed"]]
    assert result["focus"] == ["water:"]
    assert result["url"].startswith("ws://127.0.0.1:")
