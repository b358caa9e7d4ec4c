"""Query replies, computed in a reader thread and split into frames under 60 KiB.

A long reply is sent as several frames with the same ``type`` and ``rid``: every frame
carries the reply's scalar fields, a slice of each list field, ``part`` (0, 1, …) and
``more`` (``true`` on all but the last). A client concatenates the lists until ``more`` is
false.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import msgpack
import orjson

from protocol import (
    MAX_OUTBOUND,
    BeliefsQuery,
    DistributionQuery,
    ErrorCode,
    EventsQuery,
    ExplainQuery,
    GraphQuery,
    NarrativeQuery,
    ProtocolError,
    ResidentsQuery,
    TrustQuery,
    belief_summary,
    change_summary,
)

from ..engine import same_value
from ..read.explain import evidence_summary
from ..store import BeliefFilter, EventResult, Reader, ResultStatus

__all__ = ["answer", "event_reply", "paginate"]

# Leave room for the frame's own keys and the largest single list item we allow.
_PAGE_BUDGET = MAX_OUTBOUND - 4096


def _size(value: Any) -> int:
    """Bytes of ``value`` in the larger of the two wire encodings: msgpack or JSON text.

    A reply is paged before it is encoded for its connection, and JSON can be much larger
    than msgpack (quotes, escapes), so a page must fit in both.
    """
    return max(len(msgpack.packb(value, use_bin_type=True)), len(orjson.dumps(value)))


def paginate(head: dict[str, Any], lists: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Split ``lists`` over as many frames as needed, each under the outbound limit."""
    base = _size(head) + 64
    pages: list[dict[str, Any]] = []
    current: dict[str, list[Any]] = {name: [] for name in lists}
    used = base
    for name, items in lists.items():
        for item in items:
            cost = _size(item)
            if base + cost > _PAGE_BUDGET:
                raise ProtocolError(ErrorCode.TOO_LARGE, f"one {name} entry is too large to send")
            if used + cost > _PAGE_BUDGET:
                pages.append(current)
                current = {n: [] for n in lists}
                used = base
            current[name].append(item)
            used += cost
    pages.append(current)
    frames = []
    for part, page in enumerate(pages):
        frames.append({**head, **page, "part": part, "more": part < len(pages) - 1})
    return frames


def _not_found(what: str, rid: object) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, what, rid=rid)


def _beliefs(reader: Reader, world: str, q: BeliefsQuery) -> list[dict[str, Any]]:
    where = BeliefFilter(
        root=q.root, prefixes=q.prefixes, states=q.states, people=q.people, places=q.places,
        min_confidence=q.min_confidence,
    )  # fmt: skip
    beliefs = reader.beliefs(world, q.resident, after_root=q.after, where=where)
    if not beliefs and not reader.is_resident(world, q.resident):
        raise _not_found(f"resident {q.resident!r} is unknown in world {world!r}", q.rid)
    head = {"type": "beliefs", "rid": q.rid, "resident": q.resident}
    return paginate(head, {"beliefs": [belief_summary(b) for b in beliefs]})


def _explain(reader: Reader, world: str, q: ExplainQuery) -> list[dict[str, Any]]:
    belief = reader.belief(world, q.resident, q.root)
    if belief is None:
        raise _not_found(f"{q.resident!r} holds no belief on {q.root!r}", q.rid)
    evidence = [evidence_summary(e) for e in reader.evidence(world, q.resident, q.root)]
    history = [change_summary(c) for c in reader.history(world, q.resident, q.root)]
    head = {
        "type": "explanation",
        "rid": q.rid,
        "resident": q.resident,
        "root": q.root,
        "belief": belief_summary(belief),
    }
    return paginate(head, {"evidence": evidence, "history": history})


