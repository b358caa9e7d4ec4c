"""Belief graphs: who believes what, from which events, heard from whom.

JSON form (the ``graph`` reply's ``nodes``/``edges`` lists; see ``GRAPH_FORMAT.md``)::

    {"nodes": [{"id": str, "type": "claim"|"event"|"person"|"place", "label": str, ...}],
     "edges": [{"source": node id, "target": node id, "type": EDGE_TYPE, ...}]}

A **claim** node is one resident's belief on one root (``resident``, ``root``, ``value``,
``subject`` as the game sent it, ``confidence``, ``state``, ``source_kind``, ``source``,
``intervention``, ``people_count``, ``places_count``); an **event** node is a world event
(``event_id``, ``kind``, ``day``, and ``speaker`` for a ``say`` or ``announce``); **person** and **place** nodes carry ``name`` (the id; a person's ``label`` is
its registered English name where the game registered one). Edges describe each belief as it
is *now* (``relation`` keeps how the evidence bore on the belief when it arrived):

- ``inferred_from`` claim → event: the event formed the belief, or an intervention set it;
- ``supports`` event → claim: the event's evidence agrees with the current value;
- ``contradicts`` event → claim: the event's evidence disagrees with the current value;
- ``corrected_by`` claim → event: firsthand evidence replaced an earlier value
  (``value_before``, ``subject_before``);
- ``heard_from`` claim → person: someone told the resident the current value;
- ``witnessed`` person → event: the resident saw the event (firsthand evidence);
- ``said_by`` event → person: who said or announced it (every telling, also one that the
  belief no longer agrees with, e.g. the rumour a correction overturned);
- ``about`` claim → place or person: the belief concerns this place or person.

Every edge has ``count`` (how many pieces of evidence it stands for) and, except ``about``,
the ``event_id`` and ``day`` of the first of them.

:func:`graph` builds a whole graph (``credence graph``); :func:`graph_page` one page of it,
bounded whatever the belief's size (the ``graph`` query, SPEC §10.5).

Node ids are opaque, stable strings (``claim:<resident>:<root>``, with ``%`` and ``:``
escaped in the resident; ``event:<id>``; ``person:<id>``; ``place:<id>``). Nodes and edges
come out in a deterministic order, so a graph can be diffed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from ..engine import Belief, same_value
from ..engine.texts import text_in, wire_text
from ..store import Reader
from .phrasing import clip_text
from .queries import (
    Correction,
    NotFound,
    beliefs_in_scope,
    corrections,
    evidence_after,
    evidence_at,
    evidence_rows,
    resident_known,
    root_beliefs_page,
)
from .registry import Registry, load_registry

__all__ = [
    "ABOUT_SHOWN",
    "EDGE_TYPES",
    "NODE_TYPES",
    "BadCursor",
    "GraphPage",
    "SpooledGraph",
    "claim_id",
    "graph",
    "graph_page",
    "spool_graph",
    "to_dot",
]

NODE_TYPES = ("claim", "event", "person", "place")
EDGE_TYPES = (
    "supports",
    "contradicts",
    "heard_from",
    "witnessed",
    "inferred_from",
    "corrected_by",
    "said_by",
    "about",
)
#: A claim node has ``about`` edges to at most this many of its people and as many of its
#: places (the first the belief gathered); ``people_count`` and ``places_count`` count all.
#: A belief may name hundreds: without the cap one claim could not fit in a frame.
ABOUT_SHOWN = 20


def claim_id(resident: str, root: str) -> str:
    """The node id of one resident's belief.

    Escaping the resident keeps resident ``a:b`` with root ``c`` apart from ``a`` with ``b:c``.
    """
    return f"claim:{resident.replace('%', '%25').replace(':', '%3A')}:{root}"


class BadCursor(ValueError):
    """A graph page's ``after`` that names no evidence of the graph asked for (the server
    answers ``invalid_frame``: only the ``next`` of an earlier page of the same graph fits)."""


class _Builder:
    """Collects nodes and edges once each, in first-seen order."""

    def __init__(self, names: Registry) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.names = names

    def node(self, node_id: str, node_type: str, label: str, **fields: Any) -> str:
        if node_id not in self.nodes:
            self.nodes[node_id] = {"id": node_id, "type": node_type, "label": label, **fields}
        return node_id

    def person(self, name: str) -> str:
        return self.node(f"person:{name}", "person", self.names.name(name, "en"), name=name)

    def edge(self, source: str, target: str, edge_type: str, **fields: Any) -> None:
        key = (source, target, edge_type)
        if key in self.edges:
            self.edges[key]["count"] += 1
        else:
            self.edges[key] = {"source": source, "target": target, "type": edge_type}
            self.edges[key] |= {"count": 1, **fields}

    def claim(self, b: Belief) -> str:
        # A subject given as a language map is stored as its JSON text: the label is readable
        # text (English, else the language given), ``subject`` the map as the game sent it.
        return self.node(
            claim_id(b.resident, b.root),
            "claim",
            clip_text(text_in(b.subject, "en"), 60),
            resident=b.resident,
            root=b.root,
            value=b.value,
            subject=wire_text(b.subject),
            confidence=b.confidence,
            state=str(b.state),
            source_kind=str(b.source_kind),
            source=b.source_resident_id,
            intervention=None if b.intervention is None else str(b.intervention),
            people_count=len(b.people),
            places_count=len(b.places),
        )

    def about(self, b: Belief) -> None:
        """The claim's ``about`` edges: its first people and places (:data:`ABOUT_SHOWN`)."""
        cid = claim_id(b.resident, b.root)
        for place in b.places[:ABOUT_SHOWN]:
            self.edge(cid, self.node(f"place:{place}", "place", place, name=place), "about")
        for person in b.people[:ABOUT_SHOWN]:
            self.edge(cid, self.person(person), "about")

    def evidence(
        self, resident: str, root: str, value: Any, row: dict[str, Any], fix: Correction | None
    ) -> None:
        """The event node of one piece of evidence on ``resident``'s belief on ``root``, now
        ``value``, and the edges it stands for."""
        cid = claim_id(resident, root)
        event = self.node(
            f"event:{row['event_id']}",
            "event",
            f"{row['event_kind']} {row['event_id']}: {clip_text(text_in(row['subject'], 'en'), 40)}",
            event_id=row["event_id"],
            kind=row["event_kind"],
            day=row["day"],
            **({} if row.get("event_speaker") is None else {"speaker": row["event_speaker"]}),
        )
        facts = {"event_id": row["event_id"], "day": row["day"], "relation": row["relation"]}
        agrees = same_value(row["value"], value)
        if fix is not None and fix.event_id == row["event_id"]:
            before = {
                "value_before": fix.value_before,
                "subject_before": wire_text(fix.subject_before),
            }
            self.edge(cid, event, "corrected_by", **facts, **before)
        elif row["op"] is not None or (row["relation"] == "forms" and agrees):
            self.edge(cid, event, "inferred_from", **facts)
        elif agrees:
            self.edge(event, cid, "supports", **facts)
        else:
            self.edge(event, cid, "contradicts", **facts)
        when = {"event_id": row["event_id"], "day": row["day"]}
        if row["source_kind"] == "firsthand":
            self.edge(self.person(row["resident"]), event, "witnessed", **when)
        elif row["source_kind"] == "hearsay":
            self.edge(event, self.person(row["source_resident"]), "said_by", **when)
            if agrees:  # a speaker who said otherwise is no source of this belief
                self.edge(cid, self.person(row["source_resident"]), "heard_from", **when)

    def result(self) -> dict[str, list[dict[str, Any]]]:
        return {"nodes": list(self.nodes.values()), "edges": list(self.edges.values())}


