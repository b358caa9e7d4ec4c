"""Builders for world-event mappings (the decoded wire form), shared by the belief-core tests.

Every builder returns a plain dict that :func:`sidecar.engine.parse_event` accepts; pass
``eid=`` to choose the event id, otherwise a fresh one is drawn from a counter.
"""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count(1)


def _eid(prefix: str, eid: str | None) -> str:
    return eid if eid is not None else f"{prefix}{next(_ids)}"


def observe(
    day: float,
    witnesses: list[str],
    root: str,
    value: Any,
    subject: str | None = None,
    *,
    eid: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An observation: firsthand evidence for each witness."""
    return {
        "event_id": _eid("obs", eid),
        "day": day,
        "kind": "observe",
        "witnesses": witnesses,
        "claim": {"root": root, "value": value},
        "subject": subject or f"{root} is {value!r}",
        **extra,
    }


def say(
    day: float,
    speaker: str,
    listeners: list[str],
    root: str,
    value: Any,
    subject: str | None = None,
    *,
    eid: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An utterance: hearsay for each listener, with the speaker as source."""
    return {
        "event_id": _eid("say", eid),
        "day": day,
        "kind": "say",
        "speaker": speaker,
        "listeners": listeners,
        "claim": {"root": root, "value": value},
        "subject": subject or f"{speaker} says {root} is {value!r}",
        **extra,
    }


def announce(
    day: float,
    speaker: str,
    audience: list[str] | str,
    root: str,
    value: Any,
    subject: str | None = None,
    *,
    eid: str | None = None,
) -> dict[str, Any]:
    """An announcement to a list of residents or to everyone (``"*"``)."""
    return {
        "event_id": _eid("ann", eid),
        "day": day,
        "kind": "announce",
        "speaker": speaker,
        "audience": audience,
        "claim": {"root": root, "value": value},
        "subject": subject or f"{speaker} announces {root} is {value!r}",
    }


def act(
    day: float,
    actor: str,
    action: str,
    status: str,
    witnesses: list[str] | None = None,
    *,
    eid: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An action result; its claim is derived by the engine from ``status``."""
    return {
        "event_id": _eid("act", eid),
        "day": day,
        "kind": "act",
        "actor": actor,
        "action": action,
        "status": status,
        "witnesses": witnesses or [],
        **extra,
    }


def intervene(
    day: float,
    resident: str,
    op: str,
    root: str,
    value: Any = None,
    subject: str | None = None,
    *,
    eid: str | None = None,
) -> dict[str, Any]:
    """A player intervention (implant/distort need a value and a subject)."""
    claim: dict[str, Any] = {"root": root}
    if value is not None:
        claim["value"] = value
    event: dict[str, Any] = {
        "event_id": _eid("int", eid),
        "day": day,
        "kind": "intervene",
        "resident": resident,
        "op": op,
        "claim": claim,
    }
    if subject is not None:
        event["subject"] = subject
    elif op in ("implant", "distort"):
        event["subject"] = f"(player) {root} is {value!r}"
    return event


def tick(day: float, *, eid: str | None = None) -> dict[str, Any]:
    """A clock advance: nothing but aging happens."""
    return {"event_id": _eid("tick", eid), "day": day, "kind": "tick"}
