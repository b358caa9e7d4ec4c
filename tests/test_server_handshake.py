"""End-to-end: handshake, auth, encodings and the HTTP health check, over real sockets."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import msgpack
import pytest
from wsclient import WsClient, db_rows, observe, running, within

from sidecar.server import ServerConfig, Sidecar

TOKENS = {"writer_tokens": ["town=secret"], "reader_tokens": ["town=ro"]}


@pytest.fixture
async def sc(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path) as sidecar:
        yield sidecar


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Sidecar]:
    async with running(tmp_path, **TOKENS) as sidecar:
        yield sidecar


async def test_welcome_reports_protocol_world_seq_and_role(sc: Sidecar) -> None:
    """A valid hello is answered by welcome with protocol 1, the world, its seq and the role."""
    async with WsClient(sc.url) as c:
        assert c.welcome is not None
        assert c.welcome["protocol"] == 1
        assert c.welcome["world"] == "town"
        assert c.welcome["seq"] == 0
        assert c.welcome["role"] == "writer"
        await c.event("observe", **observe(["mira"], "water:well", "clean"))
    async with WsClient(sc.url) as c:
        assert c.welcome is not None and c.welcome["seq"] == 1


async def test_first_frame_not_hello_is_refused_with_4000(sc: Sidecar) -> None:
    """An event before hello gets error hello_required and the connection closes with 4000."""
    async with WsClient(sc.url, hello=False) as c:
        await c.send({"type": "event", "event_id": "x", "kind": "tick", "day": 1})
        error = await c.next_of("error")
        assert error["code"] == "hello_required"
        assert await c.wait_closed() == 4000
    assert db_rows(sc.config.db, "SELECT count(*) FROM events") == [(0,)]


async def test_protocol_2_is_refused_with_4002(sc: Sidecar) -> None:
    """hello with protocol 2 gets unsupported_protocol and close 4002."""
    async with WsClient(sc.url, hello_extra={"protocol": 2}) as c:
        assert c.welcome is None
        assert c.hello_error is not None and c.hello_error["code"] == "unsupported_protocol"
        assert await c.wait_closed() == 4002


async def test_no_hello_within_timeout_closes_4003(tmp_path: Path) -> None:
    """A peer that connects and says nothing is closed with 4003 after the hello timeout."""
    async with running(tmp_path, hello_timeout=0.5) as sc, WsClient(sc.url, hello=False) as c:
        assert await c.wait_closed() == 4003


async def test_open_mode_refuses_non_loopback_host(tmp_path: Path) -> None:
    """Without any token the sidecar will not bind to a non-loopback interface."""
    with pytest.raises(ValueError, match="loopback"):
        Sidecar(ServerConfig(host="0.0.0.0", port=0, db=tmp_path / "x.db"))


async def test_wrong_token_is_unauthorized_4001(secured: Sidecar) -> None:
    """A wrong token, or none, is refused with unauthorized and close 4001."""
    for token in ("nope", None):
        async with WsClient(secured.url, token=token) as c:
            assert c.hello_error is not None and c.hello_error["code"] == "unauthorized"
            assert await c.wait_closed() == 4001


async def test_token_of_another_world_is_unauthorized(secured: Sidecar) -> None:
    """town's writer token is refused in another world."""
    async with WsClient(secured.url, world="elsewhere", token="secret") as c:
        assert c.hello_error is not None and c.hello_error["code"] == "unauthorized"
        assert await c.wait_closed() == 4001


async def test_writer_token_in_hello_grants_writer(secured: Sidecar) -> None:
    """The writer token in hello.token gives role writer and events are acknowledged."""
    async with WsClient(secured.url, token="secret") as c:
        assert c.welcome is not None and c.welcome["role"] == "writer"
        ack = await c.event("observe", **observe(["mira"], "water:well", "clean"))
        assert ack["type"] == "ack"


