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
    GoalsQuery,
    GraphQuery,
    NarrativeQuery,
    PromisesQuery,
    ProtocolError,
    ResidentsQuery,
    SaidQuery,
    TrustQuery,
    belief_summary,
    change_summary,
    trust_cursor,
)

from ..engine import same_value
from ..read.explain import evidence_summary
from ..read.promises import goal_entry, goal_history, promise_entry
from ..store import BeliefFilter, EventResult, Reader, ResultStatus

__all__ = ["answer", "event_reply", "paginate", "split_section"]

#: A distribution's head lists the values most residents hold, at most this many
#: (``values_total`` counts them all; every resident's row has its value).
DISTRIBUTION_VALUES_SHOWN = 50
#: A trust entry lists the latest change records that moved it (``history_total`` counts).
TRUST_HISTORY_SHOWN = 20

# Leave room for the frame's own keys and the largest single list item we allow.
_PAGE_BUDGET = MAX_OUTBOUND - 4096


def _size(value: Any) -> int:
    """Bytes of ``value`` in the larger of the two wire encodings: msgpack or JSON text.

    A reply is paged before it is encoded for its connection, and JSON can be much larger
    than msgpack (quotes, escapes), so a page must fit in both.
    """
    return max(len(msgpack.packb(value, use_bin_type=True)), len(orjson.dumps(value)))


def _fitting_prefix(text: str, room: int) -> int:
    """The most code points of ``text`` whose encoding takes at most ``room`` bytes."""
    if _size(text) <= room:
        return len(text)
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits
        mid = (lo + hi + 1) // 2
        if _size(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


Split = Callable[[Any, int], list[Any]]


def paginate(
    head: dict[str, Any],
    lists: dict[str, list[Any]],
    *,
    texts: tuple[str, ...] = (),
    split: dict[str, Split] | None = None,
) -> list[dict[str, Any]]:
    """Split a reply over as many frames as needed, each under the outbound limit.

    Every part repeats ``head``, except its ``texts`` fields: a long one is cut between code
    points over the first parts (each part holds the next piece; later parts ``""``). List
    entries fill the parts in order; an entry too large for a part of its own is cut by
    its field's ``split`` function (a narrative section into runs of its entries) or, with
    none, is ``too_large``: that happens only when the client's own values cannot fit.
    """
    fixed = {k: v for k, v in head.items() if k not in texts}
    base = _size({**fixed, **dict.fromkeys(texts, "")}) + 64
    room = _PAGE_BUDGET - base
    if room <= 0:
        raise ProtocolError(ErrorCode.TOO_LARGE, "the reply's own fields are too large to send")
    pages: list[tuple[dict[str, str], dict[str, list[Any]]]] = []
    current: tuple[dict[str, str], dict[str, list[Any]]] = ({}, {n: [] for n in lists})
    used = 0

    def turn() -> None:
        nonlocal current, used
        pages.append(current)
        current, used = ({}, {n: [] for n in lists}), 0

    for name in texts:
        rest = str(head.get(name) or "")
        while rest:
            take = _fitting_prefix(rest, room - used - _size(""))
            if take == 0:
                turn()
                continue
            current[0][name] = rest[:take]
            used += _size(rest[:take])
            rest = rest[take:]
            if rest:
                turn()
    for name, items in lists.items():
        cut = (split or {}).get(name)
        for item in items:
            pieces = [item]
            if _size(item) + 1 > room and cut is not None:
                pieces = cut(item, room)
            for piece in pieces:
                cost = _size(piece) + 1  # and its separator in the list
                if cost > room:
                    raise ProtocolError(
                        ErrorCode.TOO_LARGE, f"one {name} entry is too large to send"
                    )
                if used + cost > room:
                    turn()
                current[1][name].append(piece)
                used += cost
    pages.append(current)
    frames = []
    for part, (cut_texts, page) in enumerate(pages):
        frame = {k: cut_texts.get(k, "") if k in texts else v for k, v in head.items()}
        frames.append({**frame, **page, "part": part, "more": part < len(pages) - 1})
    return frames


def split_section(section: dict[str, Any], room: int) -> list[dict[str, Any]]:
    """A narrative section as runs of its entries, each run a section of its own (same
    ``name``, ``title`` and ``omitted``) that fits in ``room`` bytes (SPEC §11)."""
    runs: list[dict[str, Any]] = []
    run: dict[str, Any] = {**section, "entries": []}
    used = _size(run)
    for entry in section["entries"]:
        cost = _size(entry) + 1  # and its separator
        if run["entries"] and used + cost > room:
            runs.append(run)
            run = {**section, "entries": []}
            used = _size(run)
        run["entries"].append(entry)
        used += cost
    runs.append(run)
    return runs


def _not_found(what: str, rid: object) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, what, rid=rid)


