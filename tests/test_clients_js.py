"""The TypeScript client (protocol/clients/js): its ``node --test`` suite, run by pytest.

The suite builds the client with tsc and runs it against real ``credence serve --port 0``
processes started with this interpreter (vectors, the scripted session, acks, paging,
backpressure, reconnect with resume). Skipped only when node or npm is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "protocol" / "clients" / "js"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node and npm are not installed (.ci/run installs them)",
)


def npm_ready() -> None:
    """``npm ci`` unless node_modules already matches package-lock.json, then build with tsc."""
    lock = (JS / "package-lock.json").read_text()
    installed = JS / "node_modules" / ".package-lock.json"
    if not installed.exists() or _packages(installed.read_text()) != _packages(lock):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True)
    subprocess.run(["npm", "run", "--silent", "build"], cwd=JS, check=True)


def _packages(lock_text: str) -> object:
    import json

    packages = json.loads(lock_text).get("packages", {})
    return {k: v.get("version") for k, v in packages.items() if k}


@needs_node
def test_js_client_node_suite() -> None:
    """The client's node --test suite passes against real sidecars."""
    npm_ready()
    tests = sorted(str(p.relative_to(JS)) for p in (JS / "test").glob("*.test.js"))
    env = {**os.environ, "CREDENCE_PYTHON": sys.executable}
    result = subprocess.run(
        ["node", "--test", *tests], cwd=JS, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "# fail 0" in result.stdout and "# pass" in result.stdout