async def test_read_only_token_cannot_write_but_reads(secured: Sidecar) -> None:
    """A read token's event is forbidden, nothing is stored, and the connection keeps answering."""
    async with WsClient(secured.url, token="secret") as w:
        await w.event("observe", **observe(["mira"], "water:well", "clean"))
    async with WsClient(secured.url, token="ro") as r:
        assert r.welcome is not None and r.welcome["role"] == "reader"
        error = await r.event(
            "observe", event_id="ro-1", **observe(["mira"], "water:well", "poisoned")
        )
        assert error["type"] == "error"
        assert error["code"] == "forbidden"
        assert error["event_id"] == "ro-1"
        reply = await r.request({"type": "beliefs", "resident": "mira"})
        assert [b["value"] for b in reply["beliefs"]] == ["clean"]
        assert r.close_code is None
    assert db_rows(secured.config.db, "SELECT count(*) FROM events WHERE event_id = 'ro-1'") == [
        (0,)
    ]


async def test_bearer_header_at_upgrade_authenticates(secured: Sidecar) -> None:
    """Authorization: Bearer at the upgrade works instead of hello.token."""
    async with WsClient(secured.url, headers={"Authorization": "Bearer secret"}) as c:
        assert c.welcome is not None and c.welcome["role"] == "writer"
        assert (await c.event("tick", day=2))["type"] == "ack"
    async with WsClient(secured.url, headers={"Authorization": "Bearer ro"}) as c:
        assert c.welcome is not None and c.welcome["role"] == "reader"
    async with WsClient(secured.url, headers={"Authorization": "Bearer wrong"}) as c:
        assert c.hello_error is not None and c.hello_error["code"] == "unauthorized"
        assert await c.wait_closed() == 4001


async def test_json_hello_gets_json_replies(sc: Sidecar) -> None:
    """A connection whose hello was JSON text gets welcome, acks and notifications as JSON text."""
    async with WsClient(sc.url, json=True, subscribe="*") as c:
        assert c.welcome is not None
        assert all(r.text for r in c.received)
        ack = await c.event("observe", **observe(["mira"], "water:well", "clean"))
        assert ack["type"] == "ack" and ack["changes"] == 1
        note = await c.next_of("belief")
        assert note["resident"] == "mira"
        assert all(r.text for r in c.received)


async def test_json_query_on_binary_connection_gets_json_reply(sc: Sidecar) -> None:
    """A JSON text request on a msgpack connection is answered in JSON text; msgpack in msgpack."""
    async with WsClient(sc.url) as c:
        await c.event("observe", **observe(["mira"], "water:well", "clean"))
        await c.send({"type": "beliefs", "resident": "mira", "rid": "j"}, json=True)
        got = await c.next_received(lambda f: f.get("rid") == "j")
        assert got.text and got.frame["type"] == "beliefs"
        await c.send({"type": "beliefs", "resident": "mira", "rid": "m"})
        got = await c.next_received(lambda f: f.get("rid") == "m")
        assert not got.text and got.frame["type"] == "beliefs"


async def test_http_get_is_a_health_check(sc: Sidecar) -> None:
    """A plain HTTP GET on the WebSocket port answers 200 with a JSON status."""
    url = sc.url.replace("ws://", "http://") + "/"

    def fetch() -> tuple[int, str, dict[str, object]]:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], json.loads(resp.read())

    status, ctype, body = await within(asyncio.to_thread(fetch))
    assert status == 200
    assert ctype == "application/json"
    assert body["status"] == "ok"
    assert str(body["server"]).startswith("credence/")


async def test_malformed_msgpack_is_bad_frame_and_connection_survives(sc: Sidecar) -> None:
    """Garbage bytes get error bad_frame; the next good event on the same connection is acked."""
    async with WsClient(sc.url) as c:
        await c.send_raw(b"\xc1\xff\x00garbage")
        assert (await c.next_of("error"))["code"] == "bad_frame"
        await c.send_raw(msgpack.packb({"type": "beliefs"}) + b"\x01")  # trailing bytes
        assert (await c.next_of("error"))["code"] == "bad_frame"
        await c.send_raw("{not json")
        assert (await c.next_of("error"))["code"] == "bad_frame"
        ack = await c.event("observe", **observe(["mira"], "water:well", "clean"))
        assert ack["type"] == "ack" and ack["changes"] == 1


async def test_oversize_frame_closes_1009(tmp_path: Path) -> None:
    """With max_frame 1024, a 2000-byte frame closes the connection with 1009."""
    async with running(tmp_path, max_frame=1024) as sc, WsClient(sc.url) as c:
        await c.send({"type": "beliefs", "resident": "mira", "pad": "x" * 2000})
        assert await c.wait_closed() == 1009