def _beliefs(reader: Reader, world: str, q: BeliefsQuery) -> list[dict[str, Any]]:
    where = BeliefFilter(
        root=q.root, prefixes=q.prefixes, states=q.states, people=q.people, places=q.places,
        min_confidence=q.min_confidence,
    )  # fmt: skip
    limit = -1 if q.limit is None else q.limit
    beliefs = reader.beliefs(world, q.resident, after_root=q.after, limit=limit, where=where)
    if not beliefs and not reader.is_resident(world, q.resident):
        raise _not_found(f"resident {q.resident!r} is unknown in world {world!r}", q.rid)
    head = {"type": "beliefs", "rid": q.rid, "resident": q.resident}
    return paginate(head, {"beliefs": [belief_summary(b) for b in beliefs]})


def _explain(reader: Reader, world: str, q: ExplainQuery) -> list[dict[str, Any]]:
    belief = reader.belief(world, q.resident, q.root)
    if belief is None:
        raise _not_found(f"{q.resident!r} holds no belief on {q.root!r}", q.rid)
    found = reader.evidence(world, q.resident, q.root, latest=q.limit)
    evidence = [evidence_summary(e) for e in found]
    changes = reader.history(world, q.resident, q.root, latest=q.limit)
    history = [change_summary(c) for c in changes]
    head = {
        "type": "explanation",
        "rid": q.rid,
        "resident": q.resident,
        "root": q.root,
        "belief": belief_summary(belief),
        # Every piece on the key was revised into the belief: its count is the evidence
        # table's (tests/test_properties.py), read with the row instead of counted.
        "evidence_total": belief.evidence_count,
        "history_total": len(history)
        if q.limit is None or len(history) < q.limit
        else reader.history_count(world, q.resident, q.root),
    }
    return paginate(head, {"evidence": evidence, "history": history})


def _distribution(reader: Reader, world: str, q: DistributionQuery) -> list[dict[str, Any]]:
    beliefs = reader.holders(world, q.root)
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
                s: sum(1 for b in group if b.state == s) for s in sorted({b.state for b in group})
            },
            "independent_origins": len({o for b in group for o in b.origins})
            + sum(b.own_origins for b in group),  # (each one resident's own: never shared)
        }
        for key, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    rows = [
        {
            "resident": b.resident,
            "value": b.value,
            "confidence": b.confidence,
            "state": b.state,
            "source_kind": b.source_kind,
            "source": b.source,
        }
        for b in beliefs
    ]
    head: dict[str, Any] = {
        "type": "distribution",
        "rid": q.rid,
        "root": q.root,
        "values": summary[:DISTRIBUTION_VALUES_SHOWN],  # the head is in every part: bounded
        "values_total": len(summary),
    }
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
    return paginate(
        head, {"sections": sections}, texts=("text",), split={"sections": split_section}
    )


