"""End-to-end: GET /metrics on the WebSocket port, per-server registries, refusal logging."""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from wsclient import WsClient, observe, running

from sidecar.server import Sidecar


def scrape_text(sc: Sidecar) -> tuple[str, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{sc.port}/metrics", timeout=5) as resp:
        assert resp.status == 200
        return resp.headers["Content-Type"], resp.read().decode()


async def scrape(sc: Sidecar) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the sidecar's /metrics, keyed by (name, sorted labels)."""
    _, text = await asyncio.to_thread(scrape_text, sc)
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_metrics_count_events_acks_refusals_and_notifications(tmp_path: Path) -> None:
    """Events, acks (applied/duplicate), refusals by code, notifications and batches show up."""
    async with running(tmp_path) as sc, WsClient(sc.url, subscribe="*") as c:
        await c.event("observe", event_id="e1", **observe(["mira"], "k", 1))
        await c.event("observe", event_id="e1", **observe(["mira"], "k", 1))  # duplicate
        await c.event("observe", event_id="e2", **observe(["mira", "kai"], "k", 2))
        bad = await c.request({"type": "event", "kind": "observe", "event_id": "x", "day": 1})
        assert bad["type"] == "error" and bad["code"] == "invalid_event"
        await c.next_of("belief")
        m = await scrape(sc)
        assert m[("credence_acks_total", (("result", "applied"),))] == 2
        assert m[("credence_acks_total", (("result", "duplicate"),))] == 1
        assert m[("credence_refusals_total", (("code", "invalid_event"),))] == 1
        assert m[("credence_events_total", ())] == 3
        assert m[("credence_notifications_total", ())] >= 3  # formed, formed, doubted ...
        assert m[("credence_batch_size_count", ())] >= 1
        assert m[("credence_batch_size_sum", ())] == 3
        assert m[("credence_commit_seconds_count", ())] == m[("credence_batch_size_count", ())]
        assert m[("credence_connections", ())] == 1
        assert m[("credence_queue_depth", ())] == 0


async def test_two_sidecars_in_one_process_keep_their_own_metrics(tmp_path: Path) -> None:
    """Each sidecar has its own registry: one's traffic does not show in the other's."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with running(tmp_path / "a") as a, running(tmp_path / "b") as b:
        async with WsClient(a.url) as c:
            for i in range(4):
                await c.event("observe", event_id=f"e{i}", **observe(["mira"], "k", i))
        ma, mb = await scrape(a), await scrape(b)
        assert ma[("credence_events_total", ())] == 4
        assert mb[("credence_events_total", ())] == 0


async def test_metrics_content_type_and_can_be_turned_off(tmp_path: Path) -> None:
    """/metrics speaks the Prometheus text format; with metrics off it is the health check."""
    async with running(tmp_path) as sc:
        ctype, text = await asyncio.to_thread(scrape_text, sc)
        assert ctype.startswith("text/plain") and "version=" in ctype
        assert "# TYPE credence_events_total counter" in text
    async with running(tmp_path, metrics=False) as sc:
        ctype, text = await asyncio.to_thread(scrape_text, sc)
        assert ctype == "application/json" and "credence_" not in text


async def test_refusals_are_logged_at_debug_without_the_token(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A refused event is logged at DEBUG with its event_id and code; the token never appears."""
    secret = "very-secret-token"
    caplog.set_level(logging.DEBUG, logger="credence.refusals")
    async with running(tmp_path, writer_tokens=[secret]) as sc:
        async with WsClient(sc.url, token=secret) as c:
            reply = await c.request(
                {"type": "event", "kind": "say", "event_id": "lie-1", "day": 1,
                 "speaker": "bo", "listeners": ["mira"], "claim": {"root": "k", "value": 1},
                 "subject": "s", "witnesses": ["mira"]}
            )  # fmt: skip
            assert reply["code"] == "contract_violation"
        async with WsClient(sc.url, token="wrong") as bad:
            assert bad.hello_error is not None and bad.hello_error["code"] == "unauthorized"
    lines = [r.getMessage() for r in caplog.records if r.name == "credence.refusals"]
    assert any("code=contract_violation" in x and "'lie-1'" in x for x in lines), lines
    assert any("code=unauthorized" in x for x in lines), lines
    assert all(secret not in x and "wrong" not in x for x in lines)


async def test_events_held_for_their_world_file_are_counted_once(tmp_path: Path) -> None:
    """In a data directory a world's first event waits while its file opens on the opener
    thread, then comes again in a later batch: the writer took it up once, so the events
    counter and the batch sizes count it once (they counted each held event twice)."""
    data = tmp_path / "worlds"
    async with running(tmp_path, data_dir=data) as sc:
        for world in ("a", "b", "c"):
            async with WsClient(sc.url, world=world) as c:
                for i in range(2):
                    ack = await c.event("observe", event_id=f"e{i}", **observe(["mira"], "k", i))
                    assert ack["type"] == "ack" and not ack["duplicate"]
        m = await scrape(sc)
        assert m[("credence_acks_total", (("result", "applied"),))] == 6
        assert m[("credence_events_total", ())] == 6
        assert m[("credence_batch_size_sum", ())] == 6
        assert m[("credence_commit_seconds_count", ())] == m[("credence_batch_size_count", ())]