def _in_scope(reader: Reader, world: str, resident: str | None, root: str | None) -> None:
    """Raise :class:`NotFound` for an unknown resident, or a root nobody in scope believes
    anything about."""
    if resident is not None and not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    if root is None:
        return
    if resident is not None:
        if reader.belief(world, resident, root) is None:
            raise NotFound(f"{resident!r} holds no belief on {root!r}")
    elif not root_beliefs_page(reader, world, root, limit=1):
        raise NotFound(f"no resident of world {world!r} holds a belief on {root!r}")


def _fill(g: _Builder, reader: Reader, world: str, resident: str | None, root: str | None) -> None:
    """Build the whole graph of a scope into ``g``, reading beliefs and evidence a row at a
    time: every claim, then every piece of evidence in log order, then the claims' ``about``
    edges (so nodes and edges come in this order, first seen first)."""
    _in_scope(reader, world, resident, root)
    for b in beliefs_in_scope(reader, world, resident, root):
        g.claim(b)
    fixes = corrections(reader, world, resident, root)
    for row in evidence_rows(reader, world, resident, root):
        key = (row["resident"], row["root"])
        g.evidence(*key, row["belief_value"], row, fixes.get(key))
    for b in beliefs_in_scope(reader, world, resident, root):
        g.about(b)


