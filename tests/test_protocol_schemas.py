"""The JSON Schemas under protocol/schema/ agree with the vectors, and are never stale."""

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from protocol import schemas

VECTORS = json.loads(
    (Path(schemas.__file__).parent / "vectors" / "vectors.json").read_text(encoding="utf-8")
)

#: Invalid vectors a schema cannot refuse, each for the reason given: they need more than the
#: one frame's own fields (the connection's state, several fields compared, or a count over
#: several lists), so only the sidecar refuses them.
BEYOND_A_SCHEMA = {
    "invalid.hello_again": "a second hello: the connection's state",
    "invalid.depth_17": "nesting depth (SPEC §3) is a codec rule, not a field's",
    "invalid.event.interpretation_stranger": "interpretations' keys compared with witnesses",
    "invalid.event.speaker_listens": "the speaker compared with the listeners",
    "invalid.event.announce_to_self": "the audience compared with the speaker",
    "invalid.event.too_many_residents": "a count over four lists together",
    "invalid.event.announce_relation": "a relation root compared with the speaker",
    "invalid.promise.by": "a promise's deadline compared with its day",
    "contract.promise_report_value": "the values allowed depend on the claim's root",
    "invalid.trust.after": "the cursor's source compared with the query's source",
}


def _validator(name: str) -> Draft202012Validator:
    document = json.loads((schemas.SCHEMA_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


CLIENT = _validator("client-frames.schema.json")
SERVER = _validator("server-frames.schema.json")
HELLO = Draft202012Validator({**CLIENT.schema, "oneOf": [{"$ref": "#/$defs/hello"}]})


def _check(vector: dict[str, Any]) -> list[str]:
    if vector["direction"] == "server":
        validator = SERVER
    else:
        validator = HELLO if vector["context"] == "handshake" else CLIENT
    return [e.message for e in validator.iter_errors(vector["json"])]


def test_the_schema_files_are_what_the_generator_writes() -> None:
    """A limit or a frame changed in code without regenerating the schemas fails here."""
    assert schemas.main(["--check"]) == 0


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS if v["valid"] and v["json"] is not None], ids=lambda v: v["name"]
)
def test_every_valid_vector_is_valid_under_its_schema(vector: dict[str, Any]) -> None:
    """Every frame the sidecar accepts or sends, as the vectors show it, passes its schema."""
    assert _check(vector) == []


@pytest.mark.parametrize(
    "vector",
    [v for v in VECTORS if not v["valid"] and isinstance(v["json"], dict)],
    ids=lambda v: v["name"],
)
def test_every_refused_vector_is_refused_by_the_schema_unless_it_needs_more(
    vector: dict[str, Any],
) -> None:
    """A frame the sidecar refuses for its own fields is refused by the schema too; the few
    that need the connection or several fields together are listed with the reason."""
    errors = _check(vector)
    if vector["name"] in BEYOND_A_SCHEMA:
        assert errors == [], f"{vector['name']} is now refused: drop it from BEYOND_A_SCHEMA"
    else:
        assert errors, f"the schema accepts {vector['name']} ({vector['error_code']})"


def test_every_client_frame_type_and_event_kind_has_a_definition() -> None:
    """Each query frame can be handed to a tool-calling LLM alone: a described object schema."""
    defs = CLIENT.schema["$defs"]
    for name in ("hello", "subscribe", "unsubscribe", "beliefs", "explain", "distribution",
                 "narrative", "graph", "trust.query", "worlds", "fork", "delete"):  # fmt: skip
        assert defs[name]["type"] == "object" and defs[name]["description"]
    kinds = {v["json"]["kind"] for v in VECTORS if v["valid"] and v["json"] and
             v["json"].get("type") == "event"}  # fmt: skip
    assert kinds <= {n.split(".", 1)[1] for n in defs if n.startswith("event.")}
