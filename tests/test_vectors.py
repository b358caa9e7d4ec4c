"""protocol/vectors/vectors.json and protocol/SPEC.md: up to date, true to the code, complete."""

from __future__ import annotations

import ast
import asyncio
import json
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import connect
from wsclient import running, within

import protocol
from protocol import (
    CloseCode,
    ErrorCode,
    ProtocolError,
    decode,
    encode,
    parse_client_frame,
    parse_hello,
)
from sidecar.engine import ChangeKind, EventKind
from tools import vectors as generate

ROOT = Path(protocol.__file__).parent
SPEC = (ROOT / "SPEC.md").read_text(encoding="utf-8")
VECTORS: list[dict[str, Any]] = json.loads((ROOT / "vectors" / "vectors.json").read_text("utf-8"))
BY_NAME = {v["name"]: v for v in VECTORS}
VALID = [v for v in VECTORS if v["valid"]]
INVALID = [v for v in VECTORS if not v["valid"]]
CLIENT_VALID = [v for v in VALID if v["direction"] == "client"]
FIELDS = [
    "name",
    "description",
    "direction",
    "context",
    "valid",
    "error_code",
    "close_code",
    "canonical",
    "json",
    "msgpack_hex",
]


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (``1``, ``1.0`` and ``True`` all differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [v["name"] for v in vectors]


def parse(vector: dict[str, Any]) -> object:
    """Decode a vector's bytes and parse them as the sidecar would in the vector's context."""
    frame = decode(bytes.fromhex(vector["msgpack_hex"]))
    if vector["context"] == "handshake":
        return parse_hello(frame)
    return parse_client_frame(frame)


# ----------------------------------------------------------------------- the file itself


def test_vectors_file_is_up_to_date() -> None:
    """Regenerating vectors.json gives exactly the committed file."""
    vectors, _ = generate.build()
    assert generate.render(vectors) == (ROOT / "vectors" / "vectors.json").read_text("utf-8"), (
        "protocol/vectors/vectors.json is stale: run python -m tools.vectors"
    )


def test_generate_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    """``--check`` exits 1 for a stale file and 0 once the file has been written."""
    out = tmp_path / "vectors.json"
    out.write_text("[]\n", encoding="utf-8")
    assert generate.main(["--check", "--out", str(out)]) == 1
    assert generate.main(["--out", str(out)]) == 0
    assert generate.main(["--check", "--out", str(out)]) == 0


def test_every_vector_has_the_documented_fields() -> None:
    """Each vector is a map with exactly the documented fields, and names are unique."""
    assert len(BY_NAME) == len(VECTORS)
    for v in VECTORS:
        assert list(v) == FIELDS, v["name"]
        assert v["direction"] in ("client", "server")
        assert v["context"] in (("handshake", "session") if v["direction"] == "client" else (None,))
        assert (v["error_code"] is None) == v["valid"], v["name"]
        assert re.fullmatch(r"([0-9a-f]{2})*", v["msgpack_hex"]), v["name"]


def test_canonical_flag_matches_the_bytes() -> None:
    """``canonical`` is true exactly when msgpack_hex is msgpack.packb(json, use_bin_type=True)."""
    for v in VECTORS:
        packed = None if v["json"] is None else msgpack.packb(v["json"], use_bin_type=True).hex()
        assert v["canonical"] == (packed == v["msgpack_hex"]), v["name"]
    assert all(v["canonical"] for v in VECTORS if v["direction"] == "server")


def test_vectors_cover_every_kind_code_and_frame() -> None:
    """Every event kind, client frame type, server frame type and sent error code has a vector."""
    client = {v["json"]["type"] for v in CLIENT_VALID}
    assert client >= {"hello", "event", "subscribe", "unsubscribe", "beliefs", "explain"}
    assert client >= {"distribution", "narrative", "graph", "trust", "propose"}
    kinds = {v["json"]["kind"] for v in CLIENT_VALID if v["json"]["type"] == "event"}
    assert kinds == set(EventKind)
    server = {v["json"]["type"] for v in VECTORS if v["direction"] == "server"}
    assert server == {
        "welcome",
        "ack",
        "belief",
        "subscribed",
        "unsubscribed",
        "resumed",
        "beliefs",
        "explanation",
        "distribution",
        "narrative",
        "graph",
        "trust",
        "error",
        "worlds",
        "forked",
        "deleted",
        "residents",
        "events",
        "said",
        "promises",
        "goals",
    }
    errors = {
        v["json"]["code"]
        for v in VECTORS
        if v["direction"] == "server" and v["json"]["type"] == "error"
    }
    assert errors == set(ErrorCode) - {ErrorCode.OVERLOADED}
    assert {v["error_code"] for v in INVALID} >= {
        "bad_frame",
        "unknown_type",
        "invalid_frame",
        "invalid_event",
        "contract_violation",
        "hello_required",
        "unsupported_protocol",
    }


# ----------------------------------------------------------------------- true to the code


@pytest.mark.parametrize("vector", VALID, ids=ids(VALID))
def test_valid_vector_decodes_to_its_json(vector: dict[str, Any]) -> None:
    """A valid vector's bytes decode with protocol.decode to exactly its JSON form."""
    assert same(decode(bytes.fromhex(vector["msgpack_hex"])), vector["json"])


@pytest.mark.parametrize("vector", CLIENT_VALID, ids=ids(CLIENT_VALID))
def test_valid_client_vector_parses(vector: dict[str, Any]) -> None:
    """A valid client vector parses as hello (handshake) or as a session frame without error."""
    parsed = parse(vector)
    expected = protocol.Hello if vector["context"] == "handshake" else object
    assert isinstance(parsed, expected)


@pytest.mark.parametrize("vector", CLIENT_VALID, ids=ids(CLIENT_VALID))
def test_valid_client_vector_also_works_as_json_text(vector: dict[str, Any]) -> None:
    """The JSON form of a valid client vector, sent as a text message, parses the same way."""
    as_text = decode(json.dumps(vector["json"]))
    assert same(as_text, vector["json"])
    if vector["context"] == "handshake":
        assert parse_hello(as_text) == parse(vector)
    else:
        assert parse_client_frame(as_text) == parse(vector)


@pytest.mark.parametrize("vector", INVALID, ids=ids(INVALID))
def test_invalid_vector_raises_its_error_code(vector: dict[str, Any]) -> None:
    """An invalid vector is refused with ProtocolError carrying its error_code (and close code)."""
    with pytest.raises(ProtocolError) as caught:
        parse(vector)
    assert caught.value.code == vector["error_code"]
    if vector["context"] == "handshake":
        assert (caught.value.close_code or CloseCode.INTERNAL_ERROR) == vector["close_code"]
    else:
        assert vector["close_code"] is None


@pytest.mark.parametrize("vector", VALID, ids=ids(VALID))
def test_every_strict_prefix_of_a_vector_is_a_bad_frame(vector: dict[str, Any]) -> None:
    """Every strict prefix of a valid vector's bytes is refused as bad_frame."""
    data = bytes.fromhex(vector["msgpack_hex"])
    for end in range(len(data)):
        with pytest.raises(ProtocolError) as caught:
            decode(data[:end])
        assert caught.value.code is ErrorCode.BAD_FRAME


def test_server_vectors_fit_the_outbound_limit() -> None:
    """Every server vector encodes with protocol.encode, under the 60 KiB outbound limit."""
    for v in VECTORS:
        if v["direction"] == "server":
            assert encode(v["json"]).hex() == v["msgpack_hex"], v["name"]


async def test_a_running_sidecar_sends_exactly_the_transcript(tmp_path: Path) -> None:
    """Replaying the session against a real sidecar yields every frame of the transcript."""
    _, steps = generate.build()
    async with running(tmp_path) as sc:
        for conn in (1, 2):
            mine = [s for s in steps if s.conn == conn]
            async with connect(sc.url, max_size=None) as ws:
                for step in mine:
                    await ws.send(step.send)
                    got = []
                    for _ in step.expect:
                        message = await within(ws.recv())
                        assert isinstance(message, bytes)
                        got.append(msgpack.unpackb(message, raw=False))
                    assert all(same(g, e) for g, e in zip(got, step.expect, strict=True)), (
                        step.send.hex(),
                        got,
                        step.expect,
                    )
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(ws.recv(), 0.2)  # nothing more than the transcript


# ----------------------------------------------------------------------- SPEC.md


def _spec_json_blocks() -> list[Any]:
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", SPEC, flags=re.S)]


def _client_frame_types() -> set[str]:
    """The ``type`` values parse_client_frame handles, read from its source."""
    tree = ast.parse((ROOT / "frames.py").read_text("utf-8"))
    fn = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "parse_client_frame"
    )
    found = set()
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Name)
            and node.left.id == "kind"
        ):
            found |= {c.value for c in node.comparators if isinstance(c, ast.Constant)}
    return found


