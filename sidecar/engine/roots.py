"""A world's root schema: which claim roots the game declares, and what each allows.

Optional per world. A ``schema`` event (logged like any other, so a replay is exact) declares
root prefixes; the latest one is the world's schema::

    {"undeclared": "accept" | "warn" | "refuse",
     "roots": [{"prefix": "water:", "values": ["clean", "poisoned"],
                "text": {"en": "the well water", "zh-Hant": "井水"},
                "mutable": false, "importance": 0.5}, ...]}

For every claim a game sends (observe, say, announce, intervene; not the roots the sidecar
derives itself: ``action:``, ``believes:``, ``trust:``) the longest declared prefix the root
starts with applies:

* declared ``values``: any other value is refused (``schema_violation``, reason
  ``value_not_allowed``) — a typo like ``poisond`` never becomes a new belief;
* ``mutable: true``: the root is mutable, as if the event said ``mutable: true``;
* ``importance``: the event's importance when it gives none (slower aging);
* ``text``: display text per language, for readable projections.

A root no prefix covers is accepted, accepted with a warning in the ack (``warn``), or refused
(``refuse``: ``schema_violation``, reason ``undeclared_root``), as the schema says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .model import Claim, InvalidEvent, Value, check_value, same_value

__all__ = [
    "DERIVED_PREFIXES",
    "SCHEMA_FORMAT",
    "TRUST_PREFIX",
    "UNDECLARED",
    "RootDecl",
    "RootSchema",
    "SchemaViolation",
    "parse_schema",
    "parse_trust_key",
    "parse_trust_root",
    "trust_key",
    "trust_root",
]

#: The stored form's version (``RootSchema.to_dict()["format"]``).
SCHEMA_FORMAT = 1
UNDECLARED = ("accept", "warn", "refuse")
#: Roots the sidecar derives; a schema never applies to them.
DERIVED_PREFIXES = ("action:", "believes:", "trust:")
MAX_ROOTS = 1000
MAX_VALUES = 1000


#: The prefix of every ``trust`` change record's root.
TRUST_PREFIX = "trust:"


def trust_key(source: str, topic: str | None) -> str:
    """The one name of a trust entry (SPEC §8.1, §10.6): ``source`` with ``%`` written
    ``%25`` and ``:`` written ``%3A``, then, for a topic entry, ``:`` and the topic as it is
    (``bo``, ``bo:well``; general trust in source ``a:b`` is ``a%3Ab``, ``a``'s on topic ``b``
    is ``a:b``). The first ``:`` always ends the source, so no two entries share a name, and
    a source without ``%`` or ``:`` is written as it is. A topic ``""`` is general trust.

    The ``trust`` query's cursor is this key; a trust change's root is :func:`trust_root`.
    """
    escaped = source.replace("%", "%25").replace(":", "%3A")
    return f"{escaped}:{topic}" if topic else escaped


def parse_trust_key(key: str) -> tuple[str, str | None] | None:
    """``(source, topic)`` (topic None for general trust) of a :func:`trust_key`, or None
    when ``key`` is not one (a bad or needless escape, an empty source or topic)."""
    escaped, colon, topic = key.partition(":")
    source = escaped.replace("%3A", ":").replace("%25", "%")
    if not source or (colon and not topic) or trust_key(source, topic or None) != key:
        return None
    return source, topic or None


def trust_root(source: str, topic: str | None) -> str:
    """The root of the ``trust`` change records of Trust(resident ← ``source``, ``topic``):
    ``trust:`` and the entry's :func:`trust_key` (``trust:bo``, ``trust:bo:well``,
    ``trust:a%3Ab``)."""
    return TRUST_PREFIX + trust_key(source, topic)


def parse_trust_root(root: str) -> tuple[str, str | None] | None:
    """``(source, topic)`` of a :func:`trust_root`, or None when ``root`` is not one."""
    if not root.startswith(TRUST_PREFIX):
        return None
    return parse_trust_key(root[len(TRUST_PREFIX) :])


class SchemaViolation(InvalidEvent):
    """A claim the world's root schema refuses; ``reason`` is stable."""

    code = "schema_violation"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class RootDecl:
    prefix: str
    values: tuple[Value, ...] | None = None
    text: Mapping[str, str] = field(default_factory=dict)
    mutable: bool = False
    importance: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"prefix": self.prefix}
        if self.values is not None:
            out["values"] = list(self.values)
        if self.text:
            out["text"] = dict(sorted(self.text.items()))
        if self.mutable:
            out["mutable"] = True
        if self.importance is not None:
            out["importance"] = self.importance
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RootSchema:
    undeclared: str = "accept"
    roots: tuple[RootDecl, ...] = ()

    def find(self, root: str) -> RootDecl | None:
        """The declaration of the longest prefix ``root`` starts with."""
        best: RootDecl | None = None
        for decl in self.roots:
            if root.startswith(decl.prefix) and (
                best is None or len(decl.prefix) > len(best.prefix)
            ):
                best = decl
        return best

    def check(self, claim: Claim) -> tuple[RootDecl | None, str | None]:
        """The declaration that applies to ``claim`` and a warning, or raise SchemaViolation."""
        root = claim.root
        if root.startswith(DERIVED_PREFIXES):
            return None, None
        decl = self.find(root)
        if decl is None:
            message = f"root {root!r} is not declared in this world's schema"
            if self.undeclared == "refuse":
                raise SchemaViolation("undeclared_root", message)
            return None, message if self.undeclared == "warn" else None
        if (
            decl.values is not None
            and claim.value is not None
            and not any(same_value(claim.value, v) for v in decl.values)
        ):
            allowed = ", ".join(repr(v) for v in decl.values[:20])
            raise SchemaViolation(
                "value_not_allowed",
                f"value {claim.value!r} is not declared for {decl.prefix!r} (allowed: {allowed})",
            )
        return decl, None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SCHEMA_FORMAT,
            "undeclared": self.undeclared,
            "roots": [d.to_dict() for d in self.roots],
        }


