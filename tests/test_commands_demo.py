"""``credence demo --url``: the demo story played into a running sidecar, over the real CLI."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from wsclient import WsClient, running

TOKENS = {"writer_tokens": ["demo-town=w-secret"], "reader_tokens": ["demo-town=r-secret"]}


def credence(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sidecar.cli", *args], capture_output=True, text=True, timeout=120
    )


async def test_demo_plays_into_a_running_sidecar_once(tmp_path: Path) -> None:
    """--url plays the story into that sidecar's world; a second run into it is refused."""
    async with running(tmp_path, **TOKENS) as sc:
        url = sc.url
        args = ("demo", "--url", url, "--token", "w-secret", "--pace", "0")
        done = await asyncio.to_thread(credence, *args)
        assert done.returncode == 0, done.stderr
        assert "Mira decides: fetch water" in done.stdout
        async with WsClient(url, "demo-town", token="r-secret") as c:
            well = await c.request({"type": "beliefs", "resident": "mira", "root": "water:well"})
            assert [(b["value"], b["state"]) for b in well["beliefs"]] == [("clean", "corrected")]
            names = await c.request({"type": "residents"})
            assert {r["resident"]: r["names"].get("en") for r in names["residents"]}["tom"] == (
                "Old Tom"
            )
        again = await asyncio.to_thread(credence, *args)
        assert again.returncode == 2 and "already has" in again.stderr
        reader = await asyncio.to_thread(
            credence, "demo", "--url", url, "--token", "r-secret", "--world", "demo-town"
        )
        assert reader.returncode == 2 and "may only read" in reader.stderr


def test_demo_url_refusals_are_one_line() -> None:
    """A URL that is not ws://, or nothing listening, is exit 2 with one line."""
    for args, needle in (
        (["--url", "http://x"], "must be ws://"),
        (["--url", "ws://127.0.0.1:9", "--pace", "0"], "cannot reach"),
        (["--url", "ws://127.0.0.1:9", "--db", "x.db"], "not both"),
    ):
        done = credence("demo", *args)
        assert done.returncode == 2 and needle in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