def test_every_error_code_is_documented() -> None:
    """Every ErrorCode value appears in SPEC.md as code text."""
    missing = [c.value for c in ErrorCode if f"`{c.value}`" not in SPEC]
    assert not missing, f"SPEC.md does not document error codes {missing}"


def test_every_close_code_is_documented() -> None:
    """Every CloseCode value appears in SPEC.md's close code table."""
    missing = [c.value for c in CloseCode if not re.search(rf"^\| `{c.value}` ", SPEC, re.M)]
    assert not missing, f"SPEC.md does not document close codes {missing}"


def test_every_client_frame_type_is_documented() -> None:
    """Every frame type parse_client_frame handles has a JSON example in SPEC.md."""
    types = _client_frame_types()
    assert {"event", "subscribe", "beliefs", "graph", "hello"} <= types
    examples = {b.get("type") for b in _spec_json_blocks() if isinstance(b, dict)}
    assert not types - examples, f"SPEC.md has no example of {types - examples}"


def test_every_event_kind_and_change_kind_is_documented() -> None:
    """Every event kind has an example in SPEC.md and every change kind is named in it."""
    kinds = {b.get("kind") for b in _spec_json_blocks() if isinstance(b, dict)}
    assert set(EventKind) <= kinds
    assert not [k for k in ChangeKind if f"`{k.value}`" not in SPEC]


def test_spec_examples_are_vectors() -> None:
    """Every ```json example of SPEC.md is exactly the JSON form of some vector."""
    blocks = _spec_json_blocks()
    assert len(blocks) >= 30
    known = [v["json"] for v in VECTORS if v["json"] is not None]
    strays = [b for b in blocks if not any(same(b, k) for k in known)]
    assert not strays, f"SPEC.md examples that are no vector: {strays}"