def _distribution(reader: Reader, world: str, q: DistributionQuery) -> list[dict[str, Any]]:
    beliefs = reader.on_root(world, q.root)
    known, truth = reader.fact(world, q.root)
    groups: dict[str, list[Any]] = {}
    values: dict[str, Any] = {}
    for b in beliefs:
        key = f"{type(b.value).__name__}:{b.value}"
        groups.setdefault(key, []).append(b)
        values[key] = b.value
    summary = [
        {
            "value": values[key],
            "residents": len(group),
            "mean_confidence": round(statistics.fmean(b.confidence for b in group), 2),
            "states": {
                s: sum(1 for b in group if str(b.state) == s)
                for s in sorted({str(b.state) for b in group})
            },
            "independent_origins": len({o for b in group for o in b.origins}),
        }
        for key, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    rows = [
        {
            "resident": b.resident,
            "value": b.value,
            "confidence": b.confidence,
            "state": str(b.state),
            "source_kind": str(b.source_kind),
            "source": b.source_resident_id,
        }
        for b in beliefs
    ]
    head: dict[str, Any] = {"type": "distribution", "rid": q.rid, "root": q.root, "values": summary}
    if known:
        # The world's own observation is reported beside the beliefs, never copied into one.
        false = sum(1 for b in beliefs if not same_value(b.value, truth))
        head["observed_value"] = truth
        head["false_share"] = round(false / len(beliefs), 4) if beliefs else 0.0
    return paginate(head, {"residents": rows})


def _narrative(reader: Reader, world: str, q: NarrativeQuery) -> list[dict[str, Any]]:
    from ..read.narrative import Focus, project

    if not reader.is_resident(world, q.resident):
        raise _not_found(f"resident {q.resident!r} is unknown in world {world!r}", q.rid)
    focus = Focus(people=q.people, places=q.places, roots=q.roots, topics=q.topics)
    result = project(reader, world, q.resident, budget=q.budget, lang=q.lang, focus=focus)
    data = result.to_dict()
    sections = data.pop("sections", [])
    head = {"type": "narrative", "rid": q.rid, "resident": q.resident, "lang": q.lang, **data}
    return paginate(head, {"sections": sections})


def _graph(reader: Reader, world: str, q: GraphQuery) -> list[dict[str, Any]]:
    from ..read.graph import graph

    g = graph(reader, world, resident=q.resident, root=q.root)
    head = {"type": "graph", "rid": q.rid, "resident": q.resident, "root": q.root}
    return paginate(head, {"nodes": g["nodes"], "edges": g["edges"]})


def _trust(reader: Reader, world: str, q: TrustQuery) -> list[dict[str, Any]]:
    if not reader.is_resident(world, q.resident):
        raise _not_found(f"resident {q.resident!r} is unknown in world {world!r}", q.rid)
    rows = [
        {**row, "history": [change_summary(c) for c in row["history"]]}
        for row in reader.trust(world, q.resident, q.source)
    ]
    head = {
        "type": "trust", "rid": q.rid, "resident": q.resident, "source": q.source,
        "default": reader.rules(world).trust_default,  # for every source not listed
    }  # fmt: skip
    return paginate(head, {"entries": rows})


def _residents(reader: Reader, world: str, q: ResidentsQuery) -> list[dict[str, Any]]:
    # One row more than asked says whether another page follows (``next``: pass as ``after``).
    rows = reader.resident_page(world, after=q.after, limit=q.limit + 1)
    more = len(rows) > q.limit
    rows = rows[: q.limit]
    head = {"type": "residents", "rid": q.rid, "next": rows[-1][0] if more else None}
    return paginate(head, {"residents": [{"resident": r, "names": n} for r, n in rows]})


def _events(reader: Reader, world: str, q: EventsQuery) -> list[dict[str, Any]]:
    rows = reader.event_page(world, start=q.start, limit=q.limit + 1)
    more = len(rows) > q.limit
    rows = rows[: q.limit]
    head = {
        "type": "events", "rid": q.rid, "from": q.start, "last": reader.event_count(world),
        "next": rows[-1]["seq"] + 1 if more else None,
    }  # fmt: skip
    return paginate(head, {"events": rows})


_HANDLERS: dict[type, Callable[[Reader, str, Any], list[dict[str, Any]]]] = {
    TrustQuery: _trust,
    BeliefsQuery: _beliefs,
    ExplainQuery: _explain,
    DistributionQuery: _distribution,
    NarrativeQuery: _narrative,
    GraphQuery: _graph,
    ResidentsQuery: _residents,
    EventsQuery: _events,
}


def answer(reader: Reader, world: str, query: object) -> list[dict[str, Any]]:
    """The reply frames for one query (runs in a reader thread)."""
    from ..read import NotFound

    handler = _HANDLERS[type(query)]
    try:
        return handler(reader, world, query)
    except NotFound as exc:  # the read side's own lookups (graph, narrative)
        raise _not_found(str(exc), getattr(query, "rid", None)) from None


def event_reply(result: EventResult, rid: object) -> dict[str, Any]:
    """The ``ack`` for a committed (or duplicate) event, or the ``error`` that refused it."""
    if result.status is ResultStatus.REJECTED:
        code = ErrorCode(getattr(result.error, "code", ErrorCode.INTERNAL_ERROR))
        reason = getattr(result.error, "reason", None)
        return ProtocolError(
            code, str(result.error), rid=rid, event_id=result.event_id, reason=reason
        ).to_frame()
    ack: dict[str, Any] = {
        "type": "ack",
        "event_id": result.event_id,
        "duplicate": result.status is ResultStatus.DUPLICATE,
        "changes": len(result.changes),
    }
    if result.changes:
        ack["seq"] = result.changes[-1].seq
    if result.results:
        ack["results"] = list(result.results)
    if result.warnings:
        ack["warnings"] = list(result.warnings)
    if rid is not None:
        ack["rid"] = rid
    return ack
