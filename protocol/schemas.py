"""JSON Schema (2020-12) for every frame of protocol v1, built from the protocol's own limits.

The schemas are the machine-readable form of SPEC.md's field tables: another language can
validate frames with any JSON Schema library, and a tool-calling LLM can be handed one query
frame's schema (``$defs/narrative``, ``$defs/beliefs``, …) as a tool definition. They are
*written* from here (``python -m protocol.schemas``) into ``protocol/schema/*.schema.json``,
never edited by hand, so a limit changed in code (an id's length, a filter list's size, a
change kind) cannot drift from the file; ``--check`` exits 1 if the files are stale.

What a schema can say and what it cannot: field types, required fields, enumerations, lengths,
ranges and the ±(2^53−1) integer bound. Rules that need the world (a `distort` without a
belief, `clock_backwards`, a schema's `values`) or cross-field logic beyond "one of" (a
listener who is also the speaker, `interpretations` keyed by witnesses) are the sidecar's to
check and answer with an error code (SPEC §12). Unknown keys are allowed everywhere (SPEC §3).
Integers: JSON Schema's ``integer`` includes integral floats (``12.0``), as the protocol does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from sidecar.engine import ChangeKind, EventKind, Intervention
from sidecar.engine.events import MAX_EDITS, MAX_ID_LEN, MAX_LIST_LEN, MAX_TEXT_LEN
from sidecar.engine.said import SAID_TO_SHOWN

from .errors import ErrorCode
from .frames import (
    EVIDENCE_REFS_SHOWN,
    MAX_CURSOR,
    MAX_FILTER,
    MAX_LIMIT,
    MAX_PAGE,
    MAX_RESIDENTS,
    PROTOCOL_VERSION,
    TAGS_SHOWN,
)

__all__ = ["SCHEMA_DIR", "client_schema", "main", "server_schema"]

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
MAX_SAFE = 2**53 - 1

Schema = dict[str, Any]

STATES = ["influencing", "past", "doubtful", "anomalous", "corrected"]
SOURCE_KINDS = ["firsthand", "hearsay", "implanted"]
LANGS = ["en", "zh-Hant"]
ERROR_CODES = [str(code) for code in ErrorCode]


def _ref(name: str) -> Schema:
    return {"$ref": f"#/$defs/{name}"}


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _list(items: Schema, *, most: int | None = None, least: int = 0) -> Schema:
    out: Schema = {"type": "array", "items": items}
    if least:
        out["minItems"] = least
    if most is not None:
        out["maxItems"] = most
    return out


def _frame(
    type_: str, description: str, properties: Schema, required: list[str] | None = None
) -> Schema:
    """A frame: ``type`` fixed, ``rid`` optional, every other field as given; an optional field
    may also be nil (absent and nil mean the same, SPEC §3)."""
    needed = ["type", *(required or [])]
    return {
        "type": "object",
        "description": description,
        "properties": {
            "type": {"const": type_},
            "rid": _ref("rid"),
            **{k: v if k in needed else _nullable(v) for k, v in properties.items()},
        },
        "required": needed,
    }


# --------------------------------------------------------------------------- shared values

_COMMON: dict[str, Schema] = {
    "rid": {
        "description": "request id, echoed in the reply (SPEC §4)",
        "anyOf": [
            {"type": "string", "maxLength": MAX_ID_LEN},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ],
    },
    "integer": {"type": "integer", "minimum": -MAX_SAFE, "maximum": MAX_SAFE},
    "seq": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE},
    "id": {
        "description": "a resident, action or other id: 1-200 characters, not '*', no NUL",
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_LEN,
        "pattern": "^[^\\u0000]*$",
        "not": {"const": "*"},
    },
    "name": {
        "description": "a world id or a root",
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_LEN,
    },
    "text": {"type": "string", "maxLength": MAX_TEXT_LEN, "pattern": "^[^\\u0000]*$"},
    "texts": {
        "description": "a text, or the same text per language ({en, zh-Hant}, SPEC §7.1)",
        "anyOf": [
            {"type": "string", "maxLength": MAX_TEXT_LEN, "pattern": "^[^\\u0000]*$"},
            {
                "type": "object",
                "properties": {
                    lang: {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_TEXT_LEN,
                        "pattern": "^[^\\u0000]*$",
                    }
                    for lang in LANGS
                },
                "additionalProperties": False,
                "minProperties": 1,
            },
        ],
    },
    "day": {"type": "number", "minimum": 0, "maximum": 1e12},
    "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
    "value": {
        "description": "a claim value: string, integer within ±(2^53−1) or boolean; never a "
        "float with a fraction, never nil",
        "anyOf": [
            {"type": "string", "maxLength": MAX_TEXT_LEN},
            {"type": "integer", "minimum": -MAX_SAFE, "maximum": MAX_SAFE},
            {"type": "boolean"},
        ],
    },
    "state": {"enum": STATES},
    "change_kind": {"enum": [str(k) for k in ChangeKind]},
    "source_kind": {"enum": SOURCE_KINDS},
}

# --------------------------------------------------------------------------- client frames

_ID_LIST = _list(_ref("id"), most=MAX_LIST_LEN)
#: A subject as the game may send it: a non-empty text, or a language map of non-empty texts.
_NONEMPTY_TEXTS: Schema = {"allOf": [_ref("texts"), {"not": {"const": ""}}]}
#: ``limit`` of a beliefs or explain query.
_LIMIT: Schema = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
_FILTER = {
    "description": f"a string or a list of at most {MAX_FILTER} strings",
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN},
        _list({"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN}, most=MAX_FILTER),
    ],
}
_RESIDENTS = {
    "description": "a list of resident ids, or '*' for every resident",
    "anyOf": [{"const": "*"}, _list(_ref("id"), most=10_000)],
}
#: The fields of a notification filter: a ``subscribe`` frame's, and each map of ``hello.filters``.
_SUBSCRIPTION: Schema = {
    "residents": _RESIDENTS,
    "roots": _list({"type": "string"}),
    "changes": _list(_ref("change_kind")),
    "crossing": {"type": "number", "minimum": 0, "maximum": 100},
}
#: Most filters one connection holds (SPEC §8.2), so at most this many in ``hello.filters``.
MAX_FILTERS = 64
_WEIGHT = {"type": "number", "minimum": 0, "maximum": 1e6}
_TAGS: Schema = {"people": _ID_LIST, "places": _ID_LIST, "topics": _ID_LIST}
_CLAIM = {
    "type": "object",
    "properties": {
        "root": _ref("name"),
        "value": _ref("value"),
        "mutable": _nullable({"type": "boolean"}),
        "interpretation": {"type": "null"},
    },
    "required": ["root", "value"],
}
_CLAIM_ROOT_ONLY = {
    "type": "object",
    "properties": {"root": _ref("name"), "value": _ref("value")},
    "required": ["root"],
}
_NAMES = {
    "type": "object",
    "properties": {
        lang: {"type": "string", "minLength": 1, "maxLength": MAX_ID_LEN} for lang in LANGS
    },
    "additionalProperties": False,
    "minProperties": 1,
}


def _event_kinds() -> dict[str, tuple[Schema, list[str]]]:
    """Per event kind: its own fields and which are required (SPEC §7.2–§7.12)."""
    claim_event: Schema = {
        "claim": _CLAIM,
        "subject": _NONEMPTY_TEXTS,
        "importance": _WEIGHT,
        "emotion": _WEIGHT,
        **_TAGS,
    }
    # The epistemic guard's field rules (SPEC §12 contract_violation): an utterance never
    # carries firsthand fields, and firsthand evidence never names a source.
    spoken = {
        "speaker": _ref("id"),
        "topic": _ref("id"),
        "witnesses": {"type": "null"},
        "interpretations": {"type": "null"},
    }
    unsourced = {name: {"type": "null"} for name in ("source", "source_resident_id", "speaker")}
    return {
        "observe": (
            {
                **claim_event,
                **unsourced,
                "witnesses": {**_ID_LIST, "minItems": 1},
                "interpretations": {
                    "type": "object",
                    "additionalProperties": _NONEMPTY_TEXTS,
                },
            },
            ["claim", "subject", "witnesses"],
        ),
        "say": (
            {
                **claim_event,
                **spoken,
                "listeners": {**_ID_LIST, "minItems": 1},
                "overhearers": _ID_LIST,
            },
            ["claim", "subject", "speaker", "listeners"],
        ),
        "announce": (
            {
                **claim_event,
                **spoken,
                "audience": {"anyOf": [{"const": "*"}, {**_ID_LIST, "minItems": 1}]},
            },
            ["claim", "subject", "speaker", "audience"],
        ),
        "act": (
            {
                **unsourced,
                "actor": _ref("id"),
                "action": _ref("id"),
                "status": {"enum": ["completed", "rejected", "interrupted", "replaced"]},
                "witnesses": _ID_LIST,
                "subject": _ref("texts"),
                "reason": _ref("texts"),
                "claim": {"type": "null"},
            },
            ["actor", "action", "status"],
        ),
        "intervene": (
            {
                **unsourced,
                "resident": _ref("id"),
                "op": {"enum": ["implant", "distort", "suppress", "soften"]},
                "claim": _CLAIM_ROOT_ONLY,
                "subject": _ref("texts"),
            },
            ["resident", "op", "claim"],
        ),
        "tick": ({}, []),
        "trust": (
            {
                "resident": _ref("id"),
                "source": _ref("id"),
                "topic": _ref("id"),
                "value": {"type": "number", "minimum": 0, "maximum": 1},
            },
            ["resident", "source", "value"],
        ),
        "propose": (
            {
                "resident": _ref("id"),
                "edits": _list(
                    {
                        "type": "object",
                        "required": ["root"],
                        "properties": {
                            "root": _ref("name"),
                            "subject": _nullable(_ref("text")),
                            "interpretation": _nullable(_ref("text")),
                            "merge": _nullable(_list(_ref("name"))),
                        },
                    },
                    least=1,
                    most=MAX_EDITS,
                ),
            },
            ["resident", "edits"],
        ),
        "register": (
            {
                "residents": _list(
                    {
                        "type": "object",
                        "required": ["resident", "names"],
                        "properties": {"resident": _ref("id"), "names": _NAMES},
                    },
                    most=MAX_LIST_LEN,
                ),
                "actions": _list(
                    {
                        "type": "object",
                        "required": ["action", "names"],
                        "properties": {"action": _ref("id"), "names": _NAMES},
                    },
                    most=MAX_LIST_LEN,
                ),
            },
            [],
        ),
        "promise": (
            {
                "promise": _ref("id"),
                "promiser": _ref("id"),
                "to": {**_ID_LIST, "minItems": 1},
                "action": _ref("id"),
                "subject": {**_COMMON["text"], "minLength": 1},
                "by": _ref("day"),
            },
            ["promise", "promiser", "to", "action", "subject"],
        ),
        "goal": (
            {
                "resident": _ref("id"),
                "goal": _ref("id"),
                "op": {"enum": ["set", "changed", "achieved", "abandoned"]},
                "subject": _ref("texts"),
            },
            ["resident", "goal", "op"],
        ),
        "schema": (
            {
                "undeclared": {"enum": ["accept", "warn", "refuse"]},
                "roots": _list(
                    {
                        "type": "object",
                        "required": ["prefix"],
                        "properties": {
                            "prefix": _ref("name"),
                            "values": _list(_ref("value"), least=1),
                            "text": {"type": "object", "additionalProperties": {"type": "string"}},
                            "mutable": {"type": "boolean"},
                            "importance": {"type": "number", "minimum": 0, "maximum": 1},
                        },
                    },
                    most=1000,
                ),
            },
            [],
        ),
    }


def _event_defs() -> dict[str, Schema]:
    """``event`` frames, one definition per kind; ``trust``/``propose``/``register``/``schema``
    are also frame types of their own (the frame's ``type`` is then its kind)."""
    base = {"event_id": _ref("name"), "day": _ref("day")}
    defs: dict[str, Schema] = {}
    for kind, (fields, required) in _event_kinds().items():
        props = {**base, "kind": {"const": kind}, **fields}
        defs[f"event.{kind}"] = _frame(
            "event",
            f"an event of kind {kind} (SPEC §7)",
            props,
            ["event_id", "day", "kind", *required],
        )
    assert set(_event_kinds()) == {str(k) for k in EventKind}
    for kind in ("trust", "propose", "register", "schema"):
        fields, required = _event_kinds()[kind]
        defs[f"{kind}.event"] = _frame(
            kind,
            f"a {kind} event sent as its own frame type (SPEC §7)",
            {**base, **fields},
            ["event_id", "day", *required],
        )
    return defs


def client_schema() -> Schema:
    """Every frame a game sends (``oneOf`` by ``type``; events also by ``kind``)."""
    defs: dict[str, Schema] = {
        "hello": _frame(
            "hello",
            "the first frame of a connection (SPEC §5)",
            {
                "protocol": {"const": PROTOCOL_VERSION},
                "world": _ref("name"),
                "token": {"type": "string"},
                "client": {"type": "string"},
                "resume": _ref("seq"),
                "subscribe": _RESIDENTS,
                "role": {"enum": ["reader", "writer"]},
                "filters": _list(
                    {
                        "type": "object",
                        "description": "a filter restored before the resume backlog (SPEC §9)",
                        "properties": {
                            k: v if k == "residents" else _nullable(v)
                            for k, v in _SUBSCRIPTION.items()
                        },
                        "required": ["residents"],
                    },
                    most=MAX_FILTERS,
                ),
            },
            ["protocol", "world"],
        ),
        **_event_defs(),
        "subscribe": _frame(
            "subscribe",
            "add a notification filter (SPEC §8.2)",
            _SUBSCRIPTION,
            ["residents"],
        ),
        "unsubscribe": _frame(
            "unsubscribe",
            "remove residents from the filters, or every filter (SPEC §8.3)",
            {"residents": _RESIDENTS},
        ),
        "beliefs": _frame(
            "beliefs",
            "a resident's beliefs, narrowed by every filter given (SPEC §10.1)",
            {
                "resident": _ref("id"),
                "after": _ref("name"),
                "root": _ref("name"),
                "prefix": _FILTER,
                "states": {"anyOf": [_ref("state"), _list(_ref("state"), most=MAX_FILTER)]},
                "people": _FILTER,
                "places": _FILTER,
                "min_confidence": _ref("confidence"),
                "limit": _LIMIT,
            },
            ["resident"],
        ),
        "explain": _frame(
            "explain",
            "one belief with its evidence and history; limit keeps the latest (SPEC §10.2)",
            {"resident": _ref("id"), "root": _ref("name"), "limit": _LIMIT},
            ["resident", "root"],
        ),
        "distribution": _frame(
            "distribution",
            "who believes what about one root (SPEC §10.3)",
            {"root": _ref("name")},
            ["root"],
        ),
        "narrative": _frame(
            "narrative",
            "a resident's memory as first-person prompt text (SPEC §10.4)",
            {
                "resident": _ref("id"),
                "budget": {
                    "anyOf": [{"const": 0}, {"type": "integer", "minimum": 200, "maximum": 50_000}]
                },
                "lang": {"enum": LANGS},
                "focus": {
                    "type": "object",
                    "properties": {
                        k: _nullable(_FILTER) for k in ("people", "places", "roots", "topics")
                    },
                },
            },
            ["resident"],
        ),
        "graph": _frame(
            "graph",
            "a page of a belief graph: one resident's, one root's, or one belief's (SPEC §10.5)",
            {
                "resident": _ref("id"),
                "root": _ref("name"),
                "after": {"type": "string", "minLength": 1, "maxLength": MAX_CURSOR},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
        ),
        "trust.query": _frame(
            "trust",
            "a page of what a resident trusts, per source and topic (SPEC §10.6)",
            {
                "resident": _ref("id"),
                "source": _ref("id"),
                "value": {"type": "null"},
                "after": {
                    "type": "string",
                    "maxLength": MAX_CURSOR,
                    # the escaped source, then ':' and the topic for a topic entry
                    "pattern": "^([^%:]|%25|%3A)+(:[\\s\\S]+)?$",
                    "description": "the `next` of the previous page (SPEC §10.6)",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
            ["resident"],
        ),
        "residents": _frame(
            "residents",
            "a page of the world's residents with their names (SPEC §10.8)",
            {"after": _ref("id"), "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}},
        ),
        "events": _frame(
            "events",
            "a page of the world's event log from event seq `from` (SPEC §10.9)",
            {
                "from": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
        ),
        "said": _frame(
            "said",
            "a page of what a resident said, from event seq `from` (SPEC §10.10)",
            {
                "resident": _ref("id"),
                "from": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
            ["resident"],
        ),
        "promises": _frame(
            "promises",
            "a page of the promises a resident made or was made (SPEC §10.11)",
            {
                "resident": _ref("id"),
                "state": {"enum": ["pending", "kept", "overdue", "broken"]},
                "after": _ref("id"),
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
            ["resident"],
        ),
        "goals": _frame(
            "goals",
            "a page of a resident's goals (SPEC §10.12)",
            {
                "resident": _ref("id"),
                "state": {"enum": ["active", "achieved", "abandoned"]},
                "after": _ref("id"),
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
            ["resident"],
        ),
        "worlds": _frame(
            "worlds",
            "list the worlds, every one or a page of `limit` after `after` (SPEC §10.7)",
            {
                "after": _ref("name"),
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            },
        ),
        "fork": _frame(
            "fork",
            "copy this world's log up to event seq `at` into a new world (SPEC §10.7)",
            {"into": _ref("name"), "at": _ref("seq")},
            ["into"],
        ),
        "delete": _frame(
            "delete", "delete the named world (SPEC §10.7)", {"world": _ref("name")}, ["world"]
        ),
    }
    defs["graph"]["anyOf"] = [
        {"required": ["resident"], "properties": {"resident": _ref("id")}},
        {"required": ["root"], "properties": {"root": _ref("name")}},
    ]
    # implant and distort say what the resident will remember: a value and a subject.
    defs["event.intervene"]["if"] = {"properties": {"op": {"enum": ["implant", "distort"]}}}
    defs["event.intervene"]["then"] = {
        "required": ["subject"],
        "properties": {
            "claim": {"required": ["value"], "properties": {"value": _ref("value")}},
            "subject": _NONEMPTY_TEXTS,
        },
    }
    return _document(
        "credence-client-frames", "Every frame a game sends to a Credence sidecar", defs
    )


# --------------------------------------------------------------------------- server frames

#: A subject in a reply: as the game sent it (a text or a language map), or nil.
_SUBJECT_OUT: Schema = {
    "anyOf": [
        {"type": ["string", "null"]},
        {"type": "object", "additionalProperties": {"type": "string"}},
    ]
}
_BELIEF = {
    "type": "object",
    "required": ["resident", "root", "value", "confidence", "state", "source_kind"],
    "properties": {
        "resident": {"type": "string"},
        "root": {"type": "string"},
        "value": _ref("value"),
        "subject": _SUBJECT_OUT,
        "confidence": _ref("confidence"),
        "state": _ref("state"),
        "source_kind": _ref("source_kind"),
        "source": {"type": ["string", "null"]},
        "intervention": {"enum": [*(str(i) for i in Intervention), None]},
        "formed_day": {"type": "number"},
        "updated_day": {"type": "number"},
        **{k: _list({"type": "string"}, most=TAGS_SHOWN) for k in ("people", "places", "topics")},
        "evidence_refs": _list({"type": "string"}, most=2 * EVIDENCE_REFS_SHOWN),
        **{
            f"{k}_count": {"type": "integer", "minimum": 0}
            for k in ("people", "places", "topics", "evidence")
        },
    },
}
_CHANGE_FIELDS: Schema = {
    "seq": _ref("seq"),
    "change": _ref("change_kind"),
    "confidence": _ref("confidence"),
    "prev_confidence": _nullable(_ref("confidence")),
    "state": _ref("state"),
    "prev_state": _nullable(_ref("state")),
    "source_kind": _ref("source_kind"),
    "source": {"type": ["string", "null"]},
    "event_id": {"type": "string"},
    "evidence_id": {"type": ["string", "null"]},
    "day": {"type": "number"},
    "detail": {"type": ["string", "null"]},
}
_CHANGE = {
    "type": "object",
    "required": ["seq", "change", "confidence", "state", "event_id", "day"],
    "properties": _CHANGE_FIELDS,
}
#: One entry of a ``said`` reply (SPEC §10.10).
_SAID_ENTRY: dict[str, Any] = {
    "seq": _ref("seq"),
    "event_id": {"type": "string"},
    "day": {"type": "number"},
    "kind": {"enum": ["say", "announce"]},
    "root": _ref("name"),
    "value": _ref("value"),
    "subject": _SUBJECT_OUT,
    "topic": {"type": ["string", "null"]},
    "to": _list(_ref("id"), most=SAID_TO_SHOWN),
    "to_count": {"type": "integer", "minimum": 0},
    "everyone": {"type": "boolean"},
}
_PAGED = {"part": {"type": "integer", "minimum": 0}, "more": {"type": "boolean"}}
_WORLD_INFO: Schema = {
    "world": {"type": "string"},
    "day": {"type": "number"},
    **{k: {"type": "integer", "minimum": 0} for k in ("events", "changes", "residents", "beliefs")},
}


def server_schema() -> Schema:
    """Every frame a sidecar sends (``oneOf`` by ``type``)."""
    defs: dict[str, Schema] = {
        "welcome": _frame(
            "welcome",
            "the hello was accepted (SPEC §5)",
            {
                "protocol": {"const": PROTOCOL_VERSION},
                "world": {"type": "string"},
                "seq": _ref("seq"),
                "server": {"type": "string"},
                "role": {"enum": ["writer", "reader"]},
                "auth": {"enum": ["open", "token"]},
                "max_frame": {"type": "integer", "minimum": 1},
                "max_residents": {"const": MAX_RESIDENTS},
            },
            ["protocol", "world", "seq", "server", "role", "auth", "max_frame", "max_residents"],
        ),
        "ack": _frame(
            "ack",
            "an event and all its consequences are committed (SPEC §7.10)",
            {
                "event_id": {"type": "string"},
                "duplicate": {"type": "boolean"},
                "changes": {"type": "integer", "minimum": 0},
                "seq": _ref("seq"),
                "results": {"type": "array"},
                "warnings": _list({"type": "string"}),
            },
            ["event_id", "duplicate", "changes"],
        ),
        "belief": _frame(
            "belief",
            "a committed change matched a subscription (SPEC §8.1)",
            {
                **_CHANGE_FIELDS,
                "resident": {"type": "string"},
                "root": {"type": "string"},
                "subject": _SUBJECT_OUT,
                "prev_subject": _SUBJECT_OUT,
            },
            [
                "seq",
                "resident",
                "root",
                "value",
                "change",
                "confidence",
                "state",
                "source_kind",
                "event_id",
                "day",
            ],
        ),
        "subscribed": _frame("subscribed", "reply to subscribe (SPEC §8.2)", {"seq": _ref("seq")}),
        "unsubscribed": _frame("unsubscribed", "reply to unsubscribe (SPEC §8.3)", {}),
        "resumed": _frame(
            "resumed",
            "the backlog of hello.resume has been sent (SPEC §9)",
            {"seq": _ref("seq"), "sent": {"type": "integer", "minimum": 0}},
            ["seq"],
        ),
        "beliefs": _frame(
            "beliefs",
            "reply to beliefs, paged (SPEC §10.1, §11)",
            {"resident": {"type": "string"}, "beliefs": _list(_BELIEF), **_PAGED},
            ["beliefs"],
        ),
        "explanation": _frame(
            "explanation",
            "reply to explain, paged (SPEC §10.2, §11)",
            {
                "resident": {"type": "string"},
                "root": {"type": "string"},
                "belief": _BELIEF,
                "evidence_total": {"type": "integer", "minimum": 0},
                "history_total": {"type": "integer", "minimum": 0},
                "evidence": _list({"type": "object"}),
                "history": _list(_CHANGE),
                **_PAGED,
            },
            ["resident", "root"],
        ),
        "distribution": _frame(
            "distribution",
            "reply to distribution, paged (SPEC §10.3, §11)",
            {
                "root": {"type": "string"},
                "values": _list({"type": "object"}, most=50),
                "values_total": {"type": "integer", "minimum": 0},
                "residents": _list({"type": "object", "required": ["resident"]}),
                **_PAGED,
            },
            ["root"],
        ),
        "narrative": _frame(
            "narrative",
            "reply to narrative, paged (SPEC §10.4, §11)",
            {
                "resident": {"type": "string"},
                "lang": {"enum": LANGS},
                "budget": {"type": "integer"},
                "text": {"type": "string"},
                "omitted": {"type": "integer", "minimum": 0},
                "compressed": {"type": "boolean"},
                "day": {"type": "number"},
                "focus": {"type": "object"},
                "sections": _list({"type": "object"}),
                **_PAGED,
            },
            ["resident", "text"],
        ),
        "graph": _frame(
            "graph",
            "reply to graph: one page of the graph, paged (SPEC §10.5, §11)",
            {
                "resident": {"type": ["string", "null"]},
                "root": {"type": ["string", "null"]},
                "next": {"type": ["string", "null"]},
                "nodes": _list(
                    {
                        "type": "object",
                        "required": ["id", "type", "label"],
                        "properties": {
                            "id": {"type": "string"},
                            "type": {"enum": ["claim", "event", "person", "place"]},
                            "label": {"type": "string"},
                            "subject": _SUBJECT_OUT,
                            "people_count": {"type": "integer", "minimum": 0},
                            "places_count": {"type": "integer", "minimum": 0},
                        },
                    }
                ),
                "edges": _list(
                    {
                        "type": "object",
                        "required": ["source", "target", "type", "count"],
                        "properties": {
                            "count": {"type": "integer", "minimum": 1},
                            "subject_before": _SUBJECT_OUT,
                        },
                    }
                ),
                **_PAGED,
            },
            ["next"],
        ),
        "trust": _frame(
            "trust",
            "reply to a trust query, one page of the table (SPEC §10.6, §11)",
            {
                "resident": {"type": "string"},
                "source": {"type": ["string", "null"]},
                "default": {"type": "number", "minimum": 0, "maximum": 1},
                "next": {"type": ["string", "null"]},
                "entries": _list(
                    {
                        "type": "object",
                        "required": ["source", "value"],
                        "properties": {"history": _list(_CHANGE)},
                    }
                ),
                **_PAGED,
            },
            ["resident", "next"],
        ),
        "residents": _frame(
            "residents",
            "reply to residents, paged (SPEC §10.8, §11)",
            {
                "next": {"type": ["string", "null"]},
                "residents": _list(
                    {
                        "type": "object",
                        "required": ["resident", "names"],
                        "properties": {
                            "resident": {"type": "string"},
                            "names": {
                                "type": "object",
                                "propertyNames": {"enum": LANGS},
                                "additionalProperties": {"type": "string"},
                            },
                        },
                    }
                ),
                **_PAGED,
            },
            ["residents", "next"],
        ),
        "events": _frame(
            "events",
            "reply to events, paged (SPEC §10.9, §11)",
            {
                "from": {"type": "integer", "minimum": 1},
                "last": {"type": "integer", "minimum": 0},
                "next": _nullable({"type": "integer", "minimum": 1}),
                "events": _list(
                    {
                        "type": "object",
                        "required": ["seq", "event_id", "day", "kind", "by", "subject"],
                        "properties": {
                            "seq": _ref("seq"),
                            "event_id": {"type": "string"},
                            "day": {"type": "number"},
                            "kind": {"enum": [str(k) for k in EventKind]},
                            "by": {"type": ["string", "null"]},
                            "subject": {"type": ["string", "null"], "maxLength": 200},
                        },
                    }
                ),
                **_PAGED,
            },
            ["events", "from", "last", "next"],
        ),
        "said": _frame(
            "said",
            "reply to said, paged (SPEC §10.10, §11)",
            {
                "resident": _ref("id"),
                "from": {"type": "integer", "minimum": 1},
                "next": _nullable({"type": "integer", "minimum": 1}),
                "said": _list(
                    {
                        "type": "object",
                        "required": list(_SAID_ENTRY),
                        "properties": _SAID_ENTRY,
                    }
                ),
                **_PAGED,
            },
            ["resident", "from", "next", "said"],
        ),
        "promises": _frame(
            "promises",
            "reply to promises, paged (SPEC §10.11, §11)",
            {
                "resident": {"type": "string"},
                "next": {"type": ["string", "null"]},
                "promises": _list(
                    {
                        "type": "object",
                        "required": [
                            "promise",
                            "promiser",
                            "to",
                            "action",
                            "subject",
                            "made_day",
                            "by",
                            "state",
                            "how",
                            "source",
                            "since",
                        ],
                        "properties": {
                            "state": {"enum": ["pending", "kept", "overdue", "broken"]},
                            "how": {"enum": ["made", "seen", "told", "deadline"]},
                        },
                    }
                ),
                **_PAGED,
            },
            ["resident", "promises", "next"],
        ),
        "goals": _frame(
            "goals",
            "reply to goals, paged (SPEC §10.12, §11)",
            {
                "resident": {"type": "string"},
                "next": {"type": ["string", "null"]},
                "goals": _list(
                    {
                        "type": "object",
                        "required": [
                            "goal",
                            "subject",
                            "state",
                            "set_day",
                            "day",
                            "prev_subject",
                            "history",
                        ],
                        "properties": {"state": {"enum": ["active", "achieved", "abandoned"]}},
                    }
                ),
                **_PAGED,
            },
            ["resident", "goals", "next"],
        ),
        "worlds": _frame(
            "worlds",
            "reply to worlds (SPEC §10.7)",
            {
                "next": {"type": ["string", "null"]},
                "worlds": _list(
                    {"type": "object", "required": list(_WORLD_INFO), "properties": _WORLD_INFO}
                ),
                **_PAGED,
            },
            ["worlds", "next"],
        ),
        "forked": _frame(
            "forked",
            "reply to fork: the new world (SPEC §10.7)",
            {**_WORLD_INFO, "source": {"type": "string"}, "at": _nullable(_ref("seq"))},
            ["world", "source"],
        ),
        "deleted": _frame(
            "deleted",
            "reply to delete: what the world held (SPEC §10.7)",
            _WORLD_INFO,
            ["world"],
        ),
        "error": _frame(
            "error",
            "a frame was refused, or the connection is about to close (SPEC §12)",
            {
                "code": {"enum": ERROR_CODES},
                "message": {"type": "string"},
                "event_id": {"type": ["string", "null"]},
                "reason": {"type": ["string", "null"]},
            },
            ["code", "message"],
        ),
    }
    return _document(
        "credence-server-frames", "Every frame a Credence sidecar sends to a game", defs
    )


def _document(name: str, title: str, defs: dict[str, Schema]) -> Schema:
    return {
        "$schema": DIALECT,
        "$id": f"https://credence.invalid/protocol/v{PROTOCOL_VERSION}/{name}.schema.json",
        "title": f"{title} (protocol v{PROTOCOL_VERSION})",
        "oneOf": [_ref(n) for n in defs],
        "$defs": {**_COMMON, **defs},
    }


# --------------------------------------------------------------------------- files

FILES = {"client-frames.schema.json": client_schema, "server-frames.schema.json": server_schema}


def render(build: Any) -> bytes:
    return orjson.dumps(build(), option=orjson.OPT_INDENT_2) + b"\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.schemas", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are stale")
    args = parser.parse_args(argv)
    stale = []
    for name, build in FILES.items():
        path, text = SCHEMA_DIR / name, render(build)
        if args.check:
            if not path.exists() or path.read_bytes() != text:
                stale.append(name)
        else:
            SCHEMA_DIR.mkdir(exist_ok=True)
            path.write_bytes(text)
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m protocol.schemas", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