def graph(
    reader: Reader, world: str, resident: str | None = None, root: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The whole belief graph of one resident (optionally one root), of one root across
    every resident, or of the whole world when neither is given, in memory (the wire's
    ``graph`` query answers a page of it: :func:`graph_page`; ``credence graph`` builds it into
    a temporary file and writes it from there, holding none of it: :func:`spool_graph`).

    Raises :class:`~sidecar.read.queries.NotFound` for an unknown resident, or a root that
    nobody in scope believes anything about.
    """
    g = _Builder(load_registry(reader, world))
    _fill(g, reader, world, resident, root)
    return g.result()


@dataclass(frozen=True, slots=True)
class GraphPage:
    """One page of a belief graph: its nodes and edges, and where the next page starts."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    #: The ``after`` of the next page (the evidence id of this page's last event node), or
    #: None on the last page.
    next: str | None


def graph_page(
    reader: Reader,
    world: str,
    resident: str | None = None,
    root: str | None = None,
    *,
    after: str | None = None,
    limit: int = 100,
) -> GraphPage:
    """One page of the graph of one belief, of one resident's beliefs, or of one root across
    every resident (SPEC §10.5): at most ``limit`` pieces of evidence, so at most ``limit``
    event nodes, whatever the belief's size.

    The graph is walked belief by belief (a resident's in root order, a root's in resident
    order), each belief's evidence in log order (the order its events were accepted);
    ``after`` is the evidence id the previous page ended at. A page holds the claim node of
    every belief it has evidence of (a belief whose evidence spans pages is on each of them),
    the person and place nodes its edges reach, and edges between its own nodes only, each
    counting the page's own evidence. A claim's ``about`` edges come on the page that holds
    its first evidence, so joining pages by node id and edge (source, target, type), adding
    ``count``, gives the whole graph. Every query is one index range from the cursor: the
    last page of a belief seen 10,000 times costs what its first costs.

    Raises :class:`NotFound` as :func:`graph` does; :class:`BadCursor` for an ``after`` that
    is no evidence of this graph.
    """
    if resident is None and root is None:
        raise ValueError("a graph page needs a resident, a root or both")
    if resident is not None and not resident_known(reader, world, resident):
        raise NotFound(f"resident {resident!r} is unknown in world {world!r}")
    one: Belief | None = None
    if resident is not None and root is not None:
        one = reader.belief(world, resident, root)
        if one is None:
            raise NotFound(f"{resident!r} holds no belief on {root!r}")
    start: Belief | None = one
    position: tuple[float, str] | None = None
    if after is not None:
        at = evidence_at(reader, world, after)
        if at is None or (resident, root) != (
            at[0] if resident is not None else None,
            at[1] if root is not None else None,
        ):
            raise BadCursor(
                "field 'after' names no event node of this graph: pass the 'next' of the "
                "previous page of the same graph query"
            )
        start = one or reader.belief(world, at[0], at[1])
        if start is None:
            raise BadCursor("field 'after' names evidence of no belief of this graph")
        position = (at[2], after)
    taken: list[tuple[Belief, list[dict[str, Any]], bool]] = []
    room, more = limit, False

    def take(belief: Belief, since: tuple[float, str] | None) -> None:
        nonlocal room, more
        # One row more than there is room for says whether the belief goes on.
        rows = evidence_after(reader, world, belief.resident, belief.root, after=since,
                              limit=room + 1)  # fmt: skip
        if len(rows) > room:
            rows, more = rows[:room], True
        room -= len(rows)
        if rows:  # every belief has evidence: it was formed by some
            taken.append((belief, rows, since is None))

    if start is not None:
        take(start, position)
    if one is None and not more:
        key = "" if start is None else (start.root if resident is not None else start.resident)
        if resident is not None:
            following = reader.beliefs(world, resident, after_root=key, limit=room + 1)
        else:
            assert root is not None
            following = root_beliefs_page(reader, world, root, after=key, limit=room + 1)
            if start is None and not following:
                raise NotFound(f"no resident of world {world!r} holds a belief on {root!r}")
        for belief in following:
            if room == 0:
                more = True
                break
            take(belief, None)
            if more:
                break
    g = _Builder(load_registry(reader, world))
    for belief, rows, first in taken:
        g.claim(belief)
        # The belief's latest correction (partial index ``changes_corrected``: a few rows).
        held = (belief.resident, belief.root)
        fix = corrections(reader, world, *held).get(held)
        for row in rows:
            g.evidence(belief.resident, belief.root, belief.value, row, fix)
        if first:
            g.about(belief)
    out = g.result()
    last = taken[-1][1][-1]["evidence_id"] if more and taken else None
    return GraphPage(nodes=out["nodes"], edges=out["edges"], next=last)


# ----------------------------------------------------------------------------------- DOT

_NODE_STYLE = {
    "claim": 'shape=box, style="rounded,filled", fillcolor="#ffffff"',
    "event": 'shape=note, style=filled, fillcolor="#f2f2f2"',
    "person": 'shape=ellipse, style=filled, fillcolor="#e8f0ff"',
    "place": 'shape=house, style=filled, fillcolor="#eaf7e6"',
}
_STATE_COLOR = {
    "influencing": "black",
    "doubtful": "orange",
    "anomalous": "red",
    "corrected": "blue",
    "past": "gray",
}
_EDGE_STYLE = {
    "supports": 'color="darkgreen"',
    "contradicts": 'color="red"',
    "heard_from": 'color="purple", style=dashed',
    "witnessed": 'color="gray40"',
    "inferred_from": 'color="black"',
    "corrected_by": 'color="blue", penwidth=2',
    "said_by": 'color="purple"',
    "about": 'color="gray60", style=dotted, arrowhead=none',
}


def _q(text: object) -> str:
    """A DOT double-quoted string; a newline becomes DOT's ``\\n`` line break."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + s.replace("\n", "\\n") + '"'


def _node_line(node: dict[str, Any], names: Registry | None = None) -> str:
    label = node["label"]
    style = _NODE_STYLE[node["type"]]
    if node["type"] == "claim":
        detail = f"{node['confidence']} {node['state']} · {node['source_kind']}"
        if node.get("source"):
            source = node["source"] if names is None else names.name(node["source"], "en")
            detail += f" ({source})"
        label = f"{label}\n{node['root']} = {node['value']!r}\n{detail}"
        style += f', color="{_STATE_COLOR.get(node["state"], "black")}"'
    return f"    {_q(node['id'])} [label={_q(label)}, {style}];"


def to_dot(g: dict[str, list[dict[str, Any]]], names: Registry | None = None) -> str:
    """Graphviz DOT for a graph from :func:`graph`: each holder's beliefs in a cluster,
    labelled with the holder's registered name when ``names`` has one."""
    holders: dict[str, list[dict[str, Any]]] = {}
    for node in g["nodes"]:
        if node["type"] == "claim":
            holders.setdefault(node["resident"], []).append(node)
    others = (node for node in g["nodes"] if node["type"] != "claim")
    return "".join(_dot_lines(others, holders.items(), g["edges"], names))


def _dot_lines(
    others: Iterable[dict[str, Any]],
    holders: Iterable[tuple[str, Iterable[dict[str, Any]]]],
    edges: Iterable[dict[str, Any]],
    names: Registry | None,
) -> Iterator[str]:
    """The lines of a DOT graph (each ending in a newline): the nodes but claims, then each
    holder's claims in a cluster, then the edges."""
    yield 'digraph credence {\n    rankdir=LR;\n    node [fontname="Helvetica"];\n'
    yield '    edge [fontname="Helvetica", fontsize=10];\n'
    for node in others:
        yield _node_line(node) + "\n"
    for n, (resident, claims) in enumerate(holders):
        yield f"    subgraph cluster_{n} {{\n"
        holder = resident if names is None else names.name(resident, "en")
        yield f"        label={_q('beliefs of ' + holder)};\n"
        for node in claims:
            yield "    " + _node_line(node, names) + "\n"
        yield "    }\n"
    for e in edges:
        label = e["type"] if e.get("count", 1) == 1 else f"{e['type']} ×{e['count']}"
        ends = f"{_q(e['source'])} -> {_q(e['target'])}"
        yield f"    {ends} [label={_q(label)}, {_EDGE_STYLE[e['type']]}];\n"
    yield "}\n"


# ------------------------------------------------------------------- a whole graph, written


#: Node ids a :class:`SpooledGraph` remembers having spooled, so that the node of an event
#: many residents heard is built and inserted once (past it, the set starts again: the
#: table's unique id still keeps each node once).
SPOOL_RECENT = 50_000


class SpooledGraph(_Builder):
    """A builder whose nodes and edges go to a temporary SQLite file (deleted when closed),
    each once, in first-seen order, an edge's ``count`` added up there (:func:`spool_graph`):
    a whole world's graph is built and written holding one row at a time, where the
    in-memory builder held the day-365 town of ``tools.longgame`` as 696 MiB."""

    def __init__(self, names: Registry) -> None:
        super().__init__(names)
        # "": a private temporary database on disk (SQLite's temporary directory)
        self.db = sqlite3.connect("", isolation_level=None)
        for pragma in ("journal_mode = OFF", "synchronous = OFF"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.execute(
            "CREATE TABLE nodes (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
            "resident TEXT, body BLOB NOT NULL)"
        )
        self.db.execute("CREATE TABLE holders (n INTEGER PRIMARY KEY, resident TEXT UNIQUE)")
        self.db.execute("CREATE INDEX claims ON nodes (resident, seq) WHERE resident IS NOT NULL")
        self.db.execute(
            "CREATE TABLE edges (seq INTEGER PRIMARY KEY, source TEXT NOT NULL, target TEXT "
            "NOT NULL, type TEXT NOT NULL, count INTEGER NOT NULL, fields BLOB NOT NULL, "
            "UNIQUE (source, target, type))"
        )
        self.db.execute("BEGIN")
        self._recent: set[str] = set()  # node ids spooled lately (SPOOL_RECENT at most)
        self._holder: str | None = None  # the holder of the last claim node spooled

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> SpooledGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, out: TextIO, fmt: str = "dot") -> None:
        """Write the graph to ``out`` as DOT (what :func:`to_dot` makes of it) or as JSON
        (``json.dumps(graph, ensure_ascii=False, indent=2)`` and a newline, byte for byte), a
        node and an edge at a time."""
        if fmt == "dot":
            lines = _dot_lines(self.nodes_in_order(claims=False), self.holders_in_order(),
                               self.edges_in_order(), self.names)  # fmt: skip
            out.writelines(lines)
        else:
            _write_json(out, self.nodes_in_order(), self.edges_in_order())
            out.write("\n")

    def node(self, node_id: str, node_type: str, label: str, **fields: Any) -> str:
        if node_id in self._recent:  # (an event's node, asked again for each hearer)
            return node_id
        if len(self._recent) >= SPOOL_RECENT:
            self._recent.clear()
        self._recent.add(node_id)
        body = orjson.dumps({"id": node_id, "type": node_type, "label": label, **fields})
        holder = fields["resident"] if node_type == "claim" else None
        self.db.execute(
            "INSERT INTO nodes (id, resident, body) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (node_id, holder, body),
        )
        if holder is not None and holder != self._holder:
            self._holder = holder
            self.db.execute(
                "INSERT INTO holders (resident) VALUES (?) ON CONFLICT DO NOTHING", (holder,)
            )
        return node_id

    def edge(self, source: str, target: str, edge_type: str, **fields: Any) -> None:
        self.db.execute(
            "INSERT INTO edges (source, target, type, count, fields) VALUES (?, ?, ?, 1, ?) "
            "ON CONFLICT DO UPDATE SET count = count + 1",
            (source, target, edge_type, orjson.dumps(fields)),
        )

    def nodes_in_order(self, claims: bool | None = None) -> Iterator[dict[str, Any]]:
        """Every node first seen first (``claims``: only claim nodes, or only the others)."""
        where = "" if claims is None else f"WHERE resident IS {'NOT ' if claims else ''}NULL"
        for (body,) in self.db.execute(f"SELECT body FROM nodes {where} ORDER BY seq"):
            yield orjson.loads(body)

    def holders_in_order(self) -> Iterator[tuple[str, Iterator[dict[str, Any]]]]:
        """Each holder of a claim, first seen first, with its claims in order."""
        for (resident,) in self.db.execute("SELECT resident FROM holders ORDER BY n"):
            rows = self.db.execute(
                "SELECT body FROM nodes WHERE resident = ? ORDER BY seq", (resident,)
            )
            yield resident, (orjson.loads(body) for (body,) in rows)

    def edges_in_order(self) -> Iterator[dict[str, Any]]:
        rows = self.db.execute("SELECT source, target, type, count, fields FROM edges ORDER BY seq")
        for source, target, edge_type, count, fields in rows:
            yield {"source": source, "target": target, "type": edge_type, "count": count,
                   **orjson.loads(fields)}  # fmt: skip


def spool_graph(
    reader: Reader, world: str, resident: str | None = None, root: str | None = None
) -> SpooledGraph:
    """The graph :func:`graph` builds, built into a temporary file to be written from there
    (:meth:`SpooledGraph.write`; close it after). Raises :class:`NotFound` as :func:`graph`
    does."""
    names = load_registry(reader, world)
    g = SpooledGraph(names)
    try:
        _fill(g, reader, world, resident, root)
    except BaseException:
        g.close()
        raise
    return g


def _write_json(
    out: TextIO, nodes: Iterable[dict[str, Any]], edges: Iterable[dict[str, Any]]
) -> None:
    """``{"nodes": […], "edges": […]}`` as ``json.dumps(…, ensure_ascii=False, indent=2)``
    writes it, an item at a time (each item's own lines indented to its depth)."""
    out.write("{\n")
    for name, items, last in (("nodes", nodes, False), ("edges", edges, True)):
        out.write(f'  "{name}": [')
        first = True
        for item in items:
            text = json.dumps(item, ensure_ascii=False, indent=2).replace("\n", "\n    ")
            out.write(("\n    " if first else ",\n    ") + text)
            first = False
        out.write("]" if first else "\n  ]")
        out.write("\n" if last else ",\n")
    out.write("}")