def _graph(reader: Reader, world: str, q: GraphQuery) -> list[dict[str, Any]]:
    from ..read.graph import BadCursor, graph_page

    # One page of the graph: at most ``limit`` event nodes; ``next`` (pass as ``after``)
    # continues it, nil on the last page (SPEC §10.5).
    try:
        page = graph_page(
            reader, world, resident=q.resident, root=q.root, after=q.after, limit=q.limit
        )
    except BadCursor as exc:
        raise ProtocolError(ErrorCode.INVALID_FRAME, str(exc), rid=q.rid) from None
    head = {
        "type": "graph", "rid": q.rid, "resident": q.resident, "root": q.root,
        "next": page.next,
    }  # fmt: skip
    return paginate(head, {"nodes": page.nodes, "edges": page.edges})


def _trust(reader: Reader, world: str, q: TrustQuery) -> list[dict[str, Any]]:
    # One page of the trust table; one entry more than asked says whether another follows
    # (``next``, the cursor naming the page's last entry: pass as ``after``; SPEC §10.6).
    rows = reader.trust_page(
        world, q.resident, q.source, after=q.after, limit=q.limit + 1,
        latest=TRUST_HISTORY_SHOWN, wire=True,
    )  # fmt: skip
    if not rows and not reader.is_resident(world, q.resident):
        raise _not_found(f"resident {q.resident!r} is unknown in world {world!r}", q.rid)
    more = len(rows) > q.limit
    rows = rows[: q.limit]
    head = {
        "type": "trust", "rid": q.rid, "resident": q.resident, "source": q.source,
        "default": reader.rules(world).trust_default,  # for every source not listed
        "next": trust_cursor(rows[-1]["source"], rows[-1]["topic"]) if more else None,
    }  # fmt: skip
    return paginate(head, {"entries": rows})  # (each history already in wire form)


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


def _said(reader: Reader, world: str, q: SaidQuery) -> list[dict[str, Any]]:
    from ..read.queries import said_page

    # One row more than asked says whether another page follows (``next``: pass as ``from``).
    rows = said_page(reader, world, q.resident, start=q.start, limit=q.limit + 1)
    if not rows and not reader.is_resident(world, q.resident):
        raise _not_found(f"resident {q.resident!r} is unknown in world {world!r}", q.rid)
    more = len(rows) > q.limit
    rows = rows[: q.limit]
    head = {
        "type": "said", "rid": q.rid, "resident": q.resident, "from": q.start,
        "next": rows[-1]["seq"] + 1 if more else None,
    }  # fmt: skip
    return paginate(head, {"said": rows})


def _promises(reader: Reader, world: str, q: PromisesQuery) -> list[dict[str, Any]]:
    rows = reader.promise_page(world, q.resident, state=q.state, after=q.after, limit=q.limit + 1)
    more = len(rows) > q.limit
    rows = rows[: q.limit]
    head = {
        "type": "promises", "rid": q.rid, "resident": q.resident,
        "next": rows[-1][0].promise if more else None,
    }  # fmt: skip
    return paginate(head, {"promises": [promise_entry(v, r) for v, r in rows]})


def _goals(reader: Reader, world: str, q: GoalsQuery) -> list[dict[str, Any]]:
    rows = reader.goal_page(world, q.resident, state=q.state, after=q.after, limit=q.limit + 1)
    more = len(rows) > q.limit
    rows = rows[: q.limit]
    head = {
        "type": "goals", "rid": q.rid, "resident": q.resident,
        "next": rows[-1].goal if more else None,
    }  # fmt: skip
    entries = [
        goal_entry(g) | {"history": goal_history(reader, world, q.resident, g.goal)} for g in rows
    ]
    return paginate(head, {"goals": entries})


_HANDLERS: dict[type, Callable[[Reader, str, Any], list[dict[str, Any]]]] = {
    TrustQuery: _trust,
    BeliefsQuery: _beliefs,
    ExplainQuery: _explain,
    DistributionQuery: _distribution,
    NarrativeQuery: _narrative,
    GraphQuery: _graph,
    ResidentsQuery: _residents,
    EventsQuery: _events,
    SaidQuery: _said,
    PromisesQuery: _promises,
    GoalsQuery: _goals,
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