def _fail(message: str) -> InvalidEvent:
    return InvalidEvent(f"schema: {message}")


def _decl(raw: object, i: int) -> RootDecl:
    where = f"roots[{i}]"
    if not isinstance(raw, Mapping):
        raise _fail(f"{where} must be a map")
    unknown = set(raw) - {"prefix", "values", "text", "mutable", "importance"}
    if unknown:
        raise _fail(f"{where} has unknown field {sorted(unknown)[0]!r}")
    prefix = raw.get("prefix")
    if not isinstance(prefix, str) or not prefix or len(prefix) > 200:
        raise _fail(f"{where}.prefix must be a non-empty string of at most 200 characters")
    if prefix.startswith(DERIVED_PREFIXES) or any(d.startswith(prefix) for d in DERIVED_PREFIXES):
        raise _fail(f"{where}.prefix {prefix!r} overlaps a root the sidecar derives")
    values = raw.get("values")
    if values is not None:
        if not isinstance(values, list | tuple) or not values or len(values) > MAX_VALUES:
            raise _fail(f"{where}.values must be a non-empty list of claim values")
        try:
            for v in values:
                check_value(v)
        except Exception as exc:
            raise _fail(f"{where}.values: {exc}") from None
        values = tuple(values)
    text = raw.get("text") or {}
    if not isinstance(text, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and len(v) <= 4000 for k, v in text.items()
    ):
        raise _fail(f"{where}.text must map a language tag to display text")
    mutable = raw.get("mutable", False)
    if not isinstance(mutable, bool):
        raise _fail(f"{where}.mutable must be true or false")
    importance = raw.get("importance")
    if importance is not None:
        if (
            isinstance(importance, bool)
            or not isinstance(importance, int | float)
            or not math.isfinite(importance)
            or not 0 <= importance <= 1
        ):
            raise _fail(f"{where}.importance must be a number from 0 to 1")
        importance = float(importance)
    return RootDecl(
        prefix=prefix, values=values, text=dict(text), mutable=mutable, importance=importance
    )


def parse_schema(data: Mapping[str, Any]) -> RootSchema:
    """A root schema from a ``schema`` event's fields (``undeclared``, ``roots``)."""
    undeclared = data.get("undeclared", "accept")
    if undeclared not in UNDECLARED:
        raise _fail("undeclared must be 'accept', 'warn' or 'refuse'")
    raw = data.get("roots")
    if raw is None:
        raw = []
    if not isinstance(raw, list | tuple) or len(raw) > MAX_ROOTS:
        raise _fail(f"roots must be a list of at most {MAX_ROOTS} declarations")
    decls = tuple(_decl(r, i) for i, r in enumerate(raw))
    prefixes = [d.prefix for d in decls]
    if len(set(prefixes)) != len(prefixes):
        raise _fail("a prefix is declared twice")
    return RootSchema(undeclared=str(undeclared), roots=decls)
